//! The per-tool-call gate (--tool-allow, --tool-deny, --tool-approve-cmd)
//! driven through mcp-bound with the fixture server: the policy hides
//! and refuses tools, an approver decides each call on a fixed clock
//! while other requests flow, and every decision is in the journal, bound
//! to the exact params, where `verify` checks it.

use crate::util;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mcp_bound::journal::hex;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use util::{json_line as line, parse_message as parse, rpc_request as request, server};

/// The approver the tests use: it writes its stdin to DIR/<request id>.json,
/// then follows the tool's name: `ok*` approves; `burn*` uses 0.6 s of
/// CPU, then approves; `wait*` waits until
/// DIR/go exists, then approves; `hang*` ignores TERM, floods stderr and
/// sleeps; anything else prints a reason and denies.
const APPROVER: &str = r#"
import json, os, signal, sys, time
d = sys.argv[1]
r = json.load(sys.stdin)
with open(os.path.join(d, str(r["request_id"]) + ".json"), "w") as f:
    json.dump(r, f)
tool = r["tool"]
if tool.startswith("ok"):
    sys.exit(0)
if tool.startswith("burn"):
    end = time.process_time() + 0.6
    while time.process_time() < end:
        pass
    sys.exit(0)
if tool.startswith("wait"):
    while not os.path.exists(os.path.join(d, "go")):
        time.sleep(0.01)
    sys.exit(0)
if tool.startswith("hang"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    open(os.path.join(d, "hanging"), "w").close()
    end = time.monotonic() + 600
    while time.monotonic() < end:
        sys.stderr.write("x" * 65536)
print("tool " + tool + " is not on the list")
sys.exit(3)
"#;

fn approver(dir: &Path) -> String {
    let script = dir.join("approver.py");
    std::fs::write(&script, APPROVER).unwrap();
    format!("python3 {} {}", script.display(), dir.display())
}

fn call(id: u64, tool: &str, arguments: Value) -> Vec<u8> {
    request(
        json!(id),
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn journal_kinds(journal: &Path) -> Vec<Value> {
    std::fs::read_to_string(journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| {
            e["kind"]
                .as_str()
                .is_some_and(|k| k.starts_with("mcp_") || k == "intent")
        })
        .collect()
}

fn journal_in(dir: &Path) -> PathBuf {
    dir.join("audit.jsonl")
}

/// The fixture server under --mcp, the test approver and a journal,
/// with `extra` options; started.
fn gated(dir: &Path, extra: &[&str]) -> (util::Started, PathBuf) {
    let journal = journal_in(dir);
    let approve = approver(dir);
    let mut options = vec![
        "--mcp",
        "--tool-approve-cmd",
        &approve,
        "--journal",
        journal.to_str().unwrap(),
    ];
    options.extend_from_slice(extra);
    (server(&[]).opt(&options).start(), journal)
}

#[test]
fn the_policy_hides_denied_tools_and_refuses_their_calls_which_never_reach_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let journal = journal_in(dir.path());
    let mut run = server(&[])
        .opt(&[
            "--mcp",
            "--tool-deny",
            "rm*,shell",
            "--tool-allow",
            "read_*,rm_all,list",
            "--journal",
            journal.to_str().unwrap(),
        ])
        .start();
    // The fixture echoes params: this is the list the server "has".
    let tools = json!({"tools": [
        {"name": "read_file", "description": "d"},
        {"name": "rm_all"},
        {"name": "shell"},
        {"name": "write_file"},
        {"name": "list"}
    ], "nextCursor": "p2"});
    run.send(&request(json!(1), "tools/list", tools));
    let listed = run.read_line();
    let listed_text = String::from_utf8(listed.clone()).unwrap();
    let listed = parse(&listed);
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read_file", "list"], "{listed}");
    assert_eq!(
        listed["result"]["nextCursor"], "p2",
        "the page's cursor stays"
    );
    assert!(
        listed_text.contains(r#"{"description":"d","name":"read_file"}"#),
        "kept tools are byte-exact: {listed_text}"
    );
    run.send(&call(2, "rm_all", json!({"path": "/"})));
    let denied = parse(&run.read_line());
    assert_eq!(denied["id"], 2);
    assert_eq!(denied["error"]["code"], -32000);
    let data = &denied["error"]["data"]["mcp_bound"];
    assert_eq!(data["reason"], "tool_denied", "{denied}");
    assert_eq!(data["by"], "policy");
    let message = denied["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("\"rm_all\"") && message.contains("denied by mcp-bound's policy"),
        "{message}"
    );
    run.send(&call(3, "write_file", json!({})));
    assert_eq!(
        parse(&run.read_line())["error"]["data"]["mcp_bound"]["reason"],
        "tool_denied"
    );
    run.send(&call(4, "read_file", json!({"path": "a"})));
    assert_eq!(parse(&run.read_line())["result"]["ran"], "read_file");
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/tool_gate/decisions/denied", json!(2))
        .expect("/mcp/tool_gate/decisions/approved", json!(1))
        .expect("/mcp/tool_gate/tools_hidden", json!(3));
    let stderr = done.stderr_text();
    done.check(
        !stderr.contains("tools/call rm_all") && !stderr.contains("tools/call write_file"),
        "a denied call never reached the server",
    );
    done.check(
        stderr.contains("tools/call read_file"),
        "an allowed call did",
    );
    let entries = journal_kinds(&journal);
    assert!(
        entries[0]["tool_gate"]["deny"] == json!(["rm*", "shell"]),
        "{}",
        entries[0]
    );
    let of = |id: u64| -> Vec<String> {
        entries
            .iter()
            .filter(|e| e["request_id"] == id)
            .map(|e| {
                format!(
                    "{} {}",
                    e["kind"].as_str().unwrap(),
                    e["decision"]
                        .as_str()
                        .or(e["outcome"].as_str())
                        .unwrap_or("")
                )
            })
            .collect()
    };
    assert_eq!(
        of(2),
        ["mcp_request ", "mcp_decision denied", "mcp_response denied"]
    );
    assert_eq!(
        of(4),
        [
            "mcp_request ",
            "mcp_decision approved",
            "mcp_response result"
        ]
    );
    let (ok, report) = util::verify_report(&journal);
    assert!(ok, "{report}");
}

#[test]
fn the_approver_gets_the_exact_call_and_its_word_forwards_or_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut run, journal) = gated(
        dir.path(),
        &["--tool-approve", "ok*,no*", "--session-id", "s-1"],
    );
    let params = r#"{"name":"ok_go","arguments":{"b": 1, "a":[2 ]}}"#;
    let sent = format!(r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{params}}}"#);
    run.send(format!("{sent}\n").as_bytes());
    assert_eq!(parse(&run.read_line())["result"]["ran"], "ok_go");
    let asked: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("5.json")).unwrap()).unwrap();
    assert_eq!(asked["tool"], "ok_go");
    assert_eq!(asked["arguments"], json!({"b": 1, "a": [2]}));
    let digest = hex(&Sha256::digest(params.as_bytes()));
    assert_eq!(asked["params_sha256"], digest.as_str());
    assert_eq!(asked["request_id"], 5);
    assert_eq!(asked["session_id"], "s-1");
    assert!(
        asked["call_id"].as_str().unwrap().starts_with("c_"),
        "{asked}"
    );
    assert_eq!(asked["argv"][0], "python3");
    run.send(&call(6, "nope", json!({})));
    let denied = parse(&run.read_line());
    assert_eq!(
        denied["error"]["data"]["mcp_bound"]["reason"], "tool_denied",
        "{denied}"
    );
    assert_eq!(denied["error"]["data"]["mcp_bound"]["by"], "command");
    let message = denied["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("exit 3") && message.contains("tool nope is not on the list"),
        "the approver's reason reaches the model: {message}"
    );
    // A tool --tool-approve does not match runs without asking.
    run.send(&call(7, "other", json!({})));
    assert_eq!(parse(&run.read_line())["result"]["ran"], "other");
    assert!(!dir.path().join("7.json").exists(), "not asked about");
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/tool_gate/decisions/approved", json!(2))
        .expect("/mcp/tool_gate/decisions/denied", json!(1))
        .expect("/mcp/tool_gate/approvers_asked", json!(2));
    done.check(
        !done.stderr_text().contains("tools/call nope"),
        "never sent",
    );
    let entries = journal_kinds(&journal);
    let decision = entries
        .iter()
        .find(|e| e["kind"] == "mcp_decision" && e["request_id"] == 5)
        .unwrap();
    assert_eq!(decision["params_sha256"], digest.as_str());
    assert_eq!(decision["by"], "command");
    assert_eq!(decision["approver_exit"], json!({"code": 0}));
    let (ok, report) = util::verify_report(&journal);
    assert!(ok, "{report}");
}

#[test]
fn an_approver_that_ignores_term_and_floods_stderr_expires_on_the_clock() {
    let dir = tempfile::tempdir().unwrap();
    let approve = approver(dir.path());
    let mut run = server(&[])
        .opt(&[
            "--mcp",
            "--tool-approve-cmd",
            &approve,
            "--tool-approval-timeout",
            "1s",
        ])
        .start();
    let sent = Instant::now();
    run.send(&call(1, "hang", json!({})));
    let expired = parse(&run.read_line());
    let waited = sent.elapsed();
    assert_eq!(expired["id"], 1);
    let data = &expired["error"]["data"]["mcp_bound"];
    assert_eq!(data["reason"], "tool_approval_expired", "{expired}");
    assert!(
        waited >= Duration::from_secs(1),
        "not before its deadline: {waited:?}"
    );
    assert!(dir.path().join("hanging").exists(), "the approver ran");
    // The session goes on.
    run.send(&request(json!(2), "echo", json!({"x": 1})));
    assert_eq!(parse(&run.read_line())["result"], json!({"x": 1}));
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/tool_gate/decisions/expired", json!(1));
    done.check(
        !done.stderr_text().contains("tools/call hang"),
        "never sent",
    );
}

#[test]
fn other_requests_flow_while_a_call_waits_and_a_client_cancel_ends_its_approver() {
    let dir = tempfile::tempdir().unwrap();
    let (mut run, journal) = gated(dir.path(), &[]);
    run.send(&call(1, "wait_a", json!({})));
    wait_for(&dir.path().join("1.json"));
    // Answered while 1 waits: a call that needs no approver, and a ping.
    run.send(&request(json!(2), "echo", json!({"n": 2})));
    assert_eq!(parse(&run.read_line())["id"], 2);
    run.send(&call(3, "ok_b", json!({})));
    assert_eq!(parse(&run.read_line())["result"]["ran"], "ok_b");
    // The client gives up on 1: its approver is ended, nothing is sent.
    run.send(&line(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "user"}}),
    ));
    run.send(&call(4, "wait_c", json!({})));
    wait_for(&dir.path().join("4.json"));
    std::fs::write(dir.path().join("go"), b"").unwrap();
    let answer = parse(&run.read_line());
    assert_eq!(
        answer["id"], 4,
        "1 was never answered (the client cancelled it): {answer}"
    );
    assert_eq!(answer["result"]["ran"], "wait_c");
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/tool_gate/decisions/cancelled", json!(1))
        .expect("/mcp/tool_gate/decisions/approved", json!(2))
        .expect("/mcp/cancelled_by_client", json!(1));
    done.check(
        !done.stderr_text().contains("tools/call wait_a"),
        "1 never sent",
    );
    let (ok, report) = util::verify_report(&journal);
    assert!(ok, "{report}");
}

#[test]
fn a_forged_approval_for_other_arguments_fails_verify() {
    let dir = tempfile::tempdir().unwrap();
    let (mut run, journal) = gated(dir.path(), &[]);
    run.send(&call(1, "ok", json!({"x": 1})));
    assert_eq!(parse(&run.read_line())["result"]["ran"], "ok");
    run.close_stdin();
    run.finish().expect_state("shut_down", 0);
    let (ok, report) = util::verify_report(&journal);
    assert!(ok, "{report}");
    // A forger (no key) rewrites the decision for other arguments and
    // re-chains every line after it.
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut prev = String::new();
    let mut out = Vec::new();
    let mut forged_line = 0;
    for (i, l) in text.lines().enumerate() {
        let entry: Value = serde_json::from_str(l).unwrap();
        let mut l = l.to_string();
        if i > 0 {
            let old = format!("\"prev\":\"{}\"", entry["prev"].as_str().unwrap());
            l = l.replacen(&old, &format!("\"prev\":\"{prev}\""), 1);
        }
        if entry["kind"] == "mcp_decision" {
            let old = format!(
                "\"params_sha256\":\"{}\"",
                entry["params_sha256"].as_str().unwrap()
            );
            l = l.replacen(
                &old,
                &format!("\"params_sha256\":\"{}\"", "0".repeat(64)),
                1,
            );
            forged_line = i + 1;
        }
        let prefix = &l[..l.rfind(",\"h\":\"").unwrap()];
        let h = hex(&Sha256::digest(prefix.as_bytes()));
        out.push(format!("{prefix},\"h\":\"{h}\"}}"));
        prev = h;
    }
    assert!(forged_line > 0, "a decision was journaled");
    std::fs::write(&journal, out.join("\n") + "\n").unwrap();
    let (ok, report) = util::verify_report(&journal);
    assert!(!ok, "{report}");
    assert_eq!(report["break"]["kind"], "UNAPPROVED", "{report}");
    assert_eq!(report["break"]["line"], forged_line, "{report}");
}

/// A tool policy that cannot be applied (the session layer is off) is a
/// usage error from any source: a security policy is never dropped in
/// silence, unlike an option that only tunes a feature left off, which
/// the environment may set broadly. Tuning the approver stays that kind.
#[test]
fn a_gate_without_the_session_layer_is_a_usage_error_from_any_source() {
    let refused = util::Call::sh("true").opt(&["--tool-deny", "rm"]).run();
    refused.expect_code(125);
    refused.check(
        refused.stderr_text().contains("needs the session layer"),
        &refused.stderr_text(),
    );
    for (variable, value) in [
        ("MCP_BOUND_TOOL_DENY", "rm"),
        ("MCP_BOUND_TOOL_ALLOW", "read_*"),
        ("MCP_BOUND_TOOL_APPROVE_CMD", "true"),
    ] {
        for session_off in [&[][..], &["--mcp", "--session", "off"]] {
            let marker = tempfile::tempdir().unwrap();
            let ran = marker.path().join("ran");
            let done = util::Call::sh(&format!("touch {}", ran.display()))
                .opt(session_off)
                .env(variable, value)
                .without_record()
                .run();
            done.expect_code(125);
            let stderr = done.stderr_text();
            done.check(
                stderr.lines().count() == 1
                    && stderr.contains(variable)
                    && stderr.contains("needs the session layer"),
                &format!("{variable}: one line naming it: {stderr}"),
            );
            done.check(!ran.exists(), &format!("{variable}: nothing ran"));
        }
    }
    // MCP_BOUND_TOOL_APPROVE names which tools ask: with no approver,
    // none would, so it is refused too.
    let done = util::Call::sh("true")
        .opt(&["--mcp"])
        .env("MCP_BOUND_TOOL_APPROVE", "write_*")
        .without_record()
        .run();
    done.expect_code(125);
    // A bound on the approver from the environment is only tuning.
    let fine = util::Call::sh("true")
        .env("MCP_BOUND_TOOL_APPROVAL_TIMEOUT", "5s")
        .run();
    fine.expect_state("completed", 0);
}

#[test]
fn a_tools_list_too_large_to_read_under_a_policy_is_refused_not_streamed() {
    let mut run = server(&[])
        .opt(&[
            "--mcp",
            "--tool-deny",
            "secret",
            "--max-message-bytes",
            "2K",
        ])
        .start();
    run.send(&request(json!(1), "tools/list", json!({"generate": 100})));
    let answer = run.read_line();
    let text = String::from_utf8_lossy(&answer).to_string();
    assert!(
        !text.contains("secret"),
        "the denied tool never shows: {text}"
    );
    let answer = parse(&answer);
    assert_eq!(answer["id"], 1);
    assert_eq!(
        answer["error"]["data"]["mcp_bound"]["reason"], "tools_list_unreadable",
        "{answer}"
    );
    run.send(&request(json!(2), "echo", json!({"after": true})));
    assert_eq!(parse(&run.read_line())["id"], 2, "the session goes on");
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/tool_gate/lists_refused", json!(1));
}

#[test]
fn the_approvers_cpu_is_counted_apart_from_the_servers_usage() {
    let dir = tempfile::tempdir().unwrap();
    let (mut run, _) = gated(dir.path(), &[]);
    run.send(&call(1, "burn", json!({})));
    assert_eq!(parse(&run.read_line())["result"]["ran"], "burn");
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0);
    let cpu = done.field("/mcp/tool_gate/approver_cpu");
    let approver = cpu["user_ms"].as_u64().unwrap() + cpu["sys_ms"].as_u64().unwrap();
    let usage = done.field("/usage/user_ms").as_u64().unwrap()
        + done.field("/usage/sys_ms").as_u64().unwrap();
    done.check(
        approver >= 500,
        &format!("the approver's 0.6 s of CPU: {cpu}"),
    );
    done.check(
        usage < approver,
        &format!("the server's usage ({usage} ms) does not carry the approver's ({approver} ms)"),
    );
}

/// The approver sees the arguments the server runs. A call whose
/// `arguments` are given twice or spelled otherwise is refused, as is one
/// whose arguments strict JSON cannot carry (NaN): before, the approver
/// got `null` for each and the server ran the real ones. NaN elsewhere in
/// params no longer hides the arguments from it.
#[test]
fn the_approver_sees_the_arguments_the_server_runs_or_the_call_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (mut run, journal) = gated(dir.path(), &["--tool-approve", "ok*"]);
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok_a","arguments":{"cmd":"ls"},"arguments":{"cmd":"rm -rf /"}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ok_b","arguments":{"n":NaN,"cmd":"rm"}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ok_d","Arguments":{"cmd":"rm"}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ok_c","arguments":{"cmd":"ls"},"_meta":{"x":NaN}}}"#,
    ] {
        run.send(format!("{line}\n").as_bytes());
    }
    let answers: Vec<Value> = (0..4).map(|_| parse(&run.read_line())).collect();
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/tool_gate/approvers_asked", json!(1));
    let refusal = |id: u64| {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .map(|a| a["error"]["data"]["mcp_bound"]["refusal"].clone())
    };
    done.check(
        [refusal(1), refusal(2), refusal(4)]
            == [
                Some(json!("duplicate_key")),
                Some(json!("not_strict_json")),
                Some(json!("case_variant_key")),
            ],
        &format!("refused: {answers:?}"),
    );
    done.check(
        answers
            .iter()
            .any(|a| a["id"] == 3 && a["result"]["ran"] == "ok_c"),
        &format!("approved and run: {answers:?}"),
    );
    for id in [1, 2, 4] {
        done.check(
            !dir.path().join(format!("{id}.json")).exists(),
            &format!("the approver was not asked about {id}"),
        );
    }
    let asked: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("3.json")).unwrap()).unwrap();
    done.check(
        asked["arguments"] == json!({"cmd": "ls"}),
        &format!("the approver saw the real arguments: {asked}"),
    );
    let (ok, report) = util::verify_report(&journal);
    done.check(ok, &format!("verify: {report}"));
}

/// Under a policy by name, a tools/list whose id the table cannot track
/// (an object, `true`, over 1 KiB) or that comes with a null id was
/// answered unfiltered, the denied tools listed. Now each is refused.
#[test]
fn a_tools_list_the_gate_cannot_track_is_refused_not_answered_unfiltered() {
    let dir = tempfile::tempdir().unwrap();
    let journal = journal_in(dir.path());
    let mut run = server(&[])
        .opt(&[
            "--mcp",
            "--tool-deny",
            "rm*",
            "--journal",
            journal.to_str().unwrap(),
        ])
        .start();
    let long = format!("\"{}\"", "x".repeat(1100));
    let tools = r#"{"tools":[{"name":"rm_all"},{"name":"read"}]}"#;
    for id in [r#"{"a":1}"#, "true", "null", long.as_str(), "7"] {
        run.send(
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{tools}}}"#)
                .as_bytes(),
        );
        run.send(b"\n");
    }
    let answers: Vec<Value> = (0..5).map(|_| parse(&run.read_line())).collect();
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0);
    let listed: Vec<&Value> = answers.iter().filter(|a| a["result"].is_object()).collect();
    done.check(
        listed.len() == 1
            && listed[0]["id"] == 7
            && listed[0]["result"]["tools"] == json!([{"name": "read"}]),
        &format!("only the tracked list is answered, filtered: {answers:?}"),
    );
    let refusals: Vec<Value> = answers
        .iter()
        .filter(|a| a["error"]["code"] == -32600)
        .map(|a| a["error"]["data"]["mcp_bound"]["refusal"].clone())
        .collect();
    done.check(
        refusals
            == [
                json!("untracked_id"),
                json!("untracked_id"),
                json!("null_id"),
                json!("untracked_id"),
            ],
        &format!("each other refused: {answers:?}"),
    );
    let (ok, report) = util::verify_report(&journal);
    done.check(ok, &format!("verify: {report}"));
}

/// An approver is contained as the server's tree is: one that leaves a
/// setsid grandchild behind (here it approves first) must not outlive
/// mcp-bound, in either containment, whether the session ends or
/// mcp-bound is SIGKILLed (then its watchdog ends it). Before, approvers
/// had no cgroup and no mark, and such a grandchild escaped the cgroup.
#[test]
fn an_approvers_escaped_grandchild_does_not_outlive_mcp_bound() {
    for (mode, kill) in [
        ("cgroup", false),
        ("cgroup", true),
        ("group", false),
        ("group", true),
    ] {
        if let Some(why) = util::no_cgroup_here().filter(|_| mode == "cgroup") {
            skipped!("the cgroup half: {why}");
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("approver.sh");
        let escaped = dir.path().join("escaped");
        std::fs::write(
            &script,
            // The grandchild is in a session of its own before the
            // approver exits (whose group mcp-bound then ends).
            format!(
                "setsid sh -c 'echo $$ > {0}.new; mv {0}.new {0}; exec sleep 300' </dev/null >/dev/null 2>&1 &\n\
                 while [ ! -s {0} ]; do :; done\nexit 0\n",
                escaped.display()
            ),
        )
        .unwrap();
        let approver = format!("sh {}", script.display());
        let mut run = server(&[])
            .opt(&["--mcp", "--contain", mode, "--tool-approve-cmd", &approver])
            .start();
        if mode == "cgroup" && run.call().record_path().exists() {
            let record: Value = serde_json::from_str(
                &std::fs::read_to_string(run.call().record_path()).unwrap_or_default(),
            )
            .unwrap_or_default();
            if record["contain"]["method"] != "cgroup" && !record.is_null() {
                skipped!("no cgroup can be made here: the cgroup half");
                run.close_stdin();
                run.finish();
                continue;
            }
        }
        run.send(&call(1, "ok_go", json!({})));
        assert_eq!(parse(&run.read_line())["result"]["ran"], "ok_go");
        wait_for(&escaped);
        let pid: u64 = std::fs::read_to_string(&escaped)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        if kill {
            run.kill_and_wait_for_watchdog();
            // The harness fails if anything tagged is left.
            run.finish();
        } else {
            run.close_stdin();
            run.finish().expect_state("shut_down", 0);
        }
        util::wait_gone(pid);
    }
}

/// `--tool-approve-via command` names a command that must be given: one
/// line, exit 125, nothing started.
#[test]
fn approving_via_a_command_that_is_not_given_is_refused() {
    let stderr = util::refused(&["--mcp", "--tool-approve-via", "command"]);
    assert_eq!(
        stderr,
        "mcp-bound: --tool-approve-via command asks --tool-approve-cmd, which is not given: give it, or --tool-approve-via host\n"
    );
}
