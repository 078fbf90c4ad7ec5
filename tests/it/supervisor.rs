//! The core supervisor, driven through the real binary: floods, deadlines,
//! signals, pipe holders, stdout pass-through and the record. Every run is
//! checked by the harness for leftover processes and a schema-valid record.

use crate::util;

use std::io::Read;
use std::process::{Command, Stdio};
use std::thread;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use util::{Call, exists};

#[test]
fn flood_under_a_deadline_is_bounded_marked_and_ended() {
    let done = Call::sh("yes helper-diagnostic 1>&2")
        .opt(&["--timeout", "1s", "--excerpt-bytes", "300"])
        .run();
    done.expect_state("timed_out", 124)
        .expect("/cancel_reason", json!("timeout"))
        .expect("/exit", json!({"signal": "TERM", "core_dumped": false}))
        .expect("/stream_end", json!("eof"))
        .expect("/stderr/truncated", json!(true))
        .expect("/stderr/tail_bytes", json!(16384));
    let seen = done.field("/stderr/bytes_seen").as_u64().unwrap();
    let retained = done.field("/stderr/bytes_retained").as_u64().unwrap();
    done.check(retained <= 16384, "retained within the tail limit");
    done.check(seen > 1 << 20, "the flood was drained (over 1 MiB seen)");
    let excerpt = done.field("/stderr/excerpt").as_str().unwrap();
    done.check(
        excerpt.starts_with(&format!(
            "[stderr truncated: kept last {retained} of {seen} bytes]\n"
        )),
        "the excerpt starts with the marker and exact counts",
    );
    done.check(
        done.signals_sent() == [("TERM".into(), "group".into(), "timeout".into())],
        "exactly one TERM to the group",
    );
    // The echo is bounded by --excerpt-bytes and carries its own marker.
    let stderr = done.stderr_text();
    done.check(
        stderr.starts_with("[stderr truncated: kept last "),
        "echo marker",
    );
    done.check(stderr.len() < 300 + 400, "echo bounded by --excerpt-bytes");
}

#[test]
fn every_flood_path_keeps_and_counts_the_same() {
    // 12 MiB of 9-byte lines with a 2-byte character, then a last line:
    // head, tail and counts must be exact, whether the flood was copied
    // through user space, moved through the kernel ring, or chosen by
    // measurement.
    let script = "yes 'flood é' | head -c 12582909 >&2; printf 'last line\\n' >&2";
    let mut excerpts = Vec::new();
    for path in ["read", "splice", "auto"] {
        if let Some(why) = util::no_splice_here().filter(|_| path == "splice") {
            skipped!("--flood-path splice: {why}");
            continue;
        }
        let done = Call::sh(script)
            .opt(&[
                "--flood-path",
                path,
                "--tail-bytes",
                "1000",
                "--head-bytes",
                "50",
            ])
            .run();
        done.expect_state("completed", 0)
            .expect("/stderr/bytes_seen", json!(12_582_909 + 10))
            .expect("/stderr/truncated", json!(true))
            .expect("/stderr/head_bytes", json!(50));
        let excerpt = done.field("/stderr/excerpt").as_str().unwrap().to_string();
        done.check(
            excerpt.starts_with("[stderr truncated: kept first 50 and last ")
                && excerpt.contains(" of 12582919 bytes]\nflood é\n")
                && excerpt.ends_with("flood é\nflood é\nlast line\n"),
            &format!("{path}: head, marker and tail are exact"),
        );
        excerpts.push(excerpt);
    }
    assert!(
        excerpts.windows(2).all(|pair| pair[0] == pair[1]),
        "the same text on every path"
    );
}

#[test]
fn a_flood_on_the_kernel_path_still_ends_at_the_deadline() {
    if let Some(why) = util::no_splice_here() {
        skipped!("{why}");
        return;
    }
    let done = Call::sh("yes helper-diagnostic 1>&2")
        .opt(&["--timeout", "0.5s", "--flood-path", "splice"])
        .run();
    done.expect_state("timed_out", 124)
        .expect("/exit", json!({"signal": "TERM", "core_dumped": false}))
        .expect("/stream_end", json!("eof"));
    let seen = done.field("/stderr/bytes_seen").as_u64().unwrap();
    done.check(seen > 1 << 20, "the flood was drained");
    let excerpt = done.field("/stderr/excerpt").as_str().unwrap();
    done.check(
        excerpt.contains(&format!(" of {seen} bytes]")),
        "the marker carries the exact count",
    );
    // TERM can end yes inside a write, so the stream may stop mid-line:
    // the tail is whole lines, then at most a start of one.
    let last = excerpt.rsplit('\n').next().unwrap();
    done.check(
        excerpt.ends_with("helper-diagnostic\n")
            || (!last.is_empty() && "helper-diagnostic".starts_with(last)),
        "the tail ends where the stream ended",
    );
}

#[test]
fn helper_that_ignores_term_is_killed_after_the_grace() {
    let done = Call::sh("trap '' TERM; echo READY; exec sleep 60")
        .opt(&["--timeout", "0.3s", "--grace", "0.3s"])
        .run();
    done.expect_state("timed_out", 124)
        .expect("/exit", json!({"signal": "KILL", "core_dumped": false}));
    let sent = done.signals_sent();
    // In a cgroup (auto's choice where one can be made) KILL goes to the
    // whole cgroup at once; otherwise to the group.
    let kill_to = match done.field("/contain/method").as_str() {
        Some("cgroup") => "cgroup",
        _ => "group",
    };
    done.check(
        sent == [
            ("TERM".into(), "group".into(), "timeout".into()),
            ("KILL".into(), kill_to.into(), "timeout".into()),
        ],
        "TERM to the group, then KILL to the group or the cgroup",
    );
    let term_at = done.events("signal_sent")[0]["t_ms"].as_u64().unwrap();
    let kill_at = done.events("signal_sent")[1]["t_ms"].as_u64().unwrap();
    done.check(kill_at >= term_at + 300, "KILL no earlier than the grace");
}

#[test]
fn preserve_status_returns_the_helpers_own_status() {
    Call::new(&["sleep", "30"])
        .opt(&["--timeout", "0.2", "--preserve-status"])
        .run()
        .expect_state("timed_out", 143);
    Call::sh("trap '' TERM; exec sleep 30")
        .opt(&["--timeout", "0.2", "--grace", "0.1", "--preserve-status"])
        .run()
        .expect_state("timed_out", 137);
}

#[test]
fn success_then_flood_then_cancel_is_cancelled_after_dispatch() {
    // 100 KB of diagnostics are in the pipe before the result is printed,
    // so the capture must have truncated whatever comes after.
    let mut run = Call::sh(
        "head -c 100000 /dev/zero | tr '\\0' d >&2; echo action-done; \
         yes cleanup-diagnostic 1>&2",
    )
    .start();
    run.wait_for_line("action-done");
    run.signal("TERM");
    let done = run.finish();
    done.expect_state("cancelled_after_dispatch", 143)
        .expect("/cancel_reason", json!("signal"))
        .expect("/cancel_signal", json!("TERM"))
        .expect("/exit", json!({"signal": "TERM", "core_dumped": false}))
        .expect("/stderr/truncated", json!(true));
    done.check(
        String::from_utf8_lossy(&done.stdout).contains("action-done"),
        "the result already on stdout was forwarded",
    );
    done.check(
        done.signals_sent()[0] == ("TERM".into(), "group".into(), "signal".into()),
        "the received TERM was forwarded to the group",
    );
}

#[test]
fn a_cancel_during_cleanup_is_cancelled_after_dispatch_with_the_real_exit() {
    // The helper exits 0 at once; a grandchild holds stderr, so mcp-bound
    // is in its --wait-delay cleanup when the host's TERM arrives.
    let mut run = Call::sh("echo done; (yes x 1>&2 &); exit 0")
        .opt(&["--wait-delay", "30"])
        .start();
    run.wait_for_line("done");
    run.wait_for_exited_child();
    run.signal("TERM");
    let done = run.finish();
    done.expect_state("cancelled_after_dispatch", 143)
        .expect("/exit", json!({"code": 0}))
        .expect("/cancel_reason", json!("signal"))
        .expect("/cancel_signal", json!("TERM"))
        .expect("/stream_end", json!("eof_after_descendants_killed"));
    done.check(
        done.signals_sent()[0] == ("TERM".into(), "group".into(), "signal".into()),
        "the TERM went to what was left of the tree",
    );
}

#[test]
fn interrupt_is_forwarded_and_a_second_signal_escalates_to_kill() {
    // The helper survives INT (it traps it) and ignores TERM; only KILL ends it.
    let script = "trap 'echo GOT-INT' INT; trap '' TERM; echo READY; \
                  while :; do sleep 0.05; done";
    let mut run = Call::sh(script).opt(&["--grace", "60s"]).start();
    run.wait_for_line("READY");
    run.signal("INT");
    run.wait_for_line("GOT-INT");
    run.signal("TERM");
    let done = run.finish();
    done.expect_state("cancelled_after_dispatch", 130)
        .expect("/cancel_signal", json!("INT"))
        .expect("/exit", json!({"signal": "KILL", "core_dumped": false}));
    let sent = done.signals_sent();
    done.check(
        sent.first() == Some(&("INT".into(), "group".into(), "signal".into())),
        "INT forwarded first",
    );
    done.check(
        sent.iter().any(|s| s.0 == "KILL"),
        "the second signal escalated to KILL without waiting for the grace",
    );
    let cancels = done.events("cancel_requested");
    done.check(cancels.len() == 2, "both signals recorded");
}

#[test]
fn wrapper_exits_while_grandchild_holds_stderr() {
    let done = Call::sh("sleep 60 & echo wrapper-done; exit 3")
        .opt(&["--wait-delay", "0.3s"])
        .run();
    done.expect_state("completed", 3)
        .expect("/exit", json!({"code": 3}))
        .expect("/cancel_reason", Value::Null)
        .expect("/stream_end", json!("eof_after_descendants_killed"));
    done.check(
        done.field("/descendants_signalled").as_u64() >= Some(1),
        "the holder was signalled",
    );
    done.check(
        done.signals_sent()
            .iter()
            .all(|(_, _, reason)| reason == "pipes_held"),
        "signals were sent because pipes were held, not as a cancellation",
    );
    done.check(
        done.field("/duration_ms").as_u64() < Some(30_000),
        "did not wait for the grandchild's sleep",
    );
}

#[test]
fn grandchild_that_escapes_with_setsid_is_still_found() {
    let done = Call::sh("setsid sleep 60 & echo wrapper-done")
        .opt(&["--wait-delay", "0.3s"])
        .run();
    done.expect_state("completed", 0)
        .expect("/exit", json!({"code": 0}))
        .expect("/stream_end", json!("eof_after_descendants_killed"));
    done.check(
        done.signals_sent()
            .iter()
            .any(|(signal, target, _)| signal == "TERM" && target == "descendants"),
        "the escaped grandchild was signalled outside the group",
    );
}

#[test]
fn holder_that_ignores_term_is_killed_after_the_grace() {
    let done = Call::sh("(trap '' TERM; exec sleep 60) & exit 0")
        .opt(&["--wait-delay", "0.2s", "--grace", "0.2s"])
        .run();
    done.expect_state("completed", 0)
        .expect("/stream_end", json!("eof_after_descendants_killed"));
    done.check(
        done.signals_sent()
            .iter()
            .any(|(signal, _, _)| signal == "KILL"),
        "KILL after the grace",
    );
}

#[test]
fn leftover_daemon_without_pipes_is_ended_too() {
    // Closed its copies of the pipes, so EOF comes at once; it still runs.
    let done = Call::sh("setsid sleep 60 >/dev/null 2>&1 </dev/null & exit 0")
        .opt(&["--grace", "0.2s"])
        .run();
    done.expect_state("completed", 0)
        .expect("/stream_end", json!("eof"));
    done.check(
        done.signals_sent()
            .iter()
            .any(|(_, _, reason)| reason == "leftovers"),
        "leftover descendant signalled",
    );
}

#[test]
fn invalid_utf8_and_a_line_far_larger_than_the_limit() {
    // 100000 'x', then "é" (C3 A9), an invalid FF, and "end": the 5-byte
    // tail would start inside "é", so it is cut to FF "end".
    let done =
        Call::sh("head -c 100000 /dev/zero | tr '\\0' x >&2; printf '\\303\\251\\377end' >&2")
            .opt(&["--tail-bytes", "5"])
            .run();
    done.expect_state("completed", 0)
        .expect("/stderr/bytes_seen", json!(100006))
        .expect("/stderr/bytes_retained", json!(4))
        .expect("/stderr/truncated", json!(true))
        .expect(
            "/stderr/excerpt",
            json!("[stderr truncated: kept last 4 of 100006 bytes]\n\u{FFFD}end"),
        );
}

#[test]
fn ten_megabyte_single_line_with_head_and_tail() {
    // Both cuts fall inside the one line: 64 bytes next to each are
    // masked, and the rest of what was kept shows.
    let done = Call::sh("head -c 10000000 /dev/zero | tr '\\0' '#' >&2; printf 'END' >&2")
        .opt(&["--head-bytes", "100", "--tail-bytes", "100"])
        .run();
    let (head, tail) = ("#".repeat(36), "#".repeat(33));
    done.expect_state("completed", 0)
        .expect("/stderr/bytes_seen", json!(10_000_003))
        .expect("/stderr/bytes_retained", json!(200))
        .expect(
            "/stderr/excerpt",
            json!(format!(
                "[stderr truncated: kept first 100 and last 100 of 10000003 bytes]\n\
                 {head}[cut]\n[stderr: 9999803 bytes dropped here]\n[cut]{tail}END"
            )),
        );
}

#[test]
fn thirty_two_concurrent_floods() {
    let runs: Vec<_> = (0..32)
        .map(|_| {
            Call::sh("yes concurrent-flood 1>&2")
                .opt(&["--timeout", "1s", "--echo", "never"])
                .start()
        })
        .collect();
    for run in runs {
        let done = run.finish();
        done.expect_state("timed_out", 124)
            .expect("/stderr/truncated", json!(true));
        done.check(
            done.field("/stderr/bytes_retained").as_u64() <= Some(16384),
            "bounded",
        );
        done.check(done.stderr.is_empty(), "--echo never prints nothing");
    }
}

#[test]
fn stdout_is_byte_exact_through_a_slow_consumer_while_stderr_floods() {
    let call = Call::sh("head -c 50000000 /dev/zero >&2 & cat \"$PAYLOAD\"; wait");
    let payload_path = call.path("payload.bin");
    let mut payload = vec![0u8; 3 << 20];
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    for byte in payload.iter_mut() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        *byte = seed as u8;
    }
    std::fs::write(&payload_path, &payload).unwrap();
    let mut run = call.env("PAYLOAD", payload_path.to_str().unwrap()).start();
    let mut stdout = run.take_stdout();
    let mut received = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        // A slow reader: small reads with pauses, so mcp-bound must hold
        // back the helper's stdout while it keeps draining stderr.
        let n = stdout.read(&mut chunk).unwrap();
        if n == 0 {
            break;
        }
        received.extend_from_slice(&chunk[..n]);
        if received.len() % (256 << 10) < 8192 {
            thread::sleep(std::time::Duration::from_millis(2));
        }
    }
    drop(stdout);
    let done = run.finish();
    done.expect_state("completed", 0)
        .expect("/stderr/bytes_seen", json!(50_000_000))
        .expect("/stdout/bytes_seen", json!(payload.len()))
        .expect("/stdout/bytes_forwarded", json!(payload.len()));
    done.check(
        Sha256::digest(&received) == Sha256::digest(&payload),
        "stdout identical to the payload (SHA-256)",
    );
}

#[test]
fn consumer_that_closes_stdout_cancels_the_helper() {
    let mut run = Call::new(&["yes", "protocol-line"]).start();
    let mut stdout = run.take_stdout();
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let done = run.finish();
    done.expect_state("cancelled_after_dispatch", 141)
        .expect("/cancel_reason", json!("client_disconnected"))
        .expect("/exit", json!({"signal": "TERM", "core_dumped": false}));
}

/// `mcp-bound -- cmd | head -2` in a shell script: 141 as a shell reports
/// a command killed by SIGPIPE, and nothing on stderr (the helper's own
/// complaint included) unless --echo always; the record says what happened.
#[test]
fn a_pipeline_reader_that_stops_early_is_quiet_unless_echo_always() {
    for (echo, quiet) in [
        (None, true),
        (Some("on-failure"), true),
        (Some("always"), false),
    ] {
        let mut run = Call::sh("echo complaint >&2; yes protocol-line");
        if let Some(echo) = echo {
            run = run.opt(&["--echo", echo]);
        }
        let mut run = run.start();
        let mut stdout = run.take_stdout();
        let mut first = [0u8; 64];
        stdout.read_exact(&mut first).unwrap();
        drop(stdout);
        let done = run.finish();
        done.expect_state("cancelled_after_dispatch", 141)
            .expect("/cancel_reason", json!("client_disconnected"))
            .expect("/stderr/bytes_seen", json!(10));
        let stderr = done.stderr_text();
        done.check(
            stderr.is_empty() == quiet,
            &format!("--echo {echo:?}: {stderr:?}"),
        );
    }
}

#[test]
fn consumer_that_goes_away_is_noticed_while_the_helper_is_silent() {
    let mut run = Call::sh("echo READY; exec sleep 60").start();
    run.wait_for_line("READY");
    drop(run.take_stdout());
    let done = run.finish();
    done.expect_state("cancelled_after_dispatch", 141)
        .expect("/cancel_reason", json!("client_disconnected"));
}

#[test]
fn stopped_helper_still_ends_at_the_deadline() {
    let done = Call::sh("kill -STOP $$").opt(&["--timeout", "0.3s"]).run();
    done.expect_state("timed_out", 124)
        .expect("/exit", json!({"signal": "TERM", "core_dumped": false}));
}

#[test]
fn exit_code_matrix() {
    let cases: &[(&[&str], i32, Value)] = &[
        (&["true"], 0, json!({"code": 0})),
        (&["false"], 1, json!({"code": 1})),
        (&["sh", "-c", "exit 7"], 7, json!({"code": 7})),
        (
            &["sh", "-c", "kill -USR1 $$"],
            138,
            json!({"signal": "USR1", "core_dumped": false}),
        ),
    ];
    for (helper, code, exit) in cases {
        Call::new(helper)
            .run()
            .expect_state("completed", *code)
            .expect("/exit", exit.clone());
    }
}

#[test]
fn helper_not_found_is_127_and_not_executable_is_126() {
    let done = Call::new(&["/nonexistent/helper"]).run();
    done.expect_state("failed_before_dispatch", 127)
        .expect("/exit", Value::Null)
        .expect("/pid", Value::Null);
    done.check(
        done.stderr_text()
            .starts_with("mcp-bound: /nonexistent/helper: command not found"),
        "one clear line",
    );

    let call = Call::new(&[]);
    let script = call.path("not-executable.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    let done = Call::new(&[script.to_str().unwrap()]).run();
    done.expect_state("failed_before_dispatch", 126)
        .expect("/exit", Value::Null);
    done.check(done.stderr_text().contains("cannot run"), "one clear line");
}

/// mcp-bound ignores SIGPIPE and handles five signals; the helper starts
/// as it would without us: nothing blocked, nothing ignored, a process
/// group of its own, the tree's mark in its environment.
#[test]
fn helper_starts_with_a_clean_signal_state_in_its_own_group() {
    // grep reads its own state as it was at exec (a shell reading $$'s
    // would catch the shell blocking signals around its own forks).
    let signal_state = ["grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"];
    let done = Call::new(&signal_state).run();
    done.expect_state("completed", 0);
    // The same program started directly (the Rust runtime ignores SIGPIPE
    // here and resets it in what it starts, as mcp-bound must).
    let mut direct = std::process::Command::new(signal_state[0]);
    util::with_default_signals(&mut direct);
    let direct = direct.args(&signal_state[1..]).output().unwrap();
    let direct = String::from_utf8_lossy(&direct.stdout).into_owned();
    let out = String::from_utf8_lossy(&done.stdout).into_owned();
    done.check(
        out.lines().next() == Some("SigBlk:\t0000000000000000"),
        "no signal blocked",
    );
    done.check(
        out == direct,
        "what is ignored is what a direct start ignores (not SIGPIPE)",
    );

    let done =
        Call::sh("cut -d' ' -f5 /proc/$$/stat; echo $$; echo \"mark=${MCP_BOUND_TREE:+set}\"")
            .run();
    done.expect_state("completed", 0);
    let out = String::from_utf8_lossy(&done.stdout).into_owned();
    let lines: Vec<&str> = out.lines().collect();
    done.check(lines.len() == 3, "three lines");
    done.check(lines[0] == lines[1], "its own process group");
    let pid = done.field("/pid").as_u64().map(|p| p.to_string());
    done.check(
        pid.as_deref() == Some(lines[1]),
        "the record's pid is the helper's",
    );
    done.check(
        lines[2] == "mark=set",
        "the tree's mark is in its environment",
    );
}

#[test]
fn record_is_written_before_dispatch_and_replaced_at_the_end() {
    let call = Call::sh("cat \"$RECORD_PATH\"");
    let record_path = call.record_path();
    let done = call.env("RECORD_PATH", record_path.to_str().unwrap()).run();
    let in_flight: Value = serde_json::from_slice(&done.stdout).expect("helper saw a record");
    done.check(in_flight["state"] == "dispatched", "in-flight state");
    done.check(in_flight["exit"].is_null(), "in-flight exit is null");
    done.check(
        in_flight["exit_code"].is_null(),
        "in-flight exit_code is null",
    );
    done.check(
        in_flight["call_id"] == done.record()["call_id"],
        "same call",
    );
    done.expect_state("completed", 0);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&record_path)
        .unwrap()
        .permissions()
        .mode();
    done.check(mode & 0o777 == 0o600, "record mode 0600");
    let leftovers: Vec<_> = std::fs::read_dir(record_path.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    done.check(leftovers.is_empty(), "no temporary files left");
}

#[test]
fn sigkilled_supervisor_leaves_a_true_record_and_no_helper() {
    let mut run = Call::sh("echo READY; exec sleep 60").start();
    run.wait_for_line("READY");
    run.kill_and_wait_for_watchdog();
    let done = run.finish();
    done.check(done.status.code().is_none(), "mcp-bound died of SIGKILL");
    // The watchdog rewrote the in-flight record: killed, no exit seen.
    done.expect("/state", json!("supervisor_killed"))
        .expect("/exit", Value::Null)
        .expect("/exit_code", Value::Null);
    // Without the watchdog (it died too) the in-flight record stays.
    let mut run = Call::sh("echo READY; exec sleep 60").start();
    run.wait_for_line("READY");
    run.kill_with_watchdog();
    let done = run.finish();
    done.expect("/state", json!("dispatched"))
        .expect("/exit", Value::Null);
}

#[test]
fn record_fd_gets_the_same_record_as_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let fd_path = dir.path().join("fd-record.json");
    let file_path = dir.path().join("file-record.json");
    let tag = format!("record-fd-{}", std::process::id());
    let output = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{} --record {} --record-fd 3 -- sh -c 'ls -l /proc/$$/fd/3 2>&1; exit 5' 3>{}",
            util::BIN,
            file_path.display(),
            fd_path.display()
        ))
        .env("MCP_BOUND_TEST_TAG", &tag)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(5));
    let text = std::fs::read_to_string(&fd_path).unwrap();
    assert_eq!(text.lines().count(), 1, "one line: {text}");
    let record: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(record["exit"], json!({"code": 5}));
    assert_eq!(record["state"], "completed");
    let file_record: Value =
        serde_json::from_str(&std::fs::read_to_string(&file_path).unwrap()).unwrap();
    assert_eq!(record, file_record, "both routes carry the same record");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("No such file"),
        "the helper did not inherit the record descriptor: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(
        util::tagged_processes(&tag).is_empty(),
        "nothing left running"
    );
}

#[test]
fn echo_modes() {
    let always = Call::sh("echo diag >&2").opt(&["--echo", "always"]).run();
    always.expect_state("completed", 0);
    always.check(always.stderr_text().starts_with("diag\n"), "always echoes");
    always.check(
        always.stderr_text().contains("mcp-bound: completed"),
        "summary line",
    );

    let quiet = Call::sh("echo diag >&2").run();
    quiet.check(quiet.stderr.is_empty(), "on-failure is quiet on success");

    let failing = Call::sh("echo diag >&2; exit 2").run();
    failing.expect_state("completed", 2);
    failing.check(
        failing.stderr_text().starts_with("diag\n"),
        "on-failure echoes",
    );

    let never = Call::sh("echo diag >&2; exit 2")
        .opt(&["--echo", "never"])
        .run();
    never.check(never.stderr.is_empty(), "never is quiet");
}

#[test]
fn signal_option_and_environment_defaults() {
    let done = Call::new(&["sleep", "30"])
        .opt(&["-s", "int", "--timeout", "0.2"])
        .run();
    done.expect_state("timed_out", 124)
        .expect("/exit", json!({"signal": "INT", "core_dumped": false}))
        .expect("/limits/signal", json!("INT"));

    let done = Call::new(&["sleep", "30"])
        .env("MCP_BOUND_TIMEOUT", "200ms")
        .env("MCP_BOUND_SIGNAL", "SIGHUP")
        .env("MCP_BOUND_CALL_ID", "call-from-env")
        .env("MCP_BOUND_SESSION_ID", "session-7")
        .run();
    done.expect_state("timed_out", 124)
        .expect("/exit", json!({"signal": "HUP", "core_dumped": false}))
        .expect("/call_id", json!("call-from-env"))
        .expect("/session_id", json!("session-7"))
        .expect("/limits/timeout_ms", json!(200));
}

#[test]
fn zero_timeout_means_no_deadline() {
    Call::new(&["sh", "-c", "sleep 0.3"])
        .opt(&["--timeout", "0"])
        .run()
        .expect_state("completed", 0)
        .expect("/limits/timeout_ms", Value::Null);
}

#[test]
fn invalid_options_exit_125_and_start_nothing() {
    let cases: &[&[&str]] = &[
        &["--timeout", "abc"],
        &["--timeout", "-1"],
        &["--timeout", "1D"],
        &["--timeout", "-inf"],
        &["--timeout", "nan"],
        &["--timeout", "0x"],
        &["--timeout", "0x1p"],
        &["--signal", "RTMIN+99"],
        &["--signal", "RTMAX-1x"],
        &["--live-rate", "0"],
        &["--max-message-bytes", "0"],
        &["--journal-key", "/nonexistent/key"],
        &["--signal", "FOO"],
        &["--signal", "0"],
        &["--grace", "soon"],
        &["--kill-after", "-3"],
        &["--wait-delay", "x"],
        &["--head-bytes", "lots"],
        &["--head-bytes", "2G"],
        &["--tail-bytes", "-1"],
        &["--excerpt-bytes", "1.1K"],
        &["--echo", "sometimes"],
        &["--flood-path", "teleport"],
        &["--record-fd", "1"],
        &["--record-fd", "0"],
        &["--record-fd", "77"],
        &["--record-fd", "abc"],
        &["--call-id", ""],
        &["--call-id", "a b"],
        &["--session-id", "x\ty"],
        &["--no-such-option"],
        &["--preserve-status=maybe"],
    ];
    for options in cases {
        let stderr = util::refused(options);
        assert!(stderr.starts_with("mcp-bound: "), "{options:?}: {stderr}");
    }
}

#[test]
fn invalid_environment_values_exit_125() {
    for (key, value) in [
        ("MCP_BOUND_TIMEOUT", "soon"),
        ("MCP_BOUND_SIGNAL", "NOPE"),
        ("MCP_BOUND_TAIL_BYTES", "many"),
        ("MCP_BOUND_ECHO", "loud"),
        ("MCP_BOUND_FLOOD_PATH", "fast"),
        ("MCP_BOUND_PRESERVE_STATUS", "perhaps"),
        ("MCP_BOUND_LIVE_RATE", "0"),
        ("MCP_BOUND_MAX_MESSAGE_BYTES", "0"),
        // (A variable whose feature is off, MCP_BOUND_JOURNAL_KEY without
        // a journal, is a default and is ignored: tests/it/usage.rs.)
    ] {
        let stderr = util::refused_by(|call| call.env(key, value), &format!("{key}={value}"));
        assert!(stderr.starts_with("mcp-bound: "), "{key}={value}: {stderr}");
        assert!(stderr.contains(key), "names where it came from: {stderr}");
    }
    // From the command line, the option alone is named, even with the
    // variable set to something valid.
    for call in [
        |call: Call| call.opt(&["--timeout", "soon"]),
        |call: Call| call.env("MCP_BOUND_TIMEOUT", "5s").opt(&["--timeout=soon"]),
    ] {
        let stderr = util::refused_by(call, "--timeout soon");
        assert!(stderr.contains("--timeout"), "{stderr}");
        assert!(!stderr.contains("MCP_BOUND_TIMEOUT"), "{stderr}");
    }
}

#[test]
fn missing_command_is_a_usage_error() {
    let done = Call::new(&[]).without_record().run();
    done.expect_code(125);
    let stderr = done.stderr_text();
    done.check(
        stderr.trim_end().lines().count() == 1,
        "one line, not clap's block",
    );
    done.check(stderr.contains("<COMMAND>"), "names what is missing");
    done.check(
        stderr.contains("Usage: mcp-bound [OPTIONS] -- <COMMAND>"),
        "shows the usage line",
    );
    let done = Call::new(&[]).without_record().opt(&["verify"]).run();
    done.expect_code(2);
    let stderr = done.stderr_text();
    done.check(
        stderr.trim_end().lines().count() == 1 && stderr.contains("<JOURNAL>"),
        "verify names the missing journal",
    );
    done.check(
        stderr.contains("Usage: mcp-bound verify"),
        "verify shows its usage line",
    );
}

#[test]
fn sub_millisecond_limits_stay_within_the_schema() {
    // The harness validates the record: 0 would break timeout_ms >= 1.
    let done = Call::sh("sleep 5")
        .opt(&[
            "--timeout",
            "0.0004",
            "--grace",
            "0.0004",
            "--wait-delay",
            "0.0001",
        ])
        .run();
    done.expect_state("timed_out", 124)
        .expect("/limits/timeout_ms", json!(1))
        .expect("/limits/grace_ms", json!(1))
        .expect("/limits/wait_delay_ms", json!(1));
    let done = Call::new(&["true"])
        .opt(&["--approve-cmd", "sleep 5", "--approval-timeout", "0.0004"])
        .run();
    done.expect_state("denied", 77)
        .expect("/approval/timeout_ms", json!(1))
        .expect("/approval/decision", json!("expired"));
}

#[test]
fn gnu_durations_inf_and_hex() {
    // inf is no deadline at all, as with GNU timeout.
    for text in ["inf", "infinity", "INF", "infs"] {
        Call::new(&["true"])
            .opt(&["--timeout", text])
            .run()
            .expect_state("completed", 0)
            .expect("/limits/timeout_ms", Value::Null);
    }
    // 0x1p-3 is 0.125 s: a hex float, as strtod reads it.
    let done = Call::sh("sleep 5").opt(&["--timeout", "0x1p-3"]).run();
    done.expect_state("timed_out", 124)
        .expect("/limits/timeout_ms", json!(125));
    Call::new(&["true"])
        .opt(&["--timeout", "0x10"])
        .run()
        .expect("/limits/timeout_ms", json!(16000));
}

#[test]
fn real_time_signals_by_number_and_name() {
    if util::PORTABLE {
        // As on macOS: none, and the refusal says why.
        for text in ["RTMIN", "rtmin+1", "SIGRTMAX-2"] {
            let stderr = util::refused(&["-s", text]);
            assert!(stderr.contains("has no real-time signals"), "{stderr}");
        }
        skipped!("real-time signals sent: none in the portable build (macOS has none)");
        return;
    }
    let rtmin = 34;
    for (text, name, number) in [
        ("34", "RTMIN", rtmin),
        ("RTMIN", "RTMIN", rtmin),
        ("rtmin+1", "RTMIN+1", rtmin + 1),
        ("SIGRTMAX-2", "RTMAX-2", 62),
        ("SIGRTMAX", "RTMAX", 64),
    ] {
        let done = Call::sh("sleep 5")
            .opt(&["--timeout", "0.1", "-s", text])
            .run();
        done.expect_state("timed_out", 124)
            .expect("/limits/signal", json!(name))
            .expect("/exit", json!({"signal": name, "core_dumped": false}));
        done.check(
            done.signals_sent()[0]
                == (name.to_string(), "group".to_string(), "timeout".to_string()),
            &format!("{text}: signal {number} sent by name {name}"),
        );
    }
}

#[test]
fn unusable_record_path_means_the_helper_never_runs() {
    let probe = Call::new(&[]);
    let marker = probe.path("helper-ran");
    let link = probe.path("link.json");
    std::os::unix::fs::symlink(probe.path("target.json"), &link).unwrap();
    let read_only = probe.path("ro");
    std::fs::create_dir(&read_only).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&read_only, std::fs::Permissions::from_mode(0o555)).unwrap();
    let mut paths = vec![
        "/nonexistent-dir/record.json".to_string(),
        // Refused even to root: the directory is on a read-only filesystem.
        "/proc/record.json".to_string(),
        "/sys/record.json".to_string(),
        link.to_str().unwrap().to_string(),
        probe.path("").to_str().unwrap().to_string(),
    ];
    paths.push(read_only.join("record.json").to_str().unwrap().to_string());
    // Root ignores directory permissions (CI runs as root): then mcp-bound
    // runs as nobody through setpriv, so the read-only directory is
    // refused as it would be for any user.
    if nix_is_root() {
        use std::os::unix::fs::PermissionsExt;
        // nobody must reach the directories (but not write the ro one).
        for dir in [probe.path(""), marker.parent().unwrap().to_path_buf()] {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
    }
    for path in paths {
        let read_only_case = path.starts_with(read_only.to_str().unwrap());
        let call = Call::new(&["touch", marker.to_str().unwrap()])
            .without_record()
            .opt(&["--record", &path]);
        let call = if read_only_case && nix_is_root() {
            call.via(util::AS_NOBODY)
        } else {
            call
        };
        let done = call.run();
        done.expect_code(125);
        let stderr = done.stderr_text();
        done.check(
            stderr.starts_with("mcp-bound: --record ") && stderr.trim_end().lines().count() == 1,
            "one line, naming the option",
        );
        done.check(!exists(&marker), "the helper was not started");
    }
    assert!(
        !exists(&probe.path("target.json")),
        "the symlink was not followed"
    );
}

/// A missing directory that holds the record and another output is one
/// cause: one line, naming it, not a second about a "final record" that
/// reads as if something ran.
#[test]
fn a_missing_state_directory_is_one_line() {
    let probe = Call::new(&[]);
    let marker = probe.path("helper-ran");
    let missing = probe.path("state");
    let in_missing = |name: &str| missing.join(name).to_str().unwrap().to_string();
    for other in [
        ["--journal".to_string(), in_missing("audit.jsonl")],
        ["--stderr-log".to_string(), in_missing("stderr.log")],
    ] {
        let done = Call::new(&["touch", marker.to_str().unwrap()])
            .without_record()
            .opt(&["--record", &in_missing("record.json")])
            .opt(&[other[0].as_str(), other[1].as_str()])
            .run();
        done.expect_code(125);
        let stderr = done.stderr_text();
        done.check(stderr.trim_end().lines().count() == 1, "one line");
        done.check(
            stderr.contains(&format!("no directory {}", missing.display())),
            &format!("names the missing directory: {stderr}"),
        );
        done.check(!stderr.contains("final record"), "nothing reads as run");
        done.check(!exists(&marker), "the helper was not started");
    }
}

fn nix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

#[test]
fn help_and_version_exit_zero() {
    let help = Command::new(util::BIN).arg("--help").output().unwrap();
    assert_eq!(help.status.code(), Some(0));
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        text.contains("--timeout") && text.contains("MCP_BOUND_TIMEOUT"),
        "{text}"
    );
    let version = Command::new(util::BIN).arg("--version").output().unwrap();
    assert_eq!(version.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("mcp-bound "));
}

#[test]
fn signal_pending_at_start_cancels_before_dispatch() {
    // A parent that blocked TERM and raised it hands mcp-bound a pending
    // TERM; it is delivered when mcp-bound unblocks it, before dispatch.
    let call = Call::new(&[]);
    let marker = call.path("helper-ran");
    let record = call.path("record.json");
    let script = format!(
        "import os, signal\n\
         signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])\n\
         os.kill(os.getpid(), signal.SIGTERM)\n\
         os.execv({bin:?}, [{bin:?}, '--record', {record:?}, '--', 'touch', {marker:?}])\n",
        bin = util::BIN,
        record = record.to_str().unwrap(),
        marker = marker.to_str().unwrap(),
    );
    let output = util::python(&script);
    assert_eq!(output.status.code(), Some(143), "{output:?}");
    assert!(!exists(&marker), "the helper never ran");
    let record: Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(record["state"], "cancelled_before_dispatch");
    assert_eq!(record["cancel_signal"], "TERM");
    assert_eq!(record["exit"], Value::Null);
    assert_eq!(record["pid"], Value::Null);
    assert_eq!(record["exit_code"], 143);
}

#[test]
fn slow_reader_after_the_helper_closed_stdout_costs_no_spin() {
    // The helper writes more than our buffer and exits at once; the reader
    // waits before reading. mcp-bound must wait in poll, not spin: its CPU
    // time stays far below the wall time of the pause.
    let mut run = Call::sh("head -c 3000000 /dev/zero").start();
    let pid = run.pid();
    thread::sleep(std::time::Duration::from_millis(600));
    let cpu_ticks = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
            fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
        })
        .unwrap();
    let mut stdout = run.take_stdout();
    let mut all = Vec::new();
    stdout.read_to_end(&mut all).unwrap();
    drop(stdout);
    let done = run.finish();
    done.expect_state("completed", 0)
        .expect("/stdout/bytes_forwarded", json!(3_000_000));
    // 600 ms of spinning would be ~60 ticks; a waiting loop uses ~0.
    done.check(
        cpu_ticks < 20,
        &format!("mcp-bound used {cpu_ticks} ticks while waiting"),
    );
}

/// Is `pid` still running (not gone, not a zombie)?
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let rest = &stat[stat.rfind(')')? + 2..];
            Some(!rest.starts_with('Z') && !rest.starts_with('X'))
        })
        .unwrap_or(false)
}

/// What a run of mcp-bound exec'd by a shell left behind.
struct Execed {
    status: std::process::ExitStatus,
    record: Value,
    log: String,
    sibling_alive: bool,
}

/// bash starts a background sibling and a process substitution carrying
/// its stderr to a log, then execs mcp-bound with `options` on `helper`.
fn exec_from_a_shell(options: &str, helper: &str) -> Execed {
    let dir = tempfile::tempdir().unwrap();
    let (record, log, sibling, carrier) = (
        dir.path().join("record.json"),
        dir.path().join("stderr.log"),
        dir.path().join("sibling.pid"),
        dir.path().join("carrier.pid"),
    );
    let script = format!(
        "sleep 300 & echo $! > {sibling}; exec 2> >(exec cat > {log}); echo $! > {carrier}; \
         exec {bin} --record {record} {options} -- sh -c '{helper}'",
        sibling = sibling.display(),
        log = log.display(),
        carrier = carrier.display(),
        bin = util::BIN,
        record = record.display(),
    );
    let tag = util::unique_tag();
    let status = Command::new("bash")
        .args(["-c", &script])
        .env(util::TAG_VAR, &tag)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    let read_pid = |path: &std::path::Path| -> u32 {
        std::fs::read_to_string(path)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let (sibling_pid, carrier_pid) = (read_pid(&sibling), read_pid(&carrier));
    let sibling_alive = running(sibling_pid);
    // The carrier ends by itself once mcp-bound's stderr closes: wait for
    // that (observed state, not a sleep), then read what it carried.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while running(carrier_pid) && std::time::Instant::now() < deadline {
        thread::yield_now();
    }
    let _ = Command::new("kill").arg(sibling_pid.to_string()).status();
    // The sibling was ours to end; nothing else of the run may be left.
    util::assert_nothing_left(&tag);
    let text = std::fs::read_to_string(&record).unwrap();
    let record: Value = serde_json::from_str(&text).unwrap();
    util::check_schema(&record);
    Execed {
        status,
        record,
        log: std::fs::read_to_string(&log).unwrap_or_default(),
        sibling_alive,
    }
}

#[test]
fn children_mcp_bound_had_before_dispatch_are_never_signalled() {
    // A shell that execs mcp-bound hands it its earlier children: a
    // background sibling, and the process substitution that carries
    // mcp-bound's own stderr to a log. Neither belongs to the helper.
    let run = exec_from_a_shell("--wait-delay 0.2", "echo hi >&2; exit 3");
    let context = format!(
        "status {:?}\nrecord {}\nlog {:?}",
        run.status, run.record, run.log
    );
    assert_eq!(run.status.code(), Some(3), "{context}");
    assert_eq!(run.record["state"], "completed", "{context}");
    assert_eq!(run.record["descendants_signalled"], 0, "{context}");
    assert!(
        run.record["events"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["event"] != "signal_sent"),
        "nothing was signalled: {context}"
    );
    assert!(
        run.sibling_alive,
        "the background sibling was left alone: {context}"
    );
    assert!(
        run.log.contains("hi\n") && run.log.contains("mcp-bound: completed"),
        "the exit echo reached the log through the process substitution: {context}"
    );
}

#[test]
fn live_stderr_through_an_inherited_process_substitution_arrives_whole() {
    // The MCP host pattern: `… --mcp … 2> >(cat > f)`. Every line the
    // server wrote reaches the log, with no drop marker.
    let run = exec_from_a_shell(
        "--mcp --live-rate 1MiB --live-burst 1MiB",
        "i=0; while [ $i -lt 2000 ]; do echo line-$i >&2; i=$((i+1)); done",
    );
    let context = format!("status {:?}\nrecord {}", run.status, run.record);
    assert_eq!(run.status.code(), Some(0), "{context}");
    assert_eq!(run.record["descendants_signalled"], 0, "{context}");
    assert_eq!(run.record["stderr"]["live_bytes_dropped"], 0, "{context}");
    let lines: Vec<&str> = run.log.lines().collect();
    assert_eq!(lines.first(), Some(&"line-0"), "{context}");
    assert!(
        lines.contains(&"line-1999"),
        "the last line arrived: {context}"
    );
    assert!(!run.log.contains("dropped"), "no drop: {context}");
    assert!(run.sibling_alive, "{context}");
}

#[test]
fn a_pipe_held_outside_the_tree_ends_as_closed_while_held() {
    // The helper hands its stderr to a process outside its tree (over a
    // unix socket, SCM_RIGHTS) and exits. Nothing mcp-bound may signal
    // holds the pipe, so after signal, grace, KILL and --wait-delay it
    // stops waiting for EOF: stream_end closed_while_held, and the
    // helper's own exit is kept.
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("record.json");
    let script = format!(
        r#"
import os, socket, subprocess, sys
path = {socket:?}
server = socket.socket(socket.AF_UNIX)
server.bind(path)
server.listen(1)
helper = "import socket; s = socket.socket(socket.AF_UNIX); s.connect(%r); socket.send_fds(s, [b'x'], [2]); s.recv(1)" % path
run = subprocess.Popen([{bin:?}, "--record", {record:?}, "--wait-delay", "0.2", "--grace", "0.2",
                        "--", sys.executable, "-c", helper],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
conn, _ = server.accept()
_, fds, _, _ = socket.recv_fds(conn, 1, 1)
conn.send(b"k")
code = run.wait()
os.close(fds[0])
print(code)
"#,
        socket = dir.path().join("s").to_str().unwrap(),
        bin = util::BIN,
        record = record.to_str().unwrap(),
    );
    let tag = util::unique_tag();
    let output = Command::new("python3")
        .args(["-c", &script])
        .env(util::TAG_VAR, &tag)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    util::assert_nothing_left(&tag);
    let printed = String::from_utf8_lossy(&output.stdout);
    let text = std::fs::read_to_string(&record).unwrap_or_default();
    let context = format!(
        "python: {printed} {}\nrecord: {text}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(printed.trim(), "0", "{context}");
    let value: Value = serde_json::from_str(&text).expect(&context);
    util::check_schema(&value);
    assert_eq!(value["state"], "completed", "{context}");
    assert_eq!(value["exit"], json!({"code": 0}), "{context}");
    assert_eq!(value["stream_end"], "closed_while_held", "{context}");
    let kinds: Vec<&str> = value["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["event"].as_str())
        .collect();
    assert!(kinds.contains(&"streams_abandoned"), "{context}");
    let reasons: Vec<&str> = value["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["reason"].as_str())
        .collect();
    assert!(reasons.contains(&"pipes_held"), "{context}");
}

/// The harness starts each run with the terminating signals at their
/// defaults, whatever the caller of the test suite ignores (`nohup cargo
/// test` ignores SIGHUP, and mcp-bound rightly passes an ignored signal on
/// to its helper, as a direct start would).
#[test]
fn the_suite_does_not_depend_on_the_callers_signal_dispositions() {
    use nix::sys::signal::{SigHandler, Signal, signal};
    // SAFETY: SIG_IGN and back; no handler of ours runs.
    let before = unsafe { signal(Signal::SIGHUP, SigHandler::SigIgn) }.unwrap();
    let done = Call::new(&["sleep", "30"])
        .opt(&["--signal", "HUP", "--timeout", "200ms"])
        .run();
    // SAFETY: as above.
    unsafe { signal(Signal::SIGHUP, before) }.unwrap();
    done.expect_state("timed_out", 124)
        .expect("/exit", json!({"signal": "HUP", "core_dumped": false}));
}

#[test]
fn a_mistyped_option_keeps_clap_s_suggestion_on_its_one_line() {
    let done = Call::new(&["true"])
        .without_record()
        .opt(&["--timout", "1s"])
        .run();
    done.expect_code(125);
    let stderr = done.stderr_text();
    done.check(stderr.trim_end().lines().count() == 1, "one line");
    done.check(
        stderr.contains("'--timout'") && stderr.contains("'--timeout'"),
        &format!("names the typo and the option meant: {stderr}"),
    );
}

/// `mcp-bound verfy j.jsonl` runs a helper named verfy: when none is
/// found, the one line says which subcommand was probably meant, and
/// that a helper of that name goes after `--`.
#[test]
fn a_helper_not_found_whose_name_is_near_a_subcommand_names_it() {
    let done = Call::new(&["verfy", "j.jsonl"]).run();
    done.expect_state("failed_before_dispatch", 127);
    let stderr = done.stderr_text();
    done.check(stderr.trim_end().lines().count() == 1, "one line");
    done.check(
        stderr.contains("did you mean the subcommand `verify`?")
            && stderr.contains("a helper of that name goes after `--`"),
        &format!("names the subcommand: {stderr}"),
    );
    let far = Call::new(&["no-such-helper-anywhere"]).run();
    far.expect_state("failed_before_dispatch", 127);
    far.check(
        !far.stderr_text().contains("did you mean"),
        &format!("no guess for a name near nothing: {}", far.stderr_text()),
    );
}

#[test]
fn a_command_named_help_that_is_not_found_points_to_help() {
    let done = Call::new(&["help"]).run();
    done.expect_state("failed_before_dispatch", 127);
    done.check(
        done.stderr_text().contains("--help"),
        &format!("says where mcp-bound's own help is: {}", done.stderr_text()),
    );
}
