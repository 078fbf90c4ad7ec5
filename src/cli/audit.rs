//! The approval and audit options: the gate before dispatch
//! (`--approve-cmd`, `--approve`) and the hash-chained journal. The
//! subcommands that read a journal are in `readers`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::positive_duration;
use crate::units;

/// Approval options: the gate before dispatch.
#[derive(Args, Debug)]
pub(crate) struct ApprovalArgs {
    /// Before the helper starts, run COMMAND (split into words like a shell does; no shell is run)
    /// with the call as one JSON object on its stdin; exit 0 approves, anything else denies. It
    /// runs in its own process group, bounded, and is terminated at the deadline.
    #[arg(long, value_name = "COMMAND", env = "MCP_BOUND_APPROVE_CMD", value_parser = parse_command_line, conflicts_with = "approve", help_heading = "Approval options")]
    pub approve_cmd: Option<CommandLine>,

    /// Before the helper starts, ask on the controlling terminal (/dev/tty, never stdin or stdout);
    /// the default answer is no.
    #[arg(
        long,
        value_name = "WHERE",
        env = "MCP_BOUND_APPROVE",
        value_enum,
        help_heading = "Approval options"
    )]
    pub approve: Option<ApproveOn>,

    /// Wall-clock deadline for the approval, from the request; nothing extends it. When it passes,
    /// the call is denied as expired (exit 77).
    #[arg(long, value_name = "DURATION", env = "MCP_BOUND_APPROVAL_TIMEOUT", default_value = "60s", value_parser = positive_duration, help_heading = "Approval options")]
    pub approval_timeout: Duration,
}

/// The per-tool-call gate, under the session layer.
#[derive(Args, Debug)]
pub(crate) struct ToolGateArgs {
    /// Let through only the tools/call whose tool (params.name, as the server knows it) matches one
    /// of these globs (* and ?; comma-separated, repeatable); the others are denied and removed
    /// from tools/list.
    #[arg(long, value_name = "PATTERNS", env = "MCP_BOUND_TOOL_ALLOW", value_delimiter = ',', value_parser = parse_pattern, help_heading = "Tool call gate options")]
    pub tool_allow: Vec<String>,

    /// Deny the tools/call whose tool matches one of these globs, and remove those tools from
    /// tools/list; deny wins over --tool-allow. A denied call never reaches the server: the client
    /// gets error -32000 (reason tool_denied).
    #[arg(long, value_name = "PATTERNS", env = "MCP_BOUND_TOOL_DENY", value_delimiter = ',', value_parser = parse_pattern, help_heading = "Tool call gate options")]
    pub tool_deny: Vec<String>,

    /// Before each tools/call the policy allows and --tool-approve matches reaches the server, run
    /// COMMAND (split like a shell; no shell) with the call as one JSON object on its stdin (tool,
    /// arguments, params_sha256, request_id, call_id, session_id, argv); exit 0 approves, anything
    /// else denies, its first output line saying why. Other requests keep flowing while it decides.
    #[arg(long, value_name = "COMMAND", env = "MCP_BOUND_TOOL_APPROVE_CMD", value_parser = parse_command_line, help_heading = "Tool call gate options")]
    pub tool_approve_cmd: Option<CommandLine>,

    /// Who decides the calls --tool-approve matches: command (--tool-approve-cmd) or host (the
    /// person, asked through the client with an MCP elicitation, or in 2026-07-28 an input_required
    /// answer with a sealed requestState; when the client cannot be asked, --tool-approve-cmd
    /// decides if given, else the call is denied) [default: command].
    #[arg(
        long,
        value_name = "WHO",
        env = "MCP_BOUND_TOOL_APPROVE_VIA",
        value_enum,
        help_heading = "Tool call gate options"
    )]
    pub tool_approve_via: Option<ApproveVia>,

    /// Which tools are asked about (--tool-approve-cmd or --tool-approve-via host; globs,
    /// comma-separated, repeatable) [default: *].
    #[arg(long, value_name = "PATTERNS", env = "MCP_BOUND_TOOL_APPROVE", value_delimiter = ',', value_parser = parse_pattern, help_heading = "Tool call gate options")]
    pub tool_approve: Vec<String>,

    /// Wall-clock deadline for one call's approval, from the call's arrival; nothing extends it. At
    /// it the approver's tree gets TERM and KILL together, and the call is answered -32000 (reason
    /// tool_approval_expired), never sent.
    #[arg(long, value_name = "DURATION", env = "MCP_BOUND_TOOL_APPROVAL_TIMEOUT", default_value = "60s", value_parser = positive_duration, help_heading = "Tool call gate options")]
    pub tool_approval_timeout: Duration,

    /// Most calls waiting for approval at once; past it a call is answered -32000 at once (reason
    /// too_many_pending_approvals).
    #[arg(long, value_name = "N", env = "MCP_BOUND_MAX_PENDING_APPROVALS", default_value = "16", value_parser = clap::value_parser!(u32).range(1..=1024), help_heading = "Tool call gate options")]
    pub max_pending_approvals: u32,

    /// Hold the server to the tools first trusted: the first complete tools/list (every page) is
    /// pinned in FILE (per tool, a digest of its whole object but name); later, a tool that
    /// differs from its pin, or has none, is hidden from tools/list, its calls answered -32000
    /// (reason tool_changed), and journaled (mcp_tool_drift), until `mcp-bound pin FILE --accept
    /// NAME@SHA256`.
    #[arg(
        long,
        value_name = "FILE",
        env = "MCP_BOUND_TOOL_PIN",
        help_heading = "Tool call gate options"
    )]
    pub tool_pin: Option<PathBuf>,

    /// The server's key in the --tool-pin file [default: its command, each word masked].
    #[arg(long, value_name = "NAME", env = "MCP_BOUND_TOOL_PIN_KEY", value_parser = parse_pattern, help_heading = "Tool call gate options")]
    pub tool_pin_key: Option<String>,
}

/// Who decides a tool call `--tool-approve` matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ApproveVia {
    /// `--tool-approve-cmd`.
    Command,
    /// The person, through the client (MCP elicitation).
    Host,
}

impl ToolGateArgs {
    /// Any part of a gate is set.
    pub(crate) fn any(&self) -> bool {
        !self.tool_allow.is_empty()
            || !self.tool_deny.is_empty()
            || self.tool_approve_cmd.is_some()
            || self.asks_host()
            || self.tool_pin.is_some()
    }

    /// `--tool-approve-via host`.
    pub(crate) fn asks_host(&self) -> bool {
        self.tool_approve_via == Some(ApproveVia::Host)
    }
}

/// One glob: not empty, blanks around it trimmed.
fn parse_pattern(text: &str) -> Result<String, String> {
    match text.trim() {
        "" => Err("an empty pattern".into()),
        pattern => Ok(pattern.to_string()),
    }
}

/// Journal options: the hash-chained audit trail.
#[derive(Args, Debug)]
pub(crate) struct JournalWriteArgs {
    /// Append an intent (before dispatch, synced) and a terminal entry to this hash-chained
    /// journal. If the intent cannot be written, the helper is not started.
    #[arg(
        long,
        value_name = "PATH",
        env = "MCP_BOUND_JOURNAL",
        help_heading = "Journal options"
    )]
    pub journal: Option<PathBuf>,

    /// Most bytes of stderr excerpt in the journal's terminal entry; 0 for none.
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_JOURNAL_EXCERPT_BYTES", default_value = "1024", value_parser = units::parse_capture_bytes, help_heading = "Journal options")]
    pub journal_excerpt_bytes: usize,

    /// Key the journal: h becomes HMAC-SHA256 with the key in FILE (at least 16 bytes; ours or
    /// root's, private: mode 0600 or stricter), so an append forged without the key fails
    /// verification.
    #[arg(
        long,
        value_name = "FILE",
        env = "MCP_BOUND_JOURNAL_KEY",
        help_heading = "Journal options"
    )]
    pub journal_key: Option<PathBuf>,

    /// Under the session layer, which client requests get an mcp_request entry (synced before the
    /// request reaches the server) and an mcp_response entry: tools (tools/call, resources/read,
    /// prompts/get), all, or none.
    #[arg(
        long,
        value_name = "WHICH",
        env = "MCP_BOUND_JOURNAL_REQUESTS",
        value_enum,
        default_value = "tools",
        help_heading = "Journal options"
    )]
    pub journal_requests: crate::session::AuditRequests,
}

/// Where --approve asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ApproveOn {
    Tty,
}

/// A command line split into words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommandLine(pub Vec<String>);

fn parse_command_line(text: &str) -> Result<CommandLine, String> {
    match shlex::split(text) {
        Some(words) if !words.is_empty() => Ok(CommandLine(words)),
        Some(_) => Err("empty command".into()),
        None => Err("unbalanced quotes".into()),
    }
}
