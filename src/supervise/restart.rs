//! Restarting the server inside the one loop (`--restart`). The stdin
//! relay, the request table, the stderr capture, live output and our
//! stdout outlive a server; each incarnation gets a new helper, new pipes,
//! a new tree and a new termination machine (the session's --timeout
//! still counts from the first dispatch).
//!
//! A restart is considered only when the server went away on its own:
//! never after the host closed our stdin, sent a signal, went away, or
//! after --timeout. While a restart is under way the client is not read:
//! its messages wait in our stdin (a bounded queue) and then flow. The
//! new server first gets the client's cached `initialize` (`session/
//! replay.rs`); until it answers, the client still waits, for at most
//! [`REPLAY_LIMIT`].

use std::ffi::OsString;
use std::fs::File;
use std::time::{Duration, Instant};

use super::Loop;
use super::stderr::StderrDrain;
use super::tree::Tree;
use crate::child::{self, ChildExit, StdinFrom};
use crate::record::EventKind;
use crate::record::mcp::{Incarnation, Interrupted, NoRestart, RestartStop};
use crate::session::Restarts;
use crate::termination::Reason;
use crate::units::millis;

/// How long a restarted server has to answer the replayed initialize.
const REPLAY_LIMIT: Duration = Duration::from_secs(10);

pub(super) struct Restarter {
    pub(super) argv: Vec<OsString>,
    pub(super) confine: crate::child::Confine,
    pub(super) restarts: Restarts,
    /// When the next incarnation starts: a restart is under way.
    pub(super) at: Option<Instant>,
    /// When the replayed initialize must be answered by.
    pub(super) replay_by: Option<Instant>,
    /// No more restarts: the reason is in the record.
    pub(super) stopped: bool,
}

/// The incarnation that runs now, for the record.
pub(super) struct Current {
    pub(super) pid: u32,
    pub(super) dispatched_t_ms: u64,
    pub(super) stderr_seen_at_start: u64,
}

impl Restarter {
    pub(super) fn wake_at(&self) -> Option<Instant> {
        match (self.at, self.replay_by) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

impl Loop<'_> {
    /// The server and its tree are gone: true while a restart is under
    /// way (the loop goes on), false when the session ends here.
    pub(super) fn restart_due(&mut self, now: Instant) -> bool {
        let ended_by_host = self.term.cancellation().is_some() || self.host_hung_up;
        let failed = !matches!(self.exit, Some(ChildExit::Code(0)));
        let Some(session) = self.session.as_mut() else {
            return false;
        };
        let client_open = session.stdin.client_open();
        let Some(restarter) = session.restarter.as_mut() else {
            return false;
        };
        // The host ended the session, even while a restart waited.
        if restarter.stopped || ended_by_host || !client_open {
            restarter.at = None;
            return false;
        }
        // The client hung up while a restart waited: none follows. What it
        // sent before is read and answered (no server runs), and its EOF
        // then ends the session.
        if session.stdin.hung_up() {
            restarter.at = None;
            session.stdin.resume();
            return true;
        }
        let Some(at) = restarter.at else {
            return match restarter.restarts.after_exit(now, failed) {
                Ok(backoff) => {
                    restarter.at = Some(now + backoff);
                    session.stdin.pause();
                    let attempt = session.table.facts_mut().runs.restarts + 1;
                    let after = match self.exit {
                        Some(exit @ ChildExit::Code(_)) => exit.to_record().to_string(),
                        Some(ChildExit::Signal { signal, .. }) => {
                            format!("killed by SIG{}", crate::signals::name(signal))
                        }
                        None => "no exit seen".to_string(),
                    };
                    // A host's log otherwise shows the server's start twice.
                    self.intake.notice(&format!(
                        "[mcp-bound: restarting the server (attempt {attempt}, after {after}) in {}]\n",
                        humantime::format_duration(backoff)
                    ));
                    self.event(
                        now,
                        EventKind::RestartScheduled {
                            attempt,
                            backoff_ms: millis(backoff),
                        },
                    );
                    true
                }
                Err(NoRestart::Never) => false,
                Err(reason) => {
                    self.stop_restarting(reason, None);
                    false
                }
            };
        };
        if now < at {
            return true;
        }
        self.respawn(now)
    }

    fn stop_restarting(&mut self, reason: NoRestart, detail: Option<String>) {
        if let Some(session) = self.session.as_mut() {
            session.table.facts_mut().runs.restart_stopped = Some(RestartStop { reason, detail });
            if let Some(restarter) = session.restarter.as_mut() {
                restarter.stopped = true;
                restarter.at = None;
                restarter.replay_by = None;
            }
            session.stdin.resume();
        }
    }

    /// Start the next incarnation. False if it could not be started.
    fn respawn(&mut self, now: Instant) -> bool {
        let Some((argv, mut restarter_confine)) = self
            .session
            .as_ref()
            .and_then(|s| s.restarter.as_ref())
            .map(|r| (r.argv.clone(), r.confine.clone()))
        else {
            return false;
        };
        restarter_confine.join_by_moving = self.tree.cgroup_killed;
        let ended = self.exit.map(ChildExit::to_record);
        self.reap_helper();
        let helper = match child::spawn(&argv, StdinFrom::Pipe, &restarter_confine) {
            Ok(helper) => helper,
            Err(err) => {
                self.stop_restarting(NoRestart::SpawnFailed, Some(format!("{err:?}")));
                return false;
            }
        };
        self.renewed = true;
        if let Some(link) = &self.watchdog {
            link.dispatched(helper.pid);
        }
        self.tree = self.tree.next(helper.family.clone());
        self.stdout.reattach(File::from(helper.stdout));
        self.stderr = StderrDrain::new(File::from(helper.stderr));
        self.exit = None;
        self.term = self.term.restarted();
        self.event(
            now,
            EventKind::Dispatched {
                pid: helper.pid as u32,
                pgid: helper.pid,
            },
        );
        let t_ms = millis(now.saturating_duration_since(self.origin));
        let stderr_seen = self.intake.diagnostics.bytes_seen();
        let Some(session) = self.session.as_mut() else {
            return false;
        };
        let attempt = session.table.facts_mut().runs.restarts + 1;
        if let Some(log) = self.intake.log.as_mut() {
            log.marker(&format!("restart {attempt} pid={}", helper.pid));
        }
        let replay = session
            .table
            .on_restarted(attempt, helper.pid as u32, ended);
        if let Some(pipe) = helper.stdin {
            session.stdin.attach(pipe, replay.as_deref());
        }
        session.current = Current {
            pid: helper.pid as u32,
            dispatched_t_ms: t_ms,
            stderr_seen_at_start: stderr_seen,
        };
        if let Some(restarter) = session.restarter.as_mut() {
            restarter.at = None;
            restarter.replay_by = replay.is_some().then(|| now + REPLAY_LIMIT);
        }
        self.milestone(now);
        true
    }

    /// How the replayed initialize went (or that it was not answered in
    /// time): the client flows again, or the restart is refused and the
    /// new server ended.
    pub(super) fn after_replay(&mut self, now: Instant) {
        let Some(session) = self.session.as_mut() else {
            return;
        };
        let overdue = session
            .restarter
            .as_ref()
            .and_then(|r| r.replay_by)
            .is_some_and(|by| now >= by && session.table.replaying());
        let outcome = match session.table.take_replayed() {
            Some(outcome) => outcome,
            None if overdue => Err(format!(
                "the restarted server did not answer initialize within {}s",
                REPLAY_LIMIT.as_secs()
            )),
            None => return,
        };
        if let Some(restarter) = session.restarter.as_mut() {
            restarter.replay_by = None;
        }
        match outcome {
            Ok(()) => session.stdin.resume(),
            Err(detail) => {
                self.stop_restarting(NoRestart::ProtocolChanged, Some(detail));
                if let Some(action) = self.term.end(now, Reason::RestartRefused) {
                    self.perform(now, action);
                }
            }
        }
    }

    /// The incarnation that just went away, for the record, with the
    /// requests its end cut off.
    pub(super) fn record_incarnation(
        &mut self,
        now: Instant,
        in_flight: u64,
        interrupted: Vec<Interrupted>,
    ) {
        let exit = self.exit.map(ChildExit::to_record);
        let t_ms = millis(now.saturating_duration_since(self.origin));
        let stderr_seen = self.intake.diagnostics.bytes_seen();
        let Some(session) = self.session.as_mut() else {
            return;
        };
        let (era, protocol_version) = session.table.take_spoken();
        let current = &session.current;
        let incarnation = Incarnation {
            pid: current.pid,
            dispatched_t_ms: current.dispatched_t_ms,
            exited_t_ms: exit.is_some().then_some(t_ms),
            exit,
            stderr_bytes_seen: stderr_seen.saturating_sub(current.stderr_seen_at_start),
            in_flight_at_exit: in_flight,
            interrupted,
            era,
            protocol_version,
        };
        session
            .table
            .facts_mut()
            .runs
            .incarnations
            .push(incarnation);
    }
}

impl Tree {
    /// The next incarnation's tree; what earlier ones signalled still
    /// counts for the record.
    pub(super) fn next(&self, family: crate::contain::Family) -> Tree {
        let mut tree = Tree::new(family);
        tree.earlier = self.descendants_signalled();
        tree.signalled_holders = self.signalled_holders;
        tree.cgroup_killed = self.cgroup_killed;
        tree.unreadable = self.unreadable;
        tree
    }
}
