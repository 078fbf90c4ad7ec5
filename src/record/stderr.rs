//! The record's stderr facts: what was seen, kept and forwarded, the
//! repeated lines, the debug windows and the stderr log.

use serde::Serialize;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct StderrFacts {
    pub bytes_seen: u64,
    pub bytes_retained: u64,
    pub truncated: bool,
    pub head_bytes: u64,
    pub tail_bytes: u64,
    /// Marker, head and tail as text; invalid UTF-8 shown as U+FFFD.
    pub excerpt: String,
    /// With --live, in the helper's bytes: forwarded to our stderr as they
    /// came (masked), and dropped over the budget or after our stderr's
    /// reader went away (still in the capture and the counts above).
    pub live_bytes_forwarded: u64,
    pub live_bytes_dropped: u64,
    /// Taken in for live output but still queued at exit, never written.
    /// With --live: bytes_seen = forwarded + dropped + unsent.
    pub live_bytes_unsent: u64,
    /// What filled the stream: its most frequent lines, digits folded to
    /// `#`, masked, most first (`repeats`). Only lines counted twice.
    pub repeats: Vec<Repeat>,
    /// What the repeats counted: every line, or (bytes < bytes_seen) a
    /// sample.
    pub repeats_counted: RepeatsCounted,
    /// The debug windows opened (SIGUSR1), the first 16; later ones are
    /// counted in `debug_windows_not_listed`.
    pub debug_windows: Vec<DebugWindow>,
    pub debug_windows_not_listed: u64,
    /// The time every window was open, listed or not.
    pub debug_windows_open_ms: u64,
}

/// The journal's terminal entry's account of the debug windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct DebugWindowsTotal {
    pub count: u64,
    pub open_ms: u64,
}

/// One of the most frequent stderr lines. `count` over-counts by at most
/// `count_error` (Space-Saving).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Repeat {
    pub line: String,
    pub count: u64,
    pub count_error: u64,
}

/// Why a debug window closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowEnd {
    /// A second SIGUSR1.
    Signal,
    /// --debug-window passed.
    Time,
    /// It let --debug-window-bytes through.
    Bytes,
    /// The call ended while it was open.
    Exit,
}

/// How a debug window was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowOpener {
    Signal,
}

/// One debug window: live stderr without the rate limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct DebugWindow {
    pub opened_at: String,
    pub closed_at: String,
    pub by: WindowOpener,
    pub closed_by: WindowEnd,
    /// The helper's stderr bytes it let through.
    pub bytes_forwarded: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RepeatsCounted {
    pub lines: u64,
    pub bytes: u64,
}

/// --stderr-log: what reached the log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct StderrLogFacts {
    /// The file written: PATH, or PATH.<pid> when PATH was in use.
    pub path: String,
    /// Bytes written to the log files (masked, markers and times included).
    pub bytes_written: u64,
    /// Bytes that never reached the log (it could not keep up, or failed).
    pub bytes_dropped: u64,
    pub rotations: u64,
    /// Why the log stopped, or could not be opened (with
    /// --stderr-log-optional); null when it did not.
    pub error: Option<String>,
}
