//! The cgroup layer (Linux, cgroup v2): the helper is born in a fresh
//! cgroup under ours (clone3 into it where the kernel allows, else it
//! writes itself into `cgroup.procs` before exec; see `sys::spawn`), so
//! everything it ever forks stays inside, setsid and double forks
//! included. The cgroup2 mount is /sys/fs/cgroup or, on hybrid systems,
//! `…/unified` (by statfs), else found in /proc/self/mountinfo; our own
//! cgroup in /proc/self/cgroup. It applies the limits as its
//! controllers' files (`apply_limits`). It is
//! removed at the end.
//!
//! As a layer: `before_spawn` opens what the helper joins, `kill` is one
//! write to `cgroup.kill`, `members` reads `cgroup.procs`, `is_empty`
//! reads `cgroup.events`. A cgroup cannot deliver any other signal to all
//! its members at once, so `signal` says so and the group under it sends
//! the polite one.

use super::layer::{Delivered, Layer, Reached};
use super::limits::{BEST_EFFORT, Limits};
use crate::error::NotStarted;
use crate::signals::Signal;
use crate::sys::fd::{AsFd, BorrowedFd};
use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::sys;

/// One cgroup of ours, holding a helper's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cgroup {
    dir: PathBuf,
}

/// What the helper joins as it starts: the cgroup's directory (to clone
/// into) and the path of its `cgroup.procs` (to write itself into).
pub(crate) struct Entrance {
    dir: File,
    procs: CString,
}

impl Entrance {
    /// As `sys::Setup` takes it.
    pub(crate) fn as_setup(&self) -> (BorrowedFd<'_>, &CStr) {
        (self.dir.as_fd(), self.procs.as_c_str())
    }
}

impl Cgroup {
    /// A fresh cgroup under ours, or why none can be made here.
    pub(crate) fn create() -> Result<Cgroup, String> {
        if !sys::BACKEND.cgroup {
            return Err(format!("no cgroup on {}", sys::BACKEND.os));
        }
        make_cgroup().map(|dir| Cgroup { dir })
    }

    /// The cgroup at `dir` (the watchdog's, once mcp-bound is gone).
    pub(crate) fn at(dir: PathBuf) -> Cgroup {
        Cgroup { dir }
    }

    /// Its directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Open what the helper joins as it starts.
    pub(crate) fn before_spawn(&self) -> io::Result<Entrance> {
        let procs = CString::new(
            self.dir
                .join("cgroup.procs")
                .into_os_string()
                .into_encoded_bytes(),
        )
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        Ok(Entrance {
            dir: File::open(&self.dir)?,
            procs,
        })
    }

    /// KILL every process in the cgroup at once (cgroup.kill, Linux 5.14).
    /// False where the kernel has no cgroup.kill.
    pub(crate) fn kill(&self) -> bool {
        std::fs::write(self.dir.join("cgroup.kill"), "1").is_ok()
    }

    /// The processes in the cgroup (its cgroup.procs), None if unreadable.
    pub(crate) fn members(&self) -> Option<Vec<i32>> {
        let procs = sys::read_small(&self.dir.join("cgroup.procs")).ok()?;
        Some(procs.lines().filter_map(|p| p.parse().ok()).collect())
    }

    /// Is no live process left in it? cgroup.events says "populated 0"
    /// once the last is gone (a zombie does not count). None if unreadable.
    pub(crate) fn is_empty(&self) -> Option<bool> {
        let events = sys::read_small(&self.dir.join("cgroup.events")).ok()?;
        Some(!events.lines().any(|line| line == "populated 1"))
    }

    /// KILL what is left, one by one where there is no cgroup.kill, until
    /// none is (the watchdog's, once mcp-bound is gone).
    pub(crate) fn kill_all(&self) {
        if self.kill() {
            return;
        }
        for _ in 0..100 {
            let pids = self.members().unwrap_or_default();
            if pids.is_empty() {
                break;
            }
            for pid in pids {
                sys::send_signal(pid, crate::signals::SIGKILL);
            }
        }
    }

    /// OOM kills inside the cgroup so far (read before it is removed).
    pub(crate) fn oom_kills(&self) -> Option<u64> {
        let events = sys::read_small(&self.dir.join("memory.events")).ok()?;
        events
            .lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|n| n.trim().parse().ok())
    }

    /// What the whole tree used, as the cgroup counted it (read before it
    /// is removed): CPU from cpu.stat's usage_usec, in milliseconds, and
    /// memory.peak. None for what cannot be read.
    pub(crate) fn usage(&self) -> (Option<u64>, Option<u64>) {
        let cpu = sys::read_small(&self.dir.join("cpu.stat"))
            .ok()
            .and_then(|stat| {
                stat.lines()
                    .find_map(|l| l.strip_prefix("usage_usec "))
                    .and_then(|n| n.trim().parse::<u64>().ok())
                    .map(|usec| usec / 1000)
            });
        let peak = sys::read_small(&self.dir.join("memory.peak"))
            .ok()
            .and_then(|n| n.trim().parse().ok());
        (cpu, peak)
    }

    /// Remove the emptied cgroup: it is empty once its last process is
    /// reaped (`populated 0`); give that a moment.
    pub(crate) fn remove(&self) {
        let deadline = Instant::now() + Duration::from_secs(2);
        while std::fs::remove_dir(&self.dir).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Layer for Cgroup {
    fn target(&self) -> Reached {
        Reached::Cgroup
    }

    /// Only KILL goes to every member at once (`cgroup.kill`); who was in
    /// the cgroup is read first, since the kill empties it.
    fn deliver(&self, signal: Signal, _live: &[sys::ProcInfo]) -> Option<Delivered> {
        if signal != crate::signals::SIGKILL {
            return None;
        }
        let inside = self.members().unwrap_or_default();
        self.kill().then(|| Delivered {
            to_layer: 1,
            one_by_one: 0,
            reached: inside.into_iter().collect(),
        })
    }

    fn members(&self) -> Option<sys::Descendants> {
        let pids = Cgroup::members(self)?;
        Some(sys::Descendants {
            processes: pids.into_iter().filter_map(sys::proc_info).collect(),
            unreadable: None,
        })
    }

    fn is_empty(&self) -> Option<bool> {
        Cgroup::is_empty(self)
    }

    fn boxed(&self) -> Box<dyn Layer> {
        Box::new(self.clone())
    }
}

/// The controller files that hold `limits`: (controller, file, value).
fn controller_files(limits: &Limits) -> Vec<(&'static str, &'static str, String)> {
    let mut wanted = Vec::new();
    if let Some(bytes) = limits.memory_max {
        wanted.push(("memory", "memory.max", bytes.to_string()));
    }
    if let Some(pids) = limits.pids_max {
        wanted.push(("pids", "pids.max", pids.to_string()));
    }
    if let Some(cpus) = limits.cpu_max {
        let quota = (cpus * 100_000.0).round().max(1000.0) as u64;
        wanted.push(("cpu", "cpu.max", format!("{quota} 100000")));
    }
    wanted
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

/// The system's cgroups, or why there are none.
fn cgroups() -> Result<sys::Cgroups, String> {
    sys::CGROUPS.ok_or_else(|| format!("no cgroup v2 on {}", sys::BACKEND.os))
}

/// Where the cgroup2 hierarchy is mounted, and our cgroup in it. The
/// usual places are asked first (one statfs each); mountinfo is read only
/// when neither is a cgroup2 mount.
fn our_cgroup() -> Result<PathBuf, String> {
    let cgroups = cgroups()?;
    let usual = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .into_iter()
        .map(PathBuf::from)
        .find(|dir| (cgroups.is_mount)(dir));
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
        if let Err(e) = (cgroups()?.may_write)(&procs) {
            let _ = std::fs::remove_dir(&dir);
            return Err(format!(
                "cannot move a process into a cgroup ({}: {e})",
                procs.display()
            ));
        }
    }
    Ok(dir)
}

/// Write the controller limits into `cgroup`, enabling each controller in
/// the parent first. What cannot be applied refuses the call, or with
/// best effort is listed.
pub(super) fn apply_limits(
    cgroup: Option<&Cgroup>,
    limits: &Limits,
) -> Result<(Vec<String>, Vec<String>), NotStarted> {
    let (mut applied, mut not_applied) = (Vec::new(), Vec::new());
    for (controller, file, value) in controller_files(limits) {
        let result = match cgroup {
            None if !sys::BACKEND.cgroup => {
                Err(format!("{file}: no cgroup on {}", sys::BACKEND.os))
            }
            None => Err(format!("{file}: no cgroup (--contain group)")),
            Some(cgroup) => apply_one(&cgroup.dir, controller, file, &value),
        };
        match result {
            Ok(()) => applied.push(format!("{file}={value}")),
            Err(why) if limits.best_effort => not_applied.push(why),
            Err(why) => {
                if let Some(cgroup) = cgroup {
                    let _ = std::fs::remove_dir(&cgroup.dir);
                }
                return Err(
                    NotStarted::nothing(format!("--{}: {why}", file.replace('.', "-")))
                        .hint(BEST_EFFORT),
                );
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
        // Where mountinfo names one, statfs agrees (a backend without
        // cgroups has no means to look).
        let Some(cgroups) = sys::CGROUPS else { return };
        assert!(!(cgroups.is_mount)(Path::new("/tmp")));
        assert!(!(cgroups.is_mount)(Path::new("/nonexistent")));
        let text = sys::read_small(Path::new("/proc/self/mountinfo")).unwrap();
        if let Some(mount) = cgroup2_mount_in(&text) {
            assert!((cgroups.is_mount)(&mount), "{}", mount.display());
        }
    }
}
