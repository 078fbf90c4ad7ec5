//! The per-request audit facts the session hands to the journal: a
//! request forwarded, and how it ended.

use serde::Serialize;

/// How a request ended, as its `mcp_response` entry says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestOutcome {
    Result,
    Error,
    TimedOut,
    Cancelled,
    ServerExited,
}

/// One per-request audit fact, for the journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Audit {
    Request {
        /// The id's JSON text, as the client sent it.
        id: String,
        method: String,
        name: Option<String>,
        params_sha256: Option<String>,
    },
    Response {
        id: String,
        method: String,
        outcome: RequestOutcome,
        error_code: Option<i64>,
        duration_ms: u64,
        /// The response's bytes, as the client got it.
        bytes: u64,
    },
}
