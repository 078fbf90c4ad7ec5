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

/// The 2026-07-28 era: the tools/call requests of the real run, with
/// their responses' outcomes and their decisions, in order.
fn modern_rounds(played: &Played) -> Vec<(Value, Value, Option<Value>)> {
    let calls: Vec<Value> = played
        .entries("mcp_request")
        .into_iter()
        .filter(|r| r["method"] == "tools/call")
        .collect();
    let responses = played.entries("mcp_response");
    let decisions = played.entries("mcp_decision");
    calls
        .into_iter()
        .map(|request| {
            let id = &request["request_id"];
            let outcome = responses
                .iter()
                .find(|r| r["request_id"] == *id)
                .map_or(Value::Null, |r| r["outcome"].clone());
            let decision = decisions.iter().find(|d| d["request_id"] == *id).cloned();
            if let Some(decision) = &decision {
                played.check(
                    decision["params_sha256"] == request["params_sha256"],
                    "a decision is bound to its request's params",
                );
            }
            (request, outcome, decision)
        })
        .collect()
}

/// A run through mcp-bound asking the host, against the v2 server (the
/// 2026-07-28 era with the TypeScript SDK v2 and the Python `Client`);
/// None when the SDKs are missing (said once by `ready`).
fn modern_run(
    client: &str,
    scenario: &str,
    options: &[&str],
    env: &[(&str, &str)],
) -> Option<Played> {
    if !ready() {
        return None;
    }
    let mut wrap = vec!["--tool-approve-via", "host"];
    wrap.extend_from_slice(options);
    Some(play_with(client, scenario, ("v2", &[]), Some(&wrap), env))
}

/// A modern client (the TypeScript SDK v2, which negotiates 2026-07-28
/// with a v2 server; the Python SDK's `Client`): the call is answered
/// input_required with the card, the SDK asks and retries, and the
/// retry runs the original call.
fn modern_accepted(client: &str) {
    let scenario = if client == "py" { "modern" } else { "approve" };
    let Some(played) = modern_run(client, scenario, &[], &[("INTEROP_ELICIT", "accept")]) else {
        return;
    };
    played.check(
        played.seen["call"]["text"] == "approved <b>",
        "the call ran",
    );
    let stderr = String::from_utf8_lossy(&played.output.stderr);
    played.check(stderr.matches(RAN).count() == 1, "the server ran it once");
    let rounds = modern_rounds(&played);
    played.check(rounds.len() == 2, "two rounds");
    played.check(
        rounds[0].1 == "asked" && rounds[0].2.is_none(),
        "the first round was answered by mcp-bound, undecided",
    );
    let decision = rounds[1].2.clone().unwrap_or_default();
    played.check(
        decision["decision"] == "approved"
            && decision["by"] == "host"
            && decision["action"] == "accept",
        "the retry carried the approval",
    );
    played.check(
        rounds[1].0["params_sha256"] == rounds[0].0["params_sha256"],
        "the retry's entry carries the approved params",
    );
    played.check(rounds[1].1 == "result", "the retry reached the server");
    let gate = gate(&played);
    played.check(
        gate["host_asked"] == 1 && gate["host_actions"]["accept"] == 1,
        "counted",
    );
}

/// The TypeScript SDK v2 declines: the retry is denied, nothing runs.
#[test]
fn a_modern_decline_runs_nothing() {
    let Some(played) = modern_run("v2", "approve", &[], &[("INTEROP_ELICIT", "decline")]) else {
        return;
    };
    let stderr = String::from_utf8_lossy(&played.output.stderr);
    played.check(!stderr.contains("interop server: echo"), "nothing ran");
    let rounds = modern_rounds(&played);
    let decision = rounds.last().and_then(|r| r.2.clone()).unwrap_or_default();
    played.check(
        decision["decision"] == "denied" && decision["action"] == "decline",
        "declined",
    );
    played.check(
        played.seen["call"]["error"]["code"] == -32000,
        "the call is answered -32000",
    );
}

/// After the approval the server asks for input of its own (confirm's
/// `ok`): the client's next round is covered, not asked again, and the
/// server's question and state pass through untouched.
#[test]
fn an_approval_covers_the_servers_own_rounds() {
    let env = [("INTEROP_ELICIT", "accept"), ("INTEROP_TOOL", "confirm")];
    let Some(played) = modern_run("v2", "approve", &[], &env) else {
        return;
    };
    played.check(played.seen["call"]["text"] == "confirmed", "confirmed");
    let asked = played.seen["asked"].as_array().cloned().unwrap_or_default();
    let fields: Vec<&Value> = asked.iter().map(|a| &a["fields"][0]).collect();
    played.check(
        fields == ["approve", "ok"],
        "mcp-bound's card once, then the server's",
    );
    let rounds = modern_rounds(&played);
    played.check(rounds.len() == 3, "three rounds: asked, approved, covered");
    let approved = rounds[1].2.clone().unwrap_or_default();
    let covered = rounds[2].2.clone().unwrap_or_default();
    played.check(
        covered["decision"] == "approved"
            && covered["covered_by"] == approved["request_id"]
            && approved["covered_by"].is_null(),
        "the third round is covered by the second's approval",
    );
}

/// A requestState changed, used twice, or sent past the approval's
/// deadline (the Python SDK's rounds driven by hand): refused, and the
/// server never runs the call for it.
fn broken_state(scenario: &str, reason: &str) {
    if !ready() {
        return;
    }
    let wrap = [
        "--tool-approve-via",
        "host",
        "--tool-approval-timeout",
        "1s",
    ];
    let played = play_with("py", scenario, ("v2", &[]), Some(&wrap), &[]);
    let rounds = played.seen["rounds"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    played.check(
        rounds[0]["keys"] == serde_json::json!(["mcp-bound-approval"]),
        "the first round carries mcp-bound's card",
    );
    let last = rounds.last().cloned().unwrap_or_default();
    played.check(last["error"]["reason"] == reason, "refused, saying why");
    let stderr = String::from_utf8_lossy(&played.output.stderr);
    let ran = stderr.matches(RAN).count();
    played.check(
        ran == usize::from(scenario == "replay"),
        "the server ran only the one approved call",
    );
    let decided = modern_rounds(&played);
    let decision = decided.last().and_then(|r| r.2.clone()).unwrap_or_default();
    played.check(
        decision["by"] == "host" && decision["decision"] != "approved",
        "the refusal is a decision",
    );
}

#[test]
fn a_changed_request_state_is_refused() {
    broken_state("tamper", "request_state_invalid");
}

#[test]
fn a_request_state_sent_twice_is_refused() {
    broken_state("replay", "request_state_replayed");
}

#[test]
fn a_request_state_past_its_deadline_is_refused() {
    broken_state("expire", "tool_approval_expired");
}

mod modern {
    use super::*;

    #[test]
    fn typescript_accept_runs_the_original_call() {
        modern_accepted("v2");
    }

    #[test]
    fn python_accept_runs_the_original_call() {
        modern_accepted("py");
    }
}
