//! The audit journal: concurrent appends, fail-closed intents, SIGKILL
//! between intent and terminal, torn tails, keyed mode, and every kind of
//! tampering reported at the right line.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::thread;

use mcp_bound::journal::{self, Entry, Intent, Journal, Key};
use mcp_bound::record::Limits;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use util::{Call, exists};

struct Verified {
    code: i32,
    text: String,
    report: Value,
}

fn verify(path: &Path, extra: &[&str]) -> Verified {
    let text = Command::new(util::BIN)
        .arg("verify")
        .arg(path)
        .args(extra)
        .output()
        .unwrap();
    let json = Command::new(util::BIN)
        .arg("verify")
        .arg("--json")
        .arg(path)
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(
        text.status.code(),
        json.status.code(),
        "text and JSON agree"
    );
    let report = serde_json::from_slice(&json.stdout).unwrap_or(Value::Null);
    Verified {
        code: text.status.code().unwrap(),
        text: format!(
            "{}{}",
            String::from_utf8_lossy(&text.stdout),
            String::from_utf8_lossy(&text.stderr)
        ),
        report,
    }
}

#[track_caller]
fn expect_break(path: &Path, line: u64, kind: &str) {
    let verified = verify(path, &[]);
    assert_eq!(
        verified.code, 1,
        "integrity failure expected: {}",
        verified.text
    );
    assert_eq!(
        verified.report["break"]["kind"],
        kind,
        "kind: {}\n{}",
        verified.text,
        std::fs::read_to_string(path).unwrap_or_default()
    );
    assert_eq!(
        verified.report["break"]["line"], line,
        "line: {}",
        verified.text
    );
    assert!(
        verified
            .text
            .contains(&format!("FAILED: line {line}: {kind}")),
        "{}",
        verified.text
    );
}

/// A journal written by real runs: genesis + an intent and a terminal per call.
fn journal_with_calls(calls: usize) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    for i in 0..calls {
        Call::sh(&format!("echo call-{i} >&2; exit {}", i % 3))
            .opt(&["--journal", path.to_str().unwrap()])
            .run()
            .expect_code((i % 3) as i32);
    }
    (dir, path)
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

pub(crate) fn write_lines(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).unwrap();
}

/// Recompute a line's h after editing it, as a forger without a key can.
fn rehash(line: &str) -> String {
    let cut = line.rfind(",\"h\":\"").unwrap();
    let prefix = &line[..cut];
    format!(
        "{prefix},\"h\":\"{}\"}}",
        journal::hex(&Sha256::digest(prefix.as_bytes()))
    )
}

/// Lines chained again in their new order, as a forger without a key
/// can: each line's seq, prev and h made to follow the one before it.
pub(crate) fn rechained(lines: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (seq, line) in lines.iter().enumerate() {
        let entry: Value = serde_json::from_str(line).unwrap();
        let prev = match out.last() {
            Some(before) => serde_json::from_str::<Value>(before).unwrap()["h"]
                .as_str()
                .unwrap()
                .to_string(),
            None => entry["prev"].as_str().unwrap().to_string(),
        };
        let edited = line
            .replacen(
                &format!("\"seq\":{}", entry["seq"]),
                &format!("\"seq\":{seq}"),
                1,
            )
            .replacen(entry["prev"].as_str().unwrap(), &prev, 1);
        out.push(rehash(&edited));
    }
    out
}

#[test]
fn calls_append_intent_and_terminal_and_verify_clean() {
    let (_dir, path) = journal_with_calls(3);
    let all = lines(&path);
    assert_eq!(all.len(), 7);
    let kinds: Vec<String> = all
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "genesis", "intent", "terminal", "intent", "terminal", "intent", "terminal"
        ]
    );
    for line in &all {
        assert!(line.starts_with(r#"{"v":1,"seq":"#), "field order: {line}");
    }
    let terminal: Value = serde_json::from_str(&all[2]).unwrap();
    assert_eq!(terminal["state"], "completed");
    assert_eq!(terminal["exit"], json!({"code": 0}));
    assert_eq!(terminal["excerpt"], "call-0\n");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let verified = verify(&path, &[]);
    assert_eq!(verified.code, 0, "{}", verified.text);
    assert!(
        verified.text.starts_with("OK: 7 entries, journal j_"),
        "{}",
        verified.text
    );
    assert_eq!(verified.report["head"]["seq"], 6);
}

#[test]
fn fifty_concurrent_writers_keep_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.jsonl");
    let runs: Vec<_> = (0..50)
        .map(|i| {
            Call::sh(&format!("echo writer-{i} >&2"))
                .opt(&["--journal", path.to_str().unwrap()])
                .start()
        })
        .collect();
    for run in runs {
        run.finish().expect_state("completed", 0);
    }
    let verified = verify(&path, &[]);
    assert_eq!(verified.code, 0, "{}", verified.text);
    let all = lines(&path);
    let count = |kind: &str| {
        all.iter()
            .filter(|l| l.contains(&format!("\"kind\":\"{kind}\"")))
            .count()
    };
    assert_eq!(count("intent"), 50);
    assert_eq!(count("terminal"), 50);
    assert_eq!(count("genesis"), 1);
    assert_eq!(verified.report["unfinished"], json!([]));
}

fn intent(call_id: &str) -> Intent {
    Intent {
        call_id: call_id.to_string(),
        session_id: None,
        argv: vec!["true".into()],
        cwd: None,
        uid: 0,
        host: None,
        pid: 1,
        limits: Limits {
            timeout_ms: None,
            signal: "TERM".into(),
            grace_ms: 0,
            wait_delay_ms: 0,
            head_bytes: 0,
            tail_bytes: 0,
            excerpt_bytes: 0,
            stdout_guard: mcp_bound::record::StdoutGuard::Off,
            max_message_bytes: 0,
            live_rate: None,
            live_burst: None,
            stdin_close_grace_ms: None,
            redact_patterns: 0,
            rlimits: Default::default(),
        },
        tool_gate: None,
    }
}

fn hammer(path: &Path, lock: bool) {
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let mut journal = Journal::new(path.to_path_buf(), Key::Plain);
            journal.lock = lock;
            journal.sync = false;
            let journal = Arc::new(journal);
            thread::spawn(move || {
                for i in 0..40 {
                    let appended = journal.append(Entry::Intent(&intent(&format!("c-{t}-{i}"))));
                    match appended {
                        Ok(_) => {}
                        // Without the lock a writer may read another's
                        // line half written: that is the race too, and
                        // this writer stops; verify judges the file.
                        Err(_) if !lock => break,
                        Err(err) => panic!("a locked append failed: {err}"),
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

#[test]
fn the_lock_is_what_keeps_the_chain_whole() {
    let dir = tempfile::tempdir().unwrap();
    // Without the lock, O_APPEND keeps lines whole but two writers read the
    // same last line and fork the chain. Races are not certain in one round,
    // so several rounds are allowed; one fork is the proof.
    let mut forked = None;
    for round in 0..20 {
        let path = dir.path().join(format!("unlocked-{round}.jsonl"));
        // Seeded under the lock, so the race is in the middle of the chain
        // rather than two writers each starting a genesis.
        Journal::new(path.clone(), Key::Plain)
            .append(Entry::Intent(&intent("seed")))
            .unwrap();
        hammer(&path, false);
        let verified = verify(&path, &[]);
        if verified.code == 1 {
            forked = Some(verified);
            break;
        }
    }
    let forked = forked.expect("appends without the lock never forked the chain");
    let kind = forked.report["break"]["kind"].as_str().unwrap().to_string();
    assert!(
        ["SEQ_ORDER", "CHAIN_BREAK", "SEQ_GAP"].contains(&kind.as_str()),
        "a fork shows as a sequence or chain break: {}",
        forked.text
    );

    let path = dir.path().join("locked.jsonl");
    hammer(&path, true);
    let verified = verify(&path, &[]);
    assert_eq!(verified.code, 0, "{}", verified.text);
    assert_eq!(verified.report["entries"], 16 * 40 + 1);
}

#[test]
fn sigkill_of_mcp_bound_and_its_watchdog_leaves_one_unfinished_call() {
    let (_dir, path) = journal_with_calls(1);
    let mut run = Call::sh("echo READY; exec sleep 60")
        .opt(&[
            "--journal",
            path.to_str().unwrap(),
            "--call-id",
            "killed-call",
        ])
        .start();
    run.wait_for_line("READY");
    // The watchdog would write the terminal entry (tests/it/contain.rs): a
    // crash that takes it too (the machine, an OOM kill of both) leaves
    // the call unfinished, and verify says so.
    run.kill_with_watchdog();
    let done = run.finish();
    done.check(done.status.code().is_none(), "mcp-bound was SIGKILLed");
    let verified = verify(&path, &[]);
    assert_eq!(verified.code, 0, "warnings do not fail: {}", verified.text);
    let unfinished = verified.report["unfinished"].as_array().unwrap();
    assert_eq!(unfinished.len(), 1, "{}", verified.text);
    assert_eq!(unfinished[0]["call_id"], "killed-call");
    assert!(unfinished[0]["pid"].as_u64().is_some());
    assert!(
        verified
            .text
            .contains("WARNING: unfinished call killed-call"),
        "{}",
        verified.text
    );
    // The chain goes on after the unfinished call.
    Call::new(&["true"])
        .opt(&["--journal", path.to_str().unwrap()])
        .run()
        .expect_state("completed", 0);
    assert_eq!(verify(&path, &[]).code, 0);
}

#[test]
fn a_byte_flipped_is_a_hash_mismatch_at_its_line() {
    let (_dir, path) = journal_with_calls(3);
    let mut bytes = std::fs::read(&path).unwrap();
    let starts: Vec<usize> = std::iter::once(0)
        .chain(
            bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .collect();
    // Inside line 4's call_id value, well before its hash.
    let line4 = &bytes[starts[3]..starts[4]];
    let at = starts[3]
        + String::from_utf8_lossy(line4)
            .find("\"call_id\":\"c_")
            .unwrap()
        + 14;
    bytes[at] ^= 0x01;
    std::fs::write(&path, bytes).unwrap();
    expect_break(&path, 4, "HASH_MISMATCH");
}

#[test]
fn a_line_edited_and_rehashed_breaks_the_chain_at_the_next_line() {
    let (_dir, path) = journal_with_calls(3);
    let mut all = lines(&path);
    all[2] = rehash(&all[2].replace("\"exit_code\":0", "\"exit_code\":9"));
    write_lines(&path, &all);
    expect_break(&path, 4, "CHAIN_BREAK");
}

#[test]
fn a_middle_line_deleted_is_a_sequence_gap() {
    let (_dir, path) = journal_with_calls(3);
    let mut all = lines(&path);
    all.remove(3);
    write_lines(&path, &all);
    expect_break(&path, 4, "SEQ_GAP");
}

#[test]
fn two_lines_swapped_are_out_of_order() {
    let (_dir, path) = journal_with_calls(3);
    let mut all = lines(&path);
    all.swap(3, 4);
    write_lines(&path, &all);
    expect_break(&path, 4, "SEQ_ORDER");
}

#[test]
fn a_line_duplicated_is_out_of_order() {
    let (_dir, path) = journal_with_calls(3);
    let mut all = lines(&path);
    let copy = all[3].clone();
    all.insert(4, copy);
    write_lines(&path, &all);
    expect_break(&path, 5, "SEQ_ORDER");
}

#[test]
fn a_tail_cut_mid_line_is_torn_and_the_next_append_recovers_it() {
    let (_dir, path) = journal_with_calls(2);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 40]).unwrap();
    expect_break(&path, 5, "TORN_TAIL");

    // The next writer keeps the torn bytes and accounts for them.
    Call::new(&["true"])
        .opt(&["--journal", path.to_str().unwrap()])
        .run()
        .expect_state("completed", 0);
    let verified = verify(&path, &[]);
    assert_eq!(verified.code, 0, "{}", verified.text);
    let all = lines(&path);
    let recover: Value = serde_json::from_str(&all[5]).unwrap();
    assert_eq!(recover["kind"], "recover");
    assert_eq!(recover["torn_length"], all[4].len());
    assert!(
        std::fs::read(&path)
            .unwrap()
            .starts_with(&bytes[..bytes.len() - 40]),
        "nothing deleted"
    );
    // The torn call's intent remains without a terminal: unfinished.
    assert_eq!(verified.report["unfinished"].as_array().unwrap().len(), 1);
}

#[test]
fn forged_appends_plain_and_keyed() {
    let (_dir, path) = journal_with_calls(1);
    let all = lines(&path);
    let last: Value = serde_json::from_str(all.last().unwrap()).unwrap();
    let forged_prefix = format!(
        r#"{{"v":1,"seq":3,"prev":"{}","kind":"intent","ts":"2026-01-01T00:00:00.000Z","call_id":"forged","session_id":null,"argv":["rm","-rf","/"],"cwd":null,"uid":0,"host":null,"pid":1,"limits":{{}}"#,
        last["h"].as_str().unwrap()
    );
    // A forger who gets the hash wrong is caught at that line.
    let mut naive = all.clone();
    naive.push(format!("{forged_prefix},\"h\":\"{}\"}}", "ab".repeat(32)));
    write_lines(&path, &naive);
    expect_break(&path, 4, "HASH_MISMATCH");
    // A correctly chained forgery passes a plain journal: the documented limit.
    let mut chained = all.clone();
    chained.push(rehash(&format!(
        "{forged_prefix},\"h\":\"{}\"}}",
        "0".repeat(64)
    )));
    write_lines(&path, &chained);
    assert_eq!(verify(&path, &[]).code, 0);

    // Keyed: the same forgery fails, because the forger lacks the key.
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("journal.key");
    write_key(&key, "a-secret-key-of-32-bytes-length!");
    let keyed = dir.path().join("keyed.jsonl");
    Call::new(&["true"])
        .opt(&[
            "--journal",
            keyed.to_str().unwrap(),
            "--journal-key",
            key.to_str().unwrap(),
        ])
        .run()
        .expect_state("completed", 0);
    let ok = verify(&keyed, &["--key", key.to_str().unwrap()]);
    assert_eq!(ok.code, 0, "{}", ok.text);
    assert_eq!(ok.report["keyed"], true);
    let mut all = lines(&keyed);
    let last: Value = serde_json::from_str(all.last().unwrap()).unwrap();
    let prefix = forged_prefix.replace(
        &forged_prefix[forged_prefix.find("\"prev\":\"").unwrap() + 8..][..64],
        last["h"].as_str().unwrap(),
    );
    all.push(rehash(&format!("{prefix},\"h\":\"{}\"}}", "0".repeat(64))));
    write_lines(&keyed, &all);
    let forged = verify(&keyed, &["--key", key.to_str().unwrap()]);
    assert_eq!(forged.code, 1, "{}", forged.text);
    assert_eq!(forged.report["break"]["kind"], "HASH_MISMATCH");
    assert_eq!(forged.report["break"]["line"], 4);
    // Without the key, or with the wrong one, verify cannot check: exit 2.
    assert_eq!(verify(&keyed, &[]).code, 2);
    let wrong = dir.path().join("wrong.key");
    write_key(&wrong, "another-secret-key-32-bytes-long");
    assert_eq!(verify(&keyed, &["--key", wrong.to_str().unwrap()]).code, 2);
    // A writer with the wrong key refuses to extend the chain.
    let marker = dir.path().join("ran");
    let done = Call::new(&["touch", marker.to_str().unwrap()])
        .opt(&[
            "--journal",
            keyed.to_str().unwrap(),
            "--journal-key",
            wrong.to_str().unwrap(),
        ])
        .run();
    done.expect_state("failed_before_dispatch", 125);
    assert!(!exists(&marker));
    // Rewritten whole as an unkeyed journal, by someone without the key:
    // with --key that is tampering (exit 1), not a usage error.
    let plain = dir.path().join("plain.jsonl");
    Call::new(&["true"])
        .opt(&["--journal", plain.to_str().unwrap()])
        .run()
        .expect_state("completed", 0);
    std::fs::copy(&plain, &keyed).unwrap();
    let rewritten = verify(&keyed, &["--key", key.to_str().unwrap()]);
    assert_eq!(rewritten.code, 1, "{}", rewritten.text);
    assert_eq!(rewritten.report["break"]["kind"], "UNKEYED");
}

/// A journal key others can read (or write) is no secret: the keyed
/// chain's promise needs it private. The writer refuses it (125, nothing
/// run) and so does verify (2), with one line each.
#[test]
fn a_journal_key_others_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("journal.key");
    std::fs::write(&key, "a-secret-key-of-32-bytes-length!").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let journal = dir.path().join("j.jsonl");
    let stderr = util::refused(&[
        "--journal",
        journal.to_str().unwrap(),
        "--journal-key",
        key.to_str().unwrap(),
    ]);
    assert!(
        stderr.contains("--journal-key") && stderr.contains("0644"),
        "{stderr}"
    );
    // Made private, it is taken; verify refuses the readable one too.
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    Call::new(&["true"])
        .opt(&[
            "--journal",
            journal.to_str().unwrap(),
            "--journal-key",
            key.to_str().unwrap(),
        ])
        .run()
        .expect_state("completed", 0);
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o640)).unwrap();
    let refused = verify(&journal, &["--key", key.to_str().unwrap()]);
    assert_eq!(refused.code, 2, "{}", refused.text);
}

/// A key file, private (0600), as a journal key must be.
fn write_key(path: &Path, secret: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, secret).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[test]
fn anchor_catches_a_cut_tail_and_a_rollback() {
    let (_dir, path) = journal_with_calls(2);
    let head = verify(&path, &[]).report["head"]["h"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(verify(&path, &["--anchor", &head]).code, 0);
    // Whole lines cut from the end: still a valid chain, caught only by the anchor.
    let mut all = lines(&path);
    all.truncate(3);
    write_lines(&path, &all);
    assert_eq!(verify(&path, &[]).code, 0);
    let cut = verify(&path, &["--anchor", &head]);
    assert_eq!(cut.code, 1, "{}", cut.text);
    assert_eq!(cut.report["break"]["kind"], "ANCHOR_MISSING");
    // Appends after the anchor are fine.
    let (_dir2, grown) = journal_with_calls(1);
    let head = verify(&grown, &[]).report["head"]["h"]
        .as_str()
        .unwrap()
        .to_string();
    Call::new(&["true"])
        .opt(&["--journal", grown.to_str().unwrap()])
        .run()
        .expect_state("completed", 0);
    assert_eq!(verify(&grown, &["--anchor", &head]).code, 0);
}

#[test]
fn duplicate_and_orphan_calls_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dup.jsonl");
    let journal = Journal::new(path.clone(), Key::Plain);
    journal.append(Entry::Intent(&intent("same"))).unwrap();
    journal.append(Entry::Intent(&intent("same"))).unwrap();
    expect_break(&path, 3, "DUPLICATE_CALL");

    let path = dir.path().join("orphan.jsonl");
    let (_d, real) = journal_with_calls(1);
    // A terminal moved into a journal with no matching intent.
    let terminal_line = lines(&real)[2].clone();
    let journal = Journal::new(path.clone(), Key::Plain);
    journal.append(Entry::Intent(&intent("other"))).unwrap();
    let mut all = lines(&path);
    let last: Value = serde_json::from_str(&all[1]).unwrap();
    let value: Value = serde_json::from_str(&terminal_line).unwrap();
    // Same seq (2) in both journals; only prev needs relinking.
    let moved = terminal_line.replace(value["prev"].as_str().unwrap(), last["h"].as_str().unwrap());
    all.push(rehash(&moved));
    write_lines(&path, &all);
    expect_break(&path, 3, "ORPHAN_TERMINAL");

    // A call id may be used again once its call has ended (hosts reuse
    // --call-id); verify keeps no state per finished call.
    let path = dir.path().join("reuse.jsonl");
    for _ in 0..2 {
        Call::new(&["true"])
            .opt(&["--journal", path.to_str().unwrap(), "--call-id", "again"])
            .run()
            .expect_state("completed", 0);
    }
    let verified = verify(&path, &[]);
    assert_eq!(verified.code, 0, "{}", verified.text);
    // A second terminal for an ended call has no open intent.
    let mut all = lines(&path);
    let last: Value = serde_json::from_str(all.last().unwrap()).unwrap();
    let copy = all
        .last()
        .unwrap()
        .replacen(
            &format!("\"seq\":{}", last["seq"]),
            &format!("\"seq\":{}", last["seq"].as_u64().unwrap() + 1),
            1,
        )
        .replacen(
            last["prev"].as_str().unwrap(),
            last["h"].as_str().unwrap(),
            1,
        );
    all.push(rehash(&copy));
    write_lines(&path, &all);
    expect_break(&path, 6, "ORPHAN_TERMINAL");
}

#[test]
fn an_unwritable_journal_means_the_helper_never_runs() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("helper-ran");
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(dir.path().join("target.jsonl"), &link).unwrap();
    let damaged = dir.path().join("damaged.jsonl");
    std::fs::write(&damaged, "this is not a journal\n").unwrap();
    let as_dir = dir.path().join("a-directory");
    std::fs::create_dir(&as_dir).unwrap();
    for path in [
        PathBuf::from("/nonexistent-dir/audit.jsonl"),
        link.clone(),
        damaged,
        as_dir,
        PathBuf::from("/dev/full"),
    ] {
        let done = Call::new(&["touch", marker.to_str().unwrap()])
            .opt(&["--journal", path.to_str().unwrap()])
            .run();
        done.expect_state("failed_before_dispatch", 125);
        done.check(!exists(&marker), "the helper never ran");
        done.check(
            done.stderr_text().contains("cannot write the intent"),
            "one clear line",
        );
    }
    assert!(
        !exists(&dir.path().join("target.jsonl")),
        "the symlink was not followed"
    );
}

#[test]
fn verify_usage_and_io_errors_exit_2() {
    let missing = verify(Path::new("/nonexistent/journal.jsonl"), &[]);
    assert_eq!(missing.code, 2, "{}", missing.text);
    let (_dir, path) = journal_with_calls(1);
    let bad_anchor = Command::new(util::BIN)
        .args(["verify", path.to_str().unwrap(), "--anchor", "xyz"])
        .output()
        .unwrap();
    assert_eq!(bad_anchor.status.code(), Some(2));
    let no_path = Command::new(util::BIN).arg("verify").output().unwrap();
    assert_eq!(no_path.status.code(), Some(2));
    // An empty file is not an intact journal.
    let empty = path.with_file_name("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    assert_eq!(verify(&empty, &[]).code, 1);
}

#[test]
fn a_lock_held_too_long_fails_closed_and_writes_nothing() {
    let (_dir, path) = journal_with_calls(1);
    let before = std::fs::read(&path).unwrap();
    // Another holder keeps the lock (its own open file description).
    let holder = std::fs::File::open(&path).unwrap();
    mcp_bound::sys::lock_exclusive(&holder, std::time::Duration::from_secs(1)).unwrap();
    let mut journal = Journal::new(path.clone(), Key::Plain);
    journal.lock_wait = std::time::Duration::from_millis(200);
    let started = std::time::Instant::now();
    let err = journal
        .append(Entry::Intent(&intent("c-late")))
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(200));
    assert_eq!(std::fs::read(&path).unwrap(), before, "nothing was written");
    // Once the holder lets go, the chain continues.
    mcp_bound::sys::unlock(&holder);
    journal.append(Entry::Intent(&intent("c-after"))).unwrap();
    let verified = verify(&path, &[]);
    assert_eq!(verified.code, 0, "{}", verified.text);
}

#[test]
fn a_helper_never_runs_while_the_journal_stays_locked() {
    // The real binary waits 10 s for the lock, then fails closed. The
    // holder is a separate process, as another mcp-bound would be.
    let (dir, path) = journal_with_calls(1);
    let before = std::fs::read(&path).unwrap();
    let ready = dir.path().join("locked");
    let mut holder = Command::new("python3")
        .args([
            "-c",
            "import fcntl, sys, time\n\
             f = open(sys.argv[1], 'rb'); fcntl.flock(f, fcntl.LOCK_EX)\n\
             open(sys.argv[2], 'w').close(); time.sleep(30)",
            path.to_str().unwrap(),
            ready.to_str().unwrap(),
        ])
        .spawn()
        .unwrap();
    let waiting = std::time::Instant::now();
    while !exists(&ready) {
        assert!(
            waiting.elapsed() < std::time::Duration::from_secs(10),
            "the lock holder never took the lock"
        );
        thread::sleep(std::time::Duration::from_millis(10));
    }
    let marker = dir.path().join("helper-ran");
    let done = Call::new(&["touch", marker.to_str().unwrap()])
        .opt(&["--journal", path.to_str().unwrap()])
        .run();
    holder.kill().unwrap();
    holder.wait().unwrap();
    done.expect_state("failed_before_dispatch", 125);
    done.check(!exists(&marker), "the helper never ran");
    done.check(
        done.stderr_text()
            .contains("could not lock it within 10000 ms"),
        "one clear line naming the lock",
    );
    done.check(
        std::fs::read(&path).unwrap() == before,
        "nothing was written",
    );
}

/// Every seq is the one before plus one, and every prev is the h before.
#[track_caller]
fn assert_one_chain(path: &Path) {
    let mut prev = journal::ZERO_HASH.to_string();
    for (expected_seq, line) in lines(path).into_iter().enumerate() {
        let entry: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(entry["seq"], expected_seq, "seq in {line}");
        assert_eq!(entry["prev"], prev.as_str(), "prev in {line}");
        prev = entry["h"].as_str().unwrap().to_string();
    }
}

#[test]
fn every_tear_position_of_the_last_line_recovers_to_a_journal_that_verifies() {
    // Cut 1: only the final newline. Cut 2: the closing brace too. Cut 40:
    // inside the last line. Cut to the line start: the whole last entry.
    // None: all of the last line but its first byte, measured on each
    // journal itself (line lengths vary with pids and durations).
    for cut in [Some(1), Some(2), Some(40), None] {
        let (_dir, path) = journal_with_calls(2);
        let bytes = std::fs::read(&path).unwrap();
        let cut = cut.unwrap_or_else(|| lines(&path).last().unwrap().len());
        let kept = &bytes[..bytes.len() - cut];
        std::fs::write(&path, kept).unwrap();
        let before = verify(&path, &[]);
        if cut == 1 {
            // A complete entry that lacks only its newline is an entry.
            assert_eq!(before.code, 0, "cut {cut}: {}", before.text);
            assert!(
                before.text.contains("WARNING") && before.text.contains("newline"),
                "cut {cut}: the missing newline is a warning: {}",
                before.text
            );
            assert_eq!(before.report["final_newline_missing"], true);
            assert_eq!(before.report["entries"], 5);
        } else {
            expect_break(&path, 5, "TORN_TAIL");
        }

        // Two more writers: each chains onto what is there.
        for _ in 0..2 {
            Call::new(&["true"])
                .opt(&["--journal", path.to_str().unwrap()])
                .run()
                .expect_state("completed", 0);
        }
        let after = verify(&path, &[]);
        assert_eq!(after.code, 0, "cut {cut}: {}", after.text);
        assert_eq!(after.report["final_newline_missing"], false);
        assert!(
            std::fs::read(&path).unwrap().starts_with(kept),
            "cut {cut}: nothing deleted"
        );
        let all = lines(&path);
        let kinds: Vec<String> = all
            .iter()
            .map(|l| match serde_json::from_str::<Value>(l) {
                Ok(entry) => entry["kind"].as_str().unwrap_or_default().to_string(),
                Err(_) => "torn".to_string(),
            })
            .collect();
        if cut == 1 {
            // The writer finished the line and chained onto it.
            assert_one_chain(&path);
            assert!(!kinds.contains(&"recover".to_string()), "{kinds:?}");
            assert_eq!(after.report["entries"], 9);
            assert_eq!(after.report["unfinished"].as_array().unwrap().len(), 0);
        } else {
            assert_eq!(kinds[5], "recover", "cut {cut}: {kinds:?}");
            assert_eq!(after.report["entries"], 9, "cut {cut}");
            // The torn call's intent remains without a terminal.
            assert_eq!(after.report["unfinished"].as_array().unwrap().len(), 1);
        }
    }
}

/// A valid journal of `calls` finished calls, written directly (minimal
/// entries, so a large one is quick to make).
fn synthetic_journal(path: &Path, calls: usize) {
    synthetic_journal_of(path, calls, |_| "null".into(), 0);
}

/// As [`synthetic_journal`], call `i` in session `session(i)` (its JSON)
/// with an excerpt of `excerpt` bytes.
fn synthetic_journal_of(
    path: &Path,
    calls: usize,
    session: impl Fn(usize) -> String,
    excerpt: usize,
) {
    let excerpt = match excerpt {
        0 => String::new(),
        n => format!(r#","excerpt":"{}""#, "e".repeat(n)),
    };
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut prev = journal::ZERO_HASH.to_string();
    let mut seq = 0u64;
    let ts = "2026-01-01T00:00:00.000Z";
    let mut emit = |body: String, prev: &mut String, seq: &mut u64| {
        let prefix = format!(
            r#"{{"v":1,"seq":{seq},"prev":"{prev}",{body}"#,
            seq = *seq,
            prev = prev
        );
        let h = journal::hex(&Sha256::digest(prefix.as_bytes()));
        writeln!(out, "{prefix},\"h\":\"{h}\"}}").unwrap();
        *prev = h;
        *seq += 1;
    };
    emit(
        format!(r#""kind":"genesis","ts":"{ts}","journal_id":"j_test","key_id":null"#),
        &mut prev,
        &mut seq,
    );
    for i in 0..calls {
        emit(
            format!(
                r#""kind":"intent","ts":"{ts}","call_id":"c_{i}","session_id":{},"argv":["true"],"cwd":null,"uid":0,"host":null,"pid":1,"limits":{{}}"#,
                session(i)
            ),
            &mut prev,
            &mut seq,
        );
        emit(
            format!(
                r#""kind":"terminal","ts":"{ts}","call_id":"c_{i}","state":"completed","signals":[],"streams":{{}}{excerpt}"#
            ),
            &mut prev,
            &mut seq,
        );
    }
}

/// Peak RSS of `mcp-bound verify` over the journal at `path`, in KiB, and
/// its exit code. The journal is fed through a FIFO, and VmHWM is read once
/// everything is written (verify has then read all but a pipe's worth):
/// the peak of verify's own address space, not of whoever forked it.
fn verify_peak_rss_kib(path: &Path) -> (u64, i32) {
    peak_rss_kib(&["verify"], path)
}

/// As [`verify_peak_rss_kib`], for `mcp-bound ARGS JOURNAL`.
fn peak_rss_kib(args: &[&str], path: &Path) -> (u64, i32) {
    let fifo = path.with_extension("fifo");
    util::mkfifo(&fifo);
    let mut child = Command::new(util::BIN)
        .args(args)
        .arg(&fifo)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    std::io::copy(&mut std::fs::File::open(path).unwrap(), &mut writer).unwrap();
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let rss = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    drop(writer);
    let code = child.wait().unwrap().code().unwrap();
    std::fs::remove_file(&fifo).unwrap();
    (rss, code)
}

#[test]
fn verify_memory_does_not_grow_with_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small.jsonl");
    let large = dir.path().join("large.jsonl");
    synthetic_journal(&small, 2_000);
    synthetic_journal(&large, 100_000);
    let (small_rss, small_code) = verify_peak_rss_kib(&small);
    let (large_rss, large_code) = verify_peak_rss_kib(&large);
    assert_eq!((small_code, large_code), (0, 0), "both journals verify");
    eprintln!("verify peak RSS: {small_rss} KiB, {large_rss} KiB");
    // 50 times the calls; a digest per finished call would cost ~4 MB.
    assert!(
        large_rss < small_rss + 1024,
        "verify's peak RSS grew from {small_rss} KiB (4k entries) to {large_rss} KiB (200k entries)"
    );
}

#[test]
fn journal_lines_are_checked_against_the_published_schema() {
    // What mcp-bound writes passes (the harness checks every call's
    // appended lines); a line of another shape does not.
    let (_dir, path) = journal_with_calls(2);
    util::check_journal_schema(&path);
    let mut all = lines(&path);
    let odd = all[1].replacen("\"uid\":", "\"user\":", 1);
    all[1] = odd;
    write_lines(&path, &all);
    let caught = std::panic::catch_unwind(|| util::check_journal_schema(&path));
    assert!(
        caught.is_err(),
        "an intent with a foreign field fails the schema"
    );
}

/// Another process holding the journal's lock must not freeze the loop:
/// request entries are appended inside it, and the append used to sleep
/// up to 10 s for the lock, while signals, deadlines and the drain
/// waited. Now the audited line waits for the lock on a timer, nothing
/// unjournaled reaches the server, and the rest goes on: a deadline
/// answers the held call, and the host's TERM ends the server while the
/// lock is still held.
#[test]
fn a_held_journal_lock_freezes_nothing_in_the_loop() {
    use std::io::Write;
    let call = util::server(&[]).opt(&["--mcp", "--request-timeout", "1s", "--journal"]);
    let journal = call.path("audit.jsonl");
    let mut run = call.opt(&[journal.to_str().unwrap()]).start();
    run.send(&util::rpc_request(json!(0), "pid", json!({})));
    let server_pid = util::parse_message(&run.read_line())["result"]["pid"]
        .as_u64()
        .unwrap();
    let mut holder = lock_holder(&journal);
    run.send(&util::rpc_request(
        json!(1),
        "tools/call",
        json!({"name": "held", "arguments": {}}),
    ));
    let answer = util::parse_message(&run.read_line());
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!(1), json!(-32001)),
        "the deadline went on while the lock was held: {answer}"
    );
    run.signal("TERM");
    // The loop acts on TERM with the lock still held: the server goes.
    util::wait_gone(server_pid);
    holder.stdin.take().unwrap().write_all(b"done").unwrap();
    holder.wait().unwrap();
    let done = run.finish();
    done.expect_code(143);
    done.check(
        !done.stderr_text().contains("REQUEST 1 tools/call"),
        "the call whose entry waited never reached the server",
    );
    let (ok, report) = util::verify_report(&journal);
    done.check(ok, &format!("verify: {report}"));
}

/// `log`, `check` and `report` read as verify does: their memory follows
/// the calls in flight and what they show, not the journal's length,
/// whatever the view.
#[test]
fn reading_memory_does_not_grow_with_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small.jsonl");
    let large = dir.path().join("large.jsonl");
    synthetic_journal(&small, 2_000);
    synthetic_journal(&large, 100_000);
    let check = [
        "check",
        "--forbid-tool",
        "rm*",
        "--no-unfinished",
        "--no-unapproved",
        "--max-duration",
        "1h",
    ];
    for view in [
        &["log", "--json"][..],
        &["log", "--sessions"],
        &["log"],
        &["log", "--requests"],
        &check,
        &["report", "-o", "-"],
    ] {
        let (small_rss, small_code) = peak_rss_kib(view, &small);
        let (large_rss, large_code) = peak_rss_kib(view, &large);
        assert_eq!((small_code, large_code), (0, 0), "{view:?}");
        assert!(
            large_rss < small_rss + 1024,
            "{view:?}: peak RSS grew from {small_rss} KiB (4k entries) to {large_rss} KiB (200k entries)"
        );
    }
}

/// A process that holds the journal's lock, started, and holding it
/// until its stdin closes (LOCKED is its handshake).
fn lock_holder(journal: &Path) -> std::process::Child {
    use std::io::BufRead;
    let mut holder = Command::new("python3")
        .args([
            "-c",
            "import fcntl, sys\nf = open(sys.argv[1], 'a')\nfcntl.flock(f, fcntl.LOCK_EX)\nprint('LOCKED', flush=True)\nsys.stdin.read()",
            journal.to_str().unwrap(),
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut locked = String::new();
    std::io::BufReader::new(holder.stdout.take().unwrap())
        .read_line(&mut locked)
        .unwrap();
    assert_eq!(locked.trim(), "LOCKED");
    holder
}

/// Another process holds the journal's lock when the host's SIGTERM
/// ends the call: the terminal entry's wait is bounded by the grace, not
/// the 10 s lock wait, and the record says the entry was not written,
/// and why. The watchdog's `supervisor_killed` obeys the same bound.
#[test]
fn a_held_lock_holds_the_host_s_stop_up_for_the_grace_at_most() {
    for killed in [false, true] {
        let call = Call::sh("touch \"$READY\"; exec sleep 30");
        let (ready, journal) = (call.path("ready"), call.path("audit.jsonl"));
        let run = call
            .env("READY", ready.to_str().unwrap())
            .opt(&["--grace", "500ms", "--journal", journal.to_str().unwrap()])
            .start();
        while !util::exists(&ready) {
            std::thread::yield_now();
        }
        let mut holder = lock_holder(&journal);
        let started = std::time::Instant::now();
        let done = if killed {
            run.kill_and_wait_for_watchdog();
            run.finish()
        } else {
            run.finish_by("TERM")
        };
        let took = started.elapsed();
        holder.stdin.take();
        holder.wait().unwrap();
        let what = if killed { "the watchdog" } else { "mcp-bound" };
        done.check(
            took < std::time::Duration::from_secs(9),
            &format!("{what} did not wait the 10 s lock wait: {took:?}"),
        );
        done.expect("/mcp_bound/journal/terminal_written", json!(false));
        let error = done
            .field("/mcp_bound/journal/error")
            .as_str()
            .unwrap_or_default();
        if !killed {
            done.check(error.contains("grace"), &format!("why: {error}"));
        }
        let (_, report) = util::verify_report(&journal);
        done.check(
            report["unfinished"]
                .as_array()
                .is_some_and(|u| u.len() == 1),
            &format!("the call is unfinished in the journal: {report}"),
        );
    }
}

/// Peak RSS of `mcp-bound ARGS JOURNAL` over its whole run, to its exit
/// (the page is built after the journal is read), in KiB: the child's
/// ru_maxrss, as Python's resource module reads it.
fn whole_run_peak_rss_kib(args: &[&str], path: &Path) -> (u64, i32) {
    let out = Command::new("python3")
        .args([
            "-c",
            "import resource, subprocess, sys\n\
             code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n\
             print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)",
            util::BIN,
        ])
        .args(args)
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut words = text.split_whitespace().map(|w| w.parse::<i64>().unwrap());
    (words.next().unwrap() as u64, words.next().unwrap() as i32)
}

/// The report keeps of each call's excerpt its head and tail, and draws
/// a bounded number of sessions: its memory follows what the page shows.
/// Twelve calls with 10 MiB excerpts cost it about what they cost
/// verify (each line is read whole by both), and many sessions no more
/// than a few.
#[test]
fn the_report_s_memory_follows_what_it_shows_not_the_excerpts_or_the_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.jsonl");
    synthetic_journal_of(&big, 12, |i| format!("\"s{i}\""), 10 << 20);
    let (verify_rss, code) = whole_run_peak_rss_kib(&["verify"], &big);
    assert_eq!(code, 0);
    let (report_rss, code) = whole_run_peak_rss_kib(&["report", "-o", "-"], &big);
    assert_eq!(code, 0);
    assert!(
        report_rss < verify_rss + 24 * 1024,
        "report {report_rss} KiB against verify's {verify_rss} KiB on 12 calls of 10 MiB excerpts"
    );
    let (few, many) = (dir.path().join("few.jsonl"), dir.path().join("many.jsonl"));
    synthetic_journal_of(&few, 20_000, |i| format!("\"s{}\"", i % 100), 0);
    synthetic_journal_of(&many, 20_000, |i| format!("\"s{i}\""), 0);
    let (few_rss, _) = whole_run_peak_rss_kib(&["report", "-o", "-"], &few);
    let (many_rss, code) = whole_run_peak_rss_kib(&["report", "-o", "-"], &many);
    assert_eq!(code, 0);
    assert!(
        many_rss < few_rss + 2048,
        "20,000 sessions: {many_rss} KiB against {few_rss} KiB for 100"
    );
}
