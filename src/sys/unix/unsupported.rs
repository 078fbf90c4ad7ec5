//! The backend of a Unix with none of its own (neither Linux nor macOS):
//! mcp-bound compiles there and refuses to run, saying why
//! (`BACKEND.unsupported`), before anything is started. Nothing here
//! pretends: each function that would have to promise containment says
//! `Unsupported`, and the rest is the plain POSIX call.

use super::*;

pub use super::fallbacks::*;

/// Nothing: mcp-bound refuses to run here.
pub const BACKEND: crate::sys::Backend = crate::sys::Backend {
    os: std::env::consts::OS,
    unsupported: Some(
        "no backend for this system: mcp-bound contains a tree on Linux and macOS only",
    ),
    subreaper: false,
    parent_death_signal: false,
    cgroup: false,
    real_time_signals: false,
    job: false,
    wide_exit_codes: false,
    numbered_descriptors: true,
    terminal: true,
    user_signals: true,
};

/// poll(2), as POSIX gives it.
#[derive(Default)]
pub struct Poller;

impl Poller {
    pub fn new() -> Poller {
        Poller
    }

    pub fn wait(
        &mut self,
        interests: &[Interest],
        ready: &mut Vec<Ready>,
        timeout: Option<std::time::Duration>,
    ) -> io::Result<()> {
        poll(interests, ready, timeout)
    }

    pub fn forget(&mut self) {}
}

pub(in crate::sys) use super::poll::poll as wait_once;

use crate::sys::refusing::unsupported;
pub use crate::sys::refusing::{children_of_self, descendants, proc_info};

/// No process table here: no mark is found.
pub const MARKS: Option<crate::sys::PidsWithEnv> = None;

pub fn sync_durable(file: &File) -> io::Result<()> {
    file.sync_all()
}

pub fn null_device() -> Option<u64> {
    None
}
