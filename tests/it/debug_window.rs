//! The debug window: SIGUSR1 lifts the live budget for a while, the record
//! keeps that it was open, and the helper never sees the signal.

use crate::util;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use util::Call;

/// Wait (a handshake on the stderr log, never a sleep) until `log` holds
/// `needle` at or after byte `from`; its offset.
pub(crate) fn wait_in_log(log: &Path, needle: &str, from: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = String::from_utf8_lossy(&std::fs::read(log).unwrap_or_default()).into_owned();
        if let Some(at) = text.get(from..).and_then(|rest| rest.find(needle)) {
            return from + at;
        }
        assert!(
            Instant::now() < deadline,
            "{needle:?} never reached {log:?}"
        );
        std::thread::yield_now();
    }
}

fn log_len(log: &Path) -> usize {
    std::fs::metadata(log).map_or(0, |meta| meta.len() as usize)
}

/// A flood under a 1 KiB/s live budget, with --live and with --mcp (the
/// session layer and the guard in the way): drops before the window,
/// every line while it is open, the budget again after the second SIGUSR1.
/// The window lifts the rate, not the queue's bound: a reader of our
/// stderr slower than the flood (this test's, on a loaded machine) still
/// loses lines, each loss said by a marker where it happened.
#[test]
fn sigusr1_opens_a_window_with_every_line_and_a_second_closes_it() {
    for mode in ["--live", "--mcp"] {
        window_in(mode);
    }
}

fn window_in(mode: &str) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stderr.log");
    let journal = dir.path().join("journal.jsonl");
    let stop = dir.path().join("stop");
    let script = format!(
        "trap 'echo HELPER-SAW-USR1 >&2' USR1; echo '{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/ready\"}}'; i=0; \
         while [ ! -e {} ]; do i=$((i+1)); echo \"line $i of the flood, padded to about eighty bytes\" >&2; done; \
         echo 'last line' >&2",
        stop.display()
    );
    let mut run = Call::sh(&script)
        .stdin(std::process::Stdio::piped())
        .opt(&[
            mode,
            "--live-rate",
            "1K",
            "--stderr-log",
            log.to_str().unwrap(),
            "--stderr-log-size",
            "1G",
            "--echo",
            "always",
            "--journal",
            journal.to_str().unwrap(),
        ])
        .start();
    run.wait_for_line("notifications/ready");
    // Past the first burst: the budget drops now.
    wait_in_log(&log, "line 5000 ", 0);
    run.signal("USR1");
    let opened = wait_in_log(&log, "debug window open", 0);
    while log_len(&log) < opened + 400_000 {
        std::thread::yield_now();
    }
    run.signal("USR1");
    wait_in_log(&log, "debug window closed", opened);
    std::fs::write(&stop, b"").unwrap();
    let done = run.finish();
    // Under the session layer the server's own exit and the harness's
    // hang-up race: either is a normal end (completed or shut_down).
    let state = done
        .field("/state")
        .as_str()
        .unwrap_or_default()
        .to_string();
    let normal = match mode {
        "--mcp" => ["completed", "shut_down"].contains(&state.as_str()),
        _ => state == "completed",
    };
    done.check(
        normal && done.code() == 0,
        &format!("{mode}: state {state}"),
    );
    done.expect("/stderr/debug_windows/0/by", json!("signal"))
        .expect("/stderr/debug_windows/0/closed_by", json!("signal"))
        .expect("/stderr/debug_windows_not_listed", json!(0));
    let windows = done.field("/stderr/debug_windows").as_array().unwrap();
    done.check(windows.len() == 1, "one window");
    let through = windows[0]["bytes_forwarded"].as_u64().unwrap();
    done.check(
        through >= 300_000,
        &format!("{through} bytes through the window"),
    );
    let stderr = done.stderr_text();
    done.check(
        !stderr.contains("HELPER-SAW-USR1"),
        "the helper never saw SIGUSR1",
    );
    let (before, rest) = stderr
        .split_once("[mcp-bound: debug window open")
        .expect("the window's opening is said");
    let (inside, after) = rest
        .split_once("[mcp-bound: debug window closed (SIGUSR1)")
        .expect("the window's closing is said");
    done.check(
        before.contains("[mcp-bound: dropped "),
        "the budget held before",
    );
    // Between two markers, every line; a loss only where a marker says
    // so, and the record counts it. Far more lines than the budget's
    // 1 KiB/s lets through in the window's milliseconds.
    let runs: Vec<Vec<u64>> = inside
        .split("[mcp-bound: dropped ")
        .map(|run| {
            run.lines()
                .filter_map(|line| line.strip_prefix("line "))
                .filter_map(|rest| rest.split(' ').next()?.parse().ok())
                .collect()
        })
        .collect();
    let shown: usize = runs.iter().map(Vec::len).sum();
    let unbroken = runs
        .iter()
        .all(|run| run.windows(2).all(|pair| pair[1] == pair[0] + 1));
    let said = runs.len() == 1 || done.field("/stderr/live_bytes_dropped").as_u64() > Some(0);
    done.check(
        shown > 1000 && unbroken && said,
        &format!(
            "every line inside the window but where a marker says ({shown} lines, {} markers)",
            runs.len() - 1
        ),
    );
    done.check(
        after.contains("debug window open ") && after.contains(" s;"),
        "the summary line says the window was open",
    );
    let journal_text = std::fs::read_to_string(&journal).unwrap();
    done.check(
        journal_text.contains("\"debug_windows\":{\"count\":1,\"open_ms\":"),
        "the journal's terminal entry counts the window",
    );
    let seen = done.field("/stderr/bytes_seen").as_u64().unwrap();
    let counted = [
        "live_bytes_forwarded",
        "live_bytes_dropped",
        "live_bytes_unsent",
    ]
    .iter()
    .map(|field| done.field(&format!("/stderr/{field}")).as_u64().unwrap())
    .sum::<u64>();
    done.check(seen == counted, "forwarded + dropped + unsent = seen");
}

/// --debug-window 0 refuses the signal, says so once, and the call goes
/// on; SIGUSR1 never ends a call (its default action would).
#[test]
fn with_debug_window_0_sigusr1_is_refused_and_said_once() {
    let mut run =
        Call::sh("trap 'echo HELPER-SAW-USR1 >&2' USR1; echo READY; read line; echo done")
            .opt(&["--live", "--debug-window", "0"])
            .stdin(std::process::Stdio::piped())
            .start();
    run.wait_for_line("READY");
    run.signal("USR1");
    run.signal("USR1");
    run.close_stdin();
    let done = run.finish();
    done.expect_state("completed", 0)
        .expect("/stderr/debug_windows", json!([]));
    let stderr = done.stderr_text();
    done.check(
        stderr.matches("SIGUSR1 ignored: --debug-window 0").count() == 1
            && !stderr.contains("HELPER-SAW-USR1"),
        &stderr,
    );
}
