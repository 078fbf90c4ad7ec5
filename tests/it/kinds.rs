//! What kind of request the session layer holds: a stream
//! (`subscriptions/listen`) is no stuck call, a server may end it, and a
//! host's shutdown ends it without an answer; an answer for a request the
//! client cancelled never reaches the client. Through the real binary,
//! with the fixture server.

use crate::util;

use serde_json::{Value, json};
use util::{parse_message as parse, rpc_request as request, server};

/// A listen stream outlives --request-timeout (it gets no response while
/// it is open), the server ends it with a cancel naming it, and nothing is
/// said for it afterwards; a call beside it is still timed.
#[test]
fn a_stream_outlives_the_request_timeout_and_the_server_may_end_it() {
    let mut run = server(&[])
        .opt(&[
            "--mcp",
            "--request-timeout",
            "300ms",
            "--request-timeout",
            "wait=0",
        ])
        .start();
    run.send(&request(
        "listen-1",
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    ));
    let ack = parse(&run.read_line());
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    // A call that takes longer than the deadline is timed; the stream,
    // open all that time, is not.
    run.send(&request(2, "sleep", json!({"ms": 60_000})));
    let timed = parse(&run.read_line());
    assert_eq!(
        (timed["id"].clone(), timed["error"]["code"].clone()),
        (json!(2), json!(-32001))
    );
    run.send(&request(3, "wait", json!({"ms": 600})));
    let answer = parse(&run.read_line());
    assert_eq!(
        (answer["id"].clone(), answer["result"].is_object()),
        (json!(3), true),
        "no -32001 for the stream came first: {answer}"
    );
    // The server ends the stream: its cancel reaches the client, and no
    // -32001 or cancel follows for it.
    run.send(&request(4, "end_listen", json!({"listen": "listen-1"})));
    let ended = parse(&run.read_line());
    assert_eq!(ended["method"], "notifications/cancelled", "{ended}");
    assert_eq!(parse(&run.read_line())["id"], 4);
    run.send(&request(5, "wait", json!({"ms": 400})));
    let answer = parse(&run.read_line());
    assert_eq!(
        (answer["id"].clone(), answer["result"].is_object()),
        (json!(5), true),
        "{answer}"
    );
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/synthesized/request_timeout", json!(1))
        .expect("/mcp/cancellations_sent", json!(1))
        .expect("/mcp/interrupted", json!([]));
    let stderr = done
        .field("/stderr/excerpt")
        .as_str()
        .unwrap_or_default()
        .to_string();
    done.check(
        !stderr.contains("NOTIFIED notifications/cancelled \"listen-1\""),
        "the server got no cancel for the stream it ended",
    );
}

/// A host that closes while listening has interrupted nothing: the state
/// is shut_down, the stream is not listed, and no -32000 is written for
/// it to a host that is going away.
#[test]
fn closing_while_listening_is_a_clean_shutdown() {
    for how in ["close", "INT"] {
        let mut run = server(&[]).opt(&["--mcp"]).start();
        run.send(&request("l", "subscriptions/listen", json!({})));
        assert_eq!(
            parse(&run.read_line())["method"],
            "notifications/subscriptions/acknowledged"
        );
        // INT: Claude Code's shutdown, stdin never closed.
        let done = run.finish_by(how);
        let code = if how == "close" { 0 } else { 130 };
        done.expect_state("shut_down", code)
            .expect("/mcp/interrupted", json!([]))
            .expect("/mcp/in_flight_at_exit", json!(0))
            .expect("/mcp/synthesized/server_exited", json!(0));
        let stdout = String::from_utf8_lossy(&done.stdout);
        done.check(
            !stdout.contains("\"error\""),
            &format!("{how}: nothing answered for the stream"),
        );
    }
}

/// An answer for a request the client cancelled itself is dropped and
/// counted: Claude Code drops the connection on an answer for an id it no
/// longer knows.
#[test]
fn an_answer_after_the_clients_own_cancel_is_dropped() {
    let mut run = server(&[]).opt(&["--mcp"]).start();
    run.send(&request(1, "sleep", json!({"ms": 300, "late": true})));
    run.send(&util::json_line(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "the host timed it out"}}),
    ));
    // The fixture answers anyway, 300 ms later; a later call's answer
    // comes after it, so whatever was written for 1 came first.
    run.send(&request(2, "sleep", json!({"ms": 600})));
    assert_eq!(parse(&run.read_line())["id"], 2, "nothing for 1 came first");
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/cancelled_by_client", json!(1))
        .expect("/mcp/late_responses_dropped", json!(1))
        .expect("/mcp/unmatched_responses", Value::from(0));
}

/// An MRTR round trip is journaled as two rounds: the round answered
/// `input_required` is not a final result, and the client's retry (a new
/// id) is a request of its own with its own pair of entries.
#[test]
fn an_mrtr_round_trip_is_journaled_as_two_rounds() {
    let call = server(&[]).opt(&["--mcp", "--journal"]);
    let journal = call.path("audit.jsonl");
    let mut run = call.opt(&[journal.to_str().unwrap()]).start();
    run.send(&request(1, "tools/call", json!({"name": "confirm"})));
    let round = parse(&run.read_line());
    assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    run.send(&request(
        2,
        "tools/call",
        json!({"name": "confirm", "requestState": "round-1",
        "inputResponses": {"ok": {"action": "accept"}}}),
    ));
    let done_answer = parse(&run.read_line());
    assert_eq!(done_answer["result"]["resultType"], "complete");
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0);
    let text = std::fs::read_to_string(&journal).unwrap();
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let rounds: Vec<(Value, Value, Value)> = entries
        .iter()
        .filter(|e| e["kind"] == "mcp_response")
        .map(|e| {
            (
                e["request_id"].clone(),
                e["outcome"].clone(),
                e["result_type"].clone(),
            )
        })
        .collect();
    done.check(
        rounds
            == [
                (json!(1), json!("result"), json!("input_required")),
                (json!(2), json!("result"), json!("complete")),
            ],
        &format!("two rounds: {rounds:?}"),
    );
    let (ok, report) = util::verify_report(&journal);
    done.check(ok, &format!("verify: {report}"));
}

/// The journal's entries of `kind`, as values.
fn entries(journal: &std::path::Path, kind: &str) -> Vec<Value> {
    std::fs::read_to_string(journal)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["kind"] == kind)
        .collect()
}

/// A 2025-11-25 task: the tools/call is answered with a task at once, its
/// tasks/result blocks past --request-timeout by design and gets the
/// result, and the journal says what the tool call finally did, against
/// the call (mcp_task), with verify pairing it.
#[test]
fn a_tasks_result_outlives_the_timeout_and_its_end_is_journaled() {
    // The default deadline is short; the ping (the server is up: its start
    // is no request's to wait for) and the call that creates the task
    // are not on it, so only the tasks/result could be, by mistake.
    let call = server(&[]).opt(&[
        "--mcp",
        "--request-timeout",
        "300ms",
        "--request-timeout",
        "ping=0",
        "--request-timeout",
        "tools/call=0",
        "--journal",
    ]);
    let journal = call.path("audit.jsonl");
    let mut run = call.opt(&[journal.to_str().unwrap()]).start();
    run.send(&request(0, "ping", json!({})));
    assert_eq!(parse(&run.read_line())["id"], 0);
    run.send(&request(
        1,
        "tools/call",
        json!({"name": "long", "task": {"ttl": 60000}, "arguments": {"ms": 800}}),
    ));
    let created = parse(&run.read_line());
    let task_id = created["result"]["task"]["taskId"].clone();
    assert!(task_id.is_string(), "{created}");
    run.send(&request(2, "tasks/result", json!({"taskId": task_id})));
    let result = parse(&run.read_line());
    assert_eq!(
        (result["id"].clone(), result["result"]["ran"].clone()),
        (json!(2), json!("long")),
        "{result}"
    );
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/synthesized/request_timeout", json!(0));
    let responses = entries(&journal, "mcp_response");
    done.check(
        responses.len() == 1 && responses[0]["result_type"] == "task",
        &format!("the call was answered with a task: {responses:?}"),
    );
    let ends = entries(&journal, "mcp_task");
    done.check(
        ends.len() == 1
            && ends[0]["request_id"] == 1
            && ends[0]["task_id"] == task_id
            && ends[0]["status"] == "completed",
        &format!("the task's end, against the call: {ends:?}"),
    );
    let (ok, report) = util::verify_report(&journal);
    done.check(
        ok && report["unfinished_requests"] == json!([]),
        &format!("verify: {report}"),
    );
}

/// The tasks extension (2026-07-28): resultType task, then tasks/get
/// polling until a terminal status, which is the task's journaled end.
#[test]
fn a_polled_tasks_end_is_journaled() {
    let call = server(&[]).opt(&["--mcp", "--journal"]);
    let journal = call.path("audit.jsonl");
    let mut run = call.opt(&[journal.to_str().unwrap()]).start();
    run.send(&request(
        1,
        "tools/call",
        json!({"name": "long", "arguments": {"ms": 200}}),
    ));
    let created = parse(&run.read_line());
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task_id = created["result"]["task"]["taskId"].clone();
    let mut id = 2;
    loop {
        run.send(&request(id, "tasks/get", json!({"taskId": task_id})));
        let state = parse(&run.read_line());
        if state["result"]["status"] == "completed" {
            break;
        }
        id += 1;
        assert!(id < 10_000, "the task never completed");
    }
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0);
    let ends = entries(&journal, "mcp_task");
    done.check(
        ends.len() == 1 && ends[0]["status"] == "completed" && ends[0]["request_id"] == 1,
        &format!("{ends:?}"),
    );
    let (ok, report) = util::verify_report(&journal);
    done.check(ok, &format!("verify: {report}"));
}

/// A crash loses the server's tasks (a restart does not bring them back):
/// each is journaled as lost, and a tasks/result waiting on one is
/// answered as any request in flight.
#[test]
fn a_crash_loses_the_servers_tasks() {
    let call = server(&[]).opt(&["--mcp", "--journal"]);
    let journal = call.path("audit.jsonl");
    let mut run = call.opt(&[journal.to_str().unwrap()]).start();
    run.send(&request(
        1,
        "tools/call",
        json!({"name": "long", "task": {}, "arguments": {"ms": 60_000}}),
    ));
    let task_id = parse(&run.read_line())["result"]["task"]["taskId"].clone();
    run.send(&request(2, "tasks/result", json!({"taskId": task_id})));
    run.send(&request(3, "crash", json!({"code": 1})));
    let answers: Vec<Value> = (0..2).map(|_| parse(&run.read_line())).collect();
    assert!(
        answers.iter().all(|a| a["error"]["code"] == -32000),
        "both answered -32000: {answers:?}"
    );
    run.close_stdin();
    let done = run.finish();
    done.expect_state("completed", 1);
    let ends = entries(&journal, "mcp_task");
    done.check(
        ends.len() == 1 && ends[0]["status"] == "lost",
        &format!("{ends:?}"),
    );
    let (ok, report) = util::verify_report(&journal);
    done.check(
        ok && report["unfinished_requests"] == json!([]),
        &format!("verify: {report}"),
    );
}

/// The server's own error, a code MCP 2026-07-28 reserves (-32022,
/// UnsupportedProtocolVersion) included, reaches the client byte for byte:
/// it is no answer of mcp-bound's (no `data.mcp_bound`, nothing counted
/// as synthesized), and the journal says the server answered an error.
#[test]
fn a_servers_own_spec_error_passes_through_untouched() {
    let call = server(&[]).opt(&["--mcp", "--journal-requests", "all", "--journal"]);
    let journal = call.path("audit.jsonl");
    let mut run = call.opt(&[journal.to_str().unwrap()]).start();
    let error = json!({"code": -32022, "message": "Unsupported protocol version",
        "data": {"supported": ["2025-11-25"], "requested": "2027-01-01"}});
    run.send(&request(2, "error", json!({"error": error})));
    let line = run.read_line();
    let expected = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{}}}\n",
        serde_json::to_string(&error).unwrap()
    );
    assert_eq!(String::from_utf8_lossy(&line), expected);
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/synthesized/request_timeout", json!(0))
        .expect("/mcp/synthesized/server_exited", json!(0))
        .expect("/mcp/synthesized/invalid_request", json!(0));
    let responses = entries(&journal, "mcp_response");
    done.check(
        responses.len() == 1
            && responses[0]["request_id"] == 2
            && responses[0]["outcome"] == "error"
            && responses[0]["error_code"] == -32022,
        &format!("the audited call: {responses:?}"),
    );
}

/// A server slow to start (a cold `npx -y`): the default --request-timeout
/// leaves the host's initialize alone, since the host times the start
/// itself; a call sent beside it is timed. The call's -32001 is the
/// handshake that the deadline has passed.
#[test]
fn a_slow_start_is_not_timed_out_by_the_default_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let mut run = server(&["--wait-for", started.to_str().unwrap()])
        .opt(&["--mcp", "--request-timeout", "300ms"])
        .start();
    run.send(&request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
    ));
    run.send(&request(1, "echo", json!({})));
    let timed = parse(&run.read_line());
    assert_eq!(
        (timed["id"].clone(), timed["error"]["code"].clone()),
        (json!(1), json!(-32001)),
        "{timed}"
    );
    std::fs::write(&started, "").unwrap();
    let answer = parse(&run.read_line());
    assert_eq!(answer["id"], 0, "{answer}");
    assert!(
        answer["result"].is_object(),
        "the server's own answer: {answer}"
    );
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/synthesized/request_timeout", json!(1))
        .expect("/mcp/late_responses_dropped", json!(1))
        .expect("/mcp/incarnations/0/era", json!("legacy"));
}
