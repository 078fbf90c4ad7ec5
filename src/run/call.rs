//! One call as a state machine, pure: received, validated, then
//! pending approval and authorized (or authorized at once), dispatched,
//! and one end. Each step is a type that owns the record, and a
//! transition consumes one step and returns the next, so no step can be
//! skipped and none can come twice. The record's state is set here and
//! nowhere else in `run/` (the watchdog's `supervisor_killed` is its own).
//!
//! The ends: finished (`completed`, `timed_out`, `shut_down`), cancelled
//! before or after dispatch, failed before or after dispatch, and
//! `denied`. These states are an action's lifecycle as the write-up on
//! MCP stderr limits this project began from names it; `record::State`
//! is their one word list.

use crate::child::ChildExit;
use crate::error::code;
use crate::record::{CancelReason, Record, State};
use crate::signals::{self, Signal};
use crate::supervise::Outcome;
use crate::termination::Cancellation;

/// The call as asked for: its record, not yet written anywhere.
pub(super) struct Received(Record);

/// Every check passed, and the intent is in the journal.
pub(super) struct Validated(Record);

/// Waiting on the approver; the record says `awaiting_approval`.
pub(super) struct PendingApproval(Record);

/// Approved, or no approval asked: the record says `dispatched`, and the
/// helper is about to start.
pub(super) struct Authorized(Record);

/// The helper started: from here on it may have acted.
pub(super) struct Dispatched(Record);

/// The end: the record as it ends, mcp-bound's exit code, and what the
/// loop saw if the helper ran. A step that ends the call early returns it
/// boxed, as its error.
pub(super) struct Ended {
    pub(super) record: Record,
    pub(super) exit_code: i32,
    pub(super) outcome: Option<Outcome>,
}

/// What every step before the end holds.
pub(super) trait Step: Sized {
    fn record(&self) -> &Record;
    fn record_mut(&mut self) -> &mut Record;
}

/// A step before dispatch: it can still end cancelled or failed with
/// nothing started.
pub(super) trait BeforeDispatch: Step {
    fn into_record(self) -> Record;

    /// A signal came before the helper started.
    fn cancel(self, signal: Signal) -> Box<Ended> {
        let mut record = self.into_record();
        record.lifecycle.state = State::CancelledBeforeDispatch;
        record.lifecycle.cancel_reason = Some(Cancellation::Signal(signal).into());
        record.lifecycle.cancel_signal = Some(signals::name(signal));
        Box::new(Ended {
            record,
            exit_code: 128 + signal.number(),
            outcome: None,
        })
    }

    /// mcp-bound could not go on (or the helper could not be run).
    fn fail(self, error: String, exit_code: i32) -> Box<Ended> {
        let mut record = self.into_record();
        record.lifecycle.state = State::FailedBeforeDispatch;
        record.error = Some(error);
        Box::new(Ended {
            record,
            exit_code,
            outcome: None,
        })
    }
}

macro_rules! step {
    ($($name:ident),*) => {$(
        impl Step for $name {
            fn record(&self) -> &Record {
                &self.0
            }
            fn record_mut(&mut self) -> &mut Record {
                &mut self.0
            }
        }
    )*};
}
step!(Received, Validated, PendingApproval, Authorized, Dispatched);

macro_rules! before_dispatch {
    ($($name:ident),*) => {$(
        impl BeforeDispatch for $name {
            fn into_record(self) -> Record {
                self.0
            }
        }
    )*};
}
before_dispatch!(Received, Validated, PendingApproval, Authorized);

impl Received {
    pub(super) fn new(record: Record) -> Received {
        Received(record)
    }

    pub(super) fn validated(self) -> Validated {
        Validated(self.0)
    }
}

impl Validated {
    pub(super) fn pending_approval(mut self) -> PendingApproval {
        self.0.lifecycle.state = State::AwaitingApproval;
        PendingApproval(self.0)
    }

    /// No approval is asked for.
    pub(super) fn authorized(mut self) -> Authorized {
        self.0.lifecycle.state = State::Dispatched;
        Authorized(self.0)
    }
}

impl PendingApproval {
    pub(super) fn approved(mut self) -> Authorized {
        self.0.lifecycle.state = State::Dispatched;
        Authorized(self.0)
    }

    /// The approver said no, or the approval expired.
    pub(super) fn denied(mut self) -> Box<Ended> {
        self.0.lifecycle.state = State::Denied;
        Box::new(Ended {
            record: self.0,
            exit_code: code::DENIED,
            outcome: None,
        })
    }
}

impl Authorized {
    pub(super) fn dispatched(mut self, pid: i32) -> Dispatched {
        self.0.invocation.pid = Some(pid as u32);
        Dispatched(self.0)
    }
}

impl Dispatched {
    /// The loop is over: the end follows from what was observed (see
    /// [`end_of`]).
    pub(super) fn ended(mut self, preserve_status: bool, outcome: Outcome) -> Ended {
        let exit_code = end_of(preserve_status, &outcome, &mut self.0);
        Ended {
            record: self.0,
            exit_code,
            outcome: Some(outcome),
        }
    }
}

/// The state and exit code follow from what was observed: a timeout
/// while the helper ran is `timed_out`; any other cancellation, while it
/// ran or during the clean-up after it exited (pipes held, leftovers), is
/// `cancelled_after_dispatch`, with the helper's real exit kept; otherwise
/// the helper completed, whatever happened to its descendants afterwards.
/// Under the session layer the host's end with nothing in flight is
/// `shut_down`; mcp-bound's own failure is `failed_after_dispatch`.
fn end_of(preserve_status: bool, outcome: &Outcome, record: &mut Record) -> i32 {
    let helper_status = outcome.exit.map(ChildExit::shell_status);
    let cancel = outcome.cancelled_while_running.or(outcome.cancellation);
    let (state, exit_code) = match cancel {
        // mcp-bound itself failed after dispatch: whatever else happened,
        // that is the truth of this call (the helper may have acted).
        _ if outcome.failure.is_some() => (State::FailedAfterDispatch, code::OWN_FAILURE),
        Some(Cancellation::Timeout) => {
            let status = if preserve_status {
                helper_status.unwrap_or(code::TIMED_OUT)
            } else {
                code::TIMED_OUT
            };
            (State::TimedOut, status)
        }
        Some(Cancellation::Signal(signal)) => {
            (State::CancelledAfterDispatch, 128 + signal.number())
        }
        Some(Cancellation::ClientDisconnected) => {
            (State::CancelledAfterDispatch, code::CLIENT_DISCONNECTED)
        }
        // The host asked for shutdown by closing stdin and left: the
        // helper's own status says how it ended.
        Some(Cancellation::StdinClosed) => (
            State::CancelledAfterDispatch,
            helper_status.unwrap_or(code::OWN_FAILURE),
        ),
        None => (State::Completed, helper_status.unwrap_or(code::OWN_FAILURE)),
    };
    // Under the session layer, the host ending the session (a signal, or
    // our stdin closing) with no request in flight is its normal end.
    let host_ended = match cancel {
        Some(Cancellation::Signal(_) | Cancellation::StdinClosed) => true,
        None => outcome.host_hung_up,
        Some(Cancellation::Timeout | Cancellation::ClientDisconnected) => false,
    };
    let state = match &outcome.mcp {
        Some(mcp) if host_ended && mcp.in_flight_at_exit == 0 && outcome.failure.is_none() => {
            State::ShutDown
        }
        Some(_) | None => state,
    };
    if outcome.mcp.is_some() {
        record.mcp = outcome.mcp.clone();
    }
    record.lifecycle.state = state;
    record.error = outcome.failure.clone();
    record.lifecycle.cancel_reason = cancel.map(CancelReason::from);
    record.lifecycle.cancel_signal = cancel.and_then(Cancellation::signal).map(signals::name);
    record.lifecycle.exit = outcome.exit.map(ChildExit::to_record);
    record.lifecycle.stream_end = Some(outcome.stream_end);
    record.lifecycle.descendants_signalled = outcome.tree.signalled;
    if let Some(facts) = record.contain.as_mut() {
        facts.unreadable = outcome.tree.unreadable;
    }
    record.stdout = outcome.stdout.clone();
    exit_code
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal;
    use crate::redact::Redactor;
    use crate::settings::Settings;

    fn received() -> Received {
        let settings = Settings::parsed(&[]);
        let record = super::super::initial_record(
            &settings,
            std::time::SystemTime::now(),
            &Redactor::default(),
        );
        Received::new(record)
    }

    fn outcome(exit: Option<ChildExit>, failure: Option<&str>) -> Outcome {
        Outcome {
            exit,
            cancelled_while_running: None,
            cancellation: None,
            stream_end: crate::record::StreamEnd::ClosedWhileHeld,
            capture: crate::capture::Capture::new(0, 16),
            repeats: crate::repeats::Repeats::new(Redactor::default()),
            stdout: Default::default(),
            live: Default::default(),
            events: Vec::new(),
            tree: crate::supervise::TreeFacts {
                signalled: 1,
                unreadable: None,
            },
            last_stdout: None,
            last_stderr: None,
            failure: failure.map(str::to_string),
            host_hung_up: false,
            mcp: None,
            stderr_log: None,
        }
    }

    fn dispatched() -> Dispatched {
        received().validated().authorized().dispatched(42)
    }

    /// Each transition says its state in the record, and only there.
    #[test]
    fn each_step_says_its_state() {
        let pending = received().validated().pending_approval();
        assert_eq!(pending.record().lifecycle.state, State::AwaitingApproval);
        let authorized = pending.approved();
        assert_eq!(authorized.record().lifecycle.state, State::Dispatched);
        let dispatched = authorized.dispatched(7);
        assert_eq!(dispatched.record().invocation.pid, Some(7));
        let ended = dispatched.ended(false, outcome(Some(ChildExit::Code(3)), None));
        assert_eq!(
            (ended.record.lifecycle.state, ended.exit_code),
            (State::Completed, 3)
        );
        let denied = received().validated().pending_approval().denied();
        assert_eq!(
            (denied.record.lifecycle.state, denied.exit_code),
            (State::Denied, code::DENIED)
        );
    }

    /// Before dispatch, every step can still end cancelled or failed, and
    /// nothing ran: no pid, no exit.
    #[test]
    fn before_dispatch_a_call_ends_cancelled_or_failed_with_nothing_run() {
        let cancelled = received().validated().authorized().cancel(signals::SIGTERM);
        assert_eq!(
            cancelled.record.lifecycle.state,
            State::CancelledBeforeDispatch
        );
        assert_eq!(cancelled.exit_code, 128 + signals::SIGTERM.number());
        assert_eq!(
            cancelled.record.lifecycle.cancel_signal.as_deref(),
            Some("TERM")
        );
        let failed = received().fail("no cgroup".into(), code::OWN_FAILURE);
        assert_eq!(failed.record.lifecycle.state, State::FailedBeforeDispatch);
        assert_eq!(failed.record.error.as_deref(), Some("no cgroup"));
        for ended in [cancelled, failed] {
            assert_eq!(ended.record.invocation.pid, None);
            assert_eq!(ended.record.lifecycle.exit, None);
        }
    }

    #[test]
    fn a_failure_after_dispatch_is_its_own_state_and_keeps_the_exit() {
        let killed = ChildExit::Signal {
            signal: signals::SIGKILL,
            core_dumped: false,
        };
        let ended = dispatched().ended(false, outcome(Some(killed), Some("poll failed: x")));
        let record = &ended.record;
        assert_eq!(ended.exit_code, code::OWN_FAILURE);
        assert_eq!(record.lifecycle.state, State::FailedAfterDispatch);
        assert_eq!(record.error.as_deref(), Some("poll failed: x"));
        assert_eq!(
            record.lifecycle.exit,
            Some(killed.to_record()),
            "the exit seen is kept"
        );
        // The journal's terminal entry carries the same state.
        let terminal = journal::Terminal::from_record(record, None);
        let line = serde_json::to_string(&terminal).unwrap();
        assert!(
            line.contains("\"state\":\"failed_after_dispatch\""),
            "{line}"
        );
        // Without a failure the same outcome is a plain completion.
        let ended = dispatched().ended(false, outcome(Some(ChildExit::Code(0)), None));
        assert_eq!(
            (ended.exit_code, ended.record.lifecycle.state),
            (0, State::Completed)
        );
        assert_eq!(ended.record.error, None);
    }

    /// A record reads back as itself: the Windows watchdog, a process of
    /// its own, is handed the record made before dispatch as JSON, and
    /// writes its `supervisor_killed` record and terminal entry from it.
    #[test]
    fn a_record_reads_back_as_itself() {
        let mut base = received().validated().authorized().into_record();
        base.contain = Some(crate::contain::ContainFacts {
            method: crate::contain::JOB,
            cgroup: Some("/sys/fs/cgroup/x".into()),
            fallback: Some("why".into()),
            watchdog_pid: Some(9),
            applied: vec!["JobMemoryLimit".into()],
            not_applied: vec!["CpuRate: refused".into()],
            oom_kills: Some(0),
            unreadable: Some(1),
        });
        base.limits.rlimits.insert(
            "nofile",
            crate::rlimit::RlimitRecord {
                soft: Some(1),
                hard: None,
            },
        );
        let ended = dispatched()
            .ended(false, outcome(Some(ChildExit::Code(3_221_225_477)), None))
            .record;
        for record in [base, ended] {
            let line = record.to_line();
            let read: Record = serde_json::from_str(&line).unwrap();
            assert_eq!(read, record, "{line}");
            assert_eq!(read.to_line(), line);
        }
    }
}
