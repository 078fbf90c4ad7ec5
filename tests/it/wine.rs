//! The Windows binary, run under Wine. `.ci/windows-build` cross-builds
//! it with MinGW and makes a Wine prefix; MCP_BOUND_WINDOWS_EXE names the
//! .exe and WINEPREFIX the prefix. Without them each test says so and
//! passes, unless MCP_BOUND_WINE=require (as in CI).
//!
//! The backend's own pieces (the job that holds the tree, the command
//! line's rules) are unit-tested there too: `unit-tests.exe`, beside the
//! binary, is the library's test executable. Until the backend lands,
//! what holds for the binary is the command line, the refusal, and
//! `verify`: mcp-bound parses and checks its options as
//! on Unix, refuses to run a helper, saying why, with nothing started,
//! and verifies a journal written on another system. Wine
//! is not Windows: the README's platform table says what was seen only
//! here.

use std::path::{Path, PathBuf};

use crate::util::Call;
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
    let output = under_wine()
        .arg(exe)
        .args(args)
        .current_dir(dir)
        .env("WINEDEBUG", "-all")
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
fn without_a_backend_a_helper_is_refused_and_nothing_runs() {
    let Some(exe) = windows_exe() else { return };
    let output = run(&exe, &["--", "cmd", "/c", "echo", "RAN"]);
    assert_eq!(output.status.code(), Some(125), "the refusal's status");
    assert!(
        !String::from_utf8_lossy(&output.stdout).contains("RAN"),
        "the helper never ran"
    );
    let said = own_lines(&output);
    assert_eq!(said.len(), 1, "one line: {said:?}");
    assert!(said[0].contains("no Windows backend yet"), "{said:?}");
    assert!(said[0].contains("nothing was started"), "{said:?}");
}

#[test]
fn options_are_checked_as_on_unix_before_anything_else() {
    let Some(exe) = windows_exe() else { return };
    for (args, expected) in [
        (&["--timeout", "abc", "--", "cmd"][..], "--timeout"),
        (&["--signal", "CLOSE", "--", "cmd"][..], "--mcp"),
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
