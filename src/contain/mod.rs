//! Nothing outlives mcp-bound (`--contain auto|cgroup|group`).
//!
//! - **cgroup:** the helper is born in a fresh cgroup (v2) under ours
//!   (clone3 into it, see `sys::spawn`), so everything it ever forks stays
//!   inside, setsid and double forks included. The cgroup2 mount is
//!   /sys/fs/cgroup or, on hybrid systems, `…/unified` (by statfs), else
//!   found in /proc/self/mountinfo; our own cgroup in /proc/self/cgroup.
//!   It is removed at the end.
//! - **group:** the helper's process group, and mcp-bound's subreaper
//!   sweep while mcp-bound lives. After mcp-bound's death only the group
//!   can still be found: a descendant that left it is not.
//! - **auto:** cgroup when one can be made, otherwise group; the record
//!   says which and why.
//!
//! Either way a **watchdog** outlives a SIGKILLed mcp-bound (`watchdog.rs`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::sys;

mod said;
mod watchdog;

use watchdog::Watchdog;
pub(crate) use watchdog::{FinalWords, LastWords, Link};
pub use watchdog::{ORPHANED, orphaned};

/// How the tree is contained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ContainMode {
    Auto,
    Cgroup,
    Group,
}

/// Limits set through the cgroup's controllers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CgroupLimits {
    /// memory.max, bytes.
    pub memory_max: Option<u64>,
    /// pids.max.
    pub pids_max: Option<u64>,
    /// cpu.max as a number of CPUs (0.5: half of one).
    pub cpu_max: Option<f64>,
    /// Go on without the ones the machine cannot apply (recorded).
    pub best_effort: bool,
}

impl CgroupLimits {
    fn wanted(&self) -> Vec<(&'static str, &'static str, String)> {
        let mut wanted = Vec::new();
        if let Some(bytes) = self.memory_max {
            wanted.push(("memory", "memory.max", bytes.to_string()));
        }
        if let Some(pids) = self.pids_max {
            wanted.push(("pids", "pids.max", pids.to_string()));
        }
        if let Some(cpus) = self.cpu_max {
            let quota = (cpus * 100_000.0).round().max(1000.0) as u64;
            wanted.push(("cpu", "cpu.max", format!("{quota} 100000")));
        }
        wanted
    }
}

/// What the record says about containment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContainFacts {
    /// cgroup, group (with a subreaper), or group+mark (no subreaper:
    /// what left the group is found by the tree's mark).
    pub method: &'static str,
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

/// The environment variable that marks the helper's tree.
pub const TREE_MARK: &str = "MCP_BOUND_TREE";

/// The environment variable that marks the per-call approvers' trees
/// (--tool-approve-cmd), with the call's mark as its value. An approver
/// runs outside the server's cgroup and group, and what it leaves behind
/// (a setsid grandchild) is found by this mark and killed when the
/// approvers stop, and by the watchdog if mcp-bound dies.
pub const APPROVER_MARK: &str = "MCP_BOUND_APPROVER";

/// KILL every process carrying `variable=value`, a few rounds, so what
/// forked meanwhile is caught too.
pub(crate) fn kill_marked(variable: &str, value: &str) {
    let entry = format!("{variable}={value}").into_bytes();
    for _ in 0..20 {
        let pids = crate::sys::pids_with_env(&entry);
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
    /// The cgroup directory, with cgroup.
    cgroup: Option<PathBuf>,
    watchdog: Option<Watchdog>,
    pub facts: ContainFacts,
}

/// The first cgroup2 mount point in /proc/self/mountinfo's text.
fn cgroup2_mount_in(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        (right.split_whitespace().next()? == "cgroup2")
            .then(|| left.split_whitespace().nth(4).map(PathBuf::from))
            .flatten()
    })
}

/// Where the cgroup2 hierarchy is mounted, and our cgroup in it. The
/// usual places are asked first (one statfs each); mountinfo is read only
/// when neither is a cgroup2 mount.
fn our_cgroup() -> Result<PathBuf, String> {
    let usual = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .into_iter()
        .map(PathBuf::from)
        .find(|dir| sys::is_cgroup2_mount(dir));
    let mount = match usual {
        Some(mount) => mount,
        None => {
            let mountinfo = sys::read_small(Path::new("/proc/self/mountinfo"))
                .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
            cgroup2_mount_in(&mountinfo).ok_or("no cgroup2 hierarchy is mounted")?
        }
    };
    let ours = sys::read_small(Path::new("/proc/self/cgroup"))
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let relative = ours
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .ok_or("this process is in no cgroup2 cgroup")?;
    Ok(mount.join(relative.trim_start_matches('/')))
}

fn make_cgroup() -> Result<PathBuf, String> {
    let parent = our_cgroup()?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = parent.join(format!("mcp-bound-{}-{nanos:x}", std::process::id()));
    std::fs::create_dir(&dir)
        .map_err(|e| format!("cannot create a cgroup in {}: {e}", parent.display()))?;
    // Moving a process needs write access to the cgroup.procs of both
    // cgroups (the common ancestor's is ours): a cgroup we may create but
    // not move into is no cgroup for us. Checked now, so a refusal is a
    // fallback or a clear error, never a helper that fails to start.
    for procs in [parent.join("cgroup.procs"), dir.join("cgroup.procs")] {
        if let Err(e) = sys::may_write(&procs) {
            let _ = std::fs::remove_dir(&dir);
            return Err(format!(
                "cannot move a process into a cgroup ({}: {e})",
                procs.display()
            ));
        }
    }
    Ok(dir)
}

impl Contain {
    /// Before dispatch: the cgroup, or why there is none. `Err` only for
    /// `--contain cgroup` without one (the call is refused).
    pub fn prepare(mode: ContainMode, limits: &CgroupLimits) -> Result<Contain, String> {
        let make = || match sys::BACKEND.cgroup {
            true => make_cgroup(),
            false => Err(format!("no cgroup on {}", sys::BACKEND.os)),
        };
        let cgroup = match mode {
            ContainMode::Group => Err("--contain group".to_string()),
            ContainMode::Cgroup => Ok(make().map_err(|e| {
                format!("--contain cgroup: {e}; nothing was started (--contain group or auto runs)")
            })?),
            ContainMode::Auto => make(),
        };
        let (cgroup, fallback) = match cgroup {
            Ok(dir) => (Some(dir), None),
            Err(why) => (None, (mode == ContainMode::Auto).then_some(why)),
        };
        let (applied, not_applied) = apply_limits(cgroup.as_deref(), limits)?;
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Ok(Contain {
            mark: format!("{}-{nonce:x}", std::process::id()),
            facts: ContainFacts {
                method: match (&cgroup, sys::BACKEND.subreaper) {
                    (Some(_), _) => "cgroup",
                    (None, true) => "group",
                    (None, false) => "group+mark",
                },
                cgroup: cgroup.as_ref().map(|d| d.to_string_lossy().into_owned()),
                fallback,
                watchdog_pid: None,
                oom_kills: cgroup.as_ref().map(|_| 0),
                applied,
                not_applied,
                unreadable: None,
            },
            cgroup,
            watchdog: None,
        })
    }

    /// The environment entry that marks the tree.
    pub fn mark(&self) -> (String, String) {
        (TREE_MARK.to_string(), self.mark.clone())
    }

    /// The cgroup the helper starts in (cgroup only).
    pub fn cgroup_dir(&self) -> Option<&std::path::Path> {
        self.cgroup.as_deref()
    }

    /// OOM kills inside the cgroup so far (read before it is removed).
    pub fn oom_kills(&self) -> Option<u64> {
        let events = sys::read_small(&self.cgroup.as_ref()?.join("memory.events")).ok()?;
        events
            .lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|n| n.trim().parse().ok())
    }

    /// What the whole tree used, as the cgroup counted it (read before it
    /// is removed): CPU from cpu.stat's usage_usec, in milliseconds, and
    /// memory.peak. None for what cannot be read.
    pub fn cgroup_usage(&self) -> (Option<u64>, Option<u64>) {
        let Some(dir) = self.cgroup.as_ref() else {
            return (None, None);
        };
        let cpu = sys::read_small(&dir.join("cpu.stat"))
            .ok()
            .and_then(|stat| {
                stat.lines()
                    .find_map(|l| l.strip_prefix("usage_usec "))
                    .and_then(|n| n.trim().parse::<u64>().ok())
                    .map(|usec| usec / 1000)
            });
        let peak = sys::read_small(&dir.join("memory.peak"))
            .ok()
            .and_then(|n| n.trim().parse().ok());
        (cpu, peak)
    }
}

/// KILL every process in the cgroup at once (cgroup.kill, Linux 5.14).
/// False where the kernel has no cgroup.kill.
pub(crate) fn kill_cgroup(dir: &Path) -> bool {
    std::fs::write(dir.join("cgroup.kill"), "1").is_ok()
}

/// The processes in the cgroup (its cgroup.procs), None if unreadable.
pub(crate) fn cgroup_members(dir: &Path) -> Option<Vec<i32>> {
    let procs = sys::read_small(&dir.join("cgroup.procs")).ok()?;
    Some(procs.lines().filter_map(|p| p.parse().ok()).collect())
}

impl Drop for Contain {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Write the controller limits into `cgroup`, enabling each controller in
/// the parent first. What cannot be applied refuses the call, or with
/// best effort is listed.
fn apply_limits(
    cgroup: Option<&Path>,
    limits: &CgroupLimits,
) -> Result<(Vec<String>, Vec<String>), String> {
    let (mut applied, mut not_applied) = (Vec::new(), Vec::new());
    for (controller, file, value) in limits.wanted() {
        let result = match cgroup {
            None if !sys::BACKEND.cgroup => {
                Err(format!("{file}: no cgroup on {}", sys::BACKEND.os))
            }
            None => Err(format!("{file}: no cgroup (--contain group)")),
            Some(dir) => apply_one(dir, controller, file, &value),
        };
        match result {
            Ok(()) => applied.push(format!("{file}={value}")),
            Err(why) if limits.best_effort => not_applied.push(why),
            Err(why) => {
                if let Some(dir) = cgroup {
                    let _ = std::fs::remove_dir(dir);
                }
                return Err(format!(
                    "--{}: {why}; nothing was started (--limits best-effort goes on without it)",
                    file.replace('.', "-")
                ));
            }
        }
    }
    Ok((applied, not_applied))
}

fn apply_one(dir: &Path, controller: &str, file: &str, value: &str) -> Result<(), String> {
    let parent = dir.parent().ok_or("a cgroup with no parent")?;
    let available = std::fs::read_to_string(parent.join("cgroup.controllers")).unwrap_or_default();
    if !available.split_whitespace().any(|c| c == controller) {
        return Err(format!(
            "{file}: the {controller} controller is not available in {}",
            parent.display()
        ));
    }
    let enabled =
        std::fs::read_to_string(parent.join("cgroup.subtree_control")).unwrap_or_default();
    if !enabled.split_whitespace().any(|c| c == controller) {
        std::fs::write(
            parent.join("cgroup.subtree_control"),
            format!("+{controller}"),
        )
        .map_err(|e| format!("{file}: cannot enable the {controller} controller: {e}"))?;
    }
    std::fs::write(dir.join(file), value).map_err(|e| format!("{file}: {e}"))
}

/// Remove an emptied cgroup: it is empty once its last process is reaped
/// (`populated 0`); give that a moment.
fn remove_cgroup(dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while std::fs::remove_dir(dir).is_err() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cgroup2_mount_is_found_in_mountinfo_or_by_statfs() {
        let hybrid = "22 27 0:21 / /proc rw,relatime - proc proc rw\n\
            30 29 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n\
            31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw\n\
            32 30 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        assert_eq!(
            cgroup2_mount_in(hybrid),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(
            cgroup2_mount_in("22 27 0:21 / /proc rw - proc proc rw\n"),
            None
        );
        assert!(!sys::is_cgroup2_mount(Path::new("/tmp")));
        assert!(!sys::is_cgroup2_mount(Path::new("/nonexistent")));
        // Where mountinfo names one, statfs agrees (a backend without
        // cgroups sees none).
        let text = sys::read_small(Path::new("/proc/self/mountinfo")).unwrap();
        if let Some(mount) = cgroup2_mount_in(&text).filter(|_| sys::BACKEND.cgroup) {
            assert!(sys::is_cgroup2_mount(&mount), "{}", mount.display());
        }
    }
}
