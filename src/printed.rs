//! What a command prints on stdout, under one rule for a stdout that
//! fails. A reader that went away (EPIPE, as `| head` or `| grep -q`
//! leave it; `sys::reader_gone` says which failures are that) took what
//! it wanted: the printing stops without a word, and the exit status is
//! the one the command would have had. Any other failure (a full disk,
//! EIO) stops it too, and is the command's I/O error, said once.
//! `Printed` is a writer that stops at its first failure and keeps it,
//! so that a command streaming rows writes them as it always did and
//! asks once, at its end.

use std::cell::Cell;
use std::io::{self, Write};
use std::rc::Rc;

use crate::error::Error;

/// A writer that, once a write fails, discards the rest and keeps what
/// ended it.
pub(crate) struct Printed<W: Write> {
    out: W,
    failure: Option<io::Error>,
    /// Set once the printing stopped, for whoever waits on its behalf
    /// (`log -f`: nothing more can be shown).
    stopped: Rc<Cell<bool>>,
}

impl<W: Write> Printed<W> {
    pub(crate) fn new(out: W) -> Printed<W> {
        Printed {
            out,
            failure: None,
            stopped: Rc::new(Cell::new(false)),
        }
    }

    /// Whether the printing stopped, as a flag that outlives a borrow.
    pub(crate) fn stopped(&self) -> Rc<Cell<bool>> {
        Rc::clone(&self.stopped)
    }

    fn keep(&mut self, failure: io::Error) {
        self.stopped.set(true);
        self.failure = Some(failure);
    }

    /// Flush what is held, then the printing's end: `Ok` when it was
    /// whole or its reader went away, the failure otherwise.
    pub(crate) fn finish(&mut self) -> io::Result<()> {
        // Never fails: a failure is kept, and read below.
        let _ = Write::flush(self);
        match self.failure.take() {
            Some(failure) if !crate::sys::reader_gone(&failure) => Err(failure),
            _ => Ok(()),
        }
    }
}

impl<W: Write> Write for Printed<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.failure.is_none()
            && let Err(failure) = self.out.write_all(bytes)
        {
            self.keep(failure);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.failure.is_none()
            && let Err(failure) = self.out.flush()
        {
            self.keep(failure);
        }
        Ok(())
    }
}

/// Print `text` on stdout, whole: `Ok` too when its reader went away.
pub(crate) fn print(text: &str) -> io::Result<()> {
    let mut out = Printed::new(io::stdout().lock());
    let _ = out.write_all(text.as_bytes());
    out.finish()
}

/// A subcommand's stdout failed: its I/O error (exit 2), as a journal
/// it cannot read is.
pub(crate) fn failed(failure: io::Error) -> Error {
    Error::VerifyUsage(format!("stdout: {failure}"))
}

/// As [`print`], for a subcommand: a failure is its I/O error.
pub(crate) fn print_or_fail(text: &str) -> Result<(), Error> {
    print(text).map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that takes `room` bytes, then fails as told.
    struct Failing {
        room: usize,
        taken: Vec<u8>,
        with: io::ErrorKind,
    }

    impl Write for Failing {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(self.with.into());
            }
            let n = bytes.len().min(self.room);
            self.room -= n;
            self.taken.extend_from_slice(&bytes[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn printed(room: usize, with: io::ErrorKind) -> Printed<Failing> {
        Printed::new(Failing {
            room,
            taken: Vec::new(),
            with,
        })
    }

    #[test]
    fn a_reader_gone_stops_the_printing_and_is_no_failure() {
        let mut out = printed(5, io::ErrorKind::BrokenPipe);
        let stopped = out.stopped();
        writeln!(out, "one two").unwrap();
        assert!(stopped.get());
        writeln!(out, "three").unwrap();
        assert_eq!(out.out.taken, b"one t", "nothing written after the failure");
        assert!(out.finish().is_ok());
    }

    #[test]
    fn another_failure_is_kept_from_its_first_write_to_the_end() {
        let mut out = printed(0, io::ErrorKind::StorageFull);
        writeln!(out, "one").unwrap();
        out.out.room = 100;
        writeln!(out, "two").unwrap();
        assert!(out.out.taken.is_empty());
        let failure = out.finish().unwrap_err();
        assert_eq!(failure.kind(), io::ErrorKind::StorageFull);
    }

    #[test]
    fn a_whole_printing_is_not_stopped() {
        let mut out = printed(100, io::ErrorKind::BrokenPipe);
        writeln!(out, "one").unwrap();
        assert!(out.finish().is_ok());
        assert!(!out.stopped().get());
        assert_eq!(out.out.taken, b"one\n");
    }
}
