//! The plain POSIX way of what Linux has a call for, shared by the
//! backends without it (macOS, and any other Unix): a pipe made
//! close-on-exec one call after `pipe` (mcp-bound starts processes from
//! one thread only, so no fork of ours comes in between), descriptors
//! closed one by one, and no waiter (it needs Linux's CLONE_VM: the
//! watchdog is always a fork). What Linux alone has (a subreaper, a
//! parent-death signal, cgroups, splice, real-time signals) says
//! `Unsupported` here, and `BACKEND` says so before anyone asks.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};

use nix::libc;

use super::{set_cloexec, set_nonblocking};

/// A pipe whose ends are not inherited by anything we start.
pub fn pipe_cloexec() -> io::Result<(File, File)> {
    let (reader, writer) = nix::unistd::pipe()?;
    set_cloexec(reader.as_fd())?;
    set_cloexec(writer.as_fd())?;
    Ok((File::from(reader), File::from(writer)))
}

/// As [`pipe_cloexec`], both ends non-blocking too (the signal pipe).
pub fn pipe_cloexec_nonblocking() -> io::Result<(OwnedFd, OwnedFd)> {
    let (reader, writer) = pipe_cloexec()?;
    let (reader, writer) = (OwnedFd::from(reader), OwnedFd::from(writer));
    set_nonblocking(reader.as_fd())?;
    set_nonblocking(writer.as_fd())?;
    Ok((reader, writer))
}

/// Close every descriptor from 3 on but `keep`, in a forked child (no
/// close_range): up to the soft limit on descriptors, at most 65536.
pub fn close_all_from_3_but(keep: RawFd) {
    // SAFETY: getrlimit fills the structure it is given.
    let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: a valid, writable rlimit.
    let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur.min(65_536) as RawFd
    } else {
        1024
    };
    for fd in (3..max).filter(|fd| *fd != keep) {
        // SAFETY: closing descriptors of this forked child.
        unsafe { libc::close(fd) };
    }
}

/// No watchdog that shares our memory (it needs Linux's CLONE_VM): it
/// is always a fork.
pub const WAITER: Option<crate::sys::StartWaiter> = None;

fn not_here(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{what}: not on {}", super::BACKEND.os),
    )
}

/// No real-time signals here.
#[allow(clippy::reversed_empty_ranges)]
pub fn real_time_signals() -> std::ops::RangeInclusive<i32> {
    1..=0
}

/// No child subreaper here: escapes are found by the mark instead.
pub fn become_subreaper() -> io::Result<()> {
    Err(not_here("a child subreaper"))
}

/// No parent-death signal here: the watchdog ends the tree instead.
pub(in crate::sys) const PARENT_DEATH: Option<fn(i32) -> io::Result<()>> = None;

/// No cgroup here, so no helper is born into one.
pub const CGROUPS: Option<crate::sys::Cgroups> = None;
pub(in crate::sys) const BORN_IN_CGROUP: Option<super::CloneIntoCgroup> = None;

/// No FIFO re-open through /proc here: the flood path then reads.
pub(in crate::sys) const REOPEN_FIFO: Option<fn(RawFd) -> Option<OwnedFd>> = None;

/// Pipes grow on their own here (no F_SETPIPE_SZ).
pub(in crate::sys) const GROW_PIPE: Option<fn(BorrowedFd<'_>, i32)> = None;

/// No splice here: the flood path reads.
pub const MOVER: Option<crate::sys::Mover> = None;
