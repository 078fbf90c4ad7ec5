//! The record's `mcp` object: what the session layer saw of the JSON-RPC
//! traffic, in each direction, and what it did on its own (answers it
//! made up, responses it dropped). Null when the session layer is off.

use std::collections::BTreeMap;

use serde::Serialize;

/// Lines in one direction, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Synthesized {
    /// -32001: no response within --request-timeout.
    pub request_timeout: u64,
    /// -32000: the server exited (or was ended) before responding, or was
    /// not running when the request came.
    pub server_exited: u64,
    /// -32000: --max-in-flight requests were already waiting.
    pub too_many_in_flight: u64,
}

/// A request the end of the session cut off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Interrupted {
    /// The request's id, as the client sent it.
    pub id: serde_json::Value,
    pub method: String,
    /// `params.name` of a tools/call or prompts/get.
    pub name: Option<String>,
}

/// The limits the session layer ran under.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SessionLimits {
    /// --request-timeout for any method without its own; null: none.
    pub request_timeout_ms: Option<u64>,
    /// --request-timeout METHOD=DURATION (null: that method has none).
    pub method_timeouts_ms: BTreeMap<String, Option<u64>>,
    pub timeout_resets_on_progress: bool,
    pub max_in_flight: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct McpFacts {
    pub limits: SessionLimits,
    /// From the client (our stdin) to the server.
    pub client: Traffic,
    /// From the server (its stdout, past the guard) to the client.
    pub server: Traffic,
    pub synthesized: Synthesized,
    /// Requests the client cancelled itself (notifications/cancelled).
    pub cancelled_by_client: u64,
    /// Server responses for a request that had already been answered
    /// (timed out): dropped, never a second response for one id.
    pub late_responses_dropped: u64,
    /// Server responses for no request we knew of: passed on.
    pub unmatched_responses: u64,
    /// notifications/cancelled sent to the server on a timeout.
    pub cancellations_sent: u64,
    /// Client requests still waiting when the server went away.
    pub in_flight_at_exit: u64,
    /// The most client requests ever waiting at once.
    pub peak_in_flight: u64,
    pub restarts: u64,
    /// The requests in flight at exit (the first 32).
    pub interrupted: Vec<Interrupted>,
}

/// Most interrupted requests listed by id.
pub const MAX_INTERRUPTED_LISTED: usize = 32;
