//! The Linux backend, whole: clone3 into a cgroup, the subreaper, the
//! parent-death signal, pipes made close-on-exec at once (pipe2), pipe
//! sizes, splice and the private pipe of the flood path, FIFO re-open,
//! the null device check, durable sync, the real-time signals, and the
//! process table from /proc (`super::procfs`). The waiter (a watchdog that
//! shares our memory) is `waiter.rs`; the loop's epoll `Poller` is
//! `epoll.rs`.

use std::ffi::CString;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::*;

mod epoll;
mod waiter;

pub use epoll::Poller;
#[cfg(test)]
pub(crate) use waiter::{WaiterHeard, WaiterReading};

/// The watchdog that shares our memory.
pub const WAITER: Option<crate::sys::StartWaiter> = Some(waiter::Waiter::start);

/// The tree's mark, found in /proc.
pub const MARKS: Option<crate::sys::PidsWithEnv> = Some(super::procfs::pids_with_env);

/// cgroup v2: its mount, and the kernel's judgement of a write.
pub const CGROUPS: Option<crate::sys::Cgroups> = Some(crate::sys::Cgroups {
    is_mount: is_cgroup2_mount,
    may_write,
});

/// Born into a cgroup (clone3), and the parent-death signal: the spawn's.
pub(in crate::sys) const BORN_IN_CGROUP: Option<CloneIntoCgroup> = Some(clone_into_cgroup);
pub(in crate::sys) const PARENT_DEATH: Option<fn(i32) -> io::Result<()>> = Some(die_with_parent);
/// Pipes grown (F_SETPIPE_SZ), and a FIFO re-opened through /proc.
pub(in crate::sys) const GROW_PIPE: Option<fn(BorrowedFd<'_>, i32)> = Some(grow_pipe);
pub(in crate::sys) const REOPEN_FIFO: Option<fn(RawFd) -> Option<OwnedFd>> =
    Some(reopen_fifo_nonblocking);
pub(crate) use super::procfs::{children_of_self, proc_info};

/// Linux can do all of it.
pub const BACKEND: crate::sys::Backend = crate::sys::Backend {
    os: "linux",
    unsupported: None,
    subreaper: true,
    parent_death_signal: PARENT_DEATH.is_some(),
    cgroup: CGROUPS.is_some(),
    real_time_signals: true,
    job: false,
    wide_exit_codes: false,
    numbered_descriptors: true,
    terminal: true,
    user_signals: true,
};

/// One wait outside the loop (`poll_until`): poll(2), which watches
/// anything here.
pub(in crate::sys) use super::poll::poll as wait_once;

/// Every process below `root` (not `root` itself), from one /proc scan,
/// leaving out each process `skip` names with everything below it. The
/// subreaper makes every escape (setsid, a double fork) ours, so the
/// parents' links find the whole tree: the mark is not needed here.
pub fn descendants(
    root: i32,
    _mark: Option<&[u8]>,
    skip: &dyn Fn(&ProcInfo) -> bool,
) -> Descendants {
    Descendants {
        processes: super::table::below(root, super::procfs::all_processes(), skip),
        unreadable: None,
    }
}

/// A pipe whose ends are not inherited by anything we start: made
/// close-on-exec at once (pipe2).
pub fn pipe_cloexec() -> io::Result<(File, File)> {
    let (reader, writer) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    Ok((File::from(reader), File::from(writer)))
}

/// As [`pipe_cloexec`], both ends non-blocking too (the signal pipe).
pub fn pipe_cloexec_nonblocking() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(nix::unistd::pipe2(
        nix::fcntl::OFlag::O_CLOEXEC | nix::fcntl::OFlag::O_NONBLOCK,
    )?)
}

/// Make what was written to `file` durable: fdatasync.
pub fn sync_durable(file: &File) -> io::Result<()> {
    file.sync_data()
}

/// The real-time signals this system has, as libc reports them (glibc
/// keeps the first two for itself, so SIGRTMIN is 34 on Linux).
pub fn real_time_signals() -> std::ops::RangeInclusive<i32> {
    libc::SIGRTMIN()..=libc::SIGRTMAX()
}

/// Close every descriptor from 3 on but `keep`: two close_range calls
/// (Linux 5.9), not one close per possible descriptor.
pub fn close_all_from_3_but(keep: RawFd) {
    // SAFETY: closing descriptors of this (forked, single-threaded) process.
    unsafe {
        if keep > 3 {
            libc::close_range(3, (keep - 1) as libc::c_uint, 0);
        }
        libc::close_range((keep + 1).max(3) as libc::c_uint, libc::c_uint::MAX, 0);
    }
}

/// clone3(2)'s arguments (linux/sched.h), as far as CLONE_INTO_CGROUP.
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// fork(2), but born in the cgroup whose directory is `dir` (Linux 5.7):
/// `Ok(None)` in the child. Err where clone3 is missing or refused (a
/// seccomp filter, an older kernel): the caller forks and moves instead.
fn clone_into_cgroup(dir: BorrowedFd<'_>) -> io::Result<Option<i32>> {
    let args = CloneArgs {
        flags: CLONE_INTO_CGROUP,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: dir.as_raw_fd() as u64,
        ..CloneArgs::default()
    };
    // SAFETY: a fork-like clone (no CLONE_VM, no new stack) of a process
    // without threads: the child continues on a copy of this stack, as
    // after fork(2), and only makes system calls before exec.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    match rc {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(None),
        pid => Ok(Some(pid as i32)),
    }
}

/// Whether `dir` is where a cgroup v2 hierarchy is mounted: one statfs,
/// where reading /proc/self/mountinfo costs the kernel a walk of every
/// mount.
fn is_cgroup2_mount(dir: &Path) -> bool {
    const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
    let Ok(path) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs fills the zeroed structure it is given.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and a writable statfs.
    unsafe { libc::statfs(path.as_ptr(), &mut fs) == 0 && fs.f_type as i64 == CGROUP2_SUPER_MAGIC }
}

/// Orphaned descendants re-parent to us instead of init, so a helper
/// that double-forks or calls setsid stays reachable.
pub fn become_subreaper() -> io::Result<()> {
    nix::sys::prctl::set_child_subreaper(true)?;
    Ok(())
}

/// In the forked child, before exec: die with the supervisor.
/// Async-signal-safe: prctl, getppid and kill only.
fn die_with_parent(parent: i32) -> io::Result<()> {
    // SAFETY: plain system calls without memory arguments.
    unsafe {
        if libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        // The parent may have died before prctl took effect.
        if libc::getppid() != parent {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
    Ok(())
}

/// A second, non-blocking open file description of the FIFO on `fd`,
/// through /proc. O_NONBLOCK on it affects no one else, so we can write
/// large chunks without ever blocking. None if the re-open fails.
fn reopen_fifo_nonblocking(fd: RawFd) -> Option<OwnedFd> {
    let path = CString::new(format!("/proc/self/fd/{fd}")).ok()?;
    // SAFETY: valid C string.
    let new = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_WRONLY | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    // SAFETY: a fresh descriptor we own.
    (new >= 0).then(|| unsafe { OwnedFd::from_raw_fd(new) })
}

/// Larger pipe buffers mean fewer wake-ups per megabyte. Best effort:
/// an unprivileged process is capped by /proc/sys/fs/pipe-max-size.
fn grow_pipe(fd: BorrowedFd<'_>, bytes: i32) {
    let _ = fcntl(fd, FcntlArg::F_SETPIPE_SZ(bytes));
}

/// The null device's number here: (1, 3).
pub fn null_device() -> Option<u64> {
    Some(libc::makedev(1, 3))
}

/// The flood path's mover: a private pipe and splice.
pub const MOVER: Option<crate::sys::Mover> = Some(crate::sys::Mover {
    private_pipe,
    splice,
    null: open_null,
});

/// A pipe of our own, both ends non-blocking and close-on-exec, grown
/// towards `bytes` (best effort). Returns (read end, write end, the
/// capacity granted).
fn private_pipe(bytes: i32) -> io::Result<(OwnedFd, OwnedFd, usize)> {
    let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)?;
    grow_pipe(write.as_fd(), bytes);
    let capacity = fcntl(write.as_fd(), FcntlArg::F_GETPIPE_SZ)?;
    Ok((read, write, capacity as usize))
}

/// Move up to `len` bytes from one pipe to another (or a pipe to
/// /dev/null) inside the kernel: pipe pages change hands, nothing is
/// copied. Never blocks: an empty source or a full destination is
/// `WouldBlock`.
fn splice(from: BorrowedFd<'_>, to: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
    // SAFETY: two descriptors we hold; no offsets (both are pipes or
    // /dev/null).
    let moved = unsafe {
        libc::splice(
            from.as_raw_fd(),
            std::ptr::null_mut(),
            to.as_raw_fd(),
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
        )
    };
    if moved < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(moved as usize)
}

/// Whether we may write `path` (access(2) with our effective ids): one
/// system call, where opening it for writing and closing it are two.
fn may_write(path: &Path) -> io::Result<()> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: a valid C string.
    let rc = unsafe {
        libc::faccessat(
            libc::AT_FDCWD,
            c_path.as_ptr(),
            libc::W_OK,
            libc::AT_EACCESS,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether `file` is the null device itself.
fn is_dev_null(file: &File) -> bool {
    file.metadata()
        .is_ok_and(|meta| super::files::is_null_device(&meta))
}

/// The null device, opened for writing and checked to be it (the
/// flood path's sink).
fn open_null() -> io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .ok()
        .filter(is_dev_null)
        .ok_or_else(|| io::Error::other("/dev/null is not the null device"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_null_device_is_dev_null() {
        let null = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .unwrap();
        assert!(is_dev_null(&null));
        let zero = File::open("/dev/zero").unwrap();
        assert!(!is_dev_null(&zero), "a character device, but not (1,3)");
        let plain = tempfile::tempfile().unwrap();
        assert!(!is_dev_null(&plain), "a regular file");
    }
}
