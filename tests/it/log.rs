//! `mcp-bound log`: the journal a test writes with the real binary (a
//! call that completes, one that times out, one its approver denies, an
//! MCP session with a tool call run and one the gate denies), read back
//! as rows compared field by field with the entries, as JSON checked
//! against schema/log.schema.json, per session, filtered; a chain broken
//! in the middle marks what follows it, and a torn last line is a warning.

use crate::util;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use util::{Call, parse_message as parse, rpc_request as request, server};

/// The journal of four calls in two sessions (and one with none).
pub(crate) fn written(dir: &Path) -> PathBuf {
    let journal = dir.join("audit.jsonl");
    let j = journal.to_str().unwrap();
    Call::sh("echo diagnostic >&2")
        .opt(&["--journal", j, "--session-id", "s1"])
        .run()
        .expect_state("completed", 0);
    Call::new(&["sleep", "30"])
        .opt(&["--journal", j, "--session-id", "s1", "--timeout", "100ms"])
        .run()
        .expect_code(124);
    Call::new(&["true"])
        .opt(&["--journal", j, "--approve-cmd", "false"])
        .run()
        .expect_code(77);
    let mut run = server(&[])
        .opt(&[
            "--mcp",
            "--tool-deny",
            "rm",
            "--journal",
            j,
            "--session-id",
            "s2",
        ])
        .start();
    let call = |id: u64, tool: &str| {
        request(
            json!(id),
            "tools/call",
            json!({"name": tool, "arguments": {}}),
        )
    };
    run.send(&call(1, "read_file"));
    assert_eq!(parse(&run.read_line())["result"]["ran"], "read_file");
    run.send(&call(2, "rm"));
    assert_eq!(parse(&run.read_line())["error"]["code"], -32000);
    run.close_stdin();
    run.finish().expect_state("shut_down", 0);
    journal
}

fn log(args: &[&str]) -> (i32, String, String) {
    util::subcommand("log", args)
}

/// `log --json` with these options: its rows, each checked against
/// schema/log.schema.json.
fn rows(journal: &Path, options: &[&str]) -> Vec<Value> {
    let mut args = vec!["--json"];
    args.extend_from_slice(options);
    args.push(journal.to_str().unwrap());
    let (code, out, err) = log(&args);
    assert_eq!(code, 0, "log {args:?}: {err}");
    let schema: Value = serde_json::from_str(include_str!("../../schema/log.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    out.lines()
        .map(|line| {
            let row: Value = serde_json::from_str(line).unwrap();
            let errors: Vec<String> = validator.iter_errors(&row).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{row}: {errors:?}");
            row
        })
        .collect()
}

pub(crate) fn entries(journal: &Path) -> Vec<Value> {
    std::fs::read_to_string(journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A copy of `written`'s journal with one byte of its timed-out call's
/// terminal entry changed: a hash mismatch in the middle.
pub(crate) fn broken(dir: &Path, journal: &Path) -> PathBuf {
    let text = std::fs::read_to_string(journal).unwrap();
    let broken = dir.join("broken.jsonl");
    std::fs::write(
        &broken,
        text.replacen("\"exit_code\":124", "\"exit_code\":125", 1),
    )
    .unwrap();
    broken
}

#[test]
fn each_row_is_its_calls_entries_field_for_field() {
    let dir = tempfile::tempdir().unwrap();
    let journal = written(dir.path());
    let entries = entries(&journal);
    let rows = rows(&journal, &[]);
    assert_eq!(rows.len(), 4, "{rows:?}");
    for row in &rows {
        let of = |kind: &str| -> Vec<&Value> {
            entries
                .iter()
                .filter(|e| e["kind"] == kind && e["call_id"] == row["call_id"])
                .collect()
        };
        let intent = of("intent")[0];
        let terminal = of("terminal")[0];
        assert_eq!(row["ts"], intent["ts"]);
        assert_eq!(row["session_id"], intent["session_id"]);
        assert_eq!(row["argv"], intent["argv"]);
        assert_eq!(row["state"], terminal["state"]);
        assert_eq!(row["exit_code"], terminal["exit_code"]);
        assert_eq!(row["duration_ms"], terminal["duration_ms"]);
        assert_eq!(row["stderr_seen"], terminal["streams"]["stderr_bytes_seen"]);
        assert_eq!(
            row["stderr_kept"],
            terminal["streams"]["stderr_bytes_retained"]
        );
        let decision = of("decision");
        assert_eq!(
            row["approval"],
            decision
                .first()
                .map_or(Value::Null, |d| d["decision"].clone())
        );
        assert_eq!(row["requests"], of("mcp_request").len());
        assert_eq!(row["verified"], true);
    }
    let states: Vec<&str> = rows.iter().map(|r| r["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["completed", "timed_out", "denied", "shut_down"]);
    assert_eq!(rows[0]["stderr_seen"], 11, "diagnostic and its newline");
    assert_eq!(rows[2]["approval"], "denied");
    let mcp = &rows[3];
    assert_eq!(
        mcp["tools_called"],
        json!({"read_file": 1}),
        "a denial is no call"
    );
    assert_eq!(mcp["tools_not_run"], 1);
    assert_eq!(mcp["outcomes"], json!({"result": 1, "denied": 1}));

    // The text view: a header, then a row per call, aligned.
    let (code, text, _) = log(&[journal.to_str().unwrap()]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    let column = |line: &str, word: &str| line[..line.find(word).unwrap()].chars().count();
    assert_eq!(
        column(lines[0], "STATE"),
        column(lines[2], "timed_out"),
        "{text}"
    );
    assert!(lines[4].contains("2 req: 1 denied, 1 result"), "{text}");
    let call_id = rows[1]["call_id"].as_str().unwrap();
    assert!(lines[2].contains(call_id), "the whole call id: {text}");

    // One call's lifecycle: its entries, in order, and nothing else.
    let mcp_id = mcp["call_id"].as_str().unwrap();
    let own: Vec<String> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).unwrap()["call_id"] == mcp_id)
        .map(str::to_string)
        .collect();
    let (code, out, _) = log(&["--call", mcp_id, "--json", journal.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().collect::<Vec<_>>(), own);
    let (code, out, _) = log(&["--call", mcp_id, journal.to_str().unwrap()]);
    assert_eq!(code, 0);
    let kinds: Vec<&str> = out
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().nth(2).unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "intent",
            "mcp_request",
            "mcp_decision",
            "mcp_response",
            "mcp_request",
            "mcp_decision",
            "mcp_response",
            "terminal"
        ],
        "{out}"
    );
    assert!(out.contains("rm denied by policy"), "{out}");
    let (code, _, err) = log(&["--call", "c_none", journal.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn sessions_fold_their_calls_and_filters_keep_what_they_name() {
    let dir = tempfile::tempdir().unwrap();
    let journal = written(dir.path());
    let sessions = rows(&journal, &["--sessions"]);
    let by: Vec<(Value, Value, Value)> = sessions
        .iter()
        .map(|s| {
            (
                s["session_id"].clone(),
                s["calls"].clone(),
                s["states"].clone(),
            )
        })
        .collect();
    assert_eq!(
        by,
        [
            (
                json!("s1"),
                json!(2),
                json!({"completed": 1, "timed_out": 1})
            ),
            (Value::Null, json!(1), json!({"denied": 1})),
            (json!("s2"), json!(1), json!({"shut_down": 1})),
        ]
    );
    assert_eq!(sessions[2]["tool_calls"], 1);
    assert_eq!(sessions[2]["tools_not_run"], 1);
    let ids = |options: &[&str]| -> Vec<String> {
        rows(&journal, options)
            .iter()
            .map(|r| r["state"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&["--state", "timed_out"]), ["timed_out"]);
    assert_eq!(ids(&["--session", "s2"]), ["shut_down"]);
    assert_eq!(ids(&["--tool", "read_*"]), ["shut_down"]);
    assert!(
        ids(&["--tool", "rm"]).is_empty(),
        "a denied tool was not called"
    );
    assert_eq!(ids(&["--since", "1h"]).len(), 4);
    assert!(ids(&["--since", "2999-01-01T00:00:00Z"]).is_empty());
    assert!(ids(&["--until", "2000-01-01T00:00:00Z"]).is_empty());
    let (code, _, err) = log(&["--since", "yesterday", journal.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--since yesterday"), "{err}");
    let (code, _, err) = log(&[dir.path().join("none.jsonl").to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_break_marks_the_rows_after_it_and_a_torn_last_line_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let journal = written(dir.path());
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    // The timed-out call's terminal entry, one digit changed.
    let at = lines
        .iter()
        .position(|l| l.contains("\"kind\":\"terminal\"") && l.contains("timed_out"))
        .unwrap();
    lines[at] = lines[at].replacen("\"exit_code\":124", "\"exit_code\":125", 1);
    let broken = dir.path().join("broken.jsonl");
    std::fs::write(&broken, lines.join("\n") + "\n").unwrap();
    let (code, out, err) = log(&["--json", broken.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!("breaks at line {} (HASH_MISMATCH", at + 1)),
        "{err}"
    );
    let verified: Vec<(String, bool)> = out
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| {
            (
                r["state"].as_str().unwrap().to_string(),
                r["verified"] == true,
            )
        })
        .collect();
    assert_eq!(
        verified,
        [
            ("completed".to_string(), true),
            ("timed_out".to_string(), false),
            ("denied".to_string(), false),
            ("shut_down".to_string(), false),
        ]
    );
    let (_, text, _) = log(&[broken.to_str().unwrap()]);
    assert!(text.lines().nth(2).unwrap().starts_with("! "), "{text}");

    let torn = dir.path().join("torn.jsonl");
    std::fs::write(
        &torn,
        format!(
            "{text}{{\"v\":1,\"seq\":99,\"pr",
            text = std::fs::read_to_string(&journal).unwrap()
        ),
    )
    .unwrap();
    let (code, out, err) = log(&["--json", torn.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning"), "{err}");
    assert_eq!(out.lines().count(), 4);
}

#[test]
fn requests_are_a_row_each_from_their_entries() {
    let dir = tempfile::tempdir().unwrap();
    let journal = written(dir.path());
    let entries = entries(&journal);
    let all = rows(&journal, &["--requests"]);
    let requests: Vec<&Value> = entries
        .iter()
        .filter(|e| e["kind"] == "mcp_request")
        .collect();
    assert_eq!(all.len(), requests.len());
    assert_eq!(all.len(), 2, "{all:?}");
    for (row, request) in all.iter().zip(&requests) {
        let id = &request["request_id"];
        let of = |kind: &str| {
            entries
                .iter()
                .find(|e| {
                    e["kind"] == kind
                        && e["call_id"] == request["call_id"]
                        && e["request_id"] == *id
                })
                .unwrap()
        };
        let (decision, response) = (of("mcp_decision"), of("mcp_response"));
        assert_eq!(row["ts"], request["ts"]);
        assert_eq!(row["call_id"], request["call_id"]);
        assert_eq!(row["session_id"], "s2");
        assert_eq!(row["request_id"], id.to_string());
        assert_eq!(row["method"], request["method"]);
        assert_eq!(row["tool"], request["name"]);
        assert_eq!(row["decision"], decision["decision"]);
        assert_eq!(row["waited_ms"], decision["waited_ms"]);
        assert_eq!(row["outcome"], response["outcome"]);
        assert_eq!(row["duration_ms"], response["duration_ms"]);
        assert_eq!(row["verified"], true);
    }
    assert_eq!(
        (all[0]["outcome"].as_str(), all[1]["outcome"].as_str()),
        (Some("result"), Some("denied"))
    );
    let tools: Vec<Value> = rows(&journal, &["--requests", "--tool", "r?"])
        .iter()
        .map(|r| r["tool"].clone())
        .collect();
    assert_eq!(tools, [json!("rm")]);
    let (code, text, _) = log(&["--requests", journal.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(text.lines().next().unwrap().contains("REQUEST"), "{text}");
    assert!(text.lines().nth(2).unwrap().contains("denied"), "{text}");
    let (code, _, err) = log(&[
        "--requests",
        "--state",
        "completed",
        journal.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "--state is a call's: {err}");
}

/// `log -f` as a child: its stdout's lines as they come, and its stderr.
struct Following {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Following {
    fn start(journal: &Path) -> Following {
        use std::io::BufRead;
        let mut child = std::process::Command::new(util::BIN)
            .args(["log", "-f", "--json"])
            .arg(journal)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (send, lines) = std::sync::mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let send = send.clone();
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(stream).lines() {
                    let _ = send.send(line.unwrap());
                }
            });
        }
        Following { child, lines }
    }

    /// The next line, from either stream (a hung follower fails).
    fn next(&self) -> String {
        self.lines
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("log -f wrote nothing for a minute")
    }

    fn row(&self) -> Value {
        let line = self.next();
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not a row: {line}"))
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn follow_shows_each_call_as_it_ends_and_notices_a_replaced_file() {
    let dir = tempfile::tempdir().unwrap();
    let journal = written(dir.path());
    let follow = Following::start(&journal);
    let states: Vec<Value> = (0..4).map(|_| follow.row()["state"].clone()).collect();
    assert_eq!(states, ["completed", "timed_out", "denied", "shut_down"]);
    // A call appended now: its row comes once its terminal entry, the
    // last line, is written (not held until a next one).
    Call::new(&["true"])
        .opt(&[
            "--journal",
            journal.to_str().unwrap(),
            "--session-id",
            "later",
        ])
        .run()
        .expect_state("completed", 0);
    let row = follow.row();
    assert_eq!(
        (row["session_id"].as_str(), row["verified"].as_bool()),
        (Some("later"), Some(true))
    );
    // A journal of its own renamed over the followed path.
    let other = dir.path().join("other.jsonl");
    Call::new(&["true"])
        .opt(&["--journal", other.to_str().unwrap(), "--session-id", "new"])
        .run()
        .expect_state("completed", 0);
    std::fs::rename(&other, &journal).unwrap();
    let notice = follow.next();
    assert!(
        notice.contains("the file was replaced; reading the new one from its start"),
        "{notice}"
    );
    let row = follow.row();
    assert_eq!(
        (row["session_id"].as_str(), row["verified"].as_bool()),
        (Some("new"), Some(true))
    );
}

/// A restart (`mcp_restart`) is counted on its call's row and its
/// session's, in both the text and the JSON.
#[test]
fn a_restart_is_counted_on_its_call_and_its_session() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("audit.jsonl");
    crate::session::restarted_once(&journal, &["--session-id", "restarted"]);
    let row = &rows(&journal, &[])[0];
    assert_eq!(row["restarts"], 1, "{row}");
    let session = &rows(&journal, &["--sessions"])[0];
    assert_eq!(session["restarts"], 1, "{session}");
    let (code, text, err) = log(&[journal.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("1 restart"), "{text}");
    let (code, text, err) = log(&["--sessions", journal.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = text.lines().collect();
    let at = lines[0].find("RESTARTS").expect(&text);
    assert!(lines[1][at..].starts_with("1 "), "{text}");
}
