//! The MCP session layer (--session jsonrpc, the default under --mcp),
//! driven through mcp-bound with our own JSON-RPC fixture server: request
//! deadlines, answers for a server that died, server-to-client requests,
//! batches, a response glued to a stray print, the per-request journal,
//! back-pressure, and the host's shutdown.

use crate::util;

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use util::{
    Call, Started, json_line as line, parse_message as parse, rpc_request as request, server,
};

#[test]
fn a_method_s_own_request_timeout_beats_the_default() {
    let mut run = server(&[])
        .opt(&[
            "--mcp",
            "--request-timeout",
            "60s",
            "--request-timeout",
            "sleep=300ms",
        ])
        .start();
    run.send(&request(json!(1), "sleep", json!({"ms": 60_000})));
    let answer = parse(&run.read_line());
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["error"]["data"]["mcp_bound"]["timeout_ms"], 300);
    assert_eq!(answer["error"]["data"]["mcp_bound"]["method"], "sleep");
    run.send(&request(json!(2), "echo", json!({})));
    assert_eq!(parse(&run.read_line())["id"], 2, "a later call still works");
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/limits/request_timeout_ms", json!(60_000))
        .expect("/mcp/limits/method_timeouts_ms", json!({"sleep": 300}))
        .expect("/mcp/synthesized/request_timeout", json!(1));
}

#[test]
fn a_request_with_no_response_in_time_is_answered_cancelled_and_its_late_response_dropped() {
    let mut run = server(&[])
        .opt(&["--mcp", "--request-timeout", "400ms"])
        .start();
    // Answers late (after the cancellation) on purpose.
    run.send(&request(
        json!(7),
        "sleep",
        json!({"ms": 1500, "late": true}),
    ));
    // Dropped by the server when the cancellation comes.
    run.send(&request(json!("s"), "sleep", json!({"ms": 60_000})));
    let mut answers = [parse(&run.read_line()), parse(&run.read_line())];
    answers.sort_by_key(|a| a["id"].to_string());
    for answer in &answers {
        assert_eq!(answer["error"]["code"], -32001, "{answer}");
        assert_eq!(
            answer["error"]["data"]["mcp_bound"]["reason"],
            "request_timeout"
        );
        assert_eq!(answer["error"]["data"]["mcp_bound"]["timeout_ms"], 400);
    }
    assert_eq!(answers[0]["id"], "s", "string ids stay strings");
    assert_eq!(answers[1]["id"], 7, "number ids stay numbers");
    // A later call still works, and comes after the late response the
    // server sends for 7 (which must not reach us).
    run.send(&request(json!(8), "sleep", json!({"ms": 1500})));
    let next = parse(&run.read_line());
    assert_eq!(next["id"], 8, "the late response for 7 was dropped: {next}");
    assert_eq!(next["error"]["code"], -32001);
    run.send(&request(json!(9), "echo", json!({"after": true})));
    let echoed = parse(&run.read_line());
    assert_eq!(
        echoed,
        json!({"jsonrpc": "2.0", "id": 9, "result": {"after": true}})
    );
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/synthesized/request_timeout", json!(3))
        .expect("/mcp/cancellations_sent", json!(3));
    done.check(
        done.field("/mcp/late_responses_dropped").as_u64() >= Some(1),
        "the late response for 7 was counted as dropped",
    );
    let stderr = done.stderr_text();
    done.check(
        stderr.contains("NOTIFIED notifications/cancelled \"s\"")
            && stderr.contains("CANCELLED \"s\""),
        "the server heard the cancellation and dropped the request",
    );
    let ids: Vec<Value> = done
        .stdout
        .split_inclusive(|b| *b == b'\n')
        .map(|l| parse(l)["id"].clone())
        .collect();
    done.check(
        ids.iter().filter(|id| **id == json!(7)).count() == 1,
        "one response per id",
    );
}

#[test]
fn progress_restarts_the_deadline_only_when_asked() {
    let progress = |id: u64| {
        request(
            json!(id),
            "progress",
            json!({"count": 6, "every": 300, "_meta": {"progressToken": format!("p{id}")}}),
        )
    };
    for (flag, expect_done) in [(true, true), (false, false)] {
        // The server is up (an echo no deadline times) before the timed
        // request: its start is not the request's to wait for.
        let mut options = vec![
            "--mcp",
            "--request-timeout",
            "1200ms",
            "--request-timeout",
            "echo=0",
        ];
        if flag {
            options.push("--request-timeout-resets-on-progress");
        }
        let mut run = server(&[]).opt(&options).start();
        run.send(&request(json!(0), "echo", json!({})));
        assert_eq!(parse(&run.read_line())["id"], 0);
        run.send(&progress(1));
        // Progress notifications pass through, then the answer.
        let answer = loop {
            let message = parse(&run.read_line());
            if message.get("id").is_some() {
                break message;
            }
            assert_eq!(message["method"], "notifications/progress");
        };
        run.close_stdin();
        let done = run.finish();
        done.check(
            (answer["result"] == json!({"done": true})) == expect_done,
            &format!("with the flag {flag}: {answer}"),
        );
        done.expect("/mcp/limits/timeout_resets_on_progress", json!(flag));
    }
}

#[test]
fn a_crash_mid_call_answers_with_32000_and_the_stderr_tail_at_once() {
    let mut run = server(&[]).opt(&["--mcp"]).start();
    run.send(&request(json!(1), "sleep", json!({"ms": 60_000})));
    let sent = Instant::now();
    run.send(&request(
        json!(2),
        "crash",
        json!({"stderr": "Traceback: KeyError 'token=abc123secretvalue'\n", "code": 3}),
    ));
    let mut answers = [parse(&run.read_line()), parse(&run.read_line())];
    let waited = sent.elapsed();
    answers.sort_by_key(|a| a["id"].as_u64());
    let done = run.finish();
    for (answer, id) in answers.iter().zip([1, 2]) {
        done.check(answer["id"] == id, &format!("an answer for {id}: {answer}"));
        done.check(answer["error"]["code"] == -32000, "-32000");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        done.check(
            message.starts_with("MCP server exited before responding (exit 3)\n\n")
                && message.contains("Traceback: KeyError")
                && !message.contains("abc123secretvalue"),
            "the message says how the server ended, and what it said last (masked)",
        );
        let data = &answer["error"]["data"]["mcp_bound"];
        done.check(data["reason"] == "server_exited", "the reason");
        done.check(data["exit"] == json!({"code": 3}), "the exit");
        let tail = data["stderr_tail"].as_str().unwrap_or_default();
        done.check(tail.contains("Traceback: KeyError"), "the stderr tail");
        done.check(!tail.contains("abc123secretvalue"), "masked");
        done.check(data["call_id"] == done.field("/call_id").clone(), "call id");
    }
    // Loose: the point is "not at the host's own timeout".
    done.check(waited < Duration::from_secs(10), "answered promptly");
    done.expect_state("completed", 3)
        .expect("/mcp/in_flight_at_exit", json!(2))
        .expect("/mcp/synthesized/server_exited", json!(2))
        .expect(
            "/mcp/interrupted",
            json!([{"id": 1, "method": "sleep", "name": null},
                   {"id": 2, "method": "crash", "name": null}]),
        );
}

#[test]
fn a_server_request_during_a_call_goes_to_the_client_and_its_answer_back() {
    let mut run = server(&[]).opt(&["--mcp"]).start();
    run.send(&request(json!(1), "ask", json!({})));
    // The server asks with the same id 1: a request, not our response.
    let asked = parse(&run.read_line());
    assert_eq!(
        asked,
        json!({"jsonrpc": "2.0", "id": 1, "method": "roots/list"})
    );
    run.send(&line(
        json!({"jsonrpc": "2.0", "id": 1, "result": {"roots": ["/w"]}}),
    ));
    let answer = parse(&run.read_line());
    assert_eq!(answer["result"], json!({"roots": {"roots": ["/w"]}}));
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/client/requests", json!(1))
        .expect("/mcp/client/responses", json!(1))
        .expect("/mcp/server/requests", json!(1))
        .expect("/mcp/server/responses", json!(1))
        .expect("/mcp/unmatched_responses", json!(0))
        .expect("/mcp/in_flight_at_exit", json!(0));
}

#[test]
fn batches_pass_both_ways_and_each_element_is_tracked() {
    let mut run = server(&[]).opt(&["--mcp"]).start();
    let batch = b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":{\"a\":1}}, {\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}, {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"echo\"}]\n";
    run.send(batch);
    let answer = parse(&run.read_line());
    assert_eq!(
        answer,
        json!([{"jsonrpc":"2.0","id":1,"result":{"a":1}},{"jsonrpc":"2.0","id":2,"result":{}}])
    );
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/client/requests", json!(2))
        .expect("/mcp/client/notifications", json!(1))
        .expect("/mcp/server/responses", json!(2))
        .expect("/mcp/peak_in_flight", json!(2))
        .expect("/stdout/lines_forwarded", json!(1))
        .expect("/stdout/lines_diverted", json!(0));
    done.check(
        done.stderr_text()
            .contains("NOTIFIED notifications/initialized"),
        "the server got the batch whole",
    );
}

#[test]
fn a_response_glued_to_a_stray_print_still_reaches_the_client() {
    let mut run = server(&[]).opt(&["--mcp"]).start();
    run.send(&request(json!(2), "glued", json!({"ok": 1})));
    let answer = run.read_line();
    assert_eq!(
        answer,
        b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"ok\":1}}\n"
    );
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/stdout/lines_salvaged", json!(1))
        .expect("/stdout/lines_forwarded", json!(1))
        .expect("/stdout/lines_diverted", json!(1))
        .expect("/stdout/first_diverted", json!("Loading…"))
        .expect("/mcp/in_flight_at_exit", json!(0));
    done.check(
        done.field("/stderr/excerpt")
            .as_str()
            .unwrap()
            .contains("[mcp-bound: stdout junk before a JSON-RPC message diverted, the message forwarded] Loading…\n"),
        "the junk is in the capture, marked",
    );
}

#[test]
fn a_journal_with_k_calls_holds_k_request_response_pairs_and_verifies() {
    let call = server(&[]).opt(&["--mcp", "--request-timeout", "tools/call=2s", "--journal"]);
    let journal = call.path("audit.jsonl");
    let mut run = call.opt(&[journal.to_str().unwrap()]).start();
    // The server is up before the calls are timed (a loaded machine
    // starts Python slowly); a ping is not audited.
    let warm = request(json!("w"), "ping", json!({}));
    let mut sent = warm.len();
    run.send(&warm);
    parse(&run.read_line());
    for id in 0..5 {
        let line = request(
            json!(id),
            "tools/call",
            json!({"name": format!("tool{id}")}),
        );
        sent += line.len();
        run.send(&line);
        parse(&run.read_line());
    }
    // Not audited by default: ping.
    let ping = request(json!("p"), "ping", json!({}));
    sent += ping.len();
    run.send(&ping);
    parse(&run.read_line());
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0).expect(
        "/mcp/client_bytes",
        json!({"read": sent, "to_server": sent, "discarded": 0}),
    );
    let text = std::fs::read_to_string(&journal).unwrap();
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    done.check(
        kinds.iter().filter(|k| **k == "mcp_request").count() == 5
            && kinds.iter().filter(|k| **k == "mcp_response").count() == 5,
        &format!("five pairs: {kinds:?}"),
    );
    done.check(
        kinds.first() == Some(&"genesis")
            && kinds[1] == "intent"
            && kinds.last() == Some(&"terminal"),
        "inside the call's intent and terminal",
    );
    let first = entries.iter().find(|e| e["kind"] == "mcp_request").unwrap();
    done.check(
        first["name"] == "tool0" && first["request_id"] == 0,
        "name and id",
    );
    done.check(
        first["params_sha256"].as_str().map(str::len) == Some(64) && !text.contains("\"params\""),
        "the params' hash, never the params",
    );
    let response = entries
        .iter()
        .find(|e| e["kind"] == "mcp_response")
        .unwrap();
    done.check(
        response["outcome"] == "result" && response["error_code"].is_null(),
        "outcome",
    );
    let (ok, report) = util::verify_report(&journal);
    done.check(ok, &format!("verify: {report}"));
    done.check(
        report["unfinished_requests"] == json!([]) && report["unfinished"] == json!([]),
        "nothing unfinished",
    );
}

#[test]
fn a_client_that_writes_faster_than_a_stalled_server_reads_is_held_back() {
    // The server never reads its stdin; we never read our stdout. We write
    // until our writes would block: mcp-bound must stop reading, not
    // buffer, whether requests wait for the server or answers (too many
    // in flight) wait for us.
    for limit in ["4096", "1"] {
        held_back(limit);
    }
}

fn held_back(max_in_flight: &str) {
    let run = Call::new(&["sleep", "60"])
        .opt(&["--mcp", "--max-in-flight", max_in_flight])
        .stdin(Stdio::piped());
    let mut run = run.start();
    let pid = run.pid();
    let mut stdin = run.take_stdin();
    util::set_nonblocking(&stdin);
    let pad = "x".repeat(1000);
    let (mut id, mut pending, mut from) = (0u64, Vec::new(), 0);
    let mut written = 0usize;
    let limit = 64 << 20;
    while written < limit {
        if from == pending.len() {
            id += 1;
            pending = request(json!(id), "tools/call", json!({ "pad": pad }));
            from = 0;
        }
        match stdin.write(&pending[from..]) {
            Ok(n) => {
                written += n;
                from += n;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                // Held back, or mcp-bound is between reads: it gets 2 s
                // (loose) to make room before we call it held back.
                if !util::wait_writable(&stdin, Duration::from_secs(2)) {
                    break;
                }
            }
            Err(e) => panic!("write: {e}"),
        }
    }
    let rss = util::vm_hwm_kib(pid);
    drop(stdin);
    run.signal("TERM");
    let done = run.finish();
    done.check(
        written < 8 << 20,
        &format!("held back after {written} bytes (--max-in-flight {max_in_flight})"),
    );
    done.check(rss < 32 * 1024, &format!("peak RSS {rss} KiB"));
    done.check(
        done.field("/mcp/client/requests").as_u64() > Some(0),
        "requests were tracked",
    );
}

#[test]
fn a_host_signal_with_a_request_in_flight_is_cancelled_after_dispatch_and_names_it() {
    let mut run = server(&[]).opt(&["--mcp"]).start();
    run.send(&request(json!(1), "echo", json!({})));
    parse(&run.read_line());
    run.send(&request(
        json!(5),
        "tools/call",
        json!({"name": "x", "_meta": {}}),
    ));
    parse(&run.read_line());
    run.send(&request(json!(6), "sleep", json!({"ms": 60_000})));
    // A readiness handshake: the server reads in order, so once 7 is
    // answered, the sleep before it is in flight at the server.
    run.send(&request(json!(7), "echo", json!({})));
    assert_eq!(parse(&run.read_line())["id"], 7);
    run.signal("INT");
    let done = run.finish();
    done.expect_state("cancelled_after_dispatch", 130)
        .expect("/cancel_signal", json!("INT"))
        .expect("/mcp/in_flight_at_exit", json!(1))
        .expect(
            "/mcp/interrupted",
            json!([{"id": 6, "method": "sleep", "name": null}]),
        );
    let last = done
        .stdout
        .split_inclusive(|b| *b == b'\n')
        .next_back()
        .unwrap();
    done.check(
        parse(last)["error"]["data"]["mcp_bound"]["reason"] == "server_exited",
        "the interrupted request was answered",
    );
}

#[test]
fn past_max_in_flight_a_request_is_answered_at_once() {
    let mut run = server(&[]).opt(&["--mcp", "--max-in-flight", "2"]).start();
    for id in 1..=3 {
        run.send(&request(json!(id), "sleep", json!({"ms": 60_000})));
    }
    let answer = parse(&run.read_line());
    assert_eq!(answer["id"], 3);
    assert_eq!(
        answer["error"]["data"]["mcp_bound"]["reason"],
        "too_many_in_flight"
    );
    run.close_stdin();
    // The server keeps sleeping after EOF: the stdin grace ends it.
    let done = run.finish();
    done.expect("/mcp/synthesized/too_many_in_flight", json!(1))
        .expect("/mcp/limits/max_in_flight", json!(2))
        .expect("/mcp/peak_in_flight", json!(2));
}

#[test]
fn session_options_that_would_do_nothing_are_refused() {
    for (options, needle) in [
        (
            &["--request-timeout", "5s"][..],
            "--request-timeout needs the session layer",
        ),
        (
            &[
                "--mcp",
                "--session",
                "off",
                "--request-timeout-resets-on-progress",
            ][..],
            "needs the session layer",
        ),
        (
            &["--mcp", "--session", "jsonrpc", "--stdout-guard", "off"][..],
            "cannot run with --stdout-guard off",
        ),
        (&["--mcp", "--max-in-flight", "0"][..], "--max-in-flight"),
        (
            &["--mcp", "--request-timeout", "=5s"][..],
            "a method name goes before '='",
        ),
        (&["--mcp", "--journal-requests", "all"][..], "--journal"),
    ] {
        let stderr = util::refused(options);
        assert!(stderr.contains(needle), "{options:?}: {stderr}");
    }
}

#[test]
fn session_off_keeps_the_inherited_stdin() {
    let mut run = server(&[]).opt(&["--mcp", "--session", "off"]).start();
    run.send(&request(json!(1), "echo", json!({"x": 1})));
    parse(&run.read_line());
    run.close_stdin();
    let done = run.finish();
    done.expect_state("completed", 0)
        .expect("/mcp", Value::Null);
}

#[test]
fn a_request_entry_that_cannot_be_written_keeps_the_request_from_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let (journal, received) = (dir.path().join("audit.jsonl"), dir.path().join("received"));
    let call = Call::new(&["sh", "-c", "exec cat >> \"$0\"", received.to_str().unwrap()])
        .opt(&["--mcp", "--journal", journal.to_str().unwrap()])
        .stdin(Stdio::piped());
    let mut run = call.start();
    // A notification is not audited: once the server has it, the intent
    // is in the journal and the session runs (a file handshake).
    let hello = line(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    run.send(&hello);
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read(&received).unwrap_or_default() != hello {
        assert!(
            Instant::now() < deadline,
            "the server never got the notification"
        );
        std::thread::yield_now();
    }
    // The journal can no longer be appended to.
    std::fs::rename(&journal, call_path_moved(&journal)).unwrap();
    std::fs::create_dir(&journal).unwrap();
    run.send(&request(json!(1), "tools/call", json!({"name": "rm"})));
    let done = run.finish();
    done.expect_state("failed_after_dispatch", 125);
    let error = done
        .field("/error")
        .as_str()
        .unwrap_or_default()
        .to_string();
    done.check(
        error.contains("cannot write a request entry") && error.contains("killed"),
        &error,
    );
    done.check(
        std::fs::read(&received).unwrap() == hello,
        "the request never reached the server",
    );
}

fn call_path_moved(path: &std::path::Path) -> std::path::PathBuf {
    path.with_extension("moved")
}

/// The fixture server under `--restart on-failure`, started.
fn restarting_on_failure(backoff: &str) -> Started {
    server(&[])
        .opt(&[
            "--mcp",
            "--restart",
            "on-failure",
            "--restart-backoff",
            backoff,
        ])
        .start()
}

/// `initialize` as a client sends it; the fixture answers with params.
fn initialize(capabilities: Value) -> Vec<u8> {
    request(
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": capabilities}),
    )
}

/// A session journaled to `journal` (with `options`) whose server
/// crashes once, is restarted (`--restart on-failure`) and answers, then
/// is shut down: the second server's pid.
pub(crate) fn restarted_once(journal: &std::path::Path, options: &[&str]) -> Value {
    let mut run = server(&[])
        .opt(&[
            "--mcp",
            "--restart",
            "on-failure",
            "--restart-backoff",
            "10ms",
            "--journal",
            journal.to_str().unwrap(),
        ])
        .opt(options)
        .start();
    run.send(&request(json!(1), "crash", json!({"code": 3})));
    assert_eq!(parse(&run.read_line())["error"]["code"], -32000);
    run.send(&request(json!(2), "pid", json!({})));
    let second_pid = parse(&run.read_line())["result"]["pid"].clone();
    run.close_stdin();
    run.finish()
        .expect_state("shut_down", 0)
        .expect("/mcp/restarts", json!(1));
    second_pid
}

/// Each restart is journaled inside its call, between the intent and the
/// terminal entry (mcp_restart: the attempt, the new pid, how the last
/// one ended), verify passes, and `log --call` tells it.
#[test]
fn a_restart_is_journaled_in_its_call() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("audit.jsonl");
    let second_pid = restarted_once(&journal, &[]);
    let entries = crate::log::entries(&journal);
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["genesis", "intent", "mcp_restart", "terminal"],
        "{kinds:?}"
    );
    let restart = &entries[2];
    assert_eq!(restart["call_id"], entries[1]["call_id"]);
    assert_eq!(
        (&restart["attempt"], &restart["pid"], &restart["exit"]),
        (&json!(1), &second_pid, &json!({"code": 3}))
    );
    let (ok, report) = util::verify_report(&journal);
    assert!(ok, "{report}");
    // Moved after its call's end and chained again, it is a break.
    let mut lines: Vec<String> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.swap(2, 3);
    let moved = journal.with_extension("moved.jsonl");
    crate::journal::write_lines(&moved, &crate::journal::rechained(&lines));
    let (ok, report) = util::verify_report(&moved);
    assert!(!ok, "{report}");
    assert_eq!(report["break"]["kind"], "ORPHAN_TERMINAL", "{report}");
    assert_eq!(report["break"]["line"], 4, "{report}");
    let call_id = entries[1]["call_id"].as_str().unwrap();
    let (code, out, err) = util::subcommand("log", &["--call", call_id, journal.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!(
            "restart 1: pid {second_pid}, after the last one exited 3"
        )),
        "{out}"
    );
}

#[test]
fn a_crashed_server_restarts_replays_initialize_and_never_gets_a_request_again() {
    let mut run = restarting_on_failure("10ms");
    run.send(&initialize(json!({"tools": {"listChanged": true}})));
    assert_eq!(parse(&run.read_line())["id"], 0);
    run.send(&line(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ));
    run.send(&request(json!(1), "pid", json!({})));
    let first_pid = parse(&run.read_line())["result"]["pid"].clone();
    run.send(&request(json!(2), "sleep", json!({"ms": 60_000})));
    run.send(&request(
        json!(3),
        "crash",
        json!({"stderr": "boom\n", "code": 1}),
    ));
    let mut answers = [parse(&run.read_line()), parse(&run.read_line())];
    answers.sort_by_key(|a| a["id"].as_u64());
    for answer in &answers {
        assert_eq!(answer["error"]["code"], -32000, "{answer}");
    }
    // The restarted server was initialized again: the client is told to
    // read the tools list again (the first server said it may change).
    let notice = parse(&run.read_line());
    assert_eq!(notice["method"], "notifications/tools/list_changed");
    run.send(&request(json!(4), "pid", json!({})));
    let second = parse(&run.read_line());
    assert_eq!(second["id"], 4);
    let second_pid = second["result"]["pid"].clone();
    assert_ne!(first_pid, second_pid, "a new server");
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/restarts", json!(1))
        .expect("/mcp/restart_stopped", Value::Null)
        .expect("/mcp/in_flight_at_exit", json!(0))
        .expect("/mcp/synthesized/server_exited", json!(2))
        .expect("/mcp/incarnations/0/pid", first_pid.clone())
        .expect("/mcp/incarnations/0/exit", json!({"code": 1}))
        .expect("/mcp/incarnations/0/in_flight_at_exit", json!(2))
        .expect("/mcp/incarnations/1/pid", second_pid)
        .expect("/mcp/incarnations/1/exit", json!({"code": 0}))
        .expect("/mcp/incarnations/0/era", json!("legacy"))
        .expect("/mcp/incarnations/0/protocol_version", json!("2025-06-18"))
        // The second was spoken to in the replayed initialize.
        .expect("/mcp/incarnations/1/era", json!("legacy"))
        .expect("/mcp/incarnations/1/protocol_version", json!("2025-06-18"))
        .expect("/pid", first_pid);
    let stderr = done.stderr_text();
    done.check(
        stderr.matches("REQUEST 2 sleep").count() == 1
            && stderr.matches("REQUEST 3 crash").count() == 1,
        "no request in flight at the crash was sent again",
    );
    done.check(
        stderr.contains("REQUEST \"mcp-bound-replay-1\" initialize")
            && stderr.matches("NOTIFIED notifications/initialized").count() == 2,
        "the new server was initialized under mcp-bound's own id",
    );
    let scheduled = done.events("restart_scheduled");
    done.check(
        scheduled.len() == 1 && scheduled[0]["attempt"] == 1 && scheduled[0]["backoff_ms"] == 10,
        "the restart is an event",
    );
    done.check(done.events("dispatched").len() == 2, "two dispatches");
    // Live stderr says so, between the first server's last line and the
    // second's first: a host's log does not show the start twice unsaid.
    let (before, after) = stderr
        .split_once("[mcp-bound: restarting the server (attempt 1, after exit 1) in 10ms]\n")
        .unwrap_or_else(|| panic!("no restart notice in {stderr}"));
    done.check(
        before.contains("boom\n") && after.contains("REQUEST \"mcp-bound-replay-1\" initialize"),
        "the notice sits where the restart happened",
    );
    done.check(
        !String::from_utf8_lossy(&done.stdout).contains("mcp-bound-replay"),
        "the replayed initialize's answer never reached the client",
    );
}

/// A 2026-07-28 request: its protocol version in `_meta`, no handshake.
fn modern(id: Value, method: &str, mut params: Value) -> Vec<u8> {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    request(id, method, params)
}

/// A modern client has no handshake to replay: the restarted server gets
/// no initialize, and the client no list_changed it never asked for (the
/// 2026-07-28 spec forbids unrequested notifications).
#[test]
fn a_modern_session_restarts_without_a_replay_or_an_unasked_notification() {
    let mut run = restarting_on_failure("10ms");
    run.send(&modern(json!(1), "pid", json!({})));
    let first_pid = parse(&run.read_line())["result"]["pid"].clone();
    run.send(&modern(
        json!(2),
        "crash",
        json!({"stderr": "boom\n", "code": 1}),
    ));
    assert_eq!(parse(&run.read_line())["error"]["code"], -32000);
    run.send(&modern(json!(3), "pid", json!({})));
    // The very next line is the answer: no notification came before it.
    let second = parse(&run.read_line());
    assert_eq!(second["id"], 3, "{second}");
    let second_pid = second["result"]["pid"].clone();
    assert_ne!(first_pid, second_pid, "a new server");
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/restarts", json!(1))
        .expect("/mcp/restart_stopped", Value::Null)
        .expect("/mcp/incarnations/0/era", json!("modern"))
        .expect("/mcp/incarnations/0/protocol_version", json!("2026-07-28"))
        .expect("/mcp/incarnations/1/era", json!("modern"))
        .expect("/mcp/incarnations/1/protocol_version", json!("2026-07-28"))
        .expect("/mcp/server/notifications", json!(0));
    done.check(
        !done.stderr_text().contains("initialize"),
        "no initialize reached either server",
    );
    done.check(
        !String::from_utf8_lossy(&done.stdout).contains("list_changed"),
        "the client was told nothing it did not ask for",
    );
}

/// The client hangs up while a restart waits out its backoff: nothing is
/// restarted (a session the host ended is never restarted), and what the
/// client sent before hanging up is still read and answered.
#[test]
fn a_client_that_hangs_up_during_the_backoff_gets_no_restart_and_every_answer() {
    let mut run = restarting_on_failure("10m");
    run.send(&initialize(json!({})));
    assert_eq!(parse(&run.read_line())["id"], 0);
    run.send(&request(
        json!(1),
        "crash",
        json!({"stderr": "boom\n", "code": 1}),
    ));
    assert_eq!(parse(&run.read_line())["error"]["code"], -32000);
    // The restart now waits ten minutes. One more request, then EOF.
    run.send(&request(json!(2), "pid", json!({})));
    run.close_stdin();
    let answer = parse(&run.read_line());
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(answer["error"]["code"], -32000, "{answer}");
    // The server's own crash ended it (exit 1), not the hang-up.
    let done = run.finish();
    done.expect_state("completed", 1)
        .expect("/mcp/restarts", json!(0))
        .expect("/mcp/in_flight_at_exit", json!(1))
        .expect("/mcp/synthesized/server_exited", json!(2))
        .expect("/mcp/incarnations/0/exit", json!({"code": 1}));
    done.check(done.events("dispatched").len() == 1, "one dispatch");
}

#[test]
fn restarts_stop_at_the_limit_with_a_doubling_backoff() {
    // The host keeps our stdin open; the server dies at once, every time.
    let (reader, writer) = std::io::pipe().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("server.log");
    let done = Call::sh("echo dying >&2; exit 1")
        .opt(&[
            "--stderr-log",
            log.to_str().unwrap(),
            "--mcp",
            "--restart",
            "always",
            "--max-restarts",
            "2",
            "--restart-backoff",
            "20ms",
        ])
        .stdin(Stdio::from(reader))
        .run();
    drop(writer);
    done.expect_state("completed", 1)
        .expect("/mcp/restarts", json!(2))
        .expect(
            "/mcp/restart_stopped",
            json!({"reason": "limit", "detail": null}),
        )
        .expect("/mcp/limits/restart", json!("always"))
        .expect("/mcp/limits/max_restarts", json!(2));
    let backoffs: Vec<Value> = done
        .events("restart_scheduled")
        .iter()
        .map(|e| e["backoff_ms"].clone())
        .collect();
    done.check(backoffs == [json!(20), json!(40)], &format!("{backoffs:?}"));
    done.check(
        done.field("/mcp/incarnations").as_array().map(Vec::len) == Some(3),
        "three servers ran",
    );
    done.check(
        done.stderr_text().matches("dying").count() == 3,
        "each one's stderr came through",
    );
    let text = std::fs::read_to_string(&log).unwrap();
    done.check(
        text.matches("dying\n").count() == 3
            && text.contains("[mcp-bound: restart 1 pid=")
            && text.contains("[mcp-bound: restart 2 pid="),
        &format!("the stderr log marks each restart:\n{text}"),
    );
    // on-failure does not restart a clean exit, and says so.
    let (reader, writer) = std::io::pipe().unwrap();
    let done = Call::sh("exit 0")
        .opt(&["--mcp", "--restart", "on-failure"])
        .stdin(Stdio::from(reader))
        .run();
    drop(writer);
    done.expect_state("completed", 0)
        .expect("/mcp/restarts", json!(0))
        .expect(
            "/mcp/restart_stopped",
            json!({"reason": "clean_exit", "detail": null}),
        );
}

#[test]
fn a_restarted_server_with_another_protocol_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("starts");
    let mut run = server(&["--protocol-file", counter.to_str().unwrap()])
        .opt(&["--mcp", "--restart", "always", "--restart-backoff", "10ms"])
        .start();
    run.send(&initialize(json!({})));
    assert_eq!(parse(&run.read_line())["result"]["protocolVersion"], "v1");
    run.send(&request(json!(1), "exit", json!({"code": 0})));
    // The restarted server says v2: refused, ended, and the session with
    // it, while our stdin stays open (a hang-up during the backoff would
    // mean no restart at all).
    let answer = parse(&run.read_line());
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["error"]["code"], -32000);
    let _stdin = run.take_stdin();
    let done = run.finish();
    done.expect("/mcp/restarts", json!(1)).expect(
        "/mcp/restart_stopped",
        json!({"reason": "protocol_changed", "detail": "protocolVersion \"v1\" became \"v2\""}),
    );
    done.check(
        done.signals_sent()
            .iter()
            .any(|(_, _, reason)| reason == "restart_refused"),
        "the refused server was ended by mcp-bound",
    );
    done.check(
        !String::from_utf8_lossy(&done.stdout).contains("v2"),
        "nothing of the refused server reached the client",
    );
}

#[test]
fn no_restart_after_the_host_ends_the_session() {
    // A host signal kills the server (a "failure" by its exit), and
    // closing our stdin ends it cleanly: neither is a crash to restart.
    for how in ["TERM", "close"] {
        let mut run = server(&[]).opt(&["--mcp", "--restart", "always"]).start();
        run.send(&request(json!(1), "echo", json!({})));
        parse(&run.read_line());
        // Our stdin stays open through a signal: only the signal ends it.
        let stdin = if how == "TERM" {
            let stdin = run.take_stdin();
            run.signal("TERM");
            Some(stdin)
        } else {
            run.close_stdin();
            None
        };
        let done = run.finish();
        drop(stdin);
        done.expect("/state", json!("shut_down"))
            .expect("/mcp/restarts", json!(0))
            .expect("/mcp/restart_stopped", Value::Null);
        done.check(
            done.events("restart_scheduled").is_empty(),
            &format!("no restart after {how}"),
        );
    }
}

#[test]
fn what_a_server_that_stopped_reading_never_got_is_counted_as_discarded() {
    // The server closes its stdin, says so, and never answers.
    let mut run =
        Call::sh("exec 0<&-; echo '{\"jsonrpc\":\"2.0\",\"method\":\"ready\"}'; exec sleep 30")
            .opt(&["--mcp", "--stdin-close-grace", "0.2s"])
            .stdin(Stdio::piped())
            .start();
    assert_eq!(parse(&run.read_line())["method"], "ready");
    let line = request(json!(1), "tools/call", json!({"name": "x"}));
    run.send(&line);
    run.close_stdin();
    let done = run.finish();
    done.expect(
        "/mcp/client_bytes",
        json!({"read": line.len(), "to_server": 0, "discarded": line.len()}),
    )
    .expect("/mcp/in_flight_at_exit", json!(1));
    let answer = parse(
        done.stdout
            .split_inclusive(|b| *b == b'\n')
            .next_back()
            .unwrap(),
    );
    done.check(
        answer["error"]["code"] == -32000,
        "the request was answered",
    );
}

/// A request whose line did not all reach the server is answered as
/// such: the server cannot have read it whole. One whose bytes all went
/// into the server's pipe (read or not) may have acted: it says so too.
/// (A request that comes once the server is gone is answered at once as
/// not written: see the session's unit tests.)
#[test]
fn a_crash_answer_says_whether_the_request_was_written_to_the_server() {
    // The server reads the first line, then waits for the next one to
    // start arriving (head gets some of it), and dies. The second is
    // 3 MiB: the server's stdin pipe (1 MiB) cannot take all of it.
    let mut run =
        Call::sh("IFS= read -r first; head -c 1 >/dev/null; echo 'read one line' >&2; exit 1")
            .opt(&["--mcp"])
            .stdin(Stdio::piped())
            .start();
    let big = "x".repeat(3 << 20);
    let mut lines = request(json!(1), "tools/call", json!({"name": "a"}));
    lines.extend(request(
        json!(2),
        "tools/call",
        json!({"name": "b", "blob": big}),
    ));
    run.send(&lines);
    let mut answers = [parse(&run.read_line()), parse(&run.read_line())];
    answers.sort_by_key(|a| a["id"].as_u64());
    let done = run.finish();
    for (answer, (id, written)) in answers.iter().zip([(1, true), (2, false)]) {
        done.check(answer["id"] == id, &format!("an answer for {id}: {answer}"));
        done.check(answer["error"]["code"] == -32000, "-32000");
        let data = &answer["error"]["data"]["mcp_bound"];
        done.check(data["reason"] == "server_exited", "the reason");
        done.check(
            data["written_to_server"] == written,
            &format!("request {id} written to the server: {written} ({data})"),
        );
    }
    done.expect("/exit", json!({"code": 1}))
        .expect("/mcp/in_flight_at_exit", json!(2));
}

/// Once the server is gone and a restart may follow, the client waits:
/// a request sent while the crashed server's leftovers are still being
/// ended (here one that ignores TERM, so that takes the whole --grace)
/// goes to the new server, not to a -32000 for a server about to return.
/// In a cgroup that leftover is killed through cgroup.kill, after which
/// Linux 6.18 kills at birth whatever is cloned into that cgroup: the new
/// server must still live.
#[test]
fn a_request_sent_while_a_restart_is_decided_goes_to_the_new_server() {
    for mode in ["group", "cgroup"] {
        if let Some(why) = util::no_cgroup_here().filter(|_| mode == "cgroup") {
            skipped!("--contain cgroup: {why}");
            continue;
        }
        let probe = Call::new(&["true"]).opt(&["--contain", mode]).run();
        if probe.code() != 0 {
            skipped!("--contain {mode}: {}", probe.stderr_text().trim());
            continue;
        }
        let mut run = server(&[])
            .opt(&[
                "--mcp",
                "--contain",
                mode,
                "--restart",
                "on-failure",
                "--restart-backoff",
                "10ms",
            ])
            .start();
        run.send(&request(json!(1), "pid", json!({})));
        let first = parse(&run.read_line())["result"]["pid"].clone();
        run.send(&request(
            json!(2),
            "crash",
            json!({"code": 1, "linger": true}),
        ));
        let crashed = parse(&run.read_line());
        assert_eq!(crashed["error"]["code"], -32000, "{crashed}");
        run.send(&request(json!(3), "pid", json!({})));
        let answer = parse(&run.read_line());
        assert!(
            answer["result"]["pid"].is_u64() && answer["result"]["pid"] != first,
            "--contain {mode}: the new server answers: {answer}"
        );
        run.close_stdin();
        let done = run.finish();
        done.expect_state("shut_down", 0)
            .expect("/mcp/restarts", json!(1))
            .expect("/mcp/synthesized/server_exited", json!(1))
            .expect("/contain/method", json!(util::method_of(mode)));
    }
}

/// What a crash cut off belongs to its incarnation; `mcp.interrupted`
/// lists only what the end of the session cut off. After a crash and a
/// restart, a clean end lists nothing, and a host's signal during the
/// restart's backoff interrupted nothing either: both are shut_down.
#[test]
fn what_a_crash_cut_off_belongs_to_its_incarnation() {
    for end in ["close", "INT during the backoff"] {
        let backoff = if end == "close" { "10ms" } else { "10m" };
        let mut run = restarting_on_failure(backoff);
        run.send(&request(json!("slow"), "sleep", json!({"ms": 60_000})));
        run.send(&request(json!("boom"), "crash", json!({"code": 1})));
        let answers: Vec<Value> = (0..2).map(|_| parse(&run.read_line())).collect();
        assert!(
            answers.iter().all(|a| a["error"]["code"] == -32000),
            "{answers:?}"
        );
        if end == "close" {
            run.send(&request(json!(3), "echo", json!({})));
            assert_eq!(parse(&run.read_line())["id"], 3, "the new server answers");
        }
        // The backoff is ten minutes: the signal comes during it.
        let done = run.finish_by(if end == "close" { "close" } else { "INT" });
        let code = if end == "close" { 0 } else { 130 };
        done.expect_state("shut_down", code)
            .expect("/mcp/interrupted", json!([]))
            .expect("/mcp/in_flight_at_exit", json!(0))
            .expect("/mcp/incarnations/0/in_flight_at_exit", json!(2))
            .expect(
                "/mcp/incarnations/0/interrupted",
                json!([
                    {"id": "slow", "method": "sleep", "name": null},
                    {"id": "boom", "method": "crash", "name": null}
                ]),
            );
    }
}

/// When the journal fails, nothing unjournaled reaches the server, and
/// the answers still flow: every request in flight or refused gets its
/// -32000, and the record counts only answers that were written.
#[test]
fn when_the_journal_fails_every_request_still_gets_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (journal, received) = (dir.path().join("audit.jsonl"), dir.path().join("received"));
    let call = Call::new(&["sh", "-c", "exec cat >> \"$0\"", received.to_str().unwrap()])
        .opt(&["--mcp", "--journal", journal.to_str().unwrap()])
        .stdin(Stdio::piped());
    let mut run = call.start();
    // Not audited, so it reaches the server: in flight, never answered.
    let ping = request(json!("p"), "ping", json!({}));
    run.send(&ping);
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read(&received).unwrap_or_default() != ping {
        assert!(Instant::now() < deadline, "the server never got the ping");
        std::thread::yield_now();
    }
    std::fs::rename(&journal, call_path_moved(&journal)).unwrap();
    std::fs::create_dir(&journal).unwrap();
    run.send(&request(json!(1), "tools/call", json!({"name": "rm"})));
    let mut ids: Vec<Value> = (0..2)
        .map(|_| parse(&run.read_line()))
        .map(|a| {
            assert_eq!(a["error"]["code"], -32000, "{a}");
            a["id"].clone()
        })
        .collect();
    ids.sort_by_key(|id| id.to_string());
    assert_eq!(ids, [json!("p"), json!(1)]);
    let done = run.finish();
    done.expect_state("failed_after_dispatch", 125)
        .expect("/mcp/synthesized/server_exited", json!(2));
    done.check(
        std::fs::read(&received).unwrap() == ping,
        "the request never reached the server",
    );
}

/// Claude Code shows the model only `error.message`: a crash answer's
/// message carries the server's last stderr lines (bounded, masked, whole
/// lines), the record counts them, and `--agent-excerpt-bytes 0` leaves
/// the message bare. `data.mcp_bound.stderr_tail` is whole either way.
#[test]
fn a_crash_answers_message_carries_the_servers_last_stderr_lines() {
    let stderr = "loading config\nconnecting to db at 10.0.0.7\nFATAL: password=hunter2 rejected\n";
    for (bytes, carried) in [("1K", true), ("0", false)] {
        let mut run = server(&[])
            .opt(&["--mcp", "--agent-excerpt-bytes", bytes])
            .start();
        run.send(&request(
            json!(1),
            "crash",
            json!({"stderr": stderr, "code": 2}),
        ));
        let answer = parse(&run.read_line());
        run.close_stdin();
        let done = run.finish();
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        let tail = answer["error"]["data"]["mcp_bound"]["stderr_tail"]
            .as_str()
            .unwrap_or_default();
        done.check(
            message.contains("connecting to db at 10.0.0.7\nFATAL: password=[REDACTED] rejected")
                == carried,
            &format!("--agent-excerpt-bytes {bytes}: {message:?}"),
        );
        done.check(
            !message.contains("hunter2") && tail.contains("loading config"),
            "masked; the tail whole",
        );
        done.expect("/mcp/agent_excerpts/answers", json!(u64::from(carried)))
            .expect(
                "/mcp/limits/agent_excerpt_bytes",
                json!(if carried { 1024 } else { 0 }),
            );
    }
}
