//! The lifecycle record: one JSON object per call, lifecycle facts first.
//! Pure serde model; `schema/record.schema.json` describes the same shape.
//!
//! Rules the types enforce: `exit` is `None` (null) unless an exit was
//! observed; `exit_code` is `None` while the call is in flight; the reason a
//! termination started and the signals that carried it out are separate.

use serde::{Deserialize, Serialize};

use crate::termination::{Cancellation, Reason};

pub mod mcp;
mod milestone;
mod names;
mod otel;
mod stderr;
mod template;

pub use milestone::Milestone;
use names::Name;
pub use otel::OtelFacts;
pub use stderr::*;
pub use template::RecordTemplate;

pub const SCHEMA: &str = "mcp-bound/record/v1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Written before approval is requested; the helper has not started.
    AwaitingApproval,
    /// Written before the helper starts; still there if mcp-bound was SIGKILLed.
    Dispatched,
    Completed,
    TimedOut,
    CancelledBeforeDispatch,
    /// The helper had started and may already have acted.
    CancelledAfterDispatch,
    FailedBeforeDispatch,
    /// mcp-bound itself failed after the helper started: it killed the
    /// helper's tree and wrote what it saw. The helper may have acted.
    FailedAfterDispatch,
    /// The approver denied the call, or approval expired: never started.
    Denied,
    /// Under the session layer: the host ended the session (closed our
    /// stdin, or sent a signal) while no request was in flight. The normal
    /// end of an MCP session.
    ShutDown,
    /// mcp-bound was killed (SIGKILL) with the call in flight; its
    /// watchdog ended the tree and wrote this. The helper may have acted.
    SupervisorKilled,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelReason {
    Timeout,
    Signal,
    ClientDisconnected,
    /// Our stdin hung up (the MCP shutdown) and the helper did not exit in time.
    StdinClosed,
}

/// Why mcp-bound signalled processes: a cancellation or clean-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalReason {
    Timeout,
    Signal,
    ClientDisconnected,
    StdinClosed,
    PipesHeld,
    Leftovers,
    /// mcp-bound could not go on supervising (see `error`).
    SupervisorFailure,
    /// A restarted MCP server was refused (see `mcp.restart_stopped`).
    RestartRefused,
}

impl From<Cancellation> for CancelReason {
    fn from(cancellation: Cancellation) -> CancelReason {
        match cancellation {
            Cancellation::Timeout => CancelReason::Timeout,
            Cancellation::Signal(_) => CancelReason::Signal,
            Cancellation::ClientDisconnected => CancelReason::ClientDisconnected,
            Cancellation::StdinClosed => CancelReason::StdinClosed,
        }
    }
}

impl From<Reason> for SignalReason {
    fn from(reason: Reason) -> SignalReason {
        match reason {
            Reason::Cancel(Cancellation::Timeout) => SignalReason::Timeout,
            Reason::Cancel(Cancellation::Signal(_)) => SignalReason::Signal,
            Reason::Cancel(Cancellation::ClientDisconnected) => SignalReason::ClientDisconnected,
            Reason::Cancel(Cancellation::StdinClosed) => SignalReason::StdinClosed,
            Reason::PipesHeld => SignalReason::PipesHeld,
            Reason::Leftovers => SignalReason::Leftovers,
            Reason::SupervisorFailure => SignalReason::SupervisorFailure,
            Reason::RestartRefused => SignalReason::RestartRefused,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamEnd {
    /// Both pipes reached EOF on their own (or when the helper died).
    Eof,
    /// EOF came only after mcp-bound signalled the descendants holding them.
    EofAfterDescendantsKilled,
    /// mcp-bound closed its ends while something still held them.
    ClosedWhileHeld,
}

impl From<crate::contain::Reached> for Target {
    fn from(reached: crate::contain::Reached) -> Target {
        match reached {
            crate::contain::Reached::Group => Target::Group,
            crate::contain::Reached::Descendants => Target::Descendants,
            crate::contain::Reached::Cgroup => Target::Cgroup,
            crate::contain::Reached::Job => Target::Job,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Exit {
    Code {
        code: u32,
        /// Windows: a crash's NTSTATUS by name (`STATUS_ACCESS_VIOLATION`
        /// for 0xC0000005), when it is one mcp-bound knows.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ntstatus: Option<String>,
    },
    Signal {
        signal: String,
        core_dumped: bool,
    },
}

/// An exit in words, for the lines mcp-bound prints: `exit 3`, or on
/// Windows `exit 3221225477 (STATUS_ACCESS_VIOLATION)`.
impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code {
                code,
                ntstatus: Some(name),
            } => write!(f, "exit {code} ({name})"),
            Exit::Code { code, .. } => write!(f, "exit {code}"),
            Exit::Signal { signal, .. } => write!(f, "killed by {signal}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// The helper's process group, with killpg.
    Group,
    /// Descendants outside the group (setsid, double fork), one by one.
    Descendants,
    /// Every process in the helper's cgroup at once, with one write to
    /// cgroup.kill (KILL only, with --contain cgroup, Linux 5.14).
    Cgroup,
    /// The server's stdin, closed (CLOSE, the polite stop under --mcp).
    Stdin,
    /// Every process in the helper's Job Object at once
    /// (`TerminateJobObject`: KILL only, Windows).
    Job,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Milliseconds since mcp-bound started, on the monotonic clock.
    pub t_ms: u64,
    #[serde(flatten)]
    pub kind: EventKind,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    Dispatched {
        pid: u32,
        pgid: i32,
    },
    /// The MCP server went away on its own and starts again after
    /// `backoff_ms` (`--restart`); `attempt` counts restarts.
    RestartScheduled {
        attempt: u64,
        backoff_ms: u64,
    },
    CancelRequested {
        reason: CancelReason,
        #[serde(skip_serializing_if = "Option::is_none")]
        signal: Option<String>,
    },
    SignalSent {
        signal: String,
        target: Target,
        /// Processes signalled (for a group: 1, the group).
        count: u32,
        reason: SignalReason,
    },
    HelperExited {
        exit: Exit,
    },
    StdoutClosed,
    StderrClosed,
    /// Our own stdin hung up (watched without being read).
    StdinClosed,
    /// mcp-bound stopped waiting for EOF after the final KILL.
    StreamsAbandoned,
    /// mcp-bound died (SIGKILL) before its final words; its watchdog ended
    /// the tree and wrote this record, with what mcp-bound knew at
    /// `facts_t_ms` (its last milestone: the dispatch, a restart, the
    /// host's signal or hang-up).
    SupervisorKilled {
        facts_t_ms: u64,
    },
}

/// Whether stdout was guarded as JSON-RPC lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StdoutGuard {
    #[default]
    Off,
    Jsonrpc,
}

impl StdoutGuard {
    pub fn new(guarded: bool) -> StdoutGuard {
        if guarded {
            StdoutGuard::Jsonrpc
        } else {
            StdoutGuard::Off
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StdoutFacts {
    pub bytes_seen: u64,
    pub bytes_forwarded: u64,
    /// Read after our consumer went away (or with no stdout): drained, dropped.
    pub bytes_discarded: u64,
    pub guard: StdoutGuard,
    pub lines_forwarded: u64,
    /// Lines the guard kept from the host (into the stderr capture).
    pub lines_diverted: u64,
    pub bytes_diverted: u64,
    /// The start of the first diverted line, as text.
    pub first_diverted: Option<String>,
    /// JSON-RPC messages forwarded out of a line that had junk glued to
    /// them (the junk diverted).
    pub lines_salvaged: u64,
}

/// What the helper's whole tree used (every descendant is reaped by
/// mcp-bound as subreaper, so the children's usage covers them all).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Usage {
    pub user_ms: u64,
    pub sys_ms: u64,
    /// The largest resident set of any one process of the tree, KiB, as
    /// each reaped process reports it with what it reaped (approvers
    /// apart); null when no process of the tree was reaped here.
    pub max_rss_kib: Option<u64>,
    /// CPU (user and system) of every process that ran in the tree's
    /// cgroup, from its cpu.stat; null without a cgroup.
    pub cgroup_cpu_ms: Option<u64>,
    /// The cgroup's memory.peak: the most memory the whole tree held at
    /// once; null without a cgroup or its memory controller.
    pub memory_peak_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Limits {
    pub timeout_ms: Option<u64>,
    pub signal: String,
    pub grace_ms: u64,
    pub wait_delay_ms: u64,
    pub head_bytes: u64,
    pub tail_bytes: u64,
    pub excerpt_bytes: u64,
    pub stdout_guard: StdoutGuard,
    pub max_message_bytes: u64,
    /// Bytes per second and burst of --live; null when off.
    pub live_rate: Option<u64>,
    pub live_burst: Option<u64>,
    pub stdin_close_grace_ms: Option<u64>,
    /// How many --redact patterns were added (the patterns are not recorded:
    /// one may itself contain a secret).
    pub redact_patterns: u64,
    /// --rlimit, by name; null is unlimited.
    #[serde(deserialize_with = "names::keyed")]
    pub rlimits: std::collections::BTreeMap<Name, crate::rlimit::RlimitRecord>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMethod {
    Command,
    Tty,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approved,
    Denied,
    Expired,
    /// The call was cancelled while it waited (a per-call approval: the
    /// client's cancel, or the session's end).
    Cancelled,
    /// The approval could not be asked (no approver, no terminal).
    Error,
}

impl Decision {
    /// As the record and the journal spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Approved => "approved",
            Decision::Denied => "denied",
            Decision::Expired => "expired",
            Decision::Cancelled => "cancelled",
            Decision::Error => "error",
        }
    }
}

/// The approval gate, when one is required.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Approval {
    pub required: bool,
    pub method: Option<ApprovalMethod>,
    /// Null while pending, or when a signal cancelled the call first.
    pub decision: Option<Decision>,
    pub requested_at: Option<String>,
    pub decided_at: Option<String>,
    pub waited_ms: Option<u64>,
    pub timeout_ms: Option<u64>,
    pub approver_exit: Option<Exit>,
    /// The approver's stdout and stderr, bounded, masked.
    pub excerpt: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Supervisor {
    pub version: String,
    pub pid: u32,
    /// The system, as its backend names it (`sys::BACKEND.os`).
    #[serde(deserialize_with = "names::name")]
    pub os: Name,
    /// What was worth saying of mcp-bound's own files and did not stop
    /// the call (a journal or stderr log others can read), each said once
    /// on stderr too.
    pub warnings: Vec<String>,
    /// Set when the journal's terminal entry could not be written.
    #[serde(default)]
    pub journal: Option<TerminalWrite>,
}

/// Whether the journal's terminal entry was written, and why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct TerminalWrite {
    pub terminal_written: bool,
    pub error: Option<String>,
}

/// The record, in its published field order. The groups are flattened:
/// on the wire it is one flat object, as the schema says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Record {
    #[serde(flatten)]
    pub ids: Ids,
    #[serde(flatten)]
    pub lifecycle: Lifecycle,
    #[serde(flatten)]
    pub invocation: Invocation,
    #[serde(flatten)]
    pub times: Times,
    /// Why the helper could not be started (`failed_before_dispatch`), or
    /// why mcp-bound could not go on (`failed_after_dispatch`).
    pub error: Option<String>,
    pub approval: Approval,
    pub stdout: StdoutFacts,
    pub stderr: StderrFacts,
    /// How the tree was contained; null before that was settled.
    pub contain: Option<crate::contain::ContainFacts>,
    /// What the helper's tree used; null until it ended.
    pub usage: Option<Usage>,
    /// --stderr-log; null without it.
    pub stderr_log: Option<StderrLogFacts>,
    /// The session layer's facts; null when it was off.
    pub mcp: Option<mcp::McpFacts>,
    /// Span export (--otel, OTEL_*); null when it was off.
    pub otel: Option<OtelFacts>,
    pub limits: Limits,
    pub events: Vec<Event>,
    pub mcp_bound: Supervisor,
}

/// A vocabulary's word as the record spells it (its serde name): for the
/// summary line and the spans.
pub(crate) fn word(value: impl Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Which call this is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Ids {
    #[serde(deserialize_with = "names::name")]
    pub schema: Name,
    pub call_id: String,
    pub session_id: Option<String>,
}

/// The lifecycle facts, first in the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Lifecycle {
    pub state: State,
    pub cancel_reason: Option<CancelReason>,
    /// The signal mcp-bound received, when `cancel_reason` is `signal`.
    pub cancel_signal: Option<String>,
    pub exit: Option<Exit>,
    /// mcp-bound's own exit status; null while in flight.
    pub exit_code: Option<i64>,
    pub stream_end: Option<StreamEnd>,
    pub descendants_signalled: u32,
}

/// What ran, where, as which process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Invocation {
    pub argv: Vec<String>,
    pub cwd: Option<String>,
    pub pid: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Times {
    pub started_at: String,
    pub ended_at: Option<String>,
    pub duration_ms: Option<u64>,
    /// When the helper last wrote to stdout / stderr (long-lived helpers).
    pub last_stdout_at: Option<String>,
    pub last_stderr_at: Option<String>,
}

impl Record {
    /// One line of JSON, newline-terminated.
    pub fn to_line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("a record always serializes");
        line.push('\n');
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_shapes() {
        let code = serde_json::to_string(&Exit::Code {
            code: 3,
            ntstatus: None,
        })
        .unwrap();
        assert_eq!(code, r#"{"code":3}"#);
        let signal = serde_json::to_string(&Exit::Signal {
            signal: "TERM".into(),
            core_dumped: false,
        })
        .unwrap();
        assert_eq!(signal, r#"{"signal":"TERM","core_dumped":false}"#);
    }

    #[test]
    fn events_are_flat_and_tagged() {
        let event = Event {
            t_ms: 7,
            kind: EventKind::SignalSent {
                signal: "TERM".into(),
                target: Target::Group,
                count: 1,
                reason: SignalReason::Timeout,
            },
        };
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            r#"{"t_ms":7,"event":"signal_sent","signal":"TERM","target":"group","count":1,"reason":"timeout"}"#
        );
        let closed = Event {
            t_ms: 1,
            kind: EventKind::StdoutClosed,
        };
        assert_eq!(
            serde_json::to_string(&closed).unwrap(),
            r#"{"t_ms":1,"event":"stdout_closed"}"#
        );
    }
}
