//! mcp-bound: run one helper under a bounded supervisor and write a truthful
//! lifecycle record. [`main`] is the whole program; `main.rs` only calls
//! it. ARCHITECTURE.md maps the modules.
//!
//! Public for the documentation generator, the tests, the fuzz targets and
//! the benchmarks: `docs` (the help, the man page and the schemas),
//! `record` (the record model), `journal` (append and verify), `capture`
//! and `guard` (fuzzed), `sys` (the tests hold a journal's lock with it),
//! and [`would_run`]. Everything else is crate-private.

#![warn(unreachable_pub)]

use std::ffi::OsString;

pub mod capture;
pub mod docs;
pub mod guard;
pub mod journal;
pub mod record;
pub mod sys;

mod approve;
mod check;
mod child;
mod cli;
mod contain;
mod debug_window;
mod diagnostics;
mod error;
mod framing;
mod ids;
mod live;
mod log;
mod markup;
mod otel;
mod pin;
mod printed;
mod redact;
mod repeats;
mod replace;
mod report;
mod request_id;
mod rlimit;
mod run;
mod session;
mod settings;
mod shown;
mod signals;
mod sink;
mod stderr_log;
mod supervise;
mod termination;
mod trace_context;
mod trust;
mod units;
mod verify;

/// The redactor, for the capture's fuzz target (`Capture::excerpt` masks).
pub use redact::Redactor;

/// For the fuzz targets only: what the session does with one client line.
#[cfg(feature = "fuzzing")]
pub use session::fuzz_client_line;

/// Errors that reach the top can quote argv or a bad value: mask them
/// with the built-in patterns, as every other line mcp-bound writes.
fn complain(prefix: &str, err: &dyn std::fmt::Display) {
    let line = format!("{prefix}: {err}");
    eprintln!("{}", redact::Redactor::default().redact(&line));
}

/// Parse `args`, run the call or the verify command, and return the exit
/// code (usage errors: one line and 125; verify's own: 2).
pub fn main<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    // A watchdog's life after mcp-bound's death: a waiter's clean-up
    // (contain::orphaned), or the Windows heir (run::heir).
    if args
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        == Some(std::ffi::OsStr::new(contain::ORPHANED))
    {
        return match args.get(1).and_then(|mode| mode.to_str()) {
            Some("heir") => run::heir(&args),
            _ => contain::orphaned(&args),
        };
    }
    match cli::parse(docs::command, args) {
        Ok(cli::Parsed::Print(text)) => match printed::print(&text) {
            Ok(()) => 0,
            Err(err) => {
                complain("mcp-bound: stdout", &err);
                error::code::OWN_FAILURE
            }
        },
        Ok(cli::Parsed::Generate(what)) => match printed::print(&docs::generate(what)) {
            Ok(()) => 0,
            Err(err) => {
                complain("mcp-bound --generate: stdout", &err);
                error::code::OWN_FAILURE
            }
        },
        Ok(cli::Parsed::Verify(args)) => verify::run(&verify::VerifyCommand::from(args))
            .unwrap_or_else(|err| {
                complain("mcp-bound verify", &err);
                err.exit_code()
            }),
        Ok(cli::Parsed::Log(args)) => {
            log::run(&log::LogCommand::from(args)).unwrap_or_else(|err| {
                complain("mcp-bound log", &err);
                err.exit_code()
            })
        }
        Ok(cli::Parsed::Check(args)) => check::run(&check::CheckCommand::from(args))
            .unwrap_or_else(|err| {
                complain("mcp-bound check", &err);
                err.exit_code()
            }),
        Ok(cli::Parsed::Report(args)) => report::run(&report::ReportCommand::from(args))
            .unwrap_or_else(|err| {
                complain("mcp-bound report", &err);
                err.exit_code()
            }),
        Ok(cli::Parsed::Pin(args)) => {
            pin::run(&pin::PinCommand::from(args)).unwrap_or_else(|err| {
                complain("mcp-bound pin", &err);
                err.exit_code()
            })
        }
        Ok(cli::Parsed::Run { cli, given }) => {
            let env = |name: &str| std::env::var(name).ok();
            let code = settings::Settings::resolve(&cli, &given, &env)
                .and_then(|settings| {
                    drop(cli);
                    run_here(settings)
                })
                .unwrap_or_else(|err| {
                    complain("mcp-bound", &err);
                    err.exit_code()
                });
            // Where a thread writes our stdout (Windows), its last write
            // is given a moment to land.
            if let Some(relays) = sys::RELAYS {
                (relays.finish)(std::time::Duration::from_secs(2));
            }
            code
        }
        Err(err) => {
            complain("mcp-bound", &err);
            err.exit_code()
        }
    }
}

/// The call, where this system has a backend; where it has none, one
/// line says so and nothing is started.
fn run_here(settings: settings::Settings) -> Result<i32, error::Error> {
    match sys::BACKEND.unsupported {
        Some(why) => Err(error::NotStarted::nothing(why).into()),
        None => run::run(settings),
    }
}

/// Whether `args` would run a helper: parsed and resolved as a call's
/// would be (every rule checked, with this environment), and nothing
/// started. `Ok(false)`: they ask for something else (a subcommand,
/// `--help`); `Err`: the one line a call would say.
pub fn would_run<I, T>(args: I) -> Result<bool, String>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let env = |name: &str| std::env::var(name).ok();
    match cli::parse(docs::command, args).map_err(|err| err.to_string())? {
        cli::Parsed::Run { cli, given } => settings::Settings::resolve(&cli, &given, &env)
            .map(|_| true)
            .map_err(|err| err.to_string()),
        _ => Ok(false),
    }
}
