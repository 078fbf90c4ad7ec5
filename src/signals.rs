//! Signals delivered into the poll set through a self-pipe; signal names and
//! parsing. No thread ever handles a signal: the handler only counts it and
//! writes one wake-up byte, and the poll loop decides what it means.
//!
//! Counting (rather than reading signal numbers from the pipe) means a storm
//! of SIGCHLD that fills the pipe can never hide a SIGTERM, and two SIGINTs
//! that land in one turn still count as two (the second escalates to KILL).

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

/// Signals that ask mcp-bound to stop; they cancel the helper.
pub const TERMINATING: [i32; 4] = [
    Signal::SIGINT as i32,
    Signal::SIGTERM as i32,
    Signal::SIGHUP as i32,
    Signal::SIGQUIT as i32,
];

pub const SIGKILL: i32 = Signal::SIGKILL as i32;
pub const SIGCONT: i32 = Signal::SIGCONT as i32;
pub const SIGTERM: i32 = Signal::SIGTERM as i32;
pub const SIGPIPE: i32 = Signal::SIGPIPE as i32;

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

/// What arrived since the last `take`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pending {
    pub child_changed: bool,
    /// Terminating signals with how many of each arrived.
    pub terminating: Vec<(i32, u32)>,
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
        let (read, write) =
            nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK).map_err(io::Error::from)?;
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
        unsafe { sigaction(Signal::SIGPIPE, &ignore) }.map_err(io::Error::from)?;
        // A mask inherited from our parent would keep these from ever
        // arriving; a signal already pending is delivered right here.
        let mut handled = SigSet::empty();
        handled.add(Signal::SIGCHLD);
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
        };
        for signo in TERMINATING {
            let count = COUNTS[signo as usize].swap(0, Ordering::Relaxed);
            if count > 0 {
                pending.terminating.push((signo, count));
            }
        }
        pending
    }
}

/// `TERM` for 15; the number itself for anything unnamed.
pub fn name(signo: i32) -> String {
    match Signal::try_from(signo) {
        Ok(signal) => signal.as_str().trim_start_matches("SIG").to_string(),
        Err(_) => signo.to_string(),
    }
}

/// Parse a signal as GNU timeout does: a name in any case with or without
/// `SIG`, or a number.
pub fn parse(text: &str) -> Result<i32, String> {
    let trimmed = text.trim();
    let invalid = || format!("'{text}' is not a signal (use e.g. TERM, SIGINT, 9)");
    if let Ok(number) = trimmed.parse::<i32>() {
        return Signal::try_from(number)
            .map(|s| s as i32)
            .map_err(|_| invalid());
    }
    let upper = trimmed.to_ascii_uppercase();
    let full = if upper.starts_with("SIG") {
        upper
    } else {
        format!("SIG{upper}")
    };
    full.parse::<Signal>()
        .map(|s| s as i32)
        .map_err(|_| invalid())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers() {
        assert_eq!(parse("TERM"), Ok(15));
        assert_eq!(parse("sigint"), Ok(2));
        assert_eq!(parse("Kill"), Ok(9));
        assert_eq!(parse("9"), Ok(9));
        assert_eq!(parse("SIGUSR1"), Ok(Signal::SIGUSR1 as i32));
        for bad in ["", "0", "-1", "999", "TERMX", "SIG", "1.5"] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(name(15), "TERM");
        assert_eq!(name(9), "KILL");
    }
}
