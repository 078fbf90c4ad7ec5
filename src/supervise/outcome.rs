//! What the loop is given ([`Config`]) and what it returns ([`Outcome`]).

use std::time::Instant;

use crate::capture::Capture;
use crate::child::ChildExit;
use crate::diagnostics::FloodPath;
use crate::journal::Journal;
use crate::live::LiveBudget;
use crate::record::mcp::McpFacts;
use crate::record::{Event, StdoutFacts, StreamEnd};
use crate::redact::Redactor;
use crate::session::SessionPolicy;
use crate::stderr_log::StderrLog;
use crate::termination::{Cancellation, Policy};

use super::live_out::LiveCounts;

/// Where the helper's stdout goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StdoutMode {
    /// To our stdout; Some(max message bytes): guarded as JSON-RPC lines.
    Forward { guard: Option<usize> },
    /// Into the diagnostics (an approver's stdout is not a result).
    Capture,
}

/// The session layer: our stdin relayed to the server, requests tracked.
pub(crate) struct SessionConfig<'j> {
    pub policy: SessionPolicy,
    /// The call's id, for the answers and the journal entries.
    pub call_id: String,
    /// Where `mcp_request`/`mcp_response` entries go.
    pub journal: Option<&'j Journal>,
    /// Span export: each request that ends becomes a span.
    pub tracer: Option<&'j crate::otel::Tracer>,
    /// The longest client line framed (longer ones stream through).
    pub max_message_bytes: usize,
    /// The server's command and confinement, to start it again.
    pub argv: Vec<std::ffi::OsString>,
    pub confine: crate::child::Confine,
}

pub(crate) struct Config<'j> {
    /// The call's line to its watchdog: each new server's group, and each
    /// reap (after which that group's number may be a stranger's).
    pub watchdog: Option<crate::contain::Link>,
    pub policy: Policy,
    pub head_bytes: usize,
    pub tail_bytes: usize,
    pub flood_path: FloodPath,
    pub stdout: StdoutMode,
    /// Some: forward stderr live under this token bucket.
    pub live: Option<LiveBudget>,
    pub redactor: Redactor,
    /// Some: the helper's stdin is a pipe the session layer feeds (the
    /// helper must be spawned with `StdinFrom::Pipe`).
    pub session: Option<SessionConfig<'j>>,
    /// --stderr-log, opened before dispatch; handed back in the outcome.
    pub stderr_log: Option<StderrLog>,
}

/// What the sweeps did to the helper's tree, for the record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TreeFacts {
    /// Descendants signalled (`descendants_signalled`).
    pub signalled: u32,
    /// The most of this user's processes a sweep's scan for the tree's
    /// mark could not read; None where no sweep scanned for it
    /// (`contain.unreadable`).
    pub unreadable: Option<u32>,
}

#[derive(Debug)]
pub(crate) struct Outcome {
    pub exit: Option<ChildExit>,
    /// The first cancellation that arrived while the helper still ran.
    pub cancelled_while_running: Option<Cancellation>,
    /// The first cancellation at all (also after the helper exited).
    pub cancellation: Option<Cancellation>,
    pub stream_end: StreamEnd,
    pub capture: Capture,
    /// What filled stderr (`repeats`).
    pub repeats: crate::repeats::Repeats,
    pub stdout: StdoutFacts,
    /// What live output did (`unsent`: taken in but never written,
    /// queued at exit).
    pub live: LiveCounts,
    pub events: Vec<Event>,
    pub tree: TreeFacts,
    pub last_stdout: Option<Instant>,
    pub last_stderr: Option<Instant>,
    /// mcp-bound itself failed after dispatch (the tree was killed).
    pub failure: Option<String>,
    /// Our stdin reached EOF while the helper ran: the host hung up.
    pub host_hung_up: bool,
    /// What the session layer saw; None when it was off.
    pub mcp: Option<McpFacts>,
    /// The stderr log, for its end line and facts.
    pub stderr_log: Option<StderrLog>,
}
