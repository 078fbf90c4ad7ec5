//! What the backends' answers are made of: plain data, the same on every
//! system, so that the rest of mcp-bound reads them one way.

use super::fd::{BorrowedFd, RawFd};

/// What the caller wants to hear about one descriptor. A descriptor with
/// neither flag set still reports hang-up and error, which is how a closed
/// reader of our stdout is noticed without writing to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interest {
    pub fd: RawFd,
    pub read: bool,
    pub write: bool,
    /// Also report the peer's end of writing as a hang-up: a socket shut
    /// down with SHUT_WR never reports POLLHUP, only POLLRDHUP (Linux).
    pub peer_closed: bool,
}

impl Interest {
    pub fn new(fd: RawFd, read: bool, write: bool) -> Interest {
        Interest {
            fd,
            read,
            write,
            peer_closed: false,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ready {
    pub readable: bool,
    pub writable: bool,
    pub hangup: bool,
    pub error: bool,
}

/// What arrived at the signal source since the last look
/// (`SignalPipe::take`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pending {
    /// A child may have exited (SIGCHLD; on Windows a job's news).
    pub child_changed: bool,
    /// Terminating signals (on Windows, console events under the C
    /// runtime's numbers) with how many of each arrived.
    pub terminating: Vec<(i32, u32)>,
    /// SIGUSR1s: each opens or closes the debug window. mcp-bound's
    /// own, never forwarded, never an end (none on Windows).
    pub debug_toggles: u32,
}

/// One process, as the process table shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub zombie: bool,
    /// When it started, in the table's own unit (clock ticks since boot
    /// from /proc, microseconds since the epoch from libproc), compared
    /// only with another start from the same table: with the pid, this
    /// names one process even after its pid is reused.
    pub start: u64,
}

/// How a child ended, as the system reports it (waitid(2) on Unix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildExit {
    Code(i32),
    Signal { signo: i32, core_dumped: bool },
}

/// What a waiter does once mcp-bound is gone, made before it starts and
/// never changed after (it shares mcp-bound's memory): a first strike at
/// the tree, then an exec of `exe` with `argv0 mode target pgid mark`, a fresh
/// process that ends the rest and removes the cgroup.
pub struct Orphaned {
    /// cgroup.kill of the tree's cgroup.
    pub kill: Option<std::ffi::CString>,
    pub exe: std::ffi::CString,
    pub argv0: std::ffi::CString,
    pub mode: std::ffi::CString,
    pub target: std::ffi::CString,
    /// The call's mark, last (the approvers carry it).
    pub mark: std::ffi::CString,
}

/// How a child is set up before it runs the program (on Unix, between
/// fork and exec), besides its own process group and the default signal
/// state.
pub struct Setup<'a> {
    /// Descriptors for 0, 1 and 2 (`None`: inherited).
    pub stdio: [Option<BorrowedFd<'a>>; 3],
    /// Die with this parent: only where the system has a parent-death
    /// signal (`BACKEND.parent_death_signal`).
    pub die_with: Option<i32>,
    pub rlimits: &'a [crate::rlimit::Rlimit],
    /// The cgroup to start in: its directory and its `cgroup.procs`.
    pub cgroup: Option<(BorrowedFd<'a>, &'a std::ffi::CStr)>,
    /// Fork and write `cgroup.procs`, rather than clone into the cgroup.
    pub move_into_cgroup: bool,
}
