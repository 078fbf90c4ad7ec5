//! What clap cannot say about a combination of options, checked on the
//! resolved settings: one that only tunes a feature left off, or two that
//! contradict each other. The rule for an option that needs another: given
//! on the command line without it, it is a usage error (exit 125) that
//! names what it needs; from its `MCP_BOUND_*` variable it is a default,
//! which host configs set broadly, and it is then ignored.
//!
//! The exception is a tool policy (`--tool-allow`, `--tool-deny`,
//! `--tool-approve-cmd`, `--tool-approve-via`, `--tool-approve`): one that cannot be applied is
//! a usage error from any source, its variable named, since a security
//! policy must never be dropped in silence.

use super::Settings;
use crate::cli::{ApproveVia, Cli, Given, SessionMode};
use crate::diagnostics::FloodPath;
use crate::error::{Error, NotStarted};
use crate::record::mcp::RestartMode;
use crate::signals::Stop;

/// A feature an option may tune, as the settings resolved it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Feature {
    Otel,
    Session,
    StderrLog,
    Journal,
    Live,
    Restart,
    Guard,
    ToolPin,
    ToolApprover,
    Approver,
}

impl Feature {
    /// What an option that tunes it needs, as the error says it.
    fn needs(self) -> &'static str {
        match self {
            Feature::StderrLog => "needs --stderr-log",
            Feature::Journal => "needs --journal",
            Feature::Live => "tunes live stderr, which is off: it needs --live (or --mcp)",
            Feature::Restart => {
                "tunes --restart, which is never: it needs --restart on-failure or always"
            }
            Feature::Session => "needs the session layer (--mcp, or --session jsonrpc)",
            Feature::Guard => "needs the stdout guard (--mcp, or --stdout-guard jsonrpc)",
            Feature::Approver => "needs --approve-cmd or --approve",
            Feature::ToolApprover => "needs --tool-approve-cmd or --tool-approve-via host",
            Feature::ToolPin => "names the server in a --tool-pin file, which is not given",
            Feature::Otel => {
                "tunes span export, which is off: it needs --otel on or OTEL_EXPORTER_OTLP_ENDPOINT"
            }
        }
    }

    /// Whether it is on in these settings, however it was turned on.
    /// `--restart` is as asked: without the session layer there is no
    /// restart policy, and `--restart` itself is the option refused.
    fn on(self, settings: &Settings, restart_asked: bool) -> bool {
        let session = settings.streams.session.as_ref();
        let gate = session.and_then(|s| s.tools.as_ref());
        match self {
            Feature::Otel => matches!(settings.otel, crate::otel::Resolved::On(_)),
            Feature::Session => session.is_some(),
            Feature::StderrLog => settings.capture.log.is_some(),
            Feature::Journal => settings.journal.is_some(),
            Feature::Live => settings.streams.live.is_some(),
            Feature::Restart => restart_asked,
            Feature::Guard => settings.streams.guard.is_some(),
            Feature::ToolPin => gate.is_some_and(|gate| gate.pin.is_some()),
            Feature::ToolApprover => {
                gate.is_some_and(|gate| gate.approver.is_some() || gate.ask_host)
            }
            Feature::Approver => settings.approval.is_some(),
        }
    }
}

/// An option that does nothing unless a feature is on.
struct Needs {
    /// The clap id: the long flag with `_` for `-`.
    option: &'static str,
    /// The feature it tunes.
    on: Feature,
    /// A tool policy: refused from its variable too.
    policy: bool,
}

/// Every option that only tunes another feature, checked in this order
/// (the first broken is said); `tests/it/usage.rs` checks each against
/// the binary, and the man page's OPTIONS says the rule.
const DEPENDENT: &[Needs] = &[
    Needs {
        option: "otel_flush_timeout",
        on: Feature::Otel,
        policy: false,
    },
    Needs {
        option: "otel_propagate",
        on: Feature::Session,
        policy: false,
    },
    Needs {
        option: "stderr_log_size",
        on: Feature::StderrLog,
        policy: false,
    },
    Needs {
        option: "stderr_log_keep",
        on: Feature::StderrLog,
        policy: false,
    },
    Needs {
        option: "stderr_log_timestamps",
        on: Feature::StderrLog,
        policy: false,
    },
    Needs {
        option: "stderr_log_optional",
        on: Feature::StderrLog,
        policy: false,
    },
    Needs {
        option: "journal_key",
        on: Feature::Journal,
        policy: false,
    },
    Needs {
        option: "journal_requests",
        on: Feature::Journal,
        policy: false,
    },
    Needs {
        option: "journal_excerpt_bytes",
        on: Feature::Journal,
        policy: false,
    },
    Needs {
        option: "live_rate",
        on: Feature::Live,
        policy: false,
    },
    Needs {
        option: "live_burst",
        on: Feature::Live,
        policy: false,
    },
    Needs {
        option: "debug_window",
        on: Feature::Live,
        policy: false,
    },
    Needs {
        option: "debug_window_bytes",
        on: Feature::Live,
        policy: false,
    },
    Needs {
        option: "restart",
        on: Feature::Session,
        policy: false,
    },
    Needs {
        option: "max_restarts",
        on: Feature::Restart,
        policy: false,
    },
    Needs {
        option: "restart_window",
        on: Feature::Restart,
        policy: false,
    },
    Needs {
        option: "restart_backoff",
        on: Feature::Restart,
        policy: false,
    },
    Needs {
        option: "max_message_bytes",
        on: Feature::Guard,
        policy: false,
    },
    Needs {
        option: "request_timeout",
        on: Feature::Session,
        policy: false,
    },
    Needs {
        option: "request_timeout_resets_on_progress",
        on: Feature::Session,
        policy: false,
    },
    Needs {
        option: "agent_excerpt_bytes",
        on: Feature::Session,
        policy: false,
    },
    Needs {
        option: "max_in_flight",
        on: Feature::Session,
        policy: false,
    },
    Needs {
        option: "tool_allow",
        on: Feature::Session,
        policy: true,
    },
    Needs {
        option: "tool_deny",
        on: Feature::Session,
        policy: true,
    },
    Needs {
        option: "tool_approve_cmd",
        on: Feature::Session,
        policy: true,
    },
    Needs {
        option: "tool_approve_via",
        on: Feature::Session,
        policy: true,
    },
    Needs {
        option: "tool_pin",
        on: Feature::Session,
        policy: true,
    },
    Needs {
        option: "tool_pin_key",
        on: Feature::ToolPin,
        policy: false,
    },
    Needs {
        option: "tool_approve",
        on: Feature::ToolApprover,
        policy: true,
    },
    Needs {
        option: "tool_approval_timeout",
        on: Feature::ToolApprover,
        policy: false,
    },
    Needs {
        option: "max_pending_approvals",
        on: Feature::ToolApprover,
        policy: false,
    },
    Needs {
        option: "approval_timeout",
        on: Feature::Approver,
        policy: false,
    },
];

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

/// The first rule broken, as one line: what the settings cannot mean
/// together, then the options that tune a feature left off.
pub(super) fn check(cli: &Cli, given: &Given, settings: &Settings) -> Result<(), Error> {
    // A command no command line can carry as it is: nothing is started.
    let refused = crate::sys::COMMAND_LINE.and_then(|refused| refused(&settings.command));
    if let Some(refused) = refused {
        return Err(NotStarted::nothing(refused).into());
    }
    combination(cli, given, settings).map_err(Error::Usage)
}

/// The first combination that cannot be meant, as one line.
fn combination(cli: &Cli, given: &Given, settings: &Settings) -> Result<(), String> {
    let backend = crate::sys::BACKEND;
    let session = settings.streams.session.is_some();
    if given.has("record_keep") && settings.record.keep.is_none() {
        return Err("--record-keep keeps the newest records a --record template makes: give --record a placeholder in its file name ({call_id})".into());
    }
    if cli.capture.flood_path == FloodPath::Splice && crate::sys::MOVER.is_none() {
        return Err(format!(
            "--flood-path splice moves a flood inside the kernel, which {} cannot do: use auto or read",
            backend.os
        ));
    }
    if !settings.rlimits.is_empty() && crate::sys::RLIMITS.is_none() {
        return Err(format!(
            "--rlimit: {} has no per-process resource limits",
            backend.os
        ));
    }
    // Without the session layer the helper reads the host's stdin itself;
    // on Windows nothing can wait for that handle's end but a reader.
    if cli.mcp_mode.stdin_close_grace.is_some()
        && !crate::contain::sees_stdin_end_unread()
        && !session
    {
        return Err("--stdin-close-grace watches our stdin for the host's end, which Windows can only see by reading it: it needs the session layer there (--mcp)".into());
    }
    if let Some(refused) = missing_here(cli, given) {
        return Err(refused);
    }
    if let Some(refused) = cli.deadline.signal.and_then(crate::contain::refused_stop) {
        return Err(refused);
    }
    if settings.policy.signal == Stop::Close && !session {
        let source = match given.in_environment("signal") {
            true => "MCP_BOUND_SIGNAL=CLOSE",
            false => "--signal CLOSE",
        };
        return Err(format!(
            "{source} closes the server's stdin, which is mcp-bound's only with the session layer (--mcp, or --session jsonrpc): without it the helper shares the host's stdin"
        ));
    }
    if cli.mcp_mode.session == Some(SessionMode::Jsonrpc) && settings.streams.guard.is_none() {
        return Err("--session jsonrpc reads the server's responses through the stdout guard; it cannot run with --stdout-guard off".into());
    }
    let gate = &cli.tool_gate;
    if gate.tool_approve_via == Some(ApproveVia::Command) && gate.tool_approve_cmd.is_none() {
        return Err("--tool-approve-via command asks --tool-approve-cmd, which is not given: give it, or --tool-approve-via host".into());
    }
    dependent(given, settings, cli.mcp_mode.restart != RestartMode::Never)
}

/// The first option given that tunes a feature left off: from the
/// command line any, from its variable a tool policy.
fn dependent(given: &Given, settings: &Settings, restart_asked: bool) -> Result<(), String> {
    let flag = |each: &Needs| format!("--{}", each.option.replace('_', "-"));
    let off = |each: &&Needs| !each.on.on(settings, restart_asked);
    if let Some(each) = DEPENDENT
        .iter()
        .filter(off)
        .find(|each| given.has(each.option))
    {
        return Err(format!("{} {}", flag(each), each.on.needs()));
    }
    match DEPENDENT
        .iter()
        .filter(off)
        .find(|each| each.policy && given.in_environment(each.option))
    {
        Some(each) => Err(format!(
            "{} sets {}, which {}: a tool policy that cannot be applied is refused, never dropped",
            variable(each.option),
            flag(each),
            each.on.needs()
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
            each.on.needs(),
            each.policy,
        )
    })
}
