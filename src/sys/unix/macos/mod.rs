//! The macOS backend, and built with `--cfg mcp_bound_portable` the same
//! code paths on Linux, so CI runs them. What macOS lacks, it says so
//! (`BACKEND`, or an `Unsupported` error), never a silent no-op:
//! - no child subreaper and no parent-death signal: an escape (setsid, a
//!   double fork) re-parents to launchd, and is found by the tree's mark
//!   in the process table (`descendants`, `pids_with_env`); the forked
//!   watchdog learns of mcp-bound's death from its pipe's end;
//! - no cgroup, no splice (the flood path reads), no F_SETPIPE_SZ (pipes
//!   grow on their own), no real-time signals;
//! - no pipe2 and no close_range: pipes are made close-on-exec right after
//!   `pipe` (mcp-bound runs no thread of its own, so no fork can come in
//!   between), and the forked watchdog closes what it holds one by one;
//! - poll(2) refuses a terminal (POLLNVAL): the `Poller` then waits with
//!   select(2) (`poller.rs`);
//! - `fsync` does not reach the disk: `sync_durable` is `F_FULLFSYNC`.
//!
//! The process table is libproc and `KERN_PROCARGS2` on macOS
//! (`libproc.rs`), /proc on Linux (`super::procfs`), used the same way:
//! the parents' links, plus the mark.

use super::*;

#[cfg(target_os = "macos")]
mod libproc;
mod poller;

pub use super::fallbacks::*;

#[cfg(not(target_os = "macos"))]
use super::procfs as table_source;
#[cfg(target_os = "macos")]
use libproc as table_source;
pub use poller::Poller;

/// What this backend can do.
pub const BACKEND: crate::sys::Backend = crate::sys::Backend {
    os: if cfg!(target_os = "macos") {
        "macos"
    } else {
        "linux"
    },
    unsupported: None,
    subreaper: false,
    parent_death_signal: PARENT_DEATH.is_some(),
    cgroup: CGROUPS.is_some(),
    real_time_signals: false,
    job: false,
    wide_exit_codes: false,
    numbered_descriptors: true,
    terminal: true,
    user_signals: true,
};

/// One wait outside the loop (`poll_until`): the `Poller`'s, so that a
/// terminal poll(2) refuses is waited on with select(2) here too.
pub(in crate::sys) fn wait_once(
    interests: &[Interest],
    ready: &mut Vec<Ready>,
    timeout: Option<std::time::Duration>,
) -> io::Result<()> {
    Poller::new().wait(interests, ready, timeout)
}

/// One process, as the table shows it now (None once it is reaped).
pub fn proc_info(pid: i32) -> Option<ProcInfo> {
    table_source::proc_info(pid)
}

/// Our direct children.
pub fn children_of_self() -> Vec<i32> {
    table_source::children_of_self()
}

/// The tree's mark, found in the process table.
pub const MARKS: Option<crate::sys::PidsWithEnv> = Some(pids_with_env);

/// Every process whose environment holds exactly `entry` (`NAME=value`),
/// as far as the table lets us read environments (our own user's).
fn pids_with_env(entry: &[u8]) -> Vec<i32> {
    table_source::all_processes()
        .into_iter()
        .filter(|p| table_source::marked(p.pid, entry) == Marked::Yes)
        .map(|p| p.pid)
        .collect()
}

/// The tree: every process below `root` by its parents' links, and every
/// process carrying `mark` (an exact environment entry), which is how an
/// escape re-parented to launchd is found, with what is below it; none
/// that `skip` names. A process of this user whose environment cannot be
/// read is not taken, and is counted: the record then claims no
/// completeness.
pub fn descendants(
    root: i32,
    mark: Option<&[u8]>,
    skip: &dyn Fn(&ProcInfo) -> bool,
) -> Descendants {
    let all = table_source::all_processes();
    match mark {
        Some(entry) => {
            super::table::below_or_marked(root, all, &|p| table_source::marked(p.pid, entry), skip)
        }
        None => Descendants {
            processes: super::table::below(root, all, skip),
            unreadable: None,
        },
    }
}

/// Make what was written to `file` durable: on macOS `F_FULLFSYNC`, since
/// `fsync` there leaves it in the drive's cache; fdatasync on Linux.
pub fn sync_durable(file: &File) -> io::Result<()> {
    #[cfg(target_os = "macos")]
    {
        // SAFETY: fcntl on a descriptor we hold.
        if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_FULLFSYNC) } == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
    #[cfg(not(target_os = "macos"))]
    file.sync_data()
}

/// Block until child `pid` has exited (kqueue's `EVFILT_PROC` with
/// `NOTE_EXIT`), leaving it unreaped. Returns at once if it already has
/// (a zombie cannot be watched: ESRCH) or cannot be watched.
#[cfg(target_os = "macos")]
pub(super) fn await_exit_event(pid: i32) {
    // SAFETY: kqueue takes no arguments.
    let queue = unsafe { libc::kqueue() };
    if queue < 0 {
        return;
    }
    // SAFETY: kevent is plain data; zeroed, then the fields set.
    let mut change: libc::kevent = unsafe { std::mem::zeroed() };
    change.ident = pid as libc::uintptr_t;
    change.filter = libc::EVFILT_PROC;
    change.flags = libc::EV_ADD | libc::EV_ONESHOT;
    change.fflags = libc::NOTE_EXIT;
    // SAFETY: as above.
    let mut event: libc::kevent = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: one change and room for one event, both ours.
        let rc = unsafe { libc::kevent(queue, &change, 1, &mut event, 1, std::ptr::null()) };
        if rc >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            break;
        }
    }
    close_raw(queue);
}

/// The null device's number, as /dev/null's own entry gives it.
pub fn null_device() -> Option<u64> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    std::fs::metadata("/dev/null")
        .ok()
        .filter(|m| m.file_type().is_char_device())
        .map(|m| m.rdev())
}
