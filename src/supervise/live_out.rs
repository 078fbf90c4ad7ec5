//! Live output: the live stderr budget (`live`) joined to our own stderr.
//! It owns the write side: what the budget let through is written as far
//! as our stderr takes it without blocking, and at exit it gets a bounded
//! time to finish.

use crate::sys::fd::RawFd;
use std::time::{Duration, Instant};

use crate::debug_window::{Closed, Windows};
use crate::live::Live;
use crate::live::LiveBudget;
use crate::record::WindowEnd;
use crate::redact::Redactor;
use crate::sink::{Sink, Wrote};

/// At exit, the most time the queue gets to reach our stderr.
pub(crate) const EXIT_LIMIT: Duration = Duration::from_millis(500);

pub(crate) struct LiveOutput {
    live: Live,
    sink: Sink,
    windows: Windows,
}

/// What live output did, in the helper's bytes, and its debug windows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LiveCounts {
    pub forwarded: u64,
    pub dropped: u64,
    pub unsent: u64,
    pub windows: Option<Windows>,
}

/// What a SIGUSR1 did, for the stderr log and our stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Toggled {
    Opened,
    Closed(Closed),
    /// --debug-window 0.
    Refused,
}

impl LiveOutput {
    pub(super) fn new(
        budget: LiveBudget,
        now: Instant,
        redactor: Redactor,
        sink: Sink,
    ) -> LiveOutput {
        LiveOutput {
            live: Live::new(budget.rate, budget.burst, now, redactor),
            sink,
            windows: Windows::new(budget.window, budget.window_bytes),
        }
    }

    /// A SIGUSR1: open the debug window, or close the open one. Our own
    /// line says so among the helper's.
    pub(super) fn toggle_window(&mut self, now: Instant) -> Toggled {
        if self.windows.is_open() {
            return Toggled::Closed(self.close_window(now, WindowEnd::Signal));
        }
        if !self.windows.open(now) {
            return Toggled::Refused;
        }
        self.live.open_window(now, self.windows.bytes);
        self.live.notice(&format!(
            "[mcp-bound: debug window open: every stderr line for {} or {}]\n",
            humantime::format_duration(self.windows.length),
            crate::repeats::size(self.windows.bytes)
        ));
        Toggled::Opened
    }

    /// The open window's end, if it passed or its bytes are spent.
    pub(super) fn window_due(&mut self, now: Instant) -> Option<Closed> {
        let end = if self.live.window_spent() {
            WindowEnd::Bytes
        } else if self.windows.until().is_some_and(|until| now >= until) {
            WindowEnd::Time
        } else {
            return None;
        };
        Some(self.close_window(now, end))
    }

    /// The call ends: an open window closes with it.
    pub(super) fn end_window(&mut self, now: Instant) -> Option<Closed> {
        self.windows
            .is_open()
            .then(|| self.close_window(now, WindowEnd::Exit))
    }

    fn close_window(&mut self, now: Instant, end: WindowEnd) -> Closed {
        let through = self.live.close_window().unwrap_or(0);
        let closed = self
            .windows
            .close(now, end, through)
            .expect("a window was open");
        self.live.notice(&format!(
            "[mcp-bound: debug window closed ({}) after {}, {} bytes let through]\n",
            end_words(end),
            humantime::format_duration(Duration::from_secs(
                now.saturating_duration_since(closed.opened).as_secs()
            )),
            through
        ));
        closed
    }

    /// Diagnostic bytes, in order: queue what the budget allows, and write.
    pub(super) fn offer(&mut self, now: Instant, bytes: &[u8]) {
        self.live.offer(now, bytes);
    }

    /// A line of mcp-bound's own, among the helper's.
    pub(super) fn notice(&mut self, line: &str) {
        self.live.notice(line);
    }

    /// Time passed: a pending drop marker may now fit.
    pub(super) fn tick(&mut self, now: Instant) {
        self.live.tick(now);
    }

    /// When the pending marker will fit, or the debug window closes.
    pub(super) fn wake_at(&self) -> Option<Instant> {
        [self.live.wake_at(), self.windows.until()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Our stderr, when bytes wait for it.
    pub(super) fn write_interest(&self) -> Option<RawFd> {
        if self.live.is_empty() {
            None
        } else {
            self.sink.poll_fd()
        }
    }

    /// poll() said our stderr may take bytes (or is gone).
    pub(super) fn on_writable(&mut self) {
        self.sink.writable();
        self.flush();
    }

    /// Write what waits, as far as our stderr takes it. If its reader is
    /// gone, what waits is counted as dropped (not forgotten).
    pub(super) fn flush(&mut self) {
        while !self.live.is_empty() {
            match self.sink.try_write(self.live.front()) {
                Wrote::Bytes(n) => self.live.consume(n),
                Wrote::WouldBlock => break,
                Wrote::Gone(_) => {
                    self.live.reader_gone();
                    return;
                }
            }
        }
    }

    /// The helper's stderr ended: a held partial line goes out (masked).
    pub(super) fn finish_stream(&mut self) {
        self.live.finish();
        self.flush();
    }

    /// The streams are closed: give what waits (and a drop marker the
    /// budget now allows) a bounded time to reach our stderr.
    pub(super) fn drain_at_exit(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            self.live.tick(Instant::now());
            self.flush();
            if self.live.is_empty() || self.sink.wait_writable(deadline).is_err() {
                return;
            }
        }
    }

    pub(super) fn counts(&self) -> LiveCounts {
        LiveCounts {
            forwarded: self.live.bytes_forwarded,
            dropped: self.live.bytes_dropped,
            unsent: self.live.unsent(),
            windows: (self.windows.count > 0).then(|| self.windows.clone()),
        }
    }
}

/// Why a window closed, in words.
pub(crate) fn end_words(end: WindowEnd) -> &'static str {
    match end {
        WindowEnd::Signal => "SIGUSR1",
        WindowEnd::Time => "its time passed",
        WindowEnd::Bytes => "its bytes were spent",
        WindowEnd::Exit => "the call ended",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::fd::AsRawFd;
    use std::io::Read;

    /// Live output with a generous budget, writing into `writer`'s pipe.
    fn output(now: Instant, writer: &std::io::PipeWriter) -> LiveOutput {
        let budget = LiveBudget {
            rate: 1 << 20,
            burst: 1 << 16,
            window: Duration::from_secs(1),
            window_bytes: 1 << 20,
        };
        LiveOutput::new(
            budget,
            now,
            Redactor::default(),
            Sink::for_fd(writer.as_raw_fd()),
        )
    }

    #[test]
    fn writes_what_the_budget_allows_and_counts_in_helper_bytes() {
        let (mut reader, writer) = std::io::pipe().unwrap();
        let now = Instant::now();
        let mut out = output(now, &writer);
        out.offer(now, b"one token=abc123\ntwo");
        out.flush();
        out.finish_stream();
        out.drain_at_exit(EXIT_LIMIT);
        let counts = out.counts();
        // The sink holds its own description of the pipe: drop it too.
        drop(out);
        drop(writer);
        let mut shown = String::new();
        reader.read_to_string(&mut shown).unwrap();
        assert_eq!(shown, "one token=[REDACTED]\ntwo");
        assert_eq!(
            counts,
            LiveCounts {
                forwarded: 20,
                dropped: 0,
                unsent: 0,
                windows: None,
            }
        );
    }

    #[test]
    fn a_reader_that_went_away_turns_what_waits_into_drops() {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let now = Instant::now();
        let mut out = output(now, &writer);
        out.offer(now, b"lost\n");
        out.flush();
        out.offer(now, b"after\n");
        out.drain_at_exit(EXIT_LIMIT);
        assert_eq!(
            out.counts(),
            LiveCounts {
                forwarded: 0,
                dropped: 11,
                unsent: 0,
                windows: None,
            }
        );
        assert_eq!(out.write_interest(), None, "nothing waits");
    }
}
