//! What clap cannot say about a combination of options: one that only
//! tunes a feature left off, or two that contradict each other. The rule
//! for an option that needs another: given on the command line without
//! it, it is a usage error (exit 125) that names what it needs; from its
//! `MCP_BOUND_*` variable it is a default, which host configs set broadly,
//! and it is then ignored.
//!
//! The exception is a tool policy (`--tool-allow`, `--tool-deny`,
//! `--tool-approve-cmd`, `--tool-approve-via`, `--tool-approve`): one that cannot be applied is
//! a usage error from any source, its variable named, since a security
//! policy must never be dropped in silence.

use super::{Cli, GuardMode, SessionMode};
use crate::record::mcp::RestartMode;

/// The options given, by clap id: on the command line itself, and from
/// their `MCP_BOUND_*` variable (not a default).
pub(super) struct Given {
    command_line: Vec<String>,
    environment: Vec<String>,
}

impl From<&clap::ArgMatches> for Given {
    fn from(matches: &clap::ArgMatches) -> Given {
        use clap::parser::ValueSource;
        let from = |source: ValueSource| {
            matches
                .ids()
                .filter(|id| matches.value_source(id.as_str()) == Some(source))
                .map(|id| id.as_str().to_string())
                .collect()
        };
        Given {
            command_line: from(ValueSource::CommandLine),
            environment: from(ValueSource::EnvVariable),
        }
    }
}

impl Given {
    /// Given on the command line.
    pub(super) fn has(&self, id: &str) -> bool {
        self.command_line.iter().any(|given| given == id)
    }

    /// Given from its variable.
    fn in_environment(&self, id: &str) -> bool {
        self.environment.iter().any(|given| given == id)
    }
}

/// An option that does nothing unless a feature is on.
struct Needs {
    /// The clap id: the long flag with `_` for `-`.
    option: &'static str,
    /// Whether the feature it tunes is on, however it was turned on.
    on: fn(&Cli) -> bool,
    /// What it needs, as the error says it.
    needs: &'static str,
    /// A tool policy: refused from its variable too.
    policy: bool,
}

const STDERR_LOG: &str = "needs --stderr-log";
const JOURNAL: &str = "needs --journal";
const LIVE: &str = "tunes live stderr, which is off: it needs --live (or --mcp)";
const RESTART: &str = "tunes --restart, which is never: it needs --restart on-failure or always";
const SESSION: &str = "needs the session layer (--mcp, or --session jsonrpc)";
const GUARD: &str = "needs the stdout guard (--mcp, or --stdout-guard jsonrpc)";
const APPROVER: &str = "needs --approve-cmd or --approve";
const TOOL_APPROVER: &str = "needs --tool-approve-cmd or --tool-approve-via host";
const TOOL_PIN: &str = "names the server in a --tool-pin file, which is not given";
const OTEL: &str =
    "tunes span export, which is off: it needs --otel on or OTEL_EXPORTER_OTLP_ENDPOINT";

/// Every option that only tunes another feature; `tests/it/usage.rs` checks
/// each against the binary, and the man page's OPTIONS says the rule.
const DEPENDENT: &[Needs] = &[
    Needs {
        option: "otel_flush_timeout",
        on: otel,
        needs: OTEL,
        policy: false,
    },
    Needs {
        option: "otel_propagate",
        on: session,
        needs: SESSION,
        policy: false,
    },
    Needs {
        option: "stderr_log_size",
        on: stderr_log,
        needs: STDERR_LOG,
        policy: false,
    },
    Needs {
        option: "stderr_log_keep",
        on: stderr_log,
        needs: STDERR_LOG,
        policy: false,
    },
    Needs {
        option: "stderr_log_timestamps",
        on: stderr_log,
        needs: STDERR_LOG,
        policy: false,
    },
    Needs {
        option: "stderr_log_optional",
        on: stderr_log,
        needs: STDERR_LOG,
        policy: false,
    },
    Needs {
        option: "journal_key",
        on: journal,
        needs: JOURNAL,
        policy: false,
    },
    Needs {
        option: "journal_requests",
        on: journal,
        needs: JOURNAL,
        policy: false,
    },
    Needs {
        option: "journal_excerpt_bytes",
        on: journal,
        needs: JOURNAL,
        policy: false,
    },
    Needs {
        option: "live_rate",
        on: live,
        needs: LIVE,
        policy: false,
    },
    Needs {
        option: "live_burst",
        on: live,
        needs: LIVE,
        policy: false,
    },
    Needs {
        option: "debug_window",
        on: live,
        needs: LIVE,
        policy: false,
    },
    Needs {
        option: "debug_window_bytes",
        on: live,
        needs: LIVE,
        policy: false,
    },
    Needs {
        option: "max_restarts",
        on: restart,
        needs: RESTART,
        policy: false,
    },
    Needs {
        option: "restart_window",
        on: restart,
        needs: RESTART,
        policy: false,
    },
    Needs {
        option: "restart_backoff",
        on: restart,
        needs: RESTART,
        policy: false,
    },
    Needs {
        option: "max_message_bytes",
        on: guard,
        needs: GUARD,
        policy: false,
    },
    Needs {
        option: "request_timeout",
        on: session,
        needs: SESSION,
        policy: false,
    },
    Needs {
        option: "request_timeout_resets_on_progress",
        on: session,
        needs: SESSION,
        policy: false,
    },
    Needs {
        option: "restart",
        on: session,
        needs: SESSION,
        policy: false,
    },
    Needs {
        option: "agent_excerpt_bytes",
        on: session,
        needs: SESSION,
        policy: false,
    },
    Needs {
        option: "max_in_flight",
        on: session,
        needs: SESSION,
        policy: false,
    },
    Needs {
        option: "tool_allow",
        on: session,
        needs: SESSION,
        policy: true,
    },
    Needs {
        option: "tool_deny",
        on: session,
        needs: SESSION,
        policy: true,
    },
    Needs {
        option: "tool_approve_cmd",
        on: session,
        needs: SESSION,
        policy: true,
    },
    Needs {
        option: "tool_approve_via",
        on: session,
        needs: SESSION,
        policy: true,
    },
    Needs {
        option: "tool_pin",
        on: session,
        needs: SESSION,
        policy: true,
    },
    Needs {
        option: "tool_pin_key",
        on: tool_pin,
        needs: TOOL_PIN,
        policy: false,
    },
    Needs {
        option: "tool_approve",
        on: tool_approver,
        needs: TOOL_APPROVER,
        policy: true,
    },
    Needs {
        option: "tool_approval_timeout",
        on: tool_approver,
        needs: TOOL_APPROVER,
        policy: false,
    },
    Needs {
        option: "max_pending_approvals",
        on: tool_approver,
        needs: TOOL_APPROVER,
        policy: false,
    },
    Needs {
        option: "approval_timeout",
        on: approver,
        needs: APPROVER,
        policy: false,
    },
];

fn stderr_log(cli: &Cli) -> bool {
    cli.stderr_log.stderr_log.is_some()
}

fn journal(cli: &Cli) -> bool {
    cli.journal.journal.is_some()
}

fn live(cli: &Cli) -> bool {
    cli.mcp_mode.live.unwrap_or(cli.mcp_mode.mcp)
}

fn restart(cli: &Cli) -> bool {
    cli.mcp_mode.restart != RestartMode::Never
}

fn guard(cli: &Cli) -> bool {
    let server = &cli.mcp_mode;
    match server.stdout_guard {
        Some(mode) => mode == GuardMode::Jsonrpc,
        None => server.mcp,
    }
}

/// Span export, as resolved with the environment.
fn otel(cli: &Cli) -> bool {
    matches!(cli.otel.resolved, crate::otel::Resolved::On(_))
}

/// As `Settings` resolves it: --session, else on with --mcp and the guard.
/// Whether the session layer runs (--mcp with the guard, or --session
/// jsonrpc).
pub(crate) fn session(cli: &Cli) -> bool {
    let server = &cli.mcp_mode;
    match server.session {
        Some(mode) => mode == SessionMode::Jsonrpc,
        None => server.mcp && guard(cli),
    }
}

fn tool_approver(cli: &Cli) -> bool {
    cli.tool_gate.tool_approve_cmd.is_some() || cli.tool_gate.asks_host()
}

fn tool_pin(cli: &Cli) -> bool {
    cli.tool_gate.tool_pin.is_some()
}

fn approver(cli: &Cli) -> bool {
    cli.approval.approve_cmd.is_some() || cli.approval.approve.is_some()
}

/// An option whose means this system lacks (Windows has no descriptor
/// numbers, no `/dev/tty`, no SIGUSR1), refused rather than ignored.
fn missing_here(cli: &Cli, given: &Given) -> Option<String> {
    let backend = crate::sys::BACKEND;
    let os = backend.os;
    if cli.record.record_fd.is_some() && !backend.numbered_descriptors {
        return Some(format!(
            "--record-fd: {os} gives a process handles, not descriptor numbers: use --record PATH"
        ));
    }
    if cli.approval.approve.is_some() && !backend.terminal {
        return Some(format!(
            "--approve tty: {os} has no terminal mcp-bound can open beside the host's pipes: use --approve-cmd"
        ));
    }
    let window = given.has("debug_window") && !cli.debug_window.debug_window.is_zero();
    if window && !backend.user_signals {
        return Some(format!(
            "--debug-window: {os} has no SIGUSR1 to open a debug window; give 0, or leave it unset"
        ));
    }
    None
}

/// The first rule broken, as one line.
pub(super) fn check(cli: &Cli, given: &Given) -> Result<(), String> {
    let template = cli.record.record.as_ref();
    if given.has("record_keep") && !template.is_some_and(|t| t.has_placeholder()) {
        return Err("--record-keep keeps the newest records a --record template makes: give --record a placeholder in its file name ({call_id})".into());
    }
    if cli.capture.flood_path == crate::diagnostics::FloodPath::Splice
        && !crate::sys::BACKEND.splice
    {
        return Err(format!(
            "--flood-path splice moves a flood inside the kernel, which {} cannot do: use auto or read",
            crate::sys::BACKEND.os
        ));
    }
    if !cli.deadline.rlimit.is_empty() && !crate::sys::BACKEND.rlimits {
        return Err(format!(
            "--rlimit: {} has no per-process resource limits",
            crate::sys::BACKEND.os
        ));
    }
    // Without the session layer the helper reads the host's stdin itself;
    // on Windows nothing can wait for that handle's end but a reader.
    if cli.mcp_mode.stdin_close_grace.is_some() && crate::sys::BACKEND.job && !session(cli) {
        return Err("--stdin-close-grace watches our stdin for the host's end, which Windows can only see by reading it: it needs the session layer there (--mcp)".into());
    }
    if let Some(refused) = missing_here(cli, given) {
        return Err(refused);
    }
    if let Some(refused) = crate::sys::refused_command(&cli.command) {
        return Err(refused);
    }
    if let Some(refused) = cli.deadline.signal.and_then(crate::signals::refused_here) {
        return Err(refused);
    }
    if cli.deadline.signal == Some(crate::signals::Stop::Close) && !session(cli) {
        let source = match given.in_environment("signal") {
            true => "MCP_BOUND_SIGNAL=CLOSE",
            false => "--signal CLOSE",
        };
        return Err(format!(
            "{source} closes the server's stdin, which is mcp-bound's only with the session layer (--mcp, or --session jsonrpc): without it the helper shares the host's stdin"
        ));
    }
    if cli.mcp_mode.session == Some(SessionMode::Jsonrpc) && !guard(cli) {
        return Err("--session jsonrpc reads the server's responses through the stdout guard; it cannot run with --stdout-guard off".into());
    }
    let gate = &cli.tool_gate;
    if gate.tool_approve_via == Some(super::ApproveVia::Command) && gate.tool_approve_cmd.is_none()
    {
        return Err("--tool-approve-via command asks --tool-approve-cmd, which is not given: give it, or --tool-approve-via host".into());
    }
    let flag = |each: &Needs| format!("--{}", each.option.replace('_', "-"));
    if let Some(each) = DEPENDENT
        .iter()
        .find(|each| given.has(each.option) && !(each.on)(cli))
    {
        return Err(format!("{} {}", flag(each), each.needs));
    }
    match DEPENDENT
        .iter()
        .find(|each| each.policy && given.in_environment(each.option) && !(each.on)(cli))
    {
        Some(each) => Err(format!(
            "{} sets {}, which {}: a tool policy that cannot be applied is refused, never dropped",
            variable(each.option),
            flag(each),
            each.needs
        )),
        None => Ok(()),
    }
}

/// The `MCP_BOUND_*` variable of a clap id.
fn variable(option: &str) -> String {
    format!("MCP_BOUND_{}", option.to_ascii_uppercase())
}

/// The options that need another, as (flag, what it needs, whether it is
/// a tool policy, refused from its variable too): for the man page and
/// for the test that checks each against the binary.
pub fn dependent_options() -> impl Iterator<Item = (String, &'static str, bool)> {
    DEPENDENT.iter().map(|each| {
        (
            format!("--{}", each.option.replace('_', "-")),
            each.needs,
            each.policy,
        )
    })
}
