//! The session layer's share of the loop: the stdin relay and the
//! request table (`crate::session`) as one part, and what the loop does
//! with them each turn: request deadlines, the server going away, and
//! routing what the table produced (journal entries first, then lines for
//! the server and answers for the client).

use crate::sys::fd::OwnedFd;
use std::time::Instant;

use super::Stream;
use super::approvers::Approvers;
use super::restart::{Current, Restarter};
use super::stdin::StdinRelay;
use super::{Loop, SessionConfig};
use crate::child::ChildExit;
use crate::journal::{self, Journal};
use crate::record::mcp::{ClientBytes, McpFacts, RestartMode};
use crate::session::{Audit, Restarts, Session};
use crate::sys::Interest;
use crate::termination::Cancellation;

/// Past this many bytes waiting for our stdout, our stdin is not read
/// (about 1,700 of mcp-bound's own error answers).
const ANSWERS_HELD_LIMIT: usize = 256 << 10;
/// How much of the server's stderr a crash answer carries.
const CRASH_STDERR_TAIL: usize = 2048;
/// How long answers mcp-bound still owes the client may wait for it at
/// the end (the server is gone; never hang at exit).
const ANSWERS_AT_EXIT_LIMIT: std::time::Duration = std::time::Duration::from_secs(1);

/// The first wait for a busy journal lock; each next one doubles, up to
/// [`LOCK_RETRY_MAX`].
const LOCK_RETRY_FIRST: std::time::Duration = std::time::Duration::from_millis(1);
const LOCK_RETRY_MAX: std::time::Duration = std::time::Duration::from_millis(20);

/// Audit entries that wait for the journal's lock, inside the loop: the
/// loop retries on a timer while signals, deadlines and the drain go on,
/// and gives up (the journal failed) past the journal's lock wait.
pub(super) struct HeldAudit {
    entries: Vec<Audit>,
    since: Instant,
    pub(super) retry_at: Instant,
    pause: std::time::Duration,
}

/// The session layer's parts, when it is on.
pub(super) struct SessionParts<'a> {
    pub(super) table: Session,
    pub(super) stdin: StdinRelay,
    pub(super) journal: Option<&'a Journal>,
    /// Some with --restart.
    pub(super) restarter: Option<Restarter>,
    pub(super) current: Current,
    /// The session's end cut requests off (they are the record's
    /// `mcp.interrupted`).
    pub(super) end_cut: bool,
    /// An audit append failed: no more are tried, and nothing more is
    /// written to the server.
    pub(super) journal_failed: bool,
    /// Audit entries waiting for the journal's lock, which another process
    /// holds: nothing goes to the server meanwhile.
    pub(super) held: Option<HeldAudit>,
    /// The per-call approvers, with --tool-approve-cmd.
    pub(super) approvers: Option<Approvers>,
    /// Span export, when on.
    pub(super) tracer: Option<&'a crate::otel::Tracer>,
}

impl<'a> SessionParts<'a> {
    /// The parts for the first server, `pid`, whose stdin is `pipe`.
    pub(super) fn new(
        config: &SessionConfig<'a>,
        pipe: OwnedFd,
        pid: u32,
        dispatched_t_ms: u64,
    ) -> SessionParts<'a> {
        let restart = &config.policy.restart;
        let mut table = Session::new(config.policy.clone(), config.call_id.clone());
        if let Some(tracer) = config.tracer {
            table.trace_requests(tracer.propagation());
        }
        SessionParts {
            tracer: config.tracer,
            table,
            stdin: StdinRelay::new(pipe, config.max_message_bytes),
            journal: config.journal,
            restarter: (restart.mode != RestartMode::Never).then(|| Restarter {
                argv: config.argv.clone(),
                confine: config.confine.clone(),
                restarts: Restarts::new(restart.clone()),
                at: None,
                replay_by: None,
                stopped: false,
            }),
            current: Current {
                pid,
                dispatched_t_ms,
                stderr_seen_at_start: 0,
            },
            end_cut: false,
            journal_failed: false,
            held: None,
            approvers: config
                .policy
                .tools
                .as_ref()
                .and_then(|gate| gate.approver.as_ref())
                .map(|approver| {
                    let mark = config
                        .confine
                        .tree_mark
                        .as_ref()
                        .map(|(_, mark)| mark.as_str());
                    Approvers::new(&approver.argv, mark)
                }),
        }
    }
}

impl Loop<'_> {
    /// The session layer's facts, with the client's bytes the relay counted.
    pub(super) fn session_facts(&self, session: &SessionParts<'_>) -> McpFacts {
        let mut facts = session.table.facts();
        if let Some(approvers) = &session.approvers {
            let (user, system) = approvers.cpu;
            facts.tool_gate_mut().approver_cpu = crate::record::mcp::Cpu {
                user_ms: crate::units::millis(user),
                sys_ms: crate::units::millis(system),
            };
        }
        facts.client_bytes = ClientBytes {
            read: session.stdin.bytes_read,
            to_server: session.stdin.bytes_written,
            discarded: session.stdin.bytes_discarded,
        };
        facts
    }

    /// Our stdin, read for the client. While our stdout holds back
    /// answers the client has not read, the client is not read either:
    /// what we owe it stays bounded.
    pub(super) fn client_interest(&self) -> Option<Interest> {
        let session = self.session.as_ref()?;
        if self.stdout.held() >= ANSWERS_HELD_LIMIT {
            return None;
        }
        let (fd, read) = match session.stdin.read_interest() {
            Some(fd) => (fd, true),
            None => (session.stdin.hang_up_interest()?, false),
        };
        Some(Interest {
            peer_closed: true,
            ..Interest::new(fd, read, false)
        })
    }

    pub(super) fn on_client_readable(&mut self, now: Instant) -> Stream {
        match self.session.as_mut() {
            // A restart is under way: what the client sent waits, but its
            // hang-up means no restart (see `restart_due`).
            Some(session) if session.stdin.paused() => {
                session.stdin.note_hang_up();
                Stream::Open
            }
            Some(session) => {
                // Where the server's stderr stands as requests come.
                session
                    .table
                    .note_stderr_seen(self.intake.diagnostics.bytes_seen());
                session.stdin.on_readable(now, &mut session.table)
            }
            None => Stream::Open,
        }
    }

    pub(super) fn on_server_stdin_writable(&mut self) {
        if let Some(session) = self.session.as_mut() {
            session.stdin.flush();
        }
    }

    /// Whatever ended the loop, no request is left without an answer, and
    /// the answers get a bounded time to reach the client.
    pub(super) fn finish_session(&mut self) {
        if self.session.is_none() {
            return;
        }
        self.server_gone(Instant::now(), true);
        if let Some(session) = self.session.as_mut() {
            // Calls still waiting for approval are answered; their
            // approvers ended.
            session.table.end_pending(Instant::now());
            if let Some(approvers) = session.approvers.as_mut() {
                // Every approver is ended here, those the table named too.
                session.table.take_approver_ends();
                approvers.stop();
            }
        }
        // A server that went away on its own, with nothing of the host's
        // after it (no restart, no signal, no hang-up): that crash was the
        // session's end, and what it cut off is the session's too.
        let ended_by_host = self.term.cancellation().is_some() || self.host_hung_up;
        if let Some(session) = self.session.as_mut()
            && !ended_by_host
            && !session.end_cut
        {
            let facts = session.table.facts_mut();
            if let Some(last) = facts.runs.incarnations.last() {
                facts.in_flight_at_exit = last.in_flight_at_exit;
                facts.interrupted = last.interrupted.clone();
            }
        }
        let _ = self.route();
        if let Some(session) = self.session.as_mut() {
            session.stdin.stop();
        }
        self.stdout.drain_at_exit(ANSWERS_AT_EXIT_LIMIT);
    }

    /// The session layer's share of a turn: request deadlines, and the
    /// server going away (it exited and its stdout closed: no response
    /// can come any more), then what they produced is routed.
    pub(super) fn session_turn(&mut self, now: Instant) -> Result<(), String> {
        let Some(session) = self.session.as_mut() else {
            return Ok(());
        };
        let diagnostics = &mut self.intake.diagnostics;
        let redactor = &self.redactor;
        session.table.note_stderr_seen(diagnostics.bytes_seen());
        session.table.tick(now, &mut |since| {
            masked_tail(
                diagnostics,
                redactor,
                (since as usize).min(CRASH_STDERR_TAIL),
            )
        });
        if !session.table.server_gone() && self.exit.is_some() && !self.stdout.is_open() {
            self.server_gone(now, false);
        }
        self.after_replay(now);
        self.route()
    }

    /// Answer every request in flight for a server that is gone, with
    /// the end of its stderr (masked). What it cut off is its
    /// incarnation's, and the session's too when the session's end made it
    /// go (`ending`, or the host's signal, hang-up or --timeout under way).
    pub(super) fn server_gone(&mut self, now: Instant, ending: bool) {
        if self.session.as_ref().is_none_or(|s| s.table.server_gone()) {
            return;
        }
        let host_ended = self.host_hung_up
            || matches!(
                self.term.cancellation(),
                Some(Cancellation::Signal(_) | Cancellation::StdinClosed)
            );
        let by_end = ending || self.term.cancellation().is_some() || host_ended;
        let Some(session) = self.session.as_mut() else {
            return;
        };
        session
            .table
            .note_stderr_seen(self.intake.diagnostics.bytes_seen());
        let tail = masked_tail(
            &mut self.intake.diagnostics,
            &self.redactor,
            CRASH_STDERR_TAIL,
        );
        let exit = self.exit.map(ChildExit::to_record);
        let written = session.stdin.written_up_to();
        let (count, cut) = session
            .table
            .on_server_gone(now, exit, tail, written, host_ended);
        session.stdin.server_gone();
        if by_end {
            let facts = session.table.facts_mut();
            facts.in_flight_at_exit = count;
            facts.interrupted = cut.clone();
            session.end_cut = true;
        }
        // A restart may follow: the client waits for it to be decided
        // (its leftovers ended first), not answered for a server that is
        // about to come back. No restart, and the session ends anyway.
        if session.restarter.as_ref().is_some_and(|r| !r.stopped) {
            session.stdin.pause();
        }
        self.record_incarnation(now, count, cut);
    }

    /// Start the approvers the gate asked for, and end those it decided
    /// without: called as soon as client lines were read (before the
    /// turn drains the server's stderr), and again by `route`.
    /// A check inline: without approvers this costs nothing per turn (a
    /// call would cost some instructions each: bench/results.md).
    #[inline(always)]
    pub(super) fn start_approvers(&mut self) {
        if self.session.as_ref().is_some_and(|s| s.approvers.is_some()) {
            self.start_approvers_now();
        }
    }

    fn start_approvers_now(&mut self) {
        if let Some(session) = self.session.as_mut()
            && let Some(approvers) = session.approvers.as_mut()
        {
            let asks = session.table.take_asks();
            if !asks.is_empty() {
                let family = &mut self.tree.family;
                approvers.start(Instant::now(), asks, &mut session.table, &mut |pid| {
                    family.adopt_stranger(pid)
                });
            }
            approvers.end(session.table.take_approver_ends());
        }
    }

    /// Move what the session produced to where it goes: audit entries to
    /// the journal first (one synced append for all that came together,
    /// before any of their requests reach the server), then lines for the
    /// server and for the client, written as far as each takes them.
    pub(super) fn route(&mut self) -> Result<(), String> {
        self.start_approvers();
        let Some(session) = self.session.as_mut() else {
            return Ok(());
        };
        if let Some(tracer) = session.tracer {
            for traced in session.table.take_traced() {
                tracer.request(&traced);
            }
        }
        let failed = journal_audit(session);
        if session.held.is_some() {
            // What waits for the server waits for its entries too; answers
            // for the client still go.
        } else if session.journal_failed {
            // Nothing more reaches the server: what waits for it was not
            // journaled. The answers still flow (the loop ends, and every
            // request left gets its -32000).
            session.stdin.server_gone();
            session.table.to_server.clear();
        } else {
            session.stdin.take_from(&mut session.table);
            session.stdin.flush();
            // Where what the table adds next will sit (writes do not move
            // it; the client's lines read next turn do, and route again).
            session.table.note_server_stream(session.stdin.queued_end());
        }
        if !session.table.to_client.is_empty() {
            let answers = std::mem::take(&mut session.table.to_client);
            if self.stdout.inject(&answers) {
                let now = Instant::now();
                self.cancel(now, Cancellation::ClientDisconnected);
            }
        }
        failed
    }
}

/// The last `n` bytes of the server's stderr, masked (a cut at their start
/// masked as such).
fn masked_tail(
    diagnostics: &mut crate::diagnostics::Diagnostics,
    redactor: &crate::redact::Redactor,
    n: usize,
) -> String {
    let (tail, cut) = diagnostics.last(n);
    redactor.redact_piece(&String::from_utf8_lossy(&tail), cut, false)
}

/// Append what the table produced (after what waited for the lock), in
/// one group commit, if the journal's lock is free; else hold it all for
/// the next try. Err once the journal failed, or the lock stayed taken
/// past the journal's lock wait.
fn journal_audit(session: &mut SessionParts<'_>) -> Result<(), String> {
    if !session.table.has_audit() && session.held.is_none() {
        return Ok(());
    }
    let now = Instant::now();
    let (mut audit, waiting) = match session.held.take() {
        Some(held) => (held.entries, Some((held.since, held.pause))),
        None => (Vec::new(), None),
    };
    audit.extend(session.table.take_audit());
    let Some(journal) = session.journal.filter(|_| !session.journal_failed) else {
        session.stdin.hold_for_journal(false);
        return Ok(());
    };
    let entries: Vec<journal::Entry<'_>> = audit.iter().map(journal::Entry::from).collect();
    let tried = journal.try_append_all(&entries);
    drop(entries);
    let result = match tried {
        Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {
            let (since, pause) = waiting.map_or((now, LOCK_RETRY_FIRST), |(since, pause)| {
                (since, (pause * 2).min(LOCK_RETRY_MAX))
            });
            if now.saturating_duration_since(since) < journal.lock_wait {
                session.held = Some(HeldAudit {
                    entries: audit,
                    since,
                    retry_at: now + pause,
                    pause,
                });
                session.stdin.hold_for_journal(true);
                return Ok(());
            }
            Err(format!(
                "could not lock it within {} ms",
                journal.lock_wait.as_millis()
            ))
        }
        other => other.map(|_| ()).map_err(|err| err.to_string()),
    };
    session.stdin.hold_for_journal(false);
    session.journal_failed = result.is_err();
    result.map_err(|err| {
        format!(
            "--journal {}: cannot write a request entry: {err}",
            journal.path.display()
        )
    })
}
