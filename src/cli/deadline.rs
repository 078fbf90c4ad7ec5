//! The deadline options group: when and how the helper is ended, and
//! what it and its tree are confined to (limits, containment).

use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::{Args, ValueEnum};

use super::positive_bytes;
use crate::{signals, units};

/// Deadline options: when and how the helper is ended.
#[derive(Args, Debug)]
pub(crate) struct DeadlineArgs {
    /// Deadline for the helper, from its start; 0 or inf means none. GNU syntax: 10, 1.5, 1e-3,
    /// 0x1p-3, 500ms, 30s, 5m, 1h, 1d [default: off].
    #[arg(long, value_name = "DURATION", env = "MCP_BOUND_TIMEOUT", value_parser = units::parse_timeout, help_heading = "Deadline options")]
    pub timeout: Option<Duration>,

    /// Signal sent to the helper's group at the deadline: a name (any case, SIG optional; RTMIN+N,
    /// RTMAX-N where the system has real-time signals: not macOS) or a number. CLOSE instead closes
    /// the server's stdin, the MCP shutdown (needs the session layer: --mcp). On Windows: BREAK
    /// (Ctrl-Break, to a helper that shares our console), CLOSE or KILL [default: TERM; on Windows
    /// CLOSE with --mcp, else BREAK with a console, else KILL].
    #[arg(short = 's', long, value_name = "SIGNAL", env = "MCP_BOUND_SIGNAL", value_parser = signals::parse_stop, help_heading = "Deadline options")]
    pub signal: Option<signals::Stop>,

    /// Time between the first signal and SIGKILL to the whole tree; 0 kills at once. Also spelled
    /// --kill-after, as GNU timeout names it.
    #[arg(short = 'k', long, visible_alias = "kill-after", value_name = "DURATION", env = "MCP_BOUND_GRACE", value_parser = units::parse_duration, help_heading = "Deadline options")]
    pub grace: Option<Duration>,

    /// After the helper exits, how long to wait for descendants to release its pipes before
    /// terminating them; also the wait for EOF after the final KILL.
    #[arg(long, value_name = "DURATION", env = "MCP_BOUND_WAIT_DELAY", value_parser = units::parse_duration, help_heading = "Deadline options")]
    pub wait_delay: Option<Duration>,

    /// On timeout, exit with the helper's own status instead of 124.
    #[arg(long, env = "MCP_BOUND_PRESERVE_STATUS", value_parser = BoolishValueParser::new(), default_value_t = false, num_args = 0, default_missing_value = "true", help_heading = "Deadline options")]
    pub preserve_status: bool,

    /// A resource limit for the helper, set before it starts, as prlimit takes it (repeatable):
    /// NAME=SOFT[:HARD] with NAME one of as, core, cpu, data, fsize, nofile, nproc, stack; sizes
    /// take units (64MiB), cpu is seconds; unlimited for none. One that cannot be set (a hard limit
    /// raised without CAP_SYS_RESOURCE, whatever the uid) is exit 125, and nothing runs.
    #[arg(long, value_name = "NAME=SOFT[:HARD]", env = "MCP_BOUND_RLIMIT", value_delimiter = ',', value_parser = crate::rlimit::parse, help_heading = "Deadline options")]
    pub rlimit: Vec<crate::rlimit::Rlimit>,

    /// How the helper's tree is contained, so that nothing outlives mcp-bound, even when it is
    /// SIGKILLed: cgroup (Linux: a cgroup v2 of its own, which everything it forks stays in), group
    /// (its process group, and what leaves it found by the environment mark the tree inherits), job
    /// (Windows: a Job Object, the only choice there), or auto (cgroup when one can be made; macOS
    /// has none; job on Windows). A watchdog ends the tree if mcp-bound dies (on Windows, the job
    /// itself, and with --record or --journal a watchdog that then writes supervisor_killed).
    #[arg(
        long,
        value_name = "HOW",
        env = "MCP_BOUND_CONTAIN",
        value_enum,
        default_value = "auto",
        help_heading = "Deadline options"
    )]
    pub contain: crate::contain::ContainMode,

    /// Most memory the whole tree may use (cgroup memory.max); the kernel's OOM killer acts inside
    /// the cgroup, and the record counts its kills. Needs --contain cgroup and the memory
    /// controller on Linux; on Windows the job's JobMemoryLimit.
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_MEMORY_MAX", value_parser = positive_bytes, help_heading = "Deadline options")]
    pub memory_max: Option<u64>,

    /// Most processes (and threads) the whole tree may have (cgroup pids.max): a fork bomb stops
    /// there. Needs --contain cgroup and the pids controller on Linux; on Windows the job's
    /// ActiveProcessLimit (processes only).
    #[arg(long, value_name = "N", env = "MCP_BOUND_PIDS_MAX", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Deadline options")]
    pub pids_max: Option<u64>,

    /// Most CPU the whole tree may use, in CPUs (0.5: half of one; cgroup cpu.max). Needs --contain
    /// cgroup and the cpu controller on Linux; on Windows the job's CpuRate, a hard cap.
    #[arg(long, value_name = "CPUS", env = "MCP_BOUND_CPU_MAX", value_parser = parse_cpus, help_heading = "Deadline options")]
    pub cpu_max: Option<f64>,

    /// What to do when a cgroup limit cannot be applied (no cgroup, or no such controller): strict
    /// refuses the call (125, nothing runs); best-effort goes on and the record lists what was not
    /// applied.
    #[arg(
        long,
        value_name = "HOW",
        env = "MCP_BOUND_LIMITS",
        value_enum,
        default_value = "strict",
        help_heading = "Deadline options"
    )]
    pub limits: LimitsMode,
}

/// Whether a cgroup limit the machine cannot apply stops the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LimitsMode {
    Strict,
    BestEffort,
}

fn parse_cpus(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(cpus) if cpus > 0.0 && cpus.is_finite() => Ok(cpus),
        _ => Err("a positive number of CPUs, e.g. 0.5 or 2".into()),
    }
}
