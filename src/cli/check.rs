//! What clap cannot say about a combination of options: one that only
//! tunes a feature left off, or two that contradict each other. The rule
//! for an option that needs another: given on the command line without
//! it, it is a usage error (exit 125) that names what it needs; from its
//! `MCP_BOUND_*` variable it is a default, which host configs set broadly,
//! and it is then ignored.

use super::{Cli, GuardMode, SessionMode};
use crate::record::mcp::RestartMode;

/// The options given on the command line itself (not from the
/// environment, not a default), by clap id.
pub(super) struct Given(Vec<String>);

impl From<&clap::ArgMatches> for Given {
    fn from(matches: &clap::ArgMatches) -> Given {
        Given(
            matches
                .ids()
                .filter(|id| {
                    matches.value_source(id.as_str())
                        == Some(clap::parser::ValueSource::CommandLine)
                })
                .map(|id| id.as_str().to_string())
                .collect(),
        )
    }
}

impl Given {
    pub(super) fn has(&self, id: &str) -> bool {
        self.0.iter().any(|given| given == id)
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
}

const STDERR_LOG: &str = "needs --stderr-log";
const JOURNAL: &str = "needs --journal";
const LIVE: &str = "tunes live stderr, which is off: it needs --live (or --mcp)";
const RESTART: &str = "tunes --restart, which is never: it needs --restart on-failure or always";
const SESSION: &str = "needs the session layer (--mcp, or --session jsonrpc)";
const GUARD: &str = "needs the stdout guard (--mcp, or --stdout-guard jsonrpc)";
const APPROVER: &str = "needs --approve-cmd or --approve";
const TOOL_APPROVER: &str = "needs --tool-approve-cmd";
const OTEL: &str =
    "tunes span export, which is off: it needs --otel on or OTEL_EXPORTER_OTLP_ENDPOINT";

/// Every option that only tunes another feature; `tests/cli.rs` checks
/// each against the binary, and the man page's OPTIONS says the rule.
const DEPENDENT: &[Needs] = &[
    Needs {
        option: "otel_flush_timeout",
        on: otel,
        needs: OTEL,
    },
    Needs {
        option: "otel_propagate",
        on: session,
        needs: SESSION,
    },
    Needs {
        option: "stderr_log_size",
        on: stderr_log,
        needs: STDERR_LOG,
    },
    Needs {
        option: "stderr_log_keep",
        on: stderr_log,
        needs: STDERR_LOG,
    },
    Needs {
        option: "stderr_log_timestamps",
        on: stderr_log,
        needs: STDERR_LOG,
    },
    Needs {
        option: "stderr_log_optional",
        on: stderr_log,
        needs: STDERR_LOG,
    },
    Needs {
        option: "journal_key",
        on: journal,
        needs: JOURNAL,
    },
    Needs {
        option: "journal_requests",
        on: journal,
        needs: JOURNAL,
    },
    Needs {
        option: "journal_excerpt_bytes",
        on: journal,
        needs: JOURNAL,
    },
    Needs {
        option: "live_rate",
        on: live,
        needs: LIVE,
    },
    Needs {
        option: "live_burst",
        on: live,
        needs: LIVE,
    },
    Needs {
        option: "debug_window",
        on: live,
        needs: LIVE,
    },
    Needs {
        option: "debug_window_bytes",
        on: live,
        needs: LIVE,
    },
    Needs {
        option: "max_restarts",
        on: restart,
        needs: RESTART,
    },
    Needs {
        option: "restart_window",
        on: restart,
        needs: RESTART,
    },
    Needs {
        option: "restart_backoff",
        on: restart,
        needs: RESTART,
    },
    Needs {
        option: "max_message_bytes",
        on: guard,
        needs: GUARD,
    },
    Needs {
        option: "request_timeout",
        on: session,
        needs: SESSION,
    },
    Needs {
        option: "request_timeout_resets_on_progress",
        on: session,
        needs: SESSION,
    },
    Needs {
        option: "restart",
        on: session,
        needs: SESSION,
    },
    Needs {
        option: "agent_excerpt_bytes",
        on: session,
        needs: SESSION,
    },
    Needs {
        option: "max_in_flight",
        on: session,
        needs: SESSION,
    },
    Needs {
        option: "tool_allow",
        on: session,
        needs: SESSION,
    },
    Needs {
        option: "tool_deny",
        on: session,
        needs: SESSION,
    },
    Needs {
        option: "tool_approve_cmd",
        on: session,
        needs: SESSION,
    },
    Needs {
        option: "tool_approve",
        on: tool_approver,
        needs: TOOL_APPROVER,
    },
    Needs {
        option: "tool_approval_timeout",
        on: tool_approver,
        needs: TOOL_APPROVER,
    },
    Needs {
        option: "max_pending_approvals",
        on: tool_approver,
        needs: TOOL_APPROVER,
    },
    Needs {
        option: "approval_timeout",
        on: approver,
        needs: APPROVER,
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
fn session(cli: &Cli) -> bool {
    let server = &cli.mcp_mode;
    match server.session {
        Some(mode) => mode == SessionMode::Jsonrpc,
        None => server.mcp && guard(cli),
    }
}

fn tool_approver(cli: &Cli) -> bool {
    cli.tool_gate.tool_approve_cmd.is_some()
}

fn approver(cli: &Cli) -> bool {
    cli.approval.approve_cmd.is_some() || cli.approval.approve.is_some()
}

/// The first rule broken, as one line.
pub(super) fn check(cli: &Cli, given: &Given) -> Result<(), String> {
    let template = cli.record.record.as_ref();
    if given.has("record_keep") && !template.is_some_and(|t| t.has_placeholder()) {
        return Err("--record-keep keeps the newest records a --record template makes: give --record a placeholder in its file name ({call_id})".into());
    }
    if cli.mcp_mode.session == Some(SessionMode::Jsonrpc) && !guard(cli) {
        return Err("--session jsonrpc reads the server's responses through the stdout guard; it cannot run with --stdout-guard off".into());
    }
    match DEPENDENT
        .iter()
        .find(|each| given.has(each.option) && !(each.on)(cli))
    {
        Some(each) => Err(format!(
            "--{} {}",
            each.option.replace('_', "-"),
            each.needs
        )),
        None => Ok(()),
    }
}

/// The options that need another, as (flag, what it needs): for the
/// man page and for the test that checks each against the binary.
pub fn dependent_options() -> impl Iterator<Item = (String, &'static str)> {
    DEPENDENT
        .iter()
        .map(|each| (format!("--{}", each.option.replace('_', "-")), each.needs))
}
