//! The mcp-bound binary: parse, dispatch, map errors to exit codes.

use std::io::Write;

use mcp_bound::cli::{self, Parsed};

fn main() {
    let code = match cli::parse(std::env::args_os()) {
        Ok(Parsed::Print(text)) => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            0
        }
        Ok(Parsed::Verify(args)) => mcp_bound::verify::run(&args).unwrap_or_else(|err| {
            eprintln!("mcp-bound verify: {err}");
            err.exit_code()
        }),
        Ok(Parsed::Run(args)) => mcp_bound::run::run(*args).unwrap_or_else(|err| {
            eprintln!("mcp-bound: {err}");
            err.exit_code()
        }),
        Err(err) => {
            eprintln!("mcp-bound: {err}");
            err.exit_code()
        }
    };
    std::process::exit(code);
}
