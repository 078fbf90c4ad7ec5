//! The stderr side of the loop. [`Intake`] is where every diagnostic byte
//! goes, in order: the capture (with its flood path), with `--live` our
//! own stderr, and with `--stderr-log` the log file. [`StderrDrain`] owns the helper's stderr pipe and
//! empties it into the intake, by reads (timed while a flood is measured)
//! or, on the flood path, by moves inside the kernel.

use crate::sys::fd::{AsFd, AsRawFd, RawFd};
use std::fs::File;
use std::io;
use std::time::Instant;

use super::Stream;
use super::live_out::{LiveCounts, LiveOutput, Toggled};
use crate::debug_window::Closed;
use crate::diagnostics::{self, Diagnostics, Took};
use crate::repeats::Repeats;
use crate::stderr_log::StderrLog;

/// Bytes read from the helper's stderr at once.
const READ_SIZE: usize = 64 * 1024;
/// Reads from one pipe per turn, so a flood on one cannot starve the rest.
pub(crate) const READS_PER_TURN: usize = 16;

/// Every diagnostic byte enters here: stderr, and stdout lines the guard
/// diverted (with mcp-bound's marker before them).
pub(crate) struct Intake {
    pub diagnostics: Diagnostics,
    pub live: Option<LiveOutput>,
    pub log: Option<StderrLog>,
    /// What filled stderr: its most frequent lines.
    pub repeats: Repeats,
    /// A SIGUSR1 that could open no window was said once already.
    pub usr1_refusal_said: bool,
}

impl Intake {
    pub(super) fn push(&mut self, now: Instant, bytes: &[u8]) {
        self.diagnostics.push(bytes);
        self.repeats.offer(bytes);
        if let Some(log) = self.log.as_mut() {
            log.offer(bytes);
        }
        if let Some(live) = self.live.as_mut() {
            live.offer(now, bytes);
        }
    }

    /// A SIGUSR1: open the debug window or close it, marked in the stderr
    /// log. A line for our stderr, once, when no window can open.
    pub(super) fn toggle_window(&mut self, now: Instant) -> Option<&'static str> {
        let toggled = self.live.as_mut().map(|live| live.toggle_window(now));
        let refusal = match toggled {
            Some(Toggled::Opened) => {
                self.mark("debug window open (SIGUSR1)");
                return None;
            }
            Some(Toggled::Closed(closed)) => {
                self.mark_closed(closed);
                return None;
            }
            Some(Toggled::Refused) => {
                "mcp-bound: SIGUSR1 ignored: --debug-window 0 refuses debug windows\n"
            }
            None => {
                "mcp-bound: SIGUSR1 ignored: live stderr is off (--live), so there is no debug window to open\n"
            }
        };
        (!std::mem::replace(&mut self.usr1_refusal_said, true)).then_some(refusal)
    }

    /// The open debug window's time passed or its bytes are spent.
    pub(super) fn window_turn(&mut self, now: Instant) {
        if let Some(closed) = self.live.as_mut().and_then(|live| live.window_due(now)) {
            self.mark_closed(closed);
        }
    }

    /// The call ends with a debug window open.
    pub(super) fn end_window(&mut self, now: Instant) {
        if let Some(closed) = self.live.as_mut().and_then(|live| live.end_window(now)) {
            self.mark_closed(closed);
        }
    }

    fn mark_closed(&mut self, closed: Closed) {
        self.mark(&format!(
            "debug window closed ({}), {} bytes let through",
            super::live_out::end_words(closed.end),
            closed.bytes_forwarded
        ));
    }

    fn mark(&mut self, text: &str) {
        if let Some(log) = self.log.as_mut() {
            log.marker(text);
        }
    }

    /// A line of mcp-bound's own for live stderr, where the helper's lines
    /// are (without --live, the stderr log's marker says it).
    pub(super) fn notice(&mut self, line: &str) {
        if let Some(live) = self.live.as_mut() {
            live.notice(line);
        }
    }

    /// Write some of what waits for the stderr log; a line for our stderr
    /// if the log just failed (said once).
    pub(super) fn log_turn(&mut self) -> Option<String> {
        let log = self.log.as_mut()?;
        log.write_some(crate::stderr_log::WRITE_PER_TURN);
        log.error_to_say.take()
    }

    /// Lines wait for the stderr log: the loop must not sleep.
    pub(super) fn log_pending(&self) -> bool {
        self.log.as_ref().is_some_and(StderrLog::pending)
    }

    pub(super) fn flush_live(&mut self) {
        if let Some(live) = self.live.as_mut() {
            live.flush();
        }
    }

    pub(super) fn live_counts(&self) -> LiveCounts {
        self.live
            .as_ref()
            .map_or_else(LiveCounts::default, LiveOutput::counts)
    }
}

pub(crate) struct StderrDrain {
    pipe: Option<File>,
    buf: Box<[u8]>,
    pub last_read: Option<Instant>,
}

impl StderrDrain {
    pub(super) fn new(pipe: File) -> StderrDrain {
        StderrDrain {
            pipe: Some(pipe),
            buf: vec![0; READ_SIZE].into_boxed_slice(),
            last_read: None,
        }
    }

    pub(super) fn is_open(&self) -> bool {
        self.pipe.is_some()
    }

    pub(super) fn read_interest(&self) -> Option<RawFd> {
        self.pipe.as_ref().map(File::as_raw_fd)
    }

    /// Stop reading (the helper's tree was given up on).
    pub(super) fn abandon(&mut self) {
        self.pipe = None;
    }

    /// The pipe is readable (or hung up): take what it holds.
    pub(super) fn drain(&mut self, now: Instant, intake: &mut Intake) -> Stream {
        if intake.diagnostics.splicing() {
            return self.move_flood(now, intake);
        }
        for _ in 0..READS_PER_TURN {
            let Some(file) = self.pipe.as_mut() else {
                return Stream::Closed;
            };
            let timer = intake.diagnostics.probing().then(Instant::now);
            match crate::sys::read_pipe(file, &mut self.buf) {
                Ok(0) => return self.close(intake),
                Ok(n) => {
                    let busy = timer.map(|started| started.elapsed());
                    self.last_read = Some(now);
                    intake.push(now, &self.buf[..n]);
                    intake.diagnostics.on_read(n, busy, now);
                    if intake.diagnostics.splicing() {
                        return self.move_flood(now, intake);
                    }
                    // A pipe read returns less than asked only when the
                    // pipe is empty: poll is a cheaper way to learn when it
                    // is not than a read that takes the pipe's lock again.
                    if n < self.buf.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return self.close(intake),
            }
        }
        intake.flush_live();
        Stream::Open
    }

    /// The flood path: stderr moves inside the kernel (see `diagnostics`).
    /// A move shorter than asked for means the pipe is drained for now, so
    /// the turn ends there instead of paying for a move of nothing.
    fn move_flood(&mut self, now: Instant, intake: &mut Intake) -> Stream {
        for attempt in 0..READS_PER_TURN {
            let Some(file) = self.pipe.as_ref() else {
                return Stream::Closed;
            };
            match intake
                .diagnostics
                .take_from(file.as_fd(), attempt == 0, now)
            {
                Took::Bytes(n) => {
                    self.last_read = Some(now);
                    intake.repeats.unseen(n as u64);
                    if n < diagnostics::MOVE_MAX {
                        break;
                    }
                }
                Took::Nothing => break,
                Took::Eof => return self.close(intake),
                // Back to reads (to measure again, or for good): the next
                // turn reads what is left.
                Took::Off => break,
            }
        }
        Stream::Open
    }

    fn close(&mut self, intake: &mut Intake) -> Stream {
        self.pipe = None;
        intake.diagnostics.stop_flood_path();
        if let Some(live) = intake.live.as_mut() {
            live.finish_stream();
        }
        Stream::Closed
    }
}

// Unix pipes made non-blocking: what these tests hold is how the
// loop meets a pipe that is (Windows reads by completions instead).
#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::diagnostics::FloodPath;
    use crate::redact::Redactor;
    use crate::sys::fd::OwnedFd;
    use std::io::Write;

    fn intake(head: usize, tail: usize) -> Intake {
        Intake {
            log: None,
            diagnostics: Diagnostics::new(Capture::new(head, tail), FloodPath::Read),
            live: None,
            repeats: Repeats::new(Redactor::default()),
            usr1_refusal_said: false,
        }
    }

    fn pipe() -> (File, File) {
        let (reader, writer) = std::io::pipe().unwrap();
        let reader = File::from(OwnedFd::from(reader));
        crate::sys::set_nonblocking(reader.as_fd()).unwrap();
        (reader, File::from(OwnedFd::from(writer)))
    }

    #[test]
    fn drains_into_the_capture_until_eof() {
        let (reader, mut writer) = pipe();
        let mut drain = StderrDrain::new(reader);
        let mut intake = intake(4, 4);
        writer.write_all(b"first line\n").unwrap();
        let now = Instant::now();
        assert_eq!(drain.drain(now, &mut intake), Stream::Open);
        assert_eq!(drain.last_read, Some(now));
        // Empty now: a drain turn finds nothing and stays open.
        assert_eq!(drain.drain(now, &mut intake), Stream::Open);
        writer.write_all(b"last").unwrap();
        drop(writer);
        // A short read ends the turn; the next one meets EOF.
        assert_eq!(drain.drain(now, &mut intake), Stream::Open);
        assert_eq!(drain.drain(now, &mut intake), Stream::Closed);
        assert!(!drain.is_open());
        assert_eq!(drain.read_interest(), None);
        let capture = intake.diagnostics.finish();
        assert_eq!(capture.bytes_seen(), 15);
        assert_eq!(capture.bytes_retained(), 8);
    }

    #[test]
    fn a_flood_takes_bounded_turns_and_never_grows_the_capture() {
        let (reader, writer) = pipe();
        let mut drain = StderrDrain::new(reader);
        let mut intake = intake(0, 1024);
        let flood = std::thread::spawn(move || {
            let mut writer = writer;
            let chunk = vec![b'x'; 1 << 16];
            for _ in 0..64 {
                writer.write_all(&chunk).unwrap();
            }
        });
        let now = Instant::now();
        while drain.drain(now, &mut intake) == Stream::Open {
            std::thread::yield_now();
        }
        flood.join().unwrap();
        let capture = intake.diagnostics.finish();
        assert_eq!(capture.bytes_seen(), 64 << 16);
        assert_eq!(capture.bytes_retained(), 1024);
    }

    #[test]
    fn diverted_bytes_and_stderr_share_one_order_and_reach_live_output() {
        let mut intake = intake(0, 64);
        let (mut reader, writer) = std::io::pipe().unwrap();
        intake.live = Some(LiveOutput::new(
            crate::live::LiveBudget {
                rate: 1 << 20,
                burst: 1 << 16,
                window: std::time::Duration::from_secs(1),
                window_bytes: 1 << 20,
            },
            Instant::now(),
            Redactor::default(),
            crate::sink::Sink::for_fd(writer.as_raw_fd()),
        ));
        let now = Instant::now();
        intake.push(now, b"err-1\n");
        intake.push(now, b"[diverted] out\n");
        intake.flush_live();
        assert_eq!(intake.live_counts().forwarded, 21);
        // Live output holds our end of the pipe until it goes.
        let Intake {
            diagnostics, live, ..
        } = intake;
        drop(live);
        let capture = diagnostics.finish();
        drop(writer);
        let mut shown = String::new();
        std::io::Read::read_to_string(&mut reader, &mut shown).unwrap();
        assert_eq!(shown, "err-1\n[diverted] out\n");
        assert_eq!(capture.bytes_seen(), 21);
    }
}
