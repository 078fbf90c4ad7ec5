//! What /proc says about processes (Linux): one process's state, every
//! descendant of a process from one scan, our own children, and the
//! processes that carry a marker in their environment. Plain file reads:
//! no system call here needs libc.

use std::collections::HashMap;
use std::path::Path;

use super::{ProcInfo, read_small};

/// Every process whose environment holds exactly `entry` (`NAME=value`):
/// what is left of a tree whose parent links died with its supervisor.
pub fn pids_with_env(entry: &[u8]) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == entry))
        })
        .collect()
}

fn parse_stat(pid: i32, stat: &str) -> Option<ProcInfo> {
    // The command name may contain spaces and parentheses: split after
    // the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    // Fields 6 to 21, then starttime.
    let start = fields.nth(16)?.parse().ok()?;
    Some(ProcInfo {
        pid,
        ppid,
        pgid,
        zombie: state == "Z" || state == "X",
        start,
    })
}

/// One process, as /proc shows it now (None once it is reaped).
pub fn proc_info(pid: i32) -> Option<ProcInfo> {
    let stat = read_small(Path::new(&format!("/proc/{pid}/stat"))).ok()?;
    parse_stat(pid, &stat)
}

/// Every process below `root` (not `root` itself), from one /proc
/// scan, leaving out each process for which `skip` says so together
/// with everything below it.
pub fn descendants(root: i32, skip: &dyn Fn(&ProcInfo) -> bool) -> Vec<ProcInfo> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut by_parent: HashMap<i32, Vec<ProcInfo>> = HashMap::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = read_small(Path::new(&format!("/proc/{pid}/stat"))) else {
            continue;
        };
        if let Some(info) = parse_stat(pid, &stat) {
            by_parent.entry(info.ppid).or_default().push(info);
        }
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

/// Our direct children, cheaply, for reaping subreaped orphans.
pub fn children_of_self() -> Vec<i32> {
    let pid = std::process::id();
    read_small(Path::new(&format!("/proc/{pid}/task/{pid}/children")))
        .map(|text| {
            text.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_else(|_| {
            descendants(pid as i32, &|_| false)
                .into_iter()
                .filter(|p| p.ppid == pid as i32)
                .map(|p| p.pid)
                .collect()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_stat_parses() {
        let me = std::process::id() as i32;
        let stat = read_small(Path::new("/proc/self/stat")).unwrap();
        assert_eq!(parse_stat(me, &stat).map(|p| p.pid), Some(me));
    }

    #[test]
    fn stat_with_odd_command_name() {
        // Fields 3 to 22 of a real stat line, after an odd name.
        let rest = "S 7 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654";
        let info = parse_stat(42, &format!("42 (a) b (c)) {rest} 1 2 3")).unwrap();
        assert_eq!(
            info,
            ProcInfo {
                pid: 42,
                ppid: 7,
                pgid: 42,
                zombie: false,
                start: 987654,
            }
        );
        let zombie = rest.replacen('S', "Z", 1);
        assert!(parse_stat(1, &format!("1 (x) {zombie}")).unwrap().zombie);
        assert_eq!(
            parse_stat(1, "1 (x) Z 0 1 1"),
            None,
            "a cut line is no line"
        );
    }
}
