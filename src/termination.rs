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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// None: no deadline.
    pub timeout: Option<Duration>,
    /// The signal sent first on timeout.
    pub signal: i32,
    pub grace: Duration,
    pub wait_delay: Duration,
    /// After our stdin hangs up, how long the helper may take to exit on
    /// its own; None: stdin is not watched.
    pub stdin_close_grace: Option<Duration>,
}

/// Why a termination started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Timeout,
    /// mcp-bound received this signal.
    Signal(i32),
    /// Our stdout's reader went away.
    ClientDisconnected,
    /// Our stdin hung up and the helper did not exit within the grace.
    StdinClosed,
    /// The helper exited, but descendants kept a pipe open past `wait_delay`.
    PipesHeld,
    /// The helper exited and the pipes closed, but descendants still run.
    Leftovers,
    /// mcp-bound could not go on supervising: the tree is killed at once.
    SupervisorFailure,
}

impl Reason {
    /// A cancellation is a request to stop the call; the other reasons are
    /// clean-up after the helper has already exited.
    pub fn is_cancellation(self) -> bool {
        matches!(
            self,
            Reason::Timeout | Reason::Signal(_) | Reason::ClientDisconnected | Reason::StdinClosed
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
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
pub enum Action {
    /// Send `signal` to the helper's group and its descendants (then CONT).
    Signal { signal: i32, reason: Reason },
    /// Send SIGKILL to the group and every descendant.
    Kill,
    /// Close our pipe ends and stop waiting for the helper.
    Abandon,
}

#[derive(Debug, Clone)]
pub struct Terminator {
    policy: Policy,
    dispatched_at: Instant,
    phase: Phase,
    /// The first reason, which decides the record's state.
    reason: Option<Reason>,
    /// The first cancellation, even when it came after the helper exited.
    cancellation: Option<Reason>,
    helper_exited_at: Option<Instant>,
    stdin_closed_at: Option<Instant>,
    streams_closed: bool,
}

impl Terminator {
    pub fn new(policy: Policy, dispatched_at: Instant) -> Self {
        Terminator {
            policy,
            dispatched_at,
            phase: Phase::Running,
            reason: None,
            cancellation: None,
            helper_exited_at: None,
            stdin_closed_at: None,
            streams_closed: false,
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    pub fn reason(&self) -> Option<Reason> {
        self.reason
    }

    pub fn cancellation(&self) -> Option<Reason> {
        self.cancellation
    }

    pub fn helper_exited(&self) -> bool {
        self.helper_exited_at.is_some()
    }

    /// The helper's exit was observed. A timeout no longer applies: a
    /// finished helper is never reported as timed out.
    pub fn on_helper_exit(&mut self, now: Instant) {
        self.helper_exited_at.get_or_insert(now);
    }

    /// Our stdin hung up: the host asks the helper to exit.
    pub fn on_stdin_closed(&mut self, now: Instant) {
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

    pub fn on_streams_closed(&mut self) {
        self.streams_closed = true;
    }

    /// The next instant at which `tick` has something to do.
    pub fn deadline(&self) -> Option<Instant> {
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
    pub fn tick(&mut self, now: Instant) -> Option<Action> {
        if self.deadline().is_none_or(|deadline| now < deadline) {
            return None;
        }
        match self.phase {
            Phase::Running if self.helper_exited_at.is_none() => {
                let reason = if self.timeout_at().is_some_and(|at| now >= at) {
                    Reason::Timeout
                } else {
                    Reason::StdinClosed
                };
                self.cancellation.get_or_insert(reason);
                self.start(now, reason, self.policy.signal)
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
    pub fn cancel(&mut self, now: Instant, reason: Reason) -> Option<Action> {
        debug_assert!(reason.is_cancellation());
        self.cancellation.get_or_insert(reason);
        match (self.phase, reason) {
            (Phase::Running, Reason::Signal(signal)) => self.start(now, reason, signal),
            (Phase::Running, _) => self.start(now, reason, self.policy.signal),
            (Phase::Signalled { .. }, Reason::Signal(_)) => self.kill(now),
            _ => None,
        }
    }

    /// The helper exited and both pipes closed, but descendants remain.
    pub fn on_leftovers(&mut self, now: Instant) -> Option<Action> {
        match self.phase {
            Phase::Running => self.start(now, Reason::Leftovers, self.policy.signal),
            _ => None,
        }
    }

    fn start(&mut self, now: Instant, reason: Reason, signal: i32) -> Option<Action> {
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
    pub fn finished(&self, descendants_left: bool) -> bool {
        self.phase == Phase::Abandoned
            || (self.helper_exited() && self.streams_closed && !descendants_left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TERM: i32 = 15;
    const INT: i32 = 2;

    fn policy(timeout: Option<u64>) -> Policy {
        Policy {
            timeout: timeout.map(Duration::from_secs),
            signal: TERM,
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
    fn timeout_then_grace_then_kill_then_abandon() {
        let t0 = Instant::now();
        let mut term = Terminator::new(policy(Some(10)), t0);
        assert_eq!(term.deadline(), Some(secs(t0, 10)));
        assert_eq!(term.tick(secs(t0, 9)), None);
        assert_eq!(
            term.tick(secs(t0, 10)),
            Some(Action::Signal {
                signal: TERM,
                reason: Reason::Timeout
            })
        );
        assert_eq!(term.deadline(), Some(secs(t0, 15)));
        assert_eq!(term.tick(secs(t0, 14)), None);
        assert_eq!(term.tick(secs(t0, 15)), Some(Action::Kill));
        assert_eq!(term.deadline(), Some(secs(t0, 16)));
        assert_eq!(term.tick(secs(t0, 16)), Some(Action::Abandon));
        assert!(term.finished(true));
        assert_eq!(term.reason(), Some(Reason::Timeout));
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
                signal: TERM,
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
            term.cancel(secs(t0, 1), Reason::Signal(INT)),
            Some(Action::Signal {
                signal: INT,
                reason: Reason::Signal(INT)
            })
        );
        assert_eq!(
            term.cancel(secs(t0, 2), Reason::Signal(TERM)),
            Some(Action::Kill)
        );
        assert_eq!(term.cancellation(), Some(Reason::Signal(INT)));
        assert_eq!(term.phase(), Phase::Killed { at: secs(t0, 2) });
    }

    #[test]
    fn signal_during_timeout_grace_escalates() {
        let t0 = Instant::now();
        let mut term = Terminator::new(policy(Some(1)), t0);
        term.tick(secs(t0, 1));
        assert_eq!(
            term.cancel(secs(t0, 2), Reason::Signal(TERM)),
            Some(Action::Kill)
        );
        assert_eq!(term.reason(), Some(Reason::Timeout));
    }

    #[test]
    fn client_disconnect_uses_configured_signal() {
        let t0 = Instant::now();
        let mut term = Terminator::new(policy(None), t0);
        assert_eq!(
            term.cancel(t0, Reason::ClientDisconnected),
            Some(Action::Signal {
                signal: TERM,
                reason: Reason::ClientDisconnected
            })
        );
        // A later disconnect notice does nothing more.
        assert_eq!(term.cancel(t0, Reason::ClientDisconnected), None);
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
                signal: TERM,
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
                signal: TERM,
                reason: Reason::StdinClosed
            })
        );
        assert_eq!(term.cancellation(), Some(Reason::StdinClosed));
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
