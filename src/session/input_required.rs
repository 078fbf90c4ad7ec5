//! Asking the person through a 2026-07-28 client (`--tool-approve-via
//! host`), where server-to-client requests are gone: the held call is
//! answered `input_required` at once, with mcp-bound's card as its one
//! input request and a `requestState` it seals (`seal.rs`). The client
//! asks the person and retries the call, a new request carrying the
//! answer and the state.
//!
//! - **The first round** never reaches the server: its response is
//!   journaled `asked`. The original params wait, sealed, bounded like
//!   the calls waiting for approval.
//! - **The retry** is decided by the answer it carries, under the retry's
//!   id: approved, the *original* params are sent, so the server runs
//!   what the person was shown, and the retry's journal entry carries
//!   their `params_sha256`. A state changed, used already or past its
//!   deadline is refused, and nothing is sent.
//! - **The server's own** `input_required` rounds pass through untouched:
//!   only a state of mcp-bound's seal is read.

use std::time::Instant;

use serde_json::{Value, json};

use super::Session;
use super::answer;
use super::audit::RequestOutcome;
use super::form::Form;
use super::gate::{DecidedBy, Sealed, Verdict};
use super::host_ask::{Card, read_answer};
use super::ruling::{Call, Ruling, Said, refusal_of};
use super::seal::{self, Broken};
use crate::record::Decision;
use crate::record::mcp::HostAction;
use crate::request_id::RequestId;
use crate::units::millis;

/// The key of mcp-bound's card among a result's input requests.
pub(super) const INPUT_KEY: &str = "mcp-bound-approval";

/// The `input_required` answer that carries the card and the state.
fn input_required(id: &str, message: &str, state: &str) -> Vec<u8> {
    let request = json!({
        "method": "elicitation/create",
        "params": super::host_ask::form_params(message, true),
    });
    let result = json!({
        "resultType": "input_required",
        "inputRequests": { INPUT_KEY: request },
        "requestState": state,
    });
    let mut line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}").into_bytes();
    line.push(b'\n');
    line
}

/// A call the gate asks about, as a retry is read.
pub(super) struct RetryCall<'a> {
    /// The id's JSON text.
    pub(super) id: &'a str,
    pub(super) tool: &'a str,
    /// `params.arguments`, its text.
    pub(super) arguments: Option<&'a str>,
    /// The top-level `params.requestState` and `params.inputResponses`,
    /// their text: only those make a call a retry.
    pub(super) request_state: Option<&'a str>,
    pub(super) input_responses: Option<&'a str>,
}

/// What a retry is.
pub(super) enum Retry {
    /// Its sealed state opened: the original call goes on instead.
    Opened(Opened),
    /// Decided as it is: refused, or a later round an approval covers.
    Decided(Verdict),
}

/// A retry's original call, as the seal kept it.
pub(super) struct Opened {
    /// The line the server gets: the original params under the retry's id.
    pub(super) line: Vec<u8>,
    pub(super) params: Option<String>,
    pub(super) verdict: Verdict,
}

impl Session {
    /// Ask about `call` through its 2026-07-28 client: answered
    /// `input_required` now, its params sealed until the retry.
    pub(super) fn ask_sealed(&mut self, now: Instant, call: &Call<'_>) {
        let Some(gate) = self.gate.as_mut() else {
            return;
        };
        let deadline = now + gate.timeout();
        let asked = seal::Asked {
            tool: call.tool.clone(),
            params: call.params.map(str::to_string),
            params_sha256: call.params_sha256.clone(),
            id: call.id.to_string(),
            asked: now,
        };
        let Some(state) = gate.seals.seal(asked, deadline) else {
            let limit = gate.settings.max_pending;
            self.decision(call, Ruling::at_once(Decision::Error, DecidedBy::Host));
            let message = format!(
                "Tool \"{}\" not run: {limit} calls already wait for approval (mcp-bound --max-pending-approvals)",
                call.tool
            );
            self.refuse_call(
                now,
                call,
                "too_many_pending_approvals",
                &message,
                DecidedBy::Host,
            );
            return;
        };
        let message = self.card(call);
        let line = input_required(call.id, &message, &state);
        let bytes = line.len() as u64;
        self.to_client.extend(line);
        self.facts.tool_gate_mut().host_asked += 1;
        let call = (call.id, call.tool.as_str());
        self.audit_not_run(now, call, now, RequestOutcome::Asked, bytes);
    }

    /// The card's message for `call`.
    pub(super) fn card(&self, call: &Call<'_>) -> String {
        let Some(gate) = self.gate.as_ref() else {
            return String::new();
        };
        let command = gate.settings.server_argv.join(" ");
        let command = gate.redactor.redact(&command);
        let server = self.opening.replay.server_name().unwrap_or(&command);
        let card = Card {
            server,
            tool: &call.tool,
            arguments: call.arguments,
            params_sha256: call.params_sha256.as_deref(),
            timeout: gate.timeout(),
        };
        card.message(&gate.redactor)
    }

    /// A call the gate asks about, read as a retry: one carrying a state
    /// of mcp-bound's seal is decided by the answer it carries (opened,
    /// the original call is sent instead); a later round of a call an
    /// approval covers is approved; None for any other call.
    /// `call`: the request's id (its JSON text), params, tool and
    /// arguments (their text).
    pub(super) fn sealed_retry(
        &mut self,
        now: Instant,
        call: RetryCall<'_>,
        form: &Form<'_>,
    ) -> Option<Retry> {
        let gate = self.gate.as_mut()?;
        let retried = call.request_state.is_some() || call.input_responses.is_some();
        if !gate.settings.ask_host || !retried {
            return None;
        }
        // A state that is not a string is no state of anybody's round.
        let state: Option<String> = match call.request_state {
            Some(raw) => Some(serde_json::from_str(raw).ok()?),
            None => None,
        };
        let Some(state) = state.clone().filter(|s| s.starts_with(seal::PREFIX)) else {
            // The server's own round: covered only by the grant waiting
            // for this very state (or for none), and used up by it.
            let key = crate::request_id::key(call.id)?;
            let round = (state.as_deref(), &*key);
            let covered_by = gate.grants.cover(call.tool, call.arguments, round, now)?;
            return Some(Retry::Decided(Verdict::Sealed(Sealed {
                decision: Decision::Approved,
                action: Some(HostAction::Covered),
                waited_ms: 0,
                broken: None,
                until: None,
                covered_by: Some(covered_by),
            })));
        };
        let refused = |broken: Broken| {
            Retry::Decided(Verdict::Sealed(Sealed {
                decision: match broken {
                    Broken::Expired => Decision::Expired,
                    _ => Decision::Denied,
                },
                action: (broken == Broken::Expired).then_some(HostAction::Timeout),
                waited_ms: 0,
                broken: Some(broken),
                until: None,
                covered_by: None,
            }))
        };
        // Only a whole, regular line is sent rewritten.
        if !form.single || !form.regular() || self.current_line.in_batch {
            return Some(refused(Broken::Tampered));
        }
        let (asked, until) = match gate.seals.open(&state, now) {
            Ok(opened) => opened,
            Err(broken) => return Some(refused(broken)),
        };
        let answer = call
            .input_responses
            .and_then(|raw| serde_json::from_str::<Value>(raw).ok())
            .and_then(|r| r.get(INPUT_KEY).map(Value::to_string));
        let (decision, action) = read_answer(answer.as_deref(), false);
        let verdict = Verdict::Sealed(Sealed {
            decision,
            action: Some(action),
            waited_ms: millis(now.saturating_duration_since(asked.asked)),
            broken: None,
            until: Some(until),
            covered_by: None,
        });
        let body = asked.params.as_deref().map(|p| format!(",\"params\":{p}"));
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"tools/call\"{}}}\n",
            call.id,
            body.unwrap_or_default()
        );
        Some(Retry::Opened(Opened {
            line: line.into_bytes(),
            params: asked.params,
            verdict,
        }))
    }

    /// A retry decided by the answer it carried: journaled; true when
    /// approved (it goes on), else answered here.
    pub(super) fn decided_through_seal(
        &mut self,
        now: Instant,
        call: &Call<'_>,
        sealed: Sealed,
    ) -> bool {
        let covered_by = sealed.covered_by.as_deref().and_then(RequestId::new);
        if let (Some(gate), Some(until), Some(key)) = (
            self.gate.as_mut(),
            sealed.until,
            crate::request_id::key(call.id),
        ) && sealed.decision == Decision::Approved
        {
            gate.grants
                .grant(&call.tool, call.arguments, until, (call.id, &key));
        }
        let ruling = Ruling {
            decision: sealed.decision,
            by: DecidedBy::Host,
            waited_ms: sealed.waited_ms,
            approver_exit: None,
            action: sealed.action,
            covered_by,
        };
        self.decision(call, ruling);
        if sealed.decision == Decision::Approved {
            return true;
        }
        let timeout = self.gate.as_ref().map(|g| g.timeout()).unwrap_or_default();
        let said = Said {
            action: sealed.action,
            ..Said::default()
        };
        let (word, message) = match sealed.broken {
            Some(Broken::Tampered) => (
                Broken::Tampered.word(),
                format!(
                    "Tool \"{}\" not run: its requestState is not one mcp-bound sealed in this run, or was changed",
                    call.tool
                ),
            ),
            Some(Broken::Replayed) => (
                Broken::Replayed.word(),
                format!(
                    "Tool \"{}\" not run: its requestState was used already; an approval covers one call",
                    call.tool
                ),
            ),
            _ => refusal_of(&call.tool, sealed.decision, DecidedBy::Host, &said, timeout),
        };
        let line = answer::tool_not_run(call.id, &call.tool, word, &message, DecidedBy::Host, None);
        self.not_run(now, (call.id, &call.tool), now, line);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Audit, SessionPolicy, ToolGate};
    use super::*;
    use sha2::{Digest, Sha256};
    use std::time::Duration;

    const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#;

    fn session() -> Session {
        let policy = SessionPolicy {
            max_in_flight: 16,
            tools: Some(ToolGate {
                approve: vec!["w*".into()],
                ask_host: true,
                timeout: Duration::from_secs(60),
                max_pending: 4,
                server_argv: vec!["server".into()],
                ..ToolGate::default()
            }),
            ..super::super::tests::policy()
        };
        Session::new(policy, "c1".into())
    }

    fn params(arguments: &str, retry: &str) -> String {
        format!(r#"{{"name":"write","arguments":{arguments}{retry},{META}}}"#)
    }

    fn call(id: u64, params: &str) -> String {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#) + "\n"
    }

    /// A client line in; what went to the server out.
    fn client(session: &mut Session, now: Instant, line: &str) -> String {
        let mut out = Vec::new();
        session.on_client_line(now, line.as_bytes(), &mut out, 0);
        out.extend(std::mem::take(&mut session.to_server));
        String::from_utf8(out).unwrap()
    }

    fn answered(session: &mut Session) -> Value {
        let bytes = std::mem::take(&mut session.to_client);
        serde_json::from_slice(&bytes).unwrap()
    }

    fn retry(state: &Value, answer: &str, arguments: &str) -> String {
        let responses =
            format!(r#","inputResponses":{{"{INPUT_KEY}":{answer}}},"requestState":{state}"#);
        params(arguments, &responses)
    }

    const ACCEPT: &str = r#"{"action":"accept","content":{"approve":true}}"#;

    /// Asked: the first round is answered input_required with the card
    /// and a sealed state, nothing sent; return the state.
    fn ask(session: &mut Session, t0: Instant) -> Value {
        let first = call(1, &params(r#"{"path":"a"}"#, ""));
        assert_eq!(client(session, t0, &first), "", "never sent");
        let answer = answered(session);
        let result = &answer["result"];
        assert_eq!(answer["id"], 1);
        assert_eq!(result["resultType"], "input_required");
        let card = &result["inputRequests"][INPUT_KEY];
        assert_eq!(card["method"], "elicitation/create");
        assert_eq!(card["params"]["mode"], "form");
        assert!(
            card["params"]["message"]
                .as_str()
                .unwrap()
                .contains("Tool: write")
        );
        result["requestState"].clone()
    }

    fn audit(session: &mut Session) -> Vec<Value> {
        session
            .take_audit()
            .into_iter()
            .map(|a| match a {
                Audit::Request(r) => serde_json::to_value(r).unwrap(),
                Audit::Response(r) => serde_json::to_value(r).unwrap(),
                Audit::Decision(d) => serde_json::to_value(d).unwrap(),
                Audit::Task(t) => serde_json::to_value(t).unwrap(),
                Audit::ToolDrift(t) => serde_json::to_value(t).unwrap(),
                Audit::Restart(r) => serde_json::to_value(r).unwrap(),
            })
            .collect()
    }

    #[test]
    fn an_accepted_retry_sends_the_original_params_under_its_own_id() {
        let t0 = Instant::now();
        let mut session = session();
        let state = ask(&mut session, t0);
        let first = audit(&mut session);
        assert_eq!(first.last().unwrap()["outcome"], "asked");
        let original = params(r#"{"path":"a"}"#, "");
        // The retry names other arguments: the original ones run.
        let line = call(2, &retry(&state, ACCEPT, r#"{"path":"/etc/passwd"}"#));
        let sent = client(&mut session, t0 + Duration::from_millis(30), &line);
        assert_eq!(sent, call(2, &original));
        let entries = audit(&mut session);
        let sha = crate::ids::hex(&Sha256::digest(original.as_bytes()));
        assert_eq!(
            entries[0]["params_sha256"], sha,
            "the request entry is what runs"
        );
        assert_eq!(entries[1]["decision"], "approved");
        assert_eq!(entries[1]["by"], "host");
        assert_eq!(entries[1]["action"], "accept");
        assert_eq!(entries[1]["waited_ms"], 30);
        assert_eq!(entries[1]["params_sha256"], sha);
        assert_eq!(session.in_flight(), 1);
        // The same state again: replayed, nothing sent.
        let again = call(3, &retry(&state, ACCEPT, r#"{"path":"a"}"#));
        assert_eq!(client(&mut session, t0, &again), "");
        let error = &answered(&mut session)["error"];
        assert_eq!(
            error["data"]["mcp_bound"]["reason"],
            "request_state_replayed"
        );
    }

    #[test]
    fn a_changed_or_late_state_and_a_decline_send_nothing() {
        let t0 = Instant::now();
        let mut session = session();
        let state = ask(&mut session, t0);
        let text = state.as_str().unwrap();
        let changed = Value::String(format!("{}0", &text[..text.len() - 1]).replace("00", "01"));
        let changed = if changed == state {
            Value::String(format!("{text}0"))
        } else {
            changed
        };
        let line = call(2, &retry(&changed, ACCEPT, "{}"));
        assert_eq!(client(&mut session, t0, &line), "");
        let error = &answered(&mut session)["error"];
        assert_eq!(
            error["data"]["mcp_bound"]["reason"],
            "request_state_invalid"
        );
        // The untouched state still works once: declined.
        let decline = r#"{"action":"decline"}"#;
        assert_eq!(
            client(&mut session, t0, &call(3, &retry(&state, decline, "{}"))),
            ""
        );
        let error = &answered(&mut session)["error"];
        assert_eq!(error["data"]["mcp_bound"]["reason"], "tool_denied");
        let decided: Vec<Value> = audit(&mut session)
            .into_iter()
            .filter(|e| e.get("decision").is_some())
            .collect();
        assert_eq!(decided[1]["action"], "decline");
        // Past its deadline: expired.
        let state = ask(&mut session, t0);
        let late = t0 + Duration::from_secs(60);
        assert_eq!(
            client(&mut session, late, &call(4, &retry(&state, ACCEPT, "{}"))),
            ""
        );
        let error = &answered(&mut session)["error"];
        assert_eq!(
            error["data"]["mcp_bound"]["reason"],
            "tool_approval_expired"
        );
    }

    /// A state that is not mcp-bound's (the server's own round) is not
    /// read: the call is asked about as any other.
    #[test]
    fn the_servers_own_state_is_not_read() {
        let t0 = Instant::now();
        let mut session = session();
        let theirs = Value::String("opaque-server-state".into());
        let line = call(1, &retry(&theirs, r#"{"action":"accept"}"#, "{}"));
        assert_eq!(client(&mut session, t0, &line), "");
        let answer = answered(&mut session);
        assert_eq!(answer["result"]["resultType"], "input_required", "asked");
    }

    /// After an approval, the server asks for input of its own: the
    /// client's next round, with the same tool and arguments, is covered
    /// (sent as it came, journaled as covered); other arguments are asked
    /// about again.
    #[test]
    fn an_approval_covers_the_calls_later_rounds_and_only_them() {
        let t0 = Instant::now();
        let mut session = session();
        let state = ask(&mut session, t0);
        let line = call(2, &retry(&state, ACCEPT, r#"{"path":"a"}"#));
        assert!(!client(&mut session, t0, &line).is_empty());
        audit(&mut session);
        let theirs = r#","inputResponses":{"ok":{"action":"accept","content":{"ok":true}}},"requestState":"server-state""#;
        let later = call(3, &params(r#"{ "path" : "a" }"#, theirs));
        assert_eq!(
            client(&mut session, t0, &later),
            "",
            "no state from the server yet: asked"
        );
        answered(&mut session);
        server(&mut session, t0, 2, "server-state");
        assert_eq!(client(&mut session, t0, &later), later, "sent as it came");
        let decided: Vec<Value> = audit(&mut session)
            .into_iter()
            .filter(|e| e.get("decision").is_some())
            .collect();
        assert_eq!(decided[0]["decision"], "approved");
        assert_eq!(decided[0]["action"], "covered");
        assert_eq!(decided[0]["covered_by"], 2);
        let again = call(4, &params(r#"{"path":"a"}"#, theirs));
        assert_eq!(client(&mut session, t0, &again), "", "used up: asked");
        answered(&mut session);
        server(&mut session, t0, 3, "next-state");
        let next = r#","requestState":"next-state""#;
        let other = call(5, &params(r#"{"path":"b"}"#, next));
        assert_eq!(client(&mut session, t0, &other), "", "asked again");
        assert_eq!(
            answered(&mut session)["result"]["resultType"],
            "input_required"
        );
        let nested = call(6, &params(r#"{"path":"a","memo":"requestState"}"#, ""));
        assert_eq!(client(&mut session, t0, &nested), "", "not a retry: asked");
        answered(&mut session);
        let expired = call(7, &params(r#"{"path":"a"}"#, next));
        let late = t0 + Duration::from_secs(60);
        assert_eq!(
            client(&mut session, late, &expired),
            "",
            "past the approval's deadline"
        );
    }

    /// The server's answer to request `id`: input_required with `state`.
    fn server(session: &mut Session, now: Instant, id: u64, state: &str) {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"resultType":"input_required","requestState":"{state}","inputRequests":{{}}}}}}"#
        ) + "\n";
        let mut out = Vec::new();
        assert!(session.on_server_line(now, line.as_bytes(), &mut out));
    }

    /// A 2026-07-28 server names itself only in its results' `_meta`:
    /// once one is seen, the card names it.
    #[test]
    fn the_card_names_the_server_once_a_result_did() {
        let t0 = Instant::now();
        let mut session = session();
        let state = ask(&mut session, t0);
        let line = call(2, &retry(&state, ACCEPT, "{}"));
        client(&mut session, t0, &line);
        let result = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"files","version":"1"}}}}"#;
        let mut out = Vec::new();
        session.on_server_line(t0, format!("{result}\n").as_bytes(), &mut out);
        client(&mut session, t0, &call(3, &params("{}", "")));
        let card = answered(&mut session);
        let message = card["result"]["inputRequests"][INPUT_KEY]["params"]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(message.contains("Server: files\n"), "{message}");
    }
}
