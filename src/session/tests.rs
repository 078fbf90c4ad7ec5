//! The session policy without processes: lines and instants in, lines,
//! answers and facts out.

use super::*;
use serde_json::{Value, json};

fn policy() -> SessionPolicy {
    SessionPolicy {
        default_timeout: None,
        method_timeouts: Vec::new(),
        resets_on_progress: false,
        max_in_flight: 4,
        audit: AuditRequests::Tools,
        restart: RestartPolicy {
            mode: crate::record::mcp::RestartMode::Never,
            max_restarts: 0,
            window: Duration::from_secs(1),
            backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
        },
    }
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
        Audit::Request {
            id,
            method,
            name,
            params_sha256,
        } => {
            assert_eq!((id.as_str(), method.as_str()), ("\"a\"", "tools/call"));
            assert_eq!(name.as_deref(), Some("t"));
            assert_eq!(params_sha256.as_ref().map(String::len), Some(64));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        audit[1],
        Audit::Response {
            id: "\"a\"".into(),
            method: "tools/call".into(),
            outcome: RequestOutcome::Result,
            error_code: None,
            duration_ms: 40,
            bytes: response.len() as u64,
        }
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
    session.tick(t0 + Duration::from_millis(1499));
    assert!(session.to_client.is_empty(), "not before the deadline");
    session.tick(t0 + Duration::from_millis(1500));
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
        Some(Audit::Response {
            outcome: RequestOutcome::TimedOut,
            error_code: Some(-32001),
            ..
        })
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
        Some(Audit::Response {
            outcome: RequestOutcome::Cancelled,
            ..
        })
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
    session.on_server_gone(t0, None, String::new(), end_of_first);
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
    let exit = Exit::Code { code: 1 };
    session.on_server_gone(t0, Some(exit.clone()), "Traceback: boom\n".into(), u64::MAX);
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
    let facts = session.facts();
    assert_eq!(facts.in_flight_at_exit, 2);
    assert_eq!(facts.synthesized.server_exited, 3);
    assert_eq!(facts.interrupted[1].method, "ping");
    assert_eq!(facts.interrupted[0].name.as_deref(), Some("t"));
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
    session.tick(t0 + Duration::from_secs(1));
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

#[test]
fn what_is_not_jsonrpc_passes_on_counted() {
    let t0 = Instant::now();
    let mut session = Session::new(policy(), "c1".into());
    for bytes in [&b"hello\n"[..], b"{\"id\":1}\n", b"[]\n", b"\n"] {
        assert_eq!(client(&mut session, t0, bytes), bytes);
    }
    assert_eq!(session.facts().client.non_jsonrpc_lines, 4);
    assert_eq!(session.in_flight(), 0);
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
    session.tick(t0 + Duration::from_secs(1));
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
        .map(|audit| match audit {
            Audit::Request { id, .. } | Audit::Response { id, .. } => id,
        })
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
    session.tick(t0 + Duration::from_secs(2));
    assert!(session.to_client.is_empty(), "no second answer");
    let facts = session.facts();
    assert_eq!(facts.server.responses, 1);
    assert_eq!(facts.synthesized.request_timeout, 0);
    assert!(matches!(
        session.take_audit().last(),
        Some(Audit::Response {
            outcome: RequestOutcome::Result,
            ..
        })
    ));
    // An error that is null is no error: with no result either, that is
    // not a response.
    client(&mut session, t0, &call(json!(8), "tools/call"));
    let nothing = line(json!({"jsonrpc":"2.0","id":8,"error":null}));
    server(&mut session, t0, &nothing);
    assert_eq!(session.in_flight(), 1);
}
