//! Hostile input and faults: secrets in what is captured, odd paths, NUL
//! bytes, helpers that misbehave, signal storms, descriptor hygiene.

use crate::util;

use std::process::Command;

use serde_json::{Value, json};
use util::{Call, exists};

const SECRET: &str = "abcdefghijkl0123456789";

#[track_caller]
fn no_secret(done: &util::Done, where_: &str, text: &str) {
    done.check(
        !text.contains(SECRET),
        &format!("the secret leaked into {where_}"),
    );
}

#[test]
fn a_secret_split_across_two_reads_is_masked_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("audit.jsonl");
    // Two writes with a pause between: two reads by mcp-bound.
    // The secret comes through the environment, which is never recorded;
    // in argv it would be the test's own leak.
    let done = Call::sh(
        "printf 'Authorization: Bea' >&2; sleep 0.2; printf 'rer %s\\n' \"$S\" >&2; exit 1",
    )
    .opt(&["--journal", journal.to_str().unwrap()])
    .env("S", SECRET)
    .run();
    done.expect_state("completed", 1);
    let excerpt = done.field("/stderr/excerpt").as_str().unwrap();
    done.check(
        excerpt == "Authorization: Bearer [REDACTED]\n",
        "masked whole",
    );
    no_secret(&done, "the record", done.record_text.as_deref().unwrap());
    no_secret(&done, "the echo", &done.stderr_text());
    no_secret(
        &done,
        "the journal",
        &std::fs::read_to_string(&journal).unwrap(),
    );
    done.check(
        done.stderr_text().contains("Bearer [REDACTED]"),
        "echo masked",
    );
}

#[test]
fn argv_is_masked_and_the_environment_never_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("audit.jsonl");
    let done = Call::new(&["sh", "-c", "exit 0", "sh", &format!("--token={SECRET}")])
        .opt(&["--journal", journal.to_str().unwrap()])
        .env("CLOUD_API_KEY", SECRET)
        .run();
    done.expect_state("completed", 0)
        .expect("/argv/4", json!("--token=[REDACTED]"));
    no_secret(&done, "the record", done.record_text.as_deref().unwrap());
    no_secret(
        &done,
        "the journal",
        &std::fs::read_to_string(&journal).unwrap(),
    );
}

#[test]
fn extra_patterns_private_keys_and_cut_tokens() {
    let done = Call::sh(
        "echo 'id internal-4242'; echo '-----BEGIN EC PRIVATE KEY-----'; echo MHcCAQEE; \
         echo '-----END EC PRIVATE KEY-----'; echo ok",
    )
    .opt(&["--redact", "internal-[0-9]+", "--stdout-guard", "jsonrpc"])
    .run();
    done.expect_state("completed", 0)
        .expect("/limits/redact_patterns", json!(1));
    let excerpt = done.field("/stderr/excerpt").as_str().unwrap();
    done.check(
        excerpt.contains("id [REDACTED]"),
        "--redact applied to diverted stdout",
    );
    done.check(
        excerpt.contains("[REDACTED PRIVATE KEY]"),
        "key block masked",
    );
    done.check(!excerpt.contains("MHcCAQEE"), "key body gone");
    done.check(
        done.field("/stdout/first_diverted") == &json!("id [REDACTED]\n"),
        "first_diverted masked",
    );
    // A token cut by the tail's start: no pattern can match half of it.
    let done = Call::sh("printf 'ghp_%s%s tail' \"$S\" \"$S\" >&2; exit 3")
        .opt(&["--tail-bytes", "30"])
        .env("S", SECRET)
        .run();
    let excerpt = done.field("/stderr/excerpt").as_str().unwrap();
    done.check(
        excerpt.ends_with("]\n[cut]"),
        "the fragment at the cut is masked",
    );
    no_secret(&done, "the record", done.record_text.as_deref().unwrap());
    done.check(
        Call::new(&["true"])
            .without_record()
            .opt(&["--redact", "("])
            .run()
            .code()
            == 125,
        "an invalid --redact is a usage error",
    );
}

#[test]
fn live_stderr_is_masked() {
    let done = Call::sh("echo \"password=$S\" >&2; echo fine >&2")
        .opt(&["--live"])
        .env("S", SECRET)
        .run();
    done.expect_state("completed", 0);
    done.check(
        done.stderr_text() == "password=[REDACTED]\nfine\n",
        "live output masked line by line",
    );
}

#[test]
fn record_path_that_is_a_device_is_refused() {
    let marker = tempfile::tempdir().unwrap();
    let marker = marker.path().join("ran");
    let done = Call::new(&["touch", marker.to_str().unwrap()])
        .without_record()
        .opt(&["--record", "/dev/full"])
        .run();
    done.expect_code(125);
    done.check(
        done.stderr_text().contains("not a regular file"),
        "says why",
    );
    done.check(!exists(&marker), "the helper was not started");
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::metadata("/dev/full")
            .unwrap()
            .file_type()
            .is_char_device(),
        "/dev/full is still a device"
    );
}

#[test]
fn nul_bytes_are_counted_and_kept_as_text() {
    let done = Call::sh("printf 'a\\000b\\000\\000c' >&2; printf 'x\\000y'").run();
    done.expect_state("completed", 0)
        .expect("/stderr/bytes_seen", json!(6))
        .expect("/stderr/excerpt", json!("a\u{0}b\u{0}\u{0}c"))
        .expect("/stdout/bytes_forwarded", json!(3));
    done.check(done.stdout == b"x\0y", "stdout byte-exact with NULs");
}

#[test]
fn limits_of_zero_and_huge_values() {
    Call::sh("echo lost >&2")
        .opt(&[
            "--tail-bytes",
            "0",
            "--head-bytes",
            "0",
            "--excerpt-bytes",
            "0",
        ])
        .run()
        .expect_state("completed", 0)
        .expect("/stderr/bytes_seen", json!(5))
        .expect("/stderr/bytes_retained", json!(0))
        .expect(
            "/stderr/excerpt",
            json!("[stderr truncated: kept 0 of 5 bytes]\n"),
        );
    Call::new(&["true"])
        .opt(&[
            "--timeout",
            "99999999d",
            "--grace",
            "1e9",
            "--tail-bytes",
            "1G",
        ])
        .run()
        .expect_state("completed", 0);
    let done = Call::sh("trap '' TERM; exec sleep 30")
        .opt(&["--timeout", "0.2", "--grace", "0"])
        .run();
    done.expect_state("timed_out", 124)
        .expect("/exit", json!({"signal": "KILL", "core_dumped": false}));
}

#[test]
fn a_helper_that_closes_stdout_but_keeps_running() {
    let done = Call::sh("exec >&-; sleep 0.3; echo still-here >&2").run();
    done.expect_state("completed", 0);
    let events = done.record()["events"].as_array().unwrap();
    let position = |kind: &str| events.iter().position(|e| e["event"] == kind).unwrap();
    done.check(
        position("stdout_closed") < position("helper_exited"),
        "stdout closed first",
    );
    done.check(
        done.field("/stderr/excerpt") == &json!("still-here\n"),
        "and it ran on",
    );
}

#[test]
fn a_storm_of_signals_is_survived_and_recorded_boundedly() {
    let mut run = Call::sh("trap '' TERM INT HUP; echo READY; exec sleep 30")
        .opt(&["--grace", "60s"])
        .start();
    run.wait_for_line("READY");
    let pid = run.pid().to_string();
    // Harmless signals by the hundred, then many cancelling ones at once.
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "i=0; while [ $i -lt 300 ]; do kill -s CHLD {pid}; kill -s WINCH {pid}; i=$((i+1)); done; \
             for s in HUP INT TERM HUP INT TERM QUIT HUP INT TERM HUP INT; do kill -s $s {pid}; done"
        ))
        .status()
        .unwrap();
    let done = run.finish();
    done.expect("/state", json!("cancelled_after_dispatch"))
        .expect("/exit", json!({"signal": "KILL", "core_dumped": false}));
    done.check(
        done.events("cancel_requested").len() <= 8,
        "the record stays bounded",
    );
    done.check(
        done.signals_sent().iter().any(|(s, _, _)| s == "KILL"),
        "the second signal escalated",
    );
}

#[test]
fn the_helper_inherits_no_descriptor_of_mcp_bounds_own() {
    // Whatever the caller passed down is the caller's business and passes
    // through; mcp-bound must add nothing (self-pipe, journal, record fd,
    // re-opened stdout are all close-on-exec).
    let list = "ls /proc/self/fd | sort -n | tr '\\n' ' '";
    let direct = Command::new("sh").args(["-c", list]).output().unwrap();
    let parse = |bytes: &[u8]| -> Vec<u32> {
        String::from_utf8_lossy(bytes)
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect()
    };
    let expected = parse(&direct.stdout);
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("audit.jsonl");
    let done = Call::sh(list)
        .opt(&[
            "--journal",
            journal.to_str().unwrap(),
            "--mcp",
            "--stdout-guard",
            "off",
        ])
        .run();
    done.expect_state("completed", 0);
    let through = parse(&done.stdout);
    done.check(
        through == expected,
        &format!("helper fds {through:?}, direct {expected:?}"),
    );
}

#[test]
fn an_unstartable_call_still_ends_with_a_record_and_a_journal_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("audit.jsonl");
    let done = Call::new(&["/nonexistent/helper"])
        .opt(&["--journal", journal.to_str().unwrap()])
        .run();
    done.expect_state("failed_before_dispatch", 127);
    let text = std::fs::read_to_string(&journal).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["kind"], "terminal");
    assert_eq!(last["state"], "failed_before_dispatch");
}

#[test]
fn a_secret_in_argv_never_leaks_through_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("audit.jsonl");
    let program = format!("/nonexistent/token={SECRET}");
    let done = Call::new(&[program.as_str()])
        .opt(&["--journal", journal.to_str().unwrap(), "--record-fd", "2"])
        .run();
    done.expect_state("failed_before_dispatch", 127);
    let error = done.field("/error").as_str().unwrap();
    done.check(
        error.contains("token=[REDACTED]") && error.contains("command not found"),
        "the error still says what happened, masked",
    );
    no_secret(&done, "the record", done.record_text.as_deref().unwrap());
    no_secret(&done, "our stderr", &done.stderr_text());
    no_secret(
        &done,
        "the journal",
        &std::fs::read_to_string(&journal).unwrap(),
    );
    // Usage errors are masked too: clap echoes the bad value.
    let done = Call::new(&["true"])
        .without_record()
        .opt(&["--timeout", &format!("token={SECRET}")])
        .run();
    done.expect_code(125);
    no_secret(&done, "a usage error", &done.stderr_text());
}

#[test]
fn a_cut_masks_a_bounded_fragment_and_the_rest_stays_visible() {
    // One 10 MB line: head and tail are both inside the same long token.
    let done = Call::sh("head -c 10000000 /dev/zero | tr '\\0' a >&2; exit 1")
        .opt(&["--head-bytes", "1024", "--tail-bytes", "2048"])
        .run();
    done.expect_state("completed", 1);
    let excerpt = done.field("/stderr/excerpt").as_str().unwrap();
    let visible = excerpt.matches('a').count();
    done.check(
        visible >= 1024 + 2048 - 4 * 64,
        &format!("the retained text stays visible ({visible} bytes of it shown)"),
    );
    done.check(
        excerpt.contains("[cut]"),
        "the edges at the cuts are masked",
    );
    // The echo on our stderr shows text, not only markers.
    done.check(
        done.stderr_text().contains(&"a".repeat(512)),
        "the echo shows the retained text",
    );
}

/// A truncation cut inside a credential's label (`…orization: Basic
/// c3Vw…`) leaves a value no pattern knows. It must not reach the record's
/// excerpt, the journal's terminal entry, or the crash answer's
/// stderr_tail: everything from the cut to the line break is masked.
#[test]
fn a_cut_inside_a_label_leaks_nothing() {
    // The capture's tail, the journal's excerpt and the crash answer all
    // keep the last 2048 bytes: each cut lands right after "Proxy-Auth".
    let value = "c3VwZXJzZWNyZXQxMjM0NTY3ODkw";
    let kept = format!("orization: Basic {value}\n");
    let filler = "z".repeat(2048 - kept.len() - 1);
    let stderr = format!("{}\nProxy-Auth{kept}{filler}\n", "x".repeat(3000));
    let call = util::server(&[]).opt(&[
        "--mcp",
        "--tail-bytes",
        "2048",
        "--journal-excerpt-bytes",
        "2048",
        "--journal",
    ]);
    let journal = call.path("audit.jsonl");
    let mut run = call.opt(&[journal.to_str().unwrap()]).start();
    run.send(&util::rpc_request(
        1,
        "crash",
        json!({"stderr": stderr, "code": 3}),
    ));
    let answer = util::parse_message(&run.read_line());
    run.close_stdin();
    let done = run.finish();
    let tail = answer["error"]["data"]["mcp_bound"]["stderr_tail"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let excerpt = done
        .field("/stderr/excerpt")
        .as_str()
        .unwrap_or_default()
        .to_string();
    let text = std::fs::read_to_string(&journal).unwrap();
    let terminal = text
        .lines()
        .find(|l| l.contains("\"kind\":\"terminal\""))
        .unwrap_or_default();
    for (where_, text) in [
        ("stderr_tail", &tail),
        ("the record's excerpt", &excerpt),
        ("the journal", &terminal.to_string()),
    ] {
        done.check(
            text.contains("[cut]") && !text.contains(&value[..8]) && !text.contains(&value[8..]),
            &format!(
                "{where_} masks the value after the cut: {:?}",
                &text[..text.len().min(200)]
            ),
        );
        done.check(
            text.contains("zzzz"),
            &format!("{where_} keeps the next line"),
        );
    }
}

/// Live stderr and the stderr log let a long line's start through once
/// the 4 KiB carry fills; a credential split at that point is masked on
/// both sides of it, in both outputs.
#[test]
fn a_secret_split_where_a_long_line_is_let_through_is_masked() {
    let call =
        Call::sh("printf '%s' \"$FIRST\" >&2; read x < \"$GO\"; printf '%s\\n' \"$REST\" >&2");
    let (log, go) = (call.path("stderr.log"), call.path("go"));
    util::mkfifo(&go);
    // The line's first 4096+ bytes end inside the value.
    let value = "c3VwZXJzZWNyZXQxMjM0NTY3ODkw";
    let mut first = "x ".repeat(2100);
    first.truncate(4100 - 24);
    first.push_str("Authorization: Basic ");
    first.push_str(&value[..14]);
    // What follows the cut is masked up to 64 bytes, then shows again.
    let rest = format!("{} {} and the line ends here", &value[14..], "y".repeat(60));
    let mut run = call
        .env("FIRST", &first)
        .env("REST", &rest)
        .env("GO", go.to_str().unwrap())
        .opt(&["--live", "--stderr-log", log.to_str().unwrap()])
        .start();
    // A handshake: the start of the line is in the log, so it was let
    // through; then the rest may come.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::fs::metadata(&log).map_or(0, |m| m.len()) < 4000 {
        assert!(
            std::time::Instant::now() < deadline,
            "the line's start never reached the log"
        );
        std::thread::yield_now();
    }
    std::fs::write(&go, "go\n").unwrap();
    let _ = &mut run;
    let done = run.finish();
    done.expect_state("completed", 0);
    let logged = std::fs::read_to_string(&log).unwrap();
    for (where_, text) in [
        ("live stderr", done.stderr_text()),
        ("the stderr log", logged),
    ] {
        done.check(
            !text.contains(&value[..14]) && !text.contains(&value[14..]),
            &format!("{where_} masks both halves of the value"),
        );
        done.check(
            text.contains("and the line ends here\n"),
            &format!("{where_} shows the line's end"),
        );
    }
}

/// --help never prints an environment variable's value (the host config
/// sets secrets there), nor `VAR=` for one that is unset.
#[test]
fn help_never_shows_environment_values() {
    for flag in ["--help", "-h"] {
        let output = Command::new(util::BIN)
            .arg(flag)
            .env("MCP_BOUND_REDACT", "sk-proj-supersecretvalue1234567890")
            .env("MCP_BOUND_TAIL_BYTES", "12345")
            .env_remove("MCP_BOUND_TIMEOUT")
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{flag}");
        assert!(
            help.contains("MCP_BOUND_REDACT"),
            "{flag}: the variable is named"
        );
        for leak in [
            "supersecretvalue",
            "12345",
            "MCP_BOUND_TIMEOUT=",
            "MCP_BOUND_REDACT=",
        ] {
            assert!(!help.contains(leak), "{flag} shows {leak}:\n{help}");
        }
    }
}

/// A file another local user planted where mcp-bound writes (a sticky
/// /tmp) would let them read the intent and the server's stderr, and own
/// the chain: a journal, a stderr log or its lock that is not ours, that
/// others may write, or a journal that is not a regular file, is refused
/// (125, one line, nothing run). One that others may only read works,
/// with a warning said once and recorded.
#[test]
fn a_planted_journal_or_log_is_refused_and_a_readable_one_warned_about() {
    use std::os::unix::fs::{PermissionsExt, chown};
    let dir = tempfile::tempdir().unwrap();
    let planted = |name: &str, mode: u32, owner: Option<u32>| {
        let path = dir.path().join(name);
        std::fs::write(&path, "").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        if let Some(uid) = owner {
            chown(&path, Some(uid), Some(uid)).unwrap();
        }
        path
    };
    // CI runs as root: a file of nobody's is another user's.
    let other = (util::effective_uid() == 0).then_some(65534);
    let mut cases = vec![
        (
            "--journal",
            planted("j-writable.jsonl", 0o666, None),
            "writable by others",
        ),
        (
            "--stderr-log",
            planted("log-writable", 0o622, None),
            "writable by others",
        ),
    ];
    let fifo = dir.path().join("j-fifo.jsonl");
    util::mkfifo(&fifo);
    cases.push(("--journal", fifo, "not a regular file"));
    if let Some(uid) = other {
        cases.push((
            "--journal",
            planted("j-other.jsonl", 0o600, Some(uid)),
            "belongs to uid",
        ));
        cases.push((
            "--stderr-log",
            planted("log-other", 0o600, Some(uid)),
            "belongs to uid",
        ));
        planted("log-lock.lock", 0o600, Some(uid));
        cases.push((
            "--stderr-log",
            dir.path().join("log-lock"),
            "belongs to uid",
        ));
    } else {
        skipped!("files of another user: not root, so none can be made here");
    }
    for (flag, path, why) in cases {
        let option = [flag, path.to_str().unwrap()];
        let stderr = util::refused(&option);
        assert!(stderr.contains(why), "{option:?}: {stderr}");
    }
    // Others may read it: it works, said once and in the record.
    let journal = planted("j-readable.jsonl", 0o644, None);
    let done = util::Call::sh("true")
        .opt(&["--journal", journal.to_str().unwrap()])
        .run();
    done.expect_state("completed", 0);
    let warnings = done.field("/mcp_bound/warnings").clone();
    done.check(
        warnings
            .as_array()
            .is_some_and(|w| w.len() == 1 && w[0].as_str().unwrap().contains("others can read it")),
        &format!("recorded: {warnings}"),
    );
    done.check(
        done.stderr_text().matches("others can read it").count() == 1,
        "said once",
    );
    // /dev/null is root's and everyone's: a log may be it.
    util::Call::sh("echo x >&2")
        .opt(&["--stderr-log", "/dev/null"])
        .run()
        .expect_state("completed", 0);
}

/// A FIFO given as `--tool-pin` or `--journal-key` (or as `verify
/// --key`) is opened without waiting for a writer, and refused: one line,
/// exit 125 (2 for verify), nothing started, no cgroup left behind (the
/// harness checks the record's).
#[test]
fn a_fifo_given_as_a_pin_file_or_a_key_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    util::mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    let stderr = util::refused(&["--mcp", "--tool-pin", f]);
    assert!(stderr.contains("--tool-pin"), "{stderr}");
    let journal = dir.path().join("j.jsonl");
    let stderr = util::refused(&["--journal", journal.to_str().unwrap(), "--journal-key", f]);
    assert!(
        stderr.contains("--journal-key") && stderr.contains("regular"),
        "{stderr}"
    );
    let (code, _, err) = util::subcommand("verify", &["--key", f, journal.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = util::subcommand("pin", &[f]);
    assert_eq!(code, 2, "{err}");
}

/// The pin file swapped for a FIFO mid-session: the loop never opens a
/// file that can block. The session goes on answering (the failure
/// counted in the record), and the host's SIGTERM still ends it.
#[test]
fn a_pin_file_swapped_for_a_fifo_mid_session_freezes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let pins = dir.path().join("pins.json");
    let mut run = util::server(&[])
        .opt(&["--mcp", "--tool-pin", pins.to_str().unwrap()])
        .start();
    let list = |id: u64| {
        util::rpc_request(
            id,
            "tools/list",
            serde_json::json!({"tools": [{"name": "a"}]}),
        )
    };
    run.send(&list(1));
    assert_eq!(util::parse_message(&run.read_line())["id"], 1);
    std::fs::remove_file(&pins).unwrap();
    util::mkfifo(&pins);
    run.send(&list(2));
    assert_eq!(util::parse_message(&run.read_line())["id"], 2, "answered");
    run.send(&util::rpc_request(
        3,
        "tools/call",
        serde_json::json!({"name": "a", "arguments": {}}),
    ));
    assert_eq!(util::parse_message(&run.read_line())["id"], 3, "answered");
    let done = run.finish_by("TERM");
    let errors = done
        .field("/mcp/tool_gate/pin/file_errors")
        .as_u64()
        .unwrap_or(0);
    done.check(errors >= 1, "the failure is counted");
}

/// The record's argv masking keeps a prompt's command line: the quote
/// after `password: ` closes the prompt, it opens no value, so nothing
/// after it is eaten; a value in quotes after a label is still masked.
#[test]
fn a_prompt_in_the_argv_is_kept_and_a_quoted_value_is_masked() {
    let script = r#"printf "password: " >&2; x=bob; echo "got:$x""#;
    let done = Call::sh(script).run();
    done.expect_state("completed", 0);
    done.expect("/argv/2", json!(script));
    let done = Call::sh(r#"echo "password: 'hunter2'" >/dev/null"#).run();
    done.expect(
        "/argv/2",
        json!(r#"echo "password: [REDACTED]" >/dev/null"#),
    );
}
