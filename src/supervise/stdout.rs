//! The stdout side of the loop: the helper's stdout pipe and where its
//! bytes go. Forwarded, they reach our stdout byte-exact through one
//! bounded buffer (with the guard: whole JSON-RPC lines only, the rest
//! diverted into the diagnostics); while bytes wait for our reader the
//! pipe is not read (back-pressure). Captured (an approver's stdout), they
//! are diagnostics.

use crate::sys::fd::{AsRawFd, RawFd};
use std::fs::File;
use std::io;
use std::time::Instant;

use super::Stream;
use super::stderr::{Intake, READS_PER_TURN};
use crate::guard::{DivertReason, Guard};
use crate::record::{StdoutFacts, StdoutGuard};
use crate::redact::Redactor;
use crate::session::Session;
use crate::sink::{Sink, Wrote};

/// Bytes read at once; unguarded, also the bound on what waits for our
/// reader.
const READ_SIZE: usize = 64 * 1024;
/// After a huge guarded message, give the memory back.
const KEEP_CAPACITY: usize = 1 << 20;

/// Where the helper's stdout goes.
pub(crate) enum Destination<'s> {
    /// To our stdout, guarded or not. `gone` once its reader went away:
    /// from then on stdout is drained into the void, counted.
    Forward {
        sink: &'s mut Sink,
        guard: Option<Guard>,
        gone: bool,
    },
    /// Into the diagnostics.
    Capture,
}

/// What a read turn found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Relayed {
    /// The pipe reached EOF (or failed): it is closed now.
    pub stream: Stream,
    /// Our stdout's reader went away during the turn.
    pub disconnected: bool,
}

pub(crate) struct StdoutRelay<'s> {
    pipe: Option<File>,
    destination: Destination<'s>,
    /// Read into this when the bytes are examined first (guard, capture).
    read_buf: Box<[u8]>,
    /// Bytes for our stdout: `waiting[start..end]` is still to be written.
    waiting: Vec<u8>,
    start: usize,
    end: usize,
    facts: StdoutFacts,
    pub last_read: Option<Instant>,
}

impl<'s> StdoutRelay<'s> {
    pub(super) fn new(pipe: File, destination: Destination<'s>) -> StdoutRelay<'s> {
        let (guarded, direct) = match &destination {
            Destination::Forward { guard, .. } => (guard.is_some(), guard.is_none()),
            Destination::Capture => (false, false),
        };
        StdoutRelay {
            pipe: Some(pipe),
            read_buf: vec![0; if direct { 0 } else { READ_SIZE }].into_boxed_slice(),
            waiting: vec![0; if direct { READ_SIZE } else { 0 }],
            destination,
            start: 0,
            end: 0,
            facts: StdoutFacts {
                guard: StdoutGuard::new(guarded),
                ..Default::default()
            },
            last_read: None,
        }
    }

    pub(super) fn is_open(&self) -> bool {
        self.pipe.is_some()
    }

    /// Bytes waiting for our stdout.
    pub(super) fn held(&self) -> usize {
        self.end - self.start
    }

    fn buffered(&self) -> bool {
        self.start < self.end
    }

    /// The helper's stdout, unless bytes wait for our reader: then it stays
    /// out of the poll set entirely (a closed pipe reports POLLHUP even with
    /// no events asked for, and would turn the wait into a spin).
    pub(super) fn read_interest(&self) -> Option<RawFd> {
        match (&self.pipe, self.buffered()) {
            (Some(file), false) => Some(file.as_raw_fd()),
            _ => None,
        }
    }

    /// Our stdout: watched for its reader going away, and for room when
    /// bytes wait (the bool).
    pub(super) fn sink_interest(&self) -> Option<(RawFd, bool)> {
        match &self.destination {
            Destination::Forward {
                sink, gone: false, ..
            } => sink.poll_fd().map(|fd| (fd, self.buffered())),
            Destination::Forward { .. } | Destination::Capture => None,
        }
    }

    /// A restarted server's stdout: read it from now on.
    pub(super) fn reattach(&mut self, pipe: File) {
        self.pipe = Some(pipe);
    }

    /// Stop reading (the helper's tree was given up on).
    pub(super) fn abandon(&mut self) {
        self.pipe = None;
    }

    /// The pipe is readable (or hung up): read and pass on; guarded lines
    /// go through the session's table when there is one.
    pub(super) fn on_readable(
        &mut self,
        now: Instant,
        intake: &mut Intake,
        mut table: Option<&mut Session>,
    ) -> Relayed {
        let mut relayed = Relayed::default();
        for _ in 0..READS_PER_TURN {
            let Some(file) = self.pipe.as_mut() else {
                break;
            };
            let target: &mut [u8] = if self.read_buf.is_empty() {
                &mut self.waiting
            } else {
                &mut self.read_buf
            };
            let asked = target.len();
            match crate::sys::read_pipe(file, target) {
                Ok(0) => {
                    self.close(now, intake);
                    relayed.stream = Stream::Closed;
                    break;
                }
                Ok(n) => {
                    self.last_read = Some(now);
                    self.facts.bytes_seen += n as u64;
                    let waiting = self.pass_on(now, n, intake, table.as_deref_mut(), &mut relayed);
                    // A short read emptied the pipe: see the stderr drain.
                    if waiting || n < asked {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    self.close(now, intake);
                    relayed.stream = Stream::Closed;
                    break;
                }
            }
        }
        intake.flush_live();
        relayed
    }

    /// The `n` bytes just read go to the diagnostics, our stdout, or
    /// nowhere once our reader is gone. True when some wait for our reader.
    fn pass_on(
        &mut self,
        now: Instant,
        n: usize,
        intake: &mut Intake,
        mut table: Option<&mut Session>,
        relayed: &mut Relayed,
    ) -> bool {
        self.start = 0;
        self.end = match &mut self.destination {
            Destination::Capture => {
                intake.push(now, &self.read_buf[..n]);
                return false;
            }
            Destination::Forward { guard: None, .. } => n,
            Destination::Forward {
                guard: Some(guard), ..
            } => {
                self.waiting.clear();
                let waiting = &mut self.waiting;
                let mut too_long = false;
                guard.feed_lines(
                    &self.read_buf[..n],
                    &mut |line| match table.as_deref_mut() {
                        // One parse both judges and reads the message.
                        Some(table) => table.on_server_line(now, line, waiting),
                        None => {
                            let message = crate::guard::is_json_message(line);
                            if message {
                                waiting.extend_from_slice(line);
                            }
                            message
                        }
                    },
                    &mut |bytes, reason| {
                        too_long |= reason == crate::guard::DivertReason::TooLong;
                        divert(intake, now, bytes, reason)
                    },
                );
                if too_long && let Some(table) = table {
                    table.on_server_overlong(now);
                }
                self.waiting.len()
            }
        };
        if let Destination::Forward { gone: true, .. } = self.destination {
            self.facts.bytes_discarded += self.end as u64;
            self.end = 0;
            return false;
        }
        relayed.disconnected |= self.flush();
        self.buffered()
    }

    /// Whole lines of mcp-bound's own (the session's answers) join what
    /// waits for our stdout, after the whole lines already there. Only
    /// guarded output is framed in lines, so only it takes them. True if
    /// our stdout's reader turned out gone.
    pub(super) fn inject(&mut self, lines: &[u8]) -> bool {
        match &self.destination {
            Destination::Forward {
                guard: Some(_),
                gone: false,
                ..
            } => {}
            Destination::Forward { .. } | Destination::Capture => return false,
        }
        if !self.buffered() {
            self.waiting.clear();
            self.start = 0;
        }
        self.waiting.truncate(self.end);
        // What was written is given back before more is added: a client
        // that keeps some waiting forever must not grow this forever.
        if self.start > 0 {
            self.waiting.drain(..self.start);
            self.end -= self.start;
            self.start = 0;
        }
        self.waiting.extend_from_slice(lines);
        self.end = self.waiting.len();
        self.flush()
    }

    /// The loop is over: give what still waits for our stdout (answers
    /// owed to the client) a bounded time to be written.
    pub(super) fn drain_at_exit(&mut self, limit: std::time::Duration) {
        let deadline = Instant::now() + limit;
        while self.buffered() {
            if self.flush() || !self.buffered() || Instant::now() >= deadline {
                return;
            }
            let Destination::Forward { sink, gone, .. } = &mut self.destination else {
                return;
            };
            if *gone || sink.wait_writable(deadline).is_err() {
                return;
            }
        }
    }

    /// Our stdout may take bytes. True if its reader turned out gone.
    pub(super) fn on_writable(&mut self) -> bool {
        if let Destination::Forward { sink, .. } = &mut self.destination {
            sink.writable();
        }
        self.flush()
    }

    /// Write what waits, as far as our stdout takes it. True if its
    /// reader turned out gone (then the rest is discarded, counted).
    fn flush(&mut self) -> bool {
        let Destination::Forward {
            sink, guard, gone, ..
        } = &mut self.destination
        else {
            return false;
        };
        let mut disconnected = false;
        while self.start < self.end && !*gone {
            match sink.try_write(&self.waiting[self.start..self.end]) {
                Wrote::Bytes(n) => {
                    self.start += n;
                    self.facts.bytes_forwarded += n as u64;
                }
                Wrote::WouldBlock => break,
                Wrote::Gone(_) => {
                    disconnected = true;
                    break;
                }
            }
        }
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            if guard.is_some() && self.waiting.capacity() > KEEP_CAPACITY {
                self.waiting = Vec::new();
            }
        }
        if disconnected {
            self.disconnect();
        }
        disconnected
    }

    /// Our stdout's reader is gone: from now on the helper's stdout is
    /// drained into the void, counted. False if that was already known.
    pub(super) fn disconnect(&mut self) -> bool {
        match &mut self.destination {
            Destination::Forward { gone, .. } if !*gone => {
                *gone = true;
                self.facts.bytes_discarded += (self.end - self.start) as u64;
                self.start = 0;
                self.end = 0;
                true
            }
            Destination::Forward { .. } | Destination::Capture => false,
        }
    }

    /// EOF: a partial line the guard holds is diverted.
    fn close(&mut self, now: Instant, intake: &mut Intake) {
        self.pipe = None;
        if let Destination::Forward {
            guard: Some(guard), ..
        } = &mut self.destination
        {
            guard.finish(&mut |bytes, reason| divert(intake, now, bytes, reason));
        }
    }

    /// The facts for the record, the guard's included.
    pub(super) fn facts(&self, redactor: &Redactor) -> StdoutFacts {
        let mut facts = self.facts.clone();
        if let Destination::Forward {
            guard: Some(guard), ..
        } = &self.destination
        {
            facts.lines_forwarded = guard.lines_forwarded;
            facts.lines_diverted = guard.lines_diverted;
            facts.bytes_diverted = guard.bytes_diverted;
            facts.lines_salvaged = guard.lines_salvaged;
            facts.first_diverted = guard.first_diverted.as_deref().map(|bytes| {
                let cut = bytes.len() == crate::guard::FIRST_DIVERTED_BYTES;
                redactor.redact_piece(&String::from_utf8_lossy(bytes), false, cut)
            });
        }
        facts
    }
}

/// A diverted stdout line enters the diagnostics with a prefix that says
/// why, written by mcp-bound.
fn divert(intake: &mut Intake, now: Instant, bytes: &[u8], reason: DivertReason) {
    let prefix: &[u8] = match reason {
        DivertReason::NotJsonObject => b"[mcp-bound: stdout line diverted, not a JSON object] ",
        DivertReason::TooLong => b"[mcp-bound: stdout line over --max-message-bytes diverted] ",
        DivertReason::TooLongContinued => b"",
        DivertReason::PartialAtEof => b"[mcp-bound: unterminated stdout line diverted at EOF] ",
        DivertReason::GluedBefore => {
            b"[mcp-bound: stdout junk before a JSON-RPC message diverted, the message forwarded] "
        }
        DivertReason::GluedAfter => {
            b"[mcp-bound: stdout junk after a JSON-RPC message diverted, the message forwarded] "
        }
    };
    intake.push(now, prefix);
    intake.push(now, bytes);
    // The diverted part has no newline of its own: end it in the capture.
    let unterminated = match reason {
        DivertReason::PartialAtEof | DivertReason::GluedBefore | DivertReason::GluedAfter => true,
        DivertReason::NotJsonObject | DivertReason::TooLong | DivertReason::TooLongContinued => {
            false
        }
    };
    if unterminated {
        intake.push(now, b"\n");
    }
}

// Unix pipes made non-blocking: what these tests hold is how the
// loop meets a pipe that is (Windows reads by completions instead).
#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::diagnostics::{Diagnostics, FloodPath};
    use crate::sys::fd::{AsFd, OwnedFd};
    use std::io::Read;
    use std::io::Write;

    fn intake() -> Intake {
        Intake {
            log: None,
            diagnostics: Diagnostics::new(Capture::new(0, 4096), FloodPath::Read),
            live: None,
            repeats: crate::repeats::Repeats::new(Redactor::default()),
            usr1_refusal_said: false,
        }
    }

    /// The helper's stdout (our end non-blocking) and our stdout's reader.
    fn pipes() -> (File, File, File, File) {
        let (reader, writer) = std::io::pipe().unwrap();
        let helper_out = File::from(OwnedFd::from(reader));
        crate::sys::set_nonblocking(helper_out.as_fd()).unwrap();
        let (our_reader, our_writer) = std::io::pipe().unwrap();
        (
            helper_out,
            File::from(OwnedFd::from(writer)),
            File::from(OwnedFd::from(our_reader)),
            File::from(OwnedFd::from(our_writer)),
        )
    }

    /// A relay forwarding to `sink` through a guard.
    fn guarded(helper_out: File, sink: &mut Sink) -> StdoutRelay<'_> {
        StdoutRelay::new(
            helper_out,
            Destination::Forward {
                sink,
                guard: Some(Guard::new(1024)),
                gone: false,
            },
        )
    }

    fn excerpt(intake: Intake) -> String {
        intake
            .diagnostics
            .finish()
            .excerpt(4096, &Redactor::default())
            .text
    }

    #[test]
    fn guarded_lines_are_forwarded_whole_and_the_rest_diverted() {
        let (helper_out, mut helper, mut ours, our_writer) = pipes();
        let mut sink = Sink::for_fd(our_writer.as_raw_fd());
        let mut relay = guarded(helper_out, &mut sink);
        let mut intake = intake();
        helper
            .write_all(b"Loading...\n{\"id\":1}\n{\"id\":2")
            .unwrap();
        drop(helper);
        let now = Instant::now();
        // A short read ends a turn; EOF comes on the next.
        let first = relay.on_readable(now, &mut intake, None);
        assert_eq!(first, Relayed::default(), "one turn, the pipe still open");
        assert_eq!(
            relay.on_readable(now, &mut intake, None),
            Relayed {
                stream: Stream::Closed,
                disconnected: false
            }
        );
        let facts = relay.facts(&Redactor::default());
        assert_eq!(facts.bytes_seen, 27);
        assert_eq!(facts.bytes_forwarded, 9);
        assert_eq!((facts.lines_forwarded, facts.lines_diverted), (1, 2));
        drop(relay);
        drop(sink);
        drop(our_writer);
        let mut forwarded = String::new();
        ours.read_to_string(&mut forwarded).unwrap();
        assert_eq!(forwarded, "{\"id\":1}\n");
        let diverted = excerpt(intake);
        assert!(
            diverted.contains("not a JSON object] Loading...\n"),
            "{diverted}"
        );
        assert!(diverted.contains("at EOF] {\"id\":2\n"), "{diverted}");
    }

    #[test]
    fn a_slow_reader_holds_the_pipe_back_and_a_gone_one_is_counted() {
        let (helper_out, mut helper, ours, our_writer) = pipes();
        crate::sys::set_nonblocking(our_writer.as_fd()).unwrap();
        let mut sink = Sink::for_fd(our_writer.as_raw_fd());
        let mut relay = StdoutRelay::new(
            helper_out,
            Destination::Forward {
                sink: &mut sink,
                guard: None,
                gone: false,
            },
        );
        let mut intake = intake();
        let now = Instant::now();
        // Fill our stdout's pipe: bytes then wait, and the helper's stdout
        // leaves the poll set.
        let block = vec![b'x'; READ_SIZE];
        let mut turns = 0;
        while relay.read_interest().is_some() && turns < 1000 {
            helper.write_all(&block).unwrap();
            relay.on_readable(now, &mut intake, None);
            turns += 1;
        }
        assert_eq!(relay.read_interest(), None, "back-pressure");
        assert_eq!(relay.sink_interest().map(|(_, write)| write), Some(true));
        // The reader goes away: the next write finds out.
        drop(ours);
        assert!(relay.on_writable(), "the reader is gone");
        assert_eq!(relay.sink_interest(), None);
        let facts = relay.facts(&Redactor::default());
        assert_eq!(
            facts.bytes_seen,
            facts.bytes_forwarded + facts.bytes_discarded,
            "{facts:?}"
        );
        assert!(!relay.disconnect(), "already known");
    }

    #[test]
    fn answers_added_while_some_wait_do_not_grow_the_buffer_without_bound() {
        // A client that reads, but never quite all of it: what was written
        // must be given back, not kept as dead space at the front.
        let (helper_out, _helper, mut ours, our_writer) = pipes();
        crate::sys::set_nonblocking(our_writer.as_fd()).unwrap();
        crate::sys::set_nonblocking(ours.as_fd()).unwrap();
        let mut sink = Sink::for_fd(our_writer.as_raw_fd());
        let mut relay = guarded(helper_out, &mut sink);
        let answer = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32000}}\n".repeat(100);
        // As the loop does: more answers only while few wait; the client
        // reads steadily, but never all of it.
        let mut scratch = vec![0u8; 2000];
        for _ in 0..20_000 {
            if relay.held() < 64 << 10 {
                relay.inject(&answer);
            }
            relay.on_writable();
            let _ = ours.read(&mut scratch);
        }
        assert!(relay.held() > 0, "some answers still wait");
        assert!(
            relay.waiting.capacity() < 4 * (relay.held() + answer.len()) + (1 << 20),
            "the buffer holds what waits, not everything ever added: capacity {} for {} waiting",
            relay.waiting.capacity(),
            relay.held()
        );
    }

    #[test]
    fn captured_stdout_is_diagnostics() {
        let (helper_out, mut helper, _ours, _our_writer) = pipes();
        let mut relay = StdoutRelay::new(helper_out, Destination::Capture);
        assert_eq!(relay.sink_interest(), None);
        let mut intake = intake();
        helper.write_all(b"approver says yes\n").unwrap();
        drop(helper);
        relay.on_readable(Instant::now(), &mut intake, None);
        relay.on_readable(Instant::now(), &mut intake, None);
        assert!(!relay.is_open(), "EOF on the second turn");
        assert_eq!(excerpt(intake), "approver says yes\n");
    }
}
