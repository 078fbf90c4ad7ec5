//! The MCP server mode and session layer options groups.

use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::{Args, ValueEnum};

use super::{GuardMode, positive_bytes, positive_capture_bytes, positive_duration};
use crate::units;

/// MCP server mode options.
#[derive(Args, Debug)]
pub(crate) struct McpArgs {
    /// MCP stdio server mode (what it turns on is `settings::defaults`' table, and `docs` says it
    /// here).
    #[arg(long, env = "MCP_BOUND_MCP", value_parser = BoolishValueParser::new(), default_value_t = false, num_args = 0, default_missing_value = "true", help_heading = "MCP server mode options")]
    pub mcp: bool,

    /// Let through only complete stdout lines that are one JSON object; divert everything else into
    /// the stderr capture.
    #[arg(
        long,
        value_name = "MODE",
        env = "MCP_BOUND_STDOUT_GUARD",
        value_enum,
        help_heading = "MCP server mode options"
    )]
    pub stdout_guard: Option<GuardMode>,

    /// With the guard, a longer stdout line is diverted, never held (at least 1).
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_MAX_MESSAGE_BYTES", default_value = "16MiB", value_parser = positive_capture_bytes, help_heading = "MCP server mode options")]
    pub max_message_bytes: usize,

    /// Forward the helper's stderr to ours as it arrives, within --live-rate and --live-burst;
    /// drops are counted and announced.
    #[arg(long, value_name = "BOOL", env = "MCP_BOUND_LIVE", value_parser = BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "true", require_equals = true, help_heading = "MCP server mode options")]
    pub live: Option<bool>,

    /// Live stderr budget: bytes per second (at least 1; --live=false turns live output off).
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_LIVE_RATE", default_value = "16KiB", value_parser = positive_bytes, help_heading = "MCP server mode options")]
    pub live_rate: u64,

    /// Live stderr budget: most bytes at once (also the bound on what waits to be written).
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_LIVE_BURST", default_value = "256KiB", value_parser = units::parse_capture_bytes, help_heading = "MCP server mode options")]
    pub live_burst: usize,

    /// After our stdin closes (the MCP shutdown), give the helper this long to exit before
    /// terminating it.
    #[arg(long, value_name = "DURATION", env = "MCP_BOUND_STDIN_CLOSE_GRACE", value_parser = units::parse_duration, help_heading = "MCP server mode options")]
    pub stdin_close_grace: Option<Duration>,

    /// The session layer: relay our stdin to the server line by line, track each request, answer
    /// for the server when it cannot (timeouts, a crash); off: the helper inherits our stdin.
    #[arg(
        long,
        value_name = "MODE",
        env = "MCP_BOUND_SESSION",
        value_enum,
        help_heading = "MCP session options"
    )]
    pub session: Option<SessionMode>,

    /// Answer a request with no response in time with error -32001, and send the server
    /// notifications/cancelled; its late response is dropped. METHOD=DURATION sets one method's
    /// (repeatable); 0 or inf: none. The default times calls: not a subscriptions/listen stream nor
    /// a 2025 tasks/result, which wait by design, nor initialize and server/discover, which wait on
    /// the server's start and which the host times (a method's own value still applies to them).
    #[arg(long, value_name = "[METHOD=]DURATION", env = "MCP_BOUND_REQUEST_TIMEOUT", value_delimiter = ',', value_parser = parse_request_timeout, help_heading = "MCP session options")]
    pub request_timeout: Vec<RequestTimeout>,

    /// A notifications/progress for a request starts its --request-timeout again.
    #[arg(long, env = "MCP_BOUND_REQUEST_TIMEOUT_RESETS_ON_PROGRESS", value_parser = BoolishValueParser::new(), default_value_t = false, num_args = 0, default_missing_value = "true", help_heading = "MCP session options")]
    pub request_timeout_resets_on_progress: bool,

    /// Most bytes of the server's last stderr lines (masked) in the message of an error mcp-bound
    /// answers for it (the server gone, a request timed out: then what it wrote while the request
    /// ran), whole lines where possible; some hosts show the model only error.message.
    /// data.mcp_bound.stderr_tail is kept whole. 0: none; at most 2K.
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_AGENT_EXCERPT_BYTES", default_value = "1024", value_parser = parse_agent_excerpt_bytes, help_heading = "MCP session options")]
    pub agent_excerpt_bytes: usize,

    /// Most client requests waiting for the server at once; past it, a request is answered with an
    /// error at once (at least 1).
    #[arg(long, value_name = "N", env = "MCP_BOUND_MAX_IN_FLIGHT", default_value = "4096", value_parser = clap::value_parser!(u32).range(1..), help_heading = "MCP session options")]
    pub max_in_flight: u32,

    /// Start the server again when it exits on its own: never, on-failure (non-zero exit or a
    /// signal) or always. Requests in flight are answered (-32000), never re-sent; a legacy
    /// client's initialize is replayed (a 2026-07-28 session has none). Never after stdin EOF, a
    /// signal from the host or --timeout.
    #[arg(
        long,
        value_name = "WHEN",
        env = "MCP_BOUND_RESTART",
        value_enum,
        default_value = "never",
        help_heading = "MCP session options"
    )]
    pub restart: crate::record::mcp::RestartMode,

    /// Most restarts within --restart-window; past it the session ends with the server.
    #[arg(
        long,
        value_name = "N",
        env = "MCP_BOUND_MAX_RESTARTS",
        default_value = "5",
        help_heading = "MCP session options"
    )]
    pub max_restarts: u32,

    /// The window --max-restarts counts in.
    #[arg(long, value_name = "DURATION", env = "MCP_BOUND_RESTART_WINDOW", default_value = "60s", value_parser = positive_duration, help_heading = "MCP session options")]
    pub restart_window: Duration,

    /// The wait before the first restart in the window; each further one doubles it, up to 10s.
    #[arg(long, value_name = "DURATION", env = "MCP_BOUND_RESTART_BACKOFF", default_value = "250ms", value_parser = units::parse_duration, help_heading = "MCP session options")]
    pub restart_backoff: Duration,
}

/// Whether the session layer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SessionMode {
    Off,
    Jsonrpc,
}

/// One --request-timeout: for one method, or (None) for any other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestTimeout {
    pub method: Option<String>,
    /// Zero: no timeout.
    pub timeout: Duration,
}

/// Bytes of an answer's stderr excerpt: at most the tail a crash answer
/// carries.
fn parse_agent_excerpt_bytes(text: &str) -> Result<usize, String> {
    let bytes = crate::units::parse_capture_bytes(text)?;
    if bytes > 2048 {
        return Err(format!(
            "'{text}' is more than the 2K of stderr an answer carries"
        ));
    }
    Ok(bytes)
}

fn parse_request_timeout(text: &str) -> Result<RequestTimeout, String> {
    let (method, duration) = match text.split_once('=') {
        Some(("", _)) => {
            return Err("a method name goes before '='".into());
        }
        Some((method, duration)) => (Some(method.to_string()), duration),
        None => (None, text),
    };
    Ok(RequestTimeout {
        method,
        timeout: units::parse_timeout(duration)?,
    })
}

/// The debug window: live stderr without its rate limit, for a while.
#[derive(Args, Debug)]
pub(crate) struct DebugWindowArgs {
    /// SIGUSR1 to mcp-bound opens a debug window this long: live stderr is not rate-limited (still
    /// masked, within --debug-window-bytes); a second SIGUSR1 closes it. 0: SIGUSR1 is refused. The
    /// record lists each window.
    #[arg(long, value_name = "DURATION", env = "MCP_BOUND_DEBUG_WINDOW", default_value = "5m", value_parser = units::parse_duration, help_heading = "MCP server mode options")]
    pub debug_window: Duration,

    /// Most bytes of the helper's stderr one debug window lets through; past it the budget returns.
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_DEBUG_WINDOW_BYTES", default_value = "64MiB", value_parser = positive_bytes, help_heading = "MCP server mode options")]
    pub debug_window_bytes: u64,
}
