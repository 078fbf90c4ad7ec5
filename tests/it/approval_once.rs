//! One host approval is one call, under a 2026-07-28 client driven by
//! hand against the fixture server (`--tool-approve-via host`): a call
//! whose arguments merely hold the word `requestState` is no retry; the
//! server's own round is covered once, by the state its answer named;
//! and arguments strict JSON cannot read are refused before any
//! approval could cover them. Each case checks what the server ran (its
//! REQUEST lines), the journal's decisions and `check --no-unapproved`.

use crate::util;

use serde_json::{Value, json};
use util::{parse_message as parse, server};

const INPUT_KEY: &str = "mcp-bound-approval";

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
    })
}

/// A 2026-07-28 `tools/call` line: `extra` joins the params' top level.
fn call(id: u64, tool: &str, arguments: &str, extra: &[(&str, Value)]) -> Vec<u8> {
    let mut params = json!({"name": tool, "_meta": meta()});
    for (key, value) in extra {
        params[*key] = value.clone();
    }
    let params = params.to_string();
    // The arguments' own text, as the client wrote it (maybe not JSON).
    let params = format!(r#"{{"arguments":{arguments},{}"#, &params[1..]);
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#)
        .into_bytes()
        .into_iter()
        .chain(*b"\n")
        .collect()
}

fn accept(state: &Value) -> [(&'static str, Value); 2] {
    [
        ("requestState", state.clone()),
        (
            "inputResponses",
            json!({INPUT_KEY: {"action": "accept", "content": {"approve": true}}}),
        ),
    ]
}

/// The card mcp-bound answered with: its sealed state.
#[track_caller]
fn asked(answer: &Value) -> Value {
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    assert!(
        answer["result"]["inputRequests"][INPUT_KEY].is_object(),
        "mcp-bound's card: {answer}"
    );
    answer["result"]["requestState"].clone()
}

fn gated(tool: &str) -> (util::Call, std::path::PathBuf) {
    let call = server(&[]).opt(&[
        "--mcp",
        "--tool-approve-via",
        "host",
        "--tool-approve",
        tool,
    ]);
    let journal = call.path("audit.jsonl");
    let call = call.opt(&["--journal", journal.to_str().unwrap()]);
    (call, journal)
}

fn decisions(journal: &std::path::Path) -> Vec<Value> {
    crate::log::entries(journal)
        .into_iter()
        .filter(|e| e["kind"] == "mcp_decision")
        .collect()
}

#[test]
fn an_approval_runs_one_call_and_a_word_in_the_arguments_is_no_retry() {
    let (wrapped, journal) = gated("pay");
    let mut run = wrapped.start();
    let arguments = r#"{"to":"mallory","amount":100,"memo":"requestState"}"#;
    run.send(&call_line(1, arguments, &[]));
    let state = asked(&parse(&run.read_line()));
    run.send(&call_line(2, arguments, &accept(&state)));
    assert_eq!(parse(&run.read_line())["result"]["ran"], "pay");
    for id in [3, 4] {
        run.send(&call_line(id, arguments, &[]));
        let answer = parse(&run.read_line());
        assert_eq!(answer["id"], id);
        asked(&answer);
    }
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0);
    let ran = done.stderr_text().matches("tools/call pay").count();
    done.check(ran == 1, "the server ran pay once");
    let approved: Vec<Value> = decisions(&journal)
        .into_iter()
        .filter(|d| d["decision"] == "approved")
        .collect();
    done.check(approved.len() == 1, "one approved decision");
    done.check(approved[0]["covered_by"].is_null(), "none covered");
    let (code, out, _) = util::subcommand("check", &["--no-unapproved", journal.to_str().unwrap()]);
    done.check(code == 0, &format!("check --no-unapproved: {out}"));
}

fn call_line(id: u64, arguments: &str, extra: &[(&str, Value)]) -> Vec<u8> {
    call(id, "pay", arguments, extra)
}

/// The server asks for input of its own (the fixture's `confirm`, until
/// the retry brings inputResponses): the one retry carrying the state it
/// named is covered; that state again is asked about.
#[test]
fn the_servers_own_round_is_covered_once_by_the_state_it_named() {
    let (wrapped, journal) = gated("confirm");
    let mut run = wrapped.start();
    let arguments = r#"{"ok":1}"#;
    run.send(&call(1, "confirm", arguments, &[]));
    let state = asked(&parse(&run.read_line()));
    run.send(&call(2, "confirm", arguments, &accept(&state)));
    let round = parse(&run.read_line());
    assert_eq!(round["result"]["requestState"], "round-1", "{round}");
    let theirs = [
        ("requestState", json!("round-1")),
        ("inputResponses", json!({"ok": {"action": "accept"}})),
    ];
    run.send(&call(3, "confirm", arguments, &theirs));
    assert_eq!(parse(&run.read_line())["result"]["ran"], "confirm");
    run.send(&call(4, "confirm", arguments, &theirs));
    asked(&parse(&run.read_line()));
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0);
    let ran = done.stderr_text().matches("tools/call confirm").count();
    done.check(ran == 2, "the approved call and its one covered round");
    let decided = decisions(&journal);
    let covered: Vec<&Value> = decided
        .iter()
        .filter(|d| d["action"] == "covered")
        .collect();
    done.check(
        covered.len() == 1 && covered[0]["covered_by"] == 2 && covered[0]["request_id"] == 3,
        &format!("round 3 covered by 2: {decided:?}"),
    );
}

/// Approved with no arguments; then the same tool with arguments strict
/// JSON cannot read (NaN), and the word requestState: refused, never
/// covered, never run.
#[test]
fn unreadable_arguments_are_refused_before_any_approval_covers_them() {
    let (wrapped, journal) = gated("backup");
    let mut run = wrapped.start();
    let line = |id: u64, extra: &[(&str, Value)]| {
        let mut params = json!({"name": "backup", "_meta": meta()});
        for (key, value) in extra {
            params[*key] = value.clone();
        }
        util::rpc_request(id, "tools/call", params)
    };
    run.send(&line(1, &[]));
    let state = asked(&parse(&run.read_line()));
    run.send(&line(2, &accept(&state)));
    assert_eq!(parse(&run.read_line())["result"]["ran"], "backup");
    let hostile = r#"{"dest":"/etc/cron.d/job","n":NaN,"memo":"requestState"}"#;
    run.send(&call(3, "backup", hostile, &[]));
    let answer = parse(&run.read_line());
    assert_eq!(answer["id"], 3);
    assert_eq!(
        answer["error"]["data"]["mcp_bound"]["refusal"], "not_strict_json",
        "{answer}"
    );
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0);
    let ran = done.stderr_text().matches("tools/call backup").count();
    done.check(ran == 1, "only the approved call ran");
    let approved = decisions(&journal)
        .into_iter()
        .filter(|d| d["decision"] == "approved")
        .count();
    done.check(approved == 1, "one approval");
}
