//! The stdin side of the loop under the session layer: our stdin (the
//! client) and the server's stdin pipe. Client bytes are framed on
//! newlines; each complete line goes through the session (which tracks
//! requests and may answer some itself) and on to the server, byte-exact
//! and in order. While bytes wait for the server, our stdin is not read:
//! a slow server holds the client back, and nothing grows. A line longer
//! than --max-message-bytes streams through unparsed. Client EOF closes
//! the server's stdin once what was read has been written: the first step
//! of the MCP shutdown.
//!
//! Our stdin is inherited and may be shared, so its flags are never
//! changed: it is read once per readiness that poll(2) reported, which
//! does not block for a pipe, a socket or a terminal.

use crate::sys::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::fs::File;
use std::io;
use std::mem::ManuallyDrop;
use std::time::Instant;

use super::Stream;
use crate::framing::{Frame, Framer};
use crate::session::Session;

const READ_SIZE: usize = 64 * 1024;
/// After a huge line, give the memory back.
const KEEP_CAPACITY: usize = 1 << 20;

pub(crate) struct StdinRelay {
    /// Our stdin: borrowed, never closed through the relay.
    source: ManuallyDrop<File>,
    source_open: bool,
    /// A restart is under way: the client waits (in our stdin).
    paused: bool,
    /// Audit entries wait for the journal's lock (see `hold_for_journal`).
    journal_held: bool,
    /// The client hung up while we were not reading (a restart was under
    /// way): what it sent is still in our stdin, and no restart follows.
    hung_up: bool,
    /// The server's stdin pipe (ours to make non-blocking); None once
    /// closed or once the server stopped reading.
    server: Option<File>,
    read_buf: Box<[u8]>,
    /// The client's lines; one over --max-message-bytes streams through
    /// unparsed.
    framer: Framer,
    /// Bytes for the server: `out[start..]` is still to be written.
    out: Vec<u8>,
    start: usize,
    /// Where `out[0]` sits in the stream of every byte ever queued for
    /// the server (written, discarded or waiting).
    out_at: u64,
    /// How far that stream went into the server's pipe: a line that ends
    /// at or before it was all there. Discarding never moves it.
    written_to: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Meant for a server that no longer reads (or is gone).
    pub bytes_discarded: u64,
}

impl StdinRelay {
    /// Close our end of the server's stdin (through `sys`, which also
    /// drops what writes it on Windows).
    fn close_server_pipe(&mut self) {
        if let Some(server) = self.server.take() {
            crate::sys::close_pipe(server);
        }
    }

    pub(super) fn new(server: OwnedFd, max_message: usize) -> StdinRelay {
        let stdin = crate::sys::std_fd(0);
        // Windows: a thread reads it when the loop asks (a relay).
        if let Some(relays) = crate::sys::RELAYS {
            (relays.input)(stdin);
        }
        // SAFETY: our stdin is only read while the poller reports it
        // open; ManuallyDrop keeps us from closing it.
        let source = ManuallyDrop::new(unsafe { File::from_raw_fd(stdin) });
        StdinRelay {
            source,
            source_open: crate::sys::is_open(stdin),
            paused: false,
            journal_held: false,
            hung_up: false,
            server: Some(File::from(server)),
            read_buf: vec![0; READ_SIZE].into_boxed_slice(),
            framer: Framer::new(max_message),
            out: Vec::new(),
            start: 0,
            out_at: 0,
            written_to: 0,
            bytes_read: 0,
            bytes_written: 0,
            bytes_discarded: 0,
        }
    }

    fn waiting(&self) -> bool {
        self.start < self.out.len()
    }

    /// Our stdin, unless bytes wait for the server (back-pressure) or for
    /// the journal.
    pub(super) fn read_interest(&self) -> Option<RawFd> {
        (self.source_open && !self.paused && !self.journal_held && !self.waiting())
            .then(|| self.source.as_raw_fd())
    }

    /// While paused, our stdin is watched for the client's hang-up only
    /// (once: a hang-up stays reported).
    pub(super) fn hang_up_interest(&self) -> Option<RawFd> {
        (self.source_open && self.paused && !self.hung_up).then(|| self.source.as_raw_fd())
    }

    pub(super) fn paused(&self) -> bool {
        self.paused
    }

    /// Audit entries wait for the journal's lock: nothing is written to
    /// the server, nor read from the client, until they are durable.
    pub(super) fn hold_for_journal(&mut self, held: bool) {
        self.journal_held = held;
    }

    /// Our stdin hung up while paused: nothing is read until `resume`.
    pub(super) fn note_hang_up(&mut self) {
        self.hung_up = true;
    }

    /// The client hung up while a restart was under way.
    pub(super) fn hung_up(&self) -> bool {
        self.hung_up
    }

    /// The server's stdin, when bytes wait for it (and not for the
    /// journal).
    pub(super) fn write_interest(&self) -> Option<RawFd> {
        match &self.server {
            Some(file) if self.waiting() && !self.journal_held => Some(file.as_raw_fd()),
            _ => None,
        }
    }

    /// Our stdin is readable or hung up: read once and frame.
    pub(super) fn on_readable(&mut self, now: Instant, session: &mut Session) -> Stream {
        match crate::sys::read_pipe(&mut self.source, &mut self.read_buf) {
            Ok(0) => self.eof(now, session),
            Ok(n) => {
                self.bytes_read += n as u64;
                let chunk = std::mem::take(&mut self.read_buf);
                self.frame(now, &chunk[..n], session);
                self.read_buf = chunk;
                Stream::Open
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                Stream::Open
            }
            Err(_) => self.eof(now, session),
        }
    }

    /// The client is done: an unfinished last line goes on as it is, read
    /// like any other (a server iterating over lines reads it too).
    fn eof(&mut self, now: Instant, session: &mut Session) -> Stream {
        self.source_open = false;
        if !self.framer.at_boundary() {
            session.on_client_overlong_eof();
        }
        let unfinished = self.framer.finish();
        if !unfinished.is_empty() {
            session.on_client_last_line(now, &unfinished, &mut self.out, self.out_at);
        }
        Stream::Closed
    }

    fn frame(&mut self, now: Instant, chunk: &[u8], session: &mut Session) {
        let out = &mut self.out;
        let out_at = self.out_at;
        self.framer.feed(chunk, &mut |frame| match frame {
            Frame::Line(line) => session.on_client_line(now, line, out, out_at),
            Frame::Overlong { bytes, first } => session.on_client_overlong(bytes, first, out),
        });
    }

    /// Lines the session wrote for the server (cancellations) join the
    /// stream between client lines, never inside one.
    pub(super) fn take_from(&mut self, session: &mut Session) {
        if session.to_server.is_empty() || !self.framer.at_boundary() {
            return;
        }
        if self.server.is_some() {
            // Written bytes are given back first (see StdoutRelay::inject).
            if self.start > 0 {
                self.out.drain(..self.start);
                self.out_at += self.start as u64;
                self.start = 0;
            }
            self.out.append(&mut session.to_server);
        } else {
            self.bytes_discarded += session.to_server.len() as u64;
            session.to_server.clear();
        }
    }

    /// Write what waits, as far as the server's pipe takes it; then, once
    /// the client is done and everything is written, close the server's
    /// stdin: the first step of the MCP shutdown.
    pub(super) fn flush(&mut self) {
        if self.journal_held {
            return;
        }
        while self.waiting() {
            let Some(server) = self.server.as_mut() else {
                self.discard();
                break;
            };
            match crate::sys::write_pipe(server, &self.out[self.start..]) {
                Ok(n) => {
                    self.start += n;
                    self.bytes_written += n as u64;
                    self.written_to = self.out_at + self.start as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // EPIPE: the server closed its stdin or is gone.
                Err(_) => {
                    self.close_server_pipe();
                    self.discard();
                }
            }
        }
        if !self.waiting() {
            self.out_at += self.out.len() as u64;
            self.out.clear();
            self.start = 0;
            if self.out.capacity() > KEEP_CAPACITY {
                self.out = Vec::new();
            }
        }
        if !self.source_open && !self.waiting() {
            self.close_server_pipe();
        }
    }

    fn discard(&mut self) {
        self.bytes_discarded += (self.out.len() - self.start) as u64;
        self.out_at += self.out.len() as u64;
        self.out.clear();
        self.start = 0;
    }

    /// How far the stream for the server has been written: a request
    /// whose line ends at or before it was all in the server's pipe.
    pub(super) fn written_up_to(&self) -> u64 {
        self.written_to
    }

    /// Where the stream for the server ends so far: every byte queued
    /// (what the session adds next goes after it).
    pub(super) fn queued_end(&self) -> u64 {
        self.out_at + self.out.len() as u64
    }

    /// The server is gone: nothing more is written to it. Our stdin is
    /// still read, so that requests are answered at once.
    pub(super) fn server_gone(&mut self) {
        self.close_server_pipe();
        self.discard();
    }

    /// CLOSE, the polite stop: close the server's stdin now; what still
    /// waited for it is discarded. False if it was closed already.
    pub(super) fn close_server(&mut self) -> bool {
        let was_open = self.server.is_some();
        self.server_gone();
        was_open
    }

    /// The client has not closed our stdin.
    pub(super) fn client_open(&self) -> bool {
        self.source_open
    }

    /// A restart is under way: leave the client's messages in our stdin.
    pub(super) fn pause(&mut self) {
        self.paused = true;
    }

    pub(super) fn resume(&mut self) {
        self.paused = false;
    }

    /// A restarted server's stdin; `first` (the replayed initialize) goes
    /// to it before anything of the client's, which waits until `resume`.
    pub(super) fn attach(&mut self, pipe: OwnedFd, first: Option<&[u8]>) {
        self.discard();
        self.server = Some(File::from(pipe));
        self.out.extend_from_slice(first.unwrap_or_default());
        self.paused = first.is_some();
    }

    /// Stop reading our stdin (the loop is ending).
    pub(super) fn stop(&mut self) {
        self.source_open = false;
    }
}
