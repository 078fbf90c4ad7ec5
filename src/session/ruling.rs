//! A decision on a tool call, as everything that keeps it takes it: the
//! journal's `mcp_decision` and the span (who decided, how long it
//! took, what the client answered when the person was asked through
//! it), the record's counts, and the words of the answer to a call not
//! run.

use std::time::Duration;

use super::Session;
use super::answer;
use super::gate::DecidedBy;
use crate::record::mcp::HostAction;
use crate::record::{Decision, Exit};
use crate::request_id::RequestId;

/// A call's facts the gate needs, as the client line gave them.
pub(super) struct Call<'a> {
    pub(super) id: &'a str,
    pub(super) tool: String,
    pub(super) params: Option<&'a str>,
    /// `params.arguments`, its exact text, as the permissive reading
    /// found it (the last one; strict JSON when the approver is asked).
    pub(super) arguments: Option<&'a str>,
    pub(super) params_sha256: Option<String>,
}

/// A decision, as the journal and the counts take it.
pub(super) struct Ruling {
    pub(super) decision: Decision,
    pub(super) by: DecidedBy,
    pub(super) waited_ms: u64,
    pub(super) approver_exit: Option<Exit>,
    /// By the host: the client's answer, if it gave one.
    pub(super) action: Option<HostAction>,
    /// A later round an approval covers: the approved retry's id.
    pub(super) covered_by: Option<RequestId>,
}

impl Ruling {
    /// Made as the call came, with no one asked.
    pub(super) fn at_once(decision: Decision, by: DecidedBy) -> Ruling {
        Ruling {
            decision,
            by,
            waited_ms: 0,
            approver_exit: None,
            action: None,
            covered_by: None,
        }
    }
}

/// What whoever decided said: the approver's exit, its first line (or
/// why no one could decide), the client's answer.
#[derive(Default)]
pub(super) struct Said {
    pub(super) exit: Option<Exit>,
    pub(super) reason: Option<String>,
    pub(super) action: Option<HostAction>,
}

impl Said {
    pub(super) fn why(reason: String) -> Said {
        Said {
            reason: Some(reason),
            ..Said::default()
        }
    }
}

/// A call not run after it waited: the reason word and the message its
/// answer carries.
pub(super) fn refusal_of(
    tool: &str,
    decision: Decision,
    by: DecidedBy,
    said: &Said,
    timeout: Duration,
) -> (&'static str, String) {
    match (decision, by) {
        (Decision::Expired, _) => (
            "tool_approval_expired",
            format!(
                "Tool \"{tool}\" not run: its approval expired after {} (mcp-bound --tool-approval-timeout)",
                humantime::format_duration(timeout)
            ),
        ),
        (Decision::Cancelled, _) => (
            "tool_approval_cancelled",
            format!("Tool \"{tool}\" not run"),
        ),
        (Decision::Error, DecidedBy::Host) => (
            "tool_denied",
            format!(
                "Tool \"{tool}\" not run: the client's answer to mcp-bound's approval request was an error or unreadable"
            ),
        ),
        (Decision::Error, _) => (
            "tool_denied",
            format!("Tool \"{tool}\" not run: the approver could not decide"),
        ),
        (_, DecidedBy::Host) => (
            "tool_denied",
            format!(
                "Tool \"{tool}\" denied through the client: {} (mcp-bound --tool-approve-via host)",
                denied_because(said.action)
            ),
        ),
        _ => (
            "tool_denied",
            format!(
                "Tool \"{tool}\" denied by mcp-bound's approver ({})",
                answer::ended(said.exit.as_ref())
            ),
        ),
    }
}

/// Why a denial by the host denied, for the client's error message.
pub(super) fn denied_because(action: Option<HostAction>) -> &'static str {
    match action {
        Some(HostAction::Accept) => "the person did not approve it",
        Some(HostAction::Decline) => "the person declined it",
        Some(HostAction::Cancel) => "the person dismissed the request",
        Some(HostAction::Timeout) => "no answer by the deadline",
        Some(HostAction::Error) => "the client answered with an error",
        Some(HostAction::Covered) => "an approval covers only the call's next round",
        None => "the client cannot be asked",
    }
}

impl Session {
    /// The decision, as an audit fact and a count.
    pub(super) fn decision(&mut self, call: &Call<'_>, ruling: Ruling) {
        let facts = self.facts.tool_gate_mut();
        facts.decisions.count(ruling.decision);
        if let Some(action) = ruling.action {
            facts.host_actions.count(action);
        }
        if let Some(tracing) = &mut self.out.tracing {
            let decided = super::Decided {
                decision: ruling.decision,
                by: ruling.by,
                waited_ms: ruling.waited_ms,
            };
            tracing.decided(call.id, decided);
        }
        if let Some(request_id) = RequestId::new(call.id) {
            self.out
                .audit
                .push(super::Audit::Decision(super::McpDecision {
                    call_id: self.call_id.clone(),
                    request_id,
                    tool: call.tool.to_string(),
                    params_sha256: call.params_sha256.clone(),
                    decision: ruling.decision,
                    by: ruling.by,
                    waited_ms: ruling.waited_ms,
                    approver_exit: ruling.approver_exit,
                    action: ruling.action,
                    covered_by: ruling.covered_by,
                }));
        }
    }
}
