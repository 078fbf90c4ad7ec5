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

    /// In a forked child that keeps running our code (the watchdog): the
    /// handlers stay, but must never write to the pipe, whose number the
    /// child closes and may reuse.
    pub fn disarm_in_child() {
        WAKE_FD.store(-1, Ordering::SeqCst);
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

/// The real-time signals this system has, as libc reports them (glibc
/// keeps the first two for itself, so SIGRTMIN is 34 on Linux).
#[cfg(target_os = "linux")]
fn real_time() -> std::ops::RangeInclusive<i32> {
    nix::libc::SIGRTMIN()..=nix::libc::SIGRTMAX()
}

#[cfg(not(target_os = "linux"))]
#[allow(clippy::reversed_empty_ranges)]
fn real_time() -> std::ops::RangeInclusive<i32> {
    1..=0
}

/// `TERM` for 15; real-time signals as GNU names them (`RTMIN`, `RTMIN+1`,
/// …, `RTMAX-1`, `RTMAX`: the nearer end); the number for anything else.
pub fn name(signo: i32) -> String {
    if let Ok(signal) = Signal::try_from(signo) {
        return signal.as_str().trim_start_matches("SIG").to_string();
    }
    let range = real_time();
    let (min, max) = (*range.start(), *range.end());
    match signo {
        _ if !range.contains(&signo) => signo.to_string(),
        _ if signo == min => "RTMIN".into(),
        _ if signo == max => "RTMAX".into(),
        _ if signo <= min + (max - min) / 2 => format!("RTMIN+{}", signo - min),
        _ => format!("RTMAX-{}", max - signo),
    }
}

/// Parse a signal as GNU timeout does: a name in any case with or without
/// `SIG` (`RTMIN+N` and `RTMAX-N` included), or a number.
pub fn parse(text: &str) -> Result<i32, String> {
    let trimmed = text.trim();
    let invalid = || format!("'{text}' is not a signal (use e.g. TERM, SIGINT, 9, RTMIN+1)");
    if let Ok(number) = trimmed.parse::<i32>() {
        return match Signal::try_from(number) {
            Ok(signal) => Ok(signal as i32),
            Err(_) if real_time().contains(&number) => Ok(number),
            Err(_) => Err(invalid()),
        };
    }
    let upper = trimmed.to_ascii_uppercase();
    let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
    if let Some(signo) = parse_real_time(bare) {
        return signo.ok_or_else(invalid);
    }
    format!("SIG{bare}")
        .parse::<Signal>()
        .map(|s| s as i32)
        .map_err(|_| invalid())
}

/// `RTMIN`, `RTMIN+N`, `RTMAX`, `RTMAX-N`: None if not of that shape,
/// Some(None) if of that shape but out of range.
fn parse_real_time(bare: &str) -> Option<Option<i32>> {
    let range = real_time();
    let (base, rest, sign) = if let Some(rest) = bare.strip_prefix("RTMIN") {
        (*range.start(), rest, 1)
    } else if let Some(rest) = bare.strip_prefix("RTMAX") {
        (*range.end(), rest, -1)
    } else {
        return None;
    };
    let offset = match rest {
        "" => 0,
        _ => {
            let digits = rest.strip_prefix(if sign > 0 { '+' } else { '-' });
            match digits.filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())) {
                Some(d) => match d.parse::<i32>() {
                    Ok(n) => n,
                    Err(_) => return Some(None),
                },
                None => return Some(None),
            }
        }
    };
    let signo = base.checked_add(sign * offset)?;
    Some(range.contains(&signo).then_some(signo))
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
        let (read, reused) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK).unwrap();
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

    #[cfg(target_os = "linux")]
    #[test]
    fn real_time_signals_as_gnu_names_them() {
        let (min, max) = (nix::libc::SIGRTMIN(), nix::libc::SIGRTMAX());
        assert_eq!(parse("RTMIN"), Ok(min));
        assert_eq!(parse("sigrtmin+1"), Ok(min + 1));
        assert_eq!(parse("SIGRTMAX-2"), Ok(max - 2));
        assert_eq!(parse("rtmax"), Ok(max));
        assert_eq!(parse(&min.to_string()), Ok(min));
        assert_eq!(parse(&max.to_string()), Ok(max));
        for bad in [
            "RTMIN-1", "RTMAX+1", "RTMIN+", "RTMIN+x", "RTMIN+99", "RTMAX-99", "RTMINX",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert!(parse(&(max + 1).to_string()).is_err());
        assert_eq!(name(min), "RTMIN");
        assert_eq!(name(min + 1), "RTMIN+1");
        assert_eq!(name(max - 2), "RTMAX-2");
        assert_eq!(name(max), "RTMAX");
        // Every name reads back as its number.
        for signo in min..=max {
            assert_eq!(parse(&name(signo)), Ok(signo), "{signo}");
        }
    }
}
