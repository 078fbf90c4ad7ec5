//! The watchdog: a process in a session of its own that outlives a
//! SIGKILLed mcp-bound. It holds the read end of a pipe whose write end
//! only mcp-bound has. EOF without mcp-bound's "done" means mcp-bound
//! died: the watchdog kills the cgroup (cgroup.kill, or each pid in
//! cgroup.procs) or the helper's group and every marked process.
//! - With last words to write (the journal's terminal entry, the record:
//!   state `supervisor_killed`) it is a fork of mcp-bound, which has the
//!   call in memory.
//! - Without (no --journal, no --record) it is a [`sys::Waiter`]: a
//!   process that shares mcp-bound's memory and only reads the pipe, so
//!   it costs next to nothing to start and to end. On mcp-bound's death it
//!   strikes once (cgroup.kill, or KILL to the group), then execs
//!   mcp-bound as `mcp-bound-watchdog MODE TARGET PGID` ([`orphaned`]),
//!   which ends the rest and removes the cgroup.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::Path;

use super::{Contain, TREE_MARK, cgroup_members, kill_cgroup, remove_cgroup};
use crate::sys;

/// argv[0] of the clean-up a waiter execs once mcp-bound is gone.
pub const ORPHANED: &str = "mcp-bound-watchdog";

pub(super) enum Watchdog {
    /// A fork, which writes last words.
    Forked { pid: i32, writer: std::fs::File },
    /// A waiter, which only ends the tree.
    Waiter(sys::Waiter),
}

impl Contain {
    /// Start the watchdog. With `last_words` it is a fork, which runs them
    /// after the tree was killed when mcp-bound died before saying it was
    /// done; without, a waiter (where the system has one).
    pub fn start_watchdog(&mut self, last_words: Option<impl FnOnce()>) -> std::io::Result<()> {
        let watchdog = match last_words {
            None => match self.start_waiter() {
                Ok(waiter) => Watchdog::Waiter(waiter),
                Err(_) => self.fork_watchdog(|| {})?,
            },
            Some(last_words) => self.fork_watchdog(last_words)?,
        };
        self.facts.watchdog_pid = Some(match &watchdog {
            Watchdog::Forked { pid, .. } => *pid as u32,
            Watchdog::Waiter(waiter) => waiter.pid as u32,
        });
        self.watchdog = Some(watchdog);
        Ok(())
    }

    fn start_waiter(&self) -> std::io::Result<sys::Waiter> {
        let c = |text: &str| {
            std::ffi::CString::new(text)
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
        };
        let c_path = |path: &Path| c(&path.to_string_lossy());
        let (mode, target) = match &self.cgroup {
            Some(dir) => ("cgroup", c_path(dir)?),
            None => ("group", c(&self.mark)?),
        };
        sys::Waiter::start(sys::Orphaned {
            kill: self
                .cgroup
                .as_ref()
                .map(|dir| c_path(&dir.join("cgroup.kill")))
                .transpose()?,
            exe: c("/proc/self/exe")?,
            argv0: c(ORPHANED)?,
            mode: c(mode)?,
            target,
        })
    }

    fn fork_watchdog(&self, last_words: impl FnOnce()) -> std::io::Result<Watchdog> {
        let (reader, writer) = sys::pipe_cloexec()?;
        match sys::fork_process()? {
            Some(pid) => Ok(Watchdog::Forked { pid, writer }),
            None => {
                drop(writer);
                sys::detach(reader.as_raw_fd());
                crate::signals::SignalPipe::disarm_in_child();
                let watched = watch(reader.as_raw_fd());
                if !watched.done {
                    // mcp-bound died: end what it left, then say so.
                    kill_tree(
                        self.cgroup.as_deref(),
                        &self.mark,
                        watched.dead.unwrap_or(0),
                    );
                    last_words();
                }
                sys::exit_now(0)
            }
        }
    }

    /// The helper's process group, for the watchdog (after spawn).
    pub fn dispatched(&mut self, pgid: i32) {
        let line = format!("P{pgid}\n");
        match self.watchdog.as_mut() {
            Some(Watchdog::Forked { writer, .. }) => {
                let _ = writer.write_all(line.as_bytes());
            }
            Some(Watchdog::Waiter(waiter)) => waiter.tell(line.as_bytes()),
            None => {}
        }
    }

    /// The call is over (its tree is gone, its record and journal are
    /// written): tell the watchdog, wait for it, remove the cgroup. Also
    /// on drop, whichever way the call ends.
    pub fn finish(&mut self) {
        match self.watchdog.take() {
            Some(Watchdog::Forked { pid, mut writer }) => {
                let _ = writer.write_all(b"D\n");
                drop(writer);
                sys::wait_child(pid);
            }
            Some(Watchdog::Waiter(waiter)) => waiter.finish(),
            None => {}
        }
        if let Some(dir) = self.cgroup.take() {
            remove_cgroup(&dir);
        }
    }
}

/// Once mcp-bound is dead (in a watchdog): KILL everything left of the
/// tree, and remove the cgroup.
fn kill_tree(cgroup: Option<&Path>, mark: &str, pgid: i32) {
    match cgroup {
        Some(dir) => {
            if !kill_cgroup(dir) {
                // Before Linux 5.14: each pid, until none is left.
                for _ in 0..100 {
                    let pids = cgroup_members(dir).unwrap_or_default();
                    if pids.is_empty() {
                        break;
                    }
                    for pid in pids {
                        sys::send_signal(pid, crate::signals::SIGKILL);
                    }
                }
            }
            remove_cgroup(dir);
        }
        None => {
            if pgid > 1 {
                sys::send_signal(-pgid, crate::signals::SIGKILL);
            }
            // What left the group: found by the mark it inherited, a
            // few rounds, so what forked meanwhile is caught too.
            let entry = format!("{TREE_MARK}={}", mark).into_bytes();
            for _ in 0..20 {
                let pids = sys::pids_with_env(&entry);
                if pids.is_empty() {
                    break;
                }
                for pid in pids {
                    sys::send_signal(pid, crate::signals::SIGKILL);
                }
            }
        }
    }
}

/// `mcp-bound-watchdog MODE TARGET PGID`: what a waiter execs once
/// mcp-bound is gone. MODE `cgroup` (TARGET the cgroup's directory) or
/// `group` (TARGET the tree's mark); PGID the helper's group, 0 if none.
/// It started with every signal blocked: the ones that end a session are
/// ignored (which drops any pending), then all are unblocked.
pub fn orphaned(args: &[std::ffi::OsString]) -> i32 {
    sys::ignore_session_ends();
    sys::unblock_all_signals();
    let arg = |i: usize| args.get(i).map(|a| a.to_string_lossy().into_owned());
    let pgid = arg(3).and_then(|p| p.parse().ok()).unwrap_or(0);
    match (arg(1).as_deref(), arg(2)) {
        (Some("cgroup"), Some(dir)) => kill_tree(Some(Path::new(&dir)), "", pgid),
        (Some("group"), Some(mark)) => kill_tree(None, &mark, pgid),
        _ => return crate::error::code::OWN_FAILURE,
    }
    0
}

struct Watched {
    /// mcp-bound died; the helper's group when it had been dispatched.
    dead: Option<i32>,
    done: bool,
}

/// Block until mcp-bound says done or goes away.
fn watch(fd: std::os::fd::RawFd) -> Watched {
    let mut pgid = 0;
    let mut text = Vec::new();
    let mut buf = [0u8; 64];
    loop {
        match sys::read_blocking(fd, &mut buf) {
            Ok(0) | Err(_) => {
                return Watched {
                    dead: (pgid > 0).then_some(pgid),
                    done: false,
                };
            }
            Ok(n) => text.extend_from_slice(&buf[..n]),
        }
        while let Some(end) = text.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = text.drain(..=end).collect();
            match line.first() {
                Some(b'D') => {
                    return Watched {
                        dead: None,
                        done: true,
                    };
                }
                Some(b'P') => {
                    pgid = String::from_utf8_lossy(&line[1..line.len() - 1])
                        .parse()
                        .unwrap_or(0);
                }
                _ => {}
            }
        }
    }
}
