//! The per-call approvers of the tool gate: children the one loop watches, not
//! a nested loop. Each is started as soon as the gate asks (nothing the
//! server prints delays it), in its own process group, with its request
//! on a file for stdin (so a large one never blocks us), both pipes
//! drained and bounded: the first line of its stdout (else of its
//! stderr) is kept, up to `REASON_BYTES`, and the rest is read and
//! dropped. Its exit (SIGCHLD) decides; the gate's clock, not this part,
//! expires it, and then its group gets TERM and KILL together. Its CPU
//! is counted apart from the server's.

use crate::sys::fd::{AsRawFd, RawFd};
use std::ffi::OsString;
use std::fs::File;
use std::time::{Duration, Instant};

use crate::child::{self, ChildExit};
use crate::redact::Redactor;
use crate::session::{Ask, Session};
use crate::signals;
use crate::sys;

/// The most bytes of an approver's first line kept for its reason.
pub(crate) const REASON_BYTES: usize = 512;
/// The most bytes read from one approver pipe per readiness.
const READ_BUDGET: usize = 64 << 10;

struct Running {
    ticket: u64,
    pid: i32,
    /// stdout, then stderr; None once closed.
    pipes: [Option<File>; 2],
    /// The first bytes of each, up to a newline or `REASON_BYTES`.
    firsts: [Vec<u8>; 2],
    ended: bool,
}

pub(super) struct Approvers {
    argv: Vec<OsString>,
    /// The call's mark, as each approver carries it (`APPROVER_MARK`).
    mark: Option<String>,
    /// Whether any approver was started (then the end sweeps the mark).
    started: bool,
    running: Vec<Running>,
    /// CPU (user, system) of the approvers reaped.
    pub(super) cpu: (Duration, Duration),
}

impl Approvers {
    /// `mark`: the call's tree mark, which approvers carry under their own
    /// variable so that what they leave behind is found.
    pub(super) fn new(argv: &[String], mark: Option<&str>) -> Approvers {
        Approvers {
            argv: argv.iter().map(OsString::from).collect(),
            mark: mark.map(str::to_string),
            started: false,
            running: Vec::new(),
            cpu: (Duration::ZERO, Duration::ZERO),
        }
    }

    /// Our children the loop reads the exit of (never reaped as orphans).
    pub(super) fn pids(&self) -> Vec<i32> {
        self.running.iter().map(|r| r.pid).collect()
    }

    /// Start the approvers the gate asked for; one that cannot start is
    /// the gate's error at once. Each new pid is handed to `adopt`, so
    /// the server's tree never counts it.
    pub(super) fn start(
        &mut self,
        now: Instant,
        asks: Vec<Ask>,
        table: &mut Session,
        adopt: &mut dyn FnMut(i32),
    ) {
        let confine = child::Confine::approver(self.mark.as_deref());
        for ask in asks {
            let started = sys::file_with(&ask.stdin)
                .map_err(|e| format!("cannot prepare the approval request: {e}"))
                .and_then(|stdin| {
                    child::spawn(&self.argv, child::StdinFrom::Fd(stdin), &confine).map_err(|e| {
                        let program = self.argv[0].to_string_lossy();
                        match e {
                            child::SpawnError::NotFound(e)
                            | child::SpawnError::NotExecutable(e) => {
                                format!("approver {program}: cannot run: {e}")
                            }
                        }
                    })
                });
            match started {
                Ok(helper) => {
                    adopt(helper.pid);
                    self.started = true;
                    self.running.push(Running {
                        ticket: ask.ticket,
                        pid: helper.pid,
                        pipes: [
                            Some(File::from(helper.stdout)),
                            Some(File::from(helper.stderr)),
                        ],
                        firsts: [Vec::new(), Vec::new()],
                        ended: false,
                    });
                }
                Err(error) => table.on_approver_failed(now, ask.ticket, error),
            }
        }
    }

    /// The pipes to read, as (descriptor, approver index, pipe index).
    pub(super) fn interests(&self) -> Vec<(RawFd, usize, usize)> {
        let mut out = Vec::new();
        for (i, running) in self.running.iter().enumerate() {
            for (p, pipe) in running.pipes.iter().enumerate() {
                if let Some(file) = pipe {
                    out.push((file.as_raw_fd(), i, p));
                }
            }
        }
        out
    }

    /// A pipe is ready: read it, within a budget.
    pub(super) fn on_readable(&mut self, index: usize, pipe: usize) {
        if let Some(running) = self.running.get_mut(index) {
            read_some(running, pipe, READ_BUDGET);
        }
    }

    /// Tickets the gate decided without their approver: TERM and KILL to
    /// its group together; it is reaped when it exits.
    pub(super) fn end(&mut self, tickets: Vec<u64>) {
        for running in self
            .running
            .iter_mut()
            .filter(|r| tickets.contains(&r.ticket))
        {
            crate::contain::signal_group(running.pid, signals::SIGTERM);
            crate::contain::signal_group(running.pid, signals::SIGKILL);
            running.pipes = [None, None];
            running.ended = true;
        }
    }

    /// A child changed: each approver that exited decides its call (one
    /// already decided only is reaped), and what is left of its group
    /// is killed.
    pub(super) fn on_child_changed(
        &mut self,
        now: Instant,
        table: &mut Session,
        redactor: &Redactor,
    ) {
        let mut i = 0;
        while i < self.running.len() {
            let Some(exit) = child::observe_exit(self.running[i].pid) else {
                i += 1;
                continue;
            };
            let mut running = self.running.swap_remove(i);
            // What it wrote before it exited is in the pipes.
            for pipe in 0..2 {
                read_some(&mut running, pipe, REASON_BYTES * 2);
            }
            crate::contain::signal_group(running.pid, signals::SIGKILL);
            self.reap(running.pid);
            if !running.ended {
                let reason = reason(&running.firsts, redactor);
                table.on_approver_exit(
                    now,
                    running.ticket,
                    Some(ChildExit::to_record(exit)),
                    reason,
                );
            }
        }
    }

    /// The loop ends: every approver still running is ended and reaped,
    /// and what any approver left behind (a setsid grandchild, outside
    /// every containment of the server's) is killed by the mark.
    pub(super) fn stop(&mut self) {
        let tickets: Vec<u64> = self.running.iter().map(|r| r.ticket).collect();
        self.end(tickets);
        for running in std::mem::take(&mut self.running) {
            child::await_exit(running.pid);
            self.reap(running.pid);
        }
        if let (true, Some(mark)) = (self.started, &self.mark) {
            crate::contain::kill_marked(crate::contain::APPROVER_MARK, mark);
        }
    }

    /// Reap an approver that exited, its CPU counted.
    fn reap(&mut self, pid: i32) {
        if let Some((user, system)) = child::reap_with_usage(pid) {
            self.cpu.0 += user;
            self.cpu.1 += system;
        }
    }
}

/// Read what a pipe has, keeping the first line's start; EOF closes it.
fn read_some(running: &mut Running, pipe: usize, budget: usize) {
    let mut buf = [0u8; 8192];
    let mut read = 0;
    while read < budget {
        let Some(file) = running.pipes[pipe].as_mut() else {
            return;
        };
        match crate::sys::read_pipe(file, &mut buf) {
            Ok(0) => {
                running.pipes[pipe] = None;
                return;
            }
            Ok(n) => {
                read += n;
                let first = &mut running.firsts[pipe];
                if first.len() < REASON_BYTES && !first.contains(&b'\n') {
                    let room = REASON_BYTES - first.len();
                    first.extend_from_slice(&buf[..n.min(room)]);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
            Err(_) => {
                running.pipes[pipe] = None;
                return;
            }
        }
    }
}

/// The first line of stdout, else of stderr: masked, bounded.
fn reason(firsts: &[Vec<u8>; 2], redactor: &Redactor) -> Option<String> {
    firsts.iter().find_map(|bytes| {
        let line = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
        let text = String::from_utf8_lossy(line);
        let text = text.trim();
        (!text.is_empty()).then(|| redactor.redact_piece(text, false, bytes.len() >= REASON_BYTES))
    })
}
