//! The helper's tree as the layers hold it: the group always, a cgroup
//! over it where one was made. KILL goes to the cgroup at once, any
//! other signal to the group and to each member outside it. The group
//! (our descendants, as their subreaper) stays a layer of its own under
//! the cgroup: a process may leave its cgroup (one delegated to the
//! user lets it write its pid into the parent's `cgroup.procs`), and it
//! is still ours. So members are both layers' together, the tree is
//! empty only when both are, and a sweep reaches what left the cgroup.

use std::collections::HashSet;

use super::{Cgroup, Group};
use crate::sys;

/// Who belongs to the helper's tree, and how to reach it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Family {
    pub group: Group,
    /// The cgroup the tree lives in (--contain cgroup).
    pub cgroup: Option<Cgroup>,
}

/// What one sweep did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sweep {
    /// KILL went to the whole cgroup, with one write to cgroup.kill.
    pub cgroup_killed: bool,
    pub group_signalled: bool,
    /// Descendants outside the helper's group, signalled one by one.
    pub outside_group: u32,
    /// This user's processes the scan for the tree's mark could not read
    /// (None: no such scan).
    pub unreadable: Option<u32>,
}

impl Family {
    /// The helper's pid (its group's id).
    pub(crate) fn helper(&self) -> i32 {
        self.group.helper
    }

    /// A child of ours that is not of the tree (an approver).
    pub(crate) fn adopt_stranger(&mut self, pid: i32) {
        self.group.adopt_stranger(pid);
    }

    /// Live processes of the helper's tree other than the helper itself:
    /// the cgroup's members where it can read them, else the group's.
    pub(crate) fn live_descendants(&self) -> sys::Descendants {
        let in_cgroup = self.cgroup.as_ref().and_then(Cgroup::members);
        let Some(members) = in_cgroup else {
            return self.group.members();
        };
        let mut processes: Vec<sys::ProcInfo> =
            members.into_iter().filter_map(sys::proc_info).collect();
        self.group.keep_live_descendants(&mut processes);
        // What left the cgroup is still among our descendants.
        let mut unreadable = None;
        if sys::BACKEND.subreaper {
            let ours = self.group.members();
            unreadable = ours.unreadable;
            let known: HashSet<i32> = processes.iter().map(|p| p.pid).collect();
            processes.extend(
                ours.processes
                    .into_iter()
                    .filter(|p| !known.contains(&p.pid)),
            );
        }
        sys::Descendants {
            processes,
            unreadable,
        }
    }

    /// After the helper exited: is anything of its tree still running,
    /// in the cgroup or, having left it, among our descendants?
    pub(crate) fn descendants_left(&self) -> bool {
        let in_cgroup = self.cgroup.as_ref().and_then(Cgroup::is_empty);
        in_cgroup == Some(false) || !self.group.is_empty()
    }

    /// Send `signo` to the whole tree. Nobody gets the same signal twice
    /// from one sweep: many programs treat a second INT or TERM as
    /// "force". `seen` collects every descendant pid signalled.
    pub(crate) fn sweep(&self, signo: i32, seen: &mut HashSet<i32>) -> Sweep {
        // Scan before signalling: a process that dies of the signal at once
        // is a zombie by the time a later scan runs, and would go uncounted.
        let live = self.live_descendants();
        seen.extend(live.processes.iter().map(|p| p.pid));
        // Who is in the cgroup, read before KILL empties it: the rest of
        // the tree left it, and gets KILL one by one.
        let inside: HashSet<i32> = match (&self.cgroup, signo) {
            (Some(cgroup), crate::signals::SIGKILL) => {
                cgroup.members().unwrap_or_default().into_iter().collect()
            }
            _ => HashSet::new(),
        };
        if self.cgroup.as_ref().is_some_and(|c| c.signal(signo)) {
            let left: Vec<sys::ProcInfo> = live
                .processes
                .into_iter()
                .filter(|p| !inside.contains(&p.pid))
                .collect();
            let outside_group = self.group.signal_each(signo, &left);
            return Sweep {
                cgroup_killed: true,
                outside_group,
                ..Sweep::default()
            };
        }
        let (group_signalled, outside_group) = self.group.signal(signo, &live.processes);
        Sweep {
            cgroup_killed: false,
            group_signalled,
            outside_group,
            unreadable: live.unreadable,
        }
    }
}
