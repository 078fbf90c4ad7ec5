//! The OS layer, and with `process.rs`, `linux.rs` and `signals` the only
//! place that uses nix and libc: poll(), descriptor flags, private file
//! creation, locks, the terminal. Process calls (spawning, rlimits,
//! signals to processes, waiting) live in `process.rs`; what only Linux
//! has in `linux.rs`, and what /proc says in `procfs.rs` (plain reads);
//! `other.rs` stands in elsewhere without touching libc, chosen here with
//! `#[cfg]` and `#[path]`.

#[cfg_attr(target_os = "linux", path = "linux.rs")]
#[cfg_attr(not(target_os = "linux"), path = "other.rs")]
mod os;
mod process;
#[cfg(target_os = "linux")]
mod procfs;

pub use process::*;
#[cfg(target_os = "linux")]
pub use procfs::{children_of_self, descendants, pids_with_env, proc_info};

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
    // The loop watches at most a handful: no allocation per turn.
    const ON_STACK: usize = 16;
    let empty = libc::pollfd {
        fd: -1,
        events: 0,
        revents: 0,
    };
    let mut stack = [empty; ON_STACK];
    let mut heap = Vec::new();
    let fds: &mut [libc::pollfd] = if interests.len() <= ON_STACK {
        &mut stack[..interests.len()]
    } else {
        heap.resize(interests.len(), empty);
        &mut heap
    };
    for (fd, interest) in fds.iter_mut().zip(interests) {
        *fd = libc::pollfd {
            fd: interest.fd,
            events: (if interest.read { libc::POLLIN } else { 0 })
                | (if interest.write { libc::POLLOUT } else { 0 })
                | (if interest.peer_closed { PEER_CLOSED } else { 0 }),
            revents: 0,
        };
    }
    let timeout_ms = timeout_ms(timeout);
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

/// A timeout in whole milliseconds, rounded up; -1 for none.
fn timeout_ms(timeout: Option<Duration>) -> libc::c_int {
    match timeout {
        None => -1,
        Some(t) => {
            let ms = t.as_nanos().div_ceil(1_000_000);
            libc::c_int::try_from(ms).unwrap_or(libc::c_int::MAX)
        }
    }
}

/// The main loop's wait: epoll on Linux (see `linux.rs`: its cost does
/// not grow with the descriptors watched), poll(2) elsewhere, and poll(2)
/// from the first descriptor epoll cannot watch (our stdin a regular file
/// or /dev/null) on. Either way `ready[i]` answers `interests[i]`, as
/// `poll` does.
pub struct Poller {
    #[cfg(target_os = "linux")]
    epoll: Option<os::Epoll>,
}

impl Poller {
    pub fn new() -> Poller {
        Poller {
            #[cfg(target_os = "linux")]
            epoll: os::Epoll::new().ok(),
        }
    }

    pub fn wait(
        &mut self,
        interests: &[Interest],
        ready: &mut Vec<Ready>,
        timeout: Option<Duration>,
    ) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        if let Some(epoll) = self.epoll.as_mut() {
            if epoll.watch(interests).is_ok() {
                return epoll.wait(interests, ready, timeout_ms(timeout));
            }
            self.epoll = None;
        }
        poll(interests, ready, timeout)
    }

    /// Descriptors were closed and others opened under the same numbers
    /// (a restarted server's pipes): what was registered is forgotten.
    pub fn forget(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(epoll) = self.epoll.as_mut() {
            epoll.forget();
        }
    }
}

impl Default for Poller {
    fn default() -> Poller {
        Poller::new()
    }
}

/// The one bounded wait outside the main loop: poll `interests` until
/// `deadline`. TimedOut (without polling) once the deadline has passed, so
/// a caller's loop needs no clock arithmetic of its own.
pub fn poll_until(
    interests: &[Interest],
    ready: &mut Vec<Ready>,
    deadline: std::time::Instant,
) -> io::Result<()> {
    let now = std::time::Instant::now();
    if now >= deadline {
        return Err(io::Error::from(io::ErrorKind::TimedOut));
    }
    poll(interests, ready, Some(deadline - now))
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

pub use os::{
    Orphaned, Waiter, become_subreaper, die_with_parent, grow_pipe, is_cgroup2_mount, null_device,
    private_pipe, reopen_fifo_nonblocking, splice,
};
#[cfg(not(target_os = "linux"))]
pub use os::{children_of_self, descendants, pids_with_env, proc_info};

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
/// The wait backs off from 1 ms to 20 ms: a lock cannot be polled, and a
/// blocking flock could only be bounded by a timer signal racing our own
/// handlers. It is the one wait that sleeps, a short one on other
/// appenders, and it never runs inside the supervisor's loop (an append
/// happens before dispatch and after the end).
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

/// Read a small file whole (a /proc or cgroup file): open, reads into
/// a 4 KiB buffer that grows only if it must, close. No size query (those
/// files report 0) and no probing reads: std's read_to_string spends six
/// system calls on a 300-byte /proc/PID/stat, this spends three.
pub fn read_small(path: &Path) -> io::Result<String> {
    use std::io::Read;
    let mut file = File::open(path)?;
    let mut buf = vec![0u8; 4096];
    let mut len = 0;
    loop {
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        }
        if len == buf.len() {
            buf.resize(len * 2, 0);
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))
}

/// Whether we may write `path` (access(2) with our effective ids): one
/// system call, where opening it for writing and closing it are two.
pub fn may_write(path: &Path) -> io::Result<()> {
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

/// Close a raw descriptor this process owns (a forked child's leftovers).
pub fn close_raw(fd: RawFd) {
    // SAFETY: closing a descriptor number; EBADF is harmless.
    unsafe { libc::close(fd) };
}

/// A pipe whose ends are not inherited by anything we start.
pub fn pipe_cloexec() -> io::Result<(File, File)> {
    let (reader, writer) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    Ok((File::from(reader), File::from(writer)))
}

/// Leave now, without running destructors or flushing (a forked child).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns.
    unsafe { libc::_exit(code) }
}

/// Read from a descriptor, blocking (the watchdog's only wait).
pub fn read_blocking(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: a valid buffer of the given length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Whether `meta` is the null device itself, not whatever a container put
/// at /dev/null (a regular file there would fill up).
pub fn is_null_device(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    meta.file_type().is_char_device() && Some(meta.rdev()) == null_device()
}

/// Whether `file` is the null device itself.
pub fn is_dev_null(file: &File) -> bool {
    file.metadata().is_ok_and(|meta| is_null_device(&meta))
}
