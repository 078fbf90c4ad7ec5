//! The per-request audit at its edges: every tools/call the
//! server may run is journaled before it can act, or refused; ids are
//! journaled and matched exactly as the client wrote them; responses are
//! seen for what they are. Driven through the real binary with the fixture
//! server, which parses as Node's JSON.parse and Python's json.loads do.

use crate::util;

use serde_json::{Value, json};
use util::{Done, parse_message as parse, rpc_request as request, server, sha256_hex};

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
        "null=1s",
        "--journal-requests",
        "all",
        "--journal",
    ]);
    let journal = call.path("audit.jsonl");
    let mut run = call.opt(&[journal.to_str().unwrap()]).start();
    // The server is up (its start is not the null request's to wait for,
    // on a loaded machine).
    run.send(&request(json!(6), "echo", json!({})));
    assert_eq!(parse(&run.read_line())["id"], 6);
    run.send(&request(json!(7), "null", json!({})));
    let answer = parse(&run.read_line());
    assert_eq!(answer, json!({"jsonrpc": "2.0", "id": 7, "result": null}));
    // No deadline for sleep: its answer comes 2 s later, past the 1 s
    // one of request 7, so an answer for 7 would come first.
    run.send(&request(json!(8), "sleep", json!({"ms": 2000})));
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
        outcomes
            == [
                (json!(6), json!("result")),
                (json!(7), json!("result")),
                (json!(8), json!("result")),
            ],
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

/// What the fixture server ran: `(id as JSON text, tool name)` for each
/// `REQUEST <id> tools/call <name>` it logged on its stderr.
fn tools_the_server_ran(done: &Done) -> Vec<(String, String)> {
    let excerpt = done.field("/stderr/excerpt").as_str().unwrap_or_default();
    excerpt
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("REQUEST ")?;
            let (id, rest) = rest.split_once(' ')?;
            let name = rest.strip_prefix("tools/call ")?;
            Some((id.to_string(), name.to_string()))
        })
        .collect()
}

/// Every tools/call the server runs is journaled before it can act, or
/// refused and never sent, for the lines where the audit and the server's
/// parser (Python's json.loads on bytes decoded with U+FFFD, universal
/// newlines, the last line read at EOF) used to disagree.
#[test]
fn every_tools_call_the_server_runs_is_journaled_or_refused() {
    let call = server(&[]).opt(&["--mcp", "--max-message-bytes", "4K", "--journal"]);
    let journal = call.path("audit.jsonl");
    let mut run = call.opt(&[journal.to_str().unwrap()]).start();
    // Refused: parsers that keep the first key and the last would differ,
    // or a reader splitting on CR would see two messages.
    let refused: [&[u8]; 3] = [
        br#"{"jsonrpc":"2.0","id":"r1","method":"ping","method":"tools/call","params":{"name":"hidden-method"}}"#,
        br#"{"jsonrpc":"2.0","id":"r2","method":"tools/call","params":{"name":"shown","name":"hidden-name"}}"#,
        b"{\"jsonrpc\":\"2.0\",\"id\":\"r3\",\"method\":\"ping\"}\r{\"jsonrpc\":\"2.0\",\"id\":\"r4\",\"method\":\"tools/call\",\"params\":{\"name\":\"hidden-cr\"}}",
    ];
    for line in refused {
        run.send(&[line, b"\n"].concat());
    }
    let mut answers: Vec<Value> = (0..4).map(|_| parse(&run.read_line())).collect();
    answers.sort_by_key(|a| a["id"].to_string());
    for (answer, id) in answers.iter().zip(["r1", "r2", "r3", "r4"]) {
        assert_eq!(
            (answer["id"].as_str(), answer["error"]["code"].as_i64()),
            (Some(id), Some(-32600)),
            "{answer}"
        );
    }
    // Journaled: what only a permissive parser reads, a duplicate id, an
    // id past the table's bound, a line over --max-message-bytes.
    let not_utf8 = b"{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"method\":\"tools/call\",\"params\":{\"name\":\"utf8\",\"arguments\":{\"x\":\"\xff\"}}}".to_vec();
    let nan = br#"{"jsonrpc":"2.0","id":"n","method":"tools/call","params":{"name":"nan","arguments":{"x":NaN}}}"#.to_vec();
    let long_id = format!(
        r#"{{"jsonrpc":"2.0","id":"{}","method":"tools/call","params":{{"name":"long-id"}}}}"#,
        "i".repeat(2000)
    )
    .into_bytes();
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{{"name":"big","arguments":{{"pad":"{}"}}}}}}"#,
        "p".repeat(6000)
    )
    .into_bytes();
    run.send(&request(json!("s"), "sleep", json!({"ms": 200})));
    let duplicate =
        br#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"dup-id"}}"#.to_vec();
    for line in [&not_utf8, &nan, &duplicate, &long_id, &big] {
        run.send(&[&line[..], b"\n"].concat());
    }
    // Answers: utf8, nan, dup-id (under "s"), long-id, big, and the
    // sleep's own answer (also "s").
    for _ in 0..6 {
        parse(&run.read_line());
    }
    // The last line, with no newline before EOF.
    let last =
        br#"{"jsonrpc":"2.0","id":"last","method":"tools/call","params":{"name":"unterminated"}}"#;
    run.send(last);
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/refused", json!(3))
        .expect("/mcp/synthesized/invalid_request", json!(4));
    let ran = tools_the_server_ran(&done);
    let names: Vec<&str> = ran.iter().map(|(_, name)| name.as_str()).collect();
    done.check(
        names == ["utf8", "nan", "dup-id", "long-id", "big", "unterminated"],
        &format!("what the server ran: {names:?}"),
    );
    let requests: Vec<Value> = journal_lines(&done, &journal)
        .into_iter()
        .map(|(_, entry)| entry)
        .filter(|entry| entry["kind"] == "mcp_request")
        .collect();
    let entry = |name: &str| {
        requests
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("no mcp_request for {name}: {requests:?}{done}"))
    };
    let hash = |line: &[u8]| json!(sha256_hex(line));
    let expected = [
        ("utf8", json!(["invalid_utf8"]), hash(&not_utf8), json!("u")),
        ("nan", json!(["not_strict_json"]), hash(&nan), json!("n")),
        (
            "dup-id",
            json!(["duplicate_id"]),
            hash(&duplicate),
            json!("s"),
        ),
        (
            "long-id",
            json!(["untracked_id"]),
            hash(&long_id),
            Value::Null,
        ),
        (
            "unterminated",
            json!(["unterminated"]),
            hash(last),
            json!("last"),
        ),
    ];
    for (name, irregular, line_sha256, id) in expected {
        let e = entry(name);
        done.check(
            e["irregular"] == irregular && e["line_sha256"] == line_sha256 && e["request_id"] == id,
            &format!("{name}: {e}"),
        );
    }
    // The line over the bound was streamed unread: its entry has its hash.
    let streamed: Vec<&Value> = requests
        .iter()
        .filter(|e| e["irregular"] == json!(["over_max_message_bytes"]))
        .collect();
    done.check(
        streamed.len() == 1 && streamed[0]["line_sha256"] == hash(&big),
        &format!("the long line's entry: {streamed:?}"),
    );
    for hidden in ["hidden-method", "hidden-name", "hidden-cr"] {
        done.check(
            !requests.iter().any(|e| e["name"] == hidden),
            "nothing refused is journaled",
        );
    }
    let report = verified(&done, &journal);
    done.check(
        report["unfinished_requests"] == json!([]),
        "every tracked request ended",
    );
}
