//! Each entry kind's strict shape, one definition per kind: the fields
//! after the header (`v`, `seq`, `prev`, `kind`, `ts`), `h` last. Unknown
//! fields are refused, so another kind's field is too; a required field
//! is a plain type, an optional one an `Option` that may be absent or
//! null. Fields verify does not read are only checked for presence
//! (`Present`, `Ignored`).

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{Deserializer, Error as _, IgnoredAny};
use serde_json::value::RawValue;

use crate::session::{Irregular, ResultType, TaskStatus};

/// Any value, not null: present for a required field verify does not read.
pub(crate) struct Present;

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Present, D::Error> {
        Option::<IgnoredAny>::deserialize(deserializer)?
            .map(|_| Present)
            .ok_or_else(|| D::Error::custom("a required field is null"))
    }
}

/// Any value, null included, or absent: an optional field verify does not read.
type Ignored = Option<IgnoredAny>;

/// `h`: checked over the line's bytes before the parse (`parse_line`).
type Hash = Present;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Genesis<'a> {
    #[serde(borrow)]
    pub(crate) journal_id: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(crate) key_id: Option<Cow<'a, str>>,
    #[allow(dead_code)]
    h: Hash,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct Intent<'a> {
    #[serde(borrow)]
    pub(crate) call_id: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(crate) session_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) argv: Vec<Cow<'a, str>>,
    #[serde(default)]
    cwd: Ignored,
    uid: u32,
    #[serde(default)]
    host: Ignored,
    pub(crate) pid: u32,
    limits: Present,
    #[serde(default)]
    pub(crate) tool_gate: Option<IgnoredAny>,
    h: Hash,
}

/// A terminal's stream facts: what a reader shows of them (verify
/// requires only the object).
#[derive(Deserialize)]
pub(crate) struct Streams {
    #[serde(default)]
    stderr_bytes_seen: Option<u64>,
    #[serde(default)]
    stderr_bytes_retained: Option<u64>,
}

impl Streams {
    /// stderr bytes seen and kept, when both are told.
    pub(crate) fn stderr(&self) -> Option<(u64, u64)> {
        self.stderr_bytes_seen.zip(self.stderr_bytes_retained)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct Decision<'a> {
    #[serde(borrow)]
    pub(crate) call_id: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(crate) decision: Option<Cow<'a, str>>,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(default)]
    requested_at: Ignored,
    decided_at: Present,
    pub(crate) waited_ms: u64,
    #[serde(default)]
    approver_exit: Ignored,
    h: Hash,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct Terminal<'a> {
    #[serde(borrow)]
    pub(crate) call_id: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) state: Cow<'a, str>,
    #[serde(default)]
    exit: Ignored,
    #[serde(default)]
    pub(crate) exit_code: Option<i64>,
    #[serde(default)]
    cancel_reason: Ignored,
    #[serde(default)]
    cancel_signal: Ignored,
    signals: Vec<IgnoredAny>,
    #[serde(default)]
    stream_end: Ignored,
    #[serde(default)]
    descendants_signalled: Option<u32>,
    #[serde(default)]
    pub(crate) duration_ms: Option<u64>,
    pub(crate) streams: Streams,
    #[serde(default)]
    excerpt: Ignored,
    #[serde(default)]
    usage: Ignored,
    #[serde(default)]
    repeats: Option<Vec<IgnoredAny>>,
    #[serde(default)]
    debug_windows: Ignored,
    h: Hash,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct McpRequest<'a> {
    #[serde(borrow)]
    pub(crate) call_id: Cow<'a, str>,
    /// Null when strict JSON cannot carry the id.
    #[serde(borrow)]
    pub(crate) request_id: &'a RawValue,
    /// Null when the line was not read.
    #[serde(borrow)]
    pub(crate) method: &'a RawValue,
    #[serde(default, borrow)]
    pub(crate) name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) params_sha256: Option<Cow<'a, str>>,
    #[serde(default)]
    line_sha256: Ignored,
    #[serde(default)]
    pub(crate) irregular: Option<Vec<Irregular>>,
    h: Hash,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct McpResponse<'a> {
    #[serde(borrow)]
    pub(crate) call_id: Cow<'a, str>,
    /// Null only for a refused line whose id could not be told.
    #[serde(borrow)]
    pub(crate) request_id: &'a RawValue,
    /// Null only for a refused line not read that far.
    #[serde(default, borrow)]
    pub(crate) method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) outcome: Cow<'a, str>,
    /// For `refused` only.
    #[serde(default)]
    pub(crate) reason: Option<crate::session::Refusal>,
    #[serde(default)]
    error_code: Option<i64>,
    #[serde(default)]
    pub(crate) result_type: Option<ResultType>,
    pub(crate) duration_ms: u64,
    bytes: u64,
    h: Hash,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct McpTask<'a> {
    #[serde(borrow)]
    pub(crate) call_id: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) request_id: &'a RawValue,
    #[serde(borrow)]
    method: Cow<'a, str>,
    task_id: Present,
    status: TaskStatus,
    #[serde(default)]
    error_code: Option<i64>,
    duration_ms: u64,
    h: Hash,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct McpDecision<'a> {
    #[serde(borrow)]
    pub(crate) call_id: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) request_id: &'a RawValue,
    tool: Present,
    #[serde(default, borrow)]
    pub(crate) params_sha256: Option<Cow<'a, str>>,
    pub(crate) decision: crate::record::Decision,
    by: Present,
    pub(crate) waited_ms: u64,
    #[serde(default)]
    approver_exit: Ignored,
    /// By the host: the client's answer (absent before it was written).
    #[serde(default)]
    action: Ignored,
    /// A later round an approval covered (absent before it was written).
    #[serde(default)]
    covered_by: Ignored,
    h: Hash,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct McpToolDrift<'a> {
    #[serde(borrow)]
    pub(crate) call_id: Cow<'a, str>,
    #[serde(borrow)]
    request_id: &'a RawValue,
    key: Present,
    tool: Present,
    change: DriftChange,
    fields: Vec<Present>,
    sha256: Present,
    #[serde(default)]
    pinned_sha256: Ignored,
    h: Hash,
}

/// How a listed tool differs from its pin.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum DriftChange {
    Changed,
    New,
    ServerRenamed,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct McpRestart<'a> {
    #[serde(borrow)]
    pub(crate) call_id: Cow<'a, str>,
    attempt: u64,
    pid: u32,
    #[serde(default)]
    exit: Ignored,
    h: Hash,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Recover<'a> {
    pub(crate) torn_offset: u64,
    pub(crate) torn_length: u64,
    #[serde(borrow)]
    pub(crate) torn_sha256: Cow<'a, str>,
    #[allow(dead_code)]
    h: Hash,
}

/// Every kind of entry, as `Body::kind` names them.
pub const KINDS: [&str; 11] = [
    "genesis",
    "intent",
    "decision",
    "terminal",
    "mcp_request",
    "mcp_response",
    "mcp_task",
    "mcp_decision",
    "mcp_tool_drift",
    "mcp_restart",
    "recover",
];

/// One entry's fields after the header, by kind.
pub(crate) enum Body<'a> {
    Genesis(Genesis<'a>),
    Intent(Intent<'a>),
    Decision(Decision<'a>),
    Terminal(Terminal<'a>),
    McpRequest(McpRequest<'a>),
    McpResponse(McpResponse<'a>),
    McpTask(McpTask<'a>),
    McpDecision(McpDecision<'a>),
    McpToolDrift(McpToolDrift<'a>),
    McpRestart(McpRestart<'a>),
    Recover(Recover<'a>),
}

impl<'a> Body<'a> {
    /// The body of a `kind`, read from the rest of the line's object.
    pub(crate) fn read<D: Deserializer<'a>>(kind: &str, rest: D) -> Result<Body<'a>, D::Error> {
        Ok(match kind {
            "genesis" => Body::Genesis(Genesis::deserialize(rest)?),
            "intent" => Body::Intent(Intent::deserialize(rest)?),
            "decision" => Body::Decision(Decision::deserialize(rest)?),
            "terminal" => Body::Terminal(Terminal::deserialize(rest)?),
            "mcp_request" => Body::McpRequest(McpRequest::deserialize(rest)?),
            "mcp_response" => {
                let body = McpResponse::deserialize(rest)?;
                let refused = body.outcome == "refused";
                if refused != body.reason.is_some() {
                    return Err(D::Error::custom(
                        "an mcp_response has a reason if and only if it is refused",
                    ));
                }
                if !refused && (body.request_id.get() == "null" || body.method.is_none()) {
                    return Err(D::Error::custom(
                        "an mcp_response's request_id or method is null, and it is not refused",
                    ));
                }
                Body::McpResponse(body)
            }
            "mcp_task" => {
                let body = McpTask::deserialize(rest)?;
                if body.request_id.get() == "null" {
                    return Err(D::Error::custom("an mcp_task's request_id is null"));
                }
                Body::McpTask(body)
            }
            "mcp_decision" => {
                let body = McpDecision::deserialize(rest)?;
                if body.request_id.get() == "null" {
                    return Err(D::Error::custom("an mcp_decision's request_id is null"));
                }
                Body::McpDecision(body)
            }
            "mcp_tool_drift" => Body::McpToolDrift(McpToolDrift::deserialize(rest)?),
            "mcp_restart" => Body::McpRestart(McpRestart::deserialize(rest)?),
            "recover" => Body::Recover(Recover::deserialize(rest)?),
            other => return Err(D::Error::custom(format!("unknown kind '{other}'"))),
        })
    }

    /// The kind, as the line names it.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Body::Genesis(_) => "genesis",
            Body::Intent(_) => "intent",
            Body::Decision(_) => "decision",
            Body::Terminal(_) => "terminal",
            Body::McpRequest(_) => "mcp_request",
            Body::McpResponse(_) => "mcp_response",
            Body::McpTask(_) => "mcp_task",
            Body::McpDecision(_) => "mcp_decision",
            Body::McpToolDrift(_) => "mcp_tool_drift",
            Body::McpRestart(_) => "mcp_restart",
            Body::Recover(_) => "recover",
        }
    }

    /// The call it belongs to; none for a genesis or a recover.
    pub(crate) fn call_id(&self) -> Option<&str> {
        match self {
            Body::Intent(b) => Some(&b.call_id),
            Body::Decision(b) => Some(&b.call_id),
            Body::Terminal(b) => Some(&b.call_id),
            Body::McpRequest(b) => Some(&b.call_id),
            Body::McpResponse(b) => Some(&b.call_id),
            Body::McpTask(b) => Some(&b.call_id),
            Body::McpDecision(b) => Some(&b.call_id),
            Body::McpToolDrift(b) => Some(&b.call_id),
            Body::McpRestart(b) => Some(&b.call_id),
            Body::Genesis(_) | Body::Recover(_) => None,
        }
    }

    /// An mcp_ entry's request id, as JSON text.
    pub(crate) fn request_id(&self) -> Option<&'a RawValue> {
        match self {
            Body::McpRequest(b) => Some(b.request_id),
            Body::McpResponse(b) => Some(b.request_id),
            Body::McpTask(b) => Some(b.request_id),
            Body::McpDecision(b) => Some(b.request_id),
            _ => None,
        }
    }

    /// An mcp_ entry's method, when it is a string.
    pub(crate) fn method(&self) -> Option<String> {
        match self {
            Body::McpRequest(b) => serde_json::from_str(b.method.get()).ok(),
            Body::McpResponse(b) => b.method.as_ref().map(|m| m.to_string()),
            Body::McpTask(b) => Some(b.method.to_string()),
            Body::McpDecision(_) => Some("tools/call".to_string()),
            _ => None,
        }
    }
}
