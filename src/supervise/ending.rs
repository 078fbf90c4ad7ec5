//! How the loop ends: normally (`finish`, which hands back the
//! [`Outcome`] after the bounded drains at exit and the last reaps), or
//! after mcp-bound itself failed (`end_after_failure`: the tree is killed
//! and its exit awaited, so nothing is left unsupervised).

use std::time::Instant;

use super::{Loop, Outcome, live_out};
use crate::child;
use crate::record::{EventKind, StreamEnd};
use crate::signals;
use crate::termination::Reason;

impl Loop<'_> {
    /// The loop cannot go on: KILL the helper's tree, stop reading, and
    /// wait for the helper's exit (KILL cannot be caught, so it comes).
    pub(super) fn end_after_failure(&mut self) {
        let now = Instant::now();
        self.perform_sweep(now, signals::SIGKILL, Some(Reason::SupervisorFailure));
        self.abandoned_open = self.streams_open();
        self.stdout.abandon();
        self.stderr.abandon();
        if self.exit.is_none()
            && let Some(exit) = child::await_exit(self.tree.family.helper())
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

    pub(super) fn finish(mut self) -> Outcome {
        self.finish_session();
        // An open debug window closes with the call, said before the
        // last of live output goes out.
        self.intake.end_window(Instant::now());
        if let Some(live) = self.intake.live.as_mut() {
            live.drain_at_exit(live_out::EXIT_LIMIT);
        }
        if self.exit.is_some() {
            self.reap_helper();
        }
        // The approvers were stopped and reaped with the session.
        child::reap_orphans(self.tree.family.helper(), &[]);
        let log = self.intake.log.take();
        let stream_end = if self.abandoned_open {
            StreamEnd::ClosedWhileHeld
        } else if self.tree.signalled_holders {
            StreamEnd::EofAfterDescendantsKilled
        } else {
            StreamEnd::Eof
        };
        let mcp = self.session.as_ref().map(|s| self.session_facts(s));
        let live = self.intake.live_counts();
        let repeats = self.intake.repeats;
        let capture = self.intake.diagnostics.finish();
        Outcome {
            exit: self.exit,
            cancelled_while_running: self.term.cancelled_while_running(),
            cancellation: self.term.cancellation(),
            stream_end,
            stdout: self.stdout.facts(&self.redactor),
            last_stdout: self.stdout.last_read,
            last_stderr: self.stderr.last_read,
            capture,
            repeats,
            live,
            events: self.events,
            tree: super::outcome::TreeFacts {
                signalled: self.tree.descendants_signalled(),
                unreadable: self.tree.unreadable,
            },
            failure: None,
            host_hung_up: self.host_hung_up,
            mcp,
            stderr_log: log,
        }
    }
}
