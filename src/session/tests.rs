//! The session policy without processes: lines and instants in, lines,
//! answers and facts out.

use super::*;
use crate::ids::hex;
use crate::request_id::RequestId;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub(super) fn policy() -> SessionPolicy {
    SessionPolicy {
        default_timeout: None,
        method_timeouts: Vec::new(),
        resets_on_progress: false,
        max_in_flight: 4,
        audit: AuditRequests::Tools,
        journal: true,
        agent_excerpt_bytes: 1024,
        tools: None,
        restart: RestartPolicy {
            mode: crate::record::mcp::RestartMode::Never,
            max_restarts: 0,
            window: Duration::from_secs(1),
            backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
        },
    }
}

/// A turn's deadlines, with no stderr from the server.
fn tick(session: &mut Session, at: Instant) {
    session.tick(at, &mut |_| String::new());
}

/// A session whose every request times out after `timeout`.
fn timed(timeout: Duration) -> Session {
    Session::new(
        SessionPolicy {
            default_timeout: Some(timeout),
            ..policy()
        },
        "c1".into(),
    )
}

fn line(value: Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(&value).unwrap();
    line.push(b'\n');
    line
}

fn call(id: Value, method: &str) -> Vec<u8> {
    line(json!({"jsonrpc":"2.0","id":id,"method":method,"params":{"name":"t"}}))
}

fn result(id: Value) -> Vec<u8> {
    line(json!({"jsonrpc":"2.0","id":id,"result":{}}))
}

fn lines(bytes: &[u8]) -> Vec<Value> {
    bytes
        .split_inclusive(|b| *b == b'\n')
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

/// Feed a client line; what passes on.
fn client(session: &mut Session, at: Instant, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    session.on_client_line(at, bytes, &mut out, 0);
    out
}

fn server(session: &mut Session, at: Instant, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    session.on_server_line(at, bytes, &mut out);
    out
}

#[test]
fn a_request_and_its_response_pass_byte_exact_and_are_audited() {
    let t0 = Instant::now();
    let mut session = Session::new(policy(), "c1".into());
    let request = call(json!("a"), "tools/call");
    assert_eq!(client(&mut session, t0, &request), request);
    assert_eq!(session.in_flight(), 1);
    // A server request with the same id is not a response to ours.
    let theirs = line(json!({"jsonrpc":"2.0","id":"a","method":"roots/list"}));
    assert_eq!(server(&mut session, t0, &theirs), theirs);
    // And the client's answer to it does not end ours either.
    assert_eq!(
        client(&mut session, t0, &result(json!("a"))),
        result(json!("a"))
    );
    assert_eq!(session.in_flight(), 1);
    let later = t0 + Duration::from_millis(40);
    let response = result(json!("a"));
    assert_eq!(server(&mut session, later, &response), response);
    assert_eq!(session.in_flight(), 0);
    let audit = session.take_audit();
    assert_eq!(audit.len(), 2);
    match &audit[0] {
        Audit::Request(McpRequest {
            request_id,
            method,
            name,
            params_sha256,
            line_sha256,
            irregular,
            ..
        }) => {
            assert_eq!(
                (request_id.as_ref().map(|id| id.get()), method.as_deref()),
                (Some("\"a\""), Some("tools/call"))
            );
            assert_eq!((line_sha256, irregular), (&None, &Vec::new()), "regular");
            assert_eq!(name.as_deref(), Some("t"));
            assert_eq!(params_sha256.as_ref().map(String::len), Some(64));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        audit[1],
        Audit::Response(McpResponse {
            call_id: "c1".into(),
            request_id: RequestId::new("\"a\""),
            method: Some("tools/call".into()),
            outcome: RequestOutcome::Result,
            reason: None,
            error_code: None,
            result_type: Some(ResultType::Complete),
            duration_ms: 40,
            bytes: response.len() as u64,
        })
    );
    let facts = session.facts();
    assert_eq!((facts.client.requests, facts.client.responses), (1, 1));
    assert_eq!((facts.server.requests, facts.server.responses), (1, 1));
    assert_eq!(facts.peak_in_flight, 1);
}

#[test]
fn a_timeout_cancels_at_the_server_answers_the_client_and_drops_the_late_response() {
    let t0 = Instant::now();
    let mut session = Session::new(
        SessionPolicy {
            default_timeout: Some(Duration::from_secs(60)),
            method_timeouts: vec![("tools/call".into(), Some(Duration::from_millis(1500)))],
            ..policy()
        },
        "c1".into(),
    );
    client(&mut session, t0, &call(json!(7), "tools/call"));
    client(&mut session, t0, &call(json!(8), "resources/list"));
    assert_eq!(session.deadline(), Some(t0 + Duration::from_millis(1500)));
    tick(&mut session, t0 + Duration::from_millis(1499));
    assert!(session.to_client.is_empty(), "not before the deadline");
    tick(&mut session, t0 + Duration::from_millis(1500));
    let answers = lines(&std::mem::take(&mut session.to_client));
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0]["id"], 7, "same id, same type");
    assert_eq!(answers[0]["error"]["code"], -32001);
    assert_eq!(
        answers[0]["error"]["data"]["mcp_bound"]["method"],
        "tools/call"
    );
    let notices = lines(&std::mem::take(&mut session.to_server));
    assert_eq!(notices[0]["method"], "notifications/cancelled");
    assert_eq!(notices[0]["params"]["requestId"], 7);
    // The server answers anyway: the client never sees a second response.
    assert!(server(&mut session, t0, &result(json!(7))).is_empty());
    // A response for an id we never saw passes on, counted.
    assert_eq!(
        server(&mut session, t0, &result(json!(99))).len(),
        result(json!(99)).len()
    );
    assert_eq!(session.deadline(), Some(t0 + Duration::from_secs(60)));
    let facts = session.facts();
    assert_eq!(facts.synthesized.request_timeout, 1);
    assert_eq!(facts.cancellations_sent, 1);
    assert_eq!(facts.late_responses_dropped, 1);
    assert_eq!(facts.unmatched_responses, 1);
    assert_eq!(facts.limits.method_timeouts_ms["tools/call"], Some(1500));
    let audit = session.take_audit();
    assert!(matches!(
        audit.last(),
        Some(Audit::Response(McpResponse {
            outcome: RequestOutcome::TimedOut,
            error_code: Some(-32001),
            ..
        }))
    ));
}

#[test]
fn progress_extends_a_deadline_only_when_asked() {
    let t0 = Instant::now();
    let with_token = line(json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
        "params":{"name":"slow","_meta":{"progressToken":"p1"}}}));
    let progress = line(json!({"jsonrpc":"2.0","method":"notifications/progress",
        "params":{"progressToken":"p1","progress":1}}));
    for resets in [false, true] {
        let mut session = Session::new(
            SessionPolicy {
                default_timeout: Some(Duration::from_secs(1)),
                resets_on_progress: resets,
                ..policy()
            },
            "c1".into(),
        );
        client(&mut session, t0, &with_token);
        let later = t0 + Duration::from_millis(900);
        assert_eq!(server(&mut session, later, &progress), progress);
        let expected = if resets { later } else { t0 } + Duration::from_secs(1);
        assert_eq!(session.deadline(), Some(expected), "resets: {resets}");
    }
}

#[test]
fn the_client_cancelling_takes_the_request_out_of_the_table() {
    let t0 = Instant::now();
    let mut session = Session::new(policy(), "c1".into());
    client(&mut session, t0, &call(json!(3), "tools/call"));
    let cancel = line(json!({"jsonrpc":"2.0","method":"notifications/cancelled",
        "params":{"requestId":3,"reason":"user"}}));
    assert_eq!(
        client(&mut session, t0, &cancel),
        cancel,
        "the server hears it"
    );
    assert_eq!(session.in_flight(), 0);
    assert_eq!(session.facts().cancelled_by_client, 1);
    assert!(matches!(
        session.take_audit().last(),
        Some(Audit::Response(McpResponse {
            outcome: RequestOutcome::Cancelled,
            ..
        }))
    ));
}

/// Each request knows where its line ends in the stream for the server;
/// the answer for a server gone says whether the stream had been written
/// that far (the first byte past it is the second request's).
#[test]
fn a_server_that_goes_away_says_which_requests_it_was_given_whole() {
    let t0 = Instant::now();
    let mut session = Session::new(policy(), "c1".into());
    let (first, second) = (call(json!(1), "tools/call"), call(json!(2), "tools/call"));
    let mut out = Vec::new();
    session.on_client_line(t0, &first, &mut out, 1000);
    session.on_client_line(t0, &second, &mut out, 1000);
    let end_of_first = 1000 + first.len() as u64;
    session.on_server_gone(t0, None, String::new(), end_of_first, false);
    client(&mut session, t0, &call(json!(3), "tools/call"));
    let written: Vec<(Value, Value)> = lines(&session.to_client)
        .iter()
        .map(|a| {
            (
                a["id"].clone(),
                a["error"]["data"]["mcp_bound"]["written_to_server"].clone(),
            )
        })
        .collect();
    assert_eq!(
        written,
        [
            (json!(1), json!(true)),
            (json!(2), json!(false)),
            (json!(3), json!(false))
        ]
    );
}

#[test]
fn a_server_that_goes_away_answers_for_every_request_in_flight_and_later_ones() {
    let t0 = Instant::now();
    let mut session = Session::new(policy(), "c1".into());
    client(&mut session, t0, &call(json!(1), "tools/call"));
    client(&mut session, t0, &call(json!("two"), "ping"));
    let exit = Exit::Code {
        code: 1,
        ntstatus: None,
    };
    let (count, cut) = session.on_server_gone(
        t0,
        Some(exit.clone()),
        "Traceback: boom\n".into(),
        u64::MAX,
        false,
    );
    let answers = lines(&std::mem::take(&mut session.to_client));
    assert_eq!(answers.len(), 2);
    assert_eq!(
        (answers[0]["id"].clone(), answers[1]["id"].clone()),
        (json!(1), json!("two"))
    );
    let data = &answers[0]["error"]["data"]["mcp_bound"];
    assert_eq!(answers[0]["error"]["code"], -32000);
    assert_eq!(data["stderr_tail"], "Traceback: boom\n");
    assert_eq!(data["call_id"], "c1");
    // A request after that is answered at once, never forwarded.
    assert!(client(&mut session, t0, &call(json!(3), "tools/call")).is_empty());
    assert_eq!(lines(&session.to_client)[0]["id"], 3);
    // What the going cut off (whose it is, the loop says).
    assert_eq!(count, 2);
    assert_eq!(cut[1].method, "ping");
    assert_eq!(cut[0].name.as_deref(), Some("t"));
    assert_eq!(session.facts().synthesized.server_exited, 3);
}

#[test]
fn past_max_in_flight_the_client_gets_an_error_and_memory_stays_bounded() {
    let t0 = Instant::now();
    let mut session = Session::new(policy(), "c1".into());
    for id in 0..10 {
        client(&mut session, t0, &call(json!(id), "tools/call"));
    }
    assert_eq!(session.in_flight(), 4);
    let answers = lines(&session.to_client);
    assert_eq!(answers.len(), 6);
    assert!(
        answers
            .iter()
            .all(|a| a["error"]["data"]["mcp_bound"]["reason"] == "too_many_in_flight")
    );
    assert_eq!(session.facts().peak_in_flight, 4);
}

#[test]
fn batches_are_tracked_per_element_and_rewritten_only_when_they_must_be() {
    let t0 = Instant::now();
    let mut session = timed(Duration::from_secs(1));
    let batch = b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"}, {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"b\"}]\n";
    assert_eq!(client(&mut session, t0, batch), batch, "byte-exact");
    assert_eq!(session.in_flight(), 2);
    tick(&mut session, t0 + Duration::from_secs(1));
    // Both timed out; the server's batch answer is dropped whole, and a
    // mixed one keeps the elements still owed, each byte-exact.
    let late = b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}},{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}]\n";
    assert!(server(&mut session, t0, late).is_empty());
    client(&mut session, t0, &call(json!(5), "c"));
    let mixed =
        b"[{\"jsonrpc\":\"2.0\",\"method\":\"n\"} ,{\"jsonrpc\":\"2.0\",\"id\":5, \"result\":1}]\n";
    assert_eq!(server(&mut session, t0, mixed), mixed);
    let facts = session.facts();
    assert_eq!(facts.late_responses_dropped, 2);
    assert_eq!((facts.client.requests, facts.server.notifications), (3, 1));
    // A client batch with one element over the limit: the rest goes on.
    let mut full = Session::new(
        SessionPolicy {
            max_in_flight: 1,
            ..policy()
        },
        "c".into(),
    );
    let out = client(&mut full, t0, batch);
    assert_eq!(out, b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"}]\n");
    assert_eq!(lines(&full.to_client)[0]["id"], 2);
}

/// With no gate and no journal, what is not JSON-RPC passes as it came.
/// Under an audit, a line that is not one JSON value is refused (a server
/// decoding a stream would read it with the next); a blank line and an
/// object that is no message still pass.
#[test]
fn what_is_not_jsonrpc_passes_on_counted() {
    let t0 = Instant::now();
    let plain = SessionPolicy {
        journal: false,
        ..policy()
    };
    let mut session = Session::new(plain, "c1".into());
    for bytes in [&b"hello\n"[..], b"{\"id\":1}\n", b"[]\n", b"\n"] {
        assert_eq!(client(&mut session, t0, bytes), bytes);
    }
    assert_eq!(session.facts().client.non_jsonrpc_lines, 4);
    assert_eq!(session.in_flight(), 0);
    assert!(session.to_client.is_empty() && !session.has_audit());
    let mut audited = Session::new(policy(), "c1".into());
    for (bytes, passes) in [
        (&b"hello\n"[..], false),
        (b"{\"id\":1}\n", true),
        (b"[]\n", false),
        (b"\n", true),
        (b"  \t\n", true),
        (
            b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
            false,
        ),
    ] {
        let out = client(&mut audited, t0, bytes);
        assert_eq!(out.is_empty(), !passes, "{bytes:?}");
    }
    let answers = lines(&audited.to_client);
    assert_eq!(answers.len(), 3);
    assert!(answers.iter().all(|a| a["id"].is_null()));
    assert_eq!(
        answers[2]["error"]["data"]["mcp_bound"]["refusal"],
        "byte_order_mark"
    );
    assert_eq!(audited.facts().refused, 3);
    assert_eq!(audited.take_audit().len(), 6, "each refusal: two entries");
}

/// An id spelled unlike its key (an escape, an exponent) is matched by its
/// key but answered, cancelled and audited as the client spelled it.
#[test]
fn an_id_is_answered_as_the_client_spelled_it() {
    let t0 = Instant::now();
    let mut session = timed(Duration::from_secs(1));
    let escaped =
        b"{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0062\",\"method\":\"tools/call\",\"params\":{}}\n";
    let exponent = b"{\"jsonrpc\":\"2.0\",\"id\":1e2,\"method\":\"tools/call\",\"params\":{}}\n";
    client(&mut session, t0, escaped);
    client(&mut session, t0, exponent);
    // The server answers "ab" in its own spelling: that ends the first.
    server(&mut session, t0, &result(json!("ab")));
    assert_eq!(session.in_flight(), 1);
    tick(&mut session, t0 + Duration::from_secs(1));
    let answer = String::from_utf8(std::mem::take(&mut session.to_client)).unwrap();
    assert!(
        answer.starts_with("{\"jsonrpc\":\"2.0\",\"id\":1e2,"),
        "{answer}"
    );
    let cancel = String::from_utf8(std::mem::take(&mut session.to_server)).unwrap();
    assert!(cancel.contains("\"requestId\":1e2"), "{cancel}");
    let ids: Vec<String> = session
        .take_audit()
        .into_iter()
        .map(|audit| audit.request_id().unwrap().get().to_string())
        .collect();
    assert_eq!(ids, ["\"a\\u0062\"", "1e2", "\"a\\u0062\"", "1e2"]);
}

/// `"result": null` is a success response: it ends its request, which is
/// audited as a result, and nothing more is ever said for that id.
#[test]
fn a_null_result_is_a_response() {
    let t0 = Instant::now();
    let mut session = timed(Duration::from_secs(1));
    client(&mut session, t0, &call(json!(7), "tools/call"));
    let null = line(json!({"jsonrpc":"2.0","id":7,"result":null}));
    assert_eq!(server(&mut session, t0, &null), null);
    assert_eq!(session.in_flight(), 0, "the response ended it");
    tick(&mut session, t0 + Duration::from_secs(2));
    assert!(session.to_client.is_empty(), "no second answer");
    let facts = session.facts();
    assert_eq!(facts.server.responses, 1);
    assert_eq!(facts.synthesized.request_timeout, 0);
    assert!(matches!(
        session.take_audit().last(),
        Some(Audit::Response(McpResponse {
            outcome: RequestOutcome::Result,
            ..
        }))
    ));
    // An error that is null is no error: with no result either, that is
    // not a response.
    client(&mut session, t0, &call(json!(8), "tools/call"));
    let nothing = line(json!({"jsonrpc":"2.0","id":8,"error":null}));
    server(&mut session, t0, &nothing);
    assert_eq!(session.in_flight(), 1);
}

/// A request entry: (id, method, name, irregular).
type Entry = (
    Option<String>,
    Option<String>,
    Option<String>,
    Vec<Irregular>,
);

/// The request entries the session made.
fn requests(session: &mut Session) -> Vec<Entry> {
    session
        .take_audit()
        .into_iter()
        .filter_map(|audit| match audit {
            Audit::Request(request) => Some((
                request.request_id.map(|id| id.get().to_string()),
                request.method,
                request.name,
                request.irregular,
            )),
            Audit::Response(_)
            | Audit::Task(_)
            | Audit::Decision(_)
            | Audit::ToolDrift(_)
            | Audit::Restart(_) => None,
        })
        .collect()
}

fn some(text: &str) -> Option<String> {
    Some(text.to_string())
}

/// A key the audit reads given twice is refused: answered -32600 and not
/// sent, since Node and Python keep the last key and would run what the
/// first one hid.
#[test]
fn a_key_the_audit_reads_given_twice_is_refused() {
    let t0 = Instant::now();
    let mut session = Session::new(policy(), "c1".into());
    for (line, id) in [
        (
            &br#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"rm"}}"#[..],
            json!(1),
        ),
        (
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"safe","n\u0061me":"rm"}}"#,
            json!(2),
        ),
        (
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"safe"},"params":{"name":"rm"}}"#,
            json!(3),
        ),
        // Which id a server keeps is unsure too: answered with null.
        (
            br#"{"jsonrpc":"2.0","id":4,"id":5,"method":"tools/call","params":{"name":"rm"}}"#,
            Value::Null,
        ),
    ] {
        assert!(client(&mut session, t0, line).is_empty(), "not sent");
        let answers = lines(&std::mem::take(&mut session.to_client));
        assert_eq!(answers.len(), 1);
        assert_eq!(answers[0]["id"], id);
        assert_eq!(answers[0]["error"]["code"], -32600);
        assert_eq!(
            answers[0]["error"]["data"]["mcp_bound"]["refusal"],
            "duplicate_key"
        );
    }
    // A notification with a duplicated method: dropped, with no answer.
    let notice = br#"{"jsonrpc":"2.0","method":"a","method":"b"}"#;
    assert!(client(&mut session, t0, notice).is_empty());
    assert!(session.to_client.is_empty());
    // In a batch, the element alone.
    let batch =
        br#"[{"jsonrpc":"2.0","id":6,"method":"x","method":"tools/call"},{"jsonrpc":"2.0","id":7,"method":"ping"}]"#;
    assert_eq!(
        client(&mut session, t0, batch),
        b"[{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}]\n"
    );
    let facts = session.facts();
    assert_eq!(facts.refused, 6);
    assert_eq!(facts.synthesized.invalid_request, 5);
    assert_eq!(
        session.in_flight(),
        1,
        "only the ping: {:?}",
        session.facts()
    );
    // Each refused message is journaled, marked, unanswered ones too;
    // the ping is not audited.
    let requests = requests(&mut session);
    assert_eq!(requests.len(), 6, "{requests:?}");
    assert!(
        requests
            .iter()
            .all(|(_, _, _, irregular)| irregular.contains(&Irregular::Refused)),
        "{requests:?}"
    );
}

/// What only the permissive parsers accept is read as they read it, and
/// journaled as irregular with the line's hash.
#[test]
fn what_only_permissive_parsers_accept_is_journaled() {
    let t0 = Instant::now();
    let mut session = Session::new(policy(), "c1".into());
    let nan = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"n","arguments":{"x":NaN}}}"#;
    assert_eq!(client(&mut session, t0, nan), nan, "passed on as it came");
    let lone = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"rm\ud800"}}"#;
    client(&mut session, t0, lone);
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"deep","a":{}{}}}}}"#,
        "[".repeat(500),
        "]".repeat(500)
    );
    client(&mut session, t0, deep.as_bytes());
    assert_eq!(
        requests(&mut session),
        [
            (
                some("1"),
                some("tools/call"),
                some("n"),
                vec![Irregular::NotStrictJson]
            ),
            (some("2"), some("tools/call"), some("rm\u{FFFD}"), vec![]),
            (some("3"), some("tools/call"), some("deep"), vec![]),
        ]
    );
    assert_eq!(session.in_flight(), 3, "each is tracked");
}

/// A line that is not UTF-8 is read as a server decoding it with U+FFFD
/// reads it, and journaled with the hash of the bytes as sent.
#[test]
fn a_line_that_is_not_utf8_is_journaled_with_its_hash() {
    let t0 = Instant::now();
    let mut session = Session::new(policy(), "c1".into());
    let line = b"{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"method\":\"tools/call\",\"params\":{\"name\":\"w\xffr\"}}\n";
    assert_eq!(client(&mut session, t0, line), line, "byte-exact");
    match session.take_audit().as_slice() {
        [
            Audit::Request(McpRequest {
                request_id,
                name,
                line_sha256,
                irregular,
                params_sha256,
                ..
            }),
        ] => {
            assert_eq!(request_id.as_ref().map(|id| id.get()), Some("\"u\""));
            assert_eq!(name.as_deref(), Some("w\u{FFFD}r"));
            assert_eq!(irregular, &[Irregular::InvalidUtf8]);
            let expected = hex(&Sha256::digest(&line[..line.len() - 1]));
            assert_eq!(line_sha256.as_deref(), Some(expected.as_str()));
            assert!(params_sha256.is_some());
        }
        other => panic!("{other:?}"),
    }
    // A batch that is not UTF-8 cannot be cut into its elements: refused.
    let batch = b"[{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\"}}]\n";
    assert!(client(&mut session, t0, batch).is_empty());
    assert_eq!(lines(&session.to_client)[0]["error"]["code"], -32600);
}

/// A request whose id is still in flight, or whose id cannot be tracked,
/// is journaled (irregular, untracked) and passed on: an answer from
/// mcp-bound would collide with the server's.
#[test]
fn duplicate_and_untrackable_ids_are_journaled_and_passed_on() {
    let t0 = Instant::now();
    let mut session = Session::new(policy(), "c1".into());
    client(&mut session, t0, &call(json!(1), "tools/call"));
    let again = call(json!(1.0), "tools/call");
    assert_eq!(client(&mut session, t0, &again), again);
    let long = call(json!("x".repeat(2000)), "tools/call");
    assert_eq!(client(&mut session, t0, &long), long);
    let object = call(json!({"a": 1}), "tools/call");
    assert_eq!(client(&mut session, t0, &object), object);
    assert!(session.to_client.is_empty(), "nothing answered here");
    let entries = requests(&mut session);
    assert_eq!(entries[0].3, []);
    assert_eq!(entries[1].0.as_deref(), Some("1.0"), "as written");
    assert_eq!(entries[1].3, [Irregular::DuplicateId]);
    assert_eq!(
        (entries[2].0.clone(), entries[2].3.clone()),
        (None, vec![Irregular::UntrackedId])
    );
    assert_eq!(entries[3].0.as_deref(), Some(r#"{"a":1}"#));
    assert_eq!(entries[3].3, [Irregular::UntrackedId]);
    assert_eq!(session.in_flight(), 1, "only the first is tracked");
}

/// The last line, with no newline before EOF, is read like any other and
/// journaled as unterminated.
#[test]
fn the_last_line_without_a_newline_is_read() {
    let t0 = Instant::now();
    let mut session = Session::new(policy(), "c1".into());
    let last = br#"{"jsonrpc":"2.0","id":"z","method":"tools/call","params":{"name":"end"}}"#;
    let mut out = Vec::new();
    session.on_client_last_line(t0, last, &mut out, 0);
    assert_eq!(out, last);
    assert_eq!(
        requests(&mut session),
        [(
            some("\"z\""),
            some("tools/call"),
            some("end"),
            vec![Irregular::Unterminated]
        )]
    );
    assert_eq!(session.in_flight(), 1);
}

/// A line over --max-message-bytes streams through unread, hashed as it
/// goes: its entry is made when the piece with the newline arrives, in the
/// same call that passes that piece on (the loop journals before it
/// writes to the server).
#[test]
fn a_line_over_the_bound_is_hashed_as_it_streams() {
    let mut session = Session::new(policy(), "c1".into());
    let mut out = Vec::new();
    session.on_client_overlong(b"{\"jsonrpc\":\"2.0\",", true, &mut out);
    session.on_client_overlong(b"\"id\":1,\"method\":\"tools/call\"", false, &mut out);
    assert!(!session.has_audit(), "not before its end");
    session.on_client_overlong(b"}\n", false, &mut out);
    let whole = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}";
    assert_eq!(out, [&whole[..], b"\n"].concat());
    match session.take_audit().as_slice() {
        [
            Audit::Request(McpRequest {
                request_id: None,
                method: None,
                line_sha256: Some(hash),
                irregular,
                ..
            }),
        ] => {
            assert_eq!(hash, &hex(&Sha256::digest(whole)));
            assert_eq!(irregular, &[Irregular::OverMaxMessageBytes]);
        }
        other => panic!("{other:?}"),
    }
    // Cut by EOF: journaled at EOF.
    session.on_client_overlong(b"{\"id\":2", true, &mut out);
    session.on_client_overlong_eof();
    assert!(matches!(
        session.take_audit().as_slice(),
        [Audit::Request(McpRequest { irregular, .. })]
            if irregular == &[Irregular::OverMaxMessageBytes, Irregular::Unterminated]
    ));
    assert_eq!(session.facts().client.non_jsonrpc_lines, 2);
}

/// A line holding a carriage return that a reader splitting on CR would
/// read as several messages is refused whole; a CR that splits off no
/// message (whitespace, the CRLF end) changes nothing.
#[test]
fn a_line_a_carriage_return_would_split_is_refused() {
    let t0 = Instant::now();
    let mut session = Session::new(policy(), "c1".into());
    let split = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"rm\"}}\n";
    assert!(client(&mut session, t0, split).is_empty());
    let ids: Vec<Value> = lines(&std::mem::take(&mut session.to_client))
        .iter()
        .map(|a| a["id"].clone())
        .collect();
    assert_eq!(ids, [json!(1), json!(2)]);
    // Hidden inside another request's params: the piece is a message.
    let hidden = b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":[\r{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\"}\r]}\n";
    assert!(client(&mut session, t0, hidden).is_empty());
    assert_eq!(lines(&std::mem::take(&mut session.to_client)).len(), 2);
    for fine in [
        &b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\r\n"[..],
        b"{\"jsonrpc\":\"2.0\",\r\"id\":6,\"method\":\"ping\"}\n",
    ] {
        assert_eq!(client(&mut session, t0, fine), fine);
    }
    assert_eq!(session.in_flight(), 2);
    assert_eq!(session.facts().refused, 2);
}

/// A client's response with a key given twice is no request: it passes.
#[test]
fn a_client_response_with_a_key_given_twice_passes() {
    let t0 = Instant::now();
    let mut session = Session::new(policy(), "c1".into());
    let response = br#"{"jsonrpc":"2.0","id":1,"id":2,"result":{}}"#;
    assert_eq!(client(&mut session, t0, response), response);
    assert!(session.to_client.is_empty());
    assert_eq!(session.facts().client.responses, 1);
}

fn listen(id: Value) -> Vec<u8> {
    line(
        json!({"jsonrpc":"2.0","id":id,"method":"subscriptions/listen",
        "params":{"notifications":{"toolsListChanged":true}}}),
    )
}

/// A stream is no stuck call: --request-timeout times calls, not a
/// `subscriptions/listen` nor a 2025 `tasks/result` (which blocks by
/// design). A method's own timeout still applies to them.
#[test]
fn the_default_deadline_times_calls_not_streams_or_task_results() {
    let t0 = Instant::now();
    let mut session = timed(Duration::from_secs(1));
    client(&mut session, t0, &listen(json!("l1")));
    client(
        &mut session,
        t0,
        &line(json!({"jsonrpc":"2.0","id":"r1","method":"tasks/result","params":{"taskId":"t"}})),
    );
    client(&mut session, t0, &call(json!("c1"), "tools/call"));
    tick(&mut session, t0 + Duration::from_secs(5));
    let answered: Vec<Value> = lines(&std::mem::take(&mut session.to_client))
        .iter()
        .map(|a| a["id"].clone())
        .collect();
    assert_eq!(answered, [json!("c1")], "only the call timed out");
    assert_eq!(session.in_flight(), 2);
    // An explicit per-method value applies to a stream too.
    let mut session = Session::new(
        SessionPolicy {
            default_timeout: Some(Duration::from_secs(1)),
            method_timeouts: vec![("subscriptions/listen".into(), Some(Duration::from_secs(3)))],
            ..policy()
        },
        "c1".into(),
    );
    client(&mut session, t0, &listen(json!(9)));
    assert_eq!(session.deadline(), Some(t0 + Duration::from_secs(3)));
}

/// The opening waits on the server's start, which the host times: the
/// default deadline leaves `initialize` and the `server/discover` probe
/// alone (a -32001 for the probe would read as "legacy" and change the
/// era), while a method's own value still applies; a server that dies
/// still answers them.
#[test]
fn the_default_deadline_leaves_the_opening_to_the_host() {
    let t0 = Instant::now();
    let mut session = timed(Duration::from_secs(1));
    client(&mut session, t0, &call(json!(0), "initialize"));
    client(&mut session, t0, &call(json!("p"), "server/discover"));
    client(&mut session, t0, &call(json!(1), "tools/list"));
    tick(&mut session, t0 + Duration::from_secs(5));
    let answered: Vec<Value> = lines(&std::mem::take(&mut session.to_client))
        .iter()
        .map(|a| a["id"].clone())
        .collect();
    assert_eq!(answered, [json!(1)], "only the call timed out");
    assert_eq!(session.in_flight(), 2);
    let mut session = Session::new(
        SessionPolicy {
            default_timeout: Some(Duration::from_secs(1)),
            method_timeouts: vec![("initialize".into(), Some(Duration::from_secs(20)))],
            ..policy()
        },
        "c1".into(),
    );
    client(&mut session, t0, &call(json!(0), "initialize"));
    assert_eq!(session.deadline(), Some(t0 + Duration::from_secs(20)));
}

/// The server ends a stream with `notifications/cancelled` naming it:
/// the stream leaves the table, and nothing is answered or cancelled for
/// it afterwards. A server's cancel naming any other id is not about a
/// client request (in the legacy era it cancels its own requests).
#[test]
fn a_server_that_ends_a_stream_takes_it_out_of_the_table() {
    let t0 = Instant::now();
    let mut session = Session::new(
        SessionPolicy {
            method_timeouts: vec![("subscriptions/listen".into(), Some(Duration::from_secs(1)))],
            ..policy()
        },
        "c1".into(),
    );
    client(&mut session, t0, &listen(json!("l1")));
    client(&mut session, t0, &call(json!("c1"), "tools/call"));
    let ends = |id: &str| {
        line(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":id}}))
    };
    assert_eq!(
        server(&mut session, t0, &ends("c1")),
        ends("c1"),
        "passed on"
    );
    assert_eq!(
        session.in_flight(),
        2,
        "a call is not ended by a server's cancel"
    );
    assert_eq!(server(&mut session, t0, &ends("l1")), ends("l1"));
    assert_eq!(session.in_flight(), 1);
    tick(&mut session, t0 + Duration::from_secs(2));
    assert!(session.to_client.is_empty() && session.to_server.is_empty());
    // Its answer, should one come after all, is dropped.
    assert!(server(&mut session, t0, &result(json!("l1"))).is_empty());
    assert_eq!(session.facts().late_responses_dropped, 1);
}

/// At a host's shutdown an open stream ends without an answer, and is
/// not among what the end cut off; a call in flight is.
#[test]
fn at_a_host_shutdown_streams_end_without_an_answer() {
    let t0 = Instant::now();
    let mut session = Session::new(policy(), "c1".into());
    client(&mut session, t0, &listen(json!("l1")));
    client(&mut session, t0, &call(json!("c1"), "tools/call"));
    let (count, cut) = session.on_server_gone(t0, None, String::new(), u64::MAX, true);
    assert_eq!(count, 1);
    assert_eq!(cut[0].id.get(), "\"c1\"");
    let answered: Vec<Value> = lines(&session.to_client)
        .iter()
        .map(|a| a["id"].clone())
        .collect();
    assert_eq!(answered, [json!("c1")]);
    // A crash, though, ends the stream with an answer: the client must
    // know it has to listen again.
    let mut session = Session::new(policy(), "c1".into());
    client(&mut session, t0, &listen(json!("l1")));
    let (count, _) = session.on_server_gone(t0, None, String::new(), u64::MAX, false);
    assert_eq!(count, 1);
    assert_eq!(lines(&session.to_client)[0]["id"], "l1");
}

/// A response for a request the client cancelled is dropped and counted,
/// as after mcp-bound's own timeout: some hosts drop the connection on a
/// response for an id they no longer know.
#[test]
fn an_answer_for_a_cancelled_request_is_dropped() {
    let t0 = Instant::now();
    let mut session = Session::new(policy(), "c1".into());
    client(&mut session, t0, &call(json!(5), "tools/call"));
    let cancel =
        line(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}));
    client(&mut session, t0, &cancel);
    assert!(server(&mut session, t0, &result(json!(5))).is_empty());
    let facts = session.facts();
    assert_eq!(
        (facts.late_responses_dropped, facts.unmatched_responses),
        (1, 0)
    );
}

fn result_of(id: Value, result: Value) -> Vec<u8> {
    line(json!({"jsonrpc":"2.0","id":id,"result":result}))
}

/// Each result's type is journaled: an MRTR round (`input_required`) is
/// not a final result; the client's retry is a request of its own, with
/// its own pair of entries. Only a call that may be answered so has its
/// result read.
#[test]
fn a_results_type_is_journaled_and_an_mrtr_round_is_not_a_final_result() {
    let t0 = Instant::now();
    let mut session = Session::new(policy(), "c1".into());
    client(&mut session, t0, &call(json!(1), "tools/call"));
    server(
        &mut session,
        t0,
        &result_of(
            json!(1),
            json!({"resultType": "input_required",
        "inputRequests": {"ok": {"method": "elicitation/create", "params": {}}}, "requestState": "s"}),
        ),
    );
    client(&mut session, t0, &call(json!(2), "tools/call"));
    server(
        &mut session,
        t0,
        &result_of(json!(2), json!({"resultType": "complete", "content": []})),
    );
    client(&mut session, t0, &call(json!(3), "tools/call"));
    server(
        &mut session,
        t0,
        &result_of(json!(3), json!({"content": []})),
    );
    let types: Vec<(String, Option<ResultType>)> = session
        .take_audit()
        .into_iter()
        .filter_map(|audit| match audit {
            Audit::Response(response) => Some((
                response.request_id.unwrap().get().to_string(),
                response.result_type,
            )),
            Audit::Request(_)
            | Audit::Task(_)
            | Audit::Decision(_)
            | Audit::ToolDrift(_)
            | Audit::Restart(_) => None,
        })
        .collect();
    assert_eq!(
        types,
        [
            ("1".into(), Some(ResultType::InputRequired)),
            ("2".into(), Some(ResultType::Complete)),
            ("3".into(), Some(ResultType::Complete)),
        ]
    );
}

/// The task entries the session made: (the creating call's id, task id,
/// status, error code).
fn task_ends(session: &mut Session) -> Vec<(String, String, TaskStatus, Option<i64>)> {
    session
        .take_audit()
        .into_iter()
        .filter_map(|audit| match audit {
            Audit::Task(task) => Some((
                task.request_id.get().to_string(),
                task.task_id,
                task.status,
                task.error_code,
            )),
            Audit::Request(_)
            | Audit::Response(_)
            | Audit::Decision(_)
            | Audit::ToolDrift(_)
            | Audit::Restart(_) => None,
        })
        .collect()
}

fn request_of(id: Value, method: &str, params: Value) -> Vec<u8> {
    line(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
}

/// An audited tools/call `id`, answered with a 2025 CreateTaskResult.
fn created_task(session: &mut Session, t0: Instant, id: Value, task_id: &str) {
    client(session, t0, &call(id.clone(), "tools/call"));
    let created = json!({"task": {"taskId": task_id, "status": "working"}});
    server(session, t0, &result_of(id, created));
}

/// A task created by an audited tools/call is linked to it by its id; its
/// end, as tasks/get, tasks/result or a status notification tell it, is
/// journaled against that call, once.
#[test]
fn a_tasks_end_is_journaled_against_the_call_that_created_it() {
    let t0 = Instant::now();
    let mut session = Session::new(policy(), "c1".into());
    // 2025-11-25: a CreateTaskResult, then a tasks/result that blocks.
    created_task(&mut session, t0, json!(1), "a");
    client(
        &mut session,
        t0,
        &request_of(json!(2), "tasks/result", json!({"taskId": "a"})),
    );
    server(
        &mut session,
        t0,
        &result_of(json!(2), json!({"content": []})),
    );
    // The extension: resultType task, then tasks/get polling.
    client(&mut session, t0, &call(json!(3), "tools/call"));
    server(
        &mut session,
        t0,
        &result_of(
            json!(3),
            json!({"resultType": "task", "task": {"taskId": "b", "status": "working"}}),
        ),
    );
    client(
        &mut session,
        t0,
        &request_of(json!(4), "tasks/get", json!({"taskId": "b"})),
    );
    server(
        &mut session,
        t0,
        &result_of(json!(4), json!({"taskId": "b", "status": "working"})),
    );
    client(
        &mut session,
        t0,
        &request_of(json!(5), "tasks/get", json!({"taskId": "b"})),
    );
    server(
        &mut session,
        t0,
        &result_of(
            json!(5),
            json!({"taskId": "b", "status": "failed",
        "error": {"code": -32603, "message": "boom"}}),
        ),
    );
    // A status notification ends a third; a later poll says nothing more.
    client(&mut session, t0, &call(json!(6), "tools/call"));
    server(
        &mut session,
        t0,
        &result_of(
            json!(6),
            json!({"task": {"taskId": "c", "status": "working"}}),
        ),
    );
    let status = line(
        json!({"jsonrpc":"2.0","method":"notifications/tasks/status",
        "params": {"taskId": "c", "status": "cancelled"}}),
    );
    server(&mut session, t0, &status);
    client(
        &mut session,
        t0,
        &request_of(json!(7), "tasks/get", json!({"taskId": "c"})),
    );
    server(
        &mut session,
        t0,
        &result_of(json!(7), json!({"taskId": "c", "status": "cancelled"})),
    );
    assert_eq!(
        task_ends(&mut session),
        [
            ("1".into(), "a".into(), TaskStatus::Completed, None),
            ("3".into(), "b".into(), TaskStatus::Failed, Some(-32603)),
            ("6".into(), "c".into(), TaskStatus::Cancelled, None),
        ]
    );
}

/// A server that goes away loses its tasks: each is journaled as lost,
/// and a tasks/result waiting on one is answered as any request in flight.
#[test]
fn a_server_that_goes_away_loses_its_tasks() {
    let t0 = Instant::now();
    let mut session = Session::new(policy(), "c1".into());
    created_task(&mut session, t0, json!(1), "a");
    client(
        &mut session,
        t0,
        &request_of(json!(2), "tasks/result", json!({"taskId": "a"})),
    );
    session.take_audit();
    session.on_server_gone(t0, None, String::new(), u64::MAX, false);
    assert_eq!(lines(&session.to_client)[0]["id"], 2);
    assert_eq!(
        task_ends(&mut session),
        [("1".into(), "a".into(), TaskStatus::Lost, None)]
    );
}

/// A request that times out while the server wrote to its stderr gets
/// the end of what it wrote in its message (some hosts show the model only
/// the message), counted; one that times out in silence does not.
#[test]
fn a_timed_out_request_carries_what_the_server_wrote_while_it_ran() {
    let t0 = Instant::now();
    let mut session = timed(Duration::from_secs(1));
    session.note_stderr_seen(100);
    client(&mut session, t0, &call(json!(1), "tools/call"));
    client(&mut session, t0, &call(json!(2), "tools/call"));
    session.note_stderr_seen(130);
    let mut asked = Vec::new();
    session.tick(t0 + Duration::from_secs(1), &mut |since| {
        asked.push(since);
        "connecting to db...\nretry 3 failed\n".to_string()
    });
    assert_eq!(asked, [30, 30], "the bytes written while each ran");
    let answers = lines(&std::mem::take(&mut session.to_client));
    assert_eq!(
        answers[0]["error"]["message"],
        "Request timed out after 1s (mcp-bound --request-timeout)\n\nThe server's stderr while it ran (masked):\nconnecting to db...\nretry 3 failed"
    );
    assert_eq!(session.facts().agent_excerpts.answers, 2);
    let mut quiet = timed(Duration::from_secs(1));
    client(&mut quiet, t0, &call(json!(3), "tools/call"));
    quiet.tick(t0 + Duration::from_secs(1), &mut |_| {
        panic!("nothing was written")
    });
    let answer = &lines(&quiet.to_client)[0];
    assert!(
        !answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("stderr")
    );
    assert_eq!(quiet.facts().agent_excerpts.answers, 0);
}
