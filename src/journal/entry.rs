//! The entries mcp-bound appends, and how one line is formatted: header
//! (`v`, `seq`, `prev`, `kind`, `ts`), the kind's fields, then `h` over the
//! exact bytes before it.

use serde::Serialize;

use super::VERSION;
use super::key::Key;
use crate::record::{CancelReason, EventKind, Exit, Limits, Record, State, StreamEnd};

/// Where `h` starts in a line.
pub(crate) const HASH_KEY: &[u8] = b",\"h\":\"";

/// Before dispatch: what is about to run, where, by whom, under which limits.
#[derive(Debug, Clone, Serialize)]
pub struct Intent {
    pub call_id: String,
    pub session_id: Option<String>,
    pub argv: Vec<String>,
    pub cwd: Option<String>,
    pub uid: u32,
    pub host: Option<String>,
    pub pid: u32,
    pub limits: Limits,
    /// The per-tool-call gate the call runs under (absent: none), so
    /// that verify knows every tools/call needs a decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_gate: Option<IntentGate>,
}

/// A tool gate, as the intent records it.
#[derive(Debug, Clone, Serialize)]
pub struct IntentGate {
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    pub approve: Vec<String>,
    /// SHA-256 of the approver's argv as JSON; null without one.
    pub approver_sha256: Option<String>,
    /// Who is asked: `command` or `host`.
    pub via: &'static str,
}

impl From<&crate::session::ToolGate> for IntentGate {
    fn from(gate: &crate::session::ToolGate) -> IntentGate {
        use sha2::Digest;
        IntentGate {
            allow: gate.allow.clone(),
            deny: gate.deny.clone(),
            approve: gate.approve.clone(),
            approver_sha256: gate.approver.as_ref().map(|a| {
                let argv = serde_json::to_vec(&a.argv).expect("strings serialize");
                crate::ids::hex(&sha2::Sha256::digest(argv))
            }),
            via: if gate.ask_host { "host" } else { "command" },
        }
    }
}

/// One signal mcp-bound sent, as the terminal entry lists them.
#[derive(Debug, Clone, Serialize)]
pub struct SignalFact {
    pub t_ms: u64,
    pub signal: String,
    pub target: crate::record::Target,
    pub count: u32,
    pub reason: crate::record::SignalReason,
}

#[derive(Debug, Clone, Serialize)]
pub struct StreamFacts {
    pub stdout_bytes: u64,
    pub stderr_bytes_seen: u64,
    pub stderr_bytes_retained: u64,
    pub stderr_truncated: bool,
}

/// After the call: the record's lifecycle facts and a short excerpt.
#[derive(Debug, Clone, Serialize)]
pub struct Terminal {
    pub call_id: String,
    pub state: State,
    pub exit: Option<Exit>,
    pub exit_code: Option<i64>,
    pub cancel_reason: Option<CancelReason>,
    pub cancel_signal: Option<String>,
    pub signals: Vec<SignalFact>,
    pub stream_end: Option<StreamEnd>,
    pub descendants_signalled: u32,
    pub duration_ms: Option<u64>,
    pub streams: StreamFacts,
    /// Bounded on its own by --journal-excerpt-bytes; null when 0.
    pub excerpt: Option<String>,
    /// What the helper's tree used; null when it never ran.
    pub usage: Option<crate::record::Usage>,
    /// The record's `stderr.repeats`, the first three.
    pub repeats: Vec<crate::record::Repeat>,
    /// The debug windows opened, and their time open; null when none.
    pub debug_windows: Option<crate::record::DebugWindowsTotal>,
}

impl Terminal {
    pub fn from_record(record: &Record, excerpt: Option<String>) -> Terminal {
        let signals = record
            .events
            .iter()
            .filter_map(|event| match &event.kind {
                EventKind::SignalSent {
                    signal,
                    target,
                    count,
                    reason,
                } => Some(SignalFact {
                    t_ms: event.t_ms,
                    signal: signal.clone(),
                    target: *target,
                    count: *count,
                    reason: *reason,
                }),
                _ => None,
            })
            .collect();
        Terminal {
            call_id: record.ids.call_id.clone(),
            state: record.lifecycle.state,
            exit: record.lifecycle.exit.clone(),
            exit_code: record.lifecycle.exit_code,
            cancel_reason: record.lifecycle.cancel_reason,
            cancel_signal: record.lifecycle.cancel_signal.clone(),
            signals,
            stream_end: record.lifecycle.stream_end,
            descendants_signalled: record.lifecycle.descendants_signalled,
            duration_ms: record.times.duration_ms,
            streams: StreamFacts {
                stdout_bytes: record.stdout.bytes_seen,
                stderr_bytes_seen: record.stderr.bytes_seen,
                stderr_bytes_retained: record.stderr.bytes_retained,
                stderr_truncated: record.stderr.truncated,
            },
            excerpt,
            usage: record.usage,
            repeats: record.stderr.repeats.iter().take(3).cloned().collect(),
            debug_windows: {
                let count = record.stderr.debug_windows.len() as u64
                    + record.stderr.debug_windows_not_listed;
                (count > 0).then_some(crate::record::DebugWindowsTotal {
                    count,
                    open_ms: record.stderr.debug_windows_open_ms,
                })
            },
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Genesis<'a> {
    pub(crate) journal_id: &'a str,
    pub(crate) key_id: Option<&'a str>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Recover {
    pub(crate) torn_offset: u64,
    pub(crate) torn_length: u64,
    pub(crate) torn_sha256: String,
}

/// The approval decision, between intent and dispatch.
#[derive(Debug, Clone, Serialize)]
pub struct DecisionEntry {
    pub call_id: String,
    pub decision: Option<crate::record::Decision>,
    pub method: crate::record::ApprovalMethod,
    pub requested_at: String,
    pub decided_at: String,
    pub waited_ms: u64,
    pub approver_exit: Option<Exit>,
}

pub use crate::session::{McpDecision, McpRequest, McpResponse, McpTask};
pub(super) use crate::session::{McpRestart, McpToolDrift};

/// What a caller appends.
pub enum Entry<'a> {
    Intent(&'a Intent),
    Decision(&'a DecisionEntry),
    Terminal(&'a Terminal),
    McpRequest(&'a McpRequest),
    McpResponse(&'a McpResponse),
    McpTask(&'a McpTask),
    McpToolDrift(&'a McpToolDrift),
    McpDecision(&'a McpDecision),
    McpRestart(&'a McpRestart),
    /// A terminal entry's fields as one JSON object's text (a serialized
    /// [`Terminal`]): what mcp-bound handed its watchdog to write if it
    /// died while writing them itself.
    RawTerminal(&'a str),
}

impl Entry<'_> {
    /// The entry's `kind` and its line, chained onto `prev`.
    pub(crate) fn format(&self, key: &Key, seq: u64, prev: &str, ts: &str) -> (Vec<u8>, String) {
        match self {
            Entry::Intent(body) => format_line(key, seq, prev, "intent", ts, body),
            Entry::Decision(body) => format_line(key, seq, prev, "decision", ts, body),
            Entry::Terminal(body) => format_line(key, seq, prev, "terminal", ts, body),
            Entry::McpRequest(body) => format_line(key, seq, prev, "mcp_request", ts, body),
            Entry::McpResponse(body) => format_line(key, seq, prev, "mcp_response", ts, body),
            Entry::McpTask(body) => format_line(key, seq, prev, "mcp_task", ts, body),
            Entry::McpToolDrift(body) => format_line(key, seq, prev, "mcp_tool_drift", ts, body),
            Entry::McpDecision(body) => format_line(key, seq, prev, "mcp_decision", ts, body),
            Entry::McpRestart(body) => format_line(key, seq, prev, "mcp_restart", ts, body),
            Entry::RawTerminal(body) => format_raw_line(key, seq, prev, "terminal", ts, body),
        }
    }
}

impl<'a> From<&'a crate::session::Audit> for Entry<'a> {
    fn from(fact: &'a crate::session::Audit) -> Entry<'a> {
        use crate::session::Audit;
        match fact {
            Audit::Request(request) => Entry::McpRequest(request),
            Audit::Response(response) => Entry::McpResponse(response),
            Audit::Decision(decision) => Entry::McpDecision(decision),
            Audit::Task(task) => Entry::McpTask(task),
            Audit::ToolDrift(drift) => Entry::McpToolDrift(drift),
            Audit::Restart(restart) => Entry::McpRestart(restart),
        }
    }
}

/// Where an append landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    pub seq: u64,
    pub h: String,
}

/// As [`format_line`], for a body that is already one JSON object's text
/// (`{"a":1,…}`): its fields follow the header as they are.
fn format_raw_line(
    key: &Key,
    seq: u64,
    prev: &str,
    kind: &str,
    ts: &str,
    body: &str,
) -> (Vec<u8>, String) {
    #[derive(Serialize)]
    struct Nothing {}
    let mut line = header_and(seq, prev, kind, ts, &Nothing {});
    line.pop();
    let fields = body.trim().strip_prefix('{').unwrap_or(body).trim_start();
    if !fields.starts_with('}') {
        line.push(b',');
    }
    line.extend_from_slice(fields.as_bytes());
    seal(key, line)
}

/// Format one line: header, body, then `h` over the exact bytes before it.
pub(crate) fn format_line<B: Serialize>(
    key: &Key,
    seq: u64,
    prev: &str,
    kind: &str,
    ts: &str,
    body: &B,
) -> (Vec<u8>, String) {
    seal(key, header_and(seq, prev, kind, ts, body))
}

/// The header and the body's fields, as one JSON object.
fn header_and<B: Serialize>(seq: u64, prev: &str, kind: &str, ts: &str, body: &B) -> Vec<u8> {
    #[derive(Serialize)]
    struct Header<'a, B> {
        v: u64,
        seq: u64,
        prev: &'a str,
        kind: &'a str,
        ts: &'a str,
        #[serde(flatten)]
        body: &'a B,
    }
    let header = Header {
        v: VERSION,
        seq,
        prev,
        kind,
        ts,
        body,
    };
    serde_json::to_vec(&header).expect("entries always serialize")
}

/// A line's object (`{…}`) sealed: `h` over its bytes before the closing
/// brace, then `"h"` itself and the newline.
fn seal(key: &Key, mut line: Vec<u8>) -> (Vec<u8>, String) {
    debug_assert_eq!(line.last(), Some(&b'}'));
    line.pop();
    let h = key.digest(&line);
    line.extend_from_slice(HASH_KEY);
    line.extend_from_slice(h.as_bytes());
    line.extend_from_slice(b"\"}\n");
    (line, h)
}
