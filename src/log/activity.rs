//! The activity view, pure: journal entries in, one row per call out
//! (at its terminal entry, or at the end for a call never finished), and
//! one row per session folded from them. Memory follows the calls in
//! flight and the sessions shown, never the journal's length.

use std::collections::{BTreeMap, HashMap};

use crate::journal::OpenRequests;

use serde::Serialize;

pub(super) use crate::journal::EntryView as Fields;
use crate::journal::NOT_SENT;

/// Most tool names a row counts by name; the rest are counted as `…`.
const MAX_TOOLS: usize = 32;
/// Most tool calls of one call followed at once (as the session layer
/// bounds them by --max-in-flight, at most 1024).
const MAX_PENDING: usize = 4096;

/// One call, as `mcp-bound log` shows it (and `--json` writes it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct CallRow {
    /// The intent's time.
    pub ts: String,
    pub call_id: String,
    pub session_id: Option<String>,
    /// As the journal has it (masked as it is).
    pub argv: Vec<String>,
    /// The terminal's state; null for a call with no terminal entry.
    pub state: Option<String>,
    pub exit_code: Option<i64>,
    pub duration_ms: Option<u64>,
    pub stderr_seen: Option<u64>,
    pub stderr_kept: Option<u64>,
    /// The approval before the launch (`--approve-cmd`), if any.
    pub approval: Option<String>,
    /// What it did under the session layer (its fields are the row's own
    /// in the JSON).
    #[serde(flatten)]
    pub mcp: McpActivity,
    /// The intent's line, and whether the chain held there and after,
    /// up to the terminal.
    pub line: u64,
    pub verified: bool,
}

/// A call's activity under the session layer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(super) struct McpActivity {
    /// Requests journaled, and how they ended.
    pub requests: u64,
    pub outcomes: BTreeMap<String, u64>,
    /// Tool calls that reached the server, by tool.
    pub tools_called: BTreeMap<String, u64>,
    /// Tool calls the gate denied or no one approved in time: never sent.
    pub tools_not_run: u64,
    /// The server's restarts (`mcp_restart`).
    pub restarts: u64,
}

impl McpActivity {
    /// A tool call that reached the server.
    fn called(&mut self, tool: String) {
        let tool = if self.tools_called.len() < MAX_TOOLS || self.tools_called.contains_key(&tool) {
            tool
        } else {
            "…".to_string()
        };
        *self.tools_called.entry(tool).or_default() += 1;
    }
}

/// One session, folded from its calls' rows (`--sessions`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(super) struct SessionRow {
    pub session_id: Option<String>,
    pub calls: u64,
    pub first: String,
    pub last: String,
    /// Calls by end state (`unfinished` for none).
    pub states: BTreeMap<String, u64>,
    /// Tool calls that reached the server, and the ones not run.
    pub tool_calls: u64,
    pub tools_not_run: u64,
    /// The servers' restarts in its calls.
    pub restarts: u64,
    pub verified: bool,
}

/// A call in flight: its row so far, and its tool calls journaled and
/// not yet ended (their tool, by request id).
struct Open {
    row: CallRow,
    pending: OpenRequests<String, String>,
}

/// The calls in flight in the journal being read.
#[derive(Default)]
pub(super) struct Activity {
    open: HashMap<String, Open>,
}

impl Activity {
    /// One entry (its line, and whether the chain held): a call's row
    /// when this entry ended it.
    pub(super) fn entry(
        &mut self,
        line: u64,
        verified: bool,
        fields: &Fields<'_>,
    ) -> Option<CallRow> {
        let call_id = fields.call_id.as_deref()?;
        if fields.kind == "intent" {
            let row = CallRow {
                ts: fields.ts.to_string(),
                call_id: call_id.to_string(),
                session_id: fields.session_id.as_deref().map(str::to_string),
                argv: fields
                    .argv
                    .iter()
                    .flatten()
                    .map(|a| a.to_string())
                    .collect(),
                state: None,
                exit_code: None,
                duration_ms: None,
                stderr_seen: None,
                stderr_kept: None,
                approval: None,
                mcp: McpActivity::default(),
                line,
                verified,
            };
            let open = Open {
                row,
                pending: OpenRequests::default(),
            };
            // A call id reused after its call ended starts a new row; one
            // still open is shown as it stood.
            return self.open.insert(call_id.to_string(), open).map(|o| o.row);
        }
        let Open { row, pending } = self.open.get_mut(call_id)?;
        row.verified &= verified;
        match &*fields.kind {
            "decision" => row.approval = fields.decision.as_deref().map(str::to_string),
            "mcp_restart" => row.mcp.restarts += 1,
            "mcp_request" => {
                row.mcp.requests += 1;
                if let Some((id, tool)) = fields.tool_call()
                    && pending.len() < MAX_PENDING
                {
                    pending.insert(id.to_string(), tool.to_string());
                }
            }
            "mcp_response" => {
                let outcome = fields.outcome.as_deref().unwrap_or("unknown");
                *row.mcp.outcomes.entry(outcome.to_string()).or_default() += 1;
                let tool = fields
                    .request_id
                    .and_then(|id| pending.answered(id.get(), outcome));
                match tool {
                    Some(_) if NOT_SENT.contains(&outcome) => row.mcp.tools_not_run += 1,
                    Some(tool) => row.mcp.called(tool),
                    None => {}
                }
            }
            "terminal" => {
                let Open { mut row, pending } = self.open.remove(call_id)?;
                // Sent and never answered: they reached the server.
                for tool in pending.into_values() {
                    row.mcp.called(tool);
                }
                row.state = fields.state.as_deref().map(str::to_string);
                row.exit_code = fields.exit_code;
                row.duration_ms = fields.duration_ms;
                row.stderr_seen = fields.streams.map(|(seen, _)| seen);
                row.stderr_kept = fields.streams.map(|(_, kept)| kept);
                return Some(row);
            }
            _ => {}
        }
        None
    }

    /// The calls never finished, in the journal's order.
    pub(super) fn unfinished(self) -> Vec<CallRow> {
        let mut rows: Vec<CallRow> = self.open.into_values().map(|o| o.row).collect();
        rows.sort_by_key(|r| r.line);
        rows
    }
}

/// The rows a filter keeps (`--since`, `--until`, `--session`,
/// `--state`, `--tool`).
#[derive(Debug, Clone, Default)]
pub(super) struct Filter {
    /// RFC 3339, as the journal writes its times (UTC, `Z`).
    pub since: Option<String>,
    pub until: Option<String>,
    pub session: Option<String>,
    pub state: Option<String>,
    pub tool: Option<regex::Regex>,
}

impl Filter {
    /// A row of this time and session: within `--since` and `--until`,
    /// of `--session`.
    pub(super) fn keeps_when_and_whose(&self, ts: &str, session_id: Option<&String>) -> bool {
        self.since.as_deref().is_none_or(|t| ts >= t)
            && self.until.as_deref().is_none_or(|t| ts <= t)
            && self.session.as_ref().is_none_or(|s| session_id == Some(s))
    }

    pub(super) fn keeps(&self, row: &CallRow) -> bool {
        self.keeps_when_and_whose(&row.ts, row.session_id.as_ref())
            && self
                .state
                .as_ref()
                .is_none_or(|s| row.state.as_deref().unwrap_or("unfinished") == s.as_str())
            && self
                .tool
                .as_ref()
                .is_none_or(|t| row.mcp.tools_called.keys().any(|name| t.is_match(name)))
    }
}

/// Sessions, in the order first seen.
#[derive(Default)]
pub(super) struct Sessions {
    rows: Vec<SessionRow>,
    index: HashMap<Option<String>, usize>,
}

impl Sessions {
    pub(super) fn add(&mut self, call: &CallRow) {
        let at = *self
            .index
            .entry(call.session_id.clone())
            .or_insert_with(|| {
                self.rows.push(SessionRow {
                    session_id: call.session_id.clone(),
                    first: call.ts.clone(),
                    last: call.ts.clone(),
                    verified: true,
                    ..SessionRow::default()
                });
                self.rows.len() - 1
            });
        let row = &mut self.rows[at];
        row.calls += 1;
        if call.ts < row.first {
            row.first = call.ts.clone();
        }
        if call.ts > row.last {
            row.last = call.ts.clone();
        }
        let state = call.state.as_deref().unwrap_or("unfinished");
        *row.states.entry(state.to_string()).or_default() += 1;
        row.tool_calls += call.mcp.tools_called.values().sum::<u64>();
        row.tools_not_run += call.mcp.tools_not_run;
        row.restarts += call.mcp.restarts;
        row.verified &= call.verified;
    }

    pub(super) fn rows(self) -> Vec<SessionRow> {
        self.rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(line: &str) -> Fields<'_> {
        serde_json::from_str(line).unwrap()
    }

    fn feed(activity: &mut Activity, lines: &[&str]) -> Vec<CallRow> {
        lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| activity.entry(i as u64 + 1, true, &fields(l)))
            .collect()
    }

    #[test]
    fn a_call_is_one_row_at_its_terminal_with_its_requests() {
        let mut activity = Activity::default();
        let rows = feed(
            &mut activity,
            &[
                r#"{"kind":"genesis","ts":"t0","journal_id":"j"}"#,
                r#"{"kind":"intent","ts":"t1","call_id":"c1","session_id":"s","argv":["srv"]}"#,
                r#"{"kind":"mcp_request","ts":"t2","call_id":"c1","request_id":1,"method":"tools/call","name":"search"}"#,
                r#"{"kind":"mcp_response","ts":"t3","call_id":"c1","request_id":1,"method":"tools/call","outcome":"result"}"#,
                r#"{"kind":"mcp_request","ts":"t4","call_id":"c1","request_id":"a","method":"tools/call","name":"rm"}"#,
                r#"{"kind":"mcp_response","ts":"t5","call_id":"c1","request_id":"a","method":"tools/call","outcome":"denied"}"#,
                r#"{"kind":"mcp_restart","ts":"t5","call_id":"c1","attempt":1,"pid":7,"exit":{"code":3}}"#,
                r#"{"kind":"intent","ts":"t6","call_id":"c2","session_id":null,"argv":["x"]}"#,
                r#"{"kind":"terminal","ts":"t7","call_id":"c1","state":"shut_down","exit_code":0,"duration_ms":12,"streams":{"stdout_bytes":1,"stderr_bytes_seen":9,"stderr_bytes_retained":4,"stderr_truncated":true}}"#,
            ],
        );
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(row.state.as_deref(), Some("shut_down"));
        assert_eq!((row.stderr_seen, row.stderr_kept), (Some(9), Some(4)));
        assert_eq!(row.mcp.requests, 2);
        assert_eq!(row.mcp.outcomes["denied"], 1);
        assert_eq!(row.mcp.tools_called.len(), 1, "a denial is not a call");
        assert_eq!(row.mcp.tools_called["search"], 1);
        assert_eq!(row.mcp.tools_not_run, 1);
        assert_eq!(row.mcp.restarts, 1);
        let open = activity.unfinished();
        assert_eq!(open.len(), 1);
        assert_eq!(open[0].state, None);
        let mut sessions = Sessions::default();
        sessions.add(row);
        sessions.add(&open[0]);
        let sessions = sessions.rows();
        assert_eq!(sessions.len(), 2);
        assert_eq!(sessions[0].states["shut_down"], 1);
        assert_eq!(sessions[0].restarts, 1);
        assert_eq!(sessions[1].states["unfinished"], 1);
    }

    #[test]
    fn a_filter_keeps_what_it_names() {
        let mut activity = Activity::default();
        let rows = feed(
            &mut activity,
            &[
                r#"{"kind":"intent","ts":"2026-12-01T00:00:00.000Z","call_id":"c1","session_id":"s","argv":[]}"#,
                r#"{"kind":"mcp_request","ts":"t","call_id":"c1","request_id":2,"method":"tools/call","name":"read_file"}"#,
                r#"{"kind":"terminal","ts":"t","call_id":"c1","state":"completed"}"#,
            ],
        );
        let row = &rows[0];
        let keeps = |filter: Filter| filter.keeps(row);
        assert!(keeps(Filter::default()));
        assert!(keeps(Filter {
            since: Some("2026-11-30T00:00:00.000Z".into()),
            ..Filter::default()
        }));
        assert!(!keeps(Filter {
            until: Some("2026-11-30T00:00:00.000Z".into()),
            ..Filter::default()
        }));
        assert!(!keeps(Filter {
            state: Some("failed".into()),
            ..Filter::default()
        }));
        assert!(keeps(Filter {
            tool: Some(regex::Regex::new("^read_.*$").unwrap()),
            session: Some("s".into()),
            ..Filter::default()
        }));
        assert!(!keeps(Filter {
            tool: Some(regex::Regex::new("^write$").unwrap()),
            ..Filter::default()
        }));
    }
}
