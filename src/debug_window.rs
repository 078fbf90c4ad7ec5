//! The debug window: `SIGUSR1` opens it, for `--debug-window` or until a
//! second `SIGUSR1`, and while it is open live stderr is not rate-limited
//! (the queue's bound and the window's own byte bound stay). Pure: when a
//! window is open, why it closed, and the facts the record keeps, a
//! bounded list of windows with a count past it.

use std::time::{Duration, Instant};

use crate::record::WindowEnd;

/// Windows listed in the record; later ones are only counted.
pub(crate) const LISTED: usize = 16;

/// One window that closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Closed {
    pub opened: Instant,
    pub closed: Instant,
    pub end: WindowEnd,
    /// The helper's stderr bytes it let through.
    pub bytes_forwarded: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Windows {
    /// How long a window stays open; zero: SIGUSR1 is refused.
    pub length: Duration,
    /// Most bytes one window lets through.
    pub bytes: u64,
    open: Option<Instant>,
    pub listed: Vec<Closed>,
    pub not_listed: u64,
    /// Every window that closed, and their time open in all.
    pub count: u64,
    pub open_total: Duration,
}

impl Windows {
    pub(crate) fn new(length: Duration, bytes: u64) -> Windows {
        Windows {
            length,
            bytes,
            open: None,
            listed: Vec::new(),
            not_listed: 0,
            count: 0,
            open_total: Duration::ZERO,
        }
    }

    pub(crate) fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// When the open window closes on its own.
    pub(crate) fn until(&self) -> Option<Instant> {
        self.open.map(|at| at + self.length)
    }

    /// Open one; false if windows are refused (`--debug-window 0`) or one
    /// is open.
    pub(crate) fn open(&mut self, now: Instant) -> bool {
        if self.length.is_zero() || self.open.is_some() {
            return false;
        }
        self.open = Some(now);
        true
    }

    /// Close the open window, if any.
    pub(crate) fn close(
        &mut self,
        now: Instant,
        end: WindowEnd,
        bytes_forwarded: u64,
    ) -> Option<Closed> {
        let opened = self.open.take()?;
        let closed = Closed {
            opened,
            closed: now,
            end,
            bytes_forwarded,
        };
        self.count += 1;
        self.open_total += now.saturating_duration_since(opened);
        if self.listed.len() < LISTED {
            self.listed.push(closed);
        } else {
            self.not_listed += 1;
        }
        Some(closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_open_close_and_are_listed_up_to_the_bound() {
        let t0 = Instant::now();
        let mut windows = Windows::new(Duration::from_secs(5), 1 << 20);
        assert!(windows.open(t0));
        assert!(!windows.open(t0), "one at a time");
        assert_eq!(windows.until(), Some(t0 + Duration::from_secs(5)));
        let closed = windows
            .close(t0 + Duration::from_secs(2), WindowEnd::Signal, 7)
            .unwrap();
        assert_eq!(closed.bytes_forwarded, 7);
        assert_eq!(windows.close(t0, WindowEnd::Signal, 0), None, "none open");
        for i in 0..LISTED as u64 + 3 {
            windows.open(t0);
            windows.close(t0 + Duration::from_secs(i), WindowEnd::Time, 0);
        }
        assert_eq!(windows.listed.len(), LISTED);
        assert_eq!(windows.not_listed, 4);
        assert_eq!(windows.count, LISTED as u64 + 4);
    }

    #[test]
    fn a_zero_length_refuses_every_window() {
        let mut windows = Windows::new(Duration::ZERO, 1);
        assert!(!windows.open(Instant::now()));
        assert!(!windows.is_open());
    }
}
