//! Everything a call needs from the command line, resolved once: defaults
//! that depend on the mode (`--mcp`), the guard, the live budget, the
//! approval method. This is ripgrep's `HiArgs` step: past
//! `Settings::from(&Cli)` nothing reads `Cli`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::approve;
use crate::cli::{ApproveOn, Cli, Echo, GuardMode, SessionMode};
use crate::diagnostics::FloodPath;
pub use crate::live::LiveBudget;
use crate::session::{RestartPolicy, SessionPolicy};
pub use crate::stderr_log::StderrLogSettings;
use crate::termination::Policy;

/// What is kept of stderr and how it leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureSettings {
    pub head_bytes: usize,
    pub tail_bytes: usize,
    pub excerpt_bytes: usize,
    pub echo: Echo,
    pub flood_path: FloodPath,
    /// Extra --redact patterns (checked when parsed).
    pub redact: Vec<String>,
    /// --stderr-log.
    pub log: Option<StderrLogSettings>,
}

/// Where the record goes, and the ids in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordSettings {
    /// This run's record file (a --record template filled in).
    pub path: Option<PathBuf>,
    /// The template and how many of its final records to keep.
    pub keep: Option<(crate::record::RecordTemplate, usize)>,
    pub fd: Option<crate::sys::fd::RawFd>,
    /// --call-id, or a random one made here (the record path may name it).
    pub call_id: String,
    pub session_id: Option<String>,
}

/// The MCP server mode parts, each resolved from --mcp and its own flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSettings {
    /// Some(max message bytes): stdout is guarded as JSON-RPC lines.
    pub guard: Option<usize>,
    /// The limit a guarded line may reach (recorded even when unguarded).
    pub max_message_bytes: usize,
    /// Some: stderr is forwarded live under this budget.
    pub live: Option<LiveBudget>,
    /// Some: the session layer relays our stdin and tracks requests.
    pub session: Option<SessionPolicy>,
}

pub struct ApprovalSettings {
    pub method: approve::Method,
    pub timeout: Duration,
}

pub struct JournalSettings {
    pub path: PathBuf,
    pub key: Option<PathBuf>,
    pub excerpt_bytes: usize,
}

/// One call's settings.
pub struct Settings {
    pub command: Vec<OsString>,
    pub policy: Policy,
    /// --rlimit, in the order given (a later one for a resource wins).
    pub rlimits: Vec<crate::rlimit::Rlimit>,
    pub contain: crate::contain::ContainMode,
    pub cgroup_limits: crate::contain::CgroupLimits,
    pub preserve_status: bool,
    pub capture: CaptureSettings,
    pub record: RecordSettings,
    pub streams: StreamSettings,
    pub approval: Option<ApprovalSettings>,
    pub journal: Option<JournalSettings>,
    /// Span export, resolved with the OTel environment.
    pub otel: crate::otel::Resolved,
}

impl From<&Cli> for Settings {
    fn from(cli: &Cli) -> Settings {
        let deadline = &cli.deadline;
        let call_id = cli
            .record
            .call_id
            .clone()
            .unwrap_or_else(crate::ids::call_id);
        Settings {
            command: cli.command.clone(),
            policy: policy(cli),
            rlimits: deadline.rlimit.clone(),
            contain: deadline.contain,
            cgroup_limits: crate::contain::CgroupLimits {
                memory_max: deadline.memory_max,
                pids_max: deadline.pids_max,
                cpu_max: deadline.cpu_max,
                best_effort: deadline.limits == crate::cli::LimitsMode::BestEffort,
            },
            preserve_status: deadline.preserve_status,
            capture: capture(cli),
            record: RecordSettings {
                path: cli
                    .record
                    .record
                    .as_ref()
                    .map(|template| template.fill(&call_id, std::process::id())),
                keep: cli
                    .record
                    .record
                    .clone()
                    .filter(|template| template.has_placeholder())
                    .zip(cli.record.record_keep.map(|n| n as usize)),
                fd: cli.record.record_fd.map(|fd| fd as crate::sys::fd::RawFd),
                call_id,
                session_id: cli.record.session_id.clone(),
            },
            streams: streams(cli),
            approval: approval(cli),
            journal: cli.journal.journal.clone().map(|path| JournalSettings {
                path,
                key: cli.journal.journal_key.clone(),
                excerpt_bytes: cli.journal.journal_excerpt_bytes,
            }),
            otel: cli.otel.resolved.clone(),
        }
    }
}

/// The deadline and the stop: --mcp's defaults where none is given.
fn policy(cli: &Cli) -> Policy {
    let mcp = cli.mcp_mode.mcp;
    let deadline = &cli.deadline;
    Policy {
        timeout: deadline.timeout.filter(|t| !t.is_zero()),
        signal: deadline
            .signal
            .unwrap_or_else(|| crate::signals::default_stop(crate::cli::session_layer(cli))),
        grace: deadline.grace.unwrap_or(if mcp {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(5)
        }),
        wait_delay: deadline.wait_delay.unwrap_or(if mcp {
            Duration::from_millis(500)
        } else {
            Duration::from_secs(1)
        }),
        stdin_close_grace: cli
            .mcp_mode
            .stdin_close_grace
            .or(mcp.then_some(Duration::from_secs(2))),
    }
}

/// What is kept of stderr, and where else it goes.
fn capture(cli: &Cli) -> CaptureSettings {
    CaptureSettings {
        head_bytes: cli.capture.head_bytes,
        tail_bytes: cli.capture.tail_bytes,
        excerpt_bytes: cli.capture.excerpt_bytes,
        echo: cli.capture.echo,
        // Without splice (macOS) a flood is read: auto has nothing to
        // choose, and an explicit splice was refused (cli/check.rs).
        flood_path: match crate::sys::BACKEND.splice {
            true => cli.capture.flood_path,
            false => FloodPath::Read,
        },
        redact: cli.capture.redact.clone(),
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
/// its own flag or by --mcp.
fn streams(cli: &Cli) -> StreamSettings {
    let server = &cli.mcp_mode;
    let mcp = server.mcp;
    let guard_mode = server.stdout_guard.unwrap_or(if mcp {
        GuardMode::Jsonrpc
    } else {
        GuardMode::Off
    });
    let session_mode = server
        .session
        .unwrap_or(if mcp && guard_mode == GuardMode::Jsonrpc {
            SessionMode::Jsonrpc
        } else {
            SessionMode::Off
        });
    StreamSettings {
        session: (session_mode == SessionMode::Jsonrpc).then(|| session_policy(cli)),
        guard: (guard_mode == GuardMode::Jsonrpc).then_some(server.max_message_bytes),
        max_message_bytes: server.max_message_bytes,
        live: server.live.unwrap_or(mcp).then_some(LiveBudget {
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
fn approval(cli: &Cli) -> Option<ApprovalSettings> {
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

impl From<crate::cli::LogArgs> for crate::log::LogCommand {
    fn from(args: crate::cli::LogArgs) -> crate::log::LogCommand {
        crate::log::LogCommand {
            journal: args.journal,
            key: args.key,
            anchor: args.anchor,
            sessions: args.sessions,
            call: args.call,
            json: args.json,
            wide: args.wide,
            since: args.since,
            until: args.until,
            session: args.session,
            state: args.state,
            tool: args.tool,
            requests: args.requests,
            follow: args.follow,
        }
    }
}

impl From<crate::cli::CheckArgs> for crate::check::CheckCommand {
    fn from(args: crate::cli::CheckArgs) -> crate::check::CheckCommand {
        crate::check::CheckCommand {
            journal: args.journal,
            key: args.key,
            anchor: args.anchor,
            expect_tools: args.expect_tool,
            forbid_tools: args.forbid_tool,
            max_duration: args.max_duration,
            requests: args.requests,
            expect_state: args.expect_state,
            no_unfinished: args.no_unfinished,
            no_unapproved: args.no_unapproved,
            expect: args.expect,
            since: args.since,
            until: args.until,
            junit: args.format == crate::cli::CheckFormat::Junit,
        }
    }
}

impl From<crate::cli::ReportArgs> for crate::report::ReportCommand {
    fn from(args: crate::cli::ReportArgs) -> crate::report::ReportCommand {
        crate::report::ReportCommand {
            journal: args.journal,
            output: args.output,
            key: args.key,
            anchor: args.anchor,
        }
    }
}

impl From<crate::cli::PinArgs> for crate::pin::PinCommand {
    fn from(args: crate::cli::PinArgs) -> crate::pin::PinCommand {
        crate::pin::PinCommand {
            file: args.file,
            accept: args.accept,
            key: args.key,
            json: args.json,
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn settings(args: &[&str]) -> Settings {
        let mut argv = vec!["mcp-bound"];
        argv.extend_from_slice(args);
        argv.extend_from_slice(&["--", "true"]);
        Settings::from(&Cli::try_parse_from(argv).unwrap())
    }

    #[test]
    fn mcp_mode_changes_the_defaults_and_each_part_has_its_own_flag() {
        let plain = settings(&[]);
        assert_eq!(plain.policy.grace, Duration::from_secs(5));
        assert_eq!(plain.policy.wait_delay, Duration::from_secs(1));
        assert_eq!(plain.policy.stdin_close_grace, None);
        assert_eq!(plain.streams.guard, None);
        assert_eq!(plain.streams.live, None);

        let mcp = settings(&["--mcp"]);
        assert_eq!(mcp.policy.grace, Duration::from_secs(1));
        assert_eq!(mcp.policy.wait_delay, Duration::from_millis(500));
        assert_eq!(mcp.policy.stdin_close_grace, Some(Duration::from_secs(2)));
        assert_eq!(mcp.streams.guard, Some(16 << 20));
        assert_eq!(
            mcp.streams.live,
            Some(LiveBudget {
                rate: 16 << 10,
                burst: 256 << 10,
                window: Duration::from_secs(300),
                window_bytes: 64 << 20,
            })
        );

        let tuned = settings(&[
            "--mcp",
            "--grace",
            "3",
            "--stdout-guard",
            "off",
            "--live=false",
        ]);
        assert_eq!(tuned.policy.grace, Duration::from_secs(3));
        assert_eq!(tuned.streams.guard, None);
        assert_eq!(tuned.streams.live, None);
        assert_eq!(
            settings(&["--live"]).streams.live.map(|l| l.rate),
            Some(16 << 10)
        );
    }

    #[test]
    fn zero_and_inf_timeouts_are_none_and_approval_is_one_method() {
        assert_eq!(settings(&["--timeout", "0"]).policy.timeout, None);
        assert_eq!(settings(&["--timeout", "inf"]).policy.timeout, None);
        assert!(settings(&[]).approval.is_none());
        let tty = settings(&["--approve", "tty"]).approval.unwrap();
        assert!(matches!(tty.method, approve::Method::Tty));
        let cmd = settings(&["--approve-cmd", "check 'a b'"])
            .approval
            .unwrap();
        match cmd.method {
            approve::Method::Command(argv) => assert_eq!(argv, ["check", "a b"]),
            approve::Method::Tty => panic!("a command"),
        }
    }
}
