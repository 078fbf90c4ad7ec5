//! The approval step of a call, pending approval → authorized or an end:
//! ask the gate (`approve`), put the decision in the record and as its
//! own journal entry, and end the call here unless it was approved.

use crate::approve;
use crate::child::ChildExit;
use crate::error::NotStarted;
use crate::ids::rfc3339;
use crate::journal;
use crate::record::Decision;
use crate::settings::ApprovalSettings;
use crate::signals::SignalPipe;
use crate::units::millis;

use super::call::{Authorized, BeforeDispatch, Ended, PendingApproval, Step};
use super::context::Context;
use super::ending::describe_exit;

/// Ask for approval: authorized, or the call's end here (denied,
/// expired, cancelled, or the gate could not be asked).
pub(super) fn decide(
    call: &Context<'_>,
    mut pending: PendingApproval,
    approval: &ApprovalSettings,
    signals: &SignalPipe,
    mark: String,
) -> Result<Authorized, Box<Ended>> {
    let method = &approval.method;
    let record = pending.record_mut();
    let request = approve::Request {
        call_id: &record.ids.call_id,
        session_id: record.ids.session_id.as_deref(),
        argv: call
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
        wait_delay: call.settings.policy.wait_delay,
        redactor: call.redactor,
        signals,
        origin: call.origin,
        mark: Some(mark),
    };
    let outcome = approve::ask(method, &request, &gate);
    record.approval.decision = outcome.decision;
    record.approval.requested_at = Some(rfc3339(outcome.requested_at));
    record.approval.decided_at = Some(rfc3339(outcome.decided_at));
    record.approval.waited_ms = Some(millis(outcome.waited));
    record.approval.approver_exit = outcome.approver_exit.map(ChildExit::to_record);
    record.approval.excerpt = outcome.excerpt.clone();
    // The decision is its own journal entry, before anything runs.
    if let Some(journal) = call.journal {
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
            let refusal = NotStarted::helper(format!(
                "--journal {}: cannot write the decision: {err}",
                journal.path.display()
            ));
            return Err(call.refused(pending, refusal));
        }
    }
    if let Some(signal) = outcome.cancelled_by {
        return Err(pending.cancel(signal));
    }
    let message = match outcome.decision {
        Some(Decision::Approved) => {
            // Approved: the in-flight record now says dispatched.
            let authorized = pending.approved();
            if let Some(refusal) = call.write_in_flight(authorized.record()) {
                return Err(call.refused(authorized, refusal));
            }
            return Ok(authorized);
        }
        // A cancel of the launch's approval is a signal, seen above.
        Some(Decision::Error | Decision::Cancelled) | None => {
            let error = outcome.error.unwrap_or_else(|| "approval failed".into());
            return Err(call.refused(pending, NotStarted::helper(error)));
        }
        Some(Decision::Expired) => NotStarted::helper(format!(
            "approval expired after {}",
            humantime::format_duration(approval.timeout)
        )),
        Some(Decision::Denied) => {
            let approval = &pending.record().approval;
            let said = approval
                .excerpt
                .as_deref()
                .and_then(first_line)
                .map(|line| format!(": {line}"))
                .unwrap_or_default();
            match &approval.approver_exit {
                Some(exit) => NotStarted::helper(format!(
                    "denied by the approver ({}){said}",
                    describe_exit(Some(exit))
                )),
                None => NotStarted::helper(format!("denied{said}")),
            }
        }
    };
    call.say(format!("mcp-bound: {message}\n"));
    Err(pending.denied())
}

/// The approver's first line of output, already masked in its excerpt,
/// at most [`REASON_BYTES`](crate::supervise::REASON_BYTES): its reason.
fn first_line(excerpt: &str) -> Option<String> {
    let line = excerpt.lines().map(str::trim).find(|line| {
        !line.is_empty() && !line.starts_with("[stderr truncated:") && *line != "[cut]"
    })?;
    let mut end = line.len().min(crate::supervise::REASON_BYTES);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    Some(line[..end].to_string())
}
