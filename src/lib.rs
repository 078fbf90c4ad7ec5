//! mcp-bound: run one helper under a bounded supervisor and write a truthful
//! lifecycle record. The binary (`main.rs`) only parses and dispatches.
//!
//! Pure modules (no I/O, tested without processes): `capture`,
//! `termination`, `record`, `units`, `guard` (JSON-RPC line framing) and
//! `live` (the live stderr budget) and `redact` (masking secrets). OS-facing: `signals`, `child`, `sys`
//! (the only users of nix), `sink`, `pipe_tail` (the stderr flood path). `supervise` is the one poll loop; `run`
//! orchestrates one call. `journal` appends and verifies the audit chain;
//! `verify` is its command. `approve` is the approval gate before dispatch.

pub mod approve;
pub mod capture;
pub mod child;
pub mod cli;
pub mod error;
pub mod guard;
pub mod ids;
pub mod journal;
pub mod live;
pub mod pipe_tail;
pub mod record;
pub mod redact;
pub mod run;
pub mod settings;
pub mod signals;
pub mod sink;
pub mod supervise;
pub mod sys;
pub mod termination;
pub mod units;
pub mod verify;
