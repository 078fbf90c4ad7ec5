//! The per-request audit facts the session hands to the journal: a
//! request forwarded, and how it ended.

use serde::{Deserialize, Serialize};

use crate::request_id::RequestId;

/// How a request ended, as its `mcp_response` entry says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestOutcome {
    Result,
    Error,
    TimedOut,
    Cancelled,
    ServerExited,
    /// A stream the server ended (`notifications/cancelled` naming it).
    Ended,
    /// A stream open when the host ended the session: ended, unanswered.
    ShutDown,
    /// A `tools/call` the gate did not let through (its `mcp_decision`
    /// says why): it never reached the server.
    Denied,
    /// Refused as it came, answered -32600 (the entry's `reason` says
    /// why): nothing of it reached the server.
    Refused,
    /// A `tools/call` mcp-bound answered `input_required` itself, to ask
    /// the person through a 2026-07-28 client: it never reached the
    /// server; the client's retry, a new request, carries the answer.
    Asked,
}

impl RequestOutcome {
    /// Its word, as the journal and spans carry it.
    pub fn word(self) -> &'static str {
        match self {
            RequestOutcome::Result => "result",
            RequestOutcome::Error => "error",
            RequestOutcome::TimedOut => "timed_out",
            RequestOutcome::Cancelled => "cancelled",
            RequestOutcome::ServerExited => "server_exited",
            RequestOutcome::Ended => "ended",
            RequestOutcome::ShutDown => "shut_down",
            RequestOutcome::Denied => "denied",
            RequestOutcome::Refused => "refused",
            RequestOutcome::Asked => "asked",
        }
    }
}

/// What a result says of its request (MCP 2026-07-28 `resultType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultType {
    /// The final result (a missing `resultType` reads as this).
    Complete,
    /// An MRTR round: the client retries under a new id, a request of its own.
    InputRequired,
    /// A task was created: its end is journaled as an `mcp_task` entry.
    Task,
}

impl ResultType {
    /// Its word, as the journal and spans carry it.
    pub fn word(self) -> &'static str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Task => "task",
        }
    }
}

/// How a task that an audited call created finally went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Completed,
    Failed,
    Cancelled,
    /// The server that held it went away (a crash, a restart, the end).
    Lost,
}

/// What made a client line one the strict reading could not take as it
/// came. Such a request is still journaled before the server can act on
/// it, read as the most permissive server parser reads it, with the
/// SHA-256 of the line as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Irregular {
    /// Not UTF-8: read as a server decoding it with U+FFFD reads it.
    InvalidUtf8,
    /// `NaN`, `Infinity` or a lone surrogate escape: read as Python's
    /// json.loads or Node's JSON.parse reads it.
    NotStrictJson,
    /// The last line, with no newline before EOF (line iteration still
    /// hands it to the server).
    Unterminated,
    /// Over --max-message-bytes: streamed to the server unread, hashed as
    /// it went; this entry is written before its newline is.
    OverMaxMessageBytes,
    /// Its id is that of a request still in flight: the client's protocol
    /// error. Passed on, not tracked (an answer here would collide).
    DuplicateId,
    /// Its id or method cannot be tracked: over 1 KiB, or an id that is
    /// neither a string nor a number of strict JSON (null, or none at all
    /// for a method the audit covers).
    UntrackedId,
    /// Refused as it came: never sent. The call's next entry is its
    /// `mcp_response`, outcome `refused`, with the reason.
    Refused,
}

impl Irregular {
    /// Whether the request was tracked, so that an `mcp_response` ends it.
    pub fn untracked(self) -> bool {
        matches!(
            self,
            Irregular::OverMaxMessageBytes
                | Irregular::DuplicateId
                | Irregular::UntrackedId
                | Irregular::Refused
        )
    }
}

/// One per-request audit fact: the journal entry it is, defined once
/// here and appended as it is (`journal::Entry::from`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Audit {
    Request(McpRequest),
    Response(McpResponse),
    /// The gate's decision on a `tools/call`, before it reaches the server.
    Decision(McpDecision),
    /// The end of a task an audited call created.
    Task(McpTask),
    /// A listed tool that differs from its pin, or has none.
    ToolDrift(super::McpToolDrift),
    /// A new incarnation of the server started (`--restart`).
    Restart(McpRestart),
}

impl Audit {
    /// The request id it names, as the client wrote it (None: a request
    /// whose id strict JSON cannot carry).
    pub fn request_id(&self) -> Option<&RequestId> {
        match self {
            Audit::Request(request) => request.request_id.as_ref(),
            Audit::Response(response) => response.request_id.as_ref(),
            Audit::Decision(decision) => Some(&decision.request_id),
            Audit::Task(task) => Some(&task.request_id),
            Audit::ToolDrift(drift) => Some(&drift.request_id),
            Audit::Restart(_) => None,
        }
    }
}

/// Under the session layer: a client request, written (synced) before
/// it reaches the server. `params` are never written, only their hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpRequest {
    pub call_id: String,
    /// The request's id, as the client sent it; null when strict JSON
    /// cannot carry it, or it is over 1 KiB.
    pub request_id: Option<RequestId>,
    /// Null when the line was not read (over --max-message-bytes) or the
    /// method is over 1 KiB.
    pub method: Option<String>,
    /// `params.name` of a tools/call or prompts/get.
    pub name: Option<String>,
    /// SHA-256 of the exact `params` text; null when there were none.
    pub params_sha256: Option<String>,
    /// For an irregular line only: SHA-256 of the line as sent, without
    /// its newline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_sha256: Option<String>,
    /// For an irregular line only: what made it one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub irregular: Vec<Irregular>,
}

/// How that request ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpResponse {
    pub call_id: String,
    /// Null only for a refused line whose id could not be told.
    pub request_id: Option<RequestId>,
    /// Null only for a refused line not read that far.
    pub method: Option<String>,
    pub outcome: RequestOutcome,
    /// For `refused` only: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<super::Refusal>,
    /// The error's code, for an `error`, `timed_out` or `server_exited`.
    pub error_code: Option<i64>,
    /// For a result: `complete`, `input_required` (an MRTR round: the
    /// client's retry is a request of its own) or `task` (its end is an
    /// `mcp_task` entry). Absent for other outcomes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    pub duration_ms: u64,
    /// The response's bytes as the client got it (0 when cancelled).
    pub bytes: u64,
}

/// A restart: the server's next incarnation started, after the last one
/// ended so (`--restart`). Written whatever `--journal-requests` says:
/// it is the call's lifecycle, not a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpRestart {
    pub call_id: String,
    /// 1 for the first restart.
    pub attempt: u64,
    /// The new incarnation's pid.
    pub pid: u32,
    /// How the incarnation before it ended; null if no exit was seen.
    pub exit: Option<crate::record::Exit>,
}

/// The end of a task an audited call created (a task-augmented
/// tools/call): how the tool call finally went, against its request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpTask {
    pub call_id: String,
    /// The creating request's id, as the client sent it.
    pub request_id: RequestId,
    pub method: String,
    pub task_id: String,
    pub status: TaskStatus,
    /// The error's code, for a failed task (when the server gave one).
    pub error_code: Option<i64>,
    /// Since the creating request came.
    pub duration_ms: u64,
}

/// The tool gate's decision on a `tools/call`, written before the call
/// can reach the server: bound to its exact `params` by their SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpDecision {
    pub call_id: String,
    pub request_id: RequestId,
    pub tool: String,
    /// As the request's own entry has it.
    pub params_sha256: Option<String>,
    pub decision: crate::record::Decision,
    /// `policy` (--tool-allow, --tool-deny), `command` (the approver) or
    /// `host` (the person, asked through the client).
    pub by: super::gate::DecidedBy,
    pub waited_ms: u64,
    pub approver_exit: Option<crate::record::Exit>,
    /// By `host`: what the client answered (null otherwise, and when the
    /// call ended before any answer or the client could not be asked).
    pub action: Option<crate::record::mcp::HostAction>,
    /// By `host` in 2026-07-28: the approved retry whose approval covers
    /// this later round of the same call (the server asked for input of
    /// its own), so the person was not asked again; null otherwise.
    pub covered_by: Option<RequestId>,
}

/// How a tracked request ended, for its audit.
pub(super) struct End {
    pub(super) outcome: RequestOutcome,
    pub(super) error_code: Option<i64>,
    pub(super) result_type: Option<ResultType>,
    /// Cut off by the host's end of the session (answered as the server
    /// gone): it may have acted, and did not fail.
    pub(super) interrupted: bool,
}

impl End {
    /// Ended by mcp-bound or the client, with this code (if an error).
    pub(super) fn by(outcome: RequestOutcome, error_code: Option<i64>) -> End {
        End {
            outcome,
            error_code,
            result_type: None,
            interrupted: false,
        }
    }

    pub(super) fn result(result_type: ResultType) -> End {
        End {
            outcome: RequestOutcome::Result,
            error_code: None,
            result_type: Some(result_type),
            interrupted: false,
        }
    }

    pub(super) fn error(code: Option<i64>) -> End {
        End::by(RequestOutcome::Error, code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words spans carry are the journal's.
    #[test]
    fn words_are_the_serialized_ones() {
        use RequestOutcome::*;
        for outcome in [
            Result,
            Error,
            TimedOut,
            Cancelled,
            ServerExited,
            Ended,
            ShutDown,
            Denied,
            Refused,
            Asked,
        ] {
            assert_eq!(serde_json::to_value(outcome).unwrap(), outcome.word());
        }
        for result in [
            ResultType::Complete,
            ResultType::InputRequired,
            ResultType::Task,
        ] {
            assert_eq!(serde_json::to_value(result).unwrap(), result.word());
        }
    }

    /// Each word the journal may carry in `irregular` is in its schema.
    #[test]
    fn every_irregular_word_is_in_the_journal_schema() {
        use Irregular::*;
        let all = [
            InvalidUtf8,
            NotStrictJson,
            Unterminated,
            OverMaxMessageBytes,
            DuplicateId,
            UntrackedId,
            Refused,
        ];
        for irregular in all {
            // A new word must be listed above first.
            match irregular {
                InvalidUtf8 | NotStrictJson | Unterminated | OverMaxMessageBytes | DuplicateId
                | UntrackedId | Refused => {}
            }
            let word = serde_json::to_string(&irregular).unwrap();
            assert!(
                include_str!("../../schema/journal.schema.json").contains(&word),
                "{word} is not in schema/journal.schema.json"
            );
        }
    }
}
