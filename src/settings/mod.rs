//! Everything a call needs from the command line, resolved once: the
//! defaults `--mcp` changes (`defaults.rs`, one table), the guard, the
//! live budget, the approval method, span export with its environment,
//! the compiled `--redact`, the flood path, and the rules an option breaks
//! (`rules.rs`). This is ripgrep's `HiArgs` step: `Settings::resolve` is
//! the one fallible step after clap, and past it nothing reads `Cli`.
//!
//! Where a value comes from, first to last: the command line, its
//! `MCP_BOUND_*` variable (clap reads both, and `Given` says which), then
//! the mode's default from the table. A config file's profile is a layer
//! laid between the environment and the defaults: it fills what `Given`
//! says neither source gave, before the parts below read the values.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::approve;
use crate::cli::{Cli, Echo, Given};
use crate::diagnostics::FloodPath;
use crate::error::{Error, NotStarted};
pub(crate) use crate::live::LiveBudget;
use crate::redact::Redactor;
use crate::session::SessionPolicy;
pub(crate) use crate::stderr_log::StderrLogSettings;
use crate::termination::Policy;

pub(crate) mod defaults;
mod parts;
mod readers;
mod rules;

pub use rules::dependent_options;

/// What is kept of stderr and how it leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CaptureSettings {
    pub head_bytes: usize,
    pub tail_bytes: usize,
    pub excerpt_bytes: usize,
    pub echo: Echo,
    /// How a flood is drained, as this system and the other outputs allow.
    pub flood_path: FloodPath,
    /// --stderr-log.
    pub log: Option<StderrLogSettings>,
}

/// Where the record goes, and the ids in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecordSettings {
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
pub(crate) struct StreamSettings {
    /// Some(max message bytes): stdout is guarded as JSON-RPC lines.
    pub guard: Option<usize>,
    /// The limit a guarded line may reach (recorded even when unguarded).
    pub max_message_bytes: usize,
    /// Some: stderr is forwarded live under this budget.
    pub live: Option<LiveBudget>,
    /// Some: the session layer relays our stdin and tracks requests.
    pub session: Option<SessionPolicy>,
}

pub(crate) struct ApprovalSettings {
    pub method: approve::Method,
    pub timeout: Duration,
}

pub(crate) struct JournalSettings {
    pub path: PathBuf,
    pub key: Option<PathBuf>,
    pub excerpt_bytes: usize,
}

/// One call's settings.
pub(crate) struct Settings {
    pub command: Vec<OsString>,
    pub policy: Policy,
    /// --rlimit, in the order given (a later one for a resource wins).
    pub rlimits: Vec<crate::rlimit::Rlimit>,
    pub contain: crate::contain::ContainMode,
    pub tree_limits: crate::contain::Limits,
    pub preserve_status: bool,
    pub capture: CaptureSettings,
    pub record: RecordSettings,
    pub streams: StreamSettings,
    pub approval: Option<ApprovalSettings>,
    pub journal: Option<JournalSettings>,
    /// Span export, resolved with the OTel environment.
    pub otel: crate::otel::Resolved,
    /// The built-in patterns and --redact's, compiled.
    pub redactor: Redactor,
}

impl Settings {
    /// The one fallible step after clap: every default filled in, span
    /// export resolved with `env`, `--redact` compiled, and every rule
    /// checked. An error here is a usage error, or a refusal that nothing
    /// was started; past it, a call cannot fail for its options.
    pub(crate) fn resolve(
        cli: &Cli,
        given: &Given,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Settings, Error> {
        // Export is resolved with the OTel environment first: whether it
        // is on decides what its own options may tune.
        let otel = crate::otel::resolve(
            crate::otel::Flags {
                otel: cli.otel.otel.map(|mode| mode == crate::cli::OtelMode::On),
                explicit: given.has("otel"),
                flush_timeout: cli.otel.otel_flush_timeout,
                propagate: cli.otel.otel_propagate,
            },
            env,
        )
        .map_err(NotStarted::nothing)?;
        let settings = Settings::from_parts(cli, otel)?;
        rules::check(cli, given, &settings)?;
        match crate::contain::refused_mode(settings.contain) {
            Some(refused) => Err(refused.into()),
            None => Ok(settings),
        }
    }

    /// The settings, each part from its options and the mode's defaults.
    fn from_parts(cli: &Cli, otel: crate::otel::Resolved) -> Result<Settings, Error> {
        let redactor = Redactor::new(&cli.capture.redact)
            .map_err(|e| NotStarted::nothing(format!("--redact {e}")))?;
        let call_id = cli
            .record
            .call_id
            .clone()
            .unwrap_or_else(crate::ids::call_id);
        let streams = parts::streams(cli);
        let deadline = &cli.deadline;
        Ok(Settings {
            command: cli.command.clone(),
            policy: parts::policy(cli, streams.session.is_some()),
            rlimits: deadline.rlimit.clone(),
            contain: deadline.contain,
            tree_limits: crate::contain::Limits {
                memory_max: deadline.memory_max,
                pids_max: deadline.pids_max,
                cpu_max: deadline.cpu_max,
                best_effort: deadline.limits == crate::cli::LimitsMode::BestEffort,
            },
            preserve_status: deadline.preserve_status,
            capture: parts::capture(cli, streams.live.is_some()),
            record: parts::record(cli, call_id),
            streams,
            approval: parts::approval(cli),
            journal: cli.journal.journal.clone().map(|path| JournalSettings {
                path,
                key: cli.journal.journal_key.clone(),
                excerpt_bytes: cli.journal.journal_excerpt_bytes,
            }),
            otel,
            redactor,
        })
    }
}

#[cfg(test)]
impl Settings {
    /// For tests: the settings of `mcp-bound ARGS -- true`, with no
    /// environment.
    pub(crate) fn parsed(args: &[&str]) -> Settings {
        let mut argv = vec!["mcp-bound"];
        argv.extend_from_slice(args);
        argv.extend_from_slice(&["--", "true"]);
        let matches = crate::cli::command().try_get_matches_from(argv).unwrap();
        let cli = <Cli as clap::FromArgMatches>::from_arg_matches(&matches).unwrap();
        Settings::resolve(&cli, &Given::from(&matches), &|_| None).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(args: &[&str]) -> Settings {
        Settings::parsed(args)
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
