//! The least a stdout relay can do (run by bench/run, not a test): spawn the
//! helper, then copy its stdout to ours with blocking reads and writes. No
//! poll, no stderr, no signals, no record. The MCP round-trip row measures
//! mcp-bound against this floor as well as against the direct server, so a
//! cost that any extra hop pays is told apart from one mcp-bound adds.
//!
//! Usage: relay HELPER [ARGS...]

use std::io::{Read, Write};
use std::process::{Command, ExitCode, Stdio};

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some((program, args)) = argv.split_first() else {
        eprintln!("usage: relay HELPER [ARGS...]");
        return ExitCode::from(2);
    };
    let mut child = match Command::new(program)
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            eprintln!("relay: {program}: {e}");
            return ExitCode::from(127);
        }
    };
    let mut from = child.stdout.take().expect("stdout is piped");
    let mut to = std::io::stdout().lock();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).and_then(|()| to.flush()).is_err() {
                    break;
                }
            }
        }
    }
    drop(from);
    match child.wait() {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}
