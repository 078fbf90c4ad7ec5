//! Nothing outlives mcp-bound, even when it is SIGKILLed: the tree is
//! contained (a cgroup, or the process group and the mark its processes
//! inherit), and a watchdog ends it and writes what happened.

use crate::util;

use serde_json::{Value, json};
use util::Call;

/// A tree that tries every way out: a background child, one in a session
/// of its own, a nohup'd one, a double fork, and a loop that keeps forking.
const ESCAPES: &str = "sleep 31 & setsid sleep 33 & nohup sleep 34 >/dev/null 2>&1 & \
     (sh -c 'sleep 35 &' &) ; (while true; do sleep 36 & wait; done) & exec sleep 32";

/// The two ways out of a process group, as a helper that leaves them:
/// a session of its own and a double fork (both re-parented away from
/// mcp-bound when there is no subreaper), then the tree's mark on stdout.
const LEFT_THE_GROUP: &str = "setsid sleep 300 & (sh -c 'sleep 301 &' &); \
     echo \"MARK $MCP_BOUND_TREE\"; exec sleep 302";

/// A process outside the tree that carries the tree's mark only where it
/// does not count: in another variable, in a value, in its arguments, and
/// in the mark's own variable with a longer value. Started once it says
/// READY.
fn stranger(mark: &str) -> std::process::Child {
    use std::io::BufRead;
    let entry = format!("MCP_BOUND_TREE={mark}");
    let mut child = std::process::Command::new("python3")
        .args([
            "-c",
            "import time; print('READY', flush=True); time.sleep(600)",
            &entry,
        ])
        .env("MCP_BOUND_TREE", format!("{mark}-not"))
        .env("XMCP_BOUND_TREE", mark)
        .env("LOOKALIKE", &entry)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start python3");
    let mut ready = String::new();
    std::io::BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert_eq!(ready, "READY\n");
    child
}

/// How a test ends the tree that left the group.
enum End {
    Deadline,
    SigkillOfMcpBound,
}

/// The escapes are ended, and the stranger is not.
fn escapes_end_and_the_stranger_lives(end: End) {
    let call = Call::sh(LEFT_THE_GROUP).opt(&["--contain", "group", "--journal"]);
    let journal = call.path("journal.jsonl");
    let call = call.opt(&[journal.to_str().unwrap()]);
    let call = match end {
        End::Deadline => call.opt(&["--timeout", "5s"]),
        End::SigkillOfMcpBound => call,
    };
    let mut run = call.start();
    let line = String::from_utf8(run.read_line()).unwrap();
    let mark = line
        .trim()
        .strip_prefix("MARK ")
        .expect("the mark")
        .to_string();
    assert!(!mark.is_empty(), "{line:?}");
    run.wait_for_tree(3);
    let mut stranger = stranger(&mark);
    if let End::SigkillOfMcpBound = end {
        run.kill_and_wait_for_watchdog();
    }
    // The harness fails the test if anything of the tree still runs.
    let done = run.finish();
    let alive = stranger.try_wait().unwrap().is_none();
    let _ = stranger.kill();
    let _ = stranger.wait();
    done.check(alive, "the stranger was not touched");
    done.expect("/contain/method", json!(util::group_method()));
    match end {
        End::Deadline => {
            done.expect_state("timed_out", 124);
            let signalled = done.field("/descendants_signalled").as_u64().unwrap();
            done.check(signalled >= 2, "both escapes were signalled");
            let unreadable = done.field("/contain/unreadable");
            done.check(
                if util::PORTABLE {
                    unreadable.is_u64()
                } else {
                    unreadable.is_null()
                },
                "what the scan for the mark could not read is counted, and only there",
            );
        }
        End::SigkillOfMcpBound => {
            done.expect("/state", json!("supervisor_killed"));
        }
    }
}

#[test]
fn escapes_from_the_group_end_at_the_deadline_and_a_stranger_lives() {
    escapes_end_and_the_stranger_lives(End::Deadline);
}

#[test]
fn escapes_from_the_group_end_after_a_sigkill_and_a_stranger_lives() {
    escapes_end_and_the_stranger_lives(End::SigkillOfMcpBound);
}

fn killed_mid_call(mode: &str) {
    let call = Call::sh(ESCAPES).opt(&["--contain", mode, "--journal"]);
    let journal = call.path("journal.jsonl");
    let run = call
        .opt(&[journal.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .start();
    run.wait_for_tree(6);
    run.kill_and_wait_for_watchdog();
    // The harness fails the test if anything tagged still runs.
    let done = run.finish();
    done.check(done.status.code().is_none(), "mcp-bound was SIGKILLed");
    done.expect("/state", json!("supervisor_killed"))
        .expect("/exit", Value::Null)
        .expect("/contain/method", json!(util::method_of(mode)));
    let text = std::fs::read_to_string(&journal).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    done.check(
        last["kind"] == "terminal" && last["state"] == "supervisor_killed",
        "the journal has the killed call's terminal entry",
    );
    let (ok, report) = util::verify_report(&journal);
    done.check(
        ok && report["unfinished"] == json!([]),
        &format!("verify is clean: {report}"),
    );
}

#[test]
fn a_sigkilled_mcp_bound_leaves_nothing_in_a_cgroup() {
    if let Some(why) = util::no_cgroup_here() {
        skipped!("{why}");
        return;
    }
    killed_mid_call("cgroup");
}

#[test]
fn a_sigkilled_mcp_bound_leaves_nothing_in_a_group() {
    killed_mid_call("group");
}

/// Without a journal or a record file the watchdog has nothing to write:
/// it is the waiter (it shares mcp-bound's memory and execs the clean-up
/// once mcp-bound is gone). Nothing may survive that either.
fn killed_without_last_words(mode: &str) {
    let run = Call::sh(ESCAPES)
        .opt(&["--contain", mode])
        .without_record()
        .stdin(std::process::Stdio::piped())
        .start();
    run.wait_for_tree(6);
    // The helper's cgroup, as /proc shows it (there is no record).
    let pid = run.pid();
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap();
    let cgroup = children
        .split_whitespace()
        .filter_map(|child| std::fs::read_to_string(format!("/proc/{child}/cgroup")).ok())
        .filter_map(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("0::"))
                .map(str::to_string)
        })
        .find(|path| path.contains("/mcp-bound-"));
    run.signal("KILL");
    // The harness fails the test if anything tagged still runs (the
    // clean-up the waiter execs carries the tag too, so it must end).
    let done = run.finish();
    done.check(done.status.code().is_none(), "mcp-bound was SIGKILLed");
    if mode == "cgroup" {
        let cgroup = cgroup.expect("the helper is in a cgroup of ours");
        let relative = cgroup.trim_start_matches('/');
        let left = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
            .iter()
            .any(|mount| std::path::Path::new(mount).join(relative).exists());
        done.check(!left, "the cgroup was removed");
    }
}

#[test]
fn a_sigkilled_mcp_bound_without_last_words_leaves_nothing_in_a_cgroup() {
    if let Err(why) = controllers() {
        skipped!("{why}");
        return;
    }
    killed_without_last_words("cgroup");
}

#[test]
fn a_sigkilled_mcp_bound_without_last_words_leaves_nothing_in_a_group() {
    killed_without_last_words("group");
}

#[test]
fn without_a_writable_cgroup_cgroup_is_refused_and_auto_falls_back() {
    // nobody cannot create a cgroup.
    let done = Call::sh("echo ran")
        .opt(&["--contain", "cgroup"])
        .via_nobody()
        .run();
    done.expect_state("failed_before_dispatch", 125);
    let stderr = done.stderr_text();
    done.check(
        stderr.starts_with("mcp-bound: --contain cgroup: ") && stderr.lines().count() == 1,
        &stderr,
    );
    done.check(done.stdout.is_empty(), "nothing ran");
    let done = Call::sh("echo ran").via_nobody().run();
    done.expect_state("completed", 0)
        .expect("/contain/method", json!(util::group_method()));
    done.check(
        done.field("/contain/fallback")
            .as_str()
            .is_some_and(|why| why.contains("cgroup")),
        "the record says why auto fell back",
    );
    // As root here a cgroup is made, and removed at the end.
    if nix::unistd::geteuid().is_root() {
        let done = Call::sh("cat /proc/self/cgroup").run();
        if done.field("/contain/method") == &json!("cgroup") {
            let dir = done.field("/contain/cgroup").as_str().unwrap().to_string();
            let name = dir.rsplit('/').next().unwrap().to_string();
            done.check(
                String::from_utf8_lossy(&done.stdout).contains(&name),
                "the helper ran in it",
            );
            done.check(!std::path::Path::new(&dir).exists(), "and it is gone");
        }
    }
}

/// The cgroup v2 controllers a child of our cgroup can have, or why none.
fn controllers() -> Result<String, String> {
    let done = Call::new(&["true"]).run();
    let dir = done
        .field("/contain/cgroup")
        .as_str()
        .ok_or("no cgroup can be made here")?
        .to_string();
    let parent = std::path::Path::new(&dir).parent().unwrap().to_path_buf();
    std::fs::read_to_string(parent.join("cgroup.controllers")).map_err(|e| e.to_string())
}

#[test]
fn a_controller_limit_the_machine_cannot_apply_is_refused_or_listed() {
    let available = controllers().unwrap_or_default();
    if available.split_whitespace().any(|c| c == "memory") {
        eprintln!("skipped the refusal half: this machine has the memory controller");
    } else {
        let done = Call::sh("echo ran").opt(&["--memory-max", "64MiB"]).run();
        done.expect_state("failed_before_dispatch", 125);
        let stderr = done.stderr_text();
        done.check(
            stderr.contains("--memory-max: memory.max: ") && stderr.lines().count() == 1,
            &stderr,
        );
        done.check(done.stdout.is_empty(), "nothing ran");
        let done = Call::sh("echo ran")
            .opt(&["--memory-max", "64MiB", "--limits", "best-effort"])
            .run();
        done.expect_state("completed", 0);
        let missing = done.field("/contain/not_applied").to_string();
        done.check(missing.contains("memory.max"), &missing);
        done.check(done.stdout == b"ran\n", "it ran");
    }
    // Under --contain group no controller limit can apply.
    let done = Call::sh("true")
        .opt(&[
            "--contain",
            "group",
            "--pids-max",
            "10",
            "--limits",
            "best-effort",
        ])
        .run();
    done.expect_state("completed", 0)
        .expect("/contain/applied", json!([]));
    let missing = done.field("/contain/not_applied").to_string();
    done.check(missing.contains("pids.max: no cgroup"), &missing);
}

#[test]
fn a_fork_bomb_under_pids_max_ends() {
    let available = controllers().unwrap_or_default();
    if !available.split_whitespace().any(|c| c == "pids") {
        skipped!(
            "this machine's cgroup v2 has no pids controller (controllers: {available:?}); --rlimit nproc is tested in tests/it/limits.rs"
        );
        return;
    }
    let done = Call::sh(
        "i=0; while [ $i -lt 400 ]; do (sleep 30) & i=$((i+1)); done 2>/dev/null; echo forked-all",
    )
    .opt(&[
        "--contain",
        "cgroup",
        "--pids-max",
        "40",
        "--timeout",
        "20s",
    ])
    .run();
    done.check(
        !String::from_utf8_lossy(&done.stdout).contains("forked-all"),
        "the limit held",
    );
    done.expect("/contain/applied", json!(["pids.max=40"]));
}

/// In a cgroup the loop ends the tree through the cgroup: the processes
/// outside the group are read from cgroup.procs (no /proc scan), KILL is
/// one write to cgroup.kill, which reaches every process in it, even one
/// that forks while it is killed, and cgroup.events says when none is left.
#[test]
fn a_cancelled_tree_in_a_cgroup_is_killed_through_cgroup_kill() {
    if let Err(why) = controllers() {
        skipped!("{why}");
        return;
    }
    let script = "trap '' TERM; setsid sh -c \"trap '' TERM; echo READY; \
                  while :; do sleep 1 & wait; done\" & while :; do sleep 1; done";
    let mut run = Call::sh(script)
        .opt(&["--contain", "cgroup", "--kill-after", "200ms"])
        .start();
    run.wait_for_line("READY");
    run.signal("TERM");
    let done = run.finish();
    done.expect("/contain/method", json!("cgroup"))
        .expect("/state", json!("cancelled_after_dispatch"));
    let sent = done.signals_sent();
    done.check(
        sent.iter()
            .any(|(s, t, _)| s == "TERM" && t == "descendants"),
        "TERM reached the process outside the group",
    );
    done.check(
        sent.iter().any(|(s, t, _)| s == "KILL" && t == "cgroup"),
        "KILL went to the cgroup",
    );
}

/// With a cgroup, the record's usage also has the cgroup's own figures:
/// CPU from cpu.stat (every process that ran in it) and, where the memory
/// controller is on, memory.peak. Without one they are null.
#[test]
fn usage_in_a_cgroup_has_its_cpu_total_and_memory_peak() {
    let burn = "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done";
    let done = Call::sh(burn).opt(&["--contain", "group"]).run();
    done.expect_state("completed", 0)
        .expect("/usage/cgroup_cpu_ms", Value::Null)
        .expect("/usage/memory_peak_bytes", Value::Null);
    let available = match controllers() {
        Ok(available) => available,
        Err(why) => {
            skipped!("(the cgroup half): {why}");
            return;
        }
    };
    // The memory controller, where it can be had, comes with --memory-max.
    let done = Call::sh(burn)
        .opt(&[
            "--contain",
            "cgroup",
            "--memory-max",
            "1G",
            "--limits",
            "best-effort",
        ])
        .run();
    done.expect_state("completed", 0);
    let rusage = done.field("/usage/user_ms").as_u64().unwrap()
        + done.field("/usage/sys_ms").as_u64().unwrap();
    let cgroup = done.field("/usage/cgroup_cpu_ms").as_u64();
    done.check(
        cgroup.is_some_and(|ms| ms > 0 && rusage > 0),
        "the shell's loop shows in both counts",
    );
    let peak = done.field("/usage/memory_peak_bytes");
    let applied = done
        .field("/contain/applied")
        .as_array()
        .cloned()
        .unwrap_or_default();
    if applied
        .iter()
        .any(|a| a.as_str().is_some_and(|a| a.starts_with("memory.max=")))
    {
        done.check(peak.as_u64().is_some_and(|b| b > 0), "memory.peak read");
    } else {
        skipped!("(memory.peak): no memory controller here ({available:?})");
        done.check(peak.is_null(), "null without the memory controller");
    }
}

/// strace, when the machine has it (.ci/run installs it); a test that
/// needs it says so when it is missing.
fn strace() -> Option<String> {
    let found = std::process::Command::new("sh")
        .args(["-c", "command -v strace"])
        .output()
        .ok()?;
    let path = String::from_utf8_lossy(&found.stdout).trim().to_string();
    (!path.is_empty()).then_some(path)
}

/// The in-flight record's `mcp_bound.pid`, once it is written (under a
/// wrapper, the child the harness holds is not mcp-bound).
fn mcp_bound_pid(record: &std::path::Path) -> u32 {
    util::watchdog_of(record);
    let text = std::fs::read_to_string(record).unwrap();
    let record: Value = serde_json::from_str(&text).unwrap();
    record["mcp_bound"]["pid"].as_u64().unwrap() as u32
}

/// Where a SIGKILL lands during the final writes: while the final record
/// is being synced (before its rename), or while the journal's terminal
/// entry is (after its write).
#[derive(Clone, Copy, Debug)]
enum Moment {
    RecordSync,
    TerminalSync,
}

/// The watchdog learns the final words before they are written. A SIGKILL
/// in the middle of writing them (a host that SIGKILLs right after its
/// TERM, as Codex does, lands there; strace widens the window by delaying
/// each fdatasync) must leave one terminal, not a second
/// `supervisor_killed` one, and the true record: what mcp-bound had not
/// written yet, the watchdog writes as mcp-bound would have.
#[test]
fn a_sigkill_during_the_final_writes_leaves_one_true_end() {
    let Some(strace) = strace() else {
        skipped!("strace is not installed (.ci/run installs it)");
        return;
    };
    for moment in [Moment::RecordSync, Moment::TerminalSync] {
        let call = Call::sh("touch \"$DONE\"; exit 3");
        let (journal, record, done_file) = (
            call.path("journal.jsonl"),
            call.record_path(),
            call.path("helper-done"),
        );
        let dir = call.path("");
        let delay = "inject=fdatasync:delay_exit=700000";
        let run = call
            .env("DONE", done_file.to_str().unwrap())
            .opt(&["--journal", journal.to_str().unwrap()])
            .via(&[
                &strace,
                "-f",
                "-qq",
                "-o",
                "/dev/null",
                "-e",
                "trace=fdatasync",
                "-e",
                delay,
            ])
            .start();
        let pid = mcp_bound_pid(&record);
        let watchdog = util::watchdog_of(&record);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let reached = || match moment {
            // A temporary record file once the helper is done: the final
            // record, being synced before its rename.
            Moment::RecordSync => {
                util::exists(&done_file)
                    && std::fs::read_dir(&dir)
                        .unwrap()
                        .flatten()
                        .any(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            }
            Moment::TerminalSync => std::fs::read_to_string(&journal)
                .unwrap_or_default()
                .contains("\"kind\":\"terminal\""),
        };
        while !reached() {
            assert!(
                std::time::Instant::now() < deadline,
                "{moment:?} never came"
            );
            std::thread::yield_now();
        }
        util::send_signal(pid, "KILL");
        util::wait_gone(watchdog);
        let done = run.finish();
        done.expect("/state", json!("completed"))
            .expect("/exit", json!({"code": 3}))
            .expect("/exit_code", json!(3));
        let text = std::fs::read_to_string(&journal).unwrap();
        let terminals: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("\"kind\":\"terminal\""))
            .collect();
        done.check(
            terminals.len() == 1 && terminals[0].contains("\"state\":\"completed\""),
            &format!("{moment:?}: one terminal, the true one: {terminals:?}"),
        );
        let (ok, report) = util::verify_report(&journal);
        done.check(ok, &format!("{moment:?}: verify passes: {report}"));
    }
}

/// Put a process of no call's at pid `target`, in a session and group of
/// its own (pgid = target), through /proc/sys/kernel/ns_last_pid (root
/// only). Its pid, or why it could not be placed.
fn place_stranger(target: u32) -> Result<u32, String> {
    let script = r#"
import os, signal, sys
target = int(sys.argv[1])
for _ in range(500):
    try:
        with open('/proc/sys/kernel/ns_last_pid', 'w') as f:
            f.write(str(target - 1))
    except OSError as e:
        print('NO', e, flush=True)
        sys.exit(0)
    pid = os.fork()
    if pid == 0:
        os.setsid()
        os.closerange(0, 3)
        while True:
            signal.pause()
    if pid == target:
        print('PLACED', pid, flush=True)
        os._exit(0)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
print('MISSED', flush=True)
"#;
    let output = std::process::Command::new("python3")
        .args(["-c", script, &target.to_string()])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    match text.strip_prefix("PLACED ") {
        Some(pid) => pid.parse().map_err(|_| text.clone()),
        None => Err(text),
    }
}

/// Whether `pid` runs (and is not a zombie).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| Some(!stat[stat.rfind(')')? + 2..].starts_with('Z')))
        .unwrap_or(false)
}

/// A crash cuts a request off, the server is started again, then
/// mcp-bound is SIGKILLed: the watchdog's record carries what the restart
/// knew (the first run and the request its crash cut off, the second run
/// going), not the facts from before dispatch.
#[test]
fn a_killed_mcp_bound_s_record_keeps_what_a_restart_knew() {
    let call = util::server(&[]).opt(&[
        "--mcp",
        "--restart",
        "on-failure",
        "--restart-backoff",
        "10ms",
    ]);
    let record = call.record_path();
    let mut run = call.start();
    run.send(&util::rpc_request(1, "crash", json!({"code": 1})));
    assert_eq!(
        util::parse_message(&run.read_line())["error"]["code"],
        -32000
    );
    run.send(&util::rpc_request(2, "pid", json!({})));
    util::parse_message(&run.read_line());
    let watchdog = util::watchdog_of(&record);
    run.signal("KILL");
    util::wait_gone(watchdog);
    let done = run.finish();
    done.expect("/state", json!("supervisor_killed"))
        .expect("/mcp/restarts", json!(1))
        .expect("/mcp/incarnations/0/interrupted/0/id", json!(1))
        .expect("/mcp/incarnations/0/exit", json!({"code": 1}));
    done.check(
        done.events("dispatched").len() == 2,
        "both runs' dispatch events",
    );
    // The run the kill found going: listed, with no end seen.
    done.check(
        done.field("/mcp/incarnations/1/pid").as_u64().is_some(),
        "the second run is listed",
    );
    done.expect("/mcp/incarnations/1/exit", Value::Null)
        .expect("/mcp/incarnations/1/exited_t_ms", Value::Null);
}

/// In group containment with --restart, the first server is reaped at the
/// restart and its number is free: a stranger may then own that process
/// group. The watchdog must know each new server, and never signal a group
/// that mcp-bound has reaped.
#[test]
fn after_a_restart_the_watchdog_never_signals_a_reaped_group() {
    let call = util::server(&[]).opt(&[
        "--mcp",
        "--contain",
        "group",
        "--restart",
        "on-failure",
        "--restart-backoff",
        "10ms",
    ]);
    let record = call.record_path();
    let mut run = call.start();
    let pid_of = |run: &mut util::Started, id: u64| {
        run.send(&util::rpc_request(id, "pid", json!({})));
        util::parse_message(&run.read_line())["result"]["pid"]
            .as_u64()
            .unwrap() as u32
    };
    let first = pid_of(&mut run, 1);
    run.send(&util::rpc_request(2, "crash", json!({"code": 1})));
    assert_eq!(
        util::parse_message(&run.read_line())["error"]["code"],
        -32000
    );
    let second = pid_of(&mut run, 3);
    assert_ne!(first, second, "a new server answers");
    let stranger = match place_stranger(first) {
        Ok(pid) => pid,
        Err(why) => {
            skipped!("no process could be placed at pid {first} ({why})");
            run.close_stdin();
            run.finish();
            return;
        }
    };
    let watchdog = util::watchdog_of(&record);
    run.signal("KILL");
    util::wait_gone(watchdog);
    let alive = running(stranger);
    let _ = std::process::Command::new("kill")
        .args(["-9", &stranger.to_string()])
        .status();
    let done = run.finish();
    done.expect("/state", json!("supervisor_killed"));
    done.check(
        alive,
        &format!("the stranger at the reaped group {first} was signalled"),
    );
    done.check(!running(second), "the second server was ended");
}

/// A host that SIGKILLs mcp-bound during its shutdown, before it could
/// write (Codex: 20-80 ms after its TERM, with a server slower than that
/// to exit): the watchdog's record carries what mcp-bound last knew, not
/// the facts from before dispatch. The state stays supervisor_killed; the
/// host's signal and the request it cut off are said.
#[test]
fn a_fast_host_kill_leaves_a_record_of_what_was_known() {
    let call = util::server(&["--log-term"]).opt(&["--mcp", "--journal"]);
    let (journal, log) = (call.path("journal.jsonl"), call.path("stderr.log"));
    let mut run = call
        .opt(&[
            journal.to_str().unwrap(),
            "--stderr-log",
            log.to_str().unwrap(),
        ])
        .start();
    for id in 1..=3 {
        run.send(&util::rpc_request(id, "tools/call", json!({"name": "t"})));
        util::parse_message(&run.read_line());
    }
    run.send(&util::rpc_request(4, "sleep", json!({"ms": 60_000})));
    run.send(&util::rpc_request(5, "pid", json!({})));
    let server = util::parse_message(&run.read_line())["result"]["pid"]
        .as_u64()
        .unwrap();
    let watchdog = util::watchdog_of(&run.call().record_path());
    run.signal("TERM");
    // The server got the TERM mcp-bound forwarded: mcp-bound has handled
    // the host's signal. Then the host's SIGKILL.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("GOT TERM")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never got a TERM"
        );
        std::thread::yield_now();
    }
    run.signal("KILL");
    util::wait_gone(watchdog);
    let done = run.finish();
    done.expect("/state", json!("supervisor_killed"))
        .expect("/exit", Value::Null)
        .expect("/pid", json!(server))
        .expect("/cancel_reason", json!("signal"))
        .expect("/cancel_signal", json!("TERM"))
        .expect("/mcp/client/requests", json!(5))
        .expect("/mcp/in_flight_at_exit", json!(1))
        .expect(
            "/mcp/interrupted",
            json!([{"id": 4, "method": "sleep", "name": null}]),
        );
    done.check(
        done.events("dispatched").len() == 1 && !done.events("cancel_requested").is_empty(),
        "the events mcp-bound saw",
    );
    let killed = done.events("supervisor_killed");
    done.check(
        killed.len() == 1 && killed[0]["facts_t_ms"].as_u64() <= killed[0]["t_ms"].as_u64(),
        &format!("the watchdog says when what it wrote was known: {killed:?}"),
    );
    done.check(
        done.field("/stderr/bytes_seen").as_u64() > Some(0),
        "stderr was counted",
    );
    let text = std::fs::read_to_string(&journal).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    done.check(
        last["kind"] == "terminal"
            && last["state"] == "supervisor_killed"
            && last["cancel_signal"] == "TERM",
        &format!("the journal's terminal: {last}"),
    );
    let (ok, report) = util::verify_report(&journal);
    done.check(ok, &format!("verify: {report}"));
}

/// The cgroup v2 mount, as /proc/mounts has it.
fn cgroup2_mount() -> Option<String> {
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts
        .lines()
        .map(|l| l.split(' ').collect::<Vec<_>>())
        .find(|f| f.len() > 2 && f[2] == "cgroup2")
        .map(|f| f[1].to_string())
}

/// A helper that leaves its cgroup (its pid written into the parent's
/// cgroup.procs, as a delegated cgroup lets a user's process do), then a
/// session of its own: the group-and-subreaper layer under the cgroup
/// still ends it, at the deadline and, once mcp-bound is SIGKILLed, in
/// the watchdog (the escapee is init's then, found by its mark).
#[test]
fn a_process_that_leaves_the_cgroup_still_dies_with_the_tree() {
    if let Some(why) = util::no_cgroup_here() {
        skipped!("{why}");
        return;
    }
    let Some(mount) = cgroup2_mount() else {
        skipped!("no cgroup v2 mount here");
        return;
    };
    if util::effective_uid() != 0 {
        skipped!("moving a process between cgroups here needs root (a delegated cgroup elsewhere)");
        return;
    }
    let leave = "cg=$(sed -n 's/^0:://p' /proc/self/cgroup); \
         echo $$ > \"$ROOT$(dirname \"$cg\")/cgroup.procs\" || exit 9; \
         setsid sleep 300 & echo LEFT; exec sleep 301";
    for killed in [false, true] {
        let call = Call::sh(leave)
            .env("ROOT", &mount)
            .opt(&["--contain", "cgroup"]);
        let call = match killed {
            false => call.opt(&["--timeout", "2s"]),
            true => {
                let journal = call.path("j.jsonl");
                call.opt(&["--journal", journal.to_str().unwrap()])
            }
        };
        let mut run = call.start();
        run.wait_for_line("LEFT");
        run.wait_for_tree(1);
        if killed {
            run.kill_and_wait_for_watchdog();
        }
        // The harness fails the test if the setsid sleep still runs.
        let done = run.finish();
        done.expect("/contain/method", json!("cgroup"));
        match killed {
            false => {
                done.expect_state("timed_out", 124);
            }
            true => {
                done.expect("/state", json!("supervisor_killed"));
            }
        }
    }
}
