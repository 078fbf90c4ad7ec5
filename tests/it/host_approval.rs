//! Asking the person through the host (`--tool-approve-via host`), with
//! the official SDKs' clients as the host: the TypeScript SDK v1's
//! elicitation handler and the Python SDK's `elicitation_callback`
//! answer mcp-bound's card, against a server on the TypeScript SDK v1
//! (tests/interop/server_v1.mjs), which says on stderr each call it got.
//!
//! Every case checks what the server received (the call's exact
//! arguments when approved, nothing otherwise), the journal's decision
//! bound to the request's `params_sha256` (and `verify`, which `play`
//! runs), and the record's counts.

use serde_json::Value;

use crate::interop::{Played, play_with, ready};

/// The call the scenario makes, as the server says it got it.
const RAN: &str = r#"interop server: echo {"text":"approved <b>"}"#;

/// One client's run of the `approve` scenario, the card answered as
/// `elicit` says, through mcp-bound with these options.
fn approve(client: &str, elicit: &str, options: &[&str], server_env: &[(&str, &str)]) -> Played {
    let mut wrap = vec![
        "--tool-approve-via",
        "host",
        "--tool-approval-timeout",
        "2s",
    ];
    wrap.extend_from_slice(options);
    play_with(
        client,
        "approve",
        ("v1", server_env),
        Some(&wrap),
        &[("INTEROP_ELICIT", elicit)],
    )
}

/// The one decision, checked against its request; and whether the
/// server ran the call.
fn decided(played: &Played) -> (Value, bool) {
    let decisions = played.entries("mcp_decision");
    played.check(decisions.len() == 1, "one mcp_decision");
    let decision = decisions[0].clone();
    let requests: Vec<Value> = played
        .entries("mcp_request")
        .into_iter()
        .filter(|r| r["method"] == "tools/call")
        .collect();
    played.check(requests.len() == 1, "one tools/call request");
    played.check(
        decision["params_sha256"] == requests[0]["params_sha256"]
            && decision["request_id"] == requests[0]["request_id"],
        "the decision is bound to the call's params and id",
    );
    let stderr = String::from_utf8_lossy(&played.output.stderr);
    (decision, stderr.contains(RAN))
}

fn gate(played: &Played) -> &Value {
    &played.record()["mcp"]["tool_gate"]
}

/// The card the client was shown: one, with the approve field, naming
/// the tool and the call's params_sha256.
fn card(played: &Played, decision: &Value) -> Value {
    let asked = played.seen["asked"].as_array().cloned().unwrap_or_default();
    played.check(asked.len() == 1, "the client was asked once");
    let message = asked[0]["message"].as_str().unwrap_or_default();
    played.check(
        asked[0]["fields"] == serde_json::json!(["approve"]),
        "one boolean field",
    );
    played.check(
        message.contains("Server: interop-v1\n") && message.contains("Tool: echo\n"),
        "the card names the server and the tool",
    );
    let sha = decision["params_sha256"].as_str().unwrap_or("none");
    played.check(
        message.contains(&format!("params_sha256: {sha}")),
        "the card names the params' hash, as the journal has it",
    );
    played.check(
        message.contains(r#"Arguments (masked): {"text":"approved <b>"}"#),
        "the card shows the arguments as text",
    );
    asked[0].clone()
}

/// accept with true: the exact call runs, once.
fn accepted(client: &str) {
    if !ready() {
        return;
    }
    let played = approve(client, "accept", &[], &[]);
    let (decision, ran) = decided(&played);
    card(&played, &decision);
    played.check(
        played.seen["call"]["text"] == "approved <b>",
        "the call ran",
    );
    played.check(ran, "the server got the exact arguments");
    played.check(
        decision["decision"] == "approved"
            && decision["by"] == "host"
            && decision["action"] == "accept",
        "approved by the host",
    );
    let gate = gate(&played);
    played.check(
        gate["host_asked"] == 1 && gate["host_actions"]["accept"] == 1,
        "the record counts the ask and the answer",
    );
}

/// Any other answer: the call is denied, the server never sees it.
fn denied(client: &str, elicit: &str, action: &str, decision_word: &str, says: &str) {
    if !ready() {
        return;
    }
    let played = approve(client, elicit, &[], &[]);
    let (decision, ran) = decided(&played);
    card(&played, &decision);
    played.check(!ran, "the server never got the call");
    let error = &played.seen["call"]["error"];
    played.check(error["code"] == -32000, "the call is answered -32000");
    played.check(
        error["message"].as_str().is_some_and(|m| m.contains(says)),
        "the error says why",
    );
    played.check(
        decision["decision"] == decision_word
            && decision["by"] == "host"
            && decision["action"] == action,
        "the decision names the client's answer",
    );
    played.check(
        gate(&played)["host_actions"][action] == 1,
        "the record counts the answer",
    );
}

/// No answer: at the deadline the card is withdrawn and the call
/// denied, however hard the server floods stderr meanwhile.
fn unanswered(client: &str) {
    if !ready() {
        return;
    }
    let played = approve(client, "never", &[], &[("INTEROP_FLOOD", "1")]);
    let (decision, ran) = decided(&played);
    let asked = card(&played, &decision);
    played.check(!ran, "the server never got the call");
    played.check(asked["withdrawn"] == true, "the card was withdrawn");
    played.check(
        decision["decision"] == "expired" && decision["action"] == "timeout",
        "expired, no answer",
    );
    // The deadline is the approval's: 2s from the call, which a flood
    // does not move (loose above: a slow machine is no failure).
    let waited = decision["waited_ms"].as_u64().unwrap_or(0);
    played.check((2000..30_000).contains(&waited), "decided at the deadline");
    let error = &played.seen["call"]["error"];
    played.check(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("approval expired after 2s")),
        "the error says the approval expired",
    );
}

/// A client that declared no elicitation: denied, saying so; with a
/// command, the command decides.
fn not_askable(client: &str) {
    if !ready() {
        return;
    }
    let played = approve(client, "none", &[], &[]);
    let (decision, ran) = decided(&played);
    played.check(!ran, "the server never got the call");
    played.check(
        played.seen["asked"].as_array().is_some_and(Vec::is_empty),
        "nothing was asked",
    );
    let error = &played.seen["call"]["error"];
    played.check(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("this client cannot be asked")),
        "the error says the client cannot be asked",
    );
    played.check(
        decision["by"] == "host"
            && decision["decision"] == "denied"
            && decision["action"].is_null(),
        "denied by the host, no answer",
    );
    played.check(gate(&played)["host_unavailable"] == 1, "counted");
    let played = approve(client, "none", &["--tool-approve-cmd", "true"], &[]);
    let (decision, ran) = decided(&played);
    played.check(ran, "the command approved it");
    played.check(
        decision["by"] == "command" && decision["decision"] == "approved",
        "decided by the command",
    );
}

macro_rules! each_client {
    ($($name:ident: $body:expr;)*) => {
        mod typescript {
            use super::*;
            $(#[test] fn $name() { let client = "v1"; $body(client) })*
        }
        mod python {
            use super::*;
            $(#[test] fn $name() { let client = "py"; $body(client) })*
        }
    };
}

each_client! {
    an_accept_runs_the_exact_call: accepted;
    a_decline_denies: |c| denied(c, "decline", "decline", "denied", "the person declined it");
    a_cancel_denies: |c| denied(c, "cancel", "cancel", "denied", "the person dismissed the request");
    an_accept_with_false_denies: |c| denied(c, "accept-false", "accept", "denied", "the person did not approve it");
    an_error_is_no_approval: |c| denied(c, "error", "error", "error", "was an error");
    no_answer_expires_at_the_deadline_through_a_flood: unanswered;
    a_client_without_elicitation_is_not_asked: not_askable;
}
