//! MCP stdio server mode, driven through mcp-bound with our own JSON-RPC
//! fixture server (tests/fixtures/jsonrpc_server.py): byte-exact round
//! trips, the stdout guard, live stderr under a budget, shutdown on stdin
//! hang-up, and signals from the host.

use crate::util;

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use util::{Call, SERVER, parse_message as response, rpc_request as request, server};

fn requests() -> Vec<u8> {
    let mut input = Vec::new();
    for id in 0..200 {
        let params = json!({
            "n": id,
            "text": format!("naïve ünïcödé 😀 \"quoted\" \\ back\tslash {id}"),
            "nested": {"list": [1, 2.5, null, true], "empty": {}},
        });
        input.extend(request(id, "echo", params));
    }
    input
}

#[test]
fn round_trips_are_byte_exact() {
    let input = requests();
    // The same fixture run directly gives the reference bytes.
    let mut direct = Command::new("python3")
        .arg(SERVER)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    direct.stdin.take().unwrap().write_all(&input).unwrap();
    let expected = direct.wait_with_output().unwrap().stdout;
    assert_eq!(expected.iter().filter(|b| **b == b'\n').count(), 200);

    let mut run = server(&[]).opt(&["--mcp"]).start();
    run.send(&input);
    run.close_stdin();
    let done = run.finish();
    // The host closed stdin with no request in flight: a normal end.
    done.expect_state("shut_down", 0)
        .expect("/stdout/guard", json!("jsonrpc"))
        .expect("/stdout/lines_forwarded", json!(200))
        .expect("/stdout/lines_diverted", json!(0))
        .expect("/stdout/bytes_forwarded", json!(expected.len()));
    done.check(done.stdout == expected, "byte-identical to the direct run");
    done.check(done.events("stdin_closed").len() == 1, "stdin hang-up seen");
    done.check(
        done.field("/last_stdout_at").is_string(),
        "last stdout time",
    );
}

#[test]
fn a_stray_print_is_diverted_and_the_next_request_still_answers() {
    let mut run = server(&[]).opt(&["--mcp"]).start();
    run.send(&request(1, "stray", json!({"a": 1})));
    let first = response(&run.read_line());
    assert_eq!(first["id"], 1);
    run.send(&request(2, "echo", json!({"b": 2})));
    let second = response(&run.read_line());
    assert_eq!(second["id"], 2);
    assert_eq!(second["result"], json!({"b": 2}));
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/stdout/lines_diverted", json!(1))
        .expect("/stdout/bytes_diverted", json!(11))
        .expect("/stdout/first_diverted", json!("Loading...\n"))
        .expect("/stdout/lines_forwarded", json!(2));
    let excerpt = done.field("/stderr/excerpt").as_str().unwrap();
    done.check(
        excerpt.contains("[mcp-bound: stdout line diverted, not a JSON object] Loading..."),
        "the stray line is in the stderr capture, marked",
    );
    done.check(
        !String::from_utf8_lossy(&done.stdout).contains("Loading"),
        "it never reached the host",
    );
}

#[test]
fn a_fifty_megabyte_stderr_burst_does_not_stall_the_next_response() {
    let mut run = server(&[])
        .opt(&["--mcp", "--live-rate", "64KiB", "--live-burst", "64KiB"])
        .start();
    run.send(&request(1, "flood", json!({"bytes": 50_000_000})));
    assert_eq!(
        response(&run.read_line())["result"],
        json!({"flooded": 50_000_000})
    );
    run.send(&request(2, "echo", json!({"after": "flood"})));
    assert_eq!(
        response(&run.read_line())["result"],
        json!({"after": "flood"})
    );
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0);
    let seen = done.field("/stderr/bytes_seen").as_u64().unwrap();
    done.check(seen >= 50_000_000, "the whole burst was drained");
    done.check(
        done.field("/stderr/bytes_retained").as_u64() <= Some(16384),
        "the capture stayed bounded",
    );
    let dropped = done.field("/stderr/live_bytes_dropped").as_u64().unwrap();
    let forwarded = done.field("/stderr/live_bytes_forwarded").as_u64().unwrap();
    let unsent = done.field("/stderr/live_bytes_unsent").as_u64().unwrap();
    done.check(dropped > 49_000_000, "live output was held to its budget");
    done.check(forwarded < 1_000_000, "only the budget reached our stderr");
    done.check(
        seen == forwarded + dropped + unsent,
        "every byte seen is forwarded, dropped or unsent",
    );
    let live = done.stderr_text();
    done.check(
        live.contains("[mcp-bound: dropped ") && live.contains(" bytes of stderr]"),
        "the drop was announced",
    );
    done.check(
        live.starts_with("READY\n"),
        "live stderr came through as it arrived",
    );
}

/// Under a line flood the drop markers are coalesced, at most one a
/// second: the live budget shows the helper's lines, not our markers.
#[test]
fn live_drop_markers_come_at_most_once_a_second() {
    let done = util::Call::sh(
        "i=0; while :; do i=$((i+1)); echo \"retry $i failed, padding the line to a hundred bytes or so, padding padding\" >&2; done",
    )
    .opt(&["--live", "--timeout", "2s"])
    .run();
    done.expect_state("timed_out", 124);
    let live = done.stderr_text();
    let markers = live.matches("[mcp-bound: dropped ").count();
    let lines = live
        .lines()
        .filter(|line| line.starts_with("retry "))
        .count();
    let seconds = done.field("/duration_ms").as_u64().unwrap().div_ceil(1000);
    done.check(
        markers >= 1 && markers as u64 <= seconds + 1,
        &format!("{markers} markers in {seconds} s"),
    );
    done.check(
        lines > 20 * markers,
        &format!("{lines} lines, {markers} markers"),
    );
}

#[test]
fn a_server_that_ignores_stdin_eof_is_terminated_after_the_grace() {
    let mut run = server(&["--ignore-eof"])
        .opt(&["--mcp", "--stdin-close-grace", "0.3s"])
        .start();
    run.send(&request(1, "echo", json!({})));
    response(&run.read_line());
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 143)
        .expect("/cancel_reason", json!("stdin_closed"))
        .expect("/exit", json!({"signal": "TERM", "core_dumped": false}));
    let closed_at = done.events("stdin_closed")[0]["t_ms"].as_u64().unwrap();
    let signals = done.events("signal_sent");
    done.check(
        signals[0]["reason"] == "stdin_closed" && signals[0]["signal"] == "TERM",
        "TERM for stdin_closed",
    );
    done.check(
        signals[0]["t_ms"].as_u64().unwrap() >= closed_at + 300,
        "not before the stdin grace",
    );
    // The host's own end reads as one: no state word that sounds like a
    // failure, and 143 said to be the server's status after our stop.
    let summary = done.stderr_text();
    let summary = summary.lines().last().unwrap_or_default();
    done.check(
        summary.starts_with("mcp-bound: the host ended the session (stdin closed) after ")
            && summary.contains("the server was stopped (killed by TERM; sent TERM to group)")
            && summary.ends_with("exit 143, the server's status after our TERM"),
        &format!("a calm summary: {summary}"),
    );
}

#[test]
fn a_server_that_exits_on_stdin_eof_is_shut_down_cleanly() {
    let mut run = server(&[]).opt(&["--mcp"]).start();
    run.close_stdin();
    let done = run.finish();
    done.expect_state("shut_down", 0)
        .expect("/cancel_reason", Value::Null)
        .expect("/exit", json!({"code": 0}));
    done.check(done.signals_sent().is_empty(), "no signal was needed");
}

#[test]
fn host_sigterm_produces_a_record_before_exit() {
    let mut run = server(&["--ignore-eof"]).opt(&["--mcp"]).start();
    run.send(&request(1, "echo", json!({})));
    response(&run.read_line());
    run.signal("TERM");
    let done = run.finish();
    done.expect_state("shut_down", 143)
        .expect("/cancel_signal", json!("TERM"))
        .expect("/exit", json!({"signal": "TERM", "core_dumped": false}));
}

#[test]
fn claude_code_shutdown_sigint_with_stdin_open_is_shut_down_130() {
    // As the README documents: Claude Code sends SIGINT and never closes
    // the server's stdin.
    let mut run = server(&["--ignore-eof"]).opt(&["--mcp"]).start();
    run.send(&request(1, "echo", json!({})));
    response(&run.read_line());
    run.signal("INT");
    let done = run.finish();
    // No request was in flight: the host's shutdown, not a cancelled call.
    done.expect_state("shut_down", 130)
        .expect("/cancel_reason", json!("signal"))
        .expect("/cancel_signal", json!("INT"));
    done.check(
        done.signals_sent()[0] == ("INT".into(), "group".into(), "signal".into()),
        "the INT was forwarded to the server's group",
    );
}

#[test]
fn host_sigterm_to_a_server_that_ignores_it_still_ends_within_the_mcp_grace() {
    let mut run = server(&["--ignore-eof", "--ignore-term"])
        .opt(&["--mcp"])
        .start();
    run.send(&request(1, "echo", json!({})));
    response(&run.read_line());
    run.signal("TERM");
    let done = run.finish();
    done.expect_state("shut_down", 143)
        .expect("/exit", json!({"signal": "KILL", "core_dumped": false}))
        .expect("/limits/grace_ms", json!(1000));
}

#[test]
fn a_sigkilled_mcp_bound_leaves_no_server_behind() {
    let mut run = server(&["--ignore-eof", "--ignore-term"])
        .opt(&["--mcp"])
        .start();
    run.send(&request(1, "echo", json!({})));
    response(&run.read_line());
    run.kill_and_wait_for_watchdog();
    // The harness fails the test if the server (tagged) still runs.
    let done = run.finish();
    done.check(done.status.code().is_none(), "mcp-bound was SIGKILLed");
    // The watchdog wrote what happened.
    done.expect("/state", json!("supervisor_killed"))
        .expect("/exit", Value::Null);
}

#[test]
fn each_part_has_its_own_flag() {
    // The guard alone, without --mcp: no live output, no stdin watch.
    let done = Call::sh("echo banner; echo '{\"id\":1}'; printf partial")
        .opt(&["--stdout-guard", "jsonrpc"])
        .run();
    done.expect_state("completed", 0)
        .expect("/stdout/lines_forwarded", json!(1))
        .expect("/stdout/lines_diverted", json!(2))
        .expect("/limits/stdin_close_grace_ms", Value::Null)
        .expect("/limits/live_rate", Value::Null);
    done.check(
        done.stdout == b"{\"id\":1}\n",
        "only the message reached stdout",
    );
    done.check(
        done.field("/stderr/excerpt")
            .as_str()
            .unwrap()
            .contains("[mcp-bound: unterminated stdout line diverted at EOF] partial"),
        "the partial line is marked",
    );
    // --mcp with the guard turned off passes everything.
    let done = Call::sh("echo banner")
        .opt(&["--mcp", "--stdout-guard", "off", "--live=false"])
        .run();
    done.expect_state("completed", 0)
        .expect("/stdout/guard", json!("off"))
        .expect("/limits/live_rate", Value::Null);
    done.check(done.stdout == b"banner\n", "unguarded");
    // Live alone.
    let done = Call::sh("echo live-line >&2").opt(&["--live"]).run();
    done.expect_state("completed", 0)
        .expect("/stderr/live_bytes_forwarded", json!(10));
    done.check(done.stderr_text() == "live-line\n", "forwarded as it came");
}

#[test]
fn a_line_over_the_message_limit_is_diverted_not_held() {
    let done = Call::sh("head -c 3000000 /dev/zero | tr '\\0' z; echo; echo '{\"ok\":true}'")
        .opt(&["--stdout-guard", "jsonrpc", "--max-message-bytes", "64K"])
        .run();
    done.expect_state("completed", 0)
        .expect("/stdout/lines_diverted", json!(1))
        .expect("/stdout/bytes_diverted", json!(3_000_001))
        .expect("/stdout/lines_forwarded", json!(1));
    done.check(
        done.stdout == b"{\"ok\":true}\n",
        "the next message still passes",
    );
}

#[test]
fn a_diverted_line_lands_after_the_flood_before_it() {
    if let Some(why) = util::no_splice_here() {
        skipped!("(the tail held in the kernel) {why}");
        return;
    }
    // The flood's tail stays in the kernel until something else enters
    // the capture; the diverted line must still come after it. (The flood
    // is in the pipe before the line is written, and a turn drains stderr
    // first. Bytes written to stderr after the line could overtake it:
    // two pipes carry no order between them.)
    let done = Call::sh("yes flood | head -c 7999998 >&2; echo 'Loading...'; echo '{\"ok\":true}'")
        .opt(&[
            "--stdout-guard",
            "jsonrpc",
            "--tail-bytes",
            "200",
            "--flood-path",
            "splice",
        ])
        .run();
    let prefix = "[mcp-bound: stdout line diverted, not a JSON object] ";
    done.expect_state("completed", 0)
        .expect("/stdout/lines_diverted", json!(1))
        .expect(
            "/stderr/bytes_seen",
            json!(7_999_998 + prefix.len() + "Loading...\n".len()),
        );
    let excerpt = done.field("/stderr/excerpt").as_str().unwrap();
    done.check(
        excerpt.ends_with(&format!("flood\nflood\n{prefix}Loading...\n")),
        "the flood, then the diverted line",
    );
    done.check(done.stdout == b"{\"ok\":true}\n", "the message passes");
}

#[test]
fn a_socket_stdin_shut_down_for_writing_counts_as_a_hang_up() {
    // Hosts that talk over a socketpair end with shutdown(SHUT_WR): the
    // socket never reports POLLHUP, only end of file (POLLRDHUP).
    let (host, ours) = std::os::unix::net::UnixStream::pair().unwrap();
    let run = Call::new(&["sleep", "30"])
        .opt(&["--mcp", "--stdin-close-grace", "0.3"])
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(ours)))
        .start();
    host.shutdown(std::net::Shutdown::Write).unwrap();
    let done = run.finish();
    drop(host);
    done.expect_state("shut_down", 143)
        .expect("/cancel_reason", json!("stdin_closed"))
        .expect("/exit", json!({"signal": "TERM", "core_dumped": false}));
    done.check(
        done.events("stdin_closed").len() == 1,
        "the hang-up is an event",
    );
}

#[test]
fn live_counts_hold_when_our_stderr_reader_goes_away() {
    // Our stderr's reader reads one line and leaves; the server then
    // writes 100 kB more. What was delivered stays counted as forwarded,
    // the rest as dropped: nothing is in neither counter.
    let dir = tempfile::tempdir().unwrap();
    let (record, fifo) = (dir.path().join("record.json"), dir.path().join("go"));
    util::mkfifo(&fifo);
    let script = format!(
        "echo first >&2; read x < {}; head -c 100000 /dev/zero | tr '\\0' z >&2; echo >&2; exit 0",
        fifo.display()
    );
    let tag = util::unique_tag();
    let mut child = Command::new(util::BIN)
        .env(util::TAG_VAR, &tag)
        .args(["--live", "--record"])
        .arg(&record)
        .args(["--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut first).unwrap();
    assert_eq!(first, "first\n");
    drop(stderr);
    std::fs::write(&fifo, "go\n").unwrap();
    let status = child.wait().unwrap();
    util::assert_nothing_left(&tag);
    let text = std::fs::read_to_string(&record).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    util::check_schema(&value);
    assert_eq!(status.code(), Some(0), "{text}");
    assert_eq!(value["state"], "completed", "{text}");
    let count = |name: &str| value["stderr"][name].as_u64().unwrap();
    assert_eq!(count("bytes_seen"), 6 + 100_001, "{text}");
    assert_eq!(
        count("live_bytes_forwarded"),
        6,
        "the line that was read: {text}"
    );
    assert_eq!(count("live_bytes_dropped"), 100_001, "{text}");
    assert_eq!(count("live_bytes_unsent"), 0, "{text}");
}

#[test]
fn a_failing_server_s_stderr_reaches_the_host_once() {
    // Under --mcp, stderr is forwarded live; the exit echo must not repeat
    // it, only say what happened.
    // The host keeps our stdin open: the server ends on its own.
    let (host_keeps, stdin) = std::io::pipe().unwrap();
    let done = Call::sh("echo boom-diagnostic >&2; exit 1")
        .opt(&["--mcp"])
        .stdin(Stdio::from(host_keeps))
        .run();
    drop(stdin);
    done.expect_state("completed", 1)
        .expect("/stderr/live_bytes_forwarded", json!(16));
    let stderr = done.stderr_text();
    done.check(
        stderr.matches("boom-diagnostic").count() == 1,
        "each stderr line reaches the host's log once",
    );
    done.check(
        stderr.contains("mcp-bound: completed") && stderr.contains("shown live"),
        "the summary line says the stderr was shown live",
    );
    // Without --live the echo still shows the excerpt.
    let done = Call::sh("echo boom-diagnostic >&2; exit 1")
        .opt(&["--mcp", "--live=false"])
        .run();
    done.check(
        done.stderr_text().matches("boom-diagnostic").count() == 1,
        "the excerpt is echoed when nothing was shown live",
    );
}

/// One request answered, then the client keeps our stdin open: only the
/// deadline ends the call.
fn one_request_then_the_deadline(server_flags: &[&str], options: &[&str]) -> util::Done {
    let mut run = server(server_flags).opt(options).start();
    run.send(&request(1, "echo", json!({})));
    response(&run.read_line());
    let stdin = run.take_stdin();
    let done = run.finish();
    drop(stdin);
    done
}

#[test]
fn close_as_the_polite_stop_closes_the_server_s_stdin_and_sends_no_signal() {
    // The server ignores TERM but exits on stdin EOF: with --signal CLOSE
    // the deadline closes its stdin, and it exits on its own.
    let done = one_request_then_the_deadline(
        &["--ignore-term"],
        &["--mcp", "--signal", "close", "--timeout", "0.5s"],
    );
    done.expect_state("timed_out", 124)
        .expect("/exit", json!({"code": 0}))
        .expect("/limits/signal", json!("CLOSE"));
    done.check(
        done.signals_sent() == [("CLOSE".into(), "stdin".into(), "timeout".into())],
        "CLOSE went to the server's stdin, and nothing else was sent",
    );
}

#[test]
fn a_server_that_ignores_close_is_killed_after_the_grace() {
    let done = one_request_then_the_deadline(
        &["--ignore-eof", "--ignore-term"],
        &[
            "--mcp",
            "-s",
            "CLOSE",
            "--timeout",
            "0.3s",
            "--grace",
            "0.3s",
        ],
    );
    done.expect_state("timed_out", 124)
        .expect("/exit", json!({"signal": "KILL", "core_dumped": false}));
    let sent = done.signals_sent();
    done.check(
        sent.first() == Some(&("CLOSE".into(), "stdin".into(), "timeout".into()))
            && sent.iter().skip(1).all(|(signal, _, _)| signal == "KILL")
            && sent.len() > 1,
        "CLOSE, then KILL after the grace",
    );
    let events = done.events("signal_sent");
    let at = |i: usize| events[i]["t_ms"].as_u64().unwrap();
    done.check(at(1) >= at(0) + 300, "KILL not before the grace");
}

#[test]
fn close_needs_the_server_s_stdin_to_be_ours() {
    // Without the session layer the helper shares the host's stdin:
    // mcp-bound cannot close it, so CLOSE is refused, not turned into TERM.
    let stderr = util::refused(&["--signal", "CLOSE"]);
    assert!(stderr.contains("--signal CLOSE"), "{stderr}");
    assert!(stderr.contains("--mcp"), "{stderr}");
    let from_environment = util::Call::sh("true")
        .env("MCP_BOUND_SIGNAL", "CLOSE")
        .without_record()
        .run();
    from_environment.expect_code(125);
    from_environment.check(
        from_environment.stderr_text().contains("MCP_BOUND_SIGNAL"),
        "the variable is named",
    );
}
