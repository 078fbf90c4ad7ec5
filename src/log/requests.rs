//! The requests view (`log --requests`), pure: one row per MCP request
//! journaled (mcp_request), at its response, or at its call's end (or
//! the journal's) when it was never answered: its time, call, session,
//! id, method, tool, the gate's decision and wait, its outcome and
//! duration. Memory follows the requests open at once (at most
//! `MAX_OPEN`; past that a request is counted, not followed).

use std::collections::HashMap;

use crate::journal::OpenRequests;

use serde::Serialize;

use super::activity::{Fields, Filter};

/// Most requests followed at once, across the calls in flight.
const MAX_OPEN: usize = 65_536;

/// One request, as `log --requests` shows it (and `--json` writes it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct RequestRow {
    /// The request's time (its mcp_request entry).
    pub ts: String,
    pub call_id: String,
    pub session_id: Option<String>,
    /// As JSON text (`7`, `"a"`).
    pub request_id: String,
    pub method: Option<String>,
    /// A tools/call's tool.
    pub tool: Option<String>,
    /// The gate's decision (mcp_decision) and its wait, if any.
    pub decision: Option<String>,
    pub waited_ms: Option<u64>,
    /// null: never answered (the call, or the journal, ended first).
    pub outcome: Option<String>,
    pub duration_ms: Option<u64>,
    /// The request's line, and whether the chain held there and after,
    /// up to its response.
    pub line: u64,
    pub verified: bool,
}

/// The requests open, and the sessions of the calls in flight.
#[derive(Default)]
pub(super) struct Requests {
    calls: HashMap<String, Option<String>>,
    open: OpenRequests<(String, String), RequestRow>,
    /// Requests not followed (more than `MAX_OPEN` open at once).
    pub unfollowed: u64,
}

impl Requests {
    /// One entry: the rows it ends (a response, or a call's end).
    pub(super) fn entry(
        &mut self,
        line: u64,
        verified: bool,
        fields: &Fields<'_>,
    ) -> Vec<RequestRow> {
        let Some(call_id) = fields.call_id.as_deref() else {
            return Vec::new();
        };
        let key = |fields: &Fields<'_>| {
            let id = fields.request_id.map_or("null", |id| id.get());
            (call_id.to_string(), id.to_string())
        };
        match &*fields.kind {
            "intent" => {
                let session = fields.session_id.as_deref().map(str::to_string);
                self.calls.insert(call_id.to_string(), session);
            }
            "mcp_request" if self.open.len() >= MAX_OPEN => self.unfollowed += 1,
            "mcp_request" => {
                let row = RequestRow {
                    ts: fields.ts.to_string(),
                    call_id: call_id.to_string(),
                    session_id: self.calls.get(call_id).cloned().flatten(),
                    request_id: key(fields).1,
                    method: fields.method.as_deref().map(str::to_string),
                    tool: fields.name.as_deref().map(str::to_string),
                    decision: None,
                    waited_ms: None,
                    outcome: None,
                    duration_ms: None,
                    line,
                    verified,
                };
                self.open.insert(key(fields), row);
            }
            "mcp_decision" => {
                if let Some(row) = self.open.first_mut(&key(fields)) {
                    row.decision = fields.decision.as_deref().map(str::to_string);
                    row.waited_ms = fields.waited_ms;
                    row.verified &= verified;
                }
            }
            "mcp_response" => {
                let outcome = fields.outcome.as_deref().unwrap_or("unknown");
                if let Some(mut row) = self.open.answered(&key(fields), outcome) {
                    row.outcome = fields.outcome.as_deref().map(str::to_string);
                    row.duration_ms = fields.duration_ms;
                    row.verified &= verified;
                    return vec![row];
                }
            }
            "terminal" => {
                self.calls.remove(call_id);
                let mut ended = self.open.take_where(|(call, _)| call == call_id);
                ended.sort_by_key(|row| row.line);
                return ended;
            }
            _ => {}
        }
        Vec::new()
    }

    /// The requests never answered when the journal ends, in its order.
    pub(super) fn unanswered(self) -> Vec<RequestRow> {
        let mut rows: Vec<RequestRow> = self.open.into_values().collect();
        rows.sort_by_key(|row| row.line);
        rows
    }
}

impl Filter {
    /// `--requests`: the times are the request's; the tool its tool's.
    pub(super) fn keeps_request(&self, row: &RequestRow) -> bool {
        self.keeps_when_and_whose(&row.ts, row.session_id.as_ref())
            && self
                .tool
                .as_ref()
                .is_none_or(|t| row.tool.as_deref().is_some_and(|name| t.is_match(name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_a_row_at_its_response_or_at_its_calls_end() {
        let mut requests = Requests::default();
        let lines = [
            r#"{"kind":"intent","ts":"t1","call_id":"c","session_id":"s","argv":[]}"#,
            r#"{"kind":"mcp_request","ts":"t2","call_id":"c","request_id":1,"method":"tools/call","name":"search"}"#,
            r#"{"kind":"mcp_request","ts":"t3","call_id":"c","request_id":"1","method":"ping"}"#,
            r#"{"kind":"mcp_decision","ts":"t4","call_id":"c","request_id":1,"decision":"approved","waited_ms":40}"#,
            r#"{"kind":"mcp_response","ts":"t5","call_id":"c","request_id":1,"method":"tools/call","outcome":"result","duration_ms":50}"#,
            r#"{"kind":"terminal","ts":"t6","call_id":"c","state":"shut_down"}"#,
        ];
        let rows: Vec<Vec<RequestRow>> = lines
            .iter()
            .enumerate()
            .map(|(i, l)| requests.entry(i as u64 + 1, true, &serde_json::from_str(l).unwrap()))
            .collect();
        let answered = &rows[4][0];
        assert_eq!(answered.request_id, "1", "the number, not the string \"1\"");
        assert_eq!(answered.session_id.as_deref(), Some("s"));
        assert_eq!(answered.tool.as_deref(), Some("search"));
        assert_eq!(answered.decision.as_deref(), Some("approved"));
        assert_eq!(
            (answered.waited_ms, answered.duration_ms),
            (Some(40), Some(50))
        );
        let unanswered = &rows[5];
        assert_eq!(unanswered.len(), 1);
        assert_eq!(unanswered[0].request_id, "\"1\"");
        assert_eq!(unanswered[0].outcome, None);
        assert!(requests.unanswered().is_empty());
    }
}
