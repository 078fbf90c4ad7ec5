//! The mcp-bound binary: parse, dispatch, map errors to exit codes.

use std::io::Write;

use mcp_bound::cli::{self, Parsed};
use mcp_bound::redact::Redactor;
use mcp_bound::settings::Settings;

/// Errors that reach main can quote argv or a bad value: mask them with
/// the built-in patterns, as every other line mcp-bound writes.
fn complain(prefix: &str, err: &dyn std::fmt::Display) {
    let line = format!("{prefix}: {err}");
    eprintln!("{}", Redactor::default().redact(&line));
}

fn main() {
    let code = match cli::parse(std::env::args_os()) {
        Ok(Parsed::Print(text)) => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            0
        }
        Ok(Parsed::Verify(args)) => mcp_bound::verify::run(&args).unwrap_or_else(|err| {
            complain("mcp-bound verify", &err);
            err.exit_code()
        }),
        Ok(Parsed::Run(cli)) => mcp_bound::run::run(Settings::from(&*cli)).unwrap_or_else(|err| {
            complain("mcp-bound", &err);
            err.exit_code()
        }),
        Err(err) => {
            complain("mcp-bound", &err);
            err.exit_code()
        }
    };
    std::process::exit(code);
}
