//! The parts of `Settings`, each resolved from its options and the
//! mode's defaults (`defaults.rs`): the deadline and the stop, the
//! capture, the record, the streams, the session layer with its gate, and
//! the approval. Pure: nothing here can fail.

use std::ffi::OsString;
use std::time::Duration;

use super::defaults::MCP_DEFAULTS;
use super::{
    ApprovalSettings, CaptureSettings, LiveBudget, RecordSettings, StderrLogSettings,
    StreamSettings,
};
use crate::approve;
use crate::cli::{ApproveOn, Cli, GuardMode, SessionMode};
use crate::diagnostics::FloodPath;
use crate::session::{RestartPolicy, SessionPolicy};
use crate::termination::Policy;

/// The deadline and the stop: the mode's defaults where none is given.
pub(super) fn policy(cli: &Cli, session: bool) -> Policy {
    let defaults = MCP_DEFAULTS.of(cli.mcp_mode.mcp);
    let deadline = &cli.deadline;
    Policy {
        timeout: deadline.timeout.filter(|t| !t.is_zero()),
        signal: deadline
            .signal
            .unwrap_or_else(|| crate::contain::default_stop(session)),
        grace: deadline.grace.unwrap_or(defaults.grace),
        wait_delay: deadline.wait_delay.unwrap_or(defaults.wait_delay),
        stdin_close_grace: cli
            .mcp_mode
            .stdin_close_grace
            .or(defaults.stdin_close_grace),
    }
}

/// Where the record goes, and the ids in it.
pub(super) fn record(cli: &Cli, call_id: String) -> RecordSettings {
    let record = &cli.record;
    RecordSettings {
        path: record
            .record
            .as_ref()
            .map(|template| template.fill(&call_id, std::process::id())),
        keep: record
            .record
            .clone()
            .filter(|template| template.has_placeholder())
            .zip(record.record_keep.map(|n| n as usize)),
        fd: record.record_fd.map(|fd| fd as crate::sys::fd::RawFd),
        call_id,
        session_id: record.session_id.clone(),
    }
}

/// What is kept of stderr, and where else it goes. `live`: stderr is
/// forwarded as it arrives.
pub(super) fn capture(cli: &Cli, live: bool) -> CaptureSettings {
    CaptureSettings {
        head_bytes: cli.capture.head_bytes,
        tail_bytes: cli.capture.tail_bytes,
        excerpt_bytes: cli.capture.excerpt_bytes,
        echo: cli.capture.echo,
        // Without splice (macOS) a flood is read: auto has nothing to
        // choose, and an explicit splice is refused (rules.rs). --live and
        // --stderr-log take what they read, so they need every byte read
        // (masked): no moves inside the kernel.
        flood_path: match live || cli.stderr_log.stderr_log.is_some() {
            true => FloodPath::Read,
            false => cli.capture.flood_path.here(),
        },
        log: cli
            .stderr_log
            .stderr_log
            .clone()
            .map(|path| StderrLogSettings {
                path,
                size: cli.stderr_log.stderr_log_size,
                keep: cli.stderr_log.stderr_log_keep,
                timestamps: cli.stderr_log.stderr_log_timestamps,
                optional: cli.stderr_log.stderr_log_optional,
            }),
    }
}

/// The streams: the guard, the session layer and live stderr, each on by
/// its own flag or by the mode's default.
pub(super) fn streams(cli: &Cli) -> StreamSettings {
    let server = &cli.mcp_mode;
    let defaults = MCP_DEFAULTS.of(server.mcp);
    let guard_mode = server.stdout_guard.unwrap_or(defaults.stdout_guard);
    let session_mode = server.session.unwrap_or(match guard_mode {
        GuardMode::Jsonrpc => defaults.session,
        GuardMode::Off => SessionMode::Off,
    });
    StreamSettings {
        session: (session_mode == SessionMode::Jsonrpc).then(|| session_policy(cli)),
        guard: (guard_mode == GuardMode::Jsonrpc).then_some(server.max_message_bytes),
        max_message_bytes: server.max_message_bytes,
        live: server.live.unwrap_or(defaults.live).then_some(LiveBudget {
            rate: server.live_rate,
            burst: server.live_burst as u64,
            window: cli.debug_window.debug_window,
            window_bytes: cli.debug_window.debug_window_bytes,
        }),
    }
}

/// The session layer's policy: deadlines by method, bounds, the audit,
/// the gate, restarts.
fn session_policy(cli: &Cli) -> SessionPolicy {
    let server = &cli.mcp_mode;
    let mut method_timeouts = Vec::new();
    let mut default_timeout = None;
    for each in &server.request_timeout {
        // Zero or inf: none (METHOD=0: that method waits, whatever the
        // default says).
        let timeout = (!each.timeout.is_zero()).then_some(each.timeout);
        match &each.method {
            Some(method) => method_timeouts.push((method.clone(), timeout)),
            None => default_timeout = timeout,
        }
    }
    SessionPolicy {
        default_timeout,
        method_timeouts,
        resets_on_progress: server.request_timeout_resets_on_progress,
        max_in_flight: server.max_in_flight as usize,
        audit: cli.journal.journal_requests,
        journal: cli.journal.journal.is_some(),
        agent_excerpt_bytes: server.agent_excerpt_bytes,
        tools: tool_gate(cli),
        restart: RestartPolicy {
            mode: server.restart,
            max_restarts: server.max_restarts,
            window: server.restart_window,
            backoff: server.restart_backoff,
            max_backoff: Duration::from_secs(10).max(server.restart_backoff),
        },
    }
}

/// The approval before dispatch, when one is asked for.
pub(super) fn approval(cli: &Cli) -> Option<ApprovalSettings> {
    let approval = &cli.approval;
    let method = match (&approval.approve_cmd, approval.approve) {
        (Some(command), _) => {
            approve::Method::Command(command.0.iter().map(OsString::from).collect())
        }
        (None, Some(ApproveOn::Tty)) => approve::Method::Tty,
        (None, None) => return None,
    };
    Some(ApprovalSettings {
        method,
        timeout: approval.approval_timeout,
    })
}

/// The per-tool-call gate, when any part of it is set.
fn tool_gate(cli: &Cli) -> Option<crate::session::ToolGate> {
    let args = &cli.tool_gate;
    args.any().then(|| crate::session::ToolGate {
        allow: args.tool_allow.clone(),
        deny: args.tool_deny.clone(),
        approve: if args.tool_approve.is_empty() {
            vec!["*".to_string()]
        } else {
            args.tool_approve.clone()
        },
        approver: args
            .tool_approve_cmd
            .as_ref()
            .map(|command| crate::session::ApproverCommand {
                argv: command.0.clone(),
            }),
        ask_host: args.tool_approve_via == Some(crate::cli::ApproveVia::Host),
        timeout: args.tool_approval_timeout,
        max_pending: args.max_pending_approvals as usize,
        redact: cli.capture.redact.clone(),
        session_id: cli.record.session_id.clone(),
        server_argv: cli
            .command
            .iter()
            .map(|word| word.to_string_lossy().into_owned())
            .collect(),
        pin: args
            .tool_pin
            .as_ref()
            .map(|file| crate::session::ToolPinning {
                file: file.clone(),
                key: args.tool_pin_key.clone(),
            }),
    })
}
