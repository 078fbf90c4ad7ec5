//! What /proc says about processes (Linux): one process's state, every
//! process from one scan, our own children, and the
//! processes that carry a marker in their environment. Plain file reads:
//! no system call here needs libc. Both Linux backends read it: the
//! portable one uses it exactly as macOS uses libproc.

use std::path::Path;

use super::{Marked, ProcInfo, effective_uid};
use crate::sys::read_small;

/// Every process whose environment holds exactly `entry` (`NAME=value`):
/// what is left of a tree whose parent links died with its supervisor.
/// (The portable backend finds them from its table, as macOS does.)
#[cfg(not(mcp_bound_portable))]
pub(in crate::sys) fn pids_with_env(entry: &[u8]) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| marked(*pid, entry) == Marked::Yes)
        .collect()
}

/// Whether process `pid`'s environment holds exactly `entry`. One of
/// this user's processes whose environment cannot be read (a setuid
/// program) is `Unreadable`; another user's, or one gone, is `No`.
pub(crate) fn marked(pid: i32, entry: &[u8]) -> Marked {
    use std::os::unix::fs::MetadataExt;
    match std::fs::read(format!("/proc/{pid}/environ")) {
        Ok(env) if env.split(|b| *b == 0).any(|var| var == entry) => Marked::Yes,
        Ok(_) => Marked::No,
        Err(_) => match std::fs::metadata(format!("/proc/{pid}")) {
            Ok(meta) if meta.uid() == effective_uid() => Marked::Unreadable,
            _ => Marked::No,
        },
    }
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
pub(crate) fn proc_info(pid: i32) -> Option<ProcInfo> {
    let stat = read_small(Path::new(&format!("/proc/{pid}/stat"))).ok()?;
    parse_stat(pid, &stat)
}

/// Every process /proc shows now, from one scan.
pub(crate) fn all_processes() -> Vec<ProcInfo> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(proc_info)
        .collect()
}

/// Our direct children, cheaply, for reaping subreaped orphans.
pub(crate) fn children_of_self() -> Vec<i32> {
    let pid = std::process::id();
    read_small(Path::new(&format!("/proc/{pid}/task/{pid}/children")))
        .map(|text| {
            text.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_else(|_| {
            all_processes()
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
