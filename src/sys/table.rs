//! The process table's algorithms, pure: the tree below a process by its
//! parents' links, and the processes that carry the tree's mark. Each
//! backend reads the table its own way (/proc, libproc) into `ProcInfo`s.

// The Windows backend reads no table yet (it refuses to run).
#![cfg_attr(windows, allow(dead_code))]

use std::collections::HashMap;

use super::ProcInfo;

/// Whether one process carries the tree's mark, as far as its
/// environment can be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::sys) enum Marked {
    Yes,
    No,
    /// One of this user's processes whose environment could not be read
    /// (a setuid program, one exiting): it may be the tree's.
    Unreadable,
}

/// The helper's tree as one scan of the process table found it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Descendants {
    pub processes: Vec<ProcInfo>,
    /// This user's processes whose environment the scan for the mark
    /// could not read: the tree may be larger than what was found. None
    /// where no scan looks for the mark (a subreaper keeps the tree ours).
    pub unreadable: Option<u32>,
}

/// Every process of `all` below `root` (not `root` itself), leaving out
/// each process `skip` names, with everything below it.
pub(in crate::sys) fn below(
    root: i32,
    all: Vec<ProcInfo>,
    skip: &dyn Fn(&ProcInfo) -> bool,
) -> Vec<ProcInfo> {
    let mut by_parent: HashMap<i32, Vec<ProcInfo>> = HashMap::new();
    for info in all {
        by_parent.entry(info.ppid).or_default().push(info);
    }
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for info in by_parent.remove(&parent).unwrap_or_default() {
            if skip(&info) {
                continue;
            }
            frontier.push(info.pid);
            found.push(info);
        }
    }
    found
}

/// Every process of `all` below `root` by its parents' links, and every
/// process `marked` says carries the tree's mark (an escape, re-parented
/// to init or launchd), with what is below those, each once and none
/// `skip` names. A process whose environment cannot be read is never
/// taken for the tree (no stranger is signalled): it is counted.
#[cfg_attr(
    all(target_os = "linux", not(mcp_bound_portable)),
    allow(
        dead_code,
        reason = "Linux has a subreaper: the parents' links suffice"
    )
)]
pub(in crate::sys) fn below_or_marked(
    root: i32,
    all: Vec<ProcInfo>,
    marked: &dyn Fn(&ProcInfo) -> Marked,
    skip: &dyn Fn(&ProcInfo) -> bool,
) -> Descendants {
    let mut unreadable = 0;
    let mut escapes = Vec::new();
    for process in all
        .iter()
        .filter(|p| p.pid != root && !p.zombie && !skip(p))
    {
        match marked(process) {
            Marked::Yes => escapes.push(*process),
            Marked::No => {}
            Marked::Unreadable => unreadable += 1,
        }
    }
    let mut found = below(root, all.clone(), skip);
    for escape in escapes {
        if found.iter().any(|p| p.pid == escape.pid) {
            continue;
        }
        found.push(escape);
        for info in below(escape.pid, all.clone(), skip) {
            if !found.iter().any(|p| p.pid == info.pid) {
                found.push(info);
            }
        }
    }
    Descendants {
        processes: found,
        unreadable: Some(unreadable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: i32, ppid: i32) -> ProcInfo {
        ProcInfo {
            pid,
            ppid,
            pgid: pid,
            zombie: false,
            start: pid as u64,
        }
    }

    #[test]
    fn the_tree_below_a_process_by_its_parents() {
        let all = vec![p(10, 1), p(11, 10), p(12, 11), p(20, 1), p(13, 10)];
        let mut pids: Vec<i32> = below(10, all.clone(), &|_| false)
            .iter()
            .map(|p| p.pid)
            .collect();
        pids.sort();
        assert_eq!(pids, [11, 12, 13]);
        let pids: Vec<i32> = below(10, all, &|p| p.pid == 11)
            .iter()
            .map(|p| p.pid)
            .collect();
        assert_eq!(pids, [13], "a skipped process takes what is below it");
    }

    /// An escape re-parented to init is found by its mark, and what it
    /// started with it; a stranger (no mark) is never taken.
    #[test]
    fn escapes_are_found_by_the_mark_and_strangers_are_not() {
        let all = vec![p(10, 1), p(11, 10), p(30, 1), p(31, 30), p(40, 1)];
        let marked = |p: &ProcInfo| match p.pid {
            30 => Marked::Yes,
            40 => Marked::Unreadable,
            _ => Marked::No,
        };
        let found = below_or_marked(10, all, &marked, &|_| false);
        let mut pids: Vec<i32> = found.processes.iter().map(|p| p.pid).collect();
        pids.sort();
        assert_eq!(pids, [11, 30, 31]);
        assert_eq!(found.unreadable, Some(1), "40 may be the tree's: counted");
    }
}
