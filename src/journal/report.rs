//! What `verify` reports: the first break in the chain and its kind, the
//! head, and the calls and requests that never ended. Plain data, shared
//! by the verifier and its request pairing.

use serde::Serialize;

use crate::shown::untrusted;

/// How the chain broke; written as its name (`HASH_MISMATCH`, …) in text
/// and JSON alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakKind {
    HashMismatch,
    ChainBreak,
    SeqGap,
    SeqOrder,
    TornTail,
    OrphanTerminal,
    DuplicateCall,
    Malformed,
    /// The anchor's `h` is not in the journal: cut, rolled back or rewritten.
    AnchorMissing,
    /// Under a tool gate: a tools/call that reached the server without an
    /// `approved` decision for its exact params, or a decision for other
    /// params than its request's.
    Unapproved,
    /// `--key` was given and the journal is not keyed: it may have been
    /// rewritten whole by someone without the key.
    Unkeyed,
}

impl Serialize for BreakKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl BreakKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BreakKind::HashMismatch => "HASH_MISMATCH",
            BreakKind::ChainBreak => "CHAIN_BREAK",
            BreakKind::SeqGap => "SEQ_GAP",
            BreakKind::SeqOrder => "SEQ_ORDER",
            BreakKind::TornTail => "TORN_TAIL",
            BreakKind::OrphanTerminal => "ORPHAN_TERMINAL",
            BreakKind::DuplicateCall => "DUPLICATE_CALL",
            BreakKind::Malformed => "MALFORMED",
            BreakKind::AnchorMissing => "ANCHOR_MISSING",
            BreakKind::Unapproved => "UNAPPROVED",
            BreakKind::Unkeyed => "UNKEYED",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Break {
    /// 1-based line number.
    pub line: u64,
    pub kind: BreakKind,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unfinished {
    pub line: u64,
    pub call_id: String,
    pub pid: Option<u32>,
    pub ts: String,
    /// A decision entry was written (the call was approved, or not).
    pub decided: bool,
    /// Its intent records a tool gate: every tools/call needs a decision.
    #[serde(skip)]
    pub gated: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Head {
    pub seq: u64,
    pub h: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    pub ok: bool,
    pub entries: u64,
    pub journal_id: Option<String>,
    pub keyed: bool,
    pub head: Option<Head>,
    /// Lines checked and found intact before the first break.
    pub validated_lines: u64,
    #[serde(rename = "break")]
    pub broken: Option<Break>,
    pub anchor: Option<String>,
    pub anchor_found: Option<bool>,
    pub unfinished: Vec<Unfinished>,
    /// Requests whose call ended (or never did) without a response entry.
    pub unfinished_requests: Vec<UnfinishedRequest>,
    /// The last entry is whole but lacks its final newline (a warning).
    pub final_newline_missing: bool,
}

/// What a reader of the journal makes of the verifier's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict<'a> {
    Intact,
    /// Only the last line was cut short by a crash: every entry before
    /// it stands, and the next append accounts for it (a recover entry).
    /// A warning, as `verify` says it.
    TornTail(&'a Break),
    Broken(&'a Break),
}

impl Report {
    /// The verdict of a reader that was handed lines up to `last_seen`:
    /// a torn tail past them is a warning.
    pub fn verdict(&self, last_seen: u64) -> Verdict<'_> {
        match &self.broken {
            Some(torn) if torn.kind == BreakKind::TornTail && torn.line >= last_seen => {
                Verdict::TornTail(torn)
            }
            Some(broken) => Verdict::Broken(broken),
            None => Verdict::Intact,
        }
    }

    /// The verdict in one line, and whether it passes (a torn tail
    /// does, with its warning): what `check` and `report` say of it.
    pub fn said(&self, last_seen: u64) -> (bool, String) {
        let intact = || {
            let head = self
                .head
                .as_ref()
                .map(|h| {
                    let id = untrusted(self.journal_id.as_deref().unwrap_or("?"));
                    format!(", journal {id}, head seq={} h={}", h.seq, h.h)
                })
                .unwrap_or_default();
            format!("{} entries intact{head}", self.entries)
        };
        match self.verdict(last_seen) {
            Verdict::Intact => (true, intact()),
            Verdict::TornTail(torn) => (
                true,
                format!(
                    "{}; warning: line {}: {}",
                    intact(),
                    torn.line,
                    untrusted(&torn.detail)
                ),
            ),
            Verdict::Broken(broken) => (
                false,
                format!(
                    "the chain breaks at line {} ({}: {}); {} lines verified before it; what follows is read, and not verified",
                    broken.line,
                    broken.kind.as_str(),
                    untrusted(&broken.detail),
                    self.validated_lines
                ),
            ),
        }
    }
}

/// A client request (`mcp_request`) with no `mcp_response`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnfinishedRequest {
    pub line: u64,
    pub call_id: String,
    /// The request's id, as JSON text.
    pub request_id: String,
    pub method: String,
    pub ts: String,
    /// The request was answered with a task, whose end (`mcp_task`) never
    /// came.
    pub task: bool,
    /// Its params' SHA-256, and the gate's decision on it (a gated call).
    #[serde(skip)]
    pub params_sha256: Option<String>,
    #[serde(skip)]
    pub decision: Option<crate::record::Decision>,
}
