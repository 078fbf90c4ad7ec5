//! The tool gate reads a client line as every server it may front reads
//! it, so that what it decides is what runs. Each test sends lines that
//! ran a denied tool on a real server before the gate refused them:
//!
//! - a Go server (`tests/fixtures/go_server`, standard library only):
//!   one `json.Decoder` on the stream, as the Go SDK's stdio transport
//!   reads it, and struct tags matched by `encoding/json`, without regard
//!   to case, folding `ſ` to `s` and `K` to `k`, the last match kept;
//! - the Python fixture reading the line's bytes (`json.loads(bytes)`
//!   skips a UTF-8 byte order mark).
//!
//! .NET servers that set `PropertyNameCaseInsensitive` match names by
//! ordinal ignore-case, which for the keys the gate reads folds ASCII
//! case and `ſ`: a rule inside Go's. No .NET runtime can be installed
//! here, so that rule is modelled in the gate (`session/lenient.rs`), not
//! tested against a .NET server.
//!
//! Every refused line is answered -32600, never reaches the server, and
//! is in the journal: its `mcp_request` (marked `refused`, with the
//! line's SHA-256) and an `mcp_response` with outcome `refused` and the
//! reason, which `verify` pairs.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{Value, json};
use util::{Call, parse_message as parse};

/// The Go fixture, built once per test run; None (said) when `go` is
/// missing, unless MCP_BOUND_INTEROP=require, where that fails.
fn go_server() -> Option<&'static Path> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-fixture");
            let binary = out.join("go_server");
            let source = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/go_server/main.go"
            );
            let built = Command::new("go")
                .args(["build", "-o"])
                .arg(&binary)
                .arg(source)
                .env("GOCACHE", out.join("cache"))
                .env("GO111MODULE", "off")
                .env("GOFLAGS", "")
                .output();
            match built {
                Ok(output) if output.status.success() => Some(binary),
                Ok(output) => panic!(
                    "go build of the Go fixture failed: {}",
                    String::from_utf8_lossy(&output.stderr)
                ),
                Err(e) => {
                    let why = format!("go is not installed ({e}); .ci/run installs golang-go");
                    assert!(
                        std::env::var("MCP_BOUND_INTEROP").as_deref() != Ok("require"),
                        "MCP_BOUND_INTEROP=require: {why}"
                    );
                    skipped!("the Go server tests: {why}");
                    None
                }
            }
        })
        .as_deref()
}

/// The Go server behind mcp-bound with `options`, and the file that says
/// which tools it ran (in a directory the caller keeps).
fn behind(server: &Path, options: &[&str]) -> (Call, tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran.txt");
    let call = Call::new(&[server.to_str().unwrap(), ran.to_str().unwrap()])
        .stdin(std::process::Stdio::piped());
    let journal = call.path("audit.jsonl");
    let call = call
        .opt(&["--mcp", "--journal", journal.to_str().unwrap()])
        .opt(options);
    (call, dir, ran, journal)
}

/// Send `lines`, then a call of `echo` with id 99, and read answers until
/// its own: every answer, in order.
fn exchange(run: &mut util::Started, lines: &[&[u8]]) -> Vec<Value> {
    for line in lines {
        run.send(line);
    }
    run.send(br#"{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"echo"}}"#);
    run.send(b"\n");
    let mut answers = Vec::new();
    loop {
        let answer = parse(&run.read_line());
        let last = answer["id"] == 99;
        answers.push(answer);
        if last {
            return answers;
        }
    }
}

/// Which tools the server ran, in order.
fn ran(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| line.split(' ').next().unwrap_or_default().to_string())
        .collect()
}

/// The journal's refusals: (request_id, reason, line_sha256) of each
/// refused mcp_request with the mcp_response after it.
fn refusals(journal: &Path) -> Vec<(Value, String, Value)> {
    let entries: Vec<Value> = std::fs::read_to_string(journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut found = Vec::new();
    for pair in entries.windows(2) {
        let (request, response) = (&pair[0], &pair[1]);
        let refused = request["kind"] == "mcp_request"
            && request["irregular"]
                .as_array()
                .is_some_and(|i| i.contains(&json!("refused")));
        if refused {
            assert_eq!(response["kind"], "mcp_response", "{response}");
            assert_eq!(response["outcome"], "refused", "{response}");
            assert_eq!(response["error_code"], -32600, "{response}");
            assert_eq!(response["request_id"], request["request_id"]);
            found.push((
                request["request_id"].clone(),
                response["reason"].as_str().unwrap_or_default().to_string(),
                request["line_sha256"].clone(),
            ));
        }
    }
    found
}

/// The -32600 answers' ids, in order.
fn invalid_ids(answers: &[Value]) -> Vec<Value> {
    answers
        .iter()
        .filter(|a| a["error"]["code"] == -32600)
        .map(|a| a["id"].clone())
        .collect()
}

/// A key the gate reads, spelled in another case or folding, is a key
/// Go's encoding/json reads (the last match wins): `secret` ran past
/// `--tool-deny secret` and `--tool-allow echo` each time. Now each such
/// object is refused, whatever the spelling.
#[test]
fn a_key_in_another_case_or_folding_is_refused_not_run() {
    let Some(server) = go_server() else { return };
    let (call, _dir, ran_file, journal) =
        behind(server, &["--tool-deny", "secret", "--tool-allow", "echo"]);
    let mut run = call.start();
    let lines: [&[u8]; 8] = [
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"Name\":\"secret\"}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"},\"Params\":{\"name\":\"secret\"}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"},\"param\\u017f\":{\"name\":\"secret\"}}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"},\"paramſ\":{\"name\":\"secret\"}}\n".as_bytes(),
        b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"Method\":\"tools/call\",\"params\":{\"name\":\"secret\"}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"NAME\":\"secret\",\"name\":\"echo\",\"nAme\":\"secret\"}}\n",
        // Which id a case-insensitive reader keeps is unsure: null.
        b"{\"jsonrpc\":\"2.0\",\"id\":7,\"ID\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{},\"Arguments\":{\"path\":\"/etc\"}}}\n",
    ];
    let answers = exchange(&mut run, &lines);
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/mcp/refused", json!(8));
    done.check(
        invalid_ids(&answers)
            == [1, 2, 3, 4, 5, 6]
                .map(Value::from)
                .into_iter()
                .chain([Value::Null, Value::from(9)])
                .collect::<Vec<_>>(),
        &format!("each answered -32600 under its own id: {answers:?}"),
    );
    done.check(
        ran(&ran_file) == ["echo"],
        &format!("only the last call ran: {:?}", ran(&ran_file)),
    );
    let refused = refusals(&journal);
    done.check(
        refused.len() == 8
            && refused
                .iter()
                .all(|(_, reason, _)| reason == "case_variant_key"),
        &format!("each refusal journaled: {refused:?}"),
    );
    let (ok, report) = util::verify_report(&journal);
    done.check(ok, &format!("verify: {report}"));
}

/// A line that is not exactly one JSON value reached the Go server, whose
/// decoder reads a stream: a call split over two lines, a pretty-printed
/// one, two on one line. Under the gate each line is refused (id null),
/// with the SHA-256 of the line as sent.
#[test]
fn a_line_that_is_not_one_json_value_is_refused_under_a_gate() {
    let Some(server) = go_server() else { return };
    let (call, _dir, ran_file, journal) = behind(server, &["--tool-deny", "secret"]);
    let mut run = call.start();
    let pretty = "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 3,\n  \"method\": \"tools/call\",\n  \"params\": {\"name\": \"secret\"}\n}\n";
    let mut lines: Vec<&[u8]> = vec![
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\n",
        b"\"params\":{\"name\":\"secret\"}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}} {\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"secret\"}}\n",
    ];
    let pretty_lines: Vec<String> = pretty.split_inclusive('\n').map(String::from).collect();
    lines.extend(pretty_lines.iter().map(|l| l.as_bytes()));
    let answers = exchange(&mut run, &lines);
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0);
    let nulls = invalid_ids(&answers);
    done.check(
        nulls.len() == 3 + pretty_lines.len() && nulls.iter().all(Value::is_null),
        &format!("each line answered -32600, id null: {answers:?}"),
    );
    done.check(
        ran(&ran_file) == ["echo"],
        &format!("only the last call ran: {:?}", ran(&ran_file)),
    );
    let refused = refusals(&journal);
    let first = util::sha256_hex(&lines[0][..lines[0].len() - 1]);
    done.check(
        refused.len() == nulls.len()
            && refused
                .iter()
                .all(|(id, reason, _)| id.is_null() && reason == "not_one_value")
            && refused[0].2 == json!(first),
        &format!("each refusal journaled with its line's hash: {refused:?}"),
    );
    let (ok, report) = util::verify_report(&journal);
    done.check(ok, &format!("verify: {report}"));
}

/// Python's json.loads(bytes) skips a UTF-8 byte order mark, so a line
/// that opens with one ran its call unseen. Under the gate it is refused,
/// not stripped; a plain relay still passes it unchanged.
#[test]
fn a_line_opening_with_a_byte_order_mark_is_refused_under_a_gate() {
    let line = b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"secret\"}}\n";
    let call = util::server(&["--bytes"]);
    let journal = call.path("audit.jsonl");
    let mut run = call
        .opt(&[
            "--mcp",
            "--tool-deny",
            "secret",
            "--journal",
            journal.to_str().unwrap(),
        ])
        .start();
    run.send(line);
    let answer = parse(&run.read_line());
    run.close_stdin();
    let done = run.finish();
    done.check(
        answer["error"]["code"] == -32600 && answer["id"].is_null(),
        &format!("refused: {answer}"),
    );
    let refused = refusals(&journal);
    done.check(
        refused.len() == 1 && refused[0].1 == "byte_order_mark",
        &format!("journaled: {refused:?}"),
    );
    let (ok, report) = util::verify_report(&journal);
    done.check(ok, &format!("verify: {report}"));
    // Without a gate or an audit, the relay passes it as it came.
    let mut run = util::server(&["--bytes"]).opt(&["--mcp"]).start();
    run.send(line);
    let answer = parse(&run.read_line());
    run.close_stdin();
    let done = run.finish();
    done.check(
        answer["result"]["ran"] == "secret",
        &format!("a plain relay passes it: {answer}"),
    );
}

/// Forms the gate never decided: `"id": null` with a method (JSON-RPC 2.0
/// calls it a request; the Go server runs and answers it), a tools/call
/// notification (run, unanswered), `params` that is not an object, and a
/// name that is not a string (each read as `""`, which a deny list
/// allowed). Under the gate each is refused (the notification journaled,
/// unanswered, as JSON-RPC has it).
#[test]
fn forms_the_gate_cannot_decide_are_refused() {
    let Some(server) = go_server() else { return };
    let (call, _dir, ran_file, journal) = behind(server, &["--tool-deny", "secret"]);
    let mut run = call.start();
    let lines: [&[u8]; 5] = [
        b"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"tools/call\",\"params\":{\"name\":\"secret\"}}\n",
        b"{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"name\":\"secret\"}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":[\"secret\"]}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":7}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\"}\n",
    ];
    let answers = exchange(&mut run, &lines);
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0);
    done.check(
        invalid_ids(&answers) == [json!(null), json!(3), json!(4), json!(5)],
        &format!("each refused (the notification unanswered): {answers:?}"),
    );
    done.check(
        ran(&ran_file) == ["echo"],
        &format!("only the last call ran: {:?}", ran(&ran_file)),
    );
    let reasons: Vec<String> = refusals(&journal).into_iter().map(|r| r.1).collect();
    done.check(
        reasons
            == [
                "null_id",
                "notification",
                "params_not_object",
                "name_not_string",
                "name_not_string",
            ],
        &format!("each reason journaled: {reasons:?}"),
    );
    let (ok, report) = util::verify_report(&journal);
    done.check(ok, &format!("verify: {report}"));
}
