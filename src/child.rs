//! The helper process: spawn it into its own process group with piped
//! stdout/stderr, signal its group and its descendants, observe its exit
//! without reaping it, reap it and any subreaped orphans.
//!
//! The helper is observed with `waitid(WNOWAIT)` and reaped only at the end,
//! as shared_child does: while it is a zombie its pid (and so its process
//! group id) cannot be reused, so signalling the group can never hit a
//! stranger.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;

use crate::sys;

/// How the helper ended, as observed: `sys::ChildExit`, the one exit type
/// from the wait to the record (whose `record::Exit` is it in words).
pub use crate::sys::ChildExit;

impl ChildExit {
    /// The shell's convention: the code, or 128 + the signal.
    pub fn shell_status(self) -> i32 {
        match self {
            ChildExit::Code(code) => code,
            ChildExit::Signal { signo, .. } => 128 + signo,
        }
    }

    /// The exit as the record says it: the signal by its name.
    pub fn to_record(self) -> crate::record::Exit {
        match self {
            ChildExit::Code(code) => crate::record::Exit::Code { code },
            ChildExit::Signal { signo, core_dumped } => crate::record::Exit::Signal {
                signal: crate::signals::name(signo),
                core_dumped,
            },
        }
    }
}

/// What the helper's stdin is.
pub enum StdinFrom {
    /// Ours, inherited.
    Inherit,
    /// This descriptor (an approver's request).
    Fd(OwnedFd),
    /// A pipe whose write end (non-blocking) is `Helper::stdin`: the
    /// session layer relays our stdin into it.
    Pipe,
}

pub struct Helper {
    pub pid: i32,
    /// The write end of its stdin pipe, with `StdinFrom::Pipe`.
    pub stdin: Option<OwnedFd>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    /// The helper's tree, told apart from children we had before it.
    pub family: Family,
}

#[derive(Debug)]
pub enum SpawnError {
    NotFound(io::Error),
    NotExecutable(io::Error),
}

/// What the helper is confined to before it execs.
#[derive(Debug, Clone, Default)]
pub struct Confine {
    pub rlimits: Vec<crate::rlimit::Rlimit>,
    /// The cgroup the helper starts in (born there with clone3 where the
    /// kernel allows, else it writes itself into `cgroup.procs`).
    pub cgroup: Option<std::path::PathBuf>,
    /// An environment entry every process of the tree inherits: how the
    /// watchdog finds what left the group once mcp-bound is gone.
    pub tree_mark: Option<(String, String)>,
    /// Join the cgroup by writing `cgroup.procs`, never by being cloned
    /// into it (after a cgroup.kill, see `supervise::Tree`).
    pub join_by_moving: bool,
}

impl Confine {
    /// An approver's: no cgroup and no limits of the helper's, and the
    /// call's mark as `MCP_BOUND_APPROVER`, by which what it leaves is
    /// found when the approvers stop and by the watchdog.
    pub fn approver(mark: Option<&str>) -> Confine {
        Confine {
            tree_mark: mark.map(|mark| (crate::contain::APPROVER_MARK.to_string(), mark.into())),
            ..Confine::default()
        }
    }
}

/// Start the helper: its own process group, stdin inherited, a given
/// descriptor or a pipe; stdout and stderr are pipes whose ends (ours) are
/// non-blocking. On Linux it gets SIGKILL if mcp-bound dies, so it cannot
/// outlive a SIGKILLed supervisor.
pub fn spawn(argv: &[OsString], stdin: StdinFrom, confine: &Confine) -> Result<Helper, SpawnError> {
    use std::os::fd::AsFd;
    let not_executable = SpawnError::NotExecutable;
    // Usually empty and one small read: our children before this one.
    let strangers = Family::strangers_before_dispatch();
    let mark = confine.tree_mark.as_ref();
    let exec = sys::Exec::new(
        argv,
        mark.map(|(name, value)| (name.as_str(), value.as_str())),
    )
    .map_err(not_executable)?;
    let cgroup = match &confine.cgroup {
        Some(dir) => {
            let procs = std::ffi::CString::new(
                dir.join("cgroup.procs")
                    .into_os_string()
                    .into_encoded_bytes(),
            )
            .map_err(|_| not_executable(io::ErrorKind::InvalidInput.into()))?;
            Some((std::fs::File::open(dir).map_err(not_executable)?, procs))
        }
        None => None,
    };
    let (stdin_ours, stdin_theirs): (Option<OwnedFd>, Option<OwnedFd>) = match stdin {
        StdinFrom::Inherit => (None, None),
        StdinFrom::Fd(fd) => (None, Some(fd)),
        StdinFrom::Pipe => {
            let (theirs, ours) = sys::pipe_cloexec().map_err(not_executable)?;
            (Some(ours.into()), Some(theirs.into()))
        }
    };
    let (stdout, stdout_theirs) = sys::pipe_cloexec().map_err(not_executable)?;
    let (stderr, stderr_theirs) = sys::pipe_cloexec().map_err(not_executable)?;
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
        cgroup: cgroup
            .as_ref()
            .map(|(dir, procs)| (dir.as_fd(), procs.as_c_str())),
        move_into_cgroup: confine.join_by_moving,
    };
    let (pid, _entry) = sys::spawn(&exec, &setup).map_err(|err| {
        if err.kind() == io::ErrorKind::NotFound {
            SpawnError::NotFound(err)
        } else {
            SpawnError::NotExecutable(err)
        }
    })?;
    let stdout = OwnedFd::from(stdout);
    let stderr = OwnedFd::from(stderr);
    for fd in stdin_ours.iter().chain([&stdout, &stderr]) {
        // Our own read ends: non-blocking is ours to set. Should that fail,
        // the helper already runs: end it rather than leave it unsupervised.
        if let Err(err) = sys::set_nonblocking(fd.as_fd()) {
            sys::send_signal(pid, crate::signals::SIGKILL);
            sys::wait_child(pid);
            return Err(SpawnError::NotExecutable(err));
        }
        sys::grow_pipe(fd.as_fd(), 1 << 20);
    }
    Ok(Helper {
        pid,
        stdin: stdin_ours,
        stdout,
        stderr,
        family: Family::new(pid, strangers, confine.cgroup.clone())
            .marked(mark.map(|(name, value)| format!("{name}={value}").into_bytes())),
    })
}

/// Signal the helper's process group. False if the group is gone.
pub fn signal_group(pgid: i32, signo: i32) -> bool {
    pgid > 1 && sys::send_signal(-pgid, signo)
}

fn signal_pid(pid: i32, signo: i32) -> bool {
    pid > 1 && sys::send_signal(pid, signo)
}

/// Who belongs to the helper's tree. mcp-bound can inherit children it
/// never started (a shell that `exec`s it hands over its background jobs
/// and the process substitution carrying our stderr); those, and anything
/// that started before the helper, are strangers: never signalled, never
/// waited for, only reaped if they exit.
#[derive(Debug, Clone, Default)]
pub struct Family {
    pub helper: i32,
    /// The helper's start time (ticks since boot), if /proc showed it.
    helper_start: Option<u64>,
    /// Our children before dispatch, as (pid, start time).
    strangers: Vec<(i32, u64)>,
    /// The cgroup the tree lives in (--contain cgroup): its members are
    /// the tree, read from cgroup.procs, and cgroup.events says whether
    /// any is left.
    cgroup: Option<std::path::PathBuf>,
    /// The environment entry (`NAME=value`) every process of the tree
    /// inherits: without a subreaper, how what escaped is found.
    mark: Option<Vec<u8>>,
}

impl Family {
    /// A child of ours started after the helper that is not of its tree
    /// (an approver): never signalled or waited for as the tree's.
    pub fn adopt_stranger(&mut self, pid: i32) {
        if let Some(info) = sys::proc_info(pid) {
            self.strangers.push((info.pid, info.start));
        }
    }

    /// Our children now: call before the helper is spawned.
    pub fn strangers_before_dispatch() -> Vec<(i32, u64)> {
        sys::children_of_self()
            .into_iter()
            .filter_map(sys::proc_info)
            .map(|p| (p.pid, p.start))
            .collect()
    }

    pub fn new(
        helper: i32,
        strangers: Vec<(i32, u64)>,
        cgroup: Option<std::path::PathBuf>,
    ) -> Family {
        Family {
            helper,
            helper_start: sys::proc_info(helper).map(|p| p.start),
            strangers,
            cgroup,
            mark: None,
        }
    }

    /// The tree's environment mark, `NAME=value`.
    pub fn marked(self, mark: Option<Vec<u8>>) -> Family {
        Family { mark, ..self }
    }

    /// The processes in the tree's cgroup, None without one (or if it
    /// cannot be read).
    fn cgroup_members(&self) -> Option<Vec<i32>> {
        crate::contain::cgroup_members(self.cgroup.as_ref()?)
    }

    /// Not the helper's: an earlier child of ours, or older than the helper
    /// (a stranger's descendant that re-parented to us).
    fn is_stranger(&self, p: &sys::ProcInfo) -> bool {
        self.helper_start.is_some_and(|start| p.start < start)
            || self.strangers.contains(&(p.pid, p.start))
    }

    /// Live processes of the helper's tree other than the helper itself:
    /// the cgroup's members, or our descendants from one scan of the
    /// process table (with, where there is no subreaper, what carries the
    /// tree's mark, and how many of this user's processes could not be
    /// read for it).
    pub fn live_descendants(&self) -> sys::Descendants {
        let mut found = match self.cgroup_members() {
            Some(members) => sys::Descendants {
                processes: members.into_iter().filter_map(sys::proc_info).collect(),
                unreadable: None,
            },
            None => sys::descendants(std::process::id() as i32, self.mark.as_deref(), &|p| {
                self.is_stranger(p)
            }),
        };
        found
            .processes
            .retain(|p| !p.zombie && p.pid != self.helper);
        found
    }

    /// After the helper exited: is anything of its tree still running?
    /// As a subreaper, every live descendant then is, or descends from, one
    /// of our own live children (a dead child's children re-parent to us),
    /// so reading our children list answers it without scanning all of
    /// /proc.
    /// With a cgroup, cgroup.events answers: "populated 0" once no live
    /// process is left in it (a zombie does not count). Without a
    /// subreaper, an escape is no child of ours: the table is scanned.
    pub fn descendants_left(&self) -> bool {
        if let Some(events) = self
            .cgroup
            .as_ref()
            .and_then(|dir| sys::read_small(&dir.join("cgroup.events")).ok())
        {
            return events.lines().any(|line| line == "populated 1");
        }
        if !sys::BACKEND.subreaper {
            return !self.live_descendants().processes.is_empty();
        }
        sys::children_of_self()
            .into_iter()
            .filter(|pid| *pid != self.helper)
            .filter_map(sys::proc_info)
            .any(|p| !p.zombie && !self.is_stranger(&p))
    }
}

/// What one sweep did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Sweep {
    /// KILL went to the whole cgroup, with one write to cgroup.kill.
    pub cgroup_killed: bool,
    pub group_signalled: bool,
    /// Descendants outside the helper's group, signalled one by one.
    pub outside_group: u32,
    /// This user's processes the scan for the tree's mark could not read
    /// (None: no such scan).
    pub unreadable: Option<u32>,
}

/// Send `signo` to the helper's group, then to every live descendant that
/// is not in the group (escaped with setsid or setpgid). Nobody gets the
/// same signal twice from one sweep: many programs treat a second INT or
/// TERM as "force". `seen` collects every descendant pid signalled.
/// A stopped process only acts on the signal once continued, so CONT
/// follows, unless the signal is KILL (which needs no help) or CONT.
pub fn sweep(family: &Family, signo: i32, seen: &mut HashSet<i32>) -> Sweep {
    let pgid = family.helper;
    // Scan before signalling: a process that dies of the signal at once is
    // a zombie by the time a later scan runs, and would go uncounted.
    let live = family.live_descendants();
    let unreadable = live.unreadable;
    if signo == crate::signals::SIGKILL
        && let Some(dir) = &family.cgroup
        && crate::contain::kill_cgroup(dir)
    {
        seen.extend(live.processes.iter().map(|p| p.pid));
        return Sweep {
            cgroup_killed: true,
            ..Sweep::default()
        };
    }
    let group_signalled = signal_group(pgid, signo);
    let mut outsiders = Vec::new();
    for process in live.processes {
        seen.insert(process.pid);
        if process.pgid != pgid && signal_pid(process.pid, signo) {
            outsiders.push(process.pid);
        }
    }
    let outside_group = outsiders.len() as u32;
    if signo != crate::signals::SIGKILL && signo != crate::signals::SIGCONT {
        signal_group(pgid, crate::signals::SIGCONT);
        for pid in outsiders {
            signal_pid(pid, crate::signals::SIGCONT);
        }
    }
    Sweep {
        cgroup_killed: false,
        group_signalled,
        outside_group,
        unreadable,
    }
}

/// Has the helper exited? Leaves it a zombie (WNOWAIT) so its pid stays ours.
pub fn observe_exit(pid: i32) -> Option<ChildExit> {
    wait_exit(pid, false)
}

/// Block until the helper has exited (it was just sent KILL): only for the
/// path where the poll loop itself can no longer run.
pub fn await_exit(pid: i32) -> Option<ChildExit> {
    wait_exit(pid, true)
}

fn wait_exit(pid: i32, block: bool) -> Option<ChildExit> {
    sys::wait_exit(pid, block)
}

/// Reap the helper once nothing more will be sent to its group.
pub fn reap(pid: i32) {
    sys::reap(pid);
}

/// Reap exited orphans that re-parented to us, leaving the helper and
/// the children in `keep` (approvers, whose exit is read) alone.
pub fn reap_orphans(helper_pid: i32, keep: &[i32]) {
    for pid in sys::children_of_self() {
        if pid != helper_pid && !keep.contains(&pid) {
            sys::reap(pid);
        }
    }
}

/// Reap a child that has exited, with the CPU (user, system) it used.
pub fn reap_with_usage(pid: i32) -> Option<(std::time::Duration, std::time::Duration)> {
    sys::reap_with_usage(pid)
}
