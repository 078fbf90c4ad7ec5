//! What every command that prints does when its stdout fails. A reader
//! that went away (`| head`, `| grep -q`: EPIPE) took what it wanted:
//! the printing stops without a word and the exit status is the one the
//! command would have had, so that `set -o pipefail` holds. Any other
//! failure (a full disk) is one line on stderr and the I/O error's exit.
//! `log -f` whose reader goes away while it waits ends then, not at its
//! next row.

use crate::util;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The printing commands on `journal`, with the exit each gives it.
fn printing(journal: &Path, broken: &Path) -> Vec<(Vec<String>, i32)> {
    let j = journal.to_str().unwrap();
    let b = broken.to_str().unwrap();
    let cases: &[(&[&str], i32)] = &[
        (&["--generate", "man"], 0),
        (&["--generate", "complete-bash"], 0),
        (&["--help"], 0),
        (&["verify", j], 0),
        (&["verify", "--json", j], 0),
        (&["verify", b], 1),
        (&["log", j], 0),
        (&["log", "--json", j], 0),
        (&["log", "--sessions", j], 0),
        (&["log", "--requests", j], 0),
        (&["log", b], 1),
        (&["check", "--expect-tool", "read_file", j], 0),
        (
            &["check", "--format", "junit", "--expect-tool", "nope", j],
            1,
        ),
        (&["report", "-o", "-", j], 0),
        (&["report", "-o", "-", b], 1),
    ];
    cases
        .iter()
        .map(|(args, code)| (args.iter().map(|a| a.to_string()).collect(), *code))
        .collect()
}

/// The binary with `args`, its stdout `stdout`: what it did.
fn into(stdout: impl Into<Stdio>, args: &[String]) -> std::process::Output {
    Command::new(util::BIN)
        .args(args)
        .stdout(stdout)
        .output()
        .unwrap()
}

fn shown(args: &[String], out: &std::process::Output) -> String {
    format!(
        "mcp-bound {}: {}\nstderr: {}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_reader_gone_ends_the_printing_quietly_and_keeps_the_exit() {
    let dir = tempfile::tempdir().unwrap();
    let journal = crate::log::written(dir.path());
    let broken = crate::log::broken(dir.path(), &journal);
    for (args, code) in printing(&journal, &broken) {
        // A pipe whose reader is gone before the first byte: every write
        // is EPIPE.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = into(writer, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{}", shown(&args, &out));
        assert!(
            !err.contains("Broken pipe") && !err.contains("panicked"),
            "{}",
            shown(&args, &out)
        );
    }
}

#[test]
fn any_other_stdout_failure_is_one_line_and_the_io_exit() {
    let dir = tempfile::tempdir().unwrap();
    let journal = crate::log::written(dir.path());
    let broken = crate::log::broken(dir.path(), &journal);
    for (args, _) in printing(&journal, &broken) {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = into(full, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        // A subcommand's I/O error is 2, as verify's; the wrapper's own
        // (--generate, --help) is 125.
        let code = if args[0].starts_with("--") { 125 } else { 2 };
        assert_eq!(out.status.code(), Some(code), "{}", shown(&args, &out));
        let said: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("No space left on device"))
            .collect();
        assert_eq!(said.len(), 1, "{}", shown(&args, &out));
        assert!(
            said[0].starts_with("mcp-bound") && said[0].contains("stdout"),
            "{}",
            shown(&args, &out)
        );
        assert!(!err.contains("panicked"), "{}", shown(&args, &out));
    }
}

#[test]
fn a_follower_whose_reader_goes_while_it_waits_ends_then() {
    let dir = tempfile::tempdir().unwrap();
    let journal = crate::log::written(dir.path());
    let mut child = Command::new(util::BIN)
        .args(["log", "-f", "--json"])
        .arg(&journal)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut rows = BufReader::new(child.stdout.take().unwrap());
    // Its four rows are the readiness: it now waits for the journal to grow.
    for _ in 0..4 {
        let mut row = String::new();
        rows.read_line(&mut row).unwrap();
        assert!(row.starts_with('{'), "{row}");
    }
    drop(rows);
    // Nothing is appended: only the reader's going can end it.
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let out = child.wait_with_output().unwrap();
        let _ = done.send(out);
    });
    let out = match ended.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => out,
        Err(_) => {
            let _ = Command::new("pkill")
                .args(["-f", journal.to_str().unwrap()])
                .status();
            panic!("log -f still followed a minute after its reader went away");
        }
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{}: {err}", out.status);
    assert!(err.is_empty(), "{err}");
}
