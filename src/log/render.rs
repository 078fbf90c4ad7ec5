//! The activity and sessions views as text: aligned columns of fixed
//! width (a long value is cut, marked `…`), the command last, cut at
//! the terminal's width unless `--wide`; the state in colour only on a
//! terminal, and never under `NO_COLOR`. A row the chain does not vouch
//! for (after a break) starts with `!`.

use std::collections::BTreeMap;

#[cfg(test)]
use super::activity::McpActivity;
use super::activity::{CallRow, SessionRow};
use super::requests::RequestRow;
use crate::shown::untrusted;
use crate::units::short_duration as duration;

/// How the text is laid out.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Layout {
    /// The terminal's width, when lines are cut to it.
    pub width: Option<usize>,
    pub colour: bool,
}

/// The call view's columns: TIME, CALL, SESSION, STATE, EXIT, DURATION,
/// STDERR, APPROVAL, MCP; then the command, as wide as it is.
const CALL_WIDTHS: [usize; 9] = [19, 18, 13, 25, 4, 8, 16, 8, 40];
/// The session view's: SESSION, CALLS, FIRST, LAST, STATES; then tool calls.
const SESSION_WIDTHS: [usize; 6] = [13, 5, 19, 19, 36, 8];

/// The requests view's: TIME, CALL, SESSION, REQUEST, METHOD, DECISION,
/// OUTCOME, DURATION; then the tool.
const REQUEST_WIDTHS: [usize; 8] = [19, 18, 13, 8, 14, 15, 10, 8];

/// A row: its mark (`!` unverified), each cell cut and padded to its
/// column, then the last value whole. Every cell is journal text, shown
/// through the one escaping rule (`shown::untrusted`) before it is cut.
fn columns(verified: bool, cells: &[&str], widths: &[usize], last: &str) -> String {
    let mut line = String::from(if verified { "  " } else { "! " });
    for (text, width) in cells.iter().zip(widths) {
        line.push_str(&cell(&untrusted(text), *width));
        line.push_str("  ");
    }
    line.push_str(&untrusted(last));
    line
}

pub(super) fn call_header() -> String {
    let names = [
        "TIME",
        "CALL",
        "SESSION",
        "STATE",
        "EXIT",
        "DURATION",
        "STDERR SEEN/KEPT",
        "APPROVAL",
        "MCP",
    ];
    columns(true, &names, &CALL_WIDTHS, "COMMAND")
}

pub(super) fn request_header() -> String {
    let names = [
        "TIME", "CALL", "SESSION", "REQUEST", "METHOD", "DECISION", "OUTCOME", "DURATION",
    ];
    columns(true, &names, &REQUEST_WIDTHS, "TOOL")
}

pub(super) fn session_header() -> String {
    let names = ["SESSION", "CALLS", "FIRST", "LAST", "STATES", "RESTARTS"];
    columns(true, &names, &SESSION_WIDTHS, "TOOL CALLS")
}

/// `text` in at most `width` characters, cut with `…`, padded.
fn cell(text: &str, width: usize) -> String {
    let count = text.chars().count();
    if count <= width {
        return format!("{text:width$}");
    }
    let cut: String = text.chars().take(width.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// The journal's RFC 3339 time, as a person reads it (UTC).
fn time(ts: &str) -> String {
    ts.get(..19).unwrap_or(ts).replacen('T', " ", 1)
}

/// A byte count in the largest unit that keeps it whole-ish.
pub(super) fn bytes(n: u64) -> String {
    match n {
        n if n >= 10 << 30 => format!("{}G", n >> 30),
        n if n >= 10 << 20 => format!("{}M", n >> 20),
        n if n >= 10 << 10 => format!("{}K", n >> 10),
        n => n.to_string(),
    }
}

/// Counts as words: `2 result, 1 denied`.
fn counts(counts: &BTreeMap<String, u64>) -> String {
    let mut by: Vec<(&String, &u64)> = counts.iter().collect();
    by.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    by.iter()
        .map(|(word, n)| format!("{n} {word}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn coloured(state: &str, text: String, layout: Layout) -> String {
    if !layout.colour {
        return text;
    }
    let code = match state {
        "completed" | "shut_down" => "32",
        "unfinished" => "35",
        s if s.contains("cancel") || s.contains("timed_out") || s.contains("denied") => "33",
        _ => "31",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

fn cut_to(line: String, layout: Layout) -> String {
    match layout.width {
        Some(width) if line.chars().count() > width => {
            let mut cut: String = line.chars().take(width.saturating_sub(1)).collect();
            cut.push('…');
            cut
        }
        _ => line,
    }
}

/// One call's line.
pub(super) fn call(row: &CallRow, layout: Layout) -> String {
    let state = row.state.as_deref().unwrap_or("unfinished");
    let activity = &row.mcp;
    let requests = (activity.requests > 0)
        .then(|| format!("{} req: {}", activity.requests, counts(&activity.outcomes)));
    let restarts = match activity.restarts {
        0 => None,
        1 => Some("1 restart".to_string()),
        n => Some(format!("{n} restarts")),
    };
    let mcp: Vec<String> = requests.into_iter().chain(restarts).collect();
    let mcp = match mcp.is_empty() {
        true => "-".to_string(),
        false => mcp.join("; "),
    };
    let stderr = match (row.stderr_seen, row.stderr_kept) {
        (Some(seen), Some(kept)) => format!("{}/{}", bytes(seen), bytes(kept)),
        _ => "-".to_string(),
    };
    let command =
        shlex::try_join(row.argv.iter().map(String::as_str)).unwrap_or_else(|_| row.argv.join(" "));
    let exit = row.exit_code.map_or("-".into(), |c| c.to_string());
    let took = row.duration_ms.map_or("-".into(), duration);
    let cells = [
        time(&row.ts),
        row.call_id.clone(),
        row.session_id.clone().unwrap_or_else(|| "-".into()),
        state.to_string(),
        exit,
        took,
        stderr,
        row.approval.clone().unwrap_or_else(|| "-".into()),
        mcp,
    ];
    let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
    let plain = columns(row.verified, &cells, &CALL_WIDTHS, &command);
    let line = cut_to(plain, layout);
    // The colour goes around the state's cell only, after the cut.
    let start = 2 + CALL_WIDTHS[..3].iter().map(|w| w + 2).sum::<usize>();
    match (layout.colour, line.char_indices().nth(start)) {
        (true, Some((at, _))) => {
            let end = line
                .char_indices()
                .nth(start + CALL_WIDTHS[3])
                .map_or(line.len(), |(i, _)| i);
            format!(
                "{}{}{}",
                &line[..at],
                coloured(state, line[at..end].to_string(), layout),
                &line[end..]
            )
        }
        _ => line,
    }
}

/// One request's line.
pub(super) fn request(row: &RequestRow, layout: Layout) -> String {
    let dash = || "-".to_string();
    let decision = match (&row.decision, row.waited_ms) {
        (Some(decision), Some(ms)) if ms > 0 => format!("{decision} {}", duration(ms)),
        (Some(decision), _) => decision.clone(),
        (None, _) => dash(),
    };
    let cells = [
        time(&row.ts),
        row.call_id.clone(),
        row.session_id.clone().unwrap_or_else(dash),
        row.request_id.clone(),
        row.method.clone().unwrap_or_else(dash),
        decision,
        row.outcome.clone().unwrap_or_else(|| "unanswered".into()),
        row.duration_ms.map_or_else(dash, duration),
    ];
    let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
    let tool = row.tool.clone().unwrap_or_default();
    cut_to(
        columns(row.verified, &cells, &REQUEST_WIDTHS, &tool),
        layout,
    )
}

/// One session's line.
pub(super) fn session(row: &SessionRow, layout: Layout) -> String {
    let tools = match row.tools_not_run {
        0 => row.tool_calls.to_string(),
        n => format!("{} ({n} not run)", row.tool_calls),
    };
    let cells = [
        row.session_id.clone().unwrap_or_else(|| "-".into()),
        row.calls.to_string(),
        time(&row.first),
        time(&row.last),
        counts(&row.states),
        row.restarts.to_string(),
    ];
    let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
    let line = columns(row.verified, &cells, &SESSION_WIDTHS, &tools);
    cut_to(line, layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_cut_and_padded_and_units_are_short() {
        assert_eq!(cell("abc", 5), "abc  ");
        assert_eq!(cell("abcdef", 4), "abc…");
        assert_eq!(bytes(9_999), "9999");
        assert_eq!(bytes(1 << 30), "1024M");
        assert_eq!(duration(1500), "1.5s");
        assert_eq!(duration(61_000), "1m01s");
        assert_eq!(time("2026-12-03T08:00:00.123Z"), "2026-12-03 08:00:00");
    }

    #[test]
    fn a_line_fits_the_terminal_and_the_columns_align_with_the_header() {
        let row = CallRow {
            ts: "2026-12-03T08:00:00.123Z".into(),
            call_id: "c_0123456789abcdef".into(),
            session_id: Some("s1".into()),
            argv: vec!["npx".into(), "-y".into(), "a server\n<script>".into()],
            state: Some("completed".into()),
            exit_code: Some(0),
            duration_ms: Some(1500),
            stderr_seen: Some(20 << 10),
            stderr_kept: Some(4 << 10),
            approval: None,
            mcp: McpActivity {
                requests: 3,
                outcomes: [("result".to_string(), 2), ("denied".to_string(), 1)].into(),
                tools_called: BTreeMap::new(),
                tools_not_run: 1,
                restarts: 2,
            },
            line: 2,
            verified: true,
        };
        let line = call(&row, Layout::default());
        let at = |text: &str, word: &str| text[..text.find(word).unwrap()].chars().count();
        let header = call_header();
        assert_eq!(at(&line, "completed"), at(&header, "STATE"), "{line}");
        assert_eq!(at(&line, "npx"), at(&header, "COMMAND"), "{line}");
        assert!(
            line.contains("3 req: 2 result, 1 denied; 2 restarts"),
            "{line}"
        );
        assert!(line.contains("20K/4096"), "{line}");
        assert!(line.contains(r"a server\u{a}<script>"), "escaped: {line}");
        let narrow = Layout {
            width: Some(60),
            colour: false,
        };
        assert_eq!(call(&row, narrow).chars().count(), 60);
        let coloured = call(
            &row,
            Layout {
                width: None,
                colour: true,
            },
        );
        assert!(coloured.contains("\x1b[32mcompleted"), "{coloured:?}");
    }
}
