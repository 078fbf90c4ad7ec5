//! The approval step of a call: ask the gate (`approve`), put the decision
//! in the record and as its own journal entry, and end the call here
//! unless it was approved.

use crate::approve;
use crate::child::ExitObs;
use crate::error::code;
use crate::ids::rfc3339;
use crate::journal;
use crate::record::{Decision, Record, State};
use crate::settings::ApprovalSettings;
use crate::signals::SignalPipe;
use crate::units::millis;

use super::ending::{Ending, describe_exit};

/// Ask for approval. None: approved, go on. Some(code): the call ends
/// here (denied, expired, cancelled, or the gate could not be asked),
/// with the record and journal already written.
pub(super) fn ask(
    ending: &Ending<'_>,
    record: &mut Record,
    approval: &ApprovalSettings,
    signals: &SignalPipe,
) -> Option<i32> {
    let method = &approval.method;
    let request = approve::Request {
        call_id: &record.ids.call_id,
        session_id: record.ids.session_id.as_deref(),
        argv: ending
            .settings
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        cwd: record.invocation.cwd.as_deref(),
        timeout_ms: record.limits.timeout_ms,
        limits: &record.limits,
    };
    let gate = approve::Gate {
        timeout: approval.timeout,
        wait_delay: ending.settings.policy.wait_delay,
        redactor: ending.redactor,
        signals,
        origin: ending.origin,
    };
    let outcome = approve::ask(method, &request, &gate);
    record.approval.decision = outcome.decision;
    record.approval.requested_at = Some(rfc3339(outcome.requested_at));
    record.approval.decided_at = Some(rfc3339(outcome.decided_at));
    record.approval.waited_ms = Some(millis(outcome.waited));
    record.approval.approver_exit = outcome.approver_exit.map(ExitObs::to_record);
    record.approval.excerpt = outcome.excerpt.clone();
    // The decision is its own journal entry, before anything runs.
    if let Some(journal) = ending.journal {
        let entry = journal::DecisionEntry {
            call_id: record.ids.call_id.clone(),
            decision: outcome.decision,
            method: method.record(),
            requested_at: rfc3339(outcome.requested_at),
            decided_at: rfc3339(outcome.decided_at),
            waited_ms: millis(outcome.waited),
            approver_exit: record.approval.approver_exit.clone(),
        };
        if let Err(err) = journal.append(journal::Entry::Decision(&entry)) {
            let error = format!(
                "--journal {}: cannot write the decision: {err}; the helper was not started",
                journal.path.display()
            );
            return Some(ending.fail_before_dispatch(record.clone(), error, code::OWN_FAILURE));
        }
    }
    if let Some(signo) = outcome.cancelled_by {
        return Some(ending.cancel_before_dispatch(record.clone(), signo));
    }
    let message = match outcome.decision {
        Some(Decision::Approved) => return None,
        Some(Decision::Error) | None => {
            let error = outcome.error.unwrap_or_else(|| "approval failed".into());
            return Some(ending.fail_before_dispatch(record.clone(), error, code::OWN_FAILURE));
        }
        Some(Decision::Expired) => format!(
            "approval expired after {}; the helper was not started",
            humantime::format_duration(approval.timeout)
        ),
        Some(Decision::Denied) => match &record.approval.approver_exit {
            Some(exit) => format!(
                "denied by the approver ({}); the helper was not started",
                describe_exit(Some(exit))
            ),
            None => "denied; the helper was not started".to_string(),
        },
    };
    ending.say(format!("mcp-bound: {message}\n"));
    record.lifecycle.state = State::Denied;
    Some(ending.finish(record.clone(), code::DENIED, None))
}
