//! The report as one self-contained HTML page: its style and its one
//! script inline, nothing fetched (a Content-Security-Policy allows no
//! source but that script, by its hash, so nothing the journal holds can
//! run even were it not escaped, which it is). The calls and tools tables
//! sort by a click on a heading; the page prints on paper as it shows.

use std::fmt::Write as _;

use sha2::Digest;

use super::collect::{CallBar, Collected, MAX_CALLS_DRAWN, MAX_ROWS, Tool};
use super::svg::{self, class};
use crate::markup::{escape, isolated};
use crate::units::short_duration as duration;

const STYLE: &str = include_str!("report.css");
const SCRIPT: &str = include_str!("report.js");

/// What the page says of the chain.
pub(super) struct Verified {
    pub ok: bool,
    pub text: String,
}

fn base64(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, b| n << 8 | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(DIGITS[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    while out.len() % 4 != 0 {
        out.push('=');
    }
    out
}

fn head(out: &mut String, title: &str) {
    let hash = base64(&sha2::Sha256::digest(SCRIPT.as_bytes()));
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{hash}'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head>\n<body>\n",
        escape(title)
    );
}

fn summary(out: &mut String, journal: &str, verified: &Verified, c: &Collected, generated: &str) {
    let _ = write!(
        out,
        "<header><h1>mcp-bound report</h1><p class=\"journal\">{}</p>\
         <p id=\"verify\" class=\"{}\">{}</p><p class=\"generated\">written {}</p>",
        escape(journal),
        if verified.ok { "ok" } else { "broken" },
        escape(&verified.text),
        escape(generated)
    );
    let _ = write!(
        out,
        "<ul class=\"totals\"><li><b>{}</b> calls</li><li><b>{}{}</b> sessions</li><li><b>{}</b> MCP requests</li>",
        c.calls_total,
        c.sessions.len(),
        if c.calls_in_sessions_more > 0 {
            "+"
        } else {
            ""
        },
        c.requests_total
    );
    match c.restarts_total {
        0 => {}
        1 => out.push_str("<li><b>1</b> restart</li>"),
        n => {
            let _ = write!(out, "<li><b>{n}</b> restarts</li>");
        }
    }
    for (state, count) in &c.states {
        let _ = write!(
            out,
            "<li class=\"chip s-{}\"><b>{count}</b> {}</li>",
            class(state),
            isolated(state)
        );
    }
    out.push_str("</ul></header>\n");
}

fn sessions(out: &mut String, c: &Collected) {
    out.push_str("<h2>Sessions</h2>\n");
    if c.calls_in_sessions_more > 0 {
        let _ = writeln!(
            out,
            "<p class=\"more\">{} calls of sessions past the first {} are counted and not drawn.</p>",
            c.calls_in_sessions_more,
            super::collect::MAX_SESSIONS_DRAWN
        );
    }
    for session in &c.sessions {
        let name = session.session_id.as_deref().unwrap_or("no session");
        let _ = write!(
            out,
            "<section class=\"session\"><h3>{}</h3><p>{}",
            isolated(name),
            match session.calls_total {
                1 => "1 call".to_string(),
                n => format!("{n} calls"),
            }
        );
        if session.calls_total > session.calls.len() as u64 {
            let _ = write!(out, "; the first {MAX_CALLS_DRAWN} are drawn");
        }
        out.push_str("</p>");
        out.push_str(&svg::timeline(session));
        out.push_str("</section>\n");
    }
    out.push_str(
        "<p class=\"legend\"><span class=\"key s-completed\"></span>completed \
         <span class=\"key s-shut_down\"></span>shut down \
         <span class=\"key s-timed_out\"></span>timed out \
         <span class=\"key s-denied\"></span>denied or cancelled \
         <span class=\"key s-failed_after_dispatch\"></span>failed or killed \
         <span class=\"key s-unfinished\"></span>unfinished \
         <span class=\"key wait\"></span>approval wait \
         <span class=\"key restart\"></span>restart ⚑ debug windows (how many; their times are in the record).</p>\n",
    );
}

fn cell(value: impl std::fmt::Display, sort: Option<u64>) -> String {
    match sort {
        Some(v) => format!("<td data-v=\"{v}\">{value}</td>"),
        None => format!("<td>{value}</td>"),
    }
}

fn optional(value: Option<u64>, shown: impl Fn(u64) -> String) -> String {
    match value {
        Some(v) => cell(shown(v), Some(v)),
        None => "<td data-v=\"-1\">–</td>".to_string(),
    }
}

fn call_row(out: &mut String, call: &CallBar) {
    let state = call.state.as_deref().unwrap_or("unfinished");
    let mark = if call.verified {
        ""
    } else {
        " class=\"unverified\""
    };
    let _ = write!(
        out,
        "<tr{mark}>{}{}{}<td><span class=\"chip s-{}\">{}</span></td>{}{}{}{}{}{}",
        cell(isolated(&call.ts), None),
        cell(isolated(&call.call_id), None),
        cell(isolated(call.session_id.as_deref().unwrap_or("–")), None),
        class(state),
        isolated(state),
        optional(call.exit_code.and_then(|c| u64::try_from(c).ok()), |v| v
            .to_string()),
        optional(call.duration_ms, duration),
        optional(call.stderr.map(|s| s.0), |v| v.to_string()),
        optional(call.stderr.map(|s| s.1), |v| v.to_string()),
        cell(
            isolated(call.wait.as_ref().map_or("–", |w| &w.decision)),
            None
        ),
        cell(call.requests_total, Some(call.requests_total)),
    );
    let _ = write!(out, "<td class=\"argv\">{}", isolated(&call.argv));
    if let Some(excerpt) = call.excerpt.as_deref().filter(|e| !e.is_empty()) {
        let _ = write!(
            out,
            "<details><summary>stderr</summary><pre>{}</pre></details>",
            isolated(excerpt)
        );
    }
    out.push_str("</td></tr>\n");
}

fn calls(out: &mut String, c: &Collected) {
    out.push_str(
        "<h2>Calls</h2>\n<table class=\"sortable\" id=\"calls\"><thead><tr>\
         <th>Time</th><th>Call</th><th>Session</th><th>State</th><th>Exit</th><th>Duration</th>\
         <th>stderr seen</th><th>stderr kept</th><th>Approval</th><th>Requests</th><th>Command</th>\
         </tr></thead><tbody>\n",
    );
    for (session, at) in &c.rows {
        call_row(out, &c.sessions[*session].calls[*at]);
    }
    out.push_str("</tbody></table>\n");
    let listed = c.rows.len() as u64;
    if c.calls_total > listed {
        let _ = writeln!(
            out,
            "<p class=\"note\">{listed} of {} calls listed (at most {MAX_ROWS}, and {MAX_CALLS_DRAWN} a session).</p>",
            c.calls_total
        );
    }
}

fn tool_row(out: &mut String, name: &str, tool: &Tool) {
    let total: u64 = tool.outcomes.values().sum();
    let outcomes: Vec<String> = tool
        .outcomes
        .iter()
        .map(|(o, n)| format!("{} {n}", isolated(o)))
        .collect();
    let q = |p: f64| tool.durations.quantile(p);
    let _ = writeln!(
        out,
        "<tr>{}{}{}{}{}{}{}</tr>",
        cell(isolated(name), None),
        cell(total, Some(total)),
        cell(outcomes.join(", "), None),
        cell(tool.not_run, Some(tool.not_run)),
        optional(q(0.5), duration),
        optional(q(0.95), duration),
        optional(q(0.99), duration),
    );
}

fn tools(out: &mut String, c: &Collected) {
    out.push_str(
        "<h2>Tool calls</h2>\n<table class=\"sortable\" id=\"tools\"><thead><tr>\
         <th>Tool</th><th>Calls</th><th>Outcomes</th><th>Not run</th><th>p50</th><th>p95</th><th>p99</th>\
         </tr></thead><tbody>\n",
    );
    for (name, tool) in &c.tools {
        tool_row(out, name, tool);
    }
    out.push_str("</tbody></table>\n");
    if c.tools_more > 0 {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} tool calls to further tools not tabled.</p>",
            c.tools_more
        );
    }
    out.push_str("<p class=\"note\">Not run: denied by the gate, refused, or waiting for a person; never sent to the server. Percentiles are of the calls that reached it, within 2%.</p>\n");
}

/// The whole page.
pub(super) fn page(journal: &str, verified: &Verified, c: &Collected, generated: &str) -> String {
    let mut out = String::new();
    head(&mut out, &format!("mcp-bound report: {journal}"));
    summary(&mut out, journal, verified, c, generated);
    out.push_str("<main>\n");
    sessions(&mut out, c);
    calls(&mut out, c);
    tools(&mut out, c);
    let _ = write!(out, "</main>\n<script>{SCRIPT}</script>\n</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_the_standard_alphabet_with_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }
}
