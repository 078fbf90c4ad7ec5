//! The OS layer, and its contract: the only place that uses nix and libc
//! (and, for Windows, its bindings). The rest of mcp-bound asks `sys` for
//! what it needs and reads [`BACKEND`] for what the system can do; no
//! backend turns a guarantee into a silent no-op: what a system lacks is a
//! capability it has not (`capabilities.rs`: `None`), or a function that
//! says so (`Unsupported`), never one that pretends.
//!
//! Every backend provides:
//! - **the poller**: `Poller`, waiting for readiness of the loop's
//!   descriptors with a deadline (`ready[i]` answers `interests[i]`), and
//!   `poll_until`, the one bounded wait outside the loop;
//! - **the signal source**: `SignalPipe`, signals counted by a handler and
//!   delivered as readiness of one descriptor, so no thread handles one;
//! - **spawn**: a program started in a process group of its own, with its
//!   stdio, rlimits and the tree's environment mark, none of our
//!   descriptors inherited (`spawn`, `Exec`, `Setup`);
//! - **wait and reap**: an exit observed without reaping (`wait_exit`, so
//!   the pid, and the group's, stay ours while we signal them), reaping
//!   with what each process used (`reap`, `reaped_peak_kib`);
//! - **the process table**: a process's parent, group and start time
//!   (`proc_info`: a pid with its start time names one process, even
//!   after the pid is reused), the tree's descendants (`descendants`), and
//!   the processes whose environment holds an exact entry
//!   (`pids_with_env`: how the tree's mark finds what escaped);
//! - **the watchdog's link**: a fork that outlives us and learns of our
//!   death from a pipe's end (`FORK`, Unix); on Linux also a waiter,
//!   which shares our memory (`WAITER`); on Windows, which has no fork,
//!   the heir (`HEIR`): mcp-bound started again with that pipe's read
//!   end, handed each helper's job (`Hand`), which ends the job once we
//!   are gone. A waiter and the heir are each a `Watcher`;
//! - **file locks** (`lock_exclusive`, `try_lock_exclusive`) and
//!   **durable sync** (`sync_durable`: on macOS `F_FULLFSYNC`, since its
//!   `fsync` does not reach the disk), and **replacement** (`replace_file`:
//!   rename(2), or on Windows `MoveFileExW`, tried again while another
//!   process holds the file open, then said);
//! - **pipes** (`pipe_cloexec`), and an optional **mover** (`MOVER`: a
//!   private pipe and splice, which only Linux has; `None` elsewhere, and
//!   a flood is read);
//! - **our output**: what an inherited descriptor is, for how it is
//!   written without blocking and without changing its flags
//!   (`output_kind`);
//! - **stdout's reader**: which failed writes mean it went away
//!   (`reader_gone`), and a wait that ends when it goes
//!   (`wait_for_output_gone`: poll(2) on Unix; on Windows, where a pipe's
//!   writer learns of it only by writing, a sleep that never says so,
//!   as the platform table says).
//!
//! The backends, chosen here once:
//! - `unix/linux/`: Linux, whole: epoll, a child subreaper, the
//!   parent-death signal, cgroup v2 (born into it with clone3), splice,
//!   /proc, the `Waiter`;
//! - `unix/macos/`: macOS: poll(2) (select(2) for a terminal, which
//!   macOS's poll(2) refuses), no subreaper and no parent-death signal
//!   (what escapes the group is found by the tree's mark in the process
//!   table: libproc and `KERN_PROCARGS2`), no cgroup, no splice, the
//!   forked watchdog only. The same backend runs on Linux when built with
//!   `--cfg mcp_bound_portable`, its table then read from /proc, so CI
//!   runs the macOS code paths;
//! - `unix/unsupported.rs`: any other Unix: mcp-bound compiles and refuses
//!   to run, saying why (`BACKEND.unsupported`);
//! - `windows/`: Windows: a Job Object for each helper's tree (ended by
//!   the system when our handle closes, so a watchdog, the heir, is
//!   started only to write the last words), one completion port for the
//!   loop, the helper's pipes overlapped
//!   and read by completions, a thread for each of the host's handles
//!   that cannot be overlapped; no process groups, signals, rlimits,
//!   cgroup or splice.
//!
//! Shared by every backend: `capabilities.rs` (what only some backends
//! can do, each a constant a backend sets to `Some` or `None`: `FORK`,
//! `WAITER`, `HEIR`, `RLIMITS`, `RELAYS`, `CGROUPS`, `JOB_LIMITS`,
//! `COMMAND_LINE`, `MARKS`, `MOVER`), `types.rs` (the answers' data), `table.rs`
//! (the process table's algorithms, pure), `ntstatus.rs` (the names of
//! Windows's crash codes, pure), `portable.rs` (what std gives
//! every system alike, and `judged`: an opened file's owner and mode as
//! `trust` judges them for its role), `refusing.rs` (what a refusing backend shares),
//! and `fd`, descriptors by one name (handles on Windows).
//!
//! `unix/` holds what POSIX gives every Unix backend: descriptor flags,
//! the signal pipe, files, poll(2), spawning and waiting.

mod capabilities;
pub mod ntstatus;
mod portable;
#[cfg(any(windows, all(unix, not(any(target_os = "linux", target_os = "macos")))))]
mod refusing;
mod table;
mod types;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;
// The Windows command line's rules are pure: tested on every platform.
#[cfg(all(test, not(windows)))]
#[path = "windows/cmdline.rs"]
mod windows_cmdline;

pub use capabilities::*;
pub use portable::*;
pub use table::Descendants;
#[cfg(unix)]
use table::Marked;
pub use types::*;
#[cfg(unix)]
pub use unix::*;
#[cfg(windows)]
pub use windows::*;

/// Descriptors, as the rest of mcp-bound names them: on Unix,
/// `std::os::fd` itself. Code outside `sys/` imports them from here, never
/// from `std::os`, so that it reads the same on every platform.
#[cfg(unix)]
pub mod fd {
    pub use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
}

/// Descriptors, as the rest of mcp-bound names them: on Windows, handles
/// under the same names (a raw one as its value, so that it compares and
/// hashes as a descriptor does).
#[cfg(windows)]
pub mod fd {
    use std::os::windows::io as handle;

    pub type RawFd = isize;
    pub type OwnedFd = handle::OwnedHandle;
    pub type BorrowedFd<'a> = handle::BorrowedHandle<'a>;

    pub trait AsFd {
        fn as_fd(&self) -> BorrowedFd<'_>;
    }

    impl<T: handle::AsHandle> AsFd for T {
        fn as_fd(&self) -> BorrowedFd<'_> {
            self.as_handle()
        }
    }

    pub trait AsRawFd {
        fn as_raw_fd(&self) -> RawFd;
    }

    impl<T: handle::AsRawHandle> AsRawFd for T {
        fn as_raw_fd(&self) -> RawFd {
            self.as_raw_handle() as RawFd
        }
    }

    pub trait FromRawFd {
        /// # Safety
        /// `fd` is an open handle that nothing else owns.
        unsafe fn from_raw_fd(fd: RawFd) -> Self;
    }

    impl<T: handle::FromRawHandle> FromRawFd for T {
        unsafe fn from_raw_fd(fd: RawFd) -> Self {
            // SAFETY: the caller's promise.
            unsafe { T::from_raw_handle(fd as handle::RawHandle) }
        }
    }
}

/// What this system can do, as the backend says it: read where a
/// guarantee depends on it, so that the caller chooses another way (or
/// refuses, saying why) instead of calling a no-op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backend {
    /// The system, as the record names it (`mcp_bound.os`).
    pub os: &'static str,
    /// Set on a system with no backend: why mcp-bound refuses to run.
    pub unsupported: Option<&'static str>,
    /// Orphaned descendants re-parent to us (Linux's child subreaper).
    pub subreaper: bool,
    /// A helper gets a signal when mcp-bound dies (Linux's PDEATHSIG).
    pub parent_death_signal: bool,
    /// cgroup v2 for the tree, its limits and its kill.
    pub cgroup: bool,
    /// Real-time signals (`RTMIN+N`).
    pub real_time_signals: bool,
    /// A Job Object holds each helper's tree (Windows): nothing of it
    /// runs outside, and it ends when our last handle to it closes,
    /// whatever ended us.
    pub job: bool,
    /// An exit code is 32 bits, read unsigned, and may be an NTSTATUS
    /// (Windows: a crash's code is the exception's), which the record
    /// names (`ntstatus.rs`). Else it is 0 to 255.
    pub wide_exit_codes: bool,
    /// A descriptor a host passes by number (`--record-fd N`).
    pub numbered_descriptors: bool,
    /// The controlling terminal, opened by name (`/dev/tty`) to ask a
    /// person (`--approve tty`).
    pub terminal: bool,
    /// SIGUSR1, which opens and closes the debug window.
    pub user_signals: bool,
}
