//! The only poll loop. It owns the helper, both of its pipes, our stdout,
//! the signal pipe and the clock, and returns an [`Outcome`]; it never prints.
//!
//! Each turn: read the clock, let the termination machine act on deadlines,
//! stop if everything is over, then poll with a timeout computed from the
//! next deadline (or none: an idle helper costs no wake-ups at all).
//!
//! stdout is forwarded byte-exact through one bounded buffer; while the
//! buffer holds bytes, the helper's stdout is not read (back-pressure), but
//! its stderr always is, so the helper never blocks on diagnostics.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Instant;

use crate::capture::Capture;
use crate::child::{self, ExitObs, Helper};
use crate::record::{CancelReason, Event, EventKind, SignalReason, StdoutFacts, StreamEnd, Target};
use crate::signals::{self, SignalPipe};
use crate::sink::Sink;
use crate::sys::{self, Interest, Ready};
use crate::termination::{Action, Phase, Policy, Reason, Terminator};

/// Bytes of helper stdout in flight at most: the bound on our buffering.
const STDOUT_BUFFER: usize = 64 * 1024;
const STDERR_READ: usize = 64 * 1024;
/// Reads from one pipe per turn, so a flood on one cannot starve the rest.
const READS_PER_TURN: usize = 16;
/// Cancel events kept in the record; a signal storm is not a log.
const MAX_CANCEL_EVENTS: usize = 8;

pub struct Config {
    pub policy: Policy,
    pub head_bytes: usize,
    pub tail_bytes: usize,
}

#[derive(Debug)]
pub struct Outcome {
    pub pid: i32,
    pub exit: Option<ExitObs>,
    /// The first cancellation that arrived while the helper still ran.
    pub cancelled_while_running: Option<Reason>,
    /// The first cancellation at all (also after the helper exited).
    pub cancellation: Option<Reason>,
    pub stream_end: StreamEnd,
    pub capture: Capture,
    pub stdout: StdoutFacts,
    pub events: Vec<Event>,
    pub descendants_signalled: u32,
}

struct Pipe {
    file: Option<File>,
}

impl Pipe {
    fn fd(&self) -> Option<RawFd> {
        self.file.as_ref().map(|f| f.as_raw_fd())
    }
    fn is_open(&self) -> bool {
        self.file.is_some()
    }
}

struct Loop<'a> {
    origin: Instant,
    pid: i32,
    term: Terminator,
    signals: &'a SignalPipe,
    sink: &'a mut Sink,
    out: Pipe,
    err: Pipe,
    out_buf: Box<[u8]>,
    out_start: usize,
    out_end: usize,
    err_buf: Box<[u8]>,
    sink_gone: bool,
    sink_ready: bool,
    capture: Capture,
    stdout: StdoutFacts,
    events: Vec<Event>,
    cancel_events: usize,
    exit: Option<ExitObs>,
    cancelled_while_running: Option<Reason>,
    descendants: HashSet<i32>,
    signalled_holders: bool,
    abandoned_open: bool,
}

/// Supervise a spawned helper to the end.
pub fn supervise(
    helper: Helper,
    dispatched_at: Instant,
    origin: Instant,
    signals: &SignalPipe,
    sink: &mut Sink,
    config: &Config,
) -> io::Result<Outcome> {
    let sink_gone = sink.is_absent();
    let sink_ready = sink.write_without_poll();
    let mut state = Loop {
        origin,
        pid: helper.pid,
        term: Terminator::new(config.policy, dispatched_at),
        signals,
        sink,
        out: Pipe {
            file: Some(File::from(helper.stdout)),
        },
        err: Pipe {
            file: Some(File::from(helper.stderr)),
        },
        out_buf: vec![0; STDOUT_BUFFER].into_boxed_slice(),
        out_start: 0,
        out_end: 0,
        err_buf: vec![0; STDERR_READ].into_boxed_slice(),
        sink_gone,
        sink_ready,
        capture: Capture::new(config.head_bytes, config.tail_bytes),
        stdout: StdoutFacts::default(),
        events: Vec::new(),
        cancel_events: 0,
        exit: None,
        cancelled_while_running: None,
        descendants: HashSet::new(),
        signalled_holders: false,
        abandoned_open: false,
    };
    state.event(
        dispatched_at,
        EventKind::Dispatched {
            pid: helper.pid as u32,
            pgid: helper.pid,
        },
    );
    state.run()?;
    Ok(state.finish())
}

impl Loop<'_> {
    fn event(&mut self, at: Instant, kind: EventKind) {
        let t_ms = crate::units::millis(at.saturating_duration_since(self.origin));
        self.events.push(Event { t_ms, kind });
    }

    fn streams_open(&self) -> bool {
        self.out.is_open() || self.err.is_open()
    }

    fn run(&mut self) -> io::Result<()> {
        let mut interests: Vec<Interest> = Vec::with_capacity(4);
        let mut ready: Vec<Ready> = Vec::with_capacity(4);
        loop {
            let now = Instant::now();
            while let Some(action) = self.term.tick(now) {
                self.perform(now, action);
            }
            if self.term.phase() == Phase::Abandoned {
                return Ok(());
            }
            if self.term.helper_exited() && !self.streams_open() {
                let left = child::live_descendants(self.pid);
                if self.term.finished(!left.is_empty()) {
                    return Ok(());
                }
                match self.term.phase() {
                    Phase::Running => {
                        if let Some(action) = self.term.on_leftovers(now) {
                            self.perform(now, action);
                        }
                    }
                    // Something forked while we were killing: kill it too.
                    Phase::Killed { .. } => self.perform_sweep(now, signals::SIGKILL, None),
                    _ => {}
                }
            }

            interests.clear();
            interests.push(Interest {
                fd: self.signals.fd().as_raw_fd(),
                read: true,
                write: false,
            });
            let buffered = self.out_start < self.out_end;
            // While bytes wait for our reader, the helper's stdout stays out
            // of the set entirely: a closed pipe reports POLLHUP even with no
            // events requested, and would turn the wait into a spin.
            let out_slot = self.out.fd().filter(|_| !buffered).map(|fd| {
                interests.push(Interest {
                    fd,
                    read: true,
                    write: false,
                });
                interests.len() - 1
            });
            let err_slot = self.err.fd().map(|fd| {
                interests.push(Interest {
                    fd,
                    read: true,
                    write: false,
                });
                interests.len() - 1
            });
            let sink_slot = match (self.sink_gone, self.sink.poll_fd()) {
                (false, Some(fd)) => {
                    interests.push(Interest {
                        fd,
                        read: false,
                        write: buffered,
                    });
                    Some(interests.len() - 1)
                }
                _ => None,
            };
            let timeout = self
                .term
                .deadline()
                .map(|deadline| deadline.saturating_duration_since(now));
            sys::poll(&interests, &mut ready, timeout)?;
            let now = Instant::now();

            if ready[0].readable {
                self.on_signals(now);
            }
            if let Some(slot) = err_slot {
                let r = ready[slot];
                if r.readable || r.hangup || r.error {
                    self.drain_stderr(now);
                }
            }
            if let Some(slot) = sink_slot {
                let r = ready[slot];
                if r.error || r.hangup {
                    self.disconnect(now);
                } else if r.writable {
                    self.sink_ready = true;
                    self.flush(now);
                }
            }
            if let Some(slot) = out_slot {
                let r = ready[slot];
                if r.readable || r.hangup || r.error {
                    self.read_stdout(now);
                }
            }
        }
    }

    fn on_signals(&mut self, now: Instant) {
        let pending = self.signals.take();
        if pending.child_changed {
            if self.exit.is_none()
                && let Some(exit) = child::observe_exit(self.pid)
            {
                self.exit = Some(exit);
                self.term.on_helper_exit(now);
                self.event(
                    now,
                    EventKind::HelperExited {
                        exit: exit.to_record(),
                    },
                );
            }
            child::reap_orphans(self.pid);
        }
        for (signo, count) in pending.terminating {
            // Two of the same in one turn still escalate; more add nothing.
            for _ in 0..count.min(2) {
                self.cancel(now, Reason::Signal(signo));
            }
        }
    }

    fn cancel(&mut self, now: Instant, reason: Reason) {
        if self.cancel_events < MAX_CANCEL_EVENTS {
            self.cancel_events += 1;
            let (cancel_reason, signal) = match reason {
                Reason::Signal(signo) => (CancelReason::Signal, Some(signals::name(signo))),
                Reason::Timeout => (CancelReason::Timeout, None),
                _ => (CancelReason::ClientDisconnected, None),
            };
            self.event(
                now,
                EventKind::CancelRequested {
                    reason: cancel_reason,
                    signal,
                },
            );
        }
        if !self.term.helper_exited() && self.cancelled_while_running.is_none() {
            self.cancelled_while_running = Some(reason);
        }
        if let Some(action) = self.term.cancel(now, reason) {
            self.perform(now, action);
        }
    }

    fn perform(&mut self, now: Instant, action: Action) {
        match action {
            Action::Signal { signal, reason } => {
                if reason == Reason::Timeout {
                    // A timeout is a cancellation the clock requested.
                    if self.cancelled_while_running.is_none() {
                        self.cancelled_while_running = Some(Reason::Timeout);
                    }
                    self.event(
                        now,
                        EventKind::CancelRequested {
                            reason: CancelReason::Timeout,
                            signal: None,
                        },
                    );
                }
                self.perform_sweep(now, signal, Some(reason));
            }
            Action::Kill => {
                let reason = self.term.reason();
                self.perform_sweep(now, signals::SIGKILL, reason);
            }
            Action::Abandon => {
                self.abandoned_open = self.streams_open();
                self.out.file = None;
                self.err.file = None;
                self.event(now, EventKind::StreamsAbandoned);
            }
        }
    }

    fn perform_sweep(&mut self, now: Instant, signo: i32, reason: Option<Reason>) {
        let before = self.descendants.len();
        let sweep = child::sweep(self.pid, signo, &mut self.descendants);
        let reason = match reason.or(self.term.reason()) {
            Some(Reason::Timeout) => SignalReason::Timeout,
            Some(Reason::Signal(_)) => SignalReason::Signal,
            Some(Reason::ClientDisconnected) => SignalReason::ClientDisconnected,
            Some(Reason::PipesHeld) => SignalReason::PipesHeld,
            Some(Reason::Leftovers) | None => SignalReason::Leftovers,
        };
        let signal = signals::name(signo);
        if sweep.group_signalled {
            self.event(
                now,
                EventKind::SignalSent {
                    signal: signal.clone(),
                    target: Target::Group,
                    count: 1,
                    reason,
                },
            );
        }
        if sweep.outside_group > 0 {
            self.event(
                now,
                EventKind::SignalSent {
                    signal,
                    target: Target::Descendants,
                    count: sweep.outside_group,
                    reason,
                },
            );
        }
        if self.exit.is_some()
            && self.streams_open()
            && (sweep.group_signalled || self.descendants.len() > before || sweep.outside_group > 0)
        {
            self.signalled_holders = true;
        }
    }

    fn drain_stderr(&mut self, now: Instant) {
        for _ in 0..READS_PER_TURN {
            let Some(file) = self.err.file.as_mut() else {
                return;
            };
            match file.read(&mut self.err_buf) {
                Ok(0) => return self.close_stderr(now),
                Ok(n) => self.capture.push(&self.err_buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return self.close_stderr(now),
            }
        }
    }

    fn read_stdout(&mut self, now: Instant) {
        for _ in 0..READS_PER_TURN {
            let Some(file) = self.out.file.as_mut() else {
                return;
            };
            match file.read(&mut self.out_buf) {
                Ok(0) => return self.close_stdout(now),
                Ok(n) => {
                    self.stdout.bytes_seen += n as u64;
                    if self.sink_gone {
                        self.stdout.bytes_discarded += n as u64;
                        continue;
                    }
                    self.out_start = 0;
                    self.out_end = n;
                    self.flush(now);
                    if self.out_start < self.out_end {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return self.close_stdout(now),
            }
        }
    }

    fn close_stdout(&mut self, now: Instant) {
        self.out.file = None;
        self.event(now, EventKind::StdoutClosed);
        self.maybe_streams_closed();
    }

    fn close_stderr(&mut self, now: Instant) {
        self.err.file = None;
        self.event(now, EventKind::StderrClosed);
        self.maybe_streams_closed();
    }

    fn flush(&mut self, now: Instant) {
        while self.out_start < self.out_end && self.sink_ready && !self.sink_gone {
            match self.sink.write(&self.out_buf[self.out_start..self.out_end]) {
                Ok(n) => {
                    self.out_start += n;
                    self.stdout.bytes_forwarded += n as u64;
                    if !self.sink.write_without_poll() {
                        self.sink_ready = false;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.sink_ready = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => self.disconnect(now),
            }
        }
        if self.out_start == self.out_end {
            self.out_start = 0;
            self.out_end = 0;
            self.sink_ready |= self.sink.write_without_poll();
        }
    }

    /// Our stdout's reader is gone: cancel the helper, and from now on
    /// drain its stdout into the void, counted.
    fn disconnect(&mut self, now: Instant) {
        if self.sink_gone {
            return;
        }
        self.sink_gone = true;
        self.stdout.bytes_discarded += (self.out_end - self.out_start) as u64;
        self.out_start = 0;
        self.out_end = 0;
        self.cancel(now, Reason::ClientDisconnected);
    }

    fn maybe_streams_closed(&mut self) {
        if !self.streams_open() {
            self.term.on_streams_closed();
        }
    }

    fn finish(self) -> Outcome {
        if self.exit.is_some() {
            child::reap(self.pid);
        }
        child::reap_orphans(self.pid);
        let stream_end = if self.abandoned_open {
            StreamEnd::ClosedWhileHeld
        } else if self.signalled_holders {
            StreamEnd::EofAfterDescendantsKilled
        } else {
            StreamEnd::Eof
        };
        Outcome {
            pid: self.pid,
            exit: self.exit,
            cancelled_while_running: self.cancelled_while_running,
            cancellation: self.term.cancellation(),
            stream_end,
            capture: self.capture,
            stdout: self.stdout,
            events: self.events,
            descendants_signalled: self.descendants.len() as u32,
        }
    }
}
