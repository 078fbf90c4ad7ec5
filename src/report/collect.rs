//! What the report shows, gathered from the journal's entries, pure:
//! sessions with their calls as bars (each with its requests, its
//! approval wait and its debug windows), tools with their outcomes and a
//! duration sketch, and totals. Memory is bounded by what is shown: so
//! many calls a session, requests a call, rows and tools; the rest are
//! counted and the report says so.

use std::collections::{BTreeMap, HashMap};

use crate::journal::OpenRequests;

use serde::Deserialize;

use super::sketch::Sketch;
use crate::journal::{EntryView, NOT_SENT};

/// Most calls drawn in one session's timeline.
pub(super) const MAX_CALLS_DRAWN: usize = 300;
/// Most requests drawn under one call.
pub(super) const MAX_REQUESTS_DRAWN: usize = 200;
/// Most rows in the calls table.
pub(super) const MAX_ROWS: usize = 5_000;
/// Most tools counted by name.
pub(super) const MAX_TOOLS: usize = 256;
/// Sessions drawn; the calls of any past them are counted.
pub(super) const MAX_SESSIONS_DRAWN: usize = 200;
/// Of each call's stderr excerpt, what the page keeps: its head and tail
/// this long each, the cut said.
pub(super) const EXCERPT_SHOWN: usize = 2048;
/// Most calls in flight followed, and requests open in one.
const MAX_OPEN: usize = 4_096;
/// Most characters of a command line shown.
const ARGV_CHARS: usize = 300;

/// An entry's time in milliseconds since the epoch.
fn millis(ts: &str) -> Option<u64> {
    let at = humantime::parse_rfc3339_weak(ts).ok()?;
    let since = at.duration_since(std::time::UNIX_EPOCH).ok()?;
    u64::try_from(since.as_millis()).ok()
}

/// A wait for an approval: it ended at `end_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Wait {
    pub end_ms: u64,
    pub waited_ms: u64,
    pub decision: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RequestBar {
    /// As JSON text.
    pub request_id: String,
    pub start_ms: u64,
    pub duration_ms: Option<u64>,
    pub method: String,
    pub tool: Option<String>,
    /// None while unanswered.
    pub outcome: Option<String>,
    pub wait: Option<Wait>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CallBar {
    pub call_id: String,
    pub session_id: Option<String>,
    pub argv: String,
    pub ts: String,
    pub start_ms: u64,
    pub duration_ms: Option<u64>,
    /// None: no terminal entry (unfinished).
    pub state: Option<String>,
    pub exit_code: Option<i64>,
    pub stderr: Option<(u64, u64)>,
    pub excerpt: Option<String>,
    pub wait: Option<Wait>,
    pub requests: Vec<RequestBar>,
    pub requests_total: u64,
    /// Its restarts and debug windows.
    pub marks: Marks,
    pub line: u64,
    pub verified: bool,
}

/// Most restarts drawn on one call's bar.
pub(super) const MAX_RESTARTS_DRAWN: usize = 100;

/// What is marked on a call's bar: each restart (its time, attempt, and
/// how the incarnation before it ended), and the debug windows opened
/// (how many, how long open: the terminal entry's totals).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Marks {
    pub restarts: Vec<(u64, u64, String)>,
    pub restarts_total: u64,
    pub debug_windows: Option<(u64, u64)>,
}

/// A call in flight: its bar so far, and its tools/calls not yet
/// answered (their tool, by request id).
struct Open {
    bar: CallBar,
    pending: OpenRequests<String, String>,
}

/// One session: its calls drawn, and how many were not.
#[derive(Debug, Clone, Default)]
pub(super) struct Session {
    pub session_id: Option<String>,
    pub calls: Vec<CallBar>,
    pub calls_total: u64,
}

/// One tool: its calls by outcome, and their durations.
#[derive(Debug, Clone, Default)]
pub(super) struct Tool {
    pub outcomes: BTreeMap<String, u64>,
    pub not_run: u64,
    pub durations: Sketch,
}

/// The terminal's fields only the report shows.
#[derive(Deserialize)]
struct TerminalExtra {
    #[serde(default)]
    excerpt: Option<String>,
    #[serde(default)]
    debug_windows: Option<crate::record::DebugWindowsTotal>,
}

/// The journal, gathered.
#[derive(Default)]
pub(super) struct Collected {
    pub sessions: Vec<Session>,
    session_index: HashMap<Option<String>, usize>,
    /// The calls table's rows (indices into sessions' calls), in order.
    pub rows: Vec<(usize, usize)>,
    pub calls_total: u64,
    pub states: BTreeMap<String, u64>,
    pub tools: BTreeMap<String, Tool>,
    pub tools_more: u64,
    pub requests_total: u64,
    pub restarts_total: u64,
    /// Calls of sessions past the first [`MAX_SESSIONS_DRAWN`]: counted,
    /// not drawn (their sessions' ids are not kept, so not counted).
    pub calls_in_sessions_more: u64,
    open: HashMap<String, Open>,
}

impl Collected {
    /// One entry: its line, whether the chain held, its view and bytes.
    pub(super) fn entry(
        &mut self,
        line: u64,
        verified: bool,
        view: &EntryView<'_>,
        content: &[u8],
    ) {
        let Some(call_id) = view.call_id.as_deref() else {
            return;
        };
        let at = millis(&view.ts);
        if view.kind == "intent" {
            self.intent(call_id, line, verified, view, at);
            return;
        }
        let Some(Open { bar, pending }) = self.open.get_mut(call_id) else {
            return;
        };
        bar.verified &= verified;
        let wait = || Wait {
            end_ms: at.unwrap_or(0),
            waited_ms: view.waited_ms.unwrap_or(0),
            decision: view.decision.as_deref().unwrap_or("?").to_string(),
        };
        match &*view.kind {
            "decision" => bar.wait = Some(wait()),
            "mcp_restart" => {
                self.restarts_total += 1;
                bar.marks.restarts_total += 1;
                if bar.marks.restarts.len() < MAX_RESTARTS_DRAWN {
                    let (attempt, after) = restart_of(content);
                    let at = at.unwrap_or(bar.start_ms);
                    bar.marks.restarts.push((at, attempt, after));
                }
            }
            "mcp_request" => {
                self.requests_total += 1;
                bar.requests_total += 1;
                if let Some((id, tool)) = view.tool_call()
                    && pending.len() < MAX_OPEN
                {
                    pending.insert(id.to_string(), tool.to_string());
                }
                if bar.requests.len() < MAX_REQUESTS_DRAWN {
                    bar.requests.push(RequestBar {
                        request_id: view.request_id.map_or("null", |id| id.get()).to_string(),
                        start_ms: at.unwrap_or(bar.start_ms),
                        duration_ms: None,
                        method: view.method.as_deref().unwrap_or("?").to_string(),
                        tool: view.name.as_deref().map(str::to_string),
                        outcome: None,
                        wait: None,
                    });
                }
            }
            "mcp_decision" => {
                if let Some(request) = request_of(bar, view) {
                    request.wait = Some(wait());
                }
            }
            "mcp_response" => {
                let outcome = view.outcome.as_deref().unwrap_or("?").to_string();
                if let Some(request) = request_of(bar, view) {
                    request.duration_ms = view.duration_ms;
                    request.outcome = Some(outcome.clone());
                }
                let tool = view
                    .request_id
                    .and_then(|id| pending.answered(id.get(), &outcome));
                if let Some(tool) = tool {
                    self.tool(&tool, &outcome, view.duration_ms);
                }
            }
            "terminal" => {
                let mut bar = self.open.remove(call_id).expect("open").bar;
                bar.state = view.state.as_deref().map(str::to_string);
                bar.exit_code = view.exit_code;
                bar.duration_ms = view.duration_ms;
                bar.stderr = view.streams;
                if let Ok(extra) = serde_json::from_slice::<TerminalExtra>(content) {
                    bar.excerpt = extra.excerpt.map(shown_excerpt);
                    bar.marks.debug_windows = extra.debug_windows.map(|d| (d.count, d.open_ms));
                }
                self.finish(bar);
            }
            _ => {}
        }
    }

    /// An intent opens its call's bar.
    fn intent(
        &mut self,
        call_id: &str,
        line: u64,
        verified: bool,
        view: &EntryView<'_>,
        at: Option<u64>,
    ) {
        if self.open.len() >= MAX_OPEN && !self.open.contains_key(call_id) {
            return;
        }
        let argv = view
            .argv
            .iter()
            .flatten()
            .map(|a| &**a)
            .collect::<Vec<_>>()
            .join(" ");
        let bar = CallBar {
            call_id: call_id.to_string(),
            session_id: view.session_id.as_deref().map(str::to_string),
            argv: shortened(&argv),
            ts: view.ts.to_string(),
            start_ms: at.unwrap_or(0),
            duration_ms: None,
            state: None,
            exit_code: None,
            stderr: None,
            excerpt: None,
            wait: None,
            requests: Vec::new(),
            requests_total: 0,
            marks: Marks::default(),
            line,
            verified,
        };
        let open = Open {
            bar,
            pending: OpenRequests::default(),
        };
        if let Some(earlier) = self.open.insert(call_id.to_string(), open) {
            self.finish(earlier.bar);
        }
    }

    fn tool(&mut self, name: &str, outcome: &str, duration: Option<u64>) {
        if !self.tools.contains_key(name) && self.tools.len() >= MAX_TOOLS {
            self.tools_more += 1;
            return;
        }
        let tool = self.tools.entry(name.to_string()).or_default();
        *tool.outcomes.entry(outcome.to_string()).or_default() += 1;
        if NOT_SENT.contains(&outcome) {
            tool.not_run += 1;
        } else if let Some(ms) = duration {
            tool.durations.add(ms);
        }
    }

    /// A call ended (or never did): into its session, and the table.
    fn finish(&mut self, bar: CallBar) {
        self.calls_total += 1;
        let state = bar.state.as_deref().unwrap_or("unfinished");
        *self.states.entry(state.to_string()).or_default() += 1;
        let next = self.sessions.len();
        let known = self.session_index.get(&bar.session_id).copied();
        if known.is_none() && next >= MAX_SESSIONS_DRAWN {
            // A session past the bound: counted, not drawn (and its id
            // not kept, so that memory stays bounded).
            self.calls_in_sessions_more += 1;
            return;
        }
        let at = *self
            .session_index
            .entry(bar.session_id.clone())
            .or_insert(next);
        if at == next {
            self.sessions.push(Session {
                session_id: bar.session_id.clone(),
                ..Session::default()
            });
        }
        let session = &mut self.sessions[at];
        session.calls_total += 1;
        if session.calls.len() < MAX_CALLS_DRAWN {
            session.calls.push(bar);
            if self.rows.len() < MAX_ROWS {
                self.rows.push((at, session.calls.len() - 1));
            }
        }
    }

    /// The end of the journal: the calls never finished.
    pub(super) fn end(mut self) -> Collected {
        let mut open: Vec<CallBar> = std::mem::take(&mut self.open)
            .into_values()
            .map(|open| open.bar)
            .collect();
        open.sort_by_key(|bar| bar.line);
        for bar in open {
            self.finish(bar);
        }
        self
    }
}

/// An excerpt as the page keeps it: whole when short, else its head and
/// its tail, [`EXCERPT_SHOWN`] bytes each, and what was cut between.
fn shown_excerpt(excerpt: String) -> String {
    if excerpt.len() <= 2 * EXCERPT_SHOWN {
        return excerpt;
    }
    let mut head = EXCERPT_SHOWN;
    while !excerpt.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = excerpt.len() - EXCERPT_SHOWN;
    while !excerpt.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[mcp-bound report: {} bytes of the excerpt not shown]\n{}",
        &excerpt[..head],
        tail - head,
        &excerpt[tail..]
    )
}

/// A restart entry's attempt, and how the incarnation before it ended.
fn restart_of(content: &[u8]) -> (u64, String) {
    let entry: serde_json::Value = serde_json::from_slice(content).unwrap_or_default();
    let after = crate::journal::restart_after(&entry["exit"]);
    (entry["attempt"].as_u64().unwrap_or(0), after)
}

/// The drawn request an entry names (the latest of that id).
fn request_of<'b>(bar: &'b mut CallBar, view: &EntryView<'_>) -> Option<&'b mut RequestBar> {
    let id = view.request_id?.get();
    bar.requests.iter_mut().rev().find(|r| r.request_id == id)
}

/// At most `ARGV_CHARS` characters, and an ellipsis where cut.
fn shortened(text: &str) -> String {
    match text.char_indices().nth(ARGV_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_gathers_its_requests_wait_and_windows_and_one_never_ended_is_kept() {
        let lines = [
            r#"{"kind":"intent","ts":"2026-12-03T10:00:00.000Z","call_id":"a","session_id":"s","argv":["srv","<x>"]}"#,
            r#"{"kind":"mcp_request","ts":"2026-12-03T10:00:00.100Z","call_id":"a","request_id":1,"method":"tools/call","name":"search"}"#,
            r#"{"kind":"mcp_decision","ts":"2026-12-03T10:00:00.300Z","call_id":"a","request_id":1,"decision":"approved","waited_ms":200}"#,
            r#"{"kind":"mcp_response","ts":"2026-12-03T10:00:00.400Z","call_id":"a","request_id":1,"method":"tools/call","outcome":"result","duration_ms":300}"#,
            r#"{"kind":"mcp_restart","ts":"2026-12-03T10:00:00.500Z","call_id":"a","attempt":1,"pid":7,"exit":{"code":3}}"#,
            r#"{"kind":"intent","ts":"2026-12-03T10:00:01.000Z","call_id":"b","session_id":"s","argv":[]}"#,
            r#"{"kind":"terminal","ts":"2026-12-03T10:00:02.000Z","call_id":"a","state":"shut_down","duration_ms":2000,"excerpt":"oops","debug_windows":{"count":1,"open_ms":5}}"#,
        ];
        let mut collected = Collected::default();
        for (i, line) in lines.iter().enumerate() {
            let view: EntryView<'_> = serde_json::from_str(line).unwrap();
            collected.entry(i as u64 + 1, true, &view, line.as_bytes());
        }
        let c = collected.end();
        assert_eq!(
            (c.calls_total, c.requests_total, c.sessions.len()),
            (2, 1, 1)
        );
        let calls = &c.sessions[0].calls;
        let a = &calls[0];
        assert_eq!(a.argv, "srv <x>");
        assert_eq!(a.start_ms % 1000, 0);
        assert_eq!(
            (a.state.as_deref(), a.duration_ms),
            (Some("shut_down"), Some(2000))
        );
        assert_eq!(
            (a.excerpt.as_deref(), a.marks.debug_windows),
            (Some("oops"), Some((1, 5)))
        );
        let restarted = (a.start_ms + 500, 1, "exited 3".to_string());
        assert_eq!(a.marks.restarts, [restarted]);
        assert_eq!(c.restarts_total, 1);
        let request = &a.requests[0];
        assert_eq!(request.start_ms - a.start_ms, 100);
        assert_eq!(
            (request.outcome.as_deref(), request.duration_ms),
            (Some("result"), Some(300))
        );
        let wait = request.wait.as_ref().unwrap();
        assert_eq!((wait.end_ms - a.start_ms, wait.waited_ms), (300, 200));
        assert_eq!(calls[1].state, None, "b never ended");
        assert_eq!(c.states["unfinished"], 1);
        let search = &c.tools["search"];
        assert_eq!(
            (search.outcomes["result"], search.durations.quantile(0.5)),
            (1, Some(300))
        );
        assert_eq!(c.rows, [(0, 0), (0, 1)]);
    }
}
