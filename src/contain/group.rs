//! The group layer, always there: the helper is started in a process
//! group of its own, and every process of its tree inherits the tree's
//! environment mark. Who belongs is told apart from strangers: mcp-bound
//! can inherit children it never started (a shell that `exec`s it hands
//! over its background jobs and the process substitution carrying our
//! stderr); those, and anything that started before the helper, are never
//! signalled, never waited for, only reaped if they exit.
//!
//! As a layer: `before_spawn` notes the strangers, `signal` goes to the
//! group and to each member that left it (to kill is to signal KILL), `members` is one scan
//! (our descendants as a subreaper; without one, what carries the mark
//! too), and `is_empty` reads our children list where we are a subreaper.

use super::layer::{Delivered, Layer, Reached};
use crate::signals::{CONTINUE, SIGKILL, Signal};
use crate::sys;

/// The helper's group and how its tree is recognised.
#[derive(Debug, Clone, Default)]
pub(crate) struct Group {
    /// The helper's pid, which is its group's id.
    pub helper: i32,
    /// The helper's start time (in the table's unit), if it was read.
    helper_start: Option<u64>,
    /// Our children before dispatch, as (pid, start time).
    strangers: Vec<(i32, u64)>,
    /// The environment entry (`NAME=value`) every process of the tree
    /// inherits: without a subreaper, how what escaped is found.
    mark: Option<Vec<u8>>,
}

impl Group {
    /// Our children now, strangers to the tree: call before the helper
    /// is spawned (usually empty, and one small read).
    pub(crate) fn before_spawn() -> Vec<(i32, u64)> {
        sys::children_of_self()
            .into_iter()
            .filter_map(sys::proc_info)
            .map(|p| (p.pid, p.start))
            .collect()
    }

    pub(crate) fn new(helper: i32, strangers: Vec<(i32, u64)>, mark: Option<Vec<u8>>) -> Group {
        Group {
            helper,
            helper_start: sys::proc_info(helper).map(|p| p.start),
            strangers,
            mark,
        }
    }

    /// A child of ours started after the helper that is not of its tree
    /// (an approver): never signalled or waited for as the tree's.
    pub(crate) fn adopt_stranger(&mut self, pid: i32) {
        if let Some(info) = sys::proc_info(pid) {
            self.strangers.push((info.pid, info.start));
        }
    }

    /// Not the helper's: an earlier child of ours, or older than the helper
    /// (a stranger's descendant that re-parented to us).
    fn is_stranger(&self, p: &sys::ProcInfo) -> bool {
        self.helper_start.is_some_and(|start| p.start < start)
            || self.strangers.contains(&(p.pid, p.start))
    }

    /// Send `signal` to the group, then to each of `members` outside it
    /// (escaped with setsid or setpgid). A stopped process only acts on the
    /// signal once continued, so CONT follows, unless the signal is KILL
    /// (which needs no help) or CONT. Whether the group got it, and how
    /// many outside did.
    pub(crate) fn signal(&self, signal: Signal, members: &[sys::ProcInfo]) -> (bool, u32) {
        let group_signalled = signal_group(self.helper, signal);
        let outsiders: Vec<i32> = members
            .iter()
            .filter(|p| p.pgid != self.helper && signal_pid(p.pid, signal))
            .map(|p| p.pid)
            .collect();
        if let Some(cont) = CONTINUE.filter(|cont| signal != SIGKILL && signal != *cont) {
            signal_group(self.helper, cont);
            for pid in &outsiders {
                signal_pid(*pid, cont);
            }
        }
        (group_signalled, outsiders.len() as u32)
    }

    /// `signal` to each of `processes` by its pid (those that left the
    /// cgroup): how many it reached.
    pub(crate) fn signal_each(&self, signal: Signal, processes: &[sys::ProcInfo]) -> u32 {
        let reached = processes
            .iter()
            .filter(|p| p.pid != self.helper && signal_pid(p.pid, signal));
        reached.count() as u32
    }

    /// Live processes of the tree but the helper, from one scan of the
    /// process table: our descendants, and where there is no subreaper
    /// what carries the tree's mark (with how many of this user's
    /// processes could not be read for it).
    pub(crate) fn members(&self) -> sys::Descendants {
        let mut found = sys::descendants(std::process::id() as i32, self.mark.as_deref(), &|p| {
            self.is_stranger(p)
        });
        self.keep_live_descendants(&mut found.processes);
        found
    }

    /// Of `processes`, keep the tree's live ones but the helper (a zombie
    /// has ended; the helper is waited for on its own).
    pub(crate) fn keep_live_descendants(&self, processes: &mut Vec<sys::ProcInfo>) {
        processes.retain(|p| !p.zombie && p.pid != self.helper);
    }

    /// After the helper exited: is nothing of its tree left running? As a
    /// subreaper, every live descendant then is, or descends from, one of
    /// our own live children (a dead child's children re-parent to us), so
    /// reading our children list answers it without scanning the table.
    /// Without a subreaper, an escape is no child of ours: the table is
    /// scanned.
    pub(crate) fn is_empty(&self) -> bool {
        if !sys::BACKEND.subreaper {
            return self.members().processes.is_empty();
        }
        !sys::children_of_self()
            .into_iter()
            .filter(|pid| *pid != self.helper)
            .filter_map(sys::proc_info)
            .any(|p| !p.zombie && !self.is_stranger(&p))
    }
}

impl Layer for Group {
    fn target(&self) -> Reached {
        Reached::Group
    }

    /// The group gets it, then each member outside it, by pid.
    fn deliver(&self, signal: Signal, live: &[sys::ProcInfo]) -> Option<Delivered> {
        let (group_signalled, outside) = self.signal(signal, live);
        Some(Delivered {
            to_layer: u32::from(group_signalled),
            one_by_one: outside,
            reached: live.iter().map(|p| p.pid).collect(),
        })
    }

    fn members(&self) -> Option<sys::Descendants> {
        Some(Group::members(self))
    }

    fn is_empty(&self) -> Option<bool> {
        Some(Group::is_empty(self))
    }

    fn boxed(&self) -> Box<dyn Layer> {
        Box::new(self.clone())
    }
}

/// Signal a process group (an approver's, or the helper's). False if the
/// group is gone.
pub(crate) fn signal_group(pgid: i32, signal: Signal) -> bool {
    pgid > 1 && sys::send_signal(-pgid, signal)
}

fn signal_pid(pid: i32, signal: Signal) -> bool {
    pid > 1 && sys::send_signal(pid, signal)
}
