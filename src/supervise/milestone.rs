//! The loop's milestones: what it tells the watchdog of the call at the
//! few moments that change what a record would say (the dispatch, each
//! restart, the host's signal or hang-up), so that a watchdog writing for
//! a SIGKILLed mcp-bound says what was known, not what was known before
//! dispatch. Nothing is sent per request.

use std::time::Instant;

use super::Loop;
use crate::record::mcp::{Incarnation, McpFacts};
use crate::record::{CancelReason, EventKind, Milestone};
use crate::signals;
use crate::termination::Cancellation;

impl Loop<'_> {
    pub(super) fn milestone(&self, now: Instant) {
        let Some(link) = self.watchdog.as_ref().filter(|link| link.speaks()) else {
            return;
        };
        let cancellation = self.term.cancellation();
        let pid = self.events.iter().find_map(|event| match event.kind {
            EventKind::Dispatched { pid, .. } => Some(pid),
            _ => None,
        });
        let mcp = self.session.as_ref().map(|session| {
            let mut facts = self.session_facts(session);
            facts.interrupted = session.table.in_flight_now();
            facts.in_flight_at_exit = session.table.in_flight() as u64;
            if let Some(running) = self.running_incarnation(session, &facts) {
                facts.runs.incarnations.push(running);
            }
            facts
        });
        let milestone = Milestone {
            t_ms: crate::units::millis(now.saturating_duration_since(self.origin)),
            pid: pid.unwrap_or(self.tree.family.helper() as u32),
            cancel_reason: cancellation.map(CancelReason::from),
            cancel_signal: cancellation
                .and_then(Cancellation::signal)
                .map(signals::name),
            events: self.events.clone(),
            stdout: self.stdout.facts(&self.redactor),
            stderr_bytes_seen: self.intake.diagnostics.bytes_seen(),
            mcp,
        };
        if let Ok(json) = serde_json::to_string(&milestone) {
            link.milestone(&json);
        }
    }

    /// The run going now, listed as a killed session's last: no end seen,
    /// and what a kill would cut off is its. None for one that ended (a
    /// restart pending), which `facts` lists already.
    fn running_incarnation(
        &self,
        session: &super::session::SessionParts<'_>,
        facts: &McpFacts,
    ) -> Option<Incarnation> {
        let current = &session.current;
        let ended = facts.runs.incarnations.last().is_some_and(|last| {
            (last.pid, last.dispatched_t_ms) == (current.pid, current.dispatched_t_ms)
        });
        if ended {
            return None;
        }
        let (era, protocol_version) = session.table.spoken();
        let stderr_seen = self.intake.diagnostics.bytes_seen();
        Some(Incarnation {
            pid: current.pid,
            dispatched_t_ms: current.dispatched_t_ms,
            exited_t_ms: None,
            exit: None,
            stderr_bytes_seen: stderr_seen.saturating_sub(current.stderr_seen_at_start),
            in_flight_at_exit: facts.in_flight_at_exit,
            interrupted: facts.interrupted.clone(),
            era,
            protocol_version,
        })
    }
}
