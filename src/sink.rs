//! An inherited output descriptor (our stdout; also our stderr and a
//! `--record-fd` at exit) as a sink that never blocks the poll loop and never
//! changes the descriptor's flags (O_NONBLOCK is shared with every process
//! that holds it). How it writes depends on what the descriptor is:
//! - a FIFO: a second open file description through /proc (Linux), made
//!   non-blocking for us alone, so large writes are safe;
//! - a socket: send(2) with MSG_DONTWAIT;
//! - a regular file or /dev/null: plain writes, which do not wait on a reader;
//! - anything else (a terminal): at most PIPE_BUF bytes after poll() says
//!   POLLOUT, which the kernel accepts without blocking;
//! - on Windows, any handle: through a relay, a thread that does the
//!   blocking write, polled as a pipe;
//!
//! `sys::output_kind` says which it is.
//! - absent (closed): output is drained and counted, never written.

use crate::sys::fd::{AsFd, AsRawFd, FromRawFd, RawFd};
use std::fs::File;
use std::io::{self, Write};
use std::mem::ManuallyDrop;
use std::time::{Duration, Instant};

use crate::sys;

const PIPE_BUF: usize = 4096;

/// What the descriptor is decides how it is written.
type Mode = sys::OutputKind;

/// May a write be tried before poll() reported POLLOUT?
fn write_without_poll(mode: &Mode) -> bool {
    !matches!(mode, Mode::AfterPollout | Mode::Absent)
}

/// What one write attempt did.
#[derive(Debug)]
pub(crate) enum Wrote {
    Bytes(usize),
    /// No room now: wait for poll() to report POLLOUT.
    WouldBlock,
    /// The reader is gone (EPIPE) or the descriptor failed.
    Gone(io::Error),
}

pub(crate) struct Sink {
    mode: Mode,
    fd: RawFd,
    /// Whether a write may be tried now. Cleared by WouldBlock, and after
    /// every write in AfterPollout mode; set again by `writable()`.
    ready: bool,
    /// None only for `absent()`, which has no descriptor at all.
    file: Option<ManuallyDrop<File>>,
}

impl Sink {
    /// Wrap an inherited descriptor without taking ownership: it is never
    /// closed through the sink.
    pub(crate) fn for_fd(fd: RawFd) -> Sink {
        // SAFETY: the descriptor is only used if open (`output_kind` checks);
        // ManuallyDrop keeps us from closing it.
        let file = ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
        let mode = sys::output_kind(fd, &file);
        // One that must wait for POLLOUT (a terminal, a FIFO that cannot
        // be re-opened) may take a write already: ask once, so that a line
        // written "best effort, never waited for" is not dropped unasked.
        let ready = write_without_poll(&mode)
            || (matches!(mode, Mode::AfterPollout) && Self::writable_now(fd));
        Sink {
            mode,
            fd,
            ready,
            file: Some(file),
        }
    }

    fn writable_now(fd: RawFd) -> bool {
        let mut ready = Vec::with_capacity(1);
        sys::ready_now(&[sys::Interest::new(fd, false, true)], &mut ready).is_ok()
            && ready.first().is_some_and(|r| r.writable)
    }

    /// A sink that takes nothing (output is captured, not forwarded).
    pub(crate) fn absent() -> Sink {
        Sink {
            mode: Mode::Absent,
            fd: -1,
            ready: false,
            file: None,
        }
    }

    pub(crate) fn stdout() -> Sink {
        Self::for_fd(sys::std_fd(1))
    }

    pub(crate) fn stderr() -> Sink {
        Self::for_fd(sys::std_fd(2))
    }

    pub(crate) fn is_absent(&self) -> bool {
        matches!(self.mode, Mode::Absent)
    }

    /// The descriptor to poll for POLLOUT and for a vanished reader.
    pub(crate) fn poll_fd(&self) -> Option<RawFd> {
        match &self.mode {
            Mode::Absent => None,
            Mode::Reopened(file) => Some(file.as_raw_fd()),
            _ => Some(self.fd),
        }
    }

    /// poll() reported POLLOUT (or an error, which the next write reports).
    pub(crate) fn writable(&mut self) {
        self.ready = !self.is_absent();
    }

    /// Write some of `bytes` if a write may be tried now, keeping track of
    /// readiness; EINTR is retried.
    pub(crate) fn try_write(&mut self, bytes: &[u8]) -> Wrote {
        while self.ready {
            match self.write(bytes) {
                Ok(n) => {
                    self.ready = write_without_poll(&self.mode);
                    return Wrote::Bytes(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.ready = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Wrote::Gone(e),
            }
        }
        Wrote::WouldBlock
    }

    /// Write some of `bytes`. WouldBlock means: wait for POLLOUT.
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let Some(inherited) = self.file.as_mut() else {
            return Err(io::Error::from(io::ErrorKind::BrokenPipe));
        };
        match &mut self.mode {
            Mode::Reopened(file) => file.write(bytes),
            Mode::AlreadyNonblocking | Mode::NeverWaits => inherited.write(bytes),
            Mode::Socket(send) => send(inherited.as_fd(), bytes),
            Mode::AfterPollout => inherited.write(&bytes[..bytes.len().min(PIPE_BUF)]),
            Mode::Relayed => sys::write_pipe(inherited, bytes),
            Mode::Absent => Err(io::Error::from(io::ErrorKind::BrokenPipe)),
        }
    }

    /// Write all of `bytes`, waiting for room at most `limit` in total. A
    /// reader that never reads cannot hang mcp-bound's exit: after the
    /// limit the rest is dropped and TimedOut returned.
    pub(crate) fn write_all_within(&mut self, mut bytes: &[u8], limit: Duration) -> io::Result<()> {
        let deadline = Instant::now() + limit;
        while !bytes.is_empty() {
            match self.try_write(bytes) {
                Wrote::Bytes(n) => {
                    bytes = &bytes[n..];
                    continue;
                }
                Wrote::Gone(e) => return Err(e),
                Wrote::WouldBlock => {}
            }
            self.wait_writable(deadline)?;
        }
        Ok(())
    }

    /// Wait until the reader may take bytes again, or `deadline` passes
    /// (TimedOut), or the reader is gone (an error, or a hang-up that the
    /// next write reports).
    pub(crate) fn wait_writable(&mut self, deadline: Instant) -> io::Result<()> {
        let Some(fd) = self.poll_fd() else {
            return Err(io::Error::from(io::ErrorKind::BrokenPipe));
        };
        let mut ready = Vec::with_capacity(1);
        sys::poll_until(&[sys::Interest::new(fd, false, true)], &mut ready, deadline)?;
        if ready[0].writable || ready[0].error || ready[0].hangup {
            self.writable();
        }
        Ok(())
    }
}
