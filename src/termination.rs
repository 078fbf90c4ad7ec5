//! The deadline and termination state machine. Pure: the caller passes in
//! `Instant`s and performs the actions it returns.
//!
//! Phases: `Running` → `Signalled` → `Killed` → `Abandoned`. The *reason* a
//! termination started (timeout, a signal to us, the client going away,
//! pipes held after exit, leftover descendants) is kept apart from the
//! *means* (which signal went where), as nextest does, so the record can
//! say both truthfully.
//!
//! Deadlines, all from `Instant`s recomputed by the caller on every turn:
//! - `Running`, helper alive: dispatch + `timeout`, and our stdin's
//!   hang-up + `stdin_close_grace` (the MCP shutdown: close stdin, wait);
//! - `Running`, helper exited, a pipe still open: exit + `wait_delay`;
//! - `Signalled`: signal + `grace`, then KILL;
//! - `Killed`: KILL + `wait_delay`, then stop waiting for EOF (`Abandoned`).

use std::time::{Duration, Instant};

use crate::signals::{Signal, Stop};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Policy {
    /// None: no deadline.
    pub timeout: Option<Duration>,
    /// The polite stop sent first on timeout: a signal, or CLOSE.
    pub signal: Stop,
    pub grace: Duration,
    pub wait_delay: Duration,
    /// After our stdin hangs up, how long the helper may take to exit on
    /// its own; None: stdin is not watched.
    pub stdin_close_grace: Option<Duration>,
}

/// A request to stop the call: the cause of a cancellation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cancellation {
    Timeout,
    /// mcp-bound received this signal.
    Signal(Signal),
    /// Our stdout's reader went away.
    ClientDisconnected,
    /// Our stdin hung up and the helper did not exit within the grace.
    StdinClosed,
}

impl Cancellation {
    /// The signal received, for a cancellation by one (its name is the
    /// record's `cancel_signal`).
    pub fn signal(self) -> Option<Signal> {
        match self {
            Cancellation::Signal(signal) => Some(signal),
            Cancellation::Timeout
            | Cancellation::ClientDisconnected
            | Cancellation::StdinClosed => None,
        }
    }
}

/// Why a termination started: a cancellation, or clean-up after the
/// helper already exited, or mcp-bound's own failure. The means (which
/// signal, to whom) are the caller's [`Action`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Cancel(Cancellation),
    /// The helper exited, but descendants kept a pipe open past `wait_delay`.
    PipesHeld,
    /// The helper exited and the pipes closed, but descendants still run.
    Leftovers,
    /// mcp-bound could not go on supervising: the tree is killed at once.
    SupervisorFailure,
    /// A restarted MCP server is not the server the client initialized
    /// (or did not answer): mcp-bound ends it.
    RestartRefused,
}

impl From<Cancellation> for Reason {
    fn from(cancellation: Cancellation) -> Reason {
        Reason::Cancel(cancellation)
    }
}

/// Cancel events kept in the record; a signal storm is not a log.
pub(crate) const MAX_CANCEL_EVENTS: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Running,
    Signalled {
        at: Instant,
    },
    Killed {
        at: Instant,
    },
    /// All signals sent and the last wait ran out: stop waiting.
    Abandoned,
}

/// What the caller must do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// The polite stop: send `signal` to the helper's group and its
    /// descendants (then CONT), or with CLOSE close the helper's stdin.
    Signal { signal: Stop, reason: Reason },
    /// Send SIGKILL to the group and every descendant.
    Kill,
    /// Close our pipe ends and stop waiting for the helper.
    Abandon,
}

#[derive(Debug, Clone)]
pub(crate) struct Terminator {
    policy: Policy,
    dispatched_at: Instant,
    phase: Phase,
    /// The first reason, which the signals carry.
    reason: Option<Reason>,
    /// The first cancellation, even when it came after the helper exited.
    cancellation: Option<Cancellation>,
    /// The first cancellation that came while the helper still ran.
    cancelled_while_running: Option<Cancellation>,
    /// Cancellations handed out for the record so far, and those waiting
    /// (never more than [`MAX_CANCEL_EVENTS`] in all).
    cancel_events: usize,
    unrecorded: std::collections::VecDeque<Cancellation>,
    helper_exited_at: Option<Instant>,
    stdin_closed_at: Option<Instant>,
    streams_closed: bool,
}

impl Terminator {
    pub(crate) fn new(policy: Policy, dispatched_at: Instant) -> Self {
        Terminator {
            policy,
            dispatched_at,
            phase: Phase::Running,
            reason: None,
            cancellation: None,
            cancelled_while_running: None,
            cancel_events: 0,
            unrecorded: std::collections::VecDeque::new(),
            helper_exited_at: None,
            stdin_closed_at: None,
            streams_closed: false,
        }
    }

    pub(crate) fn phase(&self) -> Phase {
        self.phase
    }

    pub(crate) fn reason(&self) -> Option<Reason> {
        self.reason
    }

    /// The first cancellation at all (also after the helper exited).
    pub(crate) fn cancellation(&self) -> Option<Cancellation> {
        self.cancellation
    }

    /// The first cancellation that came while the helper still ran.
    pub(crate) fn cancelled_while_running(&self) -> Option<Cancellation> {
        self.cancelled_while_running
    }

    /// A cancellation the record has not heard of yet (at most
    /// [`MAX_CANCEL_EVENTS`] are ever handed out).
    pub(crate) fn take_cancel_event(&mut self) -> Option<Cancellation> {
        self.unrecorded.pop_front()
    }

    /// Book a cancellation: the first of each kind of fact is kept, and
    /// the event for the record, up to the cap.
    fn note_cancel(&mut self, cancellation: Cancellation) {
        self.cancellation.get_or_insert(cancellation);
        if self.helper_exited_at.is_none() {
            self.cancelled_while_running.get_or_insert(cancellation);
        }
        if self.cancel_events < MAX_CANCEL_EVENTS {
            self.cancel_events += 1;
            self.unrecorded.push_back(cancellation);
        }
    }

    pub(crate) fn helper_exited(&self) -> bool {
        self.helper_exited_at.is_some()
    }

    /// The helper's exit was observed. A timeout no longer applies: a
    /// finished helper is never reported as timed out.
    pub(crate) fn on_helper_exit(&mut self, now: Instant) {
        self.helper_exited_at.get_or_insert(now);
    }

    /// Our stdin hung up: the host asks the helper to exit.
    pub(crate) fn on_stdin_closed(&mut self, now: Instant) {
        self.stdin_closed_at.get_or_insert(now);
    }

    fn timeout_at(&self) -> Option<Instant> {
        self.policy
            .timeout
            .and_then(|t| self.dispatched_at.checked_add(t))
    }

    fn stdin_grace_at(&self) -> Option<Instant> {
        let grace = self.policy.stdin_close_grace?;
        self.stdin_closed_at?.checked_add(grace)
    }

    pub(crate) fn on_streams_closed(&mut self) {
        self.streams_closed = true;
    }

    /// The next instant at which `tick` has something to do.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        match self.phase {
            Phase::Running => match self.helper_exited_at {
                None => match (self.timeout_at(), self.stdin_grace_at()) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                },
                Some(exited) if !self.streams_closed => exited.checked_add(self.policy.wait_delay),
                Some(_) => None,
            },
            Phase::Signalled { at } => at.checked_add(self.policy.grace),
            Phase::Killed { at } => at.checked_add(self.policy.wait_delay),
            Phase::Abandoned => None,
        }
    }

    /// Advance past a deadline that `now` has reached.
    pub(crate) fn tick(&mut self, now: Instant) -> Option<Action> {
        if self.deadline().is_none_or(|deadline| now < deadline) {
            return None;
        }
        match self.phase {
            Phase::Running if self.helper_exited_at.is_none() => {
                let cancellation = if self.timeout_at().is_some_and(|at| now >= at) {
                    Cancellation::Timeout
                } else {
                    Cancellation::StdinClosed
                };
                self.note_cancel(cancellation);
                self.start(now, cancellation.into(), self.policy.signal)
            }
            Phase::Running => self.start(now, Reason::PipesHeld, self.policy.signal),
            Phase::Signalled { .. } => self.kill(now),
            Phase::Killed { .. } => {
                self.phase = Phase::Abandoned;
                Some(Action::Abandon)
            }
            Phase::Abandoned => None,
        }
    }

    /// mcp-bound received a terminating signal, or its client went away.
    /// The first starts the sequence, forwarding the received signal as
    /// GNU timeout does; a second signal escalates to KILL at once.
    pub(crate) fn cancel(&mut self, now: Instant, cancellation: Cancellation) -> Option<Action> {
        self.note_cancel(cancellation);
        match (self.phase, cancellation) {
            (Phase::Running, Cancellation::Signal(signal)) => {
                self.start(now, cancellation.into(), Stop::Signal(signal))
            }
            (Phase::Running, _) => self.start(now, cancellation.into(), self.policy.signal),
            (Phase::Signalled { .. }, Cancellation::Signal(_)) => self.kill(now),
            _ => None,
        }
    }

    /// `count` of the same terminating signal arrived in one turn. Two
    /// still escalate (the second means "now"); more add nothing.
    pub(crate) fn on_signals(&mut self, now: Instant, signal: Signal, count: u32) -> Vec<Action> {
        (0..count.min(2))
            .filter_map(|_| self.cancel(now, Cancellation::Signal(signal)))
            .collect()
    }

    /// The helper exited and both pipes closed, but descendants remain.
    pub(crate) fn on_leftovers(&mut self, now: Instant) -> Option<Action> {
        match self.phase {
            Phase::Running => self.start(now, Reason::Leftovers, self.policy.signal),
            _ => None,
        }
    }

    /// mcp-bound itself ends the helper (not a cancellation): the usual
    /// signal, grace and KILL. Nothing if a termination already runs.
    pub(crate) fn end(&mut self, now: Instant, reason: Reason) -> Option<Action> {
        match self.phase {
            Phase::Running => self.start(now, reason, self.policy.signal),
            Phase::Signalled { .. } | Phase::Killed { .. } | Phase::Abandoned => None,
        }
    }

    /// The machine for the next incarnation of a restarted server: the
    /// same policy, and the deadline still from the first dispatch.
    pub(crate) fn restarted(&self) -> Terminator {
        Terminator::new(self.policy, self.dispatched_at)
    }

    fn start(&mut self, now: Instant, reason: Reason, signal: Stop) -> Option<Action> {
        self.reason.get_or_insert(reason);
        self.phase = Phase::Signalled { at: now };
        Some(Action::Signal { signal, reason })
    }

    fn kill(&mut self, now: Instant) -> Option<Action> {
        self.phase = Phase::Killed { at: now };
        Some(Action::Kill)
    }

    /// True when nothing more will happen: the helper exited and the pipes
    /// closed (and the caller found no descendants left), or we gave up.
    pub(crate) fn finished(&self, descendants_left: bool) -> bool {
        self.phase == Phase::Abandoned
            || (self.helper_exited() && self.streams_closed && !descendants_left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TERM: Signal = crate::signals::SIGTERM;

    /// SIGINT, as this system numbers it.
    fn int() -> Signal {
        crate::sys::signal_number("SIGINT").unwrap()
    }

    fn policy(timeout: Option<u64>) -> Policy {
        Policy {
            timeout: timeout.map(Duration::from_secs),
            signal: Stop::Signal(TERM),
            grace: Duration::from_secs(5),
            wait_delay: Duration::from_secs(1),
            stdin_close_grace: None,
        }
    }

    fn secs(start: Instant, s: u64) -> Instant {
        start + Duration::from_secs(s)
    }

    #[test]
    fn no_timeout_means_no_deadline() {
        let t0 = Instant::now();
        let mut term = Terminator::new(policy(None), t0);
        assert_eq!(term.deadline(), None);
        assert_eq!(term.tick(secs(t0, 1_000_000)), None);
    }

    #[test]
    fn close_is_the_polite_stop_at_the_deadline_and_a_received_signal_is_still_forwarded() {
        let t0 = Instant::now();
        let close = Policy {
            signal: Stop::Close,
            ..policy(Some(10))
        };
        let mut term = Terminator::new(close, t0);
        assert_eq!(
            term.tick(secs(t0, 10)),
            Some(Action::Signal {
                signal: Stop::Close,
                reason: Reason::Cancel(Cancellation::Timeout)
            })
        );
        assert_eq!(term.tick(secs(t0, 15)), Some(Action::Kill));
        // GNU timeout's rule holds: what mcp-bound receives is forwarded.
        let mut term = Terminator::new(close, t0);
        assert_eq!(
            term.cancel(secs(t0, 1), Cancellation::Signal(int())),
            Some(Action::Signal {
                signal: Stop::Signal(int()),
                reason: Reason::Cancel(Cancellation::Signal(int()))
            })
        );
    }

    #[test]
    fn timeout_then_grace_then_kill_then_abandon() {
        let t0 = Instant::now();
        let mut term = Terminator::new(policy(Some(10)), t0);
        assert_eq!(term.deadline(), Some(secs(t0, 10)));
        assert_eq!(term.tick(secs(t0, 9)), None);
        assert_eq!(
            term.tick(secs(t0, 10)),
            Some(Action::Signal {
                signal: Stop::Signal(TERM),
                reason: Reason::Cancel(Cancellation::Timeout)
            })
        );
        assert_eq!(term.deadline(), Some(secs(t0, 15)));
        assert_eq!(term.tick(secs(t0, 14)), None);
        assert_eq!(term.tick(secs(t0, 15)), Some(Action::Kill));
        assert_eq!(term.deadline(), Some(secs(t0, 16)));
        assert_eq!(term.tick(secs(t0, 16)), Some(Action::Abandon));
        assert!(term.finished(true));
        assert_eq!(term.reason(), Some(Reason::Cancel(Cancellation::Timeout)));
    }

    #[test]
    fn exit_before_deadline_disarms_timeout() {
        let t0 = Instant::now();
        let mut term = Terminator::new(policy(Some(10)), t0);
        term.on_helper_exit(secs(t0, 3));
        term.on_streams_closed();
        assert_eq!(term.deadline(), None);
        assert_eq!(term.tick(secs(t0, 100)), None);
        assert!(term.finished(false));
        assert_eq!(term.reason(), None);
    }

    #[test]
    fn pipes_held_after_exit_wait_delay_then_terminate() {
        let t0 = Instant::now();
        let mut term = Terminator::new(policy(Some(10)), t0);
        term.on_helper_exit(secs(t0, 2));
        assert_eq!(term.deadline(), Some(secs(t0, 3)));
        // The timeout at 10 s no longer applies.
        assert_eq!(
            term.tick(secs(t0, 3)),
            Some(Action::Signal {
                signal: Stop::Signal(TERM),
                reason: Reason::PipesHeld
            })
        );
        term.on_streams_closed();
        assert!(!term.finished(true));
        assert!(term.finished(false));
        assert_eq!(term.cancellation(), None);
    }

    #[test]
    fn signal_forwards_then_second_escalates() {
        let t0 = Instant::now();
        let mut term = Terminator::new(policy(None), t0);
        assert_eq!(
            term.cancel(secs(t0, 1), Cancellation::Signal(int())),
            Some(Action::Signal {
                signal: Stop::Signal(int()),
                reason: Reason::Cancel(Cancellation::Signal(int()))
            })
        );
        assert_eq!(
            term.cancel(secs(t0, 2), Cancellation::Signal(TERM)),
            Some(Action::Kill)
        );
        assert_eq!(term.cancellation(), Some(Cancellation::Signal(int())));
        assert_eq!(term.phase(), Phase::Killed { at: secs(t0, 2) });
    }

    #[test]
    fn signal_during_timeout_grace_escalates() {
        let t0 = Instant::now();
        let mut term = Terminator::new(policy(Some(1)), t0);
        term.tick(secs(t0, 1));
        assert_eq!(
            term.cancel(secs(t0, 2), Cancellation::Signal(TERM)),
            Some(Action::Kill)
        );
        assert_eq!(term.reason(), Some(Reason::Cancel(Cancellation::Timeout)));
    }

    #[test]
    fn client_disconnect_uses_configured_signal() {
        let t0 = Instant::now();
        let mut term = Terminator::new(policy(None), t0);
        assert_eq!(
            term.cancel(t0, Cancellation::ClientDisconnected),
            Some(Action::Signal {
                signal: Stop::Signal(TERM),
                reason: Reason::Cancel(Cancellation::ClientDisconnected)
            })
        );
        // A later disconnect notice does nothing more.
        assert_eq!(term.cancel(t0, Cancellation::ClientDisconnected), None);
    }

    #[test]
    fn leftovers_after_clean_exit() {
        let t0 = Instant::now();
        let mut term = Terminator::new(policy(None), t0);
        term.on_helper_exit(t0);
        term.on_streams_closed();
        assert!(!term.finished(true));
        assert_eq!(
            term.on_leftovers(t0),
            Some(Action::Signal {
                signal: Stop::Signal(TERM),
                reason: Reason::Leftovers
            })
        );
        assert_eq!(term.on_leftovers(t0), None);
        assert_eq!(term.tick(secs(t0, 5)), Some(Action::Kill));
    }

    #[test]
    fn zero_grace_kills_on_next_tick() {
        let t0 = Instant::now();
        let mut term = Terminator::new(
            Policy {
                grace: Duration::ZERO,
                ..policy(Some(1))
            },
            t0,
        );
        assert!(matches!(
            term.tick(secs(t0, 1)),
            Some(Action::Signal { .. })
        ));
        assert_eq!(term.tick(secs(t0, 1)), Some(Action::Kill));
    }

    #[test]
    fn huge_timeout_has_no_overflow() {
        let t0 = Instant::now();
        let term = Terminator::new(
            Policy {
                timeout: Some(crate::units::MAX_DURATION),
                ..policy(None)
            },
            t0,
        );
        // Either a far deadline or none, never a panic.
        let _ = term.deadline();
    }

    #[test]
    fn stdin_hangup_gives_the_helper_a_grace_then_terminates() {
        let t0 = Instant::now();
        let mut term = Terminator::new(
            Policy {
                stdin_close_grace: Some(Duration::from_secs(2)),
                ..policy(Some(60))
            },
            t0,
        );
        assert_eq!(term.deadline(), Some(secs(t0, 60)));
        term.on_stdin_closed(secs(t0, 10));
        assert_eq!(term.deadline(), Some(secs(t0, 12)));
        assert_eq!(
            term.tick(secs(t0, 12)),
            Some(Action::Signal {
                signal: Stop::Signal(TERM),
                reason: Reason::Cancel(Cancellation::StdinClosed)
            })
        );
        assert_eq!(term.cancellation(), Some(Cancellation::StdinClosed));
    }

    #[test]
    fn helper_exiting_after_stdin_hangup_is_a_clean_exit() {
        let t0 = Instant::now();
        let mut term = Terminator::new(
            Policy {
                stdin_close_grace: Some(Duration::from_secs(2)),
                ..policy(None)
            },
            t0,
        );
        term.on_stdin_closed(t0);
        term.on_helper_exit(secs(t0, 1));
        term.on_streams_closed();
        assert!(term.finished(false));
        assert_eq!(term.cancellation(), None);
    }
}

#[cfg(test)]
mod bookkeeping {
    use super::*;

    const TERM: Signal = crate::signals::SIGTERM;

    /// SIGINT, as this system numbers it.
    fn int() -> Signal {
        crate::sys::signal_number("SIGINT").unwrap()
    }

    fn policy() -> Policy {
        Policy {
            timeout: Some(Duration::from_secs(10)),
            signal: Stop::Signal(TERM),
            grace: Duration::from_secs(5),
            wait_delay: Duration::from_secs(1),
            stdin_close_grace: None,
        }
    }

    #[test]
    fn two_of_a_signal_in_one_turn_escalate_and_more_add_nothing() {
        let t0 = Instant::now();
        let mut term = Terminator::new(policy(), t0);
        let actions = term.on_signals(t0, int(), 5);
        assert_eq!(
            actions,
            vec![
                Action::Signal {
                    signal: Stop::Signal(int()),
                    reason: Reason::Cancel(Cancellation::Signal(int()))
                },
                Action::Kill
            ]
        );
        assert!(term.on_signals(t0, int(), 1).is_empty(), "already killed");
    }

    #[test]
    fn cancel_events_are_capped_and_the_first_cancellations_kept() {
        let t0 = Instant::now();
        let mut term = Terminator::new(policy(), t0);
        let mut recorded = Vec::new();
        for _ in 0..20 {
            term.cancel(t0, Cancellation::ClientDisconnected);
            recorded.extend(term.take_cancel_event());
        }
        assert_eq!(recorded.len(), MAX_CANCEL_EVENTS);
        term.on_helper_exit(t0);
        term.cancel(t0, Cancellation::Signal(TERM));
        assert_eq!(term.cancellation(), Some(Cancellation::ClientDisconnected));
        assert_eq!(
            term.cancelled_while_running(),
            Some(Cancellation::ClientDisconnected)
        );
    }

    #[test]
    fn a_cancel_after_the_exit_is_a_cancellation_but_not_while_running() {
        let t0 = Instant::now();
        let mut term = Terminator::new(policy(), t0);
        term.on_helper_exit(t0);
        term.cancel(t0, Cancellation::Signal(TERM));
        assert_eq!(term.cancellation(), Some(Cancellation::Signal(TERM)));
        assert_eq!(term.cancelled_while_running(), None);
        assert_eq!(term.take_cancel_event(), Some(Cancellation::Signal(TERM)));
        // The timeout is the clock's own cancellation, booked by tick.
        let mut term = Terminator::new(policy(), t0);
        let at = t0 + Duration::from_secs(10);
        assert!(term.tick(at).is_some());
        assert_eq!(term.cancelled_while_running(), Some(Cancellation::Timeout));
        assert_eq!(term.take_cancel_event(), Some(Cancellation::Timeout));
    }
}
