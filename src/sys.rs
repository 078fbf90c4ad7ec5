//! Thin system-call layer: poll(), descriptor flags, private file creation,
//! and every Linux-only call (prctl, /proc, pipe sizes, splice, FIFO re-open) behind
//! `cfg(target_os = "linux")` in this one file.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::libc;

/// What the caller wants to hear about one descriptor. A descriptor with
/// neither flag set still reports hang-up and error, which is how a closed
/// reader of our stdout is noticed without writing to it.
#[derive(Debug, Clone, Copy)]
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

#[cfg(target_os = "linux")]
const PEER_CLOSED: libc::c_short = libc::POLLRDHUP;
#[cfg(not(target_os = "linux"))]
const PEER_CLOSED: libc::c_short = 0;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ready {
    pub readable: bool,
    pub writable: bool,
    pub hangup: bool,
    pub error: bool,
}

/// Wait for readiness or the timeout. The timeout is rounded *up* to whole
/// milliseconds so the loop never wakes just before a deadline and spins.
/// EINTR is not an error: the caller re-reads the clock and loops.
pub fn poll(
    interests: &[Interest],
    ready: &mut Vec<Ready>,
    timeout: Option<Duration>,
) -> io::Result<()> {
    let mut fds: Vec<libc::pollfd> = interests
        .iter()
        .map(|interest| libc::pollfd {
            fd: interest.fd,
            events: (if interest.read { libc::POLLIN } else { 0 })
                | (if interest.write { libc::POLLOUT } else { 0 })
                | (if interest.peer_closed { PEER_CLOSED } else { 0 }),
            revents: 0,
        })
        .collect();
    let timeout_ms: libc::c_int = match timeout {
        None => -1,
        Some(t) => {
            let ms = t.as_nanos().div_ceil(1_000_000);
            libc::c_int::try_from(ms).unwrap_or(libc::c_int::MAX)
        }
    };
    ready.clear();
    // SAFETY: `fds` is a valid, exclusively borrowed array of pollfd.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
        fds.iter_mut().for_each(|fd| fd.revents = 0);
    }
    ready.extend(fds.iter().map(|fd| Ready {
        readable: fd.revents & libc::POLLIN != 0,
        writable: fd.revents & libc::POLLOUT != 0,
        hangup: fd.revents & (libc::POLLHUP | PEER_CLOSED) != 0,
        error: fd.revents & (libc::POLLERR | libc::POLLNVAL) != 0,
    }));
    Ok(())
}

/// Only for descriptors we created: O_NONBLOCK lives in the open file
/// description, shared with every process holding it.
pub fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(())
}

pub fn is_nonblocking(fd: BorrowedFd<'_>) -> io::Result<bool> {
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
    Ok(flags.contains(OFlag::O_NONBLOCK))
}

/// FD_CLOEXEC is per descriptor, not shared: safe on inherited ones.
pub fn set_cloexec(fd: BorrowedFd<'_>) -> io::Result<()> {
    fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    Ok(())
}

/// Whether `fd` is open at all.
pub fn is_open(fd: RawFd) -> bool {
    // SAFETY: F_GETFD on any integer is harmless.
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

/// Whether `fd` is open for writing.
pub fn is_open_for_writing(fd: RawFd) -> bool {
    // SAFETY: F_GETFL on any integer is harmless; EBADF is the answer we want.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    flags >= 0 && matches!(flags & libc::O_ACCMODE, libc::O_WRONLY | libc::O_RDWR)
}

/// Borrow a descriptor we do not own (fd 1, a `--record-fd`).
///
/// # Safety
/// `fd` must stay open for the lifetime of the returned borrow.
pub unsafe fn borrow_raw(fd: RawFd) -> BorrowedFd<'static> {
    // SAFETY: forwarded to the caller.
    unsafe { BorrowedFd::borrow_raw(fd) }
}

/// Create a new file with mode 0600 for writing, refusing to follow a
/// symlink and refusing to reuse an existing file.
pub fn create_private(path: &Path) -> io::Result<File> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: a valid C string; the flags create a fresh file.
    let fd = unsafe {
        libc::open(
            c_path.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: open returned a new descriptor that we now own.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// send(2) with MSG_DONTWAIT: non-blocking for one call on a socket we must
/// not make non-blocking for everyone.
pub fn send_nowait(fd: BorrowedFd<'_>, bytes: &[u8]) -> io::Result<usize> {
    // SAFETY: valid buffer and length.
    let rc = unsafe {
        libc::send(
            fd.as_raw_fd(),
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

/// One process seen in /proc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub zombie: bool,
    /// When it started, in clock ticks since boot (stat field 22): with
    /// the pid, this names one process even after its pid is reused.
    pub start: u64,
}

#[cfg(target_os = "linux")]
mod linux {
    use super::*;
    use std::collections::HashMap;

    /// Orphaned descendants re-parent to us instead of init, so a helper
    /// that double-forks or calls setsid stays reachable.
    pub fn become_subreaper() -> io::Result<()> {
        nix::sys::prctl::set_child_subreaper(true)?;
        Ok(())
    }

    /// In the forked child, before exec: die with the supervisor.
    /// Async-signal-safe: prctl, getppid and kill only.
    pub fn die_with_parent(parent: i32) -> io::Result<()> {
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

    fn parse_stat(pid: i32, stat: &str) -> Option<ProcInfo> {
        // The command name may contain spaces and parentheses: split after
        // the last ')'.
        let rest = &stat[stat.rfind(')')? + 2..];
        let mut fields = rest.split(' ');
        let state = fields.next()?;
        let ppid = fields.next()?.parse().ok()?;
        let pgid = fields.next()?.parse().ok()?;
        // Fields 6 to 21, then starttime.
        let start = fields.nth(16)?.parse().ok()?;
        Some(ProcInfo {
            pid,
            ppid,
            pgid,
            zombie: state == "Z" || state == "X",
            start,
        })
    }

    /// One process, as /proc shows it now (None once it is reaped).
    pub fn proc_info(pid: i32) -> Option<ProcInfo> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        parse_stat(pid, &stat)
    }

    /// Every process below `root` (not `root` itself), from one /proc
    /// scan, leaving out each process for which `skip` says so together
    /// with everything below it.
    pub fn descendants(root: i32, skip: &dyn Fn(&ProcInfo) -> bool) -> Vec<ProcInfo> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut by_parent: HashMap<i32, Vec<ProcInfo>> = HashMap::new();
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            if let Some(info) = parse_stat(pid, &stat) {
                by_parent.entry(info.ppid).or_default().push(info);
            }
        }
        let mut found = Vec::new();
        let mut frontier = vec![root];
        while let Some(parent) = frontier.pop() {
            for info in by_parent.remove(&parent).unwrap_or_default() {
                if skip(&info) {
                    continue;
                }
                frontier.push(info.pid);
                found.push(info);
            }
        }
        found
    }

    /// Our direct children, cheaply, for reaping subreaped orphans.
    pub fn children_of_self() -> Vec<i32> {
        let pid = std::process::id();
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .map(|text| {
                text.split_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect()
            })
            .unwrap_or_else(|_| {
                descendants(pid as i32, &|_| false)
                    .into_iter()
                    .filter(|p| p.ppid == pid as i32)
                    .map(|p| p.pid)
                    .collect()
            })
    }

    /// A second, non-blocking open file description of the FIFO on `fd`,
    /// through /proc. O_NONBLOCK on it affects no one else, so we can write
    /// large chunks without ever blocking. None if the re-open fails.
    pub fn reopen_fifo_nonblocking(fd: RawFd) -> Option<OwnedFd> {
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
    pub fn grow_pipe(fd: BorrowedFd<'_>, bytes: i32) {
        let _ = fcntl(fd, FcntlArg::F_SETPIPE_SZ(bytes));
    }

    /// Whether `file` is the null device itself (1,3), not whatever a
    /// container put at /dev/null: a regular file there would fill up.
    pub fn is_dev_null(file: &File) -> bool {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        file.metadata().is_ok_and(|meta| {
            meta.file_type().is_char_device() && meta.rdev() == libc::makedev(1, 3)
        })
    }

    /// A pipe of our own, both ends non-blocking and close-on-exec, grown
    /// towards `bytes` (best effort). Returns (read end, write end, the
    /// capacity granted).
    pub fn private_pipe(bytes: i32) -> io::Result<(OwnedFd, OwnedFd, usize)> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)?;
        grow_pipe(write.as_fd(), bytes);
        let capacity = fcntl(write.as_fd(), FcntlArg::F_GETPIPE_SZ)?;
        Ok((read, write, capacity as usize))
    }

    /// Move up to `len` bytes from one pipe to another (or a pipe to
    /// /dev/null) inside the kernel: pipe pages change hands, nothing is
    /// copied. Never blocks: an empty source or a full destination is
    /// `WouldBlock`.
    pub fn splice(from: BorrowedFd<'_>, to: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
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

        #[test]
        fn stat_with_odd_command_name() {
            // Fields 3 to 22 of a real stat line, after an odd name.
            let rest = "S 7 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654";
            let info = parse_stat(42, &format!("42 (a) b (c)) {rest} 1 2 3")).unwrap();
            assert_eq!(
                info,
                ProcInfo {
                    pid: 42,
                    ppid: 7,
                    pgid: 42,
                    zombie: false,
                    start: 987654,
                }
            );
            let zombie = rest.replacen('S', "Z", 1);
            assert!(parse_stat(1, &format!("1 (x) {zombie}")).unwrap().zombie);
            assert_eq!(
                parse_stat(1, "1 (x) Z 0 1 1"),
                None,
                "a cut line is no line"
            );
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod linux {
    use super::*;

    pub fn become_subreaper() -> io::Result<()> {
        Ok(())
    }
    pub fn die_with_parent(_parent: i32) -> io::Result<()> {
        Ok(())
    }
    pub fn proc_info(_pid: i32) -> Option<ProcInfo> {
        None
    }
    pub fn descendants(_root: i32, _skip: &dyn Fn(&ProcInfo) -> bool) -> Vec<ProcInfo> {
        Vec::new()
    }
    pub fn children_of_self() -> Vec<i32> {
        Vec::new()
    }
    pub fn reopen_fifo_nonblocking(_fd: RawFd) -> Option<OwnedFd> {
        None
    }
    pub fn grow_pipe(_fd: BorrowedFd<'_>, _bytes: i32) {}
    pub fn private_pipe(_bytes: i32) -> io::Result<(OwnedFd, OwnedFd, usize)> {
        Err(io::ErrorKind::Unsupported.into())
    }
    pub fn is_dev_null(_file: &File) -> bool {
        false
    }
    pub fn splice(_from: BorrowedFd<'_>, _to: BorrowedFd<'_>, _len: usize) -> io::Result<usize> {
        Err(io::ErrorKind::Unsupported.into())
    }
}

pub use linux::{
    become_subreaper, children_of_self, descendants, die_with_parent, grow_pipe, is_dev_null,
    private_pipe, proc_info, reopen_fifo_nonblocking, splice,
};

/// Open (or create, mode 0600) a file for appending, never through a
/// symlink. Returns the file and whether this call created it.
pub fn open_append_private(path: &Path) -> io::Result<(File, bool)> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    let base = libc::O_RDWR | libc::O_APPEND | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: valid C string; O_EXCL tells us whether we created it.
    let fd = unsafe {
        libc::open(
            c_path.as_ptr(),
            base | libc::O_CREAT | libc::O_EXCL,
            0o600 as libc::c_uint,
        )
    };
    let (fd, created) = if fd >= 0 {
        (fd, true)
    } else if io::Error::last_os_error().raw_os_error() == Some(libc::EEXIST) {
        // SAFETY: as above.
        (unsafe { libc::open(c_path.as_ptr(), base) }, false)
    } else {
        (fd, false)
    };
    if fd < 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::ELOOP) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a symlink; refusing to follow it",
            ));
        }
        return Err(err);
    }
    // SAFETY: a fresh descriptor we own.
    Ok((File::from(unsafe { OwnedFd::from_raw_fd(fd) }), created))
}

/// The directory that holds `path` (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Make a new directory entry durable.
pub fn fsync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Exclusive flock(2), waiting at most `limit`. flock (not fcntl locks,
/// which vanish when any descriptor to the file is closed) and per open
/// file description, so two appenders in one process exclude each other too.
/// The wait backs off from 1 ms to 20 ms; it is a short wait on other
/// appenders, never the supervisor's loop.
pub fn lock_exclusive(file: &File, limit: Duration) -> io::Result<()> {
    let deadline = std::time::Instant::now() + limit;
    let mut pause = Duration::from_millis(1);
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EWOULDBLOCK) && err.kind() != io::ErrorKind::Interrupted
        {
            return Err(err);
        }
        if std::time::Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("could not lock it within {} ms", limit.as_millis()),
            ));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

pub fn unlock(file: &File) {
    // SAFETY: flock on a descriptor we own.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
}

/// A read-only view of `bytes` as a file positioned at its start, to hand
/// to a child as stdin: unlike a pipe it never blocks the writer, however
/// large the request and whether or not the child reads it.
pub fn file_with(bytes: &[u8]) -> io::Result<OwnedFd> {
    use std::io::{Seek, SeekFrom, Write};
    #[cfg(target_os = "linux")]
    let fd = nix::sys::memfd::memfd_create(
        c"mcp-bound-request",
        nix::sys::memfd::MFdFlags::MFD_CLOEXEC,
    )?;
    #[cfg(not(target_os = "linux"))]
    let fd = {
        let path = std::env::temp_dir().join(format!("mcp-bound-request-{}", std::process::id()));
        let file = create_private(&path)?;
        std::fs::remove_file(&path)?;
        OwnedFd::from(file)
    };
    let mut file = File::from(fd);
    file.write_all(bytes)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(OwnedFd::from(file))
}

/// Open the controlling terminal for a question, discarding typeahead so
/// that keys pressed before the question cannot answer it.
pub fn open_tty() -> io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC)
        .open("/dev/tty")?;
    nix::sys::termios::tcflush(&file, nix::sys::termios::FlushArg::TCIFLUSH)?;
    Ok(file)
}

pub fn current_uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

pub fn hostname() -> Option<String> {
    nix::unistd::gethostname()
        .ok()
        .map(|name| name.to_string_lossy().into_owned())
}
