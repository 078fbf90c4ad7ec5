//! What POSIX gives every Unix backend: descriptor flags and the signal
//! self-pipe here; files (private creation, locks, durable sync, what
//! `fstat` says of one opened) in `files.rs`; poll(2) in `poll.rs`;
//! spawning, rlimits and signals to processes in `process.rs`; waiting
//! for children in `wait.rs`; what /proc says of processes in
//! `procfs.rs` (Linux, either backend). The backend (`linux/`, `macos/`,
//! or `unsupported.rs`) is chosen here, with `#[cfg]` and `#[path]`, and
//! holds what differs (see `sys/mod.rs` for the contract).

#[cfg(not(all(target_os = "linux", not(mcp_bound_portable))))]
mod fallbacks;
mod files;
#[cfg(all(target_os = "linux", not(mcp_bound_portable)))]
#[path = "linux/mod.rs"]
mod os;
#[cfg(any(target_os = "macos", all(target_os = "linux", mcp_bound_portable)))]
#[path = "macos/mod.rs"]
mod os;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
#[path = "unsupported.rs"]
mod os;
mod poll;
#[cfg(any(target_os = "macos", test))]
mod procargs;
mod process;
#[cfg(target_os = "linux")]
mod procfs;
mod wait;

use super::{ChildExit, Descendants, Interest, Marked, ProcInfo, Ready, table};
pub use files::*;
pub use os::*;
pub use poll::*;
pub use process::*;
pub use wait::*;

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::libc;

/// Only for descriptors we created: O_NONBLOCK lives in the open file
/// description, shared with every process holding it.
pub fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(())
}

fn is_nonblocking(fd: BorrowedFd<'_>) -> io::Result<bool> {
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
    Ok(flags.contains(OFlag::O_NONBLOCK))
}

/// FD_CLOEXEC is per descriptor, not shared: safe on inherited ones.
pub fn set_cloexec(fd: BorrowedFd<'_>) -> io::Result<()> {
    fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    Ok(())
}

/// Whether a write failed because its reader went away: EPIPE.
pub fn reader_gone(failure: &io::Error) -> bool {
    failure.kind() == io::ErrorKind::BrokenPipe
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

/// send(2) with MSG_DONTWAIT (`SendNowait`).
fn send_nowait(fd: BorrowedFd<'_>, bytes: &[u8]) -> io::Result<usize> {
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

/// Close a raw descriptor this process owns (a forked child's leftovers).
pub fn close_raw(fd: RawFd) {
    // SAFETY: closing a descriptor number; EBADF is harmless.
    unsafe { libc::close(fd) };
}

/// Leave now, without running destructors or flushing (a forked child).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns.
    unsafe { libc::_exit(code) }
}

/// Read from a descriptor, blocking, again after a signal (spawn's
/// report of a failed exec).
pub(super) fn read_blocking(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
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

/// execve(2) takes any argv as it is: no command line to refuse.
pub const COMMAND_LINE: Option<crate::sys::RefusedCommand> = None;

/// Unix forks its watchdog (`FORK`), which has the call in memory.
pub const HEIR: Option<crate::sys::Heirs> = None;

/// No Job Object on Unix: a tree is a group, its limits a cgroup's.
pub const JOBS: Option<crate::sys::Jobs> = None;

/// poll(2) waits for any descriptor (see `Sink`): no relay.
pub const RELAYS: Option<crate::sys::Relays> = None;

/// fork(2), and the forked watchdog's detach.
pub const FORK: Option<crate::sys::Fork> = Some(crate::sys::Fork {
    fork: fork_process,
    detach,
});

/// setrlimit(2).
pub const RLIMITS: Option<crate::sys::Rlimits> = Some(crate::sys::Rlimits {
    set: set_rlimit,
    hard: hard_rlimit,
    may_set: may_set_rlimit,
});

/// clone3 into a cgroup: Some(pid) in the parent, None in the child.
pub(in crate::sys) type CloneIntoCgroup = fn(BorrowedFd<'_>) -> io::Result<Option<i32>>;

/// Whether a helper can be sent what a terminal sends: on Unix, always
/// (a signal reaches its group whatever our terminal is).
pub fn has_console() -> bool {
    true
}

/// How a user makes a file theirs alone, as `trust`'s lines advise it.
pub const MAKE_PRIVATE: &str = "chmod 600";

/// Our standard descriptor `n` (0, 1, 2): on Unix, `n` itself.
pub fn std_fd(n: i32) -> RawFd {
    n
}

/// A pipe between us and a helper: (ours, theirs), ours non-blocking
/// (O_NONBLOCK is on our end's open file description alone) and grown
/// to 1 MiB where the system allows, so a burst waits in the pipe.
pub fn helper_pipe(from_helper: bool) -> io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::{AsFd, OwnedFd};
    let (read, write) = pipe_cloexec()?;
    let (ours, theirs) = match from_helper {
        true => (OwnedFd::from(read), OwnedFd::from(write)),
        false => (OwnedFd::from(write), OwnedFd::from(read)),
    };
    set_nonblocking(ours.as_fd())?;
    if let Some(grow) = os::GROW_PIPE {
        grow(ours.as_fd(), 1 << 20);
    }
    Ok((ours, theirs))
}

/// Close a pipe to or from a helper that the loop holds.
pub fn close_pipe(file: File) {
    drop(file);
}

/// Read a pipe the loop holds: on Unix, a non-blocking read(2).
pub fn read_pipe(file: &mut File, into: &mut [u8]) -> io::Result<usize> {
    io::Read::read(file, into)
}

/// Write to a descriptor the loop holds: on Unix, write(2).
pub fn write_pipe(file: &mut File, bytes: &[u8]) -> io::Result<usize> {
    io::Write::write(file, bytes)
}

/// Signals delivered into the poll set through a self-pipe. No thread
/// ever handles a signal: the handler only counts it and writes one
/// wake-up byte, and the poll loop decides what it means. Counting (rather
/// than reading signal numbers from the pipe) means a storm of SIGCHLD
/// that fills the pipe can never hide a SIGTERM, and two SIGINTs that land
/// in one turn still count as two (the second escalates to KILL).
mod signal_pipe {
    use std::io;
    use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
    use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

    use nix::errno::Errno;
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

    use super::TERMINATING;
    use crate::sys::Pending;

    const SLOTS: usize = 65;
    static COUNTS: [AtomicU32; SLOTS] = [const { AtomicU32::new(0) }; SLOTS];
    static WAKE_FD: AtomicI32 = AtomicI32::new(-1);

    extern "C" fn on_signal(signo: nix::libc::c_int) {
        // Only async-signal-safe work here: an atomic add and one write(2).
        let saved = Errno::last_raw();
        if let Some(slot) = usize::try_from(signo).ok().and_then(|i| COUNTS.get(i)) {
            slot.fetch_add(1, Ordering::Relaxed);
        }
        let fd = WAKE_FD.load(Ordering::Relaxed);
        if fd >= 0 {
            let byte = 1u8;
            // SAFETY: writing one byte from a valid stack buffer; a full pipe
            // (EAGAIN) is fine because the count above is the truth.
            unsafe { nix::libc::write(fd, (&byte as *const u8).cast(), 1) };
        }
        Errno::set_raw(saved);
    }

    /// The read end is polled by the supervisor; the write end lives in the
    /// handler's static and is never inherited (both are O_CLOEXEC).
    pub struct SignalPipe {
        read: OwnedFd,
        _write: OwnedFd,
    }

    impl SignalPipe {
        /// Install handlers for the terminating signals and SIGCHLD, and ignore
        /// SIGPIPE (EPIPE is handled where it happens). A terminating signal
        /// that was ignored when we started stays ignored, as in GNU timeout.
        pub fn install() -> io::Result<SignalPipe> {
            let (read, write) = super::pipe_cloexec_nonblocking()?;
            WAKE_FD.store(write.as_raw_fd(), Ordering::SeqCst);
            let handler = SigAction::new(
                SigHandler::Handler(on_signal),
                SaFlags::SA_RESTART | SaFlags::SA_NOCLDSTOP,
                SigSet::empty(),
            );
            let ignore = SigAction::new(SigHandler::SigIgn, SaFlags::empty(), SigSet::empty());
            for signo in TERMINATING {
                let signal = Signal::try_from(signo).map_err(io::Error::from)?;
                // SAFETY: the handler is async-signal-safe (see on_signal).
                let previous = unsafe { sigaction(signal, &handler) }.map_err(io::Error::from)?;
                if previous.handler() == SigHandler::SigIgn {
                    // SAFETY: restoring SIG_IGN installs no code.
                    unsafe { sigaction(signal, &ignore) }.map_err(io::Error::from)?;
                }
            }
            // SAFETY: as above. Our handler also replaces an inherited SIG_IGN
            // for SIGCHLD, under which exited children would vanish unobserved.
            unsafe { sigaction(Signal::SIGCHLD, &handler) }.map_err(io::Error::from)?;
            // SAFETY: as above. Caught, SIGUSR1 no longer kills mcp-bound.
            unsafe { sigaction(Signal::SIGUSR1, &handler) }.map_err(io::Error::from)?;
            unsafe { sigaction(Signal::SIGPIPE, &ignore) }.map_err(io::Error::from)?;
            // A mask inherited from our parent would keep these from ever
            // arriving; a signal already pending is delivered right here.
            let mut handled = SigSet::empty();
            handled.add(Signal::SIGCHLD);
            handled.add(Signal::SIGUSR1);
            for signo in TERMINATING {
                handled.add(Signal::try_from(signo).map_err(io::Error::from)?);
            }
            handled.thread_unblock().map_err(io::Error::from)?;
            Ok(SignalPipe {
                read,
                _write: write,
            })
        }

        pub fn fd(&self) -> BorrowedFd<'_> {
            self.read.as_fd()
        }

        /// In a forked child that keeps running our code (the watchdog): the
        /// handlers stay, but must never write to the pipe, whose number the
        /// child closes and may reuse.
        pub fn disarm_in_child() {
            WAKE_FD.store(-1, Ordering::SeqCst);
        }

        /// Whether a terminating signal arrived and was not yet taken.
        pub fn terminating_arrived() -> bool {
            TERMINATING
                .iter()
                .any(|signo| COUNTS[*signo as usize].load(Ordering::Relaxed) > 0)
        }

        /// Empty the pipe and collect the counts.
        pub fn take(&self) -> Pending {
            let mut sink = [0u8; 256];
            while let Ok(n) = nix::unistd::read(&self.read, &mut sink) {
                if n == 0 {
                    break;
                }
            }
            let mut pending = Pending {
                child_changed: COUNTS[Signal::SIGCHLD as usize].swap(0, Ordering::Relaxed) > 0,
                terminating: Vec::new(),
                debug_toggles: COUNTS[Signal::SIGUSR1 as usize].swap(0, Ordering::Relaxed),
            };
            for signo in TERMINATING {
                let count = COUNTS[signo as usize].swap(0, Ordering::Relaxed);
                if count > 0 {
                    pending.terminating.push((crate::sys::Signal(signo), count));
                }
            }
            pending
        }
    }

    impl Drop for SignalPipe {
        /// The handlers stay installed: forget the write end before it is
        /// closed, so a later signal writes nowhere rather than into whatever
        /// file reuses its number.
        fn drop(&mut self) {
            let _ = WAKE_FD.compare_exchange(
                self._write.as_raw_fd(),
                -1,
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
        }
    }

    /// Tests that install the handlers take this: the write end lives in a
    /// static, and two pipes at once would share it.
    #[cfg(test)]
    pub(crate) static INSTALLED: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[cfg(test)]
    mod tests {
        use super::*;

        /// The handlers outlive the pipe; the descriptor number does not stay
        /// ours. A signal after the drop must not write into whatever file
        /// reuses that number (it put a stray byte into a helper's stdout pipe).
        #[test]
        fn after_the_pipe_is_dropped_a_signal_writes_nowhere() {
            let _installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
            let pipe = SignalPipe::install().unwrap();
            let write = pipe._write.as_raw_fd();
            drop(pipe);
            let (read, reused) = super::super::pipe_cloexec_nonblocking().unwrap();
            // SAFETY: raising a signal whose handler is ours.
            unsafe { nix::libc::raise(nix::libc::SIGCHLD) };
            let mut buf = [0u8; 8];
            let got = nix::unistd::read(&read, &mut buf);
            assert_eq!(
                got,
                Err(Errno::EAGAIN),
                "the handler wrote into descriptor {} (the pipe's old write end was {write})",
                reused.as_raw_fd()
            );
        }
    }
}
pub use signal_pipe::*;
