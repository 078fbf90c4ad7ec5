//! The record's `otel`: what span export did. The record is written
//! before the last flush; with --record it is written again after it, so
//! the file says what the flush sent (`spans_pending` says what was not
//! known yet wherever the first writing is all there is: --record-fd).

use serde::Serialize;

/// What span export did, as known when the record was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct OtelFacts {
    /// Where the spans go; null when export was not usable.
    pub endpoint: Option<String>,
    /// --otel-propagate: requests reached the server with mcp-bound's
    /// `traceparent` in their `_meta` (their params_sha256 is still of
    /// what the client sent).
    pub propagate: bool,
    pub spans_queued: u64,
    pub spans_exported: u64,
    /// Queued, and neither exported nor failed when the record was
    /// written: the last flush may yet send them (0 after it, unless it
    /// ran out of time).
    pub spans_pending: u64,
    pub spans_dropped: u64,
    /// The first thing that went wrong (a setting not usable, the
    /// collector down or refusing); null when nothing did.
    pub error: Option<String>,
}
