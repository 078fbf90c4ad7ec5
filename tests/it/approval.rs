//! The approval gate: approver commands, the terminal, the fixed clock,
//! and the rule that a denied or expired action never runs.

use crate::util;

use std::process::{Command, Stdio};

use serde_json::{Value, json};
use util::{Call, exists};

/// A helper that proves it ran by creating a marker file.
fn marked(call: &Call) -> (std::path::PathBuf, Vec<String>) {
    let marker = call.path("helper-ran");
    let argv = vec!["touch".to_string(), marker.to_str().unwrap().to_string()];
    (marker, argv)
}

/// A call whose helper creates a marker file; the directory that holds the
/// marker lives as long as the returned guard.
fn call_with_marker(options: &[&str]) -> (Call, std::path::PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("helper-ran");
    let call = Call::new(&["touch", marker.to_str().unwrap()]).opt(options);
    (call, marker, dir)
}

#[test]
fn a_noisy_approver_that_approves_after_300ms() {
    let (call, marker, _dir) = call_with_marker(&[
        "--approve-cmd",
        "sh -c 'yes approver-noise >&2 & noise=$!; sleep 0.3; kill $noise; exit 0'",
    ]);
    let done = call.run();
    done.expect_state("completed", 0)
        .expect("/approval/required", json!(true))
        .expect("/approval/method", json!("command"))
        .expect("/approval/decision", json!("approved"))
        .expect("/approval/approver_exit", json!({"code": 0}));
    done.check(exists(&marker), "the helper ran after approval");
    let excerpt = done.field("/approval/excerpt").as_str().unwrap();
    done.check(
        excerpt.starts_with("[stderr truncated: kept last "),
        "the noise was bounded",
    );
    done.check(
        excerpt.len() < 4096 + 200,
        "the approver's capture stays bounded",
    );
    done.check(
        done.field("/approval/waited_ms").as_u64() >= Some(300),
        "waited for it",
    );
}

#[test]
fn a_hanging_printing_approver_expires_and_its_tree_is_killed() {
    let (call, marker, _dir) = call_with_marker(&[
        "--approve-cmd",
        "sh -c '(while :; do echo child-waiting; sleep 0.01; done) & while :; do echo waiting >&2; sleep 0.01; done'",
        "--approval-timeout",
        "0.5s",
        "--grace",
        "0.2s",
    ]);
    let done = call.run();
    done.expect_state("denied", 77)
        .expect("/approval/decision", json!("expired"))
        .expect("/pid", Value::Null)
        .expect("/exit", Value::Null);
    done.check(!exists(&marker), "the helper never ran");
    done.check(
        done.stderr_text().contains("approval expired"),
        "one clear line",
    );
    // The harness fails the test if the approver or its child still runs.
}

#[test]
fn an_approver_that_ignores_term_does_not_stretch_the_deadline() {
    // Default --grace is 5s: the approval's own deadline must not wait it.
    let (call, marker, _dir) = call_with_marker(&[
        "--approve-cmd",
        "sh -c 'trap \"\" TERM; while :; do sleep 0.05; done'",
        "--approval-timeout",
        "0.5",
    ]);
    let done = call.run();
    done.expect_state("denied", 77)
        .expect("/approval/decision", json!("expired"))
        .expect("/approval/timeout_ms", json!(500));
    done.check(!exists(&marker), "the helper never ran");
    let waited = done.field("/approval/waited_ms").as_u64().unwrap();
    let total = done.field("/duration_ms").as_u64().unwrap();
    // Loose upper bounds a loaded machine meets; 5.5 s before the fix.
    done.check(
        (500..2500).contains(&waited),
        &format!("expired at the deadline, not after the grace (waited {waited} ms)"),
    );
    done.check(
        total < 3000,
        &format!("mcp-bound did not wait on the approver ({total} ms in all)"),
    );
}

#[test]
fn a_denying_approver_means_the_helper_never_runs() {
    let (call, marker, _dir) =
        call_with_marker(&["--approve-cmd", "sh -c 'echo no way >&2; exit 3'"]);
    let done = call.run();
    done.expect_state("denied", 77)
        .expect("/approval/decision", json!("denied"))
        .expect("/approval/approver_exit", json!({"code": 3}))
        .expect("/approval/excerpt", json!("no way\n"));
    done.check(!exists(&marker), "the helper never ran");
    done.check(
        done.stderr_text().trim_end()
            == "mcp-bound: denied by the approver (exit 3): no way; the helper was not started",
        "one clear line, with the approver's reason",
    );
    // The reason is masked and bounded like everything else shown.
    let long = "x".repeat(2000);
    let (call, _marker, _dir) = call_with_marker(&[
        "--approve-cmd",
        &format!("sh -c 'echo; echo password=hunter2 {long}; exit 1'"),
    ]);
    let done = call.run();
    done.expect_state("denied", 77);
    let line = done.stderr_text();
    done.check(
        line.contains("(exit 1): password=[REDACTED]")
            && !line.contains("hunter2")
            && line.len() < 700
            && line.ends_with("; the helper was not started\n"),
        &line,
    );
}

#[test]
fn the_approver_receives_the_exact_argv() {
    let probe = Call::new(&[]);
    let request = probe.path("request.json");
    let argv = [
        "printf",
        "%s|",
        "two words",
        "quote\"d",
        "naïve",
        "--token=visible-to-approver",
    ];
    let done = Call::new(&argv)
        .opt(&[
            "--approve-cmd",
            "sh -c 'cat > \"$REQUEST\"'",
            "--timeout",
            "30s",
            "--call-id",
            "exact-1",
        ])
        .env("REQUEST", request.to_str().unwrap())
        .run();
    done.expect_state("completed", 0);
    let sent: Value = serde_json::from_str(&std::fs::read_to_string(&request).unwrap()).unwrap();
    assert_eq!(sent["argv"], json!(argv), "exact, unmasked argv");
    assert_eq!(sent["call_id"], "exact-1");
    assert_eq!(sent["timeout_ms"], 30000);
    assert!(sent["cwd"].is_string());
    assert_eq!(sent["limits"]["signal"], "TERM");
    // The record masks what the approver saw in full.
    done.expect("/argv/5", json!("--token=[REDACTED]"));
}

#[test]
fn the_journal_has_intent_then_decision_then_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("audit.jsonl");
    let journal = journal.to_str().unwrap();
    Call::new(&["true"])
        .opt(&["--journal", journal, "--approve-cmd", "true"])
        .run()
        .expect_state("completed", 0);
    Call::new(&["true"])
        .opt(&["--journal", journal, "--approve-cmd", "false"])
        .run()
        .expect_state("denied", 77);
    let text = std::fs::read_to_string(journal).unwrap();
    let kinds: Vec<(String, String)> = text
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["kind"].as_str().unwrap().to_string(),
                v["decision"]
                    .as_str()
                    .or(v["state"].as_str())
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("genesis", ""),
        ("intent", ""),
        ("decision", "approved"),
        ("terminal", "completed"),
        ("intent", ""),
        ("decision", "denied"),
        ("terminal", "denied"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(kinds, expected);
    let verified = Command::new(util::BIN)
        .args(["verify", journal])
        .output()
        .unwrap();
    assert_eq!(
        verified.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&verified.stdout)
    );
}

#[test]
fn a_crash_during_approval_is_written_down_by_the_watchdog() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("audit.jsonl");
    let run = Call::sh("true")
        .opt(&[
            "--journal",
            journal.to_str().unwrap(),
            "--approve-cmd",
            "sh -c 'echo asking; exec sleep 60'",
        ])
        .start();
    // The in-flight record says the call awaits approval.
    let record = run.call().record_path();
    while std::fs::read_to_string(&record).map_or(true, |t| !t.contains("awaiting_approval")) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    while !std::fs::read_to_string(&journal)
        .unwrap_or_default()
        .contains("\"kind\":\"intent\"")
    {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    run.kill_and_wait_for_watchdog();
    let done = run.finish();
    // The watchdog wrote what happened: killed while approval was asked,
    // no decision, no exit.
    done.expect("/state", json!("supervisor_killed"))
        .expect("/approval/decision", Value::Null)
        .expect("/exit", Value::Null);
    let report = Command::new(util::BIN)
        .args(["verify", "--json", journal.to_str().unwrap()])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["unfinished"], json!([]), "{report}");
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(
        text.lines()
            .last()
            .unwrap()
            .contains("\"state\":\"supervisor_killed\""),
        "{text}"
    );
}

#[test]
fn a_signal_during_approval_cancels_before_dispatch() {
    let (call, marker, dir) =
        call_with_marker(&["--approve-cmd", "sh -c 'touch \"$READY\"; exec sleep 60'"]);
    // Handshake: the approver's stdout is captured, so it signals readiness
    // with a file.
    let ready = dir.path().join("approver-ready");
    let run = call.env("READY", ready.to_str().unwrap()).start();
    while !exists(&ready) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    run.signal("TERM");
    let done = run.finish();
    done.expect_state("cancelled_before_dispatch", 143)
        .expect("/cancel_signal", json!("TERM"))
        .expect("/approval/decision", Value::Null);
    done.check(!exists(&marker), "the helper never ran");
}

#[test]
fn the_approver_starts_promptly_whatever_anyone_prints() {
    // The approver notes when it really started (its own clock), then
    // prints 0 or 20 MB before approving. The request goes out at once,
    // and output can neither delay the approver nor stall its decision.
    let timed = |noise: u64| {
        let dir = tempfile::tempdir().unwrap();
        let stamp = dir.path().join("approver-started");
        let approver = format!(
            "sh -c 'date +%s.%N > {}; head -c {noise} /dev/zero >&2; exit 0'",
            stamp.display()
        );
        let done = Call::new(&["true"])
            .opt(&["--approve-cmd", &approver])
            .run();
        done.expect_state("completed", 0)
            .expect("/approval/decision", json!("approved"));
        let parse = |p: &str| {
            let at = humantime::parse_rfc3339(done.field(p).as_str().unwrap()).unwrap();
            at.duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs_f64()
        };
        let started: f64 = std::fs::read_to_string(&stamp)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let asked = parse("/approval/requested_at");
        let waited = done.field("/approval/waited_ms").as_u64().unwrap();
        (parse("/started_at"), asked, started, waited)
    };
    for noise in [0, 20_000_000] {
        let (began, asked, approver_started, waited) = timed(noise);
        // Loose bounds a loaded machine meets (the record has ms, the
        // stamp ns: allow 5 ms of rounding).
        assert!(
            asked - began < 1.0,
            "{noise}: asked {:.3}s in",
            asked - began
        );
        assert!(
            approver_started >= asked - 0.005 && approver_started - asked < 1.0,
            "{noise}: the approver started {:.3}s after the request",
            approver_started - asked
        );
        assert!(waited < 5000, "{noise}: decided after {waited} ms");
    }
}

#[test]
fn tty_mode_through_a_pseudo_terminal() {
    for (answer, state, code) in [
        ("y", "completed", 0),
        ("n", "denied", 77),
        ("", "denied", 77),
    ] {
        let probe = Call::new(&[]);
        let (marker, _) = marked(&probe);
        let record = probe.path("record.json");
        let script = format!(
            r#"
import os, pty, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv({bin:?}, [{bin:?}, "--record", {record:?}, "--approve", "tty", "--", "touch", {marker:?}])
seen = b""
deadline = time.time() + 20
while b"[y/N]" not in seen and time.time() < deadline:
    seen += os.read(fd, 1024)
os.write(fd, {answer:?}.encode() + b"\n")
try:
    while True:
        chunk = os.read(fd, 1024)
        if not chunk:
            break
        seen += chunk
except OSError:
    pass
_, status = os.waitpid(pid, 0)
sys.stdout.write(seen.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status))
"#,
            bin = util::BIN,
            record = record.to_str().unwrap(),
            marker = marker.to_str().unwrap(),
        );
        let output = util::python(&script);
        let screen = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            output.status.code(),
            Some(code),
            "answer {answer:?}: {screen}"
        );
        assert!(
            screen.contains("approve this call?") && screen.contains("\"touch\""),
            "{screen}"
        );
        let record: Value =
            serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
        assert_eq!(record["state"], state);
        assert_eq!(record["approval"]["method"], "tty");
        assert_eq!(exists(&marker), code == 0, "ran only when approved");
    }
}

#[test]
fn approval_usage_errors() {
    for options in [
        &["--approve-cmd", ""][..],
        &["--approve-cmd", "sh -c 'unbalanced"],
        &["--approval-timeout", "0", "--approve-cmd", "true"],
        &["--approve-cmd", "true", "--approve", "tty"],
        &["--approve", "phone"],
    ] {
        let (call, marker, _dir) = call_with_marker(options);
        let done = call.without_record().run();
        done.expect_code(125);
        done.check(!exists(&marker), "nothing started");
    }
    let (call, marker, _dir) = call_with_marker(&["--approve-cmd", "/nonexistent/approver"]);
    let done = call.run();
    done.expect_state("failed_before_dispatch", 125)
        .expect("/approval/decision", json!("error"));
    done.check(!exists(&marker), "nothing started");
    // No controlling terminal: --approve tty cannot ask, so nothing runs.
    let probe = Call::new(&[]);
    let (marker, _) = marked(&probe);
    let status = Command::new("setsid")
        .args([
            "-w",
            util::BIN,
            "--approve",
            "tty",
            "--",
            "touch",
            marker.to_str().unwrap(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(125));
    assert!(!exists(&marker));
}
