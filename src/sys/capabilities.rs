//! What only some backends can do, as values a backend has or has not:
//! each backend sets every constant below to `Some` (the code that does
//! it) or `None` (this system cannot), and a caller that needs one reads
//! it and takes another way, or refuses saying why. No backend has a
//! function that takes what it is asked and ignores it.
//!
//! | constant | `Some` on | what it is |
//! |---|---|---|
//! | `FORK` | Unix | a fork that shares nothing, for the watchdog that writes last words |
//! | `WAITER` | Linux | a watchdog that shares our memory (CLONE_VM) |
//! | `HEIR` | Windows | the watchdog as mcp-bound started again, handed each helper's job |
//! | `RLIMITS` | Unix | per-process resource limits |
//! | `RELAYS` | Windows | a thread for each of the host's handles that cannot be overlapped |
//! | `CGROUPS` | Linux | cgroup v2: finding its mount, the right to move into one |
//! | `JOBS` | Windows | a Job Object for each helper's tree: its limits, its end |
//! | `COMMAND_LINE` | Windows | one string a program parses back: what it cannot carry |
//! | `MARKS` | Unix | the processes whose environment holds an entry (the tree's mark) |
//! | `MOVER` | Linux | moving bytes inside the kernel (splice) |

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::Path;
use std::time::Duration;

use super::fd::{BorrowedFd, OwnedFd, RawFd};
use super::{JobLimits, Orphaned};

/// A watchdog a backend starts its own way (a waiter, an heir), as
/// mcp-bound holds it.
pub trait Watcher {
    fn pid(&self) -> u32;
    /// Our end of its line.
    fn writer(&self) -> &File;
    /// Whether it writes the last words of a killed mcp-bound (an heir)
    /// or only ends the tree (a waiter).
    fn speaks(&self) -> bool;
    /// What hands it each helper's group, where it must be handed one
    /// (an heir, which holds each job); None where it is told a number.
    fn hand(&self) -> Option<io::Result<Box<dyn Hand>>>;
    /// Say `done`, close the line, and wait for it to exit.
    fn finish(self: Box<Self>, done: &[u8]);
}

/// What puts a helper's group (on Windows, its job) into the watchdog's
/// hands: the value the watchdog then knows it by.
pub trait Hand {
    fn group(&self, pid: i32) -> io::Result<i32>;
}

/// A fork that shares nothing with us (Unix).
#[derive(Clone, Copy)]
pub struct Fork {
    /// Fork: Some(child's pid) in the parent, None in the child.
    pub fork: fn() -> io::Result<Option<i32>>,
    /// In the forked child: a session of its own, every descriptor but
    /// `keep` closed, the signals that end a session ignored.
    pub detach: fn(RawFd),
}

/// Start a waiter (Linux): it execs `plan` once we are gone.
pub type StartWaiter = fn(Orphaned) -> io::Result<Box<dyn Watcher>>;

/// The heir (Windows): mcp-bound started again as the watchdog.
#[derive(Clone, Copy)]
pub struct Heirs {
    /// Start it as `argv0 heir HANDLE`.
    pub start: fn(&str) -> io::Result<Box<dyn Watcher>>,
    /// In the heir: its line, from the value on its command line.
    pub line: fn(&str) -> io::Result<File>,
    /// In the heir: let go of the group a value names, once its helper
    /// was reaped.
    pub release: fn(i32),
    /// In the heir, once mcp-bound is gone: end the group a value names
    /// and wait at most so long for it to be empty; whether it is.
    pub end: fn(i32, Duration) -> bool,
}

/// Per-process resource limits (setrlimit(2)).
#[derive(Clone, Copy)]
pub struct Rlimits {
    /// Set one on this process (a child before exec).
    pub set: fn(&crate::rlimit::Rlimit) -> io::Result<()>,
    /// The hard limit of a resource now, None for unlimited.
    pub hard: fn(crate::rlimit::Resource) -> Option<u64>,
    /// Whether we may raise a hard limit to this one.
    pub may_set: fn(&crate::rlimit::Rlimit) -> bool,
}

/// Relays for the host's handles (Windows): a thread does the one
/// blocking read or write the loop asked for.
#[derive(Clone, Copy)]
pub struct Relays {
    /// Read our input descriptor through a relay, which this sets up:
    /// whether it is.
    pub input: fn(RawFd) -> bool,
    /// Before we exit: give the relays' last writes so long to finish.
    pub finish: fn(Duration),
}

/// cgroup v2 (Linux).
#[derive(Clone, Copy)]
pub struct Cgroups {
    /// Whether a directory is a cgroup v2 mount.
    pub is_mount: fn(&Path) -> bool,
    /// Whether we may write a file (a `cgroup.procs`), as the kernel will
    /// judge it.
    pub may_write: fn(&Path) -> io::Result<()>,
}

/// A Job Object for each helper's tree (Windows).
#[derive(Debug, Clone, Copy)]
pub struct Jobs {
    /// Whether a job takes these limits, asked of a job made for the
    /// question before anything runs.
    pub try_limits: fn(&JobLimits) -> io::Result<()>,
    /// End every process in helper `pid`'s job at once: whether it was
    /// ended (false once the job is gone).
    pub end: fn(i32) -> bool,
}

/// Why an argv cannot be passed as one command line safely, if it cannot.
pub type RefusedCommand = fn(&[OsString]) -> Option<String>;

/// The processes whose environment holds `entry` exactly.
pub type PidsWithEnv = fn(&[u8]) -> Vec<i32>;

/// Moving bytes inside the kernel, where the system can (Linux's
/// splice): the flood path's holding pipe, and the moves into it, out of
/// it and to /dev/null. A backend without one says so (`MOVER: None`),
/// and a flood is read.
#[derive(Clone, Copy)]
pub struct Mover {
    /// A pipe of our own, both ends non-blocking and close-on-exec, grown
    /// towards `bytes` (best effort): (read end, write end, its capacity).
    pub private_pipe: fn(i32) -> io::Result<(OwnedFd, OwnedFd, usize)>,
    /// Move up to `len` bytes from one descriptor to the other, never
    /// blocking (an empty source or a full destination is `WouldBlock`).
    pub splice: fn(BorrowedFd<'_>, BorrowedFd<'_>, usize) -> io::Result<usize>,
    /// The null device, opened for writing and checked to be it.
    pub null: fn() -> io::Result<File>,
}
