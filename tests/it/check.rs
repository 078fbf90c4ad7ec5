//! `mcp-bound check`: the journal `log`'s tests write with the real
//! binary (a call that completes, one that times out, one its approver
//! denies, an MCP session with a tool call run and one the gate denies),
//! plus a session with no gate whose requests are all journaled, held to
//! each expectation: each passes once and fails once, with its reason.
//! JUnit output parses (Python's xml.etree); a broken chain fails the
//! check; a torn last line is a warning.

use crate::util;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use util::{parse_message as parse, rpc_request as request, server};

/// `check` with these arguments: its exit, stdout and stderr.
fn check(args: &[&str]) -> (i32, String, String) {
    util::subcommand("check", args)
}

/// The outcome line of `name` in a text report: PASS or FAIL, and why.
fn outcome<'a>(text: &'a str, name: &str) -> (&'a str, &'a str) {
    text.lines()
        .find_map(|line| {
            let (mark, rest) = line.split_once("  ")?;
            let detail = rest.strip_prefix(name)?.strip_prefix(": ")?;
            Some((mark, detail))
        })
        .unwrap_or_else(|| panic!("no outcome {name}: {text}"))
}

/// Check `journal` with `options`; the exit and the one outcome named.
fn holds(journal: &Path, options: &[&str], name: &str) -> (i32, String, String) {
    let mut args = options.to_vec();
    args.push(journal.to_str().unwrap());
    let (code, out, err) = check(&args);
    assert!(
        err.is_empty() || err.contains("warning"),
        "check {args:?}: {err}"
    );
    let (mark, detail) = outcome(&out, name);
    let expected = if mark == "PASS" { 0 } else { 1 };
    assert_eq!(code, expected, "check {args:?}:\n{out}");
    (code, mark.to_string(), detail.to_string())
}

/// A session with no tool gate and every request journaled: a tool
/// call that reaches the server unapproved, and a request that takes
/// 200 ms (the fixture's sleep).
fn ungated(dir: &Path) -> PathBuf {
    let journal = dir.join("ungated.jsonl");
    let mut run = server(&[])
        .opt(&[
            "--mcp",
            "--journal-requests",
            "all",
            "--journal",
            journal.to_str().unwrap(),
        ])
        .start();
    run.send(&request(
        json!(1),
        "tools/call",
        json!({"name": "search", "arguments": {}}),
    ));
    assert_eq!(parse(&run.read_line())["result"]["ran"], "search");
    run.send(&request(json!(2), "sleep", json!({"ms": 200})));
    assert_eq!(parse(&run.read_line())["id"], 2);
    run.close_stdin();
    run.finish().expect_state("shut_down", 0);
    journal
}

#[test]
fn each_expectation_passes_and_fails_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let journal = crate::log::written(dir.path());
    let all = crate::log::entries(&journal);
    let intents: Vec<&Value> = all.iter().filter(|e| e["kind"] == "intent").collect();
    let timed_out = all
        .iter()
        .find(|e| e["kind"] == "terminal" && e["state"] == "timed_out")
        .unwrap();

    let (_, _, why) = holds(&journal, &["--expect-tool", "read_*"], "expect-tool read_*");
    assert!(
        why.starts_with("called once, first: read_file in call"),
        "{why}"
    );
    let (_, mark, why) = holds(&journal, &["--expect-tool", "rm"], "expect-tool rm");
    assert_eq!(mark, "FAIL");
    assert!(
        why.contains("denied once (a denial is not a call)"),
        "{why}"
    );

    let (_, mark, _) = holds(&journal, &["--forbid-tool", "rm"], "forbid-tool rm");
    assert_eq!(mark, "PASS", "a denial is not a call");
    let (_, mark, why) = holds(&journal, &["--forbid-tool", "read_*"], "forbid-tool read_*");
    assert_eq!(mark, "FAIL");
    assert!(why.contains("read_file in call"), "{why}");

    let (_, mark, _) = holds(&journal, &["--max-duration", "1h"], "max-duration 1h");
    assert_eq!(mark, "PASS");
    let (_, mark, why) = holds(&journal, &["--max-duration", "50ms"], "max-duration 50ms");
    assert_eq!(mark, "FAIL");
    // The worst offender: a call of the longest duration (the first of a tie).
    let terminals = all.iter().filter(|e| e["kind"] == "terminal");
    let most = terminals
        .clone()
        .filter_map(|e| e["duration_ms"].as_u64())
        .max();
    let longest = terminals
        .filter(|e| e["duration_ms"].as_u64() == most)
        .map(|e| format!("the longest: call {} ", e["call_id"].as_str().unwrap()))
        .next()
        .unwrap();
    assert!(why.contains(&longest), "the worst offender, named: {why}");

    let first = intents[0]["ts"].as_str().unwrap();
    let options = ["--expect-state", "completed", "--until", first];
    let (_, mark, why) = holds(&journal, &options, "expect-state completed");
    assert_eq!(mark, "PASS", "--until keeps the first call only: {why}");
    assert!(why.starts_with("1 call checked"), "{why}");
    let (_, mark, why) = holds(&journal, &options[..2], "expect-state completed");
    assert_eq!(mark, "FAIL");
    assert!(why.starts_with("3 calls did not end completed"), "{why}");
    let worst = timed_out["call_id"].as_str().unwrap();
    assert!(
        why.contains(&format!("call {worst} ended timed_out")),
        "{why}"
    );
    let since = intents[3]["ts"].as_str().unwrap();
    let options = ["--expect-state", "shut_down", "--since", since];
    let (_, mark, _) = holds(&journal, &options, "expect-state shut_down");
    assert_eq!(mark, "PASS");

    let (_, mark, why) = holds(&journal, &["--no-unfinished"], "no-unfinished");
    assert_eq!(mark, "PASS", "{why}");
    // The journal cut before its last terminal entry: a prefix of the
    // chain is intact, and the MCP call in it never ended.
    let text = std::fs::read_to_string(&journal).unwrap();
    let cut = dir.path().join("cut.jsonl");
    let kept: Vec<&str> = text.lines().collect();
    std::fs::write(&cut, kept[..kept.len() - 1].join("\n") + "\n").unwrap();
    let (_, mark, why) = holds(&cut, &["--no-unfinished"], "no-unfinished");
    assert_eq!(mark, "FAIL");
    let mcp = intents[3]["call_id"].as_str().unwrap();
    assert!(
        why.contains(&format!("call {mcp} has no terminal entry")),
        "{why}"
    );

    let (_, mark, why) = holds(&journal, &["--no-unapproved"], "no-unapproved");
    assert_eq!(mark, "PASS", "the gate approved read_file: {why}");
    let ungated = ungated(dir.path());
    let (_, mark, why) = holds(&ungated, &["--no-unapproved"], "no-unapproved");
    assert_eq!(mark, "FAIL");
    assert!(
        why.contains("search in call") && why.ends_with("no tool gate"),
        "{why}"
    );

    let options = ["--max-duration", "1h", "--requests"];
    let (_, mark, _) = holds(&ungated, &options, "max-duration 1h (requests)");
    assert_eq!(mark, "PASS");
    // The worst offender is the longest response the journal holds (the
    // 200 ms sleep, unless the server's start made its first answer slower).
    let responses: Vec<Value> = crate::log::entries(&ungated)
        .into_iter()
        .filter(|e| e["kind"] == "mcp_response")
        .collect();
    let most = responses
        .iter()
        .filter_map(|e| e["duration_ms"].as_u64())
        .max();
    let longest = responses
        .iter()
        .find(|e| e["duration_ms"].as_u64() == most)
        .unwrap();
    let options = ["--max-duration", "100ms", "--requests"];
    let (_, mark, why) = holds(&ungated, &options, "max-duration 100ms (requests)");
    assert_eq!(mark, "FAIL");
    let named = match longest["method"].as_str().unwrap() {
        "tools/call" => "tools/call search (request 1 of call".to_string(),
        method => format!("{method} (request {} of call", longest["request_id"]),
    };
    assert!(why.contains(&format!("the longest: {named}")), "{why}");
}

#[test]
fn a_lifecycle_file_is_matched_in_order_within_one_call() {
    let dir = tempfile::tempdir().unwrap();
    let journal = crate::log::written(dir.path());
    let expect = |name: &str, steps: Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, json!({ "lifecycle": steps }).to_string()).unwrap();
        path
    };
    let held = expect(
        "held.json",
        json!([
            {"kind": "intent", "session_id": "s2"},
            {"kind": "mcp_request", "method": "tools/call", "name": "read_file"},
            {"kind": "mcp_response", "method": "tools/call", "outcome": "result"},
            {"kind": "mcp_response", "outcome": "denied"},
            {"kind": "terminal", "state": "shut_down"}
        ]),
    );
    let name = format!("expect {}", held.display());
    let (_, mark, why) = holds(&journal, &["--expect", held.to_str().unwrap()], &name);
    assert_eq!(mark, "PASS", "{why}");
    assert!(why.ends_with("holds all 5 steps in order"), "{why}");

    // The same steps, two swapped: the order is part of the lifecycle.
    let swapped = expect(
        "swapped.json",
        json!([
            {"kind": "intent", "session_id": "s2"},
            {"kind": "mcp_response", "outcome": "denied"},
            {"kind": "mcp_response", "method": "tools/call", "outcome": "result"},
            {"kind": "terminal", "state": "shut_down"}
        ]),
    );
    let name = format!("expect {}", swapped.display());
    let (_, mark, why) = holds(&journal, &["--expect", swapped.to_str().unwrap()], &name);
    assert_eq!(mark, "FAIL");
    assert!(
        why.contains("got furthest, to step 2, and never had the next: {\"kind\":\"mcp_response\""),
        "{why}"
    );

    // A bad file starts nothing: one line, exit 2.
    let bad = expect("bad.json", json!([{"kind": "start"}]));
    let (code, out, err) = check(&["--expect", bad.to_str().unwrap(), journal.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(
        err.contains("step 1: kind \"start\" is not one of"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn junit_has_a_testcase_per_expectation_and_parses() {
    let dir = tempfile::tempdir().unwrap();
    let journal = crate::log::written(dir.path());
    let (code, xml, err) = check(&[
        "--format",
        "junit",
        "--forbid-tool",
        "read_<*>",
        "--expect-state",
        "completed",
        journal.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    let parsed = util::python_reading(
        "import sys, xml.etree.ElementTree as ET\n\
         root = ET.fromstring(sys.stdin.read())\n\
         for case in root.iter('testcase'):\n\
         \x20   print(case.get('name'), 'FAIL' if case.find('failure') is not None else 'PASS')\n\
         print(root.get('tests'), root.get('failures'))",
        xml.as_bytes(),
    );
    assert!(parsed.status.success(), "{xml}");
    assert_eq!(
        String::from_utf8_lossy(&parsed.stdout),
        "verify PASS\nforbid-tool read_<*> PASS\nexpect-state completed FAIL\n3 1\n",
        "{xml}"
    );
}

#[test]
fn a_broken_chain_fails_the_check_and_a_torn_last_line_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let journal = crate::log::written(dir.path());
    let broken = crate::log::broken(dir.path(), &journal);
    let (code, mark, why) = holds(&broken, &["--forbid-tool", "rm"], "verify");
    assert_eq!((code, mark.as_str()), (1, "FAIL"));
    assert!(why.contains("(HASH_MISMATCH"), "{why}");
    let (_, out, _) = check(&["--forbid-tool", "rm", broken.to_str().unwrap()]);
    assert_eq!(
        outcome(&out, "forbid-tool rm").0,
        "PASS",
        "still checked: {out}"
    );

    let torn = dir.path().join("torn.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    std::fs::write(&torn, format!("{text}{{\"v\":1,\"seq\":99,\"pr")).unwrap();
    let (code, mark, why) = holds(&torn, &["--no-unfinished"], "verify");
    assert_eq!((code, mark.as_str()), (0, "PASS"));
    assert!(why.contains("warning: line"), "{why}");

    let (code, _, err) = check(&[dir.path().join("none.jsonl").to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
}

/// A duration and a state are read as everywhere else in mcp-bound: a
/// bare number is seconds (GNU timeout's DURATION), and a state not in
/// the record's vocabulary is a usage error naming those that are, never
/// a filter that quietly matches nothing.
#[test]
fn a_duration_and_a_state_are_read_as_everywhere_else() {
    let dir = tempfile::tempdir().unwrap();
    let journal = crate::log::written(dir.path());
    let j = journal.to_str().unwrap();
    let (_, mark, _) = holds(&journal, &["--max-duration", "3600"], "max-duration 1h");
    assert_eq!(mark, "PASS", "3600 is an hour");
    let (_, mark, _) = holds(&journal, &["--max-duration", "0.05"], "max-duration 50ms");
    assert_eq!(
        mark, "FAIL",
        "0.05 is 50 ms, and a call timed out at 100 ms"
    );
    for (sub, args) in [
        ("check", vec!["--expect-state", "complete", j]),
        ("log", vec!["--state", "timeout", j]),
    ] {
        let (code, out, err) = util::subcommand(sub, &args);
        assert_eq!((code, out.as_str()), (2, ""), "{sub} {args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("completed") && err.contains("timed_out"),
            "{err}"
        );
    }
    let (code, out, err) = util::subcommand("log", &["--state", "unfinished", j]);
    assert_eq!(
        (code, out.as_str()),
        (0, ""),
        "no call is unfinished: {err}"
    );
    let (code, out, err) = util::subcommand("log", &["--since", "3600", j]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.lines().count(),
        5,
        "a header and the hour's four calls: {out}"
    );
}

/// A client reuses a request id while the first request with it is in
/// flight (no gate: the server runs both, mcp-bound journals the second
/// as `duplicate_id`). Every reader still counts the first: `check
/// --forbid-tool rm` fails, `log --tool rm` lists the call, `log
/// --requests` has its row, and the report's tool table counts it.
#[test]
fn a_reused_request_id_hides_no_call_from_the_readers() {
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let journal = dir.path().join("audit.jsonl");
    let mut run = server(&["--wait-for", go.to_str().unwrap()])
        .opt(&["--mcp", "--journal", journal.to_str().unwrap()])
        .start();
    let call = |tool: &str| {
        request(
            json!(1),
            "tools/call",
            json!({"name": tool, "arguments": {}}),
        )
    };
    run.send(&[call("rm"), call("read_file")].concat());
    // Both journaled before the server reads either.
    let requests = || {
        std::fs::read_to_string(&journal)
            .unwrap_or_default()
            .matches("\"kind\":\"mcp_request\"")
            .count()
    };
    while requests() < 2 {
        std::thread::yield_now();
    }
    std::fs::write(&go, "").unwrap();
    assert_eq!(parse(&run.read_line())["result"]["ran"], "rm");
    assert_eq!(parse(&run.read_line())["result"]["ran"], "read_file");
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0);
    let stderr = done.stderr_text();
    done.check(stderr.contains("tools/call rm"), "the server ran rm");
    let j = journal.to_str().unwrap();
    let (code, out, _) = check(&["--forbid-tool", "rm", j]);
    assert_eq!(code, 1, "rm reached the server: {out}");
    let (code, out, _) = check(&["--expect-tool", "read_file", j]);
    assert_eq!(code, 0, "so did read_file: {out}");
    let (code, out, err) = util::subcommand("log", &["--json", "--tool", "rm", j]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.lines().count(),
        1,
        "log --tool rm lists the call: {out}"
    );
    let (_, out, _) = util::subcommand("log", &["--json", "--requests", j]);
    let tools: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["tool"].clone())
        .collect();
    assert!(
        tools.contains(&json!("rm")) && tools.contains(&json!("read_file")),
        "{out}"
    );
    let page = dir.path().join("report.html");
    let (code, _, err) = util::subcommand("report", &[j, "-o", page.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(">rm<"), "the report's tool table names rm");
}
