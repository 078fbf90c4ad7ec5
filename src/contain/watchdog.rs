//! The watchdog: a process in a session of its own that outlives a
//! SIGKILLed mcp-bound. It holds the read end of a pipe whose write end
//! only mcp-bound has. EOF without mcp-bound's "done" means mcp-bound
//! died: the watchdog kills the cgroup (cgroup.kill, or each pid in
//! cgroup.procs) and then, as without one, the helper's group and every
//! marked process (what left the cgroup is found by its mark).
//! - With last words to write (the journal's terminal entry, the record:
//!   state `supervisor_killed`) it is a fork of mcp-bound, which has the
//!   call in memory.
//! - Without (no --journal, no --record) it is a waiter (`sys::WAITER`): a
//!   process that shares mcp-bound's memory and only reads the pipe, so
//!   it costs next to nothing to start and to end. On mcp-bound's death it
//!   strikes once (cgroup.kill, or KILL to the group), then execs
//!   mcp-bound as `mcp-bound-watchdog MODE TARGET PGID` ([`orphaned`]),
//!   which ends the rest and removes the cgroup.
//!
//! What mcp-bound tells it is `said.rs`'s protocol, a line each (the
//! waiter reads `P` and `D` only). Should mcp-bound die while writing its
//! final words, the fork completes them, never adding a terminal entry
//! that is there already.

use crate::sys::fd::AsRawFd;
use std::io::Write;
use std::path::Path;

use super::said::Said;
use super::{APPROVER_MARK, Cgroup, Contain, ContainFacts, TREE_MARK, kill_marked};
use crate::sys;

/// argv[0] of the clean-up a waiter execs once mcp-bound is gone.
pub(crate) const ORPHANED: &str = "mcp-bound-watchdog";

pub(super) enum Watchdog {
    /// A fork, which writes last words.
    Forked { pid: i32, writer: std::fs::File },
    /// One the backend starts its own way: a waiter (Linux), which only
    /// ends the tree, or the heir (Windows), mcp-bound started again, told
    /// what to write (the brief) and handed each helper's job.
    Own(Box<dyn sys::Watcher>),
}

/// What the watchdog heard before mcp-bound went away: the latest
/// milestone, and the final words if mcp-bound had begun writing them.
#[derive(Debug, Default)]
pub(crate) struct LastWords {
    pub milestone: Option<String>,
    pub final_words: Option<FinalWords>,
}

/// The call's final words, as mcp-bound was about to write them.
#[derive(Debug)]
pub(crate) struct FinalWords {
    /// The record, one JSON line.
    pub record: String,
    /// The journal's terminal entry's fields, one JSON object.
    pub terminal: String,
    /// The journal's length before the terminal was appended.
    pub journal_len: Option<u64>,
    /// mcp-bound said they were all written.
    pub written: bool,
}

/// The call's line to its watchdog: the loop tells it of each new server
/// and each reap, the ending tells it the final words.
pub(crate) struct Link {
    writer: std::fs::File,
    /// A fork or an heir, which write last words (a waiter only ends the
    /// tree).
    speaks: bool,
    /// An heir's: what puts each helper's job into its handle table.
    hand: Option<Box<dyn sys::Hand>>,
}

impl Link {
    fn tell(&self, said: &Said) {
        let _ = (&self.writer).write_all(&said.encode());
    }

    /// A helper was spawned in its own group (an heir is handed its job;
    /// one it could not be handed is 0, and the job's kill-on-close alone
    /// ends the tree).
    pub(crate) fn dispatched(&self, pgid: i32) {
        let group = match &self.hand {
            Some(hand) => hand.group(pgid).unwrap_or(0),
            None => pgid,
        };
        self.tell(&Said::Group(group));
    }

    /// The helper is about to be reaped: its group's number is free from
    /// then on, and must never be signalled.
    pub(crate) fn reaping(&self) {
        self.tell(&Said::Group(0));
    }

    /// Whether the watchdog writes last words (a fork; a waiter only
    /// ends the tree).
    pub(crate) fn speaks(&self) -> bool {
        self.speaks
    }

    /// What mcp-bound knows of the call now, as one JSON line.
    pub(crate) fn milestone(&self, json: &str) {
        if self.speaks {
            self.tell(&Said::Milestone(json.to_string()));
        }
    }

    /// The final words, before they are written (in one write).
    pub(crate) fn final_words(&self, record_line: &str, terminal: &str, journal_len: Option<u64>) {
        if self.speaks {
            let mut words = Said::Record(record_line.to_string()).encode();
            words.extend(Said::Terminal(terminal.to_string()).encode());
            words.extend(Said::JournalLength(journal_len).encode());
            let _ = (&self.writer).write_all(&words);
        }
    }

    /// The final words are written.
    pub(crate) fn written(&self) {
        if self.speaks {
            self.tell(&Said::Written);
        }
    }
}

impl Contain {
    /// The call's line to the watchdog, once it runs.
    pub(crate) fn link(&self) -> Option<Link> {
        let (writer, speaks, hand) = match self.watchdog.as_ref()? {
            Watchdog::Forked { writer, .. } => (writer, true, None),
            Watchdog::Own(own) => (own.writer(), own.speaks(), own.hand().transpose().ok()?),
        };
        Some(Link {
            writer: writer.try_clone().ok()?,
            speaks,
            hand,
        })
    }

    /// Start the watchdog. With `last_words` it is a fork, which runs them
    /// after the tree was killed when mcp-bound died before saying it was
    /// done; without, a waiter (where the system has one).
    pub(crate) fn start_watchdog(
        &mut self,
        last_words: Option<impl FnOnce(LastWords)>,
    ) -> std::io::Result<()> {
        let watchdog = match last_words {
            None if sys::WAITER.is_some() => match self.start_waiter() {
                Ok(waiter) => Watchdog::Own(waiter),
                Err(_) => self.fork_watchdog(|_| {})?,
            },
            None => self.fork_watchdog(|_| {})?,
            Some(last_words) => self.fork_watchdog(last_words)?,
        };
        self.facts.watchdog_pid = Some(match &watchdog {
            Watchdog::Forked { pid, .. } => *pid as u32,
            Watchdog::Own(own) => own.pid(),
        });
        self.watchdog = Some(watchdog);
        Ok(())
    }

    /// Windows: start the heir and tell it its brief (one JSON object:
    /// what it needs to write last words, see `run::last_words`), made
    /// once the containment's facts name the heir.
    pub(crate) fn start_heir(
        &mut self,
        brief: impl FnOnce(&ContainFacts) -> String,
    ) -> std::io::Result<()> {
        let heirs = sys::HEIR.ok_or(std::io::ErrorKind::Unsupported)?;
        let heir = (heirs.start)(ORPHANED)?;
        self.facts.watchdog_pid = Some(heir.pid());
        let brief = brief(&self.facts);
        if let Err(err) = heir.writer().write_all(&Said::Brief(brief).encode()) {
            heir.finish(&Said::Done.encode());
            self.facts.watchdog_pid = None;
            return Err(err);
        }
        self.watchdog = Some(Watchdog::Own(heir));
        Ok(())
    }

    fn start_waiter(&self) -> std::io::Result<Box<dyn sys::Watcher>> {
        let start = sys::WAITER.ok_or(std::io::ErrorKind::Unsupported)?;
        let c = |text: &str| {
            std::ffi::CString::new(text)
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
        };
        let c_path = |path: &Path| c(&path.to_string_lossy());
        let (mode, target) = match &self.cgroup {
            Some(cgroup) => ("cgroup", c_path(cgroup.dir())?),
            None => ("group", c(&self.mark)?),
        };
        start(sys::Orphaned {
            kill: self
                .cgroup
                .as_ref()
                .map(|cgroup| c_path(&cgroup.dir().join("cgroup.kill")))
                .transpose()?,
            exe: c("/proc/self/exe")?,
            argv0: c(ORPHANED)?,
            mode: c(mode)?,
            target,
            mark: c(&self.mark)?,
        })
    }

    fn fork_watchdog(&self, last_words: impl FnOnce(LastWords)) -> std::io::Result<Watchdog> {
        let fork = sys::FORK.ok_or(std::io::ErrorKind::Unsupported)?;
        let (reader, writer) = sys::pipe_cloexec()?;
        match (fork.fork)()? {
            Some(pid) => Ok(Watchdog::Forked { pid, writer }),
            None => {
                drop(writer);
                (fork.detach)(reader.as_raw_fd());
                crate::signals::SignalPipe::disarm_in_child();
                // (A group here is a number: nothing is held to release.)
                let watched = watch(&reader, |_| {});
                if !watched.done {
                    // mcp-bound died: end what it left, then say so.
                    kill_tree(self.cgroup.as_ref(), &self.mark, watched.pgid);
                    last_words(watched.words);
                }
                sys::exit_now(0)
            }
        }
    }

    /// The call is over (its tree is gone, its record and journal are
    /// written): tell the watchdog, wait for it, remove the cgroup. Also
    /// on drop, whichever way the call ends.
    pub(crate) fn finish(&mut self) {
        match self.watchdog.take() {
            Some(Watchdog::Forked { pid, mut writer }) => {
                let _ = writer.write_all(&Said::Done.encode());
                drop(writer);
                sys::wait_child(pid);
            }
            Some(Watchdog::Own(own)) => own.finish(&Said::Done.encode()),
            None => {}
        }
        if let Some(cgroup) = self.cgroup.take() {
            cgroup.remove();
        }
    }
}

/// Once mcp-bound is dead (in a watchdog): KILL everything left of the
/// tree, and remove the cgroup.
fn kill_tree(cgroup: Option<&Cgroup>, mark: &str, pgid: i32) {
    match cgroup {
        Some(cgroup) => {
            cgroup.kill_all();
            cgroup.remove();
            // What left the cgroup (its pid written into the parent's
            // cgroup.procs) is init's now: found by the mark it inherited.
            if pgid > 1 {
                sys::send_signal(-pgid, crate::signals::SIGKILL);
            }
            kill_marked(TREE_MARK, mark);
        }
        None => {
            if pgid > 1 {
                sys::send_signal(-pgid, crate::signals::SIGKILL);
            }
            // What left the group: found by the mark it inherited.
            kill_marked(TREE_MARK, mark);
        }
    }
    // The approvers and what they left, in either containment.
    if !mark.is_empty() {
        kill_marked(APPROVER_MARK, mark);
    }
}

/// `mcp-bound-watchdog MODE TARGET PGID MARK`: what a waiter execs once
/// mcp-bound is gone. MODE `cgroup` (TARGET the cgroup's directory) or
/// `group` (TARGET the tree's mark); PGID the helper's group, 0 if none;
/// MARK the call's mark (the approvers carry it).
/// It started with every signal blocked: the ones that end a session are
/// ignored (which drops any pending), then all are unblocked.
pub(crate) fn orphaned(args: &[std::ffi::OsString]) -> i32 {
    sys::ignore_session_ends();
    sys::unblock_all_signals();
    let arg = |i: usize| args.get(i).map(|a| a.to_string_lossy().into_owned());
    let pgid = arg(3).and_then(|p| p.parse().ok()).unwrap_or(0);
    let mark = arg(4).unwrap_or_default();
    match (arg(1).as_deref(), arg(2)) {
        (Some("cgroup"), Some(dir)) => kill_tree(Some(&Cgroup::at(dir.into())), &mark, pgid),
        (Some("group"), Some(_)) => kill_tree(None, &mark, pgid),
        _ => return crate::error::code::OWN_FAILURE,
    }
    0
}

/// In the heir (Windows): watch `line` until mcp-bound says done (None)
/// or goes away. Gone, it ends the job it was handed last, then returns
/// the brief it was told and the last words it heard (None without a
/// brief: then there is nothing to write).
pub(crate) fn heir_watch(line: std::fs::File) -> Option<(String, LastWords)> {
    let heirs = sys::HEIR?;
    let watched = watch(&line, heirs.release);
    if watched.done {
        return None;
    }
    (heirs.end)(watched.pgid, std::time::Duration::from_secs(10));
    Some((watched.brief?, watched.words))
}

struct Watched {
    /// The helper's group, as last told (0: none to signal).
    pgid: i32,
    done: bool,
    /// The heir's brief (Windows).
    brief: Option<String>,
    words: LastWords,
}

/// Block until mcp-bound says done or goes away; `release` lets go of a
/// group that a newer one (or 0) replaced.
fn watch(mut line: impl std::io::Read, release: impl Fn(i32)) -> Watched {
    let mut watched = Watched {
        pgid: 0,
        done: false,
        brief: None,
        words: LastWords::default(),
    };
    let (mut record, mut terminal) = (None, None);
    let mut text = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match line.read(&mut buf) {
            Ok(0) => return watched,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return watched,
            Ok(n) => text.extend_from_slice(&buf[..n]),
        }
        let mut start = 0;
        while let Some(end) = text[start..].iter().position(|b| *b == b'\n') {
            let line = &text[start..start + end];
            start += end + 1;
            match Said::decode(line) {
                Some(Said::Done) => {
                    watched.done = true;
                    return watched;
                }
                Some(Said::Brief(json)) => watched.brief = Some(json),
                Some(Said::Group(pgid)) => {
                    if watched.pgid != 0 && watched.pgid != pgid {
                        release(watched.pgid);
                    }
                    watched.pgid = pgid;
                }
                Some(Said::Milestone(json)) => watched.words.milestone = Some(json),
                Some(Said::Record(line)) => record = Some(line),
                Some(Said::Terminal(json)) => terminal = Some(json),
                Some(Said::JournalLength(journal_len)) => {
                    watched.words.final_words = Some(FinalWords {
                        record: record.take().unwrap_or_default(),
                        terminal: terminal.take().unwrap_or_default(),
                        journal_len,
                        written: false,
                    });
                }
                Some(Said::Written) => {
                    if let Some(words) = watched.words.final_words.as_mut() {
                        words.written = true;
                    }
                }
                None => {}
            }
        }
        text.drain(..start);
    }
}
