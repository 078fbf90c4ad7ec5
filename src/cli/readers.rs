//! The subcommands, each shadowing a helper of the same name run
//! without `--`: `verify`, `log`, `check` and `report` read a journal,
//! `pin` a --tool-pin file.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::texts::VERIFY_AFTER_HELP;

/// The subcommands' names: a usage error after one is the
/// subcommand's (exit 2), not the run's (exit 125).
pub(crate) const SUBCOMMANDS: [&str; 5] = ["verify", "log", "check", "report", "pin"];

#[derive(Subcommand, Debug)]
pub(crate) enum Sub {
    /// Check a journal offline: hashes, chain, order, pairing. Exit 0 intact (warnings allowed), 1
    /// integrity failure, 2 usage or I/O error.
    #[command(after_help = VERIFY_AFTER_HELP)]
    Verify(VerifyArgs),
    /// Read a journal as it is verified: one line per call (time, call, session, state, exit,
    /// duration, stderr seen/kept, approval, its MCP requests, the command), or per session. Exit 0,
    /// 1 the chain is broken (the rows after the break are marked !), 2 usage or I/O error.
    Log(LogArgs),
    /// Check a journal against the run expected of it: tools called or not, durations, end states,
    /// approvals, and a lifecycle in order (--expect FILE). Exit 0 every expectation holds, 1 one
    /// does not (or the chain is broken), 2 usage or I/O error.
    Check(CheckArgs),
    /// Write one self-contained HTML file of a journal: a timeline per session, the calls and tool
    /// calls in sortable tables, p50/p95/p99 per tool, stderr seen against kept, and the verify
    /// result. Exit 0, 1 the chain is broken (the report says where), 2 usage or I/O error.
    Report(ReportArgs),
    /// List a --tool-pin file's pins and what drifted from them; --accept NAME@SHA256 trusts the
    /// definition seen for NAME whose sha256 that is. Exit 0 nothing waits to be accepted, 1
    /// something does, 2 usage or I/O error.
    Pin(PinArgs),
}

/// The journal a reader reads, with its key and an anchor: one
/// definition, flattened into each reader.
#[derive(Args, Debug)]
pub(crate) struct JournalArgs {
    /// The journal file.
    #[arg(value_name = "JOURNAL")]
    pub journal: PathBuf,

    /// A head h recorded earlier (from "OK: ... h=<hex>"): it must still be in the journal.
    #[arg(long, value_name = "HEX", value_parser = parse_anchor)]
    pub anchor: Option<String>,

    /// The key of a keyed journal (private: ours or root's, mode 0600 or stricter).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub(crate) struct LogArgs {
    #[command(flatten)]
    pub source: JournalArgs,

    /// One line per session: its calls, first and last time, ends by state, restarts, tool calls.
    #[arg(long)]
    pub sessions: bool,

    /// One call's whole lifecycle, an entry a line (with --json, the entries themselves).
    #[arg(long, value_name = "ID", conflicts_with = "sessions")]
    pub call: Option<String>,

    /// JSON Lines of the same rows (schema/log.schema.json).
    #[arg(long)]
    pub json: bool,

    /// Do not cut lines at the terminal's width.
    #[arg(long)]
    pub wide: bool,

    /// Only calls whose intent is at or after TIME: RFC 3339, or a duration ago (1h).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,

    /// Only calls whose intent is at or before TIME: RFC 3339, or a duration ago.
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,

    /// Only the calls of this session id.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,

    /// Only calls that ended in this state (unfinished: no terminal entry).
    #[arg(long, value_name = "STATE", value_parser = a_state_or_unfinished)]
    pub state: Option<String>,

    /// Only calls in which a tool matching this glob was called (reached the server).
    #[arg(long, value_name = "GLOB")]
    pub tool: Option<String>,

    /// One line per MCP request journaled instead of per call: its call, id, method, the gate's
    /// decision, outcome, duration and tool (--since, --until, --session and --tool apply to it).
    #[arg(long, conflicts_with_all = ["sessions", "call", "state"])]
    pub requests: bool,

    /// Follow: show the calls as they end, as tail -f does; a replaced or truncated journal is
    /// noticed and read from its start.
    #[arg(short = 'f', long, conflicts_with_all = ["sessions", "call"])]
    pub follow: bool,
}

#[derive(Args, Debug)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    pub source: JournalArgs,

    /// A tool matching this glob was called: a call to it reached the server (a denial is not a
    /// call). Repeatable.
    #[arg(long, value_name = "GLOB")]
    pub expect_tool: Vec<String>,

    /// No tool matching this glob was called (a denial is not a call). Repeatable.
    #[arg(long, value_name = "GLOB")]
    pub forbid_tool: Vec<String>,

    /// No call took longer than DUR (with --requests, no MCP request); the worst offender is
    /// named.
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration)]
    pub max_duration: Option<std::time::Duration>,

    /// --max-duration applies to each MCP request rather than to each call.
    #[arg(long, requires = "max_duration")]
    pub requests: bool,

    /// Every call ended in this state (completed, timed_out, shut_down, ...).
    #[arg(long, value_name = "STATE", value_parser = a_state)]
    pub expect_state: Option<String>,

    /// Every call has its terminal entry.
    #[arg(long)]
    pub no_unfinished: bool,

    /// Every tool call that reached the server was approved by the gate (an mcp_decision), and
    /// none was left waiting for a decision.
    #[arg(long)]
    pub no_unapproved: bool,

    /// A JSON file of the lifecycle one call should produce, matched in order (see the man page).
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,

    /// Only calls whose intent is at or after TIME: RFC 3339, or a duration ago (1h).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,

    /// Only calls whose intent is at or before TIME: RFC 3339, or a duration ago.
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,

    /// text (a line per expectation) or junit (one testcase per expectation, for CI).
    #[arg(long, value_name = "FORMAT", value_enum, default_value = "text")]
    pub format: CheckFormat,
}

/// How `check` writes its results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CheckFormat {
    Text,
    Junit,
}

#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    #[command(flatten)]
    pub source: JournalArgs,

    /// Where the HTML goes (replaced atomically); - for stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: PathBuf,
}

#[derive(Args, Debug)]
pub(crate) struct PinArgs {
    /// The pin file (--tool-pin).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// Trust the latest definition seen for this tool, bound to the sha256 shown for it: at
    /// least its first 8 hex digits, split from NAME at the last @ (repeatable).
    #[arg(long, value_name = "NAME@SHA256")]
    pub accept: Vec<String>,

    /// The server's key, when a tool of that name waits under several.
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,

    /// Print the file's pins as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub(crate) struct VerifyArgs {
    #[command(flatten)]
    pub source: JournalArgs,

    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

fn parse_anchor(text: &str) -> Result<String, String> {
    let hex = text.trim().to_ascii_lowercase();
    if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(hex)
    } else {
        Err("an anchor is 64 hex digits (the h printed by verify)".into())
    }
}

/// A state as the record names one (`record::State`), kept as written.
fn a_state(text: &str) -> Result<String, String> {
    serde_json::from_value::<crate::record::State>(serde_json::Value::from(text))
        .map(|_| text.to_string())
        .map_err(|refused| refused.to_string())
}

/// A state, or `unfinished` (no terminal entry).
fn a_state_or_unfinished(text: &str) -> Result<String, String> {
    match text {
        "unfinished" => Ok(text.to_string()),
        _ => a_state(text).map_err(|refused| format!("{refused}, or `unfinished`")),
    }
}
