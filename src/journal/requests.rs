//! Verification's pairing of `mcp_request` with `mcp_response`, inside
//! the call they belong to: a response needs an open request, a request
//! needs an open call, and a request still open when its call ends never
//! ended. A response whose result is a task opens that task, which an
//! `mcp_task` entry ends. A request refused as it came (`irregular` holds
//! `refused`) is ended by the call's very next entry, its `refused`
//! response under the same id (null included). Memory follows the
//! requests and tasks in flight.

use std::collections::HashMap;

use super::line::Parsed;
use super::report::{BreakKind, UnfinishedRequest};
use super::shapes::Body;

/// Requests with no response yet, and tasks with no end yet, by call id
/// and request id.
#[derive(Default)]
pub(crate) struct OpenRequests {
    open: HashMap<(String, String), UnfinishedRequest>,
    tasks: HashMap<(String, String), UnfinishedRequest>,
    /// By call: a refused request's id (its JSON text), whose refused
    /// response must be the call's next entry.
    refused: HashMap<String, String>,
}

impl OpenRequests {
    /// An `mcp_request` or `mcp_response` entry; `call_open`: its call
    /// has an intent and no terminal yet.
    pub(crate) fn on_entry(
        &mut self,
        line_no: u64,
        parsed: &Parsed<'_>,
        call_open: bool,
        gated: bool,
    ) -> Result<(), (BreakKind, String)> {
        let call_id = parsed.call_id().unwrap_or_default();
        let raw = parsed.body.request_id().map(|r| r.get()).unwrap_or("null");
        if !call_open {
            return Err((
                BreakKind::OrphanTerminal,
                format!(
                    "an {} for call {call_id} with no open intent",
                    parsed.kind()
                ),
            ));
        }
        if self.refusal(parsed, call_id, raw)? {
            return Ok(());
        }
        // The same id however it was spelled, as the session matched it
        // (1, 1.0 and 1e0 are one). A request the session did not track
        // (an irregular one: a duplicate id, an id with no key, a line it
        // could not read) has no response to pair.
        let untracked = matches!(&parsed.body, Body::McpRequest(request)
            if request.irregular.as_ref().is_some_and(|i| i.iter().any(|i| i.untracked())));
        let Some(key) = crate::request_id::key(raw).filter(|_| !untracked) else {
            return Ok(());
        };
        let key = (call_id.to_string(), key.into_owned());
        match &parsed.body {
            Body::McpTask(_) => self.task_ended(&key, raw),
            Body::McpRequest(request) => self.request(key, line_no, parsed, request),
            Body::McpDecision(decision) => self.decision(&key, decision),
            Body::McpResponse(response) => self.response(key, response, gated),
            _ => Ok(()),
        }
    }

    /// An `mcp_task`: it ends the task its call's response opened.
    fn task_ended(&mut self, key: &(String, String), id: &str) -> Result<(), (BreakKind, String)> {
        if self.tasks.remove(key).is_some() {
            return Ok(());
        }
        let call_id = &key.0;
        Err((
            BreakKind::OrphanTerminal,
            format!("an mcp_task for request {id} of call {call_id}, which opened no task"),
        ))
    }

    /// An `mcp_request` opens its request (one id open at a time).
    fn request(
        &mut self,
        key: (String, String),
        line_no: u64,
        parsed: &Parsed<'_>,
        request: &super::shapes::McpRequest<'_>,
    ) -> Result<(), (BreakKind, String)> {
        let request_id = request.request_id.get().to_string();
        if self.open.contains_key(&key) {
            return Err((
                BreakKind::DuplicateCall,
                format!(
                    "a second mcp_request {request_id} of call {} while it is open",
                    key.0
                ),
            ));
        }
        let open = UnfinishedRequest {
            line: line_no,
            call_id: key.0.clone(),
            request_id,
            method: parsed.body.method().unwrap_or_default(),
            ts: parsed.ts.to_string(),
            task: false,
            params_sha256: request.params_sha256.as_deref().map(String::from),
            decision: None,
        };
        self.open.insert(key, open);
        Ok(())
    }

    /// An `mcp_decision`: bound to its open request, for the same params.
    fn decision(
        &mut self,
        key: &(String, String),
        decision: &super::shapes::McpDecision<'_>,
    ) -> Result<(), (BreakKind, String)> {
        let (call_id, _) = key;
        let request_id = decision.request_id.get();
        let Some(request) = self.open.get_mut(key) else {
            return Err((
                BreakKind::OrphanTerminal,
                format!("an mcp_decision {request_id} of call {call_id} with no open mcp_request"),
            ));
        };
        if request.decision.is_some() {
            return Err((
                BreakKind::DuplicateCall,
                format!("a second mcp_decision for request {request_id} of call {call_id}"),
            ));
        }
        if decision.params_sha256.as_deref() != request.params_sha256.as_deref() {
            return Err((
                BreakKind::Unapproved,
                format!(
                    "the mcp_decision for request {request_id} of call {call_id} is for other params than its mcp_request"
                ),
            ));
        }
        request.decision = Some(decision.decision);
        Ok(())
    }

    /// An `mcp_response` ends its request; under a gate, a tools/call's end
    /// must agree with its decision; a result that is a task opens it.
    fn response(
        &mut self,
        key: (String, String),
        response: &super::shapes::McpResponse<'_>,
        gated: bool,
    ) -> Result<(), (BreakKind, String)> {
        let Some(request) = self.open.remove(&key) else {
            let (call_id, _) = &key;
            return Err((
                BreakKind::OrphanTerminal,
                format!(
                    "an mcp_response {} of call {call_id} with no open mcp_request",
                    response.request_id.get()
                ),
            ));
        };
        if gated && request.method == "tools/call" {
            check_gate(&request, &response.outcome)?;
        }
        if response.result_type == Some(crate::session::ResultType::Task) {
            let task = UnfinishedRequest {
                task: true,
                ..request
            };
            self.tasks.insert(key, task);
        }
        Ok(())
    }

    /// A refused request, or the end the call owes one: true when `parsed`
    /// was either (nothing more to check), Err when the order is broken.
    fn refusal(
        &mut self,
        parsed: &Parsed<'_>,
        call_id: &str,
        raw: &str,
    ) -> Result<bool, (BreakKind, String)> {
        let refused_end = matches!(&parsed.body, Body::McpResponse(r) if r.reason.is_some());
        if let Some(owed) = self.refused.remove(call_id) {
            return if refused_end && owed == raw {
                Ok(true)
            } else {
                Err((
                    BreakKind::OrphanTerminal,
                    format!(
                        "the refused mcp_request {owed} of call {call_id} is not ended by the call's next entry"
                    ),
                ))
            };
        }
        if refused_end {
            return Err((
                BreakKind::OrphanTerminal,
                format!(
                    "a refused mcp_response {raw} of call {call_id} with no refused mcp_request just before it"
                ),
            ));
        }
        let refused = matches!(&parsed.body, Body::McpRequest(request)
            if request.irregular.as_ref().is_some_and(|i| i.contains(&crate::session::Irregular::Refused)));
        if refused {
            self.refused.insert(call_id.to_string(), raw.to_string());
        }
        Ok(refused)
    }

    /// A call ended: its requests still open never ended. Err when it
    /// still owed a refused request its end.
    pub(crate) fn call_ended(
        &mut self,
        call_id: &str,
    ) -> Result<Vec<UnfinishedRequest>, (BreakKind, String)> {
        if let Some(owed) = self.refused.remove(call_id) {
            return Err((
                BreakKind::OrphanTerminal,
                format!(
                    "the refused mcp_request {owed} of call {call_id} is not ended by the call's next entry"
                ),
            ));
        }
        let mut ended = Vec::new();
        for open in [&mut self.open, &mut self.tasks] {
            if open.is_empty() {
                continue;
            }
            let keys: Vec<(String, String)> = open
                .keys()
                .filter(|(call, _)| call == call_id)
                .cloned()
                .collect();
            ended.extend(keys.iter().filter_map(|key| open.remove(key)));
        }
        Ok(ended)
    }

    /// The end of the journal: whatever is still open.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = UnfinishedRequest> + '_ {
        self.open
            .drain()
            .chain(self.tasks.drain())
            .map(|(_, request)| request)
    }
}

/// A gated tools/call's end: one that reached the server needs an
/// `approved` decision; one not approved ends `denied`, or `cancelled`
/// (the client's cancel while it waited). One mcp-bound answered
/// `input_required` to ask the person (`asked`) has no decision yet: its
/// retry, a request of its own, carries it.
fn check_gate(request: &UnfinishedRequest, outcome: &str) -> Result<(), (BreakKind, String)> {
    use crate::record::Decision;
    let id = &request.request_id;
    let call = &request.call_id;
    match (request.decision, outcome) {
        (Some(Decision::Approved), "denied") => Err((
            BreakKind::Unapproved,
            format!("request {id} of call {call} was approved, yet its response says denied"),
        )),
        (Some(Decision::Approved), _) | (Some(_), "denied" | "cancelled") | (None, "asked") => {
            Ok(())
        }
        (None, _) => Err((
            BreakKind::Unapproved,
            format!(
                "tools/call {id} of call {call} ended ({outcome}) with no mcp_decision under a tool gate"
            ),
        )),
        (Some(decision), _) => Err((
            BreakKind::Unapproved,
            format!(
                "tools/call {id} of call {call} reached the server ({outcome}) though its decision was {}",
                serde_json::to_string(&decision).unwrap_or_default()
            ),
        )),
    }
}
