//! The only poll loop. It owns the helper, both of its pipes, our stdout,
//! our stderr (for --live), our stdin's hang-up, the signal pipe and the
//! clock, and returns an [`Outcome`]; it never prints.
//!
//! Each turn: read the clock, let the termination machine act on deadlines,
//! stop if everything is over, then poll with a timeout computed from the
//! next deadline (or none: an idle helper costs no wake-ups at all).
//!
//! stdout is forwarded byte-exact through one bounded buffer (plus, with
//! the guard, one partial line up to --max-message-bytes); while the buffer
//! holds bytes, the helper's stdout is not read (back-pressure), but its
//! stderr always is, so the helper never blocks on diagnostics.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::Instant;

use crate::capture::Capture;
use crate::child::{self, ExitObs, Helper};
use crate::guard::{DivertReason, Guard};
use crate::live::Live;
use crate::pipe_tail::{Diagnostics, FloodPath, Took};
use crate::record::{Event, EventKind, SignalReason, StdoutFacts, StdoutGuard, StreamEnd, Target};
use crate::redact::Redactor;
use crate::signals::{self, SignalPipe};
use crate::sink::{Sink, Wrote};
use crate::sys::{self, Interest, Ready};
use crate::termination::{Action, Cancellation, Phase, Policy, Reason, Terminator};

/// Bytes of helper stdout read at once; with no guard, also the bound on
/// what waits for our reader.
const STDOUT_BUFFER: usize = 64 * 1024;
const STDERR_READ: usize = 64 * 1024;
/// Reads from one pipe per turn, so a flood on one cannot starve the rest.
const READS_PER_TURN: usize = 16;
/// At exit, the most time the live queue gets to reach our stderr.
const LIVE_EXIT_LIMIT: std::time::Duration = std::time::Duration::from_millis(500);
/// After a huge guarded message, give the memory back.
const KEEP_CAPACITY: usize = 1 << 20;

pub struct Config {
    pub policy: Policy,
    pub head_bytes: usize,
    pub tail_bytes: usize,
    pub flood_path: FloodPath,
    /// Some(max message bytes): guard stdout as JSON-RPC lines.
    pub guard: Option<usize>,
    /// Some: forward stderr live under this token bucket.
    pub live: Option<crate::settings::LiveBudget>,
    pub redactor: Redactor,
    /// Keep stdout in the capture instead of forwarding it (an approver's
    /// stdout is diagnostics, not a result).
    pub capture_stdout: bool,
}

#[derive(Debug)]
pub struct Outcome {
    pub exit: Option<ExitObs>,
    /// The first cancellation that arrived while the helper still ran.
    pub cancelled_while_running: Option<Cancellation>,
    /// The first cancellation at all (also after the helper exited).
    pub cancellation: Option<Cancellation>,
    pub stream_end: StreamEnd,
    pub capture: Capture,
    pub stdout: StdoutFacts,
    pub live_forwarded: u64,
    pub live_dropped: u64,
    /// Taken in for live output but never written (queued at exit).
    pub live_unsent: u64,
    pub events: Vec<Event>,
    pub descendants_signalled: u32,
    pub last_stdout: Option<Instant>,
    pub last_stderr: Option<Instant>,
    /// mcp-bound itself failed after dispatch (the tree was killed).
    pub failure: Option<String>,
}

struct Loop<'a> {
    origin: Instant,
    pid: i32,
    family: child::Family,
    term: Terminator,
    signals: &'a SignalPipe,
    sink: &'a mut Sink,
    out: Option<File>,
    err: Option<File>,
    out_buf: Vec<u8>,
    out_start: usize,
    out_end: usize,
    in_buf: Box<[u8]>,
    err_buf: Box<[u8]>,
    guard: Option<Guard>,
    live: Option<Live>,
    /// Our stderr, only when --live forwards to it.
    err_sink: Option<Sink>,
    watch_stdin: bool,
    sink_gone: bool,
    diag: Diagnostics,
    stdout: StdoutFacts,
    events: Vec<Event>,
    exit: Option<ExitObs>,
    descendants: HashSet<i32>,
    signalled_holders: bool,
    abandoned_open: bool,
    last_stdout: Option<Instant>,
    last_stderr: Option<Instant>,
    redactor: Redactor,
    capture_stdout: bool,
}

/// How the loop waits: `sys::poll`, or a stand-in that fails on purpose
/// (the tests of the failure path).
pub type PollFn<'p> =
    dyn FnMut(&[Interest], &mut Vec<Ready>, Option<std::time::Duration>) -> io::Result<()> + 'p;

/// Supervise a spawned helper to the end. If mcp-bound itself cannot go
/// on (poll fails), the helper's tree is killed and the outcome carries
/// the failure: nothing after dispatch is ever left unsupervised.
pub fn supervise(
    helper: Helper,
    dispatched_at: Instant,
    origin: Instant,
    signals: &SignalPipe,
    sink: &mut Sink,
    config: &Config,
) -> Outcome {
    supervise_with(
        helper,
        dispatched_at,
        origin,
        signals,
        sink,
        config,
        &mut sys::poll,
    )
}

pub(crate) fn supervise_with(
    helper: Helper,
    dispatched_at: Instant,
    origin: Instant,
    signals: &SignalPipe,
    sink: &mut Sink,
    config: &Config,
    poll: &mut PollFn<'_>,
) -> Outcome {
    let sink_gone = sink.is_absent();
    let err_sink = config.live.map(|_| Sink::stderr());
    let watch_stdin = config.policy.stdin_close_grace.is_some() && sys::is_open(0);
    let mut state = Loop {
        origin,
        pid: helper.pid,
        family: helper.family.clone(),
        term: Terminator::new(config.policy, dispatched_at),
        signals,
        sink,
        out: Some(File::from(helper.stdout)),
        err: Some(File::from(helper.stderr)),
        out_buf: vec![
            0;
            if config.guard.is_some() {
                0
            } else {
                STDOUT_BUFFER
            }
        ],
        out_start: 0,
        out_end: 0,
        in_buf: vec![
            0;
            if config.guard.is_some() {
                STDOUT_BUFFER
            } else {
                0
            }
        ]
        .into_boxed_slice(),
        err_buf: vec![0; STDERR_READ].into_boxed_slice(),
        guard: config.guard.map(Guard::new),
        live: config.live.map(|budget| {
            Live::new(
                budget.rate,
                budget.burst,
                dispatched_at,
                config.redactor.clone(),
            )
        }),
        err_sink,
        watch_stdin,
        sink_gone,
        // --live forwards what it reads, so it needs every byte read.
        diag: Diagnostics::new(
            Capture::new(config.head_bytes, config.tail_bytes),
            if config.live.is_some() {
                FloodPath::Read
            } else {
                config.flood_path
            },
        ),
        stdout: StdoutFacts {
            guard: StdoutGuard::new(config.guard.is_some()),
            ..Default::default()
        },
        events: Vec::new(),
        exit: None,
        descendants: HashSet::new(),
        signalled_holders: false,
        abandoned_open: false,
        last_stdout: None,
        last_stderr: None,
        redactor: config.redactor.clone(),
        capture_stdout: config.capture_stdout,
    };
    state.event(
        dispatched_at,
        EventKind::Dispatched {
            pid: helper.pid as u32,
            pgid: helper.pid,
        },
    );
    let failure = state.run(poll).err().map(|err| {
        state.end_after_failure();
        format!("poll failed: {err}; the helper's tree was killed")
    });
    let mut outcome = state.finish();
    outcome.failure = failure;
    outcome
}

fn push_interest(interests: &mut Vec<Interest>, fd: RawFd, read: bool, write: bool) -> usize {
    interests.push(Interest::new(fd, read, write));
    interests.len() - 1
}

impl Loop<'_> {
    fn event(&mut self, at: Instant, kind: EventKind) {
        let t_ms = crate::units::millis(at.saturating_duration_since(self.origin));
        self.events.push(Event { t_ms, kind });
    }

    fn streams_open(&self) -> bool {
        self.out.is_some() || self.err.is_some()
    }

    fn next_wake(&self) -> Option<Instant> {
        let live = self.live.as_ref().and_then(Live::wake_at);
        match (self.term.deadline(), live) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn run(&mut self, poll: &mut PollFn<'_>) -> io::Result<()> {
        let mut interests: Vec<Interest> = Vec::with_capacity(6);
        let mut ready: Vec<Ready> = Vec::with_capacity(6);
        loop {
            let now = Instant::now();
            while let Some(action) = self.term.tick(now) {
                self.perform(now, action);
            }
            if let Some(live) = self.live.as_mut() {
                live.tick(now);
            }
            self.flush_live();
            if self.term.phase() == Phase::Abandoned {
                return Ok(());
            }
            if self.term.helper_exited() && !self.streams_open() {
                if self.term.finished(self.family.descendants_left()) {
                    return Ok(());
                }
                match self.term.phase() {
                    Phase::Running => {
                        if let Some(action) = self.term.on_leftovers(now) {
                            self.perform(now, action);
                        }
                    }
                    // Something forked while we were killing: kill it too.
                    // Only new pids: the record must not fill with repeats
                    // while a killed tree takes its time to die.
                    Phase::Killed { .. } => {
                        let fresh = self
                            .family
                            .live_descendants()
                            .iter()
                            .any(|p| !self.descendants.contains(&p.pid));
                        if fresh {
                            self.perform_sweep(now, signals::SIGKILL, None);
                        }
                    }
                    _ => {}
                }
            }

            interests.clear();
            // Streams before the signal pipe: once poll(2) meets a ready
            // descriptor it stops putting wait-queue entries on the ones
            // after it, so during a flood one call costs one look at each.
            // Measured: 5-7% less CPU for a stderr flood, writer included.
            let err_slot = self
                .err
                .as_ref()
                .map(|file| push_interest(&mut interests, file.as_raw_fd(), true, false));
            let signal_slot =
                push_interest(&mut interests, self.signals.fd().as_raw_fd(), true, false);
            let buffered = self.out_start < self.out_end;
            // While bytes wait for our reader, the helper's stdout stays out
            // of the set entirely: a closed pipe reports POLLHUP even with no
            // events requested, and would turn the wait into a spin.
            let out_slot = match (&self.out, buffered) {
                (Some(file), false) => {
                    Some(push_interest(&mut interests, file.as_raw_fd(), true, false))
                }
                _ => None,
            };
            let sink_slot = match (self.sink_gone, self.sink.poll_fd()) {
                (false, Some(fd)) => Some(push_interest(&mut interests, fd, false, buffered)),
                _ => None,
            };
            let live_waiting = self.live.as_ref().is_some_and(|l| !l.is_empty());
            let live_slot = match (live_waiting, self.err_sink.as_ref().and_then(Sink::poll_fd)) {
                (true, Some(fd)) => Some(push_interest(&mut interests, fd, false, true)),
                _ => None,
            };
            // Our stdin is watched for hang-up without being read: the
            // helper reads it directly.
            // A socket the host shut down for writing reports only
            // POLLRDHUP: that is a hang-up too.
            let stdin_slot = self.watch_stdin.then(|| {
                interests.push(Interest {
                    peer_closed: true,
                    ..Interest::new(0, false, false)
                });
                interests.len() - 1
            });
            let timeout = self
                .next_wake()
                .map(|wake| wake.saturating_duration_since(now));
            poll(&interests, &mut ready, timeout)?;
            let now = Instant::now();

            if ready[signal_slot].readable {
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
                    self.sink.writable();
                    self.flush(now);
                }
            }
            if let Some(slot) = out_slot {
                let r = ready[slot];
                if r.readable || r.hangup || r.error {
                    self.read_stdout(now);
                }
            }
            if let Some(slot) = live_slot {
                let r = ready[slot];
                if r.writable || r.error || r.hangup {
                    if let Some(err_sink) = self.err_sink.as_mut() {
                        err_sink.writable();
                    }
                    self.flush_live();
                }
            }
            if let Some(slot) = stdin_slot {
                let r = ready[slot];
                if r.hangup || r.error {
                    self.watch_stdin = false;
                    self.term.on_stdin_closed(now);
                    self.event(now, EventKind::StdinClosed);
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
            for action in self.term.on_signals(now, signo, count) {
                self.perform(now, action);
            }
            self.record_cancel_events(now);
        }
    }

    /// The cancellations the terminator booked, as record events (it caps
    /// them: a signal storm is not a log).
    fn record_cancel_events(&mut self, now: Instant) {
        while let Some(cancellation) = self.term.take_cancel_event() {
            let signal = match cancellation {
                Cancellation::Signal(signo) => Some(signals::name(signo)),
                Cancellation::Timeout
                | Cancellation::ClientDisconnected
                | Cancellation::StdinClosed => None,
            };
            self.event(
                now,
                EventKind::CancelRequested {
                    reason: cancellation.into(),
                    signal,
                },
            );
        }
    }

    fn cancel(&mut self, now: Instant, cancellation: Cancellation) {
        let action = self.term.cancel(now, cancellation);
        self.record_cancel_events(now);
        if let Some(action) = action {
            self.perform(now, action);
        }
    }

    fn perform(&mut self, now: Instant, action: Action) {
        match action {
            Action::Signal { signal, reason } => {
                // A cancellation comes before the signal that carries it.
                self.record_cancel_events(now);
                self.perform_sweep(now, signal, Some(reason));
            }
            Action::Kill => {
                let reason = self.term.reason();
                self.perform_sweep(now, signals::SIGKILL, reason);
            }
            Action::Abandon => {
                self.abandoned_open = self.streams_open();
                self.out = None;
                self.err = None;
                self.event(now, EventKind::StreamsAbandoned);
            }
        }
    }

    fn perform_sweep(&mut self, now: Instant, signo: i32, reason: Option<Reason>) {
        let before = self.descendants.len();
        let sweep = child::sweep(&self.family, signo, &mut self.descendants);
        // A sweep with no reason of its own is clean-up of leftovers.
        let reason = reason
            .or(self.term.reason())
            .map_or(SignalReason::Leftovers, SignalReason::from);
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

    /// Diagnostics reach the capture and, with --live, our stderr.
    fn diagnose(diag: &mut Diagnostics, live: &mut Option<Live>, now: Instant, bytes: &[u8]) {
        diag.push(bytes);
        if let Some(live) = live.as_mut() {
            live.offer(now, bytes);
        }
    }

    fn drain_stderr(&mut self, now: Instant) {
        if self.diag.splicing() {
            return self.splice_stderr(now);
        }
        for _ in 0..READS_PER_TURN {
            let Some(file) = self.err.as_mut() else {
                return;
            };
            let timer = self.diag.probing().then(Instant::now);
            match file.read(&mut self.err_buf) {
                Ok(0) => return self.close_stderr(now),
                Ok(n) => {
                    let busy = timer.map(|started| started.elapsed());
                    self.last_stderr = Some(now);
                    Self::diagnose(&mut self.diag, &mut self.live, now, &self.err_buf[..n]);
                    self.diag.on_read(n, busy, now);
                    if self.diag.splicing() {
                        return self.splice_stderr(now);
                    }
                    // A pipe read returns less than asked only when the
                    // pipe is empty: poll is a cheaper way to learn when it
                    // is not than a read that takes the pipe's lock again.
                    if n < self.err_buf.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return self.close_stderr(now),
            }
        }
        self.flush_live();
    }

    /// The flood path: stderr moves inside the kernel (see `pipe_tail`).
    /// A move shorter than asked for means the pipe is drained for now, so
    /// the turn ends there instead of paying for a move of nothing.
    fn splice_stderr(&mut self, now: Instant) {
        for attempt in 0..READS_PER_TURN {
            let Some(file) = self.err.as_ref() else {
                return;
            };
            match self.diag.take_from(file.as_fd(), attempt == 0, now) {
                Took::Bytes(n) => {
                    self.last_stderr = Some(now);
                    if n < crate::pipe_tail::MOVE_MAX {
                        break;
                    }
                }
                Took::Nothing => break,
                Took::Eof => return self.close_stderr(now),
                // Back to reads (to measure again, or for good): the next
                // turn reads what is left.
                Took::Off => break,
            }
        }
    }

    fn read_stdout(&mut self, now: Instant) {
        for _ in 0..READS_PER_TURN {
            let Some(file) = self.out.as_mut() else {
                return;
            };
            let target: &mut [u8] = if self.guard.is_some() {
                &mut self.in_buf
            } else {
                &mut self.out_buf
            };
            let target_len = target.len();
            match file.read(target) {
                Ok(0) => return self.close_stdout(now),
                Ok(n) => {
                    self.last_stdout = Some(now);
                    self.stdout.bytes_seen += n as u64;
                    let waiting = self.take_stdout(now, n);
                    // A short read emptied the pipe: see drain_stderr.
                    if waiting || n < target_len {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return self.close_stdout(now),
            }
        }
        self.flush_live();
    }

    /// The `n` bytes just read from the helper's stdout go to the capture
    /// (stdout merged into diagnostics), the sink, or nowhere once the
    /// sink's reader is gone. True when some wait for our reader.
    fn take_stdout(&mut self, now: Instant, n: usize) -> bool {
        if self.capture_stdout {
            let bytes = &self.out_buf[..n];
            Self::diagnose(&mut self.diag, &mut self.live, now, bytes);
            return false;
        }
        self.out_start = 0;
        self.out_end = match self.guard.as_mut() {
            None => n,
            Some(guard) => {
                self.out_buf.clear();
                let (diag, live) = (&mut self.diag, &mut self.live);
                guard.feed(
                    &self.in_buf[..n],
                    &mut self.out_buf,
                    &mut |bytes, reason| divert_to(diag, live, now, bytes, reason),
                );
                self.out_buf.len()
            }
        };
        if self.sink_gone {
            self.stdout.bytes_discarded += self.out_end as u64;
            self.out_end = 0;
            return false;
        }
        self.flush(now);
        self.out_start < self.out_end
    }

    fn close_stdout(&mut self, now: Instant) {
        self.out = None;
        if let Some(guard) = self.guard.as_mut() {
            let (diag, live) = (&mut self.diag, &mut self.live);
            guard.finish(&mut |bytes, reason| divert_to(diag, live, now, bytes, reason));
        }
        self.event(now, EventKind::StdoutClosed);
        self.maybe_streams_closed();
        self.flush_live();
    }

    fn close_stderr(&mut self, now: Instant) {
        self.err = None;
        self.diag.stop_flood_path();
        if let Some(live) = self.live.as_mut() {
            live.finish();
        }
        self.event(now, EventKind::StderrClosed);
        self.maybe_streams_closed();
        self.flush_live();
    }

    fn flush(&mut self, now: Instant) {
        while self.out_start < self.out_end && !self.sink_gone {
            match self
                .sink
                .try_write(&self.out_buf[self.out_start..self.out_end])
            {
                Wrote::Bytes(n) => {
                    self.out_start += n;
                    self.stdout.bytes_forwarded += n as u64;
                }
                Wrote::WouldBlock => break,
                Wrote::Gone(_) => self.disconnect(now),
            }
        }
        if self.out_start == self.out_end {
            self.out_start = 0;
            self.out_end = 0;
            if self.guard.is_some() && self.out_buf.capacity() > KEEP_CAPACITY {
                self.out_buf = Vec::new();
            }
        }
    }

    /// Write what the live queue holds, as far as our stderr takes it.
    fn flush_live(&mut self) {
        let (Some(live), Some(err_sink)) = (self.live.as_mut(), self.err_sink.as_mut()) else {
            return;
        };
        while !live.is_empty() {
            match err_sink.try_write(live.front()) {
                Wrote::Bytes(n) => live.consume(n),
                Wrote::WouldBlock => break,
                // Our stderr is gone: nothing more can be shown live, and
                // what waits is counted as dropped (not forgotten).
                Wrote::Gone(_) => {
                    live.reader_gone();
                    return;
                }
            }
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
        self.cancel(now, Cancellation::ClientDisconnected);
    }

    fn maybe_streams_closed(&mut self) {
        if !self.streams_open() {
            self.term.on_streams_closed();
        }
    }

    /// The loop cannot go on: KILL the helper's tree, stop reading, and
    /// wait for the helper's exit (KILL cannot be caught, so it comes).
    fn end_after_failure(&mut self) {
        let now = Instant::now();
        self.perform_sweep(now, signals::SIGKILL, Some(Reason::SupervisorFailure));
        self.abandoned_open = self.streams_open();
        self.out = None;
        self.err = None;
        if self.exit.is_none()
            && let Some(exit) = child::await_exit(self.pid)
        {
            self.exit = Some(exit);
            self.event(
                Instant::now(),
                EventKind::HelperExited {
                    exit: exit.to_record(),
                },
            );
        }
    }

    /// The streams are closed: give what the live queue still holds (and
    /// a drop marker the budget now allows) a bounded time to reach our
    /// stderr. What is still unsent after it is counted in the record.
    fn drain_live_at_exit(&mut self) {
        let deadline = Instant::now() + LIVE_EXIT_LIMIT;
        loop {
            if let Some(live) = self.live.as_mut() {
                live.tick(Instant::now());
            }
            self.flush_live();
            let waiting = self.live.as_ref().is_some_and(|l| !l.is_empty());
            let Some(err_sink) = self.err_sink.as_mut() else {
                return;
            };
            if !waiting || err_sink.wait_writable(deadline).is_err() {
                return;
            }
        }
    }

    fn finish(mut self) -> Outcome {
        self.drain_live_at_exit();
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
        if let Some(guard) = &self.guard {
            self.stdout.lines_forwarded = guard.lines_forwarded;
            self.stdout.lines_diverted = guard.lines_diverted;
            self.stdout.bytes_diverted = guard.bytes_diverted;
            self.stdout.first_diverted = guard.first_diverted.as_deref().map(|bytes| {
                let cut = bytes.len() == crate::guard::FIRST_DIVERTED_BYTES;
                self.redactor
                    .redact_piece(&String::from_utf8_lossy(bytes), false, cut)
            });
        }
        let (live_forwarded, live_dropped, live_unsent) =
            self.live.as_ref().map_or((0, 0, 0), |live| {
                (live.bytes_forwarded, live.bytes_dropped, live.unsent())
            });
        Outcome {
            exit: self.exit,
            cancelled_while_running: self.term.cancelled_while_running(),
            cancellation: self.term.cancellation(),
            stream_end,
            capture: self.diag.finish(),
            stdout: self.stdout,
            live_forwarded,
            live_dropped,
            live_unsent,
            events: self.events,
            descendants_signalled: self.descendants.len() as u32,
            last_stdout: self.last_stdout,
            last_stderr: self.last_stderr,
            failure: None,
        }
    }
}

/// A diverted stdout line enters the diagnostics with a prefix that says
/// why, written by mcp-bound.
fn divert_to(
    diag: &mut Diagnostics,
    live: &mut Option<Live>,
    now: Instant,
    bytes: &[u8],
    reason: DivertReason,
) {
    let prefix: &[u8] = match reason {
        DivertReason::NotJsonObject => b"[mcp-bound: stdout line diverted, not a JSON object] ",
        DivertReason::TooLong => b"[mcp-bound: stdout line over --max-message-bytes diverted] ",
        DivertReason::TooLongContinued => b"",
        DivertReason::PartialAtEof => b"[mcp-bound: unterminated stdout line diverted at EOF] ",
    };
    Loop::diagnose(diag, live, now, prefix);
    Loop::diagnose(diag, live, now, bytes);
    if reason == DivertReason::PartialAtEof {
        Loop::diagnose(diag, live, now, b"\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn config() -> Config {
        Config {
            policy: crate::termination::Policy {
                timeout: None,
                signal: signals::SIGTERM,
                grace: std::time::Duration::from_secs(5),
                wait_delay: std::time::Duration::from_secs(1),
                stdin_close_grace: None,
            },
            head_bytes: 0,
            tail_bytes: 1024,
            flood_path: FloodPath::Read,
            guard: None,
            live: None,
            redactor: Redactor::default(),
            capture_stdout: false,
        }
    }

    #[test]
    fn a_poll_failure_after_dispatch_kills_the_tree_and_says_so() {
        let signals = SignalPipe::install().unwrap();
        let argv: Vec<OsString> = ["sh", "-c", "sleep 30 & exec sleep 30"]
            .iter()
            .map(OsString::from)
            .collect();
        let Ok(helper) = child::spawn(&argv, None) else {
            panic!("cannot spawn sh");
        };
        let pid = helper.pid;
        let family = helper.family.clone();
        let mut calls = 0;
        let mut failing = |_: &[Interest], _: &mut Vec<Ready>, _| {
            calls += 1;
            Err(io::Error::from_raw_os_error(nix::libc::EINVAL))
        };
        let now = Instant::now();
        let outcome = supervise_with(
            helper,
            now,
            now,
            &signals,
            &mut Sink::absent(),
            &config(),
            &mut failing,
        );
        assert_eq!(calls, 1, "the loop stopped at the first failure");
        let failure = outcome.failure.expect("the failure is reported");
        assert!(
            failure.contains("poll failed") && failure.contains("killed"),
            "{failure}"
        );
        assert_eq!(
            outcome.exit,
            Some(ExitObs::Signal {
                signo: signals::SIGKILL,
                core_dumped: false
            }),
            "the helper's exit was observed"
        );
        let killed: Vec<_> = outcome
            .events
            .iter()
            .filter(|e| {
                matches!(
                    e.kind,
                    EventKind::SignalSent {
                        reason: SignalReason::SupervisorFailure,
                        ..
                    }
                )
            })
            .collect();
        assert!(!killed.is_empty(), "KILL was sent: {:?}", outcome.events);
        // Nothing of the tree is left running (the background sleep too).
        let left: Vec<_> = family.live_descendants();
        assert!(left.is_empty(), "left running: {left:?}");
        assert!(
            crate::sys::proc_info(pid).is_none(),
            "the helper was reaped"
        );
    }
}
