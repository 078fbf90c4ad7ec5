//! The helper process: spawn it into its own process group with piped
//! stdout/stderr (and into the layers containment chose: the tree it
//! starts is a `contain::Family`), observe its exit without reaping it,
//! reap it and any subreaped orphans.
//!
//! The helper is observed with `waitid(WNOWAIT)` and reaped only at the end,
//! as shared_child does: while it is a zombie its pid (and so its process
//! group id) cannot be reused, so signalling the group can never hit a
//! stranger.

use crate::sys::fd::OwnedFd;
use std::ffi::OsString;
use std::io;

use crate::contain::{Cgroup, Family, Group};
use crate::sys;

/// How the helper ended, as observed: `sys::ChildExit`, the one exit type
/// from the wait to the record (whose `record::Exit` is it in words).
pub(crate) use crate::sys::ChildExit;

impl ChildExit {
    /// The shell's convention: the code, or 128 + the signal. A Windows
    /// code above `i32::MAX` wraps, and `std::process::exit` hands the same
    /// 32 bits back to `ExitProcess`, so the host reads the helper's code.
    pub fn shell_status(self) -> i32 {
        match self {
            ChildExit::Code(code) => code as i32,
            ChildExit::Signal { signal, .. } => 128 + signal.number(),
        }
    }

    /// mcp-bound's own exit status as the host reads it: on Windows the
    /// 32 bits `std::process::exit` passed to `ExitProcess`, unsigned.
    pub fn status_as_read(status: i32) -> i64 {
        if sys::BACKEND.wide_exit_codes {
            i64::from(status as u32)
        } else {
            i64::from(status)
        }
    }

    /// The exit as the record says it: the signal by its name.
    pub fn to_record(self) -> crate::record::Exit {
        match self {
            ChildExit::Code(code) => crate::record::Exit::Code {
                code,
                ntstatus: sys::BACKEND
                    .wide_exit_codes
                    .then(|| sys::ntstatus::name(code))
                    .flatten()
                    .map(String::from),
            },
            ChildExit::Signal {
                signal,
                core_dumped,
            } => crate::record::Exit::Signal {
                signal: crate::signals::name(signal),
                core_dumped,
            },
        }
    }
}

/// What the helper's stdin is.
pub(crate) enum StdinFrom {
    /// Ours, inherited.
    Inherit,
    /// This descriptor (an approver's request).
    Fd(OwnedFd),
    /// A pipe whose write end (non-blocking) is `Helper::stdin`: the
    /// session layer relays our stdin into it.
    Pipe,
}

pub(crate) struct Helper {
    pub pid: i32,
    /// The write end of its stdin pipe, with `StdinFrom::Pipe`.
    pub stdin: Option<OwnedFd>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    /// The helper's tree, as containment's layers hold it.
    pub family: Family,
}

#[derive(Debug)]
pub(crate) enum SpawnError {
    NotFound(io::Error),
    NotExecutable(io::Error),
}

/// What the helper is confined to before it execs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Confine {
    pub rlimits: Vec<crate::rlimit::Rlimit>,
    /// The cgroup the helper starts in (born there with clone3 where the
    /// kernel allows, else it writes itself into `cgroup.procs`).
    pub cgroup: Option<Cgroup>,
    /// An environment entry every process of the tree inherits: how the
    /// watchdog finds what left the group once mcp-bound is gone.
    pub tree_mark: Option<(String, String)>,
    /// Join the cgroup by writing `cgroup.procs`, never by being cloned
    /// into it (after a cgroup.kill, see `supervise::Tree`).
    pub join_by_moving: bool,
    /// Where a Job Object holds the tree (Windows): its limits.
    pub job_limits: sys::JobLimits,
}

impl Confine {
    /// An approver's: no cgroup and no limits of the helper's, and the
    /// call's mark as `MCP_BOUND_APPROVER`, by which what it leaves is
    /// found when the approvers stop and by the watchdog.
    pub(crate) fn approver(mark: Option<&str>) -> Confine {
        Confine {
            tree_mark: mark.map(|mark| (crate::contain::APPROVER_MARK.to_string(), mark.into())),
            ..Confine::default()
        }
    }
}

/// Start the helper: its own process group, stdin inherited, a given
/// descriptor or a pipe; stdout and stderr are pipes whose ends (ours)
/// never block (`sys::helper_pipe`). On Linux it gets SIGKILL if
/// mcp-bound dies, so it cannot outlive a SIGKILLed supervisor.
pub(crate) fn spawn(
    argv: &[OsString],
    stdin: StdinFrom,
    confine: &Confine,
) -> Result<Helper, SpawnError> {
    use crate::sys::fd::AsFd;
    let not_executable = SpawnError::NotExecutable;
    let strangers = Group::before_spawn();
    let mark = confine.tree_mark.as_ref();
    let exec = sys::Exec::new(
        argv,
        mark.map(|(name, value)| (name.as_str(), value.as_str())),
    )
    .map_err(|err| match err.kind() {
        io::ErrorKind::NotFound => SpawnError::NotFound(err),
        _ => SpawnError::NotExecutable(err),
    })?;
    let cgroup = confine.cgroup.as_ref().map(Cgroup::before_spawn);
    let cgroup = cgroup.transpose().map_err(not_executable)?;
    let (stdin_ours, stdin_theirs): (Option<OwnedFd>, Option<OwnedFd>) = match stdin {
        StdinFrom::Inherit => (None, None),
        StdinFrom::Fd(fd) => (None, Some(fd)),
        StdinFrom::Pipe => {
            let (ours, theirs) = sys::helper_pipe(false).map_err(not_executable)?;
            (Some(ours), Some(theirs))
        }
    };
    let (stdout, stdout_theirs) = sys::helper_pipe(true).map_err(not_executable)?;
    let (stderr, stderr_theirs) = sys::helper_pipe(true).map_err(not_executable)?;
    let setup = sys::Setup {
        stdio: [
            stdin_theirs.as_ref().map(|fd| fd.as_fd()),
            Some(stdout_theirs.as_fd()),
            Some(stderr_theirs.as_fd()),
        ],
        die_with: sys::BACKEND
            .parent_death_signal
            .then(|| std::process::id() as i32),
        rlimits: &confine.rlimits,
        cgroup: cgroup.as_ref().map(|entrance| entrance.as_setup()),
        move_into_cgroup: confine.join_by_moving,
        job_limits: confine.job_limits,
    };
    let (pid, _entry) = sys::spawn(&exec, &setup).map_err(|err| {
        if err.kind() == io::ErrorKind::NotFound {
            SpawnError::NotFound(err)
        } else {
            SpawnError::NotExecutable(err)
        }
    })?;
    Ok(Helper {
        pid,
        stdin: stdin_ours,
        stdout,
        stderr,
        family: Family::new(
            Group::new(
                pid,
                strangers,
                mark.map(|(name, value)| format!("{name}={value}").into_bytes()),
            ),
            crate::contain::layers_over_group(pid, confine.cgroup.as_ref()),
        ),
    })
}

/// Has the helper exited? Leaves it a zombie (WNOWAIT) so its pid stays ours.
pub(crate) fn observe_exit(pid: i32) -> Option<ChildExit> {
    wait_exit(pid, false)
}

/// Block until the helper has exited (it was just sent KILL): only for the
/// path where the poll loop itself can no longer run.
pub(crate) fn await_exit(pid: i32) -> Option<ChildExit> {
    wait_exit(pid, true)
}

fn wait_exit(pid: i32, block: bool) -> Option<ChildExit> {
    sys::wait_exit(pid, block)
}

/// Reap the helper once nothing more will be sent to its group.
pub(crate) fn reap(pid: i32) {
    sys::reap(pid);
}

/// Reap exited orphans that re-parented to us, leaving the helper and
/// the children in `keep` (approvers, whose exit is read) alone.
pub(crate) fn reap_orphans(helper_pid: i32, keep: &[i32]) {
    for pid in sys::children_of_self() {
        if pid != helper_pid && !keep.contains(&pid) {
            sys::reap(pid);
        }
    }
}

/// Reap a child that has exited, with the CPU (user, system) it used.
pub(crate) fn reap_with_usage(pid: i32) -> Option<(std::time::Duration, std::time::Duration)> {
    sys::reap_with_usage(pid)
}
