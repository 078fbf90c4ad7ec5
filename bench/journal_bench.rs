//! Journal benchmark (run by bench/run, not a test): append cost per entry
//! with and without fdatasync, and verify throughput in entries per second.
//!
//! Usage: journal_bench DIR [ENTRIES]

use std::path::PathBuf;
use std::time::Instant;

use mcp_bound::journal::{self, Entry, Intent, Journal, Key, StreamFacts, Terminal};
use mcp_bound::record::{Exit, Limits, State, StreamEnd};

fn intent(i: usize) -> Intent {
    Intent {
        call_id: format!("c_{i:016x}"),
        session_id: Some("bench-session".into()),
        argv: vec![
            "ssh".into(),
            "build-host".into(),
            "make".into(),
            "-j8".into(),
        ],
        cwd: Some("/home/agent/project".into()),
        uid: 1000,
        host: Some("agent-host".into()),
        pid: 4242,
        limits: Limits {
            timeout_ms: Some(30_000),
            signal: "TERM".into(),
            grace_ms: 5000,
            wait_delay_ms: 1000,
            head_bytes: 0,
            tail_bytes: 16384,
            excerpt_bytes: 4096,
            stdout_guard: mcp_bound::record::StdoutGuard::Off,
            max_message_bytes: 16 << 20,
            live_rate: None,
            live_burst: None,
            stdin_close_grace_ms: None,
            redact_patterns: 0,
            rlimits: Default::default(),
        },
        tool_gate: None,
    }
}

fn terminal(i: usize) -> Terminal {
    Terminal {
        call_id: format!("c_{i:016x}"),
        state: State::Completed,
        exit: Some(Exit::Code {
            code: 0,
            ntstatus: None,
        }),
        exit_code: Some(0),
        cancel_reason: None,
        cancel_signal: None,
        signals: Vec::new(),
        stream_end: Some(StreamEnd::Eof),
        descendants_signalled: 0,
        duration_ms: Some(1234),
        streams: StreamFacts {
            stdout_bytes: 2048,
            stderr_bytes_seen: 512,
            stderr_bytes_retained: 512,
            stderr_truncated: false,
        },
        excerpt: Some("make: Nothing to be done for 'all'.\n".into()),
        usage: None,
        repeats: Vec::new(),
        debug_windows: None,
    }
}

/// A journal of `entries` entries (each call's intent, then its terminal).
fn write_journal(path: &std::path::Path, entries: usize) {
    let _ = std::fs::remove_file(path);
    let mut writer = Journal::new(path.to_path_buf(), Key::Plain);
    writer.sync = false;
    for i in 0..entries / 2 {
        writer.append(Entry::Intent(&intent(i))).unwrap();
        writer.append(Entry::Terminal(&terminal(i))).unwrap();
    }
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    // `journal_bench write PATH ENTRIES`: only write a journal (bench/run
    // measures verify's peak RSS on it).
    if args.peek().map(String::as_str) == Some("write") {
        args.next();
        let path = PathBuf::from(
            args.next()
                .expect("usage: journal_bench write PATH ENTRIES"),
        );
        let entries = args.next().expect("ENTRIES").parse().expect("a count");
        write_journal(&path, entries);
        return;
    }
    let dir = PathBuf::from(args.next().expect("usage: journal_bench DIR [ENTRIES]"));
    let entries: usize = args.next().map_or(200_000, |n| n.parse().expect("a count"));

    for (label, sync, count) in [
        ("append_synced", true, 300),
        ("append_unsynced", false, 20_000),
    ] {
        let path = dir.join(format!("{label}.jsonl"));
        let _ = std::fs::remove_file(&path);
        let mut writer = Journal::new(path, Key::Plain);
        writer.sync = sync;
        let start = Instant::now();
        for i in 0..count {
            writer.append(Entry::Intent(&intent(i))).unwrap();
        }
        let per_entry = start.elapsed().as_secs_f64() / count as f64;
        println!("{label}_us {:.1}", per_entry * 1e6);
    }

    let path = dir.join("verify.jsonl");
    write_journal(&path, entries);
    let entries = entries / 2 * 2;
    let bytes = std::fs::metadata(&path).unwrap().len();
    let mut best = f64::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        let report = journal::verify(&path, None, None).unwrap();
        best = best.min(start.elapsed().as_secs_f64());
        assert!(report.ok, "{report:?}");
        assert_eq!(report.entries as usize, entries + 1);
    }
    println!("verify_entries_per_s {:.0}", (entries + 1) as f64 / best);
    println!("verify_mb_per_s {:.0}", bytes as f64 / best / 1e6);
    println!("entry_bytes {}", bytes / (entries as u64 + 1));
}
