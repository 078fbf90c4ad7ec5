//! The per-request audit at its edges (issue 23): every tools/call the
//! server may run is journaled before it can act, or refused; ids are
//! journaled and matched exactly as the client wrote them; responses are
//! seen for what they are. Driven through the real binary with the fixture
//! server, which parses as Node's JSON.parse and Python's json.loads do.

mod util;

use serde_json::{Value, json};
use util::{Done, parse_message as parse, rpc_request as request, server};

/// The journal's lines, as text and parsed.
fn journal_lines(done: &Done, path: &std::path::Path) -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|l| {
            let value = util::parse_json(l.as_bytes())
                .unwrap_or_else(|e| panic!("journal line not JSON ({e}): {l}{done}"));
            (l.to_string(), value)
        })
        .collect()
}

#[track_caller]
fn verified(done: &Done, journal: &std::path::Path) -> Value {
    let (ok, report) = util::verify_report(journal);
    done.check(ok, &format!("verify passes: {report}"));
    report
}

/// Ids are journaled and reported as the client wrote them, as raw JSON
/// text: two integers past f64's precision stay two ids, and `1e400`
/// (past f64's range) stays `1e400`, in the journal, in `verify`, and in
/// the record's `mcp.interrupted`.
#[test]
fn ids_are_journaled_and_reported_exactly_as_written() {
    let call = server(&[]).opt(&["--mcp", "--journal"]);
    let journal = call.path("audit.jsonl");
    let mut run = call.opt(&[journal.to_str().unwrap()]).start();
    let big = [
        "100000000000000000000000000001",
        "100000000000000000000000000002",
    ];
    for id in big {
        let text = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"t\"}}}}\n"
        );
        run.send(text.as_bytes());
        let answer = run.read_line();
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.contains(&format!("\"id\":{id}")), "{answer}");
    }
    // Python reads 1e400 as infinity and answers "Infinity", which is not
    // JSON: the guard diverts that answer, and the request stays open
    // until the host hangs up.
    run.send(b"{\"jsonrpc\":\"2.0\",\"id\":1e400,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}\n");
    run.send(&request(json!("last"), "tools/call", json!({"name": "t"})));
    parse(&run.read_line());
    run.close_stdin();
    let done = run.finish();
    done.expect("/mcp/interrupted/0/method", json!("tools/call"));
    let record = done.record_text.clone().unwrap_or_default();
    done.check(
        record.contains("\"interrupted\":[{\"id\":1e400,"),
        "the record lists the id as written",
    );
    let lines = journal_lines(&done, &journal);
    for id in big.iter().chain(["1e400"].iter()) {
        let needle = format!("\"request_id\":{id},");
        done.check(
            lines
                .iter()
                .any(|(text, value)| value["kind"] == "mcp_request" && text.contains(&needle)),
            &format!("an mcp_request with {needle}"),
        );
    }
    let report = verified(&done, &journal);
    done.check(
        report["unfinished_requests"] == json!([]),
        "every request ended",
    );
}

/// `1`, `1.0` and `1e0` are one id, as the SDKs compare ids: a response
/// spelled `1.0` ends request `1`, and no second answer comes for it.
#[test]
fn an_id_is_matched_by_its_json_value() {
    let call = server(&[]).opt(&["--mcp", "--request-timeout", "1h", "--journal"]);
    let journal = call.path("audit.jsonl");
    let mut run = call.opt(&[journal.to_str().unwrap()]).start();
    // The fixture answers `reply` with the id it is given there.
    run.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\",\"reply_id\":1.0}}\n");
    let answer = run.read_line();
    assert!(
        String::from_utf8_lossy(&answer).contains("\"id\":1.0"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/unmatched_responses", json!(0))
        .expect("/mcp/in_flight_at_exit", json!(0));
    let report = verified(&done, &journal);
    done.check(
        report["unfinished_requests"] == json!([]),
        "the request ended",
    );
}

/// `"result": null` is a success response: it ends its request, which is
/// journaled as a result, and no -32001 follows for it at its deadline.
#[test]
fn a_null_result_ends_its_request() {
    let call = server(&[]).opt(&[
        "--mcp",
        "--request-timeout",
        "null=300ms",
        "--journal-requests",
        "all",
        "--journal",
    ]);
    let journal = call.path("audit.jsonl");
    let mut run = call.opt(&[journal.to_str().unwrap()]).start();
    run.send(&request(json!(7), "null", json!({})));
    let answer = parse(&run.read_line());
    assert_eq!(answer, json!({"jsonrpc": "2.0", "id": 7, "result": null}));
    // No deadline for sleep: its answer comes 600 ms later, past the
    // 300 ms one of request 7, so an answer for 7 would come first.
    run.send(&request(json!(8), "sleep", json!({"ms": 600})));
    let next = parse(&run.read_line());
    assert_eq!(next["id"], 8, "no second answer for 7: {next}");
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/synthesized/request_timeout", json!(0))
        .expect("/mcp/late_responses_dropped", json!(0))
        .expect("/mcp/cancellations_sent", json!(0));
    let outcomes: Vec<(Value, Value)> = journal_lines(&done, &journal)
        .into_iter()
        .filter(|(_, e)| e["kind"] == "mcp_response")
        .map(|(_, e)| (e["request_id"].clone(), e["outcome"].clone()))
        .collect();
    done.check(
        outcomes == [(json!(7), json!("result")), (json!(8), json!("result"))],
        &format!("both journaled as results: {outcomes:?}"),
    );
    verified(&done, &journal);
}

/// Two responses glued on one line both reach the client, each on its
/// own line, and both requests end with their real answers.
#[test]
fn two_responses_glued_on_one_line_both_arrive() {
    let call = server(&[]).opt(&["--mcp", "--journal"]);
    let journal = call.path("audit.jsonl");
    let mut run = call.opt(&[journal.to_str().unwrap()]).start();
    run.send(&request(json!("a"), "sleep", json!({"ms": 60_000})));
    run.send(&request(json!("b"), "pair", json!({"other": "a"})));
    let first = parse(&run.read_line());
    let second = parse(&run.read_line());
    assert_eq!(
        (first["id"].clone(), first["result"]["paired"].clone()),
        (json!("a"), json!(true)),
        "{first}"
    );
    assert_eq!(second["id"], "b", "{second}");
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/stdout/lines_salvaged", json!(2))
        .expect("/stdout/lines_diverted", json!(0))
        .expect("/mcp/synthesized/server_exited", json!(0))
        .expect("/mcp/server/responses", json!(2));
    verified(&done, &journal);
}
