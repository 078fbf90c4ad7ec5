//! The Windows binary, run under Wine. `.ci/windows-build` cross-builds
//! it with MinGW and makes a Wine prefix; MCP_BOUND_WINDOWS_EXE names the
//! .exe and WINEPREFIX the prefix. Without them each test says so and
//! passes, unless MCP_BOUND_WINE=require (as in CI).
//!
//! The backend's own pieces (the job that holds the tree, the command
//! line's rules) are unit-tested there too: `unit-tests.exe`, beside the
//! binary, is the library's test executable. The binary runs helpers
//! (`cmd.exe` and what it starts, the tiny Windows programs every Wine
//! prefix has) in a Job Object, and each test checks the exit, the
//! streams, the record against the schema, and that nothing of the tree
//! is left (Wine's processes are Linux processes: the test's tag is in
//! their environment). Wine is not Windows: the README's platform table
//! says what was seen only here.

use std::path::{Path, PathBuf};

use crate::util::{Call, TAG_VAR, assert_nothing_left, schema_errors, unique_tag};
use std::process::{Command, Output};

const WINE: &str = "/usr/lib/wine/wine64";

/// wine64, bounded: a Wine client whose server went away waits forever,
/// and a test must end within its bound (`timeout` kills it after 300 s,
/// status 124).
fn under_wine() -> Command {
    let mut command = Command::new("timeout");
    command.args(["-s", "KILL", "300", WINE]);
    command
}

/// The .exe, or None (said, and a failure when Wine is required).
fn windows_exe() -> Option<PathBuf> {
    let exe = std::env::var_os("MCP_BOUND_WINDOWS_EXE").map(PathBuf::from);
    let why = match &exe {
        None => "MCP_BOUND_WINDOWS_EXE is not set".to_string(),
        Some(exe) if !exe.is_file() => format!("{} does not exist", exe.display()),
        Some(_) if !std::path::Path::new(WINE).exists() => format!("{WINE} is missing"),
        Some(_) => return exe,
    };
    let build = ".ci/windows-build, then MCP_BOUND_WINDOWS_EXE=target/cross/x86_64-pc-windows-gnu/debug/mcp-bound.exe WINEPREFIX=$PWD/target/wine-prefix";
    if std::env::var("MCP_BOUND_WINE").as_deref() == Ok("require") {
        panic!("the Wine suite needs the Windows binary: {why} ({build})");
    }
    skipped!("the Windows binary under Wine: {why}; build it with {build}");
    None
}

/// Run the .exe under Wine with `args`, nothing on its stdin.
fn run(exe: &PathBuf, args: &[&str]) -> Output {
    run_in(exe, args, Path::new("."))
}

/// The same, in directory `dir` (Wine's `Z:` is `/`, so a relative path
/// names the same file on both sides).
fn run_in(exe: &PathBuf, args: &[&str], dir: &Path) -> Output {
    run_tagged(exe, args, dir, "")
}

/// The same, with `tag` in the environment of everything it starts.
fn run_tagged(exe: &PathBuf, args: &[&str], dir: &Path, tag: &str) -> Output {
    let output = under_wine()
        .arg(exe)
        .args(args)
        .current_dir(dir)
        .env("WINEDEBUG", "-all")
        .env(TAG_VAR, tag)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run wine64");
    eprintln!(
        "--- wine64 mcp-bound.exe {}\n--- status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        args.join(" "),
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    output
}

/// What mcp-bound itself said on stderr (Wine's own lines aside).
fn own_lines(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|line| line.starts_with("mcp-bound"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_windows_binary_starts_and_names_itself() {
    let Some(exe) = windows_exe() else { return };
    let output = run(&exe, &["--version"]);
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.starts_with(&format!("mcp-bound {}", env!("CARGO_PKG_VERSION"))),
        "{stdout}"
    );
}

#[test]
fn options_are_checked_as_on_unix_before_anything_else() {
    let Some(exe) = windows_exe() else { return };
    for (args, expected) in [
        (&["--timeout", "abc", "--", "cmd"][..], "--timeout"),
        (&["--signal", "CLOSE", "--", "cmd"][..], "--mcp"),
        (&["--signal", "TERM", "--", "cmd"][..], "BREAK"),
        (&["--contain", "group", "--", "cmd"][..], "Job Object"),
        (
            &["--stdin-close-grace", "2s", "--", "cmd"][..],
            "session layer",
        ),
        // What Windows has no means for: refused, never ignored.
        (&["--record-fd", "3", "--", "cmd"][..], "--record PATH"),
        (&["--approve", "tty", "--", "cmd"][..], "--approve-cmd"),
        (
            &["--mcp", "--debug-window", "1m", "--", "cmd"][..],
            "no SIGUSR1",
        ),
    ] {
        let output = run(&exe, args);
        assert_eq!(output.status.code(), Some(125), "{args:?}");
        let said = own_lines(&output);
        assert!(
            said.iter().any(|line| line.contains(expected)),
            "{args:?}: {said:?}"
        );
    }
}

#[test]
fn a_journal_written_on_linux_verifies_on_windows_and_a_changed_byte_breaks_it() {
    let Some(exe) = windows_exe() else { return };
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("audit.jsonl");
    for code in [0, 3] {
        Call::sh(&format!("echo call >&2; exit {code}"))
            .opt(&["--journal", journal.to_str().unwrap()])
            .run()
            .expect_code(code);
    }
    let here = Command::new(crate::util::BIN)
        .args(["verify", "audit.jsonl"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let there = run_in(&exe, &["verify", "audit.jsonl"], dir.path());
    assert_eq!(there.status.code(), Some(0), "verifies on Windows");
    assert_eq!(
        String::from_utf8_lossy(&there.stdout).trim_end(),
        String::from_utf8_lossy(&here.stdout).trim_end(),
        "the same report, chain head included"
    );
    let text = std::fs::read_to_string(&journal).unwrap();
    let changed = text.replacen("\"seq\":1,", "\"seq\":1 ,", 1);
    assert_ne!(changed, text, "the second line was changed");
    std::fs::write(&journal, changed).unwrap();
    let broken = run_in(&exe, &["verify", "audit.jsonl"], dir.path());
    assert_eq!(broken.status.code(), Some(1), "a changed byte is a break");
    assert!(
        String::from_utf8_lossy(&broken.stdout).contains("line 2"),
        "the break is named where it is"
    );
}

#[test]
fn the_windows_backend_s_own_tests_pass_under_wine() {
    let Some(exe) = windows_exe() else { return };
    let tests = exe.with_file_name("unit-tests.exe");
    assert!(
        tests.is_file(),
        "{} is missing (.ci/windows-build makes it)",
        tests.display()
    );
    let output = under_wine()
        .arg(&tests)
        .args(["sys::windows", "--test-threads", "1", "--nocapture"])
        .env("WINEDEBUG", "-all")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run wine64");
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprintln!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    // What a unit test could not show under Wine, said where CI counts it.
    for (_, why) in stdout
        .lines()
        .filter_map(|line| line.split_once("SKIPPED: "))
    {
        skipped!("under Wine, a backend unit test: {why}");
    }
    assert_eq!(
        output.status.code(),
        Some(0),
        "the unit tests pass under Wine"
    );
    let passed: u32 = stdout
        .lines()
        .find_map(|line| line.strip_prefix("test result: ok. "))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        passed >= 18,
        "the files', the job's, the pipes', the relays' and the command line's tests ran: {passed}"
    );
}

/// A run of the Windows binary in a directory of its own, with a record:
/// its output, the record (checked against the schema), and nothing of
/// its tree left.
struct WineRun {
    output: Output,
    record: serde_json::Value,
}

fn run_recorded(exe: &PathBuf, dir: &Path, args: &[&str]) -> WineRun {
    let tag = unique_tag();
    let mut all = vec!["--record", "record.json"];
    all.extend_from_slice(args);
    let output = run_tagged(exe, &all, dir, &tag);
    let text = std::fs::read_to_string(dir.join("record.json")).expect("the record was written");
    eprintln!("--- record\n{text}");
    let record: serde_json::Value = serde_json::from_str(&text).expect("the record is JSON");
    if let Err(errors) = schema_errors(&record) {
        panic!("the record does not match schema/record.schema.json: {errors:?}");
    }
    assert_eq!(record["mcp_bound"]["os"], "windows");
    assert_eq!(
        record["contain"]["method"], "job",
        "the tree is held by a job"
    );
    assert_nothing_left(&tag);
    WineRun { output, record }
}

#[test]
fn a_helper_runs_in_a_job_with_its_exit_and_streams_kept() {
    let Some(exe) = windows_exe() else { return };
    let dir = tempfile::tempdir().unwrap();
    let run = run_recorded(
        &exe,
        dir.path(),
        &["--", "cmd", "/c", "echo hello& echo oops>&2& exit 3"],
    );
    assert_eq!(
        run.output.status.code(),
        Some(3),
        "the helper's code passes through"
    );
    assert_eq!(
        String::from_utf8_lossy(&run.output.stdout),
        "hello\r\n",
        "stdout, byte for byte"
    );
    let record = &run.record;
    assert_eq!(record["state"], "completed");
    assert_eq!(record["exit"]["code"], 3);
    assert_eq!(record["stdout"]["bytes_forwarded"], 7);
    assert_eq!(record["stderr"]["excerpt"], "oops\r\n");
    // A crash's NTSTATUS: 32 bits, unsigned, named, passed through.
    let crash = run_recorded(&exe, dir.path(), &["--", "cmd", "/c", "exit -1073741819"]);
    assert_eq!(crash.record["exit"]["code"], 3_221_225_477u32);
    assert_eq!(crash.record["exit"]["ntstatus"], "STATUS_ACCESS_VIOLATION");
    assert_eq!(crash.record["exit_code"], 3_221_225_477u32);
    assert!(
        String::from_utf8_lossy(&crash.output.stderr).contains("(STATUS_ACCESS_VIOLATION)"),
        "the summary names it: {}",
        String::from_utf8_lossy(&crash.output.stderr)
    );
    // A program's own code is not a status, however large.
    let own = run_recorded(&exe, dir.path(), &["--", "cmd", "/c", "exit 300"]);
    assert_eq!(own.record["exit"], serde_json::json!({"code": 300}));
}

#[test]
fn the_limits_are_the_job_s_and_what_it_refuses_is_said() {
    let Some(exe) = windows_exe() else { return };
    let dir = tempfile::tempdir().unwrap();
    let limits = [
        "--memory-max",
        "64MiB",
        "--pids-max",
        "4",
        "--cpu-max",
        "0.5",
    ];
    let mut args = vec!["--limits", "best-effort"];
    args.extend(limits);
    args.extend(["--", "cmd", "/c", "exit 0"]);
    let run = run_recorded(&exe, dir.path(), &args);
    assert_eq!(run.record["state"], "completed");
    let contain = &run.record["contain"];
    let applied: Vec<&str> = contain["applied"]
        .as_array()
        .unwrap()
        .iter()
        .map(|each| each.as_str().unwrap())
        .collect();
    assert!(applied.contains(&"JobMemoryLimit=67108864"), "{contain}");
    assert!(applied.contains(&"ActiveProcessLimit=4"), "{contain}");
    // Wine refuses a CPU rate, which Windows 8 and later take: either
    // way the record says which.
    let cpu_refused = contain["not_applied"]
        .as_array()
        .unwrap()
        .iter()
        .any(|why| {
            why.as_str()
                .unwrap()
                .starts_with("cpu-max: the job refused it")
        });
    assert!(
        cpu_refused || applied.iter().any(|each| each.starts_with("CpuRate=")),
        "{contain}"
    );
    // Without best effort, a refused limit refuses the call: nothing runs.
    if cpu_refused {
        let mut strict = limits.to_vec();
        strict.extend(["--", "cmd", "/c", "echo RAN"]);
        let output = run_in(&exe, &strict, dir.path());
        assert_eq!(output.status.code(), Some(125));
        assert!(output.stdout.is_empty(), "nothing ran");
        let said = own_lines(&output);
        assert!(
            said.len() == 1 && said[0].contains("--cpu-max: the job refused it"),
            "{said:?}"
        );
    }
}

#[test]
fn a_stderr_flood_at_the_deadline_is_bounded_counted_and_its_tree_ended() {
    let Some(exe) = windows_exe() else { return };
    let dir = tempfile::tempdir().unwrap();
    // A loop that never ends (step 0), writing to stderr as fast as
    // cmd.exe can, with a grandchild that would sleep for a minute.
    let run = run_recorded(
        &exe,
        dir.path(),
        &[
            "--timeout",
            "2s",
            "--tail-bytes",
            "100",
            "--",
            "cmd",
            "/c",
            "start /b ping -n 61 127.0.0.1 >nul & for /L %i in (1,0,2) do (echo flood line>&2)",
        ],
    );
    assert_eq!(run.output.status.code(), Some(124), "the deadline's status");
    let record = &run.record;
    assert_eq!(record["state"], "timed_out");
    let stderr = &record["stderr"];
    let seen = stderr["bytes_seen"].as_u64().unwrap();
    assert!(seen > 1000, "the flood was drained: {seen} bytes");
    assert_eq!(stderr["truncated"], true);
    assert!(
        stderr["bytes_retained"].as_u64().unwrap() <= 100,
        "only the tail is kept"
    );
    let kill = record["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "signal_sent");
    let kill = kill.expect("a signal_sent event");
    assert_eq!(
        kill["signal"], "KILL",
        "no console to share: the stop is KILL"
    );
    assert_eq!(kill["target"], "job", "sent to the job");
    assert_eq!(record["limits"]["signal"], "KILL");
}

#[test]
fn the_tree_ends_when_mcp_bound_itself_is_killed() {
    let Some(exe) = windows_exe() else { return };
    let dir = tempfile::tempdir().unwrap();
    let tag = unique_tag();
    kill_mcp_bound_mid_call(&exe, dir.path(), &tag, &[]);
    // The job's last handle closed with mcp-bound: the system ends it.
    assert_nothing_left(&tag);
}

/// With a record and a journal to complete, the watchdog (mcp-bound
/// started again, holding the job) outlives a killed mcp-bound: it ends
/// the tree, then writes `supervisor_killed` in both, as on Unix.
#[test]
fn a_killed_mcp_bound_s_watchdog_ends_the_tree_and_says_so() {
    let Some(exe) = windows_exe() else { return };
    let dir = tempfile::tempdir().unwrap();
    let tag = unique_tag();
    let args = ["--record", "r.json", "--journal", "audit.jsonl"];
    kill_mcp_bound_mid_call(&exe, dir.path(), &tag, &args);
    let text = wait_for_text(
        &dir.path().join("r.json"),
        "\"state\":\"supervisor_killed\"",
    );
    eprintln!("--- record\n{text}");
    let record: serde_json::Value = serde_json::from_str(&text).unwrap();
    schema_errors(&record).unwrap();
    assert_eq!(record["state"], "supervisor_killed");
    assert_eq!(record["exit"], serde_json::Value::Null, "no exit was seen");
    let watchdog = record["contain"]["watchdog_pid"].as_u64();
    assert!(watchdog.is_some_and(|pid| pid > 0), "{record}");
    let events = record["events"].as_array().unwrap();
    assert_eq!(events.last().unwrap()["event"], "supervisor_killed");
    let warnings = record["mcp_bound"]["warnings"].to_string();
    assert!(!warnings.contains("no watchdog"), "{warnings}");
    let journal = dir.path().join("audit.jsonl");
    let terminal = wait_for_text(&journal, "\"terminal\"");
    assert!(
        terminal.contains("\"state\":\"supervisor_killed\""),
        "{terminal}"
    );
    crate::util::check_journal_schema(&journal);
    let verified = Command::new(crate::util::BIN)
        .args(["verify", "audit.jsonl"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(verified.status.code(), Some(0), "{verified:?}");
    assert_nothing_left(&tag);
}

/// Start mcp-bound.exe with `args` on a helper whose child started a
/// grandchild, then kill mcp-bound.exe as TerminateProcess or taskkill /F
/// would (no handler, no clean-up), and wait for it to be gone.
fn kill_mcp_bound_mid_call(exe: &Path, dir: &Path, tag: &str, args: &[&str]) {
    let out = std::fs::File::create(dir.join("out.txt")).unwrap();
    let mut wine = under_wine()
        .arg(exe)
        .args(args)
        .args([
            "--",
            "cmd",
            "/c",
            "start /b ping -n 62 127.0.0.1 >nul & echo up& ping -n 62 127.0.0.1 >nul",
        ])
        .current_dir(dir)
        .env("WINEDEBUG", "-all")
        .env(TAG_VAR, tag)
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The handshake: "up" comes once the grandchild was started.
    wait_for_text(&dir.join("out.txt"), "up");
    let ours = mcp_bound_process(exe, tag);
    let pings = || {
        crate::util::tagged_processes(tag)
            .into_iter()
            .filter(|(_, cmdline)| cmdline.contains("ping -n 62"))
            .count()
    };
    assert!(pings() >= 2, "the child's and the grandchild's pings run");
    kill_9(ours);
    let _ = wine.wait();
}

/// mcp-bound.exe's Linux pid (Wine's processes are Linux processes), not
/// its watchdog's (`mcp-bound-watchdog heir`).
fn mcp_bound_process(exe: &Path, tag: &str) -> u32 {
    crate::util::tagged_processes(tag)
        .into_iter()
        .find(|(_, cmdline)| {
            cmdline.starts_with(&*exe.to_string_lossy()) && !cmdline.contains("heir")
        })
        .expect("mcp-bound.exe runs")
        .0
}

/// Kill a process as TerminateProcess or taskkill /F would: no handler,
/// no clean-up.
fn kill_9(pid: u32) {
    let killed = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
}

/// The watchdog is handed each server's job: after a crash and a restart
/// it holds the new one, which it ends when mcp-bound is killed, and its
/// record carries what the last milestone (the restart) knew, the request
/// the crash cut off included.
#[test]
fn a_killed_mcp_bound_s_watchdog_ends_the_restarted_server() {
    let Some(exe) = windows_exe() else { return };
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--record",
        "record.json",
        "--journal",
        "audit.jsonl",
        "--restart",
        "on-failure",
        "--restart-backoff",
        "10ms",
    ];
    let (mut wine, mut client, out, tag) = mcp_session(&exe, dir.path(), &args);
    send(
        &mut client,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"crash","arguments":{}}}"#,
    );
    wait_for_text(&out, r#""id":2,"error""#);
    // The restarted server answers: it runs, in a job of its own.
    send(
        &mut client,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#,
    );
    wait_for_text(&out, r#""id":3,"result""#);
    kill_9(mcp_bound_process(&exe, &tag));
    let _ = wine.wait();
    let text = wait_for_text(
        &dir.path().join("record.json"),
        r#""state":"supervisor_killed""#,
    );
    eprintln!("--- record\n{text}");
    let record: serde_json::Value = serde_json::from_str(&text).unwrap();
    schema_errors(&record).unwrap();
    let mcp = &record["mcp"];
    assert_eq!(mcp["restarts"], 1, "{mcp}");
    assert_eq!(mcp["incarnations"][0]["exit"]["code"], 3, "{mcp}");
    assert_eq!(mcp["incarnations"][0]["interrupted"][0]["id"], 2, "{mcp}");
    let running = &mcp["incarnations"][1];
    assert!(running["pid"].as_u64().is_some(), "the run going: {mcp}");
    assert!(running["exit"].is_null() && running["exited_t_ms"].is_null());
    let dispatched = record["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["event"] == "dispatched")
        .count();
    assert_eq!(dispatched, 2, "both runs' dispatch events");
    let journal = dir.path().join("audit.jsonl");
    wait_for_text(&journal, r#""state":"supervisor_killed""#);
    crate::util::check_journal_schema(&journal);
    assert_nothing_left(&tag);
}

#[test]
fn a_batch_file_s_hostile_arguments_stay_text_or_are_refused() {
    let Some(exe) = windows_exe() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("show.cmd"),
        "@echo off\r\necho first=[%1]\r\n",
    )
    .unwrap();
    let ran = run_recorded(&exe, dir.path(), &["--", r".\show.cmd", "a&echo INJECTED"]);
    assert_eq!(ran.output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&ran.output.stdout);
    assert_eq!(
        stdout, "first=[\"a&echo INJECTED\"]\r\n",
        "one argument, quoted, run as text"
    );
    // A line break would end cmd.exe's command: refused, nothing run.
    let refused = run_in(
        &exe,
        &["--", r".\show.cmd", "a\r\necho INJECTED"],
        dir.path(),
    );
    assert_eq!(refused.status.code(), Some(125));
    assert!(refused.stdout.is_empty(), "nothing ran");
    let said = own_lines(&refused);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("line break") && said[0].contains("nothing was started"),
        "{said:?}"
    );
}

/// Wait until `file` holds `needle`, at most 120 s (Wine starts slowly
/// on a busy machine): the suite's handshake, never a sleep.
fn wait_for_text(file: &Path, needle: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{needle:?} in {} within 120 s; it holds {text:?}",
            file.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `mcp-bound.exe --mcp ARGS -- mcp_server.exe` under Wine in `dir`,
/// initialized: the running process, its stdin (the client's end), the
/// file its stdout goes to, and the tree's tag.
fn mcp_session(
    exe: &Path,
    dir: &Path,
    args: &[&str],
) -> (
    std::process::Child,
    std::process::ChildStdin,
    PathBuf,
    String,
) {
    mcp_session_declaring(exe, dir, args, "{}")
}

/// As [`mcp_session`], the client declaring these capabilities.
fn mcp_session_declaring(
    exe: &Path,
    dir: &Path,
    args: &[&str],
    capabilities: &str,
) -> (
    std::process::Child,
    std::process::ChildStdin,
    PathBuf,
    String,
) {
    let server = exe.with_file_name("mcp_server.exe");
    assert!(
        server.is_file(),
        "{} (.ci/windows-build makes it)",
        server.display()
    );
    std::fs::copy(&server, dir.join("mcp_server.exe")).unwrap();
    let tag = unique_tag();
    let out = dir.join("out.txt");
    let mut wine = under_wine()
        .arg(exe)
        .arg("--mcp")
        .args(args)
        .args(["--", r".\mcp_server.exe"])
        .current_dir(dir)
        .env("WINEDEBUG", "-all")
        .env(TAG_VAR, &tag)
        .stdin(std::process::Stdio::piped())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(dir.join("err.txt")).unwrap())
        .spawn()
        .unwrap();
    let mut client = wine.stdin.take().unwrap();
    let initialize = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{capabilities},"clientInfo":{{"name":"wine-suite","version":"1"}}}}}}"#
    );
    send(&mut client, &initialize);
    wait_for_text(&out, r#""id":1,"result""#);
    send(
        &mut client,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    (wine, client, out, tag)
}

/// Close the client's end, wait for mcp-bound, and read its record
/// (checked against the schema), saying it all should a test fail.
fn session_end(
    mut wine: std::process::Child,
    client: std::process::ChildStdin,
    dir: &Path,
    stdout: &str,
) -> serde_json::Value {
    drop(client);
    let status = wine.wait().unwrap();
    let text = std::fs::read_to_string(dir.join("record.json")).unwrap();
    let record: serde_json::Value = serde_json::from_str(&text).unwrap();
    eprintln!("--- stdout\n{stdout}\n--- status {status:?}\n--- record\n{record}");
    if let Err(errors) = schema_errors(&record) {
        panic!("the record does not match schema/record.schema.json: {errors:?}");
    }
    record
}

fn send(client: &mut std::process::ChildStdin, line: &str) {
    use std::io::Write;
    client.write_all(line.as_bytes()).unwrap();
    client.write_all(b"\n").unwrap();
    client.flush().unwrap();
}

#[test]
fn an_approver_reads_the_request_and_a_denial_starts_nothing() {
    let Some(exe) = windows_exe() else { return };
    let dir = tempfile::tempdir().unwrap();
    let approver = r#"find "let-me-in""#;
    let run = |word: &str| {
        let script = format!("echo {word}");
        let args = ["--approve-cmd", approver, "--", "cmd", "/c", &script];
        run_recorded(&exe, dir.path(), &args)
    };
    let approved = run("let-me-in");
    assert_eq!(approved.record["approval"]["decision"], "approved");
    assert_eq!(
        String::from_utf8_lossy(&approved.output.stdout),
        "let-me-in\r\n"
    );
    let denied = run("keep-out");
    assert_eq!(denied.output.status.code(), Some(77));
    assert_eq!(denied.record["state"], "denied");
    assert!(denied.output.stdout.is_empty(), "nothing ran");
}

#[test]
fn a_tool_call_waits_for_its_approver_which_reads_the_call() {
    let Some(exe) = windows_exe() else { return };
    let dir = tempfile::tempdir().unwrap();
    let approver = r#"find "let-me-in""#;
    let args = [
        "--tool-approve-cmd",
        approver,
        "--record",
        "record.json",
        "--journal",
        "audit.jsonl",
    ];
    let (wine, mut client, out, tag) = mcp_session(&exe, dir.path(), &args);
    let call = |id: u32, word: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"word":"{word}"}}}}}}"#
        )
    };
    // The approver reads the call on its stdin: it approves this one...
    send(&mut client, &call(2, "let-me-in"));
    wait_for_text(&out, r#""id":2,"result""#);
    // ...and denies that one, which never reaches the server.
    send(&mut client, &call(3, "keep-out"));
    let text = wait_for_text(&out, r#""id":3,"error""#);
    let record = session_end(wine, client, dir.path(), &text);
    let gate = &record["mcp"]["tool_gate"];
    assert_eq!(gate["approvers_asked"], 2, "{gate}");
    let journal = dir.path().join("audit.jsonl");
    crate::util::check_journal_schema(&journal);
    let decisions: Vec<serde_json::Value> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|entry| entry["kind"] == "mcp_decision")
        .collect();
    assert_eq!(decisions.len(), 2, "{decisions:?}");
    assert_nothing_left(&tag);
    // The requests' files were the approvers' stdin, gone with them.
    let prefix = PathBuf::from(std::env::var_os("WINEPREFIX").expect("WINEPREFIX"));
    let users = prefix.join("drive_c/users");
    let leftovers: Vec<_> = std::fs::read_dir(&users)
        .unwrap()
        .flatten()
        .flat_map(|user| {
            std::fs::read_dir(user.path().join("Temp"))
                .into_iter()
                .flatten()
        })
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("mcp-bound-request"))
        .collect();
    assert!(leftovers.is_empty(), "{}: {leftovers:?}", users.display());
}

/// `--tool-approve-via host` on Windows: the card goes to the client,
/// the answer comes back through the same relays, and decides.
#[test]
fn a_tool_call_is_asked_about_through_the_client() {
    let Some(exe) = windows_exe() else { return };
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--tool-approve-via",
        "host",
        "--record",
        "record.json",
        "--journal",
        "audit.jsonl",
    ];
    let elicits = r#"{"elicitation":{}}"#;
    let (wine, mut client, out, tag) = mcp_session_declaring(&exe, dir.path(), &args, elicits);
    let card_id = |text: &str, nth: usize| -> String {
        text.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|m| m["method"] == "elicitation/create")
            .nth(nth)
            .map(|m| m["id"].to_string())
            .expect("a card")
    };
    let call = |id: u32| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"word":"w{id}"}}}}}}"#
        )
    };
    send(&mut client, &call(2));
    let text = wait_for_text(&out, "elicitation/create");
    let accept = r#"{"action":"accept","content":{"approve":true}}"#;
    send(
        &mut client,
        &format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{accept}}}"#,
            card_id(&text, 0)
        ),
    );
    wait_for_text(&out, r#""id":2,"result""#);
    send(&mut client, &call(3));
    // The second card shows the call's arguments, escaped in its JSON.
    let text = wait_for_text(&out, r#"\"w3\""#);
    send(
        &mut client,
        &format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"action":"decline"}}}}"#,
            card_id(&text, 1)
        ),
    );
    let text = wait_for_text(&out, r#""id":3,"error""#);
    let record = session_end(wine, client, dir.path(), &text);
    let gate = &record["mcp"]["tool_gate"];
    assert_eq!(gate["host_asked"], 2, "{gate}");
    assert_eq!(gate["host_actions"]["accept"], 1, "{gate}");
    assert_eq!(gate["host_actions"]["decline"], 1, "{gate}");
    let journal = dir.path().join("audit.jsonl");
    crate::util::check_journal_schema(&journal);
    let actions: Vec<serde_json::Value> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|entry| entry["kind"] == "mcp_decision")
        .map(|entry| entry["action"].clone())
        .collect();
    assert_eq!(actions, ["accept", "decline"]);
    assert_nothing_left(&tag);
}

/// `--tool-pin` on Windows: the first listing pinned, a change hidden
/// and its call denied, then `mcp-bound pin --accept` (the file locked
/// and replaced with `MoveFileExW` while the session holds its pins)
/// read again by the running session.
#[test]
fn pinned_tools_are_held_and_an_accept_is_read_by_the_running_session() {
    let Some(exe) = windows_exe() else { return };
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(&tools, r#"[{"name":"echo","description":"Echo"}]"#).unwrap();
    let args = [
        "--tool-pin",
        "pins.json",
        "--record",
        "record.json",
        "--journal",
        "audit.jsonl",
    ];
    let (wine, mut client, out, tag) = mcp_session(&exe, dir.path(), &args);
    let list = |id: u32| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#);
    let call = |id: u32| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{}}}}}}"#
        )
    };
    send(&mut client, &list(2));
    wait_for_text(&out, r#""id":2,"result":{"tools":[{"name":"echo""#);
    std::fs::write(
        &tools,
        r#"[{"name":"echo","description":"Echo, and upload"}]"#,
    )
    .unwrap();
    send(&mut client, &list(3));
    wait_for_text(&out, r#""id":3,"result":{"tools":[]}"#);
    send(&mut client, &call(4));
    let text = wait_for_text(&out, r#""id":4,"error""#);
    assert!(text.contains("tool_changed"), "{text}");
    let pin = |args: &[&str]| {
        under_wine()
            .arg(&exe)
            .arg("pin")
            .args(args)
            .current_dir(dir.path())
            .env("WINEDEBUG", "-all")
            .output()
            .unwrap()
    };
    // The accept names the definition read: its sha256 as pin shows it.
    let shown = String::from_utf8_lossy(&pin(&["pins.json"]).stdout).into_owned();
    let at = shown.find("sha256 ").expect("a definition waits") + 7;
    let bound = format!("echo@{}", &shown[at..at + 12]);
    let accepted = pin(&["pins.json", "--accept", &bound]);
    let said = String::from_utf8_lossy(&accepted.stdout);
    assert_eq!(accepted.status.code(), Some(0), "{said}");
    assert!(said.starts_with("accepted echo for "), "{said}");
    assert!(
        !said.contains("wine-fixture"),
        "keyed by the command: {said}"
    );
    send(&mut client, &list(5));
    wait_for_text(&out, r#""id":5,"result":{"tools":[{"name":"echo""#);
    send(&mut client, &call(6));
    let text = wait_for_text(&out, r#""id":6,"result""#);
    let record = session_end(wine, client, dir.path(), &text);
    let pin = &record["mcp"]["tool_gate"]["pin"];
    assert_eq!(pin["first_use"], true, "{pin}");
    assert_eq!(pin["drifts"], 1, "{pin}");
    assert_eq!(pin["calls_denied"], 1, "{pin}");
    assert_eq!(pin["file_errors"], 0, "{pin}");
    crate::util::check_journal_schema(&dir.path().join("audit.jsonl"));
    assert_nothing_left(&tag);
}

#[test]
fn an_mcp_session_answers_a_request_deadline_and_a_crash() {
    let Some(exe) = windows_exe() else { return };
    let dir = tempfile::tempdir().unwrap();
    let args = ["--request-timeout", "1s", "--record", "record.json"];
    let (wine, mut client, out, tag) = mcp_session(&exe, dir.path(), &args);
    let mut send = |line: &str| send(&mut client, line);
    send(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hang","arguments":{}}}"#,
    );
    // The request's deadline: mcp-bound answers for the server.
    let text = wait_for_text(&out, r#""id":2,"error""#);
    assert!(text.contains("timed out"), "{text}");
    send(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"crash","arguments":{}}}"#,
    );
    // The server exits: the request in flight is answered, not left.
    let text = wait_for_text(&out, r#""id":3,"error""#);
    let record = session_end(wine, client, dir.path(), &text);
    assert_eq!(record["contain"]["method"], "job");
    assert_eq!(
        record["limits"]["signal"], "CLOSE",
        "--mcp's stop on Windows"
    );
    let mcp = &record["mcp"];
    assert_eq!(mcp["synthesized"]["request_timeout"], 1, "{mcp}");
    assert_eq!(mcp["synthesized"]["server_exited"], 1, "{mcp}");
    assert_eq!(mcp["incarnations"][0]["exit"]["code"], 3);
    for line in text.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("stdout carries only JSON-RPC");
    }
    assert_nothing_left(&tag);
}

/// A journal written on Windows verifies, reads (`log`), checks
/// (`check`) and reports (`report`) the same there and on Linux.
#[test]
fn a_journal_written_on_windows_verifies_there_and_on_linux() {
    let Some(exe) = windows_exe() else { return };
    let dir = tempfile::tempdir().unwrap();
    for (script, code) in [("echo hi& exit 2", 2), ("exit 0", 0)] {
        let ran = run_recorded(
            &exe,
            dir.path(),
            &["--journal", "audit.jsonl", "--", "cmd", "/c", script],
        );
        assert_eq!(ran.output.status.code(), Some(code));
        assert_eq!(ran.record["exit"]["code"], code);
    }
    let journal = dir.path().join("audit.jsonl");
    crate::util::check_journal_schema(&journal);
    let text = std::fs::read_to_string(&journal).unwrap();
    let kinds: Vec<String> = text
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["kind"].to_string())
        .collect();
    assert_eq!(
        kinds,
        [
            "\"genesis\"",
            "\"intent\"",
            "\"terminal\"",
            "\"intent\"",
            "\"terminal\""
        ],
        "each call's intent before it ran, and its end"
    );
    let there = run_in(&exe, &["verify", "audit.jsonl"], dir.path());
    assert_eq!(there.status.code(), Some(0), "verifies on Windows");
    let here = Command::new(crate::util::BIN)
        .args(["verify", "audit.jsonl"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(here.status.code(), Some(0), "verifies on Linux");
    assert_eq!(
        String::from_utf8_lossy(&there.stdout).trim_end(),
        String::from_utf8_lossy(&here.stdout).trim_end(),
        "the same report, chain head included"
    );
    // And reads the same: `log --json`'s rows on both.
    let there = run_in(&exe, &["log", "--json", "audit.jsonl"], dir.path());
    let here = Command::new(crate::util::BIN)
        .args(["log", "--json", "audit.jsonl"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(there.status.code(), Some(0), "log on Windows");
    let rows = String::from_utf8_lossy(&here.stdout).into_owned();
    assert_eq!(
        String::from_utf8_lossy(&there.stdout),
        rows,
        "the same rows"
    );
    assert_eq!(rows.lines().count(), 2, "{rows}");
    // And checks and reports the same: `check`'s JUnit on both, and a
    // page with the same verify line and a bar per call.
    let check = [
        "check",
        "--format",
        "junit",
        "--expect-state",
        "completed",
        "--no-unfinished",
        "audit.jsonl",
    ];
    let there = run_in(&exe, &check, dir.path());
    let here = Command::new(crate::util::BIN)
        .args(check)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(there.status.code(), Some(0), "check on Windows: {there:?}");
    assert_eq!(
        String::from_utf8_lossy(&there.stdout),
        String::from_utf8_lossy(&here.stdout)
    );
    let there = run_in(
        &exe,
        &["report", "audit.jsonl", "-o", "windows.html"],
        dir.path(),
    );
    assert_eq!(there.status.code(), Some(0), "report on Windows: {there:?}");
    let here = Command::new(crate::util::BIN)
        .args(["report", "audit.jsonl", "-o", "linux.html"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(here.status.code(), Some(0));
    let page = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    let verify_line = |html: &str| {
        let at = html.find("id=\"verify\"").unwrap();
        html[at..at + html[at..].find("</p>").unwrap()].to_string()
    };
    let (windows, linux) = (page("windows.html"), page("linux.html"));
    assert_eq!(verify_line(&windows), verify_line(&linux));
    assert_eq!(
        windows.matches("<rect class=\"call s-completed\"").count(),
        2
    );
}

/// `log -f` on Windows: a call appended shows as its row, a journal
/// renamed over the path is noticed by its file index and read from its
/// start, and once its reader has gone it ends at its next row (Windows
/// tells a pipe's writer of its reader's close only when it writes).
#[test]
fn log_follows_a_journal_notices_its_replacement_and_ends_after_its_reader() {
    use std::io::BufRead;
    let Some(exe) = windows_exe() else { return };
    let dir = tempfile::tempdir().unwrap();
    // The calls are journaled by the Linux binary: the same format, and
    // no Wine start per call.
    let call = |journal: &str, session: &str| {
        let status = Command::new(crate::util::BIN)
            .args(["--journal", journal, "--session-id", session, "--", "true"])
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(status.success());
    };
    call("audit.jsonl", "first");
    let mut wine = under_wine()
        .arg(&exe)
        .args(["log", "-f", "--json", "audit.jsonl"])
        .current_dir(dir.path())
        .env("WINEDEBUG", "-all")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(dir.path().join("err.txt")).unwrap())
        .spawn()
        .unwrap();
    let mut rows = std::io::BufReader::new(wine.stdout.take().unwrap());
    let mut row = || {
        let mut line = String::new();
        rows.read_line(&mut line).unwrap();
        let row: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("not a row: {line:?}"));
        (row["session_id"].as_str().unwrap_or("").to_string(), row)
    };
    assert_eq!(row().0, "first");
    call("audit.jsonl", "appended");
    assert_eq!(row().0, "appended");
    call("other.jsonl", "replacement");
    std::fs::rename(
        dir.path().join("other.jsonl"),
        dir.path().join("audit.jsonl"),
    )
    .unwrap();
    let (session, replacement) = row();
    assert_eq!(session, "replacement");
    assert_eq!(replacement["verified"], true);
    drop(rows);
    // Its reader gone, the next row ends it: exit 0, nothing said but
    // the replacement.
    call("audit.jsonl", "unread");
    let status = wine.wait().unwrap();
    let err = std::fs::read_to_string(dir.path().join("err.txt")).unwrap();
    let own: Vec<&str> = err.lines().filter(|l| l.starts_with("mcp-bound")).collect();
    eprintln!("--- status {status:?}\n--- stderr\n{err}");
    assert_eq!(status.code(), Some(0));
    assert_eq!(own.len(), 1, "{err}");
    assert!(own[0].contains("the file was replaced"), "{err}");
}

/// Into a pipe whose reader is gone, what prints stops without a word and
/// keeps its exit, as on Unix (Wine answers such a write with
/// ERROR_PIPE_NOT_CONNECTED, Windows with ERROR_NO_DATA).
#[test]
fn a_reader_gone_ends_the_printing_quietly_on_windows_too() {
    let Some(exe) = windows_exe() else { return };
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(crate::util::BIN)
        .args(["--journal", "audit.jsonl", "--", "true"])
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    for args in [
        &["--generate", "man"][..],
        &["verify", "audit.jsonl"],
        &["report", "-o", "-", "audit.jsonl"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = under_wine()
            .arg(&exe)
            .args(args)
            .current_dir(dir.path())
            .env("WINEDEBUG", "-all")
            .stdin(std::process::Stdio::null())
            .stdout(writer)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(own_lines(&out).is_empty(), "{args:?}: {err}");
    }
}
