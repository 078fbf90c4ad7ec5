//! The integration tests, as one crate: a module per topic, and `util`,
//! the harness they share (the real binary on tiny fixtures, the record
//! and journal checked against the schemas, nothing left running),
//! compiled once instead of once per test binary. They drive Unix
//! processes (fork, signals, /proc): on Windows the crate is empty, and
//! the Windows suite runs the Windows binary under Wine instead.

#![cfg(unix)]

#[macro_use]
mod util;

mod approval;
mod approval_once;
mod audit;
mod check;
mod contain;
mod debug_window;
mod frozen;
mod gate_parsers;
mod generated_docs;
mod hardening;
mod host_approval;
mod interop;
mod journal;
mod kinds;
mod limits;
mod log;
mod mcp_mode;
mod otel;
mod record_files;
mod repeats;
mod report;
mod session;
mod stderr_log;
mod stdout_reader;
mod structure;
mod supervisor;
mod tool_gate;
mod tool_pin;
mod untrusted;
mod usage;
mod wine;
