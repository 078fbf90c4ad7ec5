//! The record's `mcp` object: what the session layer saw of the JSON-RPC
//! traffic, in each direction, and what it did on its own (answers it
//! made up, responses it dropped). Null when the session layer is off.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Lines in one direction, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Traffic {
    pub requests: u64,
    pub notifications: u64,
    pub responses: u64,
    /// Lines that are not JSON-RPC messages (not JSON, not an object or
    /// array of objects, or over --max-message-bytes): passed on
    /// unchanged from the client; the server's are the guard's.
    pub non_jsonrpc_lines: u64,
}

/// Error responses mcp-bound wrote to the client itself, by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Synthesized {
    /// -32001: no response within --request-timeout.
    pub request_timeout: u64,
    /// -32000: the server exited (or was ended) before responding, or was
    /// not running when the request came.
    pub server_exited: u64,
    /// -32000: --max-in-flight requests were already waiting.
    pub too_many_in_flight: u64,
    /// -32600: refused, since servers' parsers would not agree on what the
    /// request says (a key given twice, a line a CR would split).
    pub invalid_request: u64,
}

/// The client's bytes through our stdin.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientBytes {
    /// Read from our stdin.
    pub read: u64,
    /// Written to the server's stdin (mcp-bound's cancellations and
    /// replayed initialize included).
    pub to_server: u64,
    /// Meant for a server that had stopped reading or was gone: dropped.
    pub discarded: u64,
}

/// A request the end of the session cut off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interrupted {
    /// The request's id, as the client sent it.
    pub id: crate::request_id::RequestId,
    pub method: String,
    /// `params.name` of a tools/call or prompts/get.
    pub name: Option<String>,
}

/// When to start a server again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum RestartMode {
    #[default]
    Never,
    /// After an exit with a non-zero code or by a signal.
    OnFailure,
    /// After any exit.
    Always,
}

/// Why a server that went away was not started again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoRestart {
    /// --restart never.
    Never,
    /// --restart on-failure, and the server exited 0.
    CleanExit,
    /// --max-restarts within --restart-window were used up.
    Limit,
    /// The restarted server's initialize result differs from the first.
    ProtocolChanged,
    /// The server could not be started again.
    SpawnFailed,
}

/// Why restarting stopped, and what mcp-bound saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestartStop {
    pub reason: NoRestart,
    pub detail: Option<String>,
}

/// A run's cut-off requests, read back. Serde reads a flattened struct's
/// fields (the runs are one) from a buffer of its own, which holds an id
/// as a JSON value, not as the text the client wrote (the `RawValue` a
/// `RequestId` keeps): the id is that value written again, the same id
/// (an integer or a string as it was; `1e0` as `1.0`).
fn interrupted_read_back<'de, D>(from: D) -> Result<Vec<Interrupted>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    struct Buffered {
        id: serde_json::Value,
        method: String,
        name: Option<String>,
    }
    let buffered = Vec::<Buffered>::deserialize(from)?;
    let read = buffered.into_iter().map(|one| {
        let id = crate::request_id::RequestId::new(&one.id.to_string())
            .ok_or_else(|| serde::de::Error::custom(format!("{} is no request id", one.id)))?;
        Ok(Interrupted {
            id,
            method: one.method,
            name: one.name,
        })
    });
    read.collect()
}

/// Which MCP era a server process was spoken to in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Era {
    /// Opened by the client's `initialize` (MCP 2025-11-25 and earlier).
    Legacy,
    /// Stateless (MCP 2026-07-28): each request names its version in
    /// `_meta["io.modelcontextprotocol/protocolVersion"]`.
    Modern,
}

/// One run of the server: the first, and one per restart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Incarnation {
    pub pid: u32,
    /// Milliseconds since mcp-bound started, as the events have them.
    pub dispatched_t_ms: u64,
    pub exited_t_ms: Option<u64>,
    pub exit: Option<super::Exit>,
    /// Its stderr bytes (all of them pass the same capture and counts).
    pub stderr_bytes_seen: u64,
    /// Client requests it left unanswered, answered by mcp-bound.
    pub in_flight_at_exit: u64,
    /// Those requests (the first 32).
    #[serde(deserialize_with = "interrupted_read_back")]
    pub interrupted: Vec<Interrupted>,
    /// The era it was spoken to in: an `initialize` (whenever it came)
    /// or the first request's `_meta` showed it; null: neither did.
    pub era: Option<Era>,
    /// The protocol version the client asked for, as it sent it (the
    /// `initialize`'s, or the first modern request's); null: not seen.
    pub protocol_version: Option<String>,
}

/// The limits the session layer ran under.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionLimits {
    /// --request-timeout for any method without its own; null: none.
    pub request_timeout_ms: Option<u64>,
    /// --request-timeout METHOD=DURATION (null: that method has none).
    pub method_timeouts_ms: BTreeMap<String, Option<u64>>,
    pub timeout_resets_on_progress: bool,
    pub max_in_flight: u64,
    pub restart: RestartMode,
    pub max_restarts: u64,
    pub restart_window_ms: u64,
    /// --agent-excerpt-bytes.
    pub agent_excerpt_bytes: u64,
}

/// The answers mcp-bound wrote whose message carried an excerpt of the
/// server's stderr (for hosts that show the model only the message).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentExcerpts {
    pub answers: u64,
    /// The excerpts' bytes, all told.
    pub bytes: u64,
}

/// Decisions made, by outcome, for the record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionCounts {
    pub approved: u64,
    pub denied: u64,
    pub expired: u64,
    pub cancelled: u64,
    pub error: u64,
}

impl DecisionCounts {
    pub fn count(&mut self, decision: crate::record::Decision) {
        let slot = match decision {
            crate::record::Decision::Approved => &mut self.approved,
            crate::record::Decision::Denied => &mut self.denied,
            crate::record::Decision::Expired => &mut self.expired,
            crate::record::Decision::Cancelled => &mut self.cancelled,
            crate::record::Decision::Error => &mut self.error,
        };
        *slot += 1;
    }
}

/// What the client answered when mcp-bound asked the person through it
/// (an MCP elicitation): its `action`, or `timeout` (no answer by the
/// approval's deadline) or `error` (an error response, or an answer
/// that says none of these).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostAction {
    Accept,
    Decline,
    Cancel,
    Timeout,
    Error,
    /// Not an answer: a later round of a call the person approved, the
    /// one retry carrying the server's latest state (journaled with
    /// `covered_by`), never counted as the client's answer.
    Covered,
}

/// The client's answers, by action.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostActionCounts {
    pub accept: u64,
    pub decline: u64,
    pub cancel: u64,
    pub timeout: u64,
    pub error: u64,
}

impl HostActionCounts {
    pub fn count(&mut self, action: HostAction) {
        let slot = match action {
            HostAction::Accept => &mut self.accept,
            HostAction::Decline => &mut self.decline,
            HostAction::Cancel => &mut self.cancel,
            HostAction::Timeout => &mut self.timeout,
            HostAction::Error => &mut self.error,
            HostAction::Covered => return,
        };
        *slot += 1;
    }
}

/// CPU time, user and system.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cpu {
    pub user_ms: u64,
    pub sys_ms: u64,
}

/// The per-tool-call gate's facts (null without --tool-allow,
/// --tool-deny, --tool-approve-cmd or --tool-approve-via host).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolGateFacts {
    /// Every `tools/call` decided, by outcome (by the policy or the
    /// approver).
    pub decisions: DecisionCounts,
    /// Approvers asked (one per call the approver decides).
    pub approvers_asked: u64,
    /// Calls the person was asked about through the client
    /// (--tool-approve-via host), and the client's answers.
    pub host_asked: u64,
    pub host_actions: HostActionCounts,
    /// Calls for which the client could not be asked (it declared no
    /// form elicitation, or speaks an era mcp-bound cannot ask in): the
    /// command decided them, or they were denied.
    pub host_unavailable: u64,
    /// CPU the approvers used, kept apart from the server's `usage`.
    pub approver_cpu: Cpu,
    /// Tools removed from `tools/list` results: the only change made to
    /// the bytes of a server's message.
    pub tools_hidden: u64,
    /// `tools/list` results refused because they could not be filtered.
    pub lists_refused: u64,
    /// Tool pinning (--tool-pin), when on.
    pub pin: Option<ToolPinFacts>,
}

/// What tool pinning did in this run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolPinFacts {
    /// The pin file.
    pub file: String,
    /// The server's key in it, as last used (null: never used).
    pub key: Option<String>,
    /// This run pinned the server's first complete listing.
    pub first_use: bool,
    /// How many tools it pinned then.
    pub tools_pinned: u64,
    /// Tools hidden from listings for differing from their pin or having
    /// none (also counted in `tools_hidden`).
    pub tools_hidden: u64,
    /// `mcp_tool_drift` entries: a tool and a definition, once per run.
    pub drifts: u64,
    /// Calls denied as `tool_changed`.
    pub calls_denied: u64,
    /// Times the file could not be read or written, and the last reason.
    pub file_errors: u64,
    pub last_error: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpFacts {
    pub limits: SessionLimits,
    /// From the client (our stdin) to the server.
    pub client: Traffic,
    pub client_bytes: ClientBytes,
    /// From the server (its stdout, past the guard) to the client.
    pub server: Traffic,
    pub synthesized: Synthesized,
    /// Of those answers, the ones that carried a stderr excerpt.
    pub agent_excerpts: AgentExcerpts,
    /// Client lines or batch elements not sent to the server, because
    /// servers' parsers would not agree on what they say; each request
    /// among them was answered -32600 (`synthesized.invalid_request`).
    pub refused: u64,
    /// Requests the client cancelled itself (notifications/cancelled).
    pub cancelled_by_client: u64,
    /// Server responses for a request that had already been answered
    /// (timed out): dropped, never a second response for one id.
    pub late_responses_dropped: u64,
    /// Server responses for no request we knew of: passed on.
    pub unmatched_responses: u64,
    /// notifications/cancelled sent to the server on a timeout.
    pub cancellations_sent: u64,
    /// Client requests the end of the session cut off (what a crash that
    /// a restart followed cut off is its incarnation's).
    pub in_flight_at_exit: u64,
    /// The most client requests ever waiting at once.
    pub peak_in_flight: u64,
    #[serde(flatten)]
    pub runs: Runs,
    /// The requests the end of the session cut off (the first 32).
    pub interrupted: Vec<Interrupted>,
    /// The per-tool-call gate, when one is on.
    pub tool_gate: Option<ToolGateFacts>,
}

impl McpFacts {
    /// The gate's facts, made when first needed.
    pub fn tool_gate_mut(&mut self) -> &mut ToolGateFacts {
        self.tool_gate.get_or_insert_with(ToolGateFacts::default)
    }
}

/// The server's runs: how many restarts, why restarting stopped, and
/// each run (flattened into the `mcp` object).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Runs {
    pub restarts: u64,
    /// Null unless a server went away with --restart on and was not
    /// started again: why.
    pub restart_stopped: Option<RestartStop>,
    /// Each run of the server, in order.
    pub incarnations: Vec<Incarnation>,
}

/// Most interrupted requests listed by id.
pub const MAX_INTERRUPTED_LISTED: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;

    /// The facts a watchdog is told at a restart read back whole: a
    /// request a crash cut off, listed in its incarnation (inside the
    /// flattened runs), keeps its id.
    #[test]
    fn facts_with_a_crash_s_interrupted_request_read_back() {
        let interrupted = Interrupted {
            id: crate::request_id::RequestId::new(r#""a\"b""#).unwrap(),
            method: "tools/call".into(),
            name: Some("crash".into()),
        };
        let mut facts = McpFacts::default();
        facts.runs.restarts = 1;
        facts.runs.incarnations.push(Incarnation {
            pid: 7,
            dispatched_t_ms: 1,
            exited_t_ms: Some(2),
            exit: Some(super::super::Exit::Code {
                code: 3,
                ntstatus: None,
            }),
            stderr_bytes_seen: 4,
            in_flight_at_exit: 1,
            interrupted: vec![interrupted.clone()],
            era: Some(Era::Legacy),
            protocol_version: Some("2025-06-18".into()),
        });
        facts.interrupted.push(interrupted);
        let text = serde_json::to_string(&facts).unwrap();
        let read: McpFacts = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string(&read).unwrap(), text);
        assert!(text.contains(r#""id":"a\"b""#), "{text}");
        // A number not written as an integer comes back as the same value.
        let written = text.replace(r#""id":"a\"b""#, r#""id":1e0"#);
        let read: McpFacts = serde_json::from_str(&written).unwrap();
        let ids = |facts: &McpFacts| {
            let run = &facts.runs.incarnations[0].interrupted[0];
            (
                run.id.get().to_string(),
                facts.interrupted[0].id.get().to_string(),
            )
        };
        assert_eq!(ids(&read), ("1.0".to_string(), "1e0".to_string()));
    }
}
