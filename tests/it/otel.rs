//! Span export, through the real binary, against a real
//! OTLP/HTTP receiver (tests/fixtures/otlp_receiver.py) that decodes each
//! export with the official opentelemetry-proto definitions: the call's
//! span, each MCP request's span and its parentage, a client's
//! `traceparent`, a collector that stalls or refuses, and what must never
//! be exported. Without the receiver's package the tests that need it say
//! so and pass, unless MCP_BOUND_INTEROP=require (as in CI).

use crate::util;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use util::{Call, parse_message as parse, rpc_request as request, server, sha256_hex};

const PYTHON: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/interop/.venv/bin/python"
);
const RECEIVER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/otlp_receiver.py"
);

/// A receiver on 127.0.0.1, killed when dropped.
struct Receiver {
    child: Child,
    port: u16,
    out: PathBuf,
    _dir: tempfile::TempDir,
}

impl Receiver {
    /// None (and a SKIPPED line) without the opentelemetry-proto package.
    fn start(mode: &str) -> Option<Receiver> {
        let check = Command::new(PYTHON)
            .args([
                "-c",
                "import opentelemetry.proto.collector.trace.v1.trace_service_pb2",
            ])
            .output();
        if !check.is_ok_and(|out| out.status.success()) {
            let install = "python3 -m venv tests/interop/.venv && tests/interop/.venv/bin/pip install -r tests/interop/requirements.txt";
            if std::env::var("MCP_BOUND_INTEROP").as_deref() == Ok("require") {
                panic!(
                    "the OTLP receiver needs opentelemetry-proto in tests/interop/.venv (install: {install})"
                );
            }
            skipped!(
                "no opentelemetry-proto in tests/interop/.venv; install with: {install} (.ci/run does)"
            );
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("exports.jsonl");
        let mut child = Command::new(PYTHON)
            .args([RECEIVER, out.to_str().unwrap(), mode])
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the receiver");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .strip_prefix("READY ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("the receiver did not start: {line:?}"));
        Some(Receiver {
            child,
            port,
            out,
            _dir: dir,
        })
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every export so far, each checked to have decoded.
    fn exports(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        text.lines()
            .map(|line| {
                let export: Value = serde_json::from_str(line).expect("the receiver's line");
                assert!(
                    export.get("malformed").is_none(),
                    "an export the official definitions cannot decode: {}",
                    export["malformed"]
                );
                export
            })
            .collect()
    }

    /// Block until at least `n` exports came (a handshake on the file).
    fn wait_for(&self, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let exports = self.exports();
            if exports.len() >= n {
                return exports;
            }
            assert!(
                Instant::now() < deadline,
                "{} exports after 30 s: {exports:?}",
                exports.len()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Every span exported, flat.
    fn spans(&self) -> Vec<Value> {
        spans_of(&self.exports())
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spans_of(exports: &[Value]) -> Vec<Value> {
    let mut spans = Vec::new();
    for export in exports {
        for resource in export["export"]["resourceSpans"]
            .as_array()
            .into_iter()
            .flatten()
        {
            for scope in resource["scopeSpans"].as_array().into_iter().flatten() {
                spans.extend(scope["spans"].as_array().into_iter().flatten().cloned());
            }
        }
    }
    spans
}

/// A span's attribute, as its JSON value (stringValue, intValue...).
fn attr(span: &Value, key: &str) -> Value {
    span["attributes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["key"] == key)
        .map(|a| {
            let value = &a["value"];
            value
                .get("stringValue")
                .or(value.get("intValue"))
                .or(value.get("boolValue"))
                .cloned()
                .unwrap_or(Value::Null)
        })
        .unwrap_or(Value::Null)
}

/// An id as OTLP JSON carries it (base64) in lowercase hex.
fn hex_id(value: &Value) -> String {
    let text = value.as_str().unwrap_or_default();
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = String::new();
    for c in text.bytes().filter(|c| *c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            _ => 63,
        };
        bits = bits << 6 | u32::from(v);
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push_str(&format!("{:02x}", (bits >> count) & 0xff));
        }
    }
    out
}

fn with_otel(call: Call, receiver: &Receiver) -> Call {
    call.env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint())
        .env("OTEL_SERVICE_NAME", "agents-test")
        .opt(&["--otel-flush-timeout", "20s"])
}

/// How many threads mcp-bound has (its /proc/PID/task).
fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count())
}

#[test]
fn a_plain_call_is_one_span_with_the_records_facts_and_nothing_secret() {
    let Some(receiver) = Receiver::start("ok") else {
        return;
    };
    let done = with_otel(
        Call::sh("echo out; echo 'retrying; password=hunter2 token=sk-live-0123456789abcdef' >&2; exit 3; : ARGUMENT_TEXT"),
        &receiver,
    )
    .env("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=k%3Dsecret-header")
    .run();
    // The record after the last flush says what was exported, not what
    // was known before it (0 exported then read as "nothing there").
    done.expect_state("completed", 3)
        .expect("/otel/spans_queued", json!(1))
        .expect("/otel/spans_exported", json!(1))
        .expect("/otel/spans_pending", json!(0))
        .expect("/otel/spans_dropped", json!(0))
        .expect("/otel/error", Value::Null)
        .expect("/otel/propagate", json!(false));
    let exports = receiver.wait_for(1);
    // The key went as a header, and nowhere else.
    assert_eq!(exports[0]["headers"]["x-api-key"], "k=secret-header");
    assert_eq!(exports[0]["path"], "/v1/traces");
    assert!(
        !done
            .record_text
            .as_deref()
            .unwrap_or("")
            .contains("secret-header")
    );
    assert!(!done.stderr_text().contains("secret-header"));
    let spans = spans_of(&exports);
    assert_eq!(spans.len(), 1, "{spans:?}");
    let span = &spans[0];
    assert_eq!(span["name"], "mcp-bound sh");
    assert_eq!(span["kind"], "SPAN_KIND_INTERNAL");
    assert_eq!(
        attr(span, "mcp_bound.call_id"),
        done.field("/call_id").clone()
    );
    assert_eq!(attr(span, "mcp_bound.state"), "completed");
    assert_eq!(attr(span, "process.exit.code"), "3");
    assert_eq!(attr(span, "error.type"), "exit_status");
    assert_eq!(span["status"]["code"], "STATUS_CODE_ERROR");
    assert_eq!(
        attr(span, "mcp_bound.stderr.bytes_seen"),
        json!(done.field("/stderr/bytes_seen").to_string())
    );
    assert!(
        span["parentSpanId"].is_null(),
        "the call's span is a root: {span}"
    );
    let events: Vec<&str> = span["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(
        events.contains(&"dispatched") && events.contains(&"helper_exited"),
        "{events:?}"
    );
    let resource = &exports[0]["export"]["resourceSpans"][0]["resource"];
    assert_eq!(
        resource["attributes"][0]["value"]["stringValue"],
        "agents-test"
    );
    // No argument text, no secret, in any byte of any export.
    for export in &exports {
        let raw = export["raw"].as_str().unwrap();
        for never in [
            "ARGUMENT_TEXT",
            "hunter2",
            "sk-live-0123456789abcdef",
            "secret-header",
            "retrying",
        ] {
            assert!(!raw.contains(never), "{never} was exported");
        }
    }
}

#[test]
fn off_by_default_no_thread_and_no_otel_in_the_record() {
    let mut run = Call::sh("echo READY; read line; exit 0")
        .stdin(Stdio::piped())
        .start();
    run.wait_for_line("READY");
    assert_eq!(threads(run.pid()), 1, "export off: no thread");
    run.close_stdin();
    let done = run.finish();
    done.expect_state("completed", 0)
        .expect("/otel", Value::Null);
}

#[test]
fn a_collector_that_cannot_be_used_from_the_environment_is_said_not_fatal() {
    let done = Call::sh("echo done")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "https://api.example.com")
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=never-shown")
        .run();
    done.expect_state("completed", 0)
        .expect("/otel/spans_queued", json!(0));
    let error = done
        .field("/otel/error")
        .as_str()
        .unwrap_or_default()
        .to_string();
    done.check(
        error.contains("https:// is not supported"),
        "the record says why",
    );
    done.check(
        done.stderr_text()
            .contains("mcp-bound: span export is off: OTEL_EXPORTER_OTLP_ENDPOINT: https://"),
        "one line on stderr says so",
    );
    done.check(
        !done.stderr_text().contains("never-shown"),
        "no header value",
    );
    // Asked for on the command line, the same setting is a usage error.
    let refused = Call::sh("echo ran")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "https://api.example.com")
        .opt(&["--otel", "on"])
        .without_record()
        .run();
    refused.expect_code(125);
    refused.check(refused.stdout.is_empty(), "nothing ran");
    refused.check(
        refused
            .stderr_text()
            .starts_with("mcp-bound: --otel on: OTEL_EXPORTER_OTLP_ENDPOINT: https://")
            && refused
                .stderr_text()
                .trim_end()
                .ends_with("nothing was started")
            && refused.stderr_text().lines().count() == 1,
        "one line, exit 125",
    );
}

/// An MCP session: each request its own span, the call's span their parent,
/// a timed-out, a crashed and a denied call with their error.type, the
/// gate's decision as an event, and a client's traceparent as the parent
/// (the call's span then a link).
#[test]
fn an_mcp_session_is_a_span_per_request_under_the_calls_span() {
    let Some(receiver) = Receiver::start("ok") else {
        return;
    };
    let mut run = with_otel(server(&[]), &receiver)
        .opt(&[
            "--mcp",
            "--request-timeout",
            "300ms",
            "--request-timeout",
            "initialize=0",
            "--tool-deny",
            "rm_rf",
            "--restart",
            "on-failure",
            "--restart-backoff",
            "10ms",
        ])
        .start();
    run.send(&request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25"}),
    ));
    assert_eq!(parse(&run.read_line())["id"], 0);
    let host_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let host_span = "00f067aa0ba902b7";
    run.send(&request(
        1,
        "tools/call",
        json!({"name": "search", "arguments": {"q": "ARGUMENT_TEXT"},
               "_meta": {"traceparent": format!("00-{host_trace}-{host_span}-01"), "tracestate": "rojo=1"}}),
    ));
    assert!(parse(&run.read_line())["result"].is_object());
    run.send(&request(2, "sleep", json!({"ms": 60_000})));
    assert_eq!(parse(&run.read_line())["error"]["code"], -32001);
    run.send(&request(
        "d",
        "tools/call",
        json!({"name": "rm_rf", "arguments": {}}),
    ));
    let denied = parse(&run.read_line());
    assert_eq!(
        (denied["id"].clone(), denied["error"]["code"].clone()),
        (json!("d"), json!(-32000)),
        "{denied}"
    );
    // Denied with the host's context: its span is still in the host's trace.
    run.send(&request(
        "d2",
        "tools/call",
        json!({"name": "rm_rf", "_meta": {"traceparent": format!("00-{host_trace}-{host_span}-01")}}),
    ));
    assert_eq!(parse(&run.read_line())["id"], "d2");
    run.send(&request(3, "crash", json!({"code": 3, "stderr": "boom"})));
    let crashed = parse(&run.read_line());
    assert_eq!(crashed["id"], 3, "{crashed}");
    // The server is started again: a request after it is answered.
    run.send(&request(4, "echo", json!({"after": "restart"})));
    assert_eq!(parse(&run.read_line())["id"], 4);
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/otel/spans_dropped", json!(0))
        .expect("/otel/error", Value::Null);
    let spans = receiver.spans();
    let call = spans
        .iter()
        .find(|s| s["kind"] == "SPAN_KIND_INTERNAL")
        .expect("the call's span");
    let call_trace = hex_id(&call["traceId"]);
    let call_span = hex_id(&call["spanId"]);
    let by_id = |id: &str| {
        spans
            .iter()
            .find(|s| attr(s, "jsonrpc.request.id") == id)
            .unwrap_or_else(|| panic!("no span for request {id}: {spans:?}"))
    };
    for (id, name, error) in [
        ("0", "initialize", Value::Null),
        ("2", "sleep", json!("request_timeout")),
        ("d", "tools/call rm_rf", json!("tool_denied")),
        ("3", "crash", json!("server_exited")),
        ("4", "echo", Value::Null),
    ] {
        let span = by_id(id);
        assert_eq!(span["name"], name, "{span}");
        assert_eq!(span["kind"], "SPAN_KIND_CLIENT");
        assert_eq!(attr(span, "error.type"), error, "{span}");
        assert_eq!(
            hex_id(&span["traceId"]),
            call_trace,
            "request {id} is in the call's trace"
        );
        assert_eq!(
            hex_id(&span["parentSpanId"]),
            call_span,
            "request {id} is the call's child"
        );
        assert_eq!(attr(span, "mcp.protocol.version"), "2025-11-25");
        assert_eq!(attr(span, "network.transport"), "pipe");
    }
    let denied = by_id("d");
    assert_eq!(attr(denied, "gen_ai.tool.name"), "rm_rf");
    assert_eq!(attr(denied, "gen_ai.operation.name"), "execute_tool");
    let decision = &denied["events"][0];
    assert_eq!(decision["name"], "mcp_bound.tool_decision", "{denied}");
    assert_eq!(attr(decision, "mcp_bound.decision"), "denied");
    let denied_joined = by_id("d2");
    assert_eq!(
        hex_id(&denied_joined["parentSpanId"]),
        host_span,
        "{denied_joined}"
    );
    assert_eq!(attr(denied_joined, "error.type"), "tool_denied");
    // The host's traceparent is the parent; the call's span a link.
    let joined = by_id("1");
    assert_eq!(joined["name"], "tools/call search");
    assert_eq!(hex_id(&joined["traceId"]), host_trace);
    assert_eq!(hex_id(&joined["parentSpanId"]), host_span);
    assert_eq!(joined["traceState"], "rojo=1");
    assert_eq!(hex_id(&joined["links"][0]["spanId"]), call_span, "{joined}");
    assert_eq!(attr(joined, "mcp_bound.outcome"), "result");
    // The restart is an event of the call's span.
    let events: Vec<&str> = call["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(events.contains(&"restart_scheduled"), "{events:?}");
    for export in receiver.exports() {
        assert!(
            !export["raw"].as_str().unwrap().contains("ARGUMENT_TEXT"),
            "arguments were exported"
        );
    }
}

/// A collector that stalls: the session goes on, the queue's bound drops
/// and counts, and the exit waits only the flush bound (not the export
/// timeout, a minute here).
#[test]
fn a_stalled_collector_costs_the_call_only_dropped_spans() {
    let Some(receiver) = Receiver::start("stall") else {
        return;
    };
    let mut run = server(&[])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint())
        .env("OTEL_BSP_MAX_QUEUE_SIZE", "1")
        .env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1")
        .env("OTEL_BSP_SCHEDULE_DELAY", "0")
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "120000")
        .opt(&["--mcp", "--otel-flush-timeout", "200ms"])
        .start();
    for id in 0..8 {
        run.send(&request(id, "echo", json!({})));
        assert_eq!(parse(&run.read_line())["id"], id);
    }
    run.close_stdin();
    let started = Instant::now();
    let done = run.finish();
    let waited = started.elapsed();
    done.expect_state("shut_down", 0);
    let queued = done.field("/otel/spans_queued").as_u64().unwrap();
    let dropped = done.field("/otel/spans_dropped").as_u64().unwrap();
    done.check(queued + dropped == 9, "every span queued or dropped");
    done.check(dropped >= 6, "the queue's bound dropped what did not fit");
    done.check(
        waited < Duration::from_secs(60),
        "the exit did not wait for the stalled export",
    );
}

/// A collector that refuses (HTTP 503): counted, said, never a failure.
#[test]
fn a_refusing_collector_is_counted_and_said() {
    let Some(receiver) = Receiver::start("refuse") else {
        return;
    };
    let mut run = server(&[])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint())
        .env("OTEL_BSP_SCHEDULE_DELAY", "0")
        .opt(&["--mcp"])
        .start();
    run.send(&request(1, "echo", json!({})));
    assert_eq!(parse(&run.read_line())["id"], 1);
    // The refused export has reached the receiver; the exporter counts it
    // once the answer is read.
    receiver.wait_for(1);
    run.send(&request(2, "echo", json!({})));
    assert_eq!(parse(&run.read_line())["id"], 2);
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0);
    let error = done
        .field("/otel/error")
        .as_str()
        .unwrap_or_default()
        .to_string();
    done.check(
        error.ends_with("answered HTTP 503"),
        "the record says the collector refused",
    );
    done.check(
        done.field("/otel/spans_dropped").as_u64() >= Some(1),
        "counted",
    );
}

/// Nothing listening: the call is not slowed or failed.
#[test]
fn nothing_listening_is_an_error_in_the_record_only() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let done = Call::sh("echo fine")
        .env(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            &format!("http://127.0.0.1:{port}/v1/traces"),
        )
        .run();
    done.expect_state("completed", 0)
        .expect("/otel/spans_queued", json!(1));
    assert_eq!(done.stdout, b"fine\n");
}

/// --otel-propagate: the server gets mcp-bound's span as the request's
/// traceparent (the host's trace kept), the exported span is that span,
/// and the journal's params_sha256 is still of what the client sent.
/// Without it the server gets the client's bytes.
#[test]
fn propagation_names_our_span_to_the_server_and_only_when_asked() {
    let Some(receiver) = Receiver::start("ok") else {
        return;
    };
    let host_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let client_tp = format!("00-{host_trace}-00f067aa0ba902b7-01");
    let params = json!({"q": 1, "_meta": {"traceparent": client_tp, "tracestate": "rojo=1"}});
    let line = request(7, "echo", params.clone());
    for propagate in [false, true] {
        let journal = tempfile::NamedTempFile::new().unwrap();
        let journal_path = journal.path().to_str().unwrap().to_string();
        let mut call = with_otel(server(&[]), &receiver).opt(&[
            "--mcp",
            "--journal",
            &journal_path,
            "--journal-requests",
            "all",
        ]);
        if propagate {
            call = call.opt(&["--otel-propagate"]);
        }
        let mut run = call.start();
        run.send(&line);
        let answer = parse(&run.read_line());
        run.send(&request(8, "echo", json!({})));
        let bare = parse(&run.read_line());
        run.close_stdin();
        let done = run.finish();
        done.expect_state("shut_down", 0)
            .expect("/otel/propagate", json!(propagate));
        let spans = receiver.spans();
        let span = spans
            .iter()
            .rev()
            .find(|s| attr(s, "jsonrpc.request.id") == "7")
            .expect("the request's span");
        let seen = answer["result"]["_meta"]["traceparent"]
            .as_str()
            .unwrap()
            .to_string();
        if propagate {
            // The server saw our span, in the host's trace.
            assert_eq!(
                seen,
                format!("00-{host_trace}-{}-01", hex_id(&span["spanId"]))
            );
            assert_eq!(hex_id(&span["parentSpanId"]), "00f067aa0ba902b7");
            assert_eq!(attr(span, "mcp_bound.propagated"), json!(true));
            assert_eq!(answer["result"]["_meta"]["tracestate"], "rojo=1");
            // A request with no _meta gets one, in the call's trace.
            let call_span = spans
                .iter()
                .rev()
                .find(|s| s["kind"] == "SPAN_KIND_INTERNAL")
                .unwrap();
            let tp = bare["result"]["_meta"]["traceparent"].as_str().unwrap();
            assert!(
                tp.starts_with(&format!("00-{}-", hex_id(&call_span["traceId"]))),
                "{tp}"
            );
        } else {
            assert_eq!(seen, client_tp, "the client's bytes, unchanged");
            assert_eq!(attr(span, "mcp_bound.propagated"), Value::Null);
            assert!(bare["result"].get("_meta").is_none(), "{bare}");
        }
        // The journal hashes what the client sent, either way.
        let sent = serde_json::to_string(&params).unwrap();
        let digest = sha256_hex(sent.as_bytes());
        let journal_text = std::fs::read_to_string(journal.path()).unwrap();
        assert!(
            journal_text.contains(&digest),
            "params_sha256 of the client's params"
        );
    }
}

/// A signal during the last flush (the record is final by then) ends the
/// wait at once: the host wants us gone. Without that, the exit would wait
/// the whole flush bound, a minute here.
#[test]
fn a_signal_during_the_flush_ends_it_with_the_record_already_final() {
    let Some(receiver) = Receiver::start("stall") else {
        return;
    };
    let run = Call::sh("echo hi")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint())
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "120000")
        .opt(&["--otel-flush-timeout", "60s"])
        .start();
    // The record is final before the flush: wait for it (a handshake on
    // the file), then for the stalled export to have reached the receiver.
    let record = run.call().record_path();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(&record).unwrap_or_default();
        if text.contains("\"state\": \"completed\"") || text.contains("\"state\":\"completed\"") {
            break;
        }
        assert!(Instant::now() < deadline, "no final record: {text}");
        std::thread::sleep(Duration::from_millis(10));
    }
    let started = Instant::now();
    run.signal("TERM");
    let done = run.finish();
    done.expect_state("completed", 0)
        .expect("/otel/spans_queued", json!(1));
    done.check(
        started.elapsed() < Duration::from_secs(30),
        "the flush stopped at the signal",
    );
}

/// TRACEPARENT in mcp-bound's environment (a CI job's, a traced script's)
/// makes the call's span its child; one that is not valid is ignored.
#[test]
fn traceparent_in_the_environment_is_the_calls_parent() {
    let Some(receiver) = Receiver::start("ok") else {
        return;
    };
    let trace = "0af7651916cd43dd8448eb211c80319c";
    for (traceparent, parent) in [
        (
            format!("00-{trace}-b7ad6b7169203331-01"),
            Some("b7ad6b7169203331"),
        ),
        ("00-not-valid".to_string(), None),
    ] {
        let done = with_otel(Call::sh("true"), &receiver)
            .env("TRACEPARENT", &traceparent)
            .env("TRACESTATE", "congo=t61rcWkgMzE")
            .run();
        done.expect_state("completed", 0);
        let spans = receiver.spans();
        let span = spans.last().expect("the call's span");
        match parent {
            Some(parent) => {
                assert_eq!(hex_id(&span["traceId"]), trace);
                assert_eq!(hex_id(&span["parentSpanId"]), parent);
                assert_eq!(span["traceState"], "congo=t61rcWkgMzE");
            }
            None => assert!(span["parentSpanId"].is_null(), "{span}"),
        }
    }
}

/// Spans at the edges: a helper that never started is still one span
/// (its failure said), and a request in flight when the host ends the
/// session gets its span too, not an error: it may have acted.
#[test]
fn a_call_that_never_started_and_a_request_cut_off_at_the_end_have_spans() {
    let Some(receiver) = Receiver::start("ok") else {
        return;
    };
    let done = with_otel(Call::new(&["/nonexistent/helper"]), &receiver).run();
    done.expect_state("failed_before_dispatch", 127)
        .expect("/otel/spans_queued", json!(1));
    let spans = receiver.spans();
    assert_eq!(spans.len(), 1, "{spans:?}");
    assert_eq!(attr(&spans[0], "error.type"), "failed_before_dispatch");
    assert_eq!(spans[0]["status"]["code"], "STATUS_CODE_ERROR");

    let mut run = with_otel(server(&[]), &receiver).opt(&["--mcp"]).start();
    run.send(&request(1, "echo", json!({})));
    assert_eq!(parse(&run.read_line())["id"], 1);
    run.send(&request(2, "sleep", json!({"ms": 60_000})));
    // The server has read it once it answers the next one.
    run.send(&request(3, "echo", json!({})));
    assert_eq!(parse(&run.read_line())["id"], 3);
    let done = run.finish_by("close");
    // A request was in flight: the session's end cut it off.
    done.expect_state("cancelled_after_dispatch", 143);
    let spans = receiver.spans();
    let call = spans
        .iter()
        .rev()
        .find(|s| s["kind"] == "SPAN_KIND_INTERNAL")
        .unwrap();
    assert_eq!(attr(call, "mcp_bound.state"), "cancelled_after_dispatch");
    assert_eq!(
        attr(call, "error.type"),
        Value::Null,
        "cancelled is no failure: {call}"
    );
    let cut = spans
        .iter()
        .find(|s| attr(s, "jsonrpc.request.id") == "2")
        .expect("the cut-off request's span");
    assert_eq!(cut["name"], "sleep");
    assert_eq!(attr(cut, "error.type"), Value::Null, "{cut}");
    assert!(
        cut["status"]
            .get("code")
            .is_none_or(|c| c != "STATUS_CODE_ERROR"),
        "{cut}"
    );
    assert_eq!(attr(cut, "mcp_bound.interrupted"), json!(true), "{cut}");
}

/// The one metric, `mcp.client.operation.duration`: a cumulative histogram
/// in seconds per method, tool and error.type, sent at the end (and every
/// OTEL_METRIC_EXPORT_INTERVAL), to the general endpoint's /v1/metrics.
#[test]
fn the_duration_metric_counts_each_request_by_its_attributes() {
    let Some(receiver) = Receiver::start("ok") else {
        return;
    };
    // Only the request that is to time out is timed: the fixture's start
    // (a pyenv shim alone takes 170 ms) is no call's to wait for.
    let mut run = with_otel(server(&[]), &receiver)
        .opt(&["--mcp", "--request-timeout", "sleep=200ms"])
        .start();
    for id in 1..=3 {
        run.send(&request(
            id,
            "tools/call",
            json!({"name": "search", "arguments": {}}),
        ));
        assert_eq!(parse(&run.read_line())["id"], id);
    }
    run.send(&request(4, "sleep", json!({"ms": 60_000})));
    assert_eq!(parse(&run.read_line())["error"]["code"], -32001);
    run.close_stdin();
    run.finish().expect_state("shut_down", 0);
    let exports = receiver.exports();
    let metrics: Vec<&Value> = exports
        .iter()
        .filter(|e| e["path"] == "/v1/metrics")
        .collect();
    assert_eq!(metrics.len(), 1, "one export, at the end");
    let metric = &metrics[0]["export"]["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0];
    assert_eq!(metric["name"], "mcp.client.operation.duration");
    assert_eq!(metric["unit"], "s");
    let histogram = &metric["histogram"];
    assert_eq!(
        histogram["aggregationTemporality"],
        "AGGREGATION_TEMPORALITY_CUMULATIVE"
    );
    let points = histogram["dataPoints"].as_array().unwrap();
    let point = |method: &str| {
        points
            .iter()
            .find(|p| attr(p, "mcp.method.name") == method)
            .unwrap_or_else(|| panic!("no point for {method}: {points:?}"))
    };
    let calls = point("tools/call");
    assert_eq!(calls["count"], "3");
    assert_eq!(attr(calls, "gen_ai.tool.name"), "search");
    assert_eq!(attr(calls, "error.type"), Value::Null);
    let buckets: u64 = calls["bucketCounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(buckets, 3);
    assert_eq!(calls["explicitBounds"].as_array().unwrap().len(), 14);
    let timed = point("sleep");
    assert_eq!(
        (timed["count"].clone(), attr(timed, "error.type")),
        (json!("1"), json!("request_timeout"))
    );
    assert!(timed["sum"].as_f64().unwrap() >= 0.2, "{timed}");
}
