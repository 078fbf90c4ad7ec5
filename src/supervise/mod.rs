//! The only poll loop. It owns the helper, the signal pipe, our stdin's
//! hang-up and the clock, and hands readiness to the part that owns each
//! stream, as cargo-util's `read2` does: the stdout relay (`stdout`), the
//! stderr drain and the diagnostics intake (`stderr`), live output
//! (`live_out`), and under the session layer the stdin relay (`stdin`)
//! with the request table (`crate::session`). It returns an [`Outcome`]
//! and never prints.
//!
//! Each turn: read the clock, let the termination machine act on
//! deadlines, stop if everything is over, then build the interest set,
//! poll with a timeout computed from the next deadline (or none: an idle
//! helper costs no wake-ups at all), and dispatch.

mod approvers;
mod ending;
mod host;
mod live_out;
mod milestone;
mod outcome;
mod restart;
mod session;
mod stderr;
mod stdin;
mod stdout;
mod tree;
mod turn;

use std::fs::File;
use std::io;
use std::time::Instant;

use crate::capture::Capture;
use crate::child::{self, ChildExit, Helper};
use crate::diagnostics::Diagnostics;
use crate::guard::Guard;
use crate::record::{Event, EventKind};
use crate::redact::Redactor;
use crate::signals::{self, SignalPipe};
use crate::sink::Sink;
use crate::sys::{self, Interest, Ready};
use crate::termination::{Cancellation, Phase, Terminator};
use live_out::LiveOutput;
use session::SessionParts;
use stderr::{Intake, StderrDrain};
use stdout::{Destination, StdoutRelay};
use tree::Tree;
use turn::Slots;

pub(crate) use approvers::REASON_BYTES;
#[cfg(test)]
pub(crate) use outcome::TreeFacts;
pub(crate) use outcome::{Config, Outcome, SessionConfig, StdoutMode};

/// What a read left of a stream a loop part owns: still open (bytes, or
/// nothing this time), or closed (EOF or a read error). The one answer of
/// every part's read (the stderr drain, the stdout and stdin relays).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Stream {
    #[default]
    Open,
    Closed,
}

/// How the loop waits: a `sys::Poller`, or a stand-in that fails on
/// purpose (the tests of the failure path).
pub(crate) trait Wait {
    /// `ready[i]` answers `interests[i]`.
    fn wait(
        &mut self,
        interests: &[Interest],
        ready: &mut Vec<Ready>,
        timeout: Option<std::time::Duration>,
    ) -> io::Result<()>;

    /// Descriptors were closed and others opened under the same numbers
    /// (a restarted server's pipes).
    fn forget(&mut self) {}
}

impl Wait for sys::Poller {
    fn wait(
        &mut self,
        interests: &[Interest],
        ready: &mut Vec<Ready>,
        timeout: Option<std::time::Duration>,
    ) -> io::Result<()> {
        sys::Poller::wait(self, interests, ready, timeout)
    }

    fn forget(&mut self) {
        sys::Poller::forget(self);
    }
}

impl<F> Wait for F
where
    F: FnMut(&[Interest], &mut Vec<Ready>, Option<std::time::Duration>) -> io::Result<()>,
{
    fn wait(
        &mut self,
        interests: &[Interest],
        ready: &mut Vec<Ready>,
        timeout: Option<std::time::Duration>,
    ) -> io::Result<()> {
        self(interests, ready, timeout)
    }
}

struct Loop<'a> {
    origin: Instant,
    tree: Tree,
    term: Terminator,
    signals: &'a SignalPipe,
    stdout: StdoutRelay<'a>,
    stderr: StderrDrain,
    intake: Intake,
    watch_stdin: bool,
    events: Vec<Event>,
    exit: Option<ChildExit>,
    /// The loop stopped waiting while a pipe was still open.
    abandoned_open: bool,
    redactor: Redactor,
    session: Option<SessionParts<'a>>,
    /// Our stdin reached EOF while the helper ran.
    host_hung_up: bool,
    /// A restart opened new pipes, perhaps under numbers just closed:
    /// the wait must not trust what it registered before.
    renewed: bool,
    watchdog: Option<crate::contain::Link>,
}

/// Supervise a spawned helper to the end. If mcp-bound itself cannot go
/// on (poll fails), the helper's tree is killed and the outcome carries
/// the failure: nothing after dispatch is ever left unsupervised.
pub(crate) fn supervise(
    helper: Helper,
    dispatched_at: Instant,
    origin: Instant,
    signals: &SignalPipe,
    sink: &mut Sink,
    config: Config,
) -> Outcome {
    supervise_with(
        helper,
        dispatched_at,
        origin,
        signals,
        sink,
        config,
        &mut sys::Poller::new(),
    )
}

pub(crate) fn supervise_with(
    helper: Helper,
    dispatched_at: Instant,
    origin: Instant,
    signals: &SignalPipe,
    sink: &mut Sink,
    mut config: Config,
    poll: &mut dyn Wait,
) -> Outcome {
    let log = config.stderr_log.take();
    let destination = match config.stdout {
        StdoutMode::Forward { guard } => Destination::Forward {
            gone: sink.is_absent(),
            sink,
            guard: guard.map(Guard::new),
        },
        StdoutMode::Capture => Destination::Capture,
    };
    let live = config.live.map(|budget| {
        LiveOutput::new(
            budget,
            dispatched_at,
            config.redactor.clone(),
            Sink::stderr(),
        )
    });
    let session = match (&config.session, helper.stdin) {
        (Some(session), Some(pipe)) => Some(SessionParts::new(
            session,
            pipe,
            helper.pid as u32,
            crate::units::millis(dispatched_at.saturating_duration_since(origin)),
        )),
        _ => None,
    };
    let mut state = Loop {
        origin,
        tree: Tree::new(helper.family.clone()),
        term: Terminator::new(config.policy, dispatched_at),
        signals,
        stdout: StdoutRelay::new(File::from(helper.stdout), destination),
        stderr: StderrDrain::new(File::from(helper.stderr)),
        intake: Intake {
            diagnostics: Diagnostics::new(
                Capture::new(config.head_bytes, config.tail_bytes),
                config.flood_path,
            ),
            live,
            log,
            repeats: crate::repeats::Repeats::new(config.redactor.clone()),
            usr1_refusal_said: false,
        },
        watch_stdin: session.is_none()
            && config.policy.stdin_close_grace.is_some()
            && sys::is_open(sys::std_fd(0)),
        events: Vec::new(),
        exit: None,
        abandoned_open: false,
        redactor: config.redactor.clone(),
        session,
        host_hung_up: false,
        renewed: false,
        watchdog: config.watchdog.take(),
    };
    state.event(
        dispatched_at,
        EventKind::Dispatched {
            pid: helper.pid as u32,
            pgid: helper.pid,
        },
    );
    state.milestone(dispatched_at);
    let failure = state.run(poll).err().map(|err| {
        state.end_after_failure();
        format!("{err}; the helper's tree was killed")
    });
    let mut outcome = state.finish();
    outcome.failure = failure;
    outcome
}

impl Loop<'_> {
    /// Reap the helper, once the watchdog knows its group's number is
    /// not the call's any more.
    fn reap_helper(&self) {
        if let Some(link) = &self.watchdog {
            link.reaping();
        }
        child::reap(self.tree.family.helper());
    }

    fn event(&mut self, at: Instant, kind: EventKind) {
        let t_ms = crate::units::millis(at.saturating_duration_since(self.origin));
        self.events.push(Event { t_ms, kind });
    }

    fn streams_open(&self) -> bool {
        self.stdout.is_open() || self.stderr.is_open()
    }

    fn run(&mut self, poll: &mut dyn Wait) -> Result<(), String> {
        let mut interests: Vec<Interest> = Vec::with_capacity(8);
        let mut ready: Vec<Ready> = Vec::with_capacity(8);
        loop {
            let now = Instant::now();
            while let Some(action) = self.term.tick(now) {
                self.perform(now, action);
            }
            self.session_turn(now)?;
            self.intake.window_turn(now);
            if let Some(live) = self.intake.live.as_mut() {
                live.tick(now);
                live.flush();
            }
            if let Some(line) = self.intake.log_turn() {
                // mcp-bound's own line, once: best effort, never waited for.
                let _ = Sink::stderr().try_write(line.as_bytes());
            }
            if self.term.phase() == Phase::Abandoned {
                return Ok(());
            }
            if self.term.helper_exited() && !self.streams_open() && self.after_exit(now) {
                if self.restart_due(now) {
                    self.route()?;
                } else {
                    return Ok(());
                }
            }
            let slots = self.interests(&mut interests);
            let timeout = self
                .next_wake()
                .map(|wake| wake.saturating_duration_since(now));
            if std::mem::take(&mut self.renewed) {
                poll.forget();
            }
            poll.wait(&interests, &mut ready, timeout)
                .map_err(|err| format!("poll failed: {err}"))?;
            self.dispatch(&slots, &ready, Instant::now());
            self.route()?;
        }
    }

    /// The helper exited and its pipes closed: true when nothing of its
    /// tree is left; otherwise end the leftovers.
    fn after_exit(&mut self, now: Instant) -> bool {
        if self.term.finished(self.tree.family.descendants_left()) {
            return true;
        }
        if !sys::BACKEND.subreaper {
            self.tree.recheck.after(now);
        }
        match self.term.phase() {
            Phase::Running => {
                if let Some(action) = self.term.on_leftovers(now) {
                    self.perform(now, action);
                }
            }
            // Something forked while we were killing: kill it too. Only
            // new pids: the record must not fill with repeats while a
            // killed tree takes its time to die.
            Phase::Killed { .. } => {
                if self.tree.has_new_descendants() {
                    self.perform_sweep(now, signals::SIGKILL, None);
                }
            }
            Phase::Signalled { .. } | Phase::Abandoned => {}
        }
        false
    }

    /// Hand each ready descriptor to the part that owns it.
    fn dispatch(&mut self, slots: &Slots, ready: &[Ready], now: Instant) {
        let is = |slot: Option<usize>| slot.map(|i| ready[i]);
        if ready[slots.signals].readable {
            self.on_signals(now);
        }
        // The client before the server's stderr: a tools/call's approver
        // starts before this turn's drain, so a flood cannot delay it.
        if let Some(r) = is(slots.client)
            && (r.readable || r.hangup || r.error)
        {
            if self.on_client_readable(now) == Stream::Closed {
                self.on_stdin_closed(now);
            }
            self.start_approvers();
        }
        if let Some(r) = is(slots.stderr)
            && (r.readable || r.hangup || r.error)
            && self.stderr.drain(now, &mut self.intake) == Stream::Closed
        {
            self.event(now, EventKind::StderrClosed);
            self.maybe_streams_closed();
        }
        if let Some(r) = is(slots.sink) {
            if r.error || r.hangup {
                self.disconnect(now);
            } else if r.writable && self.stdout.on_writable() {
                self.cancel(now, Cancellation::ClientDisconnected);
            }
        }
        if let Some(r) = is(slots.stdout)
            && (r.readable || r.hangup || r.error)
        {
            let table = self.session.as_mut().map(|s| &mut s.table);
            let relayed = self.stdout.on_readable(now, &mut self.intake, table);
            if relayed.disconnected {
                self.cancel(now, Cancellation::ClientDisconnected);
            }
            if relayed.stream == Stream::Closed {
                self.event(now, EventKind::StdoutClosed);
                self.maybe_streams_closed();
            }
        }
        if let Some(r) = is(slots.live)
            && (r.writable || r.error || r.hangup)
            && let Some(live) = self.intake.live.as_mut()
        {
            live.on_writable();
        }
        if let Some(r) = is(slots.server_in)
            && (r.writable || r.error || r.hangup)
        {
            self.on_server_stdin_writable();
        }
        if let Some(r) = is(slots.stdin)
            && (r.hangup || r.error)
        {
            self.watch_stdin = false;
            self.on_stdin_closed(now);
        }
        if let Some(approvers) = self.session.as_mut().and_then(|s| s.approvers.as_mut()) {
            for &(slot, i, pipe) in &slots.approvers {
                let r = ready[slot];
                if r.readable || r.hangup || r.error {
                    approvers.on_readable(i, pipe);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::SignalReason;
    use std::ffi::OsString;

    fn config() -> Config<'static> {
        Config {
            watchdog: None,
            session: None,
            stderr_log: None,
            policy: crate::termination::Policy {
                timeout: None,
                signal: signals::Stop::Signal(signals::SIGTERM),
                grace: std::time::Duration::from_secs(5),
                wait_delay: std::time::Duration::from_secs(1),
                stdin_close_grace: None,
            },
            head_bytes: 0,
            tail_bytes: 1024,
            flood_path: crate::diagnostics::FloodPath::Read,
            stdout: StdoutMode::Forward { guard: None },
            live: None,
            redactor: Redactor::default(),
        }
    }

    #[test]
    fn a_poll_failure_after_dispatch_kills_the_tree_and_says_so() {
        let _installed = crate::signals::INSTALLED
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let signals = SignalPipe::install().unwrap();
        let argv: Vec<OsString> = ["sh", "-c", "sleep 30 & exec sleep 30"]
            .iter()
            .map(OsString::from)
            .collect();
        let Ok(helper) = child::spawn(&argv, child::StdinFrom::Inherit, &child::Confine::default())
        else {
            panic!("cannot spawn sh");
        };
        let pid = helper.pid;
        let family = helper.family.clone();
        let mut calls = 0;
        let mut failing = |_: &[Interest], _: &mut Vec<Ready>, _| {
            calls += 1;
            Err(io::Error::from(io::ErrorKind::InvalidInput))
        };
        let now = Instant::now();
        let outcome = supervise_with(
            helper,
            now,
            now,
            &signals,
            &mut Sink::absent(),
            config(),
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
            Some(ChildExit::Signal {
                signal: signals::SIGKILL,
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
        // Nothing of the tree is left running (the background sleep too,
        // in the helper's group): other tests' children, which the
        // process table also shows as ours, are not its tree.
        let mut left = family.live_descendants().processes;
        left.retain(|p| p.pgid == pid);
        assert!(left.is_empty(), "left running: {left:?}");
        assert!(
            crate::sys::proc_info(pid).is_none(),
            "the helper was reaped"
        );
    }
}
