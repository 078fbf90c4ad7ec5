//! Asking the person through the client (`--tool-approve-via host`),
//! pure: in the 2025 eras, a held `tools/call` becomes an
//! `elicitation/create` request of mcp-bound's own to the client, and
//! the client's answer to it decides the call.
//!
//! - **Who can be asked:** a client whose `initialize` declared form
//!   elicitation (`capabilities.elicitation` empty, as 2025-06-18 has
//!   it, or naming `form`). A 2026-07-28 client, which has no
//!   server-to-client requests, is asked through an `input_required`
//!   answer instead (`input_required.rs`), when its request's `_meta`
//!   declares form elicitation.
//! - **Whose ids:** mcp-bound's requests are strings with a prefix and a
//!   per-run nonce of its own, so they cannot collide with the server's
//!   requests to the client; the server's ids are never rewritten. A
//!   response to one of them is consumed, never passed on, even late.
//! - **The card:** one boolean field, `approve`. Its message names the
//!   server, the tool, a masked summary of the arguments (at most 1 KiB;
//!   the message at most 4 KiB) and the call's `params_sha256`, so the
//!   person can find the call in the journal.
//! - **The answer:** `accept` with `approve` true approves; `accept`
//!   with anything else, `decline` and `cancel` deny; an error response,
//!   or a result that says none of these, is an error. The deadline is
//!   the approval's, from when the call was held: at it the request is
//!   withdrawn with `notifications/cancelled`.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};

use super::Session;
use super::gate::DecidedBy;
use super::ruling::{Call, Ruling, Said};
use crate::record::Decision;
use crate::record::mcp::{Era, HostAction};
use crate::redact::Redactor;

/// What begins every request id mcp-bound sends the client.
const PREFIX: &str = "mcp-bound-approval-";
/// Most bytes of the arguments the card shows.
pub(super) const MAX_ARGUMENTS: usize = 1024;
/// Most bytes of the card's whole message.
pub(super) const MAX_MESSAGE: usize = 4096;
/// Most bytes of the server's and the tool's name on the card.
const MAX_NAME: usize = 256;

/// The JSON text of mcp-bound's request id for `ticket` in the run with
/// this nonce.
pub(super) fn request_id(nonce: &str, ticket: u64) -> String {
    format!("\"{PREFIX}{nonce}-{ticket}\"")
}

/// Whether a response's id (its JSON text) is one of mcp-bound's own
/// requests in this run: its answer is consumed, whatever it says. An id
/// spelled with escapes is read as JSON reads it.
pub(super) fn is_ours(nonce: &str, id: &str) -> bool {
    if !id.starts_with('"') {
        return false;
    }
    let mine = |text: &str| {
        text.strip_prefix(PREFIX)
            .and_then(|rest| rest.strip_prefix(nonce))
            .is_some_and(|rest| rest.starts_with('-'))
    };
    if !id.contains('\\') {
        return mine(&id[1..id.len().saturating_sub(1)]);
    }
    serde_json::from_str::<String>(id).is_ok_and(|text| mine(&text))
}

/// The canonical text of one of our ids, as [`request_id`] wrote it.
pub(super) fn canonical(id: &str) -> String {
    match serde_json::from_str::<String>(id) {
        Ok(text) => serde_json::to_string(&text).expect("a string serializes"),
        Err(_) => id.to_string(),
    }
}

/// Whether the client's `initialize` params declare form elicitation.
pub(super) fn elicits_forms(initialize_params: Option<&str>) -> bool {
    #[derive(Deserialize)]
    struct Params {
        #[serde(default)]
        capabilities: Option<Capabilities>,
    }
    #[derive(Deserialize)]
    struct Capabilities {
        #[serde(default)]
        elicitation: Option<Value>,
    }
    let capabilities = initialize_params
        .and_then(|p| serde_json::from_str::<Params>(p).ok())
        .and_then(|p| p.capabilities);
    capabilities
        .and_then(|c| c.elicitation)
        .is_some_and(|e| form_elicitation(&e))
}

/// Whether a 2026-07-28 request's params declare form elicitation, in
/// their `_meta` (each request carries the client's capabilities).
pub(super) fn request_elicits_forms(params: Option<&str>) -> bool {
    #[derive(Deserialize)]
    struct Params {
        #[serde(rename = "_meta", default)]
        meta: Option<Value>,
    }
    params
        .and_then(|p| serde_json::from_str::<Params>(p).ok())
        .and_then(|p| p.meta)
        .as_ref()
        .and_then(|m| m.get("io.modelcontextprotocol/clientCapabilities"))
        .and_then(|c| c.get("elicitation"))
        .is_some_and(form_elicitation)
}

/// `capabilities.elicitation`: empty (2025-06-18: forms) or naming `form`.
fn form_elicitation(elicitation: &Value) -> bool {
    match elicitation {
        Value::Object(modes) => modes.is_empty() || modes.contains_key("form"),
        _ => false,
    }
}

/// What the card says.
pub(super) struct Card<'a> {
    pub(super) server: &'a str,
    pub(super) tool: &'a str,
    /// `params.arguments` as the client wrote it (None: none).
    pub(super) arguments: Option<&'a str>,
    pub(super) params_sha256: Option<&'a str>,
    pub(super) timeout: Duration,
}

/// At most `max` bytes of `text`, cut at a character boundary; whether
/// it was cut.
fn head(text: &str, max: usize) -> (&str, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

/// The arguments as the card shows them: masked, at most
/// [`MAX_ARGUMENTS`] bytes, a cut said.
pub(super) fn arguments_summary(arguments: Option<&str>, redactor: &Redactor) -> String {
    let Some(arguments) = arguments else {
        return "(none)".into();
    };
    let (piece, cut) = head(arguments, MAX_ARGUMENTS);
    let masked = redactor.redact_piece(piece, false, cut);
    let masked = crate::shown::untrusted(&masked).into_owned();
    if cut {
        format!("{masked} ... ({} bytes in all)", arguments.len())
    } else {
        masked
    }
}

impl Card<'_> {
    /// The message the person reads, at most [`MAX_MESSAGE`] bytes.
    pub(super) fn message(&self, redactor: &Redactor) -> String {
        let name = |text: &str| {
            // One line: a name with a newline must not draw a block.
            let (piece, cut) = head(text, MAX_NAME);
            let piece = crate::shown::untrusted(piece);
            if cut {
                format!("{piece}...")
            } else {
                piece.into_owned()
            }
        };
        let message = format!(
            "Approve this tool call?\n\nServer: {}\nTool: {}\nArguments (masked): {}\nparams_sha256: {}\n\nmcp-bound sends it to the server only if you approve. Unanswered, it is denied after {}.",
            name(self.server),
            name(self.tool),
            arguments_summary(self.arguments, redactor),
            self.params_sha256.unwrap_or("(none)"),
            humantime::format_duration(self.timeout),
        );
        let (message, _) = head(&message, MAX_MESSAGE);
        message.to_string()
    }
}

/// The `elicitation/create` request for the card, under `id` (its JSON
/// text), as one line.
pub(super) fn elicitation(id: &str, message: &str) -> Vec<u8> {
    let params = form_params(message, false);
    let mut line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"elicitation/create\",\"params\":{params}}}"
    )
    .into_bytes();
    line.push(b'\n');
    line
}

/// The card's `elicitation/create` params: the message and a form of one
/// boolean field, `approve` (`mode` named where the era has it).
pub(super) fn form_params(message: &str, mode: bool) -> Value {
    let mut params = json!({
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {
                    "type": "boolean",
                    "title": "Approve",
                    "description": "Run this tool call, once",
                    "default": false,
                },
            },
            "required": ["approve"],
        },
    });
    if mode {
        params["mode"] = json!("form");
    }
    params
}

/// Withdraw mcp-bound's request `id` (its JSON text) from the client.
pub(super) fn withdrawal(id: &str, reason: &str) -> Vec<u8> {
    let reason = Value::String(reason.into());
    let mut line = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":{id},\"reason\":{reason}}}}}"
    )
    .into_bytes();
    line.push(b'\n');
    line
}

/// The decision the client's answer makes: `result`, its result's JSON
/// text; `error`, whether it was an error response.
pub(super) fn read_answer(result: Option<&str>, error: bool) -> (Decision, HostAction) {
    #[derive(Deserialize)]
    struct Answer {
        action: String,
        #[serde(default)]
        content: Option<Value>,
    }
    let answer = result
        .filter(|_| !error)
        .and_then(|r| serde_json::from_str::<Answer>(r).ok());
    let Some(answer) = answer else {
        return (Decision::Error, HostAction::Error);
    };
    match answer.action.as_str() {
        "accept" => {
            let approve = answer.content.as_ref().and_then(|c| c.get("approve"));
            if approve == Some(&Value::Bool(true)) {
                (Decision::Approved, HostAction::Accept)
            } else {
                (Decision::Denied, HostAction::Accept)
            }
        }
        "decline" => (Decision::Denied, HostAction::Decline),
        "cancel" => (Decision::Denied, HostAction::Cancel),
        _ => (Decision::Error, HostAction::Error),
    }
}

/// Who is asked about a call.
pub(super) enum Route {
    /// The client, under mcp-bound's own request id (2025 eras).
    Host { id: String },
    /// The client, through an `input_required` answer (2026-07-28).
    Sealed,
    /// `--tool-approve-cmd`.
    Command,
    /// No one: the call is denied.
    Nobody,
}

impl Session {
    /// Who is asked about `call` (`ticket`: its ticket, for our request
    /// id): the client when `--tool-approve-via host` and it can be
    /// asked, else the command if one is given, else no one.
    pub(super) fn ask_route(&mut self, ticket: u64, call: &Call<'_>) -> Route {
        let Some(gate) = self.gate.as_ref() else {
            return Route::Nobody;
        };
        if !gate.settings.ask_host {
            return Route::Command;
        }
        match self.opening.spoken.era {
            Some(Era::Legacy) if elicits_forms(self.opening.replay.client_params()) => {
                return Route::Host {
                    id: request_id(&gate.nonce, ticket),
                };
            }
            Some(Era::Modern) if request_elicits_forms(call.params) => {
                return Route::Sealed;
            }
            _ => {}
        }
        self.facts.tool_gate_mut().host_unavailable += 1;
        match self
            .gate
            .as_ref()
            .is_some_and(|g| g.settings.approver.is_some())
        {
            true => Route::Command,
            false => Route::Nobody,
        }
    }

    /// The card for `call`, sent to the client under `id`.
    pub(super) fn ask_host(&mut self, call: &Call<'_>, id: &str) {
        let line = elicitation(id, &self.card(call));
        self.to_client.extend(line);
        self.facts.tool_gate_mut().host_asked += 1;
    }

    /// No one can be asked about `call`: denied, answered at once.
    pub(super) fn cannot_ask_host(&mut self, now: Instant, call: &Call<'_>) {
        self.decision(call, Ruling::at_once(Decision::Denied, DecidedBy::Host));
        let why = match self.opening.spoken.era {
            Some(Era::Modern) => "its request's _meta declares no form elicitation",
            Some(Era::Legacy) => "it declared no form elicitation in its initialize",
            None => "it sent no initialize that declares elicitation",
        };
        let message = format!(
            "Tool \"{}\" not run: mcp-bound asks the person through the client (--tool-approve-via host), and this client cannot be asked: {why}; no --tool-approve-cmd is given to decide instead",
            call.tool
        );
        self.refuse_call(
            now,
            call,
            "tool_approval_unavailable",
            &message,
            DecidedBy::Host,
        );
    }

    /// A response from the client: true when it answers one of
    /// mcp-bound's own requests (it is consumed, never passed on, even
    /// late), and the call it asked about is decided.
    pub(super) fn on_host_answer(
        &mut self,
        now: Instant,
        id: &str,
        result: Option<&str>,
        error: bool,
    ) -> bool {
        let Some(gate) = self.gate.as_ref() else {
            return false;
        };
        if !gate.settings.ask_host || !is_ours(&gate.nonce, id) {
            return false;
        }
        if let Some(ticket) = gate.asked_host(&canonical(id)) {
            let (decision, action) = read_answer(result, error);
            let said = Said {
                action: Some(action),
                reason: (action == HostAction::Error)
                    .then(|| "the client's answer was an error, or said neither accept, decline nor cancel".to_string()),
                ..Said::default()
            };
            self.decide(now, ticket, decision, said);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_ids_are_told_from_the_servers_even_spelled_with_escapes() {
        let id = request_id("ab12", 7);
        assert_eq!(id, "\"mcp-bound-approval-ab12-7\"");
        assert!(is_ours("ab12", &id));
        assert!(is_ours("ab12", "\"\\u006dcp-bound-approval-ab12-7\""));
        assert_eq!(
            canonical("\"\\u006dcp-bound-approval-ab12-7\""),
            "\"mcp-bound-approval-ab12-7\""
        );
        assert!(!is_ours("ab12", "\"mcp-bound-approval-ab123-7\""));
        assert!(
            !is_ours("ab12", "\"mcp-bound-approval-zz99-7\""),
            "another run's"
        );
        assert!(!is_ours("ab12", "7"));
        assert!(!is_ours("ab12", "\"mcp-bound-replay-1\""));
    }

    #[test]
    fn form_elicitation_is_an_empty_object_or_one_naming_form() {
        let caps = |c: &str| format!(r#"{{"protocolVersion":"2025-11-25","capabilities":{c}}}"#);
        assert!(elicits_forms(Some(&caps(r#"{"elicitation":{}}"#))));
        assert!(elicits_forms(Some(&caps(r#"{"elicitation":{"form":{}}}"#))));
        assert!(elicits_forms(Some(&caps(
            r#"{"elicitation":{"form":{},"url":{}}}"#
        ))));
        assert!(!elicits_forms(Some(&caps(r#"{"elicitation":{"url":{}}}"#))));
        assert!(!elicits_forms(Some(&caps(r#"{"sampling":{}}"#))));
        assert!(!elicits_forms(Some(&caps(r#"{"elicitation":true}"#))));
        assert!(!elicits_forms(Some("{}")));
        assert!(!elicits_forms(None));
    }

    #[test]
    fn each_answer_decides_and_only_accept_with_true_approves() {
        use Decision::*;
        let read = |r: &str| read_answer(Some(r), false);
        let accept = r#"{"action":"accept","content":{"approve":true}}"#;
        assert_eq!(read(accept), (Approved, HostAction::Accept));
        let no = r#"{"action":"accept","content":{"approve":false}}"#;
        assert_eq!(read(no), (Denied, HostAction::Accept));
        let string = r#"{"action":"accept","content":{"approve":"true"}}"#;
        assert_eq!(read(string), (Denied, HostAction::Accept), "not a boolean");
        assert_eq!(read(r#"{"action":"accept"}"#), (Denied, HostAction::Accept));
        assert_eq!(
            read(r#"{"action":"decline"}"#),
            (Denied, HostAction::Decline)
        );
        assert_eq!(read(r#"{"action":"cancel"}"#), (Denied, HostAction::Cancel));
        assert_eq!(read(r#"{"action":"maybe"}"#), (Error, HostAction::Error));
        assert_eq!(read("[]"), (Error, HostAction::Error));
        assert_eq!(read_answer(None, true), (Error, HostAction::Error));
        assert_eq!(read_answer(Some(accept), true), (Error, HostAction::Error));
    }

    #[test]
    fn the_card_is_masked_and_bounded() {
        let redactor = Redactor::default();
        let long = format!(r#"{{"text":"{}"}}"#, "é".repeat(3000));
        let card = Card {
            server: "files",
            tool: &"t".repeat(1000),
            arguments: Some(&long),
            params_sha256: Some("ab"),
            timeout: Duration::from_secs(60),
        };
        let message = card.message(&redactor);
        assert!(message.len() <= MAX_MESSAGE);
        assert!(message.contains("Server: files\n"));
        assert!(message.contains(&format!("({} bytes in all)", long.len())));
        assert!(message.contains("params_sha256: ab\n"));
        assert!(message.contains("denied after 1m"));
        let secret = r#"{"token":"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}"#;
        let summary = arguments_summary(Some(secret), &redactor);
        assert!(!summary.contains("ghp_abcdef"), "{summary}");
        assert_eq!(arguments_summary(None, &redactor), "(none)");
    }

    #[test]
    fn the_request_and_its_withdrawal_are_one_line_each() {
        let line = elicitation("\"x\"", "a \"quoted\"\nmessage");
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        let request: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(request["method"], "elicitation/create");
        assert_eq!(request["params"]["message"], "a \"quoted\"\nmessage");
        let schema = &request["params"]["requestedSchema"];
        assert_eq!(schema["properties"]["approve"]["type"], "boolean");
        let cancel: Value = serde_json::from_slice(&withdrawal("\"x\"", "late")).unwrap();
        assert_eq!(cancel["params"]["requestId"], "x");
    }

    /// The session, asking through the host: lines and instants in.
    mod session {
        use super::super::super::{ApproverCommand, Audit};
        use super::super::super::{SessionPolicy, ToolGate};
        use super::*;

        const CALL: &str = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"write\",\"arguments\":{\"path\": \"a\"}}}\n";

        fn session(command: bool) -> Session {
            let policy = SessionPolicy {
                max_in_flight: 16,
                agent_excerpt_bytes: 0,
                tools: Some(ToolGate {
                    approve: vec!["w*".into()],
                    approver: command.then(|| ApproverCommand {
                        argv: vec!["approver".into()],
                    }),
                    ask_host: true,
                    timeout: Duration::from_secs(60),
                    max_pending: 4,
                    server_argv: vec!["server".into(), "--flag".into()],
                    ..ToolGate::default()
                }),
                ..super::super::super::tests::policy()
            };
            Session::new(policy, "c1".into())
        }

        /// A client line in; what went to the server (passed on, or
        /// released) out.
        fn client(session: &mut Session, now: Instant, line: &str) -> String {
            let mut out = Vec::new();
            session.on_client_line(now, line.as_bytes(), &mut out, 0);
            out.extend(std::mem::take(&mut session.to_server));
            String::from_utf8(out).unwrap()
        }

        fn to_client(session: &mut Session) -> Vec<Value> {
            let bytes = std::mem::take(&mut session.to_client);
            bytes
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| serde_json::from_slice(l).unwrap())
                .collect()
        }

        /// An opened legacy session, with or without form elicitation.
        fn opened(elicitation: Option<&str>, command: bool, now: Instant) -> Session {
            let mut session = session(command);
            let caps = elicitation.map_or(String::new(), |e| format!(r#""elicitation":{e}"#));
            let init = format!(
                r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{{caps}}},"clientInfo":{{"name":"c","version":"1"}}}}}}"#
            ) + "\n";
            assert_eq!(client(&mut session, now, &init), init);
            let answer = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"files","version":"1"}}}"#.to_string() + "\n";
            let mut out = Vec::new();
            session.on_server_line(now, answer.as_bytes(), &mut out);
            session
        }

        fn decisions(session: &mut Session) -> Vec<super::super::super::McpDecision> {
            session
                .take_audit()
                .into_iter()
                .filter_map(|a| match a {
                    Audit::Decision(d) => Some(d),
                    _ => None,
                })
                .collect()
        }

        /// The card goes to the client; the answer is consumed; accept
        /// with true sends the call's own bytes.
        #[test]
        fn an_accept_sends_the_exact_call_and_the_answer_goes_nowhere() {
            let t0 = Instant::now();
            let mut session = opened(Some("{}"), false, t0);
            assert_eq!(client(&mut session, t0, CALL), "", "held");
            let asked = to_client(&mut session);
            assert_eq!(asked.len(), 1);
            assert_eq!(asked[0]["method"], "elicitation/create");
            let id = asked[0]["id"].clone();
            assert!(id.as_str().unwrap().starts_with("mcp-bound-approval-"));
            let message = asked[0]["params"]["message"].as_str().unwrap();
            assert!(message.contains("Server: files\n"), "{message}");
            assert!(message.contains("Tool: write\n"), "{message}");
            assert!(
                message.contains(r#"Arguments (masked): {"path": "a"}"#),
                "{message}"
            );
            let answer = json!({"jsonrpc":"2.0","id":id,"result":{"action":"accept","content":{"approve":true}}});
            let sent = client(
                &mut session,
                t0 + Duration::from_millis(40),
                &format!("{answer}\n"),
            );
            assert_eq!(
                sent, CALL,
                "the call, byte-exact, and nothing of the answer"
            );
            assert_eq!(session.in_flight(), 1);
            let decided = decisions(&mut session);
            assert_eq!(decided.len(), 1);
            assert_eq!(decided[0].decision, Decision::Approved);
            assert_eq!(decided[0].by, DecidedBy::Host);
            assert_eq!(decided[0].action, Some(HostAction::Accept));
            assert_eq!(decided[0].waited_ms, 40);
            let facts = session.facts().tool_gate.unwrap();
            assert_eq!((facts.host_asked, facts.host_actions.accept), (1, 1));
            assert_eq!(facts.approvers_asked, 0);
            assert!(session.take_asks().is_empty(), "no command is started");
        }

        #[test]
        fn a_decline_denies_and_nothing_reaches_the_server() {
            let t0 = Instant::now();
            let mut session = opened(Some(r#"{"form":{}}"#), false, t0);
            client(&mut session, t0, CALL);
            let id = to_client(&mut session)[0]["id"].clone();
            let answer = json!({"jsonrpc":"2.0","id":id,"result":{"action":"decline"}});
            assert_eq!(client(&mut session, t0, &format!("{answer}\n")), "");
            let answered = to_client(&mut session);
            assert_eq!(answered[0]["id"], 7);
            let data = &answered[0]["error"]["data"]["mcp_bound"];
            assert_eq!(data["reason"], "tool_denied");
            assert_eq!(data["by"], "host");
            let message = answered[0]["error"]["message"].as_str().unwrap();
            assert!(message.contains("declined"), "{message}");
            let decided = decisions(&mut session);
            assert_eq!(decided[0].decision, Decision::Denied);
            assert_eq!(decided[0].action, Some(HostAction::Decline));
            assert_eq!(session.in_flight(), 0);
        }

        /// At the deadline the request is withdrawn and the call denied
        /// as expired; an answer after it is still consumed.
        #[test]
        fn at_the_deadline_the_request_is_withdrawn_and_a_late_answer_dropped() {
            let t0 = Instant::now();
            let mut session = opened(Some("{}"), false, t0);
            client(&mut session, t0, CALL);
            let id = to_client(&mut session)[0]["id"].clone();
            assert_eq!(session.deadline(), Some(t0 + Duration::from_secs(60)));
            session.tick(t0 + Duration::from_secs(60), &mut |_| String::new());
            let out = to_client(&mut session);
            assert_eq!(out[0]["method"], "notifications/cancelled");
            assert_eq!(out[0]["params"]["requestId"], id);
            assert_eq!(out[1]["id"], 7);
            assert_eq!(
                out[1]["error"]["data"]["mcp_bound"]["reason"],
                "tool_approval_expired"
            );
            let decided = decisions(&mut session);
            assert_eq!(decided[0].decision, Decision::Expired);
            assert_eq!(decided[0].action, Some(HostAction::Timeout));
            let late = json!({"jsonrpc":"2.0","id":id,"result":{"action":"accept","content":{"approve":true}}});
            assert_eq!(
                client(&mut session, t0, &format!("{late}\n")),
                "",
                "consumed"
            );
            assert!(to_client(&mut session).is_empty());
            assert!(decisions(&mut session).is_empty(), "decided once");
        }

        /// A client without form elicitation: the command decides when
        /// one is given; otherwise the call is denied at once.
        #[test]
        fn a_client_that_cannot_be_asked_falls_back_or_is_refused() {
            let t0 = Instant::now();
            let mut session = opened(Some(r#"{"url":{}}"#), true, t0);
            assert_eq!(client(&mut session, t0, CALL), "");
            assert_eq!(session.take_asks().len(), 1, "the command is asked");
            assert!(to_client(&mut session).is_empty());
            let mut session = opened(None, false, t0);
            assert_eq!(client(&mut session, t0, CALL), "");
            let answered = to_client(&mut session);
            assert_eq!(answered.len(), 1);
            let error = &answered[0]["error"];
            assert_eq!(
                error["data"]["mcp_bound"]["reason"],
                "tool_approval_unavailable"
            );
            let message = error["message"].as_str().unwrap();
            assert!(
                message.contains("declared no form elicitation"),
                "{message}"
            );
            let decided = decisions(&mut session);
            assert_eq!(decided[0].decision, Decision::Denied);
            assert_eq!(decided[0].action, None);
            assert_eq!(session.facts().tool_gate.unwrap().host_unavailable, 1);
        }

        /// The client cancels the call itself: the request to it is
        /// withdrawn, and the call is never answered or sent.
        #[test]
        fn the_clients_cancel_withdraws_the_request() {
            let t0 = Instant::now();
            let mut session = opened(Some("{}"), false, t0);
            client(&mut session, t0, CALL);
            let id = to_client(&mut session)[0]["id"].clone();
            let cancel =
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#;
            client(&mut session, t0, &format!("{cancel}\n"));
            let out = to_client(&mut session);
            assert_eq!(out.len(), 1, "{out:?}");
            assert_eq!(out[0]["params"]["requestId"], id);
            let decided = decisions(&mut session);
            assert_eq!(decided[0].decision, Decision::Cancelled);
            assert_eq!(decided[0].action, None);
        }

        /// A response to the server's own request passes through.
        #[test]
        fn the_servers_requests_are_answered_to_the_server() {
            let t0 = Instant::now();
            let mut session = opened(Some("{}"), false, t0);
            let answer =
                r#"{"jsonrpc":"2.0","id":"mcp-bound-approval-x-1","result":{"action":"accept"}}"#
                    .to_string()
                    + "\n";
            assert_eq!(
                client(&mut session, t0, &answer),
                answer,
                "not this run's nonce"
            );
            let answer =
                r#"{"jsonrpc":"2.0","id":3,"result":{"action":"accept"}}"#.to_string() + "\n";
            assert_eq!(client(&mut session, t0, &answer), answer);
        }
    }
}
