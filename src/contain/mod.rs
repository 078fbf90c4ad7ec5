//! Nothing outlives mcp-bound (`--contain auto|cgroup|group`).
//!
//! Containment is a stack of layers, chosen here in one place
//! (`Contain::prepare` and `layers_over_group`), each a file with one
//! `impl Layer` that answers the same questions (`layer.rs`): `deliver`
//! (one signal to all it holds; to kill is to deliver KILL), `members`
//! and `is_empty`; what the helper joins as it starts is each layer's
//! own. A layer that cannot answer one says so, and the layer under it
//! answers (`Family` is the stack):
//!
//! - **group** (`group.rs`, always): the helper's own process group, and
//!   the tree's environment mark; with a subreaper (Linux) our children
//!   list, without one (macOS) the process table by the mark.
//! - **cgroup** (`cgroup.rs`, Linux): a fresh cgroup v2 the helper is born
//!   in, so nothing it forks can leave; KILL is one write, and its limits
//!   are its controllers' files.
//! - **job** (`job.rs`, Windows): the Job Object the helper is started in,
//!   ended by the system when our handle closes; KILL ends it at once,
//!   and its limits are the job's.
//!
//! The limits (`limits.rs`) are applied by the layer that holds them.
//!
//! `--contain auto` takes the cgroup when one can be made, otherwise the
//! group alone; the record says which and why. Either way a **watchdog**
//! outlives a SIGKILLed mcp-bound (`watchdog.rs`).

use serde::Serialize;

use crate::error::NotStarted;
use crate::signals::{self, Stop};
use crate::sys;

mod cgroup;
mod family;
mod group;
mod job;
mod layer;
mod limits;
mod said;
mod watchdog;

pub(crate) use cgroup::Cgroup;
pub(crate) use family::Family;
pub(crate) use group::{Group, signal_group};
pub(crate) use layer::{Layer, Reached};
pub(crate) use limits::Limits;
use watchdog::Watchdog;
pub(crate) use watchdog::{FinalWords, LastWords, Link, heir_watch};
pub(crate) use watchdog::{ORPHANED, orphaned};

/// How the tree is contained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ContainMode {
    Auto,
    Cgroup,
    Group,
    /// Windows: a Job Object.
    Job,
}

/// A `contain.method`, one of [`METHODS`]. (Spelt as an alias, so that
/// serde's derive does not take the field for one borrowed from its input.)
pub(crate) type Method = &'static str;

/// The record's `contain.method`: a cgroup, the group with a subreaper,
/// the group and the tree's mark without one, a job (Windows).
pub(crate) const CGROUP: Method = "cgroup";
pub(crate) const GROUP: Method = "group";
pub(crate) const GROUP_MARK: Method = "group+mark";
pub(crate) const JOB: Method = "job";
pub(crate) const METHODS: [Method; 4] = [CGROUP, GROUP, GROUP_MARK, JOB];

/// `contain.method` read back from a record's JSON: one of [`METHODS`].
fn method<'de, D: serde::Deserializer<'de>>(from: D) -> Result<Method, D::Error> {
    use serde::de::Error;
    let text = <String as serde::Deserialize>::deserialize(from)?;
    METHODS
        .iter()
        .find(|known| **known == text)
        .copied()
        .ok_or_else(|| D::Error::custom(format!("no containment method is called {text:?}")))
}

/// What the record says about containment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ContainFacts {
    /// cgroup, group (with a subreaper), or group+mark (no subreaper:
    /// what left the group is found by the tree's mark), or job.
    #[serde(deserialize_with = "method")]
    pub method: Method,
    /// The cgroup's path (under the cgroup2 mount), with cgroup.
    pub cgroup: Option<String>,
    /// Why group was used under auto; null otherwise.
    pub fallback: Option<String>,
    /// The watchdog's pid (it ends the tree if mcp-bound dies).
    pub watchdog_pid: Option<u32>,
    /// Controller files written (memory.max, pids.max, cpu.max).
    pub applied: Vec<String>,
    /// Limits asked for that this machine could not apply (only with
    /// --limits best-effort; otherwise the call is refused), and why.
    pub not_applied: Vec<String>,
    /// OOM kills inside the cgroup (memory.events oom_kill); null
    /// without a cgroup.
    pub oom_kills: Option<u64>,
    /// group+mark: the most of this user's processes a sweep's scan for
    /// the mark could not read (the tree may be larger than what was
    /// found); null where no sweep scanned for the mark.
    pub unreadable: Option<u32>,
}

/// The layers helper `helper`'s tree is held by over its group, top
/// first: the one place the stack is chosen (the job, where a job holds
/// the tree; a cgroup, where one was made).
pub(crate) fn layers_over_group(helper: i32, cgroup: Option<&Cgroup>) -> Vec<Box<dyn Layer>> {
    let mut over: Vec<Box<dyn Layer>> = Vec::new();
    if sys::BACKEND.job {
        over.extend(job::Job::of(helper).map(|job| Box::new(job) as Box<dyn Layer>));
    }
    if let Some(cgroup) = cgroup {
        over.push(Box::new(cgroup.clone()));
    }
    over
}

/// The polite stop when `--signal` is not given, as the layers here can
/// deliver it: TERM on Unix. A job has no TERM: CLOSE under the session layer (the MCP shutdown), else
/// Ctrl-Break where the helper shares our console, else none, and the
/// stop is KILL at once.
pub(crate) fn default_stop(session: bool) -> Stop {
    if !sys::BACKEND.job {
        return Stop::Signal(signals::SIGTERM);
    }
    match sys::signal_number("SIGBREAK") {
        _ if session => Stop::Close,
        Some(brk) if sys::has_console() => Stop::Signal(brk),
        _ => Stop::Signal(signals::SIGKILL),
    }
}

/// Why `stop` cannot be sent on this system, if it cannot: to a job
/// only BREAK (with a console to share), CLOSE and KILL reach a helper.
pub(crate) fn refused_stop(stop: Stop) -> Option<String> {
    let brk = sys::signal_number("SIGBREAK");
    match stop {
        _ if !sys::BACKEND.job => None,
        Stop::Close | Stop::Signal(signals::SIGKILL) => None,
        Stop::Signal(signal) if Some(signal) == brk && sys::has_console() => None,
        Stop::Signal(signal) if Some(signal) == brk => Some(
            "--signal BREAK: mcp-bound has no console to share with the helper, so Ctrl-Break cannot reach it; use CLOSE (with --mcp) or KILL".into(),
        ),
        Stop::Signal(signal) => Some(format!(
            "--signal {}: Windows has no such signal to send; it takes BREAK (with a console), CLOSE (with --mcp) or KILL",
            signals::name(signal)
        )),
    }
}

/// Why `mode` cannot contain the tree here, if it cannot: refused, never
/// swapped for another.
pub(crate) fn refused_mode(mode: ContainMode) -> Option<NotStarted> {
    let os = sys::BACKEND.os;
    match mode {
        ContainMode::Job if !sys::BACKEND.job => Some(
            NotStarted::nothing(format!("--contain job: no Job Object on {os}"))
                .hint(format!("--contain auto takes what {os} has")),
        ),
        ContainMode::Group | ContainMode::Cgroup if sys::BACKEND.job => {
            let name = match mode {
                ContainMode::Group => "group",
                _ => "cgroup",
            };
            Some(
                NotStarted::nothing(format!(
                    "--contain {name}: {os} holds the tree in a Job Object"
                ))
                .hint("--contain job or auto"),
            )
        }
        _ => None,
    }
}

/// Whether our stdin's end can be waited for without reading it: a job's
/// system (Windows) sees the host's end of a pipe only by reading it.
pub(crate) fn sees_stdin_end_unread() -> bool {
    !sys::BACKEND.job
}

/// Whether the call needs a watchdog: where a job holds the tree, the
/// job ends it whatever ends us, so only a call with a record or a
/// journal to finish (`speaks`) needs one.
pub(crate) fn needs_watchdog(speaks: bool) -> bool {
    speaks || !sys::BACKEND.job
}

/// Whether the watchdog is mcp-bound started again (the heir, where a
/// job holds the tree and nothing forks), told what a fork would know.
pub(crate) fn watchdog_is_heir() -> bool {
    sys::BACKEND.job
}

/// The environment variable that marks the helper's tree.
pub(crate) const TREE_MARK: &str = "MCP_BOUND_TREE";

/// The environment variable that marks the per-call approvers' trees
/// (--tool-approve-cmd), with the call's mark as its value. An approver
/// runs outside the server's cgroup and group, and what it leaves behind
/// (a setsid grandchild) is found by this mark and killed when the
/// approvers stop, and by the watchdog if mcp-bound dies.
pub(crate) const APPROVER_MARK: &str = "MCP_BOUND_APPROVER";

/// KILL every process carrying `variable=value`, a few rounds, so what
/// forked meanwhile is caught too.
pub(crate) fn kill_marked(variable: &str, value: &str) {
    // (Where a job holds the tree, nothing carries a mark to be found.)
    let Some(pids_with_env) = crate::sys::MARKS else {
        return;
    };
    let entry = format!("{variable}={value}").into_bytes();
    for _ in 0..20 {
        let pids = pids_with_env(&entry);
        if pids.is_empty() {
            break;
        }
        for pid in pids {
            crate::sys::send_signal(pid, crate::signals::SIGKILL);
        }
    }
}

pub(crate) struct Contain {
    /// The value of [`TREE_MARK`] in this call's tree.
    mark: String,
    /// The cgroup layer, with cgroup.
    cgroup: Option<Cgroup>,
    /// The job's limits, where a job holds the tree (else none).
    job_limits: sys::JobLimits,
    watchdog: Option<Watchdog>,
    pub facts: ContainFacts,
}

impl Contain {
    /// Before dispatch: the cgroup, or why there is none. `Err` only for
    /// `--contain cgroup` without one, or a limit that cannot be applied
    /// under `--limits strict` (the call is refused). A mode this system
    /// has no means for was refused when the settings were resolved.
    pub(crate) fn prepare(mode: ContainMode, limits: &Limits) -> Result<Contain, NotStarted> {
        let cgroup = match mode {
            _ if sys::BACKEND.job => Err(String::new()),
            ContainMode::Job => Err("--contain job".to_string()),
            ContainMode::Group => Err("--contain group".to_string()),
            ContainMode::Cgroup => Ok(Cgroup::create().map_err(|e| {
                NotStarted::nothing(format!("--contain cgroup: {e}"))
                    .hint("--contain group or auto runs")
            })?),
            ContainMode::Auto => Cgroup::create(),
        };
        let (cgroup, fallback) = match cgroup {
            Ok(cgroup) => (Some(cgroup), None),
            Err(why) => (
                None,
                (mode == ContainMode::Auto && !sys::BACKEND.job).then_some(why),
            ),
        };
        let (job_limits, applied, not_applied) = match sys::BACKEND.job {
            true => job::job_limits(limits)?,
            false => {
                let (applied, not_applied) = cgroup::apply_limits(cgroup.as_ref(), limits)?;
                (sys::JobLimits::default(), applied, not_applied)
            }
        };
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Ok(Contain {
            mark: format!("{}-{nonce:x}", std::process::id()),
            facts: ContainFacts {
                method: match (&cgroup, sys::BACKEND.subreaper) {
                    _ if sys::BACKEND.job => JOB,
                    (Some(_), _) => CGROUP,
                    (None, true) => GROUP,
                    (None, false) => GROUP_MARK,
                },
                cgroup: cgroup
                    .as_ref()
                    .map(|c| c.dir().to_string_lossy().into_owned()),
                fallback,
                watchdog_pid: None,
                oom_kills: cgroup.as_ref().map(|_| 0),
                applied,
                not_applied,
                unreadable: None,
            },
            cgroup,
            job_limits,
            watchdog: None,
        })
    }

    /// The environment entry that marks the tree.
    pub(crate) fn mark(&self) -> (String, String) {
        (TREE_MARK.to_string(), self.mark.clone())
    }

    /// The limits the helper's job gets, where a job holds the tree.
    pub(crate) fn job_limits(&self) -> sys::JobLimits {
        self.job_limits
    }

    /// The cgroup the helper starts in (cgroup only).
    pub(crate) fn cgroup(&self) -> Option<&Cgroup> {
        self.cgroup.as_ref()
    }

    /// OOM kills inside the cgroup so far (read before it is removed).
    pub(crate) fn oom_kills(&self) -> Option<u64> {
        self.cgroup.as_ref()?.oom_kills()
    }

    /// What the whole tree used, as the cgroup counted it: CPU in
    /// milliseconds and memory.peak (None without a cgroup).
    pub(crate) fn cgroup_usage(&self) -> (Option<u64>, Option<u64>) {
        self.cgroup.as_ref().map_or((None, None), Cgroup::usage)
    }
}

impl Drop for Contain {
    fn drop(&mut self) {
        self.finish();
    }
}
