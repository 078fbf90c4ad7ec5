//! The host's side of the loop, and what the terminator asks: our stdin
//! closed (the MCP shutdown), the host's signals, our stdout's reader
//! gone, each a cancellation recorded as an event; and the terminator's
//! actions performed (a signal to the helper's group, tree or cgroup, a
//! kill, abandoning the streams).

use std::time::Instant;

use super::Loop;
use crate::child;
use crate::record::{EventKind, SignalReason, Target};
use crate::signals::{self, Signal, Stop};
use crate::termination::{Action, Cancellation, Reason};

impl Loop<'_> {
    /// The host closed our stdin: the MCP shutdown.
    pub(super) fn on_stdin_closed(&mut self, now: Instant) {
        if !self.term.helper_exited() {
            self.host_hung_up = true;
        }
        self.term.on_stdin_closed(now);
        self.event(now, EventKind::StdinClosed);
        self.milestone(now);
    }

    pub(super) fn on_signals(&mut self, now: Instant) {
        let pending = self.signals.take();
        if pending.child_changed {
            if self.exit.is_none()
                && let Some(exit) = child::observe_exit(self.tree.family.helper())
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
            let mut keep = Vec::new();
            if let Some(session) = self.session.as_mut()
                && let Some(approvers) = session.approvers.as_mut()
            {
                approvers.on_child_changed(now, &mut session.table, &self.redactor);
                keep = approvers.pids();
            }
            child::reap_orphans(self.tree.family.helper(), &keep);
        }
        for _ in 0..pending.debug_toggles {
            if let Some(line) = self.intake.toggle_window(now) {
                // mcp-bound's own line, once: best effort, never waited for.
                let _ = crate::sink::Sink::stderr().try_write(line.as_bytes());
            }
        }
        let host_signalled = !pending.terminating.is_empty();
        for (signal, count) in pending.terminating {
            for action in self.term.on_signals(now, signal, count) {
                self.perform(now, action);
            }
            self.record_cancel_events(now);
        }
        if host_signalled {
            self.milestone(now);
        }
    }

    /// The cancellations the terminator booked, as record events (it caps
    /// them: a signal storm is not a log).
    pub(super) fn record_cancel_events(&mut self, now: Instant) {
        while let Some(cancellation) = self.term.take_cancel_event() {
            let signal = cancellation.signal().map(signals::name);
            self.event(
                now,
                EventKind::CancelRequested {
                    reason: cancellation.into(),
                    signal,
                },
            );
        }
    }

    pub(super) fn cancel(&mut self, now: Instant, cancellation: Cancellation) {
        let action = self.term.cancel(now, cancellation);
        self.record_cancel_events(now);
        if let Some(action) = action {
            self.perform(now, action);
        }
    }

    /// Our stdout's reader is gone: cancel the helper (once).
    pub(super) fn disconnect(&mut self, now: Instant) {
        if self.stdout.disconnect() {
            self.cancel(now, Cancellation::ClientDisconnected);
        }
    }

    pub(super) fn maybe_streams_closed(&mut self) {
        if !self.streams_open() {
            self.term.on_streams_closed();
        }
    }

    pub(super) fn perform(&mut self, now: Instant, action: Action) {
        match action {
            Action::Signal { signal, reason } => {
                // A cancellation comes before the signal that carries it.
                self.record_cancel_events(now);
                match signal {
                    Stop::Signal(signal) => self.perform_sweep(now, signal, Some(reason)),
                    Stop::Close => self.close_server_stdin(now, reason),
                }
            }
            Action::Kill => {
                let reason = self.term.reason();
                self.perform_sweep(now, signals::SIGKILL, reason);
            }
            Action::Abandon => {
                self.abandoned_open = self.streams_open();
                self.stdout.abandon();
                self.stderr.abandon();
                self.event(now, EventKind::StreamsAbandoned);
            }
        }
    }

    /// CLOSE: the server's stdin closed, what still waited for it
    /// counted as discarded. Nothing to record where it was closed
    /// already (the client's EOF closed it).
    fn close_server_stdin(&mut self, now: Instant, reason: Reason) {
        let Some(session) = self.session.as_mut() else {
            return;
        };
        if session.stdin.close_server() {
            self.event(
                now,
                EventKind::SignalSent {
                    signal: Stop::Close.name(),
                    target: Target::Stdin,
                    count: 1,
                    reason: SignalReason::from(reason),
                },
            );
        }
    }

    pub(super) fn perform_sweep(&mut self, now: Instant, signal: Signal, reason: Option<Reason>) {
        // A sweep with no reason of its own is clean-up of leftovers.
        let reason = reason
            .or(self.term.reason())
            .map_or(SignalReason::Leftovers, SignalReason::from);
        let holders = self.exit.is_some() && self.streams_open();
        for kind in self.tree.signal(signal, reason, holders) {
            self.event(now, kind);
        }
    }
}
