//! The per-call gate's transitions in the session: a `tools/call` is
//! received and validated (`client.rs`), then authorized by the policy,
//! denied by it, or pending approval until its approver decides, its
//! deadline passes, or the client cancels it; an authorized call is
//! dispatched (sent to the server, its request deadline starting then).
//! Each decision is an audit fact, journaled before the call can reach
//! the server; a call not sent is answered here.
//!
//! A held line is sent, or what is left of a batch, once every decision
//! in it is made: a held call may reach the server after lines the
//! client sent later (JSON-RPC requests are independent).

use std::time::Instant;

use super::gate::{Ask, Asked, DecidedBy, Held, Pending, Verdict};
use super::host_ask::Route;
use super::message::join_batch;
use super::ruling::refusal_of;
pub(super) use super::ruling::{Call, Ruling, Said};
use super::{End, InFlight, Key, RequestOutcome, Session, answer};
use crate::record::mcp::HostAction;
use crate::record::{Decision, Exit};
use crate::request_id::RequestId;
use crate::units::millis;

impl Session {
    /// The gate's word on a request: None without a gate, or for a
    /// method it does not decide.
    pub(super) fn gate_verdict(&self, method: &str, tool: Option<&str>) -> Option<Verdict> {
        let gate = self.gate.as_ref()?;
        (method == "tools/call").then(|| gate.verdict(tool.unwrap_or("")))
    }

    /// The policy decided alone: journaled; a denial answered here.
    pub(super) fn decided_by_policy(&mut self, now: Instant, call: &Call<'_>, approved: bool) {
        let decision = if approved {
            Decision::Approved
        } else {
            Decision::Denied
        };
        self.decision(call, Ruling::at_once(decision, DecidedBy::Policy));
        if !approved {
            let message = format!(
                "Tool \"{}\" denied by mcp-bound's policy (--tool-allow, --tool-deny)",
                call.tool
            );
            self.refuse_call(now, call, "tool_denied", &message, DecidedBy::Policy);
        }
    }

    /// The pins denied the call (--tool-pin): journaled, answered here.
    pub(super) fn decided_by_pin(&mut self, now: Instant, call: &Call<'_>) {
        self.decision(call, Ruling::at_once(Decision::Denied, DecidedBy::Pin));
        let message = format!(
            "Tool \"{}\" not run: the server's definition of it differs from the one pinned, or it has none (mcp-bound --tool-pin); `mcp-bound pin FILE --accept {}` trusts the latest one seen",
            call.tool, call.tool
        );
        self.refuse_call(now, call, "tool_changed", &message, DecidedBy::Pin);
    }

    /// Hold a call for its approver (`entry`: its table entry, entered
    /// once it is sent): true. Past --max-pending-approvals, or when no
    /// one can be asked, answered at once: false.
    pub(super) fn hold(
        &mut self,
        now: Instant,
        call: &Call<'_>,
        key: Key,
        entry: InFlight,
    ) -> bool {
        let Some(gate) = self.gate.as_mut() else {
            return false;
        };
        if gate.is_full() {
            let limit = gate.settings.max_pending;
            let by = match gate.settings.ask_host {
                true => DecidedBy::Host,
                false => DecidedBy::Command,
            };
            self.decision(call, Ruling::at_once(Decision::Error, by));
            let message = format!(
                "Tool \"{}\" not run: {limit} calls already wait for approval (mcp-bound --max-pending-approvals)",
                call.tool
            );
            self.refuse_call(now, call, "too_many_pending_approvals", &message, by);
            return false;
        }
        let ticket = self.gate.as_mut().map_or(0, |g| g.ticket());
        let by = match self.ask_route(ticket, call) {
            Route::Host { id } => {
                self.ask_host(call, &id);
                Asked::Host { id }
            }
            Route::Command => {
                self.ask_command(ticket, call);
                Asked::Command
            }
            Route::Sealed => {
                self.ask_sealed(now, call);
                return false;
            }
            Route::Nobody => {
                self.cannot_ask_host(now, call);
                return false;
            }
        };
        let Some(gate) = self.gate.as_mut() else {
            return false;
        };
        gate.pending.insert(
            ticket,
            Pending {
                key,
                tool: call.tool.clone(),
                params_sha256: call.params_sha256.clone(),
                by,
                asked: now,
                deadline: now + gate.timeout(),
                entry,
                line: 0,
            },
        );
        self.current_line.held.push(ticket);
        true
    }

    /// The approver command for `ticket`, told the call on its stdin.
    fn ask_command(&mut self, ticket: u64, call: &Call<'_>) {
        let Some(gate) = self.gate.as_mut() else {
            return;
        };
        let arguments = super::gate::arguments_of(call.arguments);
        let request_id = serde_json::value::RawValue::from_string(call.id.to_string())
            .unwrap_or_else(|_| serde_json::value::RawValue::from_string("null".into()).unwrap());
        let request = super::gate::ApprovalRequest {
            tool: &call.tool,
            arguments: &arguments,
            params_sha256: call.params_sha256.as_deref(),
            request_id: &request_id,
            call_id: &self.call_id,
            session_id: gate.settings.session_id.as_deref(),
            argv: &gate.settings.server_argv,
        };
        let mut stdin = serde_json::to_vec(&request).expect("a request serializes");
        stdin.push(b'\n');
        gate.asks.push(Ask { ticket, stdin });
        self.facts.tool_gate_mut().approvers_asked += 1;
    }

    /// After a client line: if calls in it wait, the line (or the
    /// batch's kept elements) waits with them.
    pub(super) fn hold_line(
        &mut self,
        now: Instant,
        line: &[u8],
        batch: Option<super::gate::HeldBatch>,
    ) {
        let tickets = std::mem::take(&mut self.current_line.held);
        let admitted = std::mem::take(&mut self.current_line.admitted);
        let Some(gate) = self.gate.as_mut() else {
            return;
        };
        let line_id = gate.ticket();
        let mut waiting = 0;
        // A call the client cancelled later in the same batch is decided
        // already: it no longer holds the line.
        for ticket in tickets {
            if let Some(pending) = gate.pending.get_mut(&ticket) {
                pending.line = line_id;
                waiting += 1;
            }
        }
        gate.held.insert(
            line_id,
            Held {
                line: line.to_vec(),
                batch,
                waiting,
                approved: Vec::new(),
                admitted,
            },
        );
        if waiting == 0 {
            self.release(now, line_id);
        }
    }

    /// The approvers to start, in order.
    pub(crate) fn take_asks(&mut self) -> Vec<Ask> {
        self.gate
            .as_mut()
            .map(|g| std::mem::take(&mut g.asks))
            .unwrap_or_default()
    }

    /// The tickets whose approver is to be ended (decided without it).
    pub(crate) fn take_approver_ends(&mut self) -> Vec<u64> {
        self.gate
            .as_mut()
            .map(|g| std::mem::take(&mut g.ends))
            .unwrap_or_default()
    }

    /// The approver for `ticket` exited: 0 approves, anything else
    /// denies, `reason` (its first line, bounded and masked) saying why.
    pub(crate) fn on_approver_exit(
        &mut self,
        now: Instant,
        ticket: u64,
        exit: Option<Exit>,
        reason: Option<String>,
    ) {
        let decision = match exit {
            Some(Exit::Code { code: 0, .. }) => Decision::Approved,
            _ => Decision::Denied,
        };
        let said = Said {
            exit,
            reason,
            action: None,
        };
        self.decide(now, ticket, decision, said);
    }

    /// The approver for `ticket` could not be started.
    pub(crate) fn on_approver_failed(&mut self, now: Instant, ticket: u64, error: String) {
        self.decide(now, ticket, Decision::Error, Said::why(error));
    }

    /// Approvals whose deadline `now` reached: expired, their approvers
    /// ended (TERM and KILL together: nothing they do stretches it), or
    /// the request to the client withdrawn.
    pub(super) fn tick_gate(&mut self, now: Instant) {
        let expired = self
            .gate
            .as_ref()
            .map(|g| g.expired(now))
            .unwrap_or_default();
        for ticket in expired {
            self.end_approver(ticket, "the approval's deadline passed");
            let said = Said {
                action: Some(HostAction::Timeout),
                ..Said::default()
            };
            self.decide(now, ticket, Decision::Expired, said);
        }
    }

    /// The client cancelled `key`: if it waits for approval, its approver
    /// is ended and nothing is sent. True if it waited.
    pub(super) fn cancel_pending(&mut self, now: Instant, key: &str) -> bool {
        let Some(ticket) = self.gate.as_ref().and_then(|g| g.ticket_of(key)) else {
            return false;
        };
        self.end_approver(ticket, "the client cancelled the tool call");
        self.decide(now, ticket, Decision::Cancelled, Said::default());
        true
    }

    /// The session ends: every call still waiting is cancelled, answered,
    /// and its approver ended.
    pub(crate) fn end_pending(&mut self, now: Instant) {
        let tickets: Vec<u64> = self
            .gate
            .as_ref()
            .map(|g| g.pending.keys().copied().collect())
            .unwrap_or_default();
        for ticket in tickets {
            self.end_approver(ticket, "the session ended");
            let said = Said::why("the session ended while it waited for approval".into());
            self.decide(now, ticket, Decision::Cancelled, said);
        }
    }

    /// Nothing more is asked of whoever decides `ticket`: its approver is
    /// ended, or the request to the client withdrawn (`why`).
    fn end_approver(&mut self, ticket: u64, why: &str) {
        let Some(gate) = self.gate.as_mut() else {
            return;
        };
        match gate.pending.get(&ticket).map(|p| &p.by) {
            Some(Asked::Host { id }) => {
                let line = super::host_ask::withdrawal(id, &format!("mcp-bound: {why}"));
                self.to_client.extend(line);
            }
            Some(Asked::Command) => gate.ends.push(ticket),
            None => {}
        }
    }

    /// One decision on a waiting call: journaled; approved, it goes with
    /// its line once the line's last decision is made; otherwise it is
    /// answered (a call the client cancelled is not: it no longer waits).
    pub(super) fn decide(&mut self, now: Instant, ticket: u64, decision: Decision, said: Said) {
        let Some(gate) = self.gate.as_mut() else {
            return;
        };
        let Some(pending) = gate.pending.remove(&ticket) else {
            return;
        };
        let timeout = gate.timeout();
        let id = Key::new(pending.id());
        let call = Call {
            id: &id,
            tool: pending.tool.clone(),
            params: None,
            arguments: None,
            params_sha256: pending.params_sha256.clone(),
        };
        let by = match pending.by {
            Asked::Command => DecidedBy::Command,
            Asked::Host { .. } => DecidedBy::Host,
        };
        let ruling = Ruling {
            decision,
            by,
            waited_ms: millis(now.saturating_duration_since(pending.asked)),
            approver_exit: said.exit.clone(),
            action: said.action.filter(|_| by == DecidedBy::Host),
            covered_by: None,
        };
        self.decision(&call, ruling);
        let tool = pending.tool.clone();
        let line_id = pending.line;
        let approved = decision == Decision::Approved;
        let Some(gate) = self.gate.as_mut() else {
            return;
        };
        if let Some(held) = gate.held.get_mut(&line_id) {
            held.waiting -= 1;
            if approved {
                held.approved.push((ticket, pending.key, pending.entry));
            }
        }
        if !approved {
            let by_client = decision == Decision::Cancelled && said.reason.is_none();
            if by_client {
                self.audit_not_run(
                    now,
                    (&id, &tool),
                    pending.asked,
                    RequestOutcome::Cancelled,
                    0,
                );
            } else {
                let (reason_word, message) = refusal_of(&tool, decision, by, &said, timeout);
                let line = answer::tool_not_run(
                    &id,
                    &tool,
                    reason_word,
                    &message,
                    by,
                    said.reason.as_deref(),
                );
                self.not_run(now, (&id, &tool), pending.asked, line);
            }
        }
        if self
            .gate
            .as_ref()
            .and_then(|g| g.held.get(&line_id))
            .is_some_and(|held| held.waiting == 0)
        {
            self.release(now, line_id);
        }
    }

    /// Every decision in a held line is made: send what is left of it,
    /// and enter its approved calls into the table, their deadlines
    /// starting now.
    fn release(&mut self, now: Instant, line_id: u64) {
        let Some(gate) = self.gate.as_mut() else {
            return;
        };
        let Some(held) = gate.held.remove(&line_id) else {
            return;
        };
        let tickets: Vec<u64> = held.approved.iter().map(|(t, _, _)| *t).collect();
        let approved = held.approved;
        if let Some(gone) = &self.gone {
            // Approved, but no server to take it: answered, never written.
            let exit = gone.exit.clone();
            let tail = gone.stderr_tail.clone();
            for (_, key, entry) in approved {
                let (id, entry) = super::taken(key, entry);
                let line =
                    answer::server_exited(&id, exit.as_ref(), &tail, &self.call_id, false, None);
                self.facts.synthesized.server_exited += 1;
                let bytes = line.len() as u64;
                self.to_client.extend(line);
                if entry.audited {
                    let end = End::by(RequestOutcome::ServerExited, Some(answer::SERVER_ERROR));
                    self.finish(now, id, entry, end, bytes);
                }
            }
            return;
        }
        match held.batch {
            None if !approved.is_empty() => self.to_server.extend_from_slice(&held.line),
            None => {}
            Some((total, elements)) => {
                let kept: Vec<&str> = elements
                    .iter()
                    .filter(|(_, ticket)| ticket.is_none_or(|t| tickets.contains(&t)))
                    .map(|(raw, _)| raw.as_str())
                    .collect();
                join_batch(&held.line, total, &kept, &mut self.to_server);
            }
        }
        let ends_at = self.server_stream + self.to_server.len() as u64;
        for key in &held.admitted {
            if let Some(entry) = self.in_flight.get_mut(&**key) {
                entry.ends_at = ends_at;
            }
        }
        for (_, key, mut entry) in approved {
            entry.started = now;
            entry.deadline = entry.timeout.and_then(|t| now.checked_add(t));
            entry.stderr_at = self.stderr_seen;
            entry.ends_at = ends_at;
            self.admit(key, entry);
        }
    }

    /// A call refused as it came: answered at once, and ended.
    pub(super) fn refuse_call(
        &mut self,
        now: Instant,
        call: &Call<'_>,
        reason: &str,
        message: &str,
        by: DecidedBy,
    ) {
        let line = answer::tool_not_run(call.id, &call.tool, reason, message, by, None);
        self.not_run(now, (call.id, &call.tool), now, line);
    }

    /// A call not sent: its answer to the client, and its end.
    pub(super) fn not_run(
        &mut self,
        now: Instant,
        call: (&str, &str),
        since: Instant,
        line: Vec<u8>,
    ) {
        let bytes = line.len() as u64;
        self.to_client.extend(line);
        self.audit_not_run(now, call, since, RequestOutcome::Denied, bytes);
    }

    /// A call (id, tool) that ended before it reached the server.
    pub(super) fn audit_not_run(
        &mut self,
        now: Instant,
        (id, tool): (&str, &str),
        since: Instant,
        outcome: RequestOutcome,
        bytes: u64,
    ) {
        let error_code = (outcome == RequestOutcome::Denied).then_some(answer::SERVER_ERROR);
        if let Some(tracing) = &mut self.out.tracing {
            let gated = tracing.take_gated(id);
            tracing.ended.push(super::Traced {
                id: id.to_string(),
                method: "tools/call".to_string(),
                tool: Some(tool.to_string()),
                kind: super::kind::Kind::Call,
                started: since,
                ended: now,
                outcome,
                error_code,
                result_type: None,
                parent: gated.client,
                decision: gated.decision,
                protocol_version: self.opening.spoken.protocol_version.clone(),
                span_id: None,
                interrupted: false,
            });
        }
        if let Some(request_id) = RequestId::new(id) {
            self.out
                .audit
                .push(super::Audit::Response(super::McpResponse {
                    call_id: self.call_id.clone(),
                    request_id: Some(request_id),
                    method: Some("tools/call".to_string()),
                    outcome,
                    reason: None,
                    error_code,
                    result_type: None,
                    duration_ms: millis(now.saturating_duration_since(since)),
                    bytes,
                }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ApproverCommand, AuditRequests, RestartPolicy, SessionPolicy, ToolGate};
    use super::*;
    use std::time::Duration;

    fn gated() -> Session {
        let policy = SessionPolicy {
            default_timeout: None,
            method_timeouts: Vec::new(),
            resets_on_progress: false,
            max_in_flight: 16,
            audit: AuditRequests::Tools,
            journal: true,
            agent_excerpt_bytes: 0,
            tools: Some(ToolGate {
                approve: vec!["w*".into()],
                approver: Some(ApproverCommand {
                    argv: vec!["approver".into()],
                }),
                timeout: Duration::from_secs(60),
                max_pending: 4,
                ..ToolGate::default()
            }),
            restart: RestartPolicy {
                mode: crate::record::mcp::RestartMode::Never,
                max_restarts: 0,
                window: Duration::from_secs(1),
                backoff: Duration::ZERO,
                max_backoff: Duration::ZERO,
            },
        };
        Session::new(policy, "c1".into())
    }

    /// A batch whose only gated call the client cancels within the same
    /// batch still sends the rest of it, at once.
    #[test]
    fn a_batch_whose_held_call_is_cancelled_in_it_sends_the_rest() {
        let mut session = gated();
        let now = Instant::now();
        let batch = concat!(
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write"}},"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}},"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"echo"}]"#,
            "\n"
        );
        let mut out = Vec::new();
        session.on_client_line(now, batch.as_bytes(), &mut out, 0);
        out.extend(std::mem::take(&mut session.to_server));
        let sent = String::from_utf8(out).unwrap();
        assert_eq!(
            sent,
            concat!(
                r#"[{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}},"#,
                r#"{"jsonrpc":"2.0","id":2,"method":"echo"}]"#,
                "\n"
            ),
            "the cancelled call is not sent, the rest is"
        );
        assert_eq!(
            session.take_approver_ends().len(),
            1,
            "its approver is ended"
        );
        assert_eq!(session.in_flight(), 1, "echo 2 is tracked");
        assert!(
            session.gate.as_ref().unwrap().held.is_empty(),
            "nothing held"
        );
    }

    /// A call held and then approved is sent with its deadline from then.
    #[test]
    fn an_approved_call_is_sent_whole_and_tracked_from_its_dispatch() {
        let mut session = gated();
        let t0 = Instant::now();
        let call = concat!(
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"write"}}"#,
            "\n"
        );
        let mut out = Vec::new();
        session.on_client_line(t0, call.as_bytes(), &mut out, 0);
        assert!(out.is_empty() && session.to_server.is_empty(), "held");
        let asks = session.take_asks();
        assert_eq!(asks.len(), 1);
        assert_eq!(session.in_flight(), 0, "not in flight before its dispatch");
        session.on_approver_exit(
            t0 + Duration::from_millis(5),
            asks[0].ticket,
            Some(Exit::Code {
                code: 0,
                ntstatus: None,
            }),
            None,
        );
        assert_eq!(session.to_server, call.as_bytes(), "sent byte-exact");
        assert_eq!(session.in_flight(), 1);
    }

    /// Past --max-pending-approvals a call is answered at once, and
    /// nothing of it is sent or asked about.
    #[test]
    fn past_the_bound_on_pending_approvals_a_call_is_answered_at_once() {
        let mut session = gated();
        let now = Instant::now();
        for id in 1..=5 {
            let call = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"write"}}}}"#
            ) + "\n";
            let mut out = Vec::new();
            session.on_client_line(now, call.as_bytes(), &mut out, 0);
            assert!(out.is_empty(), "nothing of call {id} is sent");
        }
        assert_eq!(
            session.take_asks().len(),
            4,
            "four approvers asked (the bound)"
        );
        let answer: serde_json::Value = serde_json::from_slice(&session.to_client).unwrap();
        assert_eq!(answer["id"], 5);
        assert_eq!(
            answer["error"]["data"]["mcp_bound"]["reason"],
            "too_many_pending_approvals"
        );
        assert_eq!(session.facts().tool_gate.unwrap().decisions.error, 1);
        assert!(session.to_server.is_empty());
    }
}
