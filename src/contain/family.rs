//! The helper's tree as the layers hold it: the group always, a cgroup
//! over it where one was made. KILL goes to the cgroup at once, any
//! other signal to the group and to each member outside it. The group
//! (our descendants, as their subreaper) stays a layer of its own under
//! the cgroup: a process may leave its cgroup (one delegated to the
//! user lets it write its pid into the parent's `cgroup.procs`), and it
//! is still ours. So members are both layers' together, the tree is
//! empty only when both are, and a sweep reaches what left the cgroup.

use std::collections::HashSet;

use super::Group;
use super::layer::{Layer, Reached};
use crate::signals::Signal;
use crate::sys;

/// Who belongs to the helper's tree, and how to reach it: the layers
/// over the group, top first, and the group.
#[derive(Debug, Clone, Default)]
pub(crate) struct Family {
    /// The layers over the group (a cgroup), top first.
    over: Vec<Box<dyn Layer>>,
    /// The group: always there, at the bottom.
    pub group: Group,
}

/// What one sweep did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Sweep {
    /// Each target reached, with how many signals went to it, in the
    /// order they went: a layer as a whole, then members one by one
    /// (`Reached::Descendants`: they left the group, or the layer).
    pub sent: Vec<(Reached, u32)>,
    /// This user's processes the scan for the tree's mark could not read
    /// (None: no such scan).
    pub unreadable: Option<u32>,
}

impl Sweep {
    /// KILL went to the whole cgroup, with one write to cgroup.kill.
    pub(crate) fn cgroup_killed(&self) -> bool {
        self.sent
            .iter()
            .any(|(target, count)| *target == Reached::Cgroup && *count > 0)
    }
}

impl Family {
    /// The stack: `over` the group, top first (`contain::layers_over`
    /// chooses them).
    pub(crate) fn new(group: Group, over: Vec<Box<dyn Layer>>) -> Family {
        Family { over, group }
    }

    /// The helper's pid (its group's id).
    pub(crate) fn helper(&self) -> i32 {
        self.group.helper
    }

    /// A child of ours that is not of the tree (an approver).
    pub(crate) fn adopt_stranger(&mut self, pid: i32) {
        self.group.adopt_stranger(pid);
    }

    /// Live processes of the helper's tree other than the helper itself:
    /// the members of the first layer over the group that can read them,
    /// else the group's.
    pub(crate) fn live_descendants(&self) -> sys::Descendants {
        let Some(mut found) = self.over.iter().find_map(|layer| layer.members()) else {
            return self.group.members();
        };
        self.group.keep_live_descendants(&mut found.processes);
        // What left the layer is still among our descendants.
        if sys::BACKEND.subreaper {
            let ours = self.group.members();
            found.unreadable = ours.unreadable;
            let known: HashSet<i32> = found.processes.iter().map(|p| p.pid).collect();
            found.processes.extend(
                ours.processes
                    .into_iter()
                    .filter(|p| !known.contains(&p.pid)),
            );
        }
        found
    }

    /// After the helper exited: is anything of its tree still running,
    /// in a layer or, having left it, among our descendants?
    pub(crate) fn descendants_left(&self) -> bool {
        self.over
            .iter()
            .any(|layer| layer.is_empty() == Some(false))
            || !self.group.is_empty()
    }

    /// Send `signal` to the whole tree: to the first layer over the group
    /// that can deliver it, and what it did not reach one by one; else to
    /// the group. Nobody gets the same signal twice from one sweep: many
    /// programs treat a second INT or TERM as "force". `seen` collects
    /// every descendant pid signalled.
    pub(crate) fn sweep(&self, signal: Signal, seen: &mut HashSet<i32>) -> Sweep {
        // Scan before signalling: a process that dies of the signal at once
        // is a zombie by the time a later scan runs, and would go uncounted.
        let live = self.live_descendants();
        seen.extend(live.processes.iter().map(|p| p.pid));
        for layer in &self.over {
            let Some(delivered) = layer.deliver(signal, &live.processes) else {
                continue;
            };
            let left: Vec<sys::ProcInfo> = live
                .processes
                .into_iter()
                .filter(|p| !delivered.reached.contains(&p.pid))
                .collect();
            let one_by_one = self.group.signal_each(signal, &left);
            return Sweep {
                sent: vec![
                    (layer.target(), delivered.to_layer),
                    (Reached::Descendants, one_by_one),
                ],
                unreadable: None,
            };
        }
        let delivered = self
            .group
            .deliver(signal, &live.processes)
            .unwrap_or_default();
        Sweep {
            sent: vec![
                (Reached::Group, delivered.to_layer),
                (Reached::Descendants, delivered.one_by_one),
            ],
            unreadable: live.unreadable,
        }
    }
}
