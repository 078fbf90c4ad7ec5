//! The MCP session layer's policy, pure: the table of client requests in
//! flight, their deadlines, the answers mcp-bound owes the client when
//! the server will not give them, and the facts for the record and the
//! per-request audit. It is fed whole lines (from the stdin relay and
//! from the stdout guard) and an `Instant`; it never touches a descriptor.
//!
//! Rules it keeps:
//! - Ids belong to one direction: only a server *response* can end a
//!   client request, and a client response never touches the table.
//! - One response per id: once mcp-bound answered a request (timeout,
//!   server gone), the server's late response for it is dropped, counted.
//! - A request that reached the server is never re-sent: it may have acted.
//! - Memory is bounded: at most `max_in_flight` requests are tracked (past
//!   it, the client gets an error at once), as many timed-out ids are
//!   remembered, and ids and methods over 1 KiB are passed on untracked.

mod answer;
mod approval;
mod audit;
mod client;
mod cr_split;
mod era;
mod fold;
mod form;
#[cfg(feature = "fuzzing")]
mod fuzz;
mod gate;
mod host_ask;
mod input_required;
mod kind;
mod late;
mod lenient;
mod message;
mod overlong;
mod pinning;
mod policy;
mod refusal;
mod replay;
mod request;
mod restart;
mod results;
mod ruling;
mod scan;
mod seal;
mod server;
mod tasks;
mod traced;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use smol_str::SmolStr;

use crate::record::Exit;
use crate::record::mcp::{Era, Interrupted, MAX_INTERRUPTED_LISTED, McpFacts};
use crate::request_id;
use crate::units::millis;
pub(crate) use answer::{REQUEST_TIMEOUT, SERVER_ERROR};
use audit::End;
use late::Answered;

pub(crate) use audit::McpRestart;
pub(crate) use audit::{Audit, Irregular, RequestOutcome, ResultType, TaskStatus};
pub use audit::{McpDecision, McpRequest, McpResponse, McpTask};
#[cfg(feature = "fuzzing")]
pub use fuzz::fuzz_client_line;
pub(crate) use gate::Ask;
// For the journal's schema test, which runs beside the Unix tests.
#[cfg(all(test, unix))]
pub(crate) use gate::DecidedBy;
pub(crate) use gate::glob_regex;
pub(crate) use gate::{ApproverCommand, ToolGate};
pub(crate) use pinning::{McpToolDrift, ToolPinning};
pub(crate) use policy::{AuditRequests, SessionPolicy};
pub(crate) use refusal::Refusal;
use replay::Replay;
pub(crate) use restart::RestartPolicy;
pub(crate) use restart::Restarts;
pub(crate) use traced::{Decided, Propagation, Traced};

/// The session's tables hash ids and tokens the client chose: foldhash,
/// seeded per process, a few instructions for a short id.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// An id's key, or a method: kept inline when short (nearly always), so
/// tracking a request allocates nothing.
type Key = SmolStr;

/// An id or a method longer than this is passed on but not tracked.
const MAX_TRACKED: usize = 1024;

struct InFlight {
    /// The id's JSON text, as the client sent it, when it is not its key
    /// already (most ids are: a plain integer or string).
    spelled: Option<String>,
    kind: kind::Kind,
    method: Key,
    name: Option<String>,
    started: Instant,
    seq: u64,
    timeout: Option<Duration>,
    deadline: Option<Instant>,
    progress_token: Option<String>,
    audited: bool,
    /// The task (one an audited call created) this `tasks/*` request asks
    /// about.
    task: Option<String>,
    /// The server's stderr bytes when it came.
    stderr_at: u64,
    /// Where its line ends in the stream of bytes for the server's stdin:
    /// once the relay has written up to here, the server's pipe had it all.
    ends_at: u64,
    /// While span export is on: the trace context in its
    /// `params._meta`, and the span id it was sent under.
    trace: Option<Box<traced::RequestTrace>>,
}

/// An entry out of the table: the id as the client sent it, and the rest.
fn taken(key: Key, mut entry: InFlight) -> (Key, InFlight) {
    (entry.spelled.take().map_or(key, Key::from), entry)
}

struct Gone {
    exit: Option<Exit>,
    stderr_tail: String,
}

pub(crate) struct Session {
    policy: SessionPolicy,
    call_id: String,
    in_flight: HashMap<Key, InFlight>,
    deadlines: BTreeMap<(Instant, u64), Key>,
    progress: HashMap<String, Key>,
    /// Ids answered by mcp-bound (timed out): their late response is dropped.
    answered: Answered,
    gone: Option<Gone>,
    /// Lines for the client (our stdout), whole.
    pub to_client: Vec<u8>,
    /// Lines for the server (its stdin), whole.
    pub to_server: Vec<u8>,
    out: Out,
    facts: McpFacts,
    opening: Opening,
    /// Where the client line being read stands.
    current_line: client::CurrentLine,
    /// Tasks audited calls created, until their end is seen.
    tasks: tasks::Tasks,
    /// Requests numbered so far (their order, for the record's lists).
    seq: u64,
    /// The server's stderr bytes so far, as the loop last said (a request
    /// notes where it stood when it came).
    stderr_seen: u64,
    /// The end of the stream queued for the server's stdin, as the loop
    /// last said (what `to_server` holds goes after it).
    server_stream: u64,
    /// The per-tool-call gate (--tool-allow, --tool-deny,
    /// --tool-approve-cmd).
    gate: Option<gate::Gate>,
}

/// What the session hands on besides lines: the journal's audit facts,
/// and, while span export is on, each request that ended.
#[derive(Default)]
struct Out {
    audit: Vec<Audit>,
    tracing: Option<traced::Tracing>,
}

/// The opening exchange, across restarts: the client's cached
/// `initialize` and the first server's answer, how the last replay of it
/// went (until the loop takes that), and what the current incarnation
/// was spoken to in.
#[derive(Default)]
struct Opening {
    replay: Replay,
    replayed: Option<Result<(), String>>,
    spoken: era::Spoken,
}

impl Session {
    pub(crate) fn new(policy: SessionPolicy, call_id: String) -> Session {
        let max_in_flight = policy.max_in_flight;
        let gate = policy.tools.clone().map(gate::Gate::new);
        let facts = McpFacts {
            limits: policy.limits(),
            tool_gate: gate.as_ref().map(|g| crate::record::mcp::ToolGateFacts {
                pin: g.pinning.as_ref().map(pinning::Pinning::facts),
                ..Default::default()
            }),
            ..McpFacts::default()
        };
        Session {
            policy,
            call_id,
            in_flight: HashMap::default(),
            deadlines: BTreeMap::new(),
            progress: HashMap::default(),
            answered: Answered::new(max_in_flight),
            gone: None,
            to_client: Vec::new(),
            to_server: Vec::new(),
            out: Out::default(),
            facts,
            opening: Opening::default(),
            current_line: client::CurrentLine::default(),
            tasks: tasks::Tasks::new(max_in_flight),
            seq: 0,
            stderr_seen: 0,
            server_stream: 0,
            gate,
        }
    }

    /// The earliest request or approval deadline.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        let request = self.deadlines.keys().next().map(|(at, _)| *at);
        let approval = self.gate.as_ref().and_then(gate::Gate::deadline);
        request.into_iter().chain(approval).min()
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    pub(crate) fn server_gone(&self) -> bool {
        self.gone.is_some()
    }

    /// The requests in flight now, oldest first (the first 32), as the
    /// record lists what an end cut off.
    pub(crate) fn in_flight_now(&self) -> Vec<Interrupted> {
        let mut entries: Vec<(&Key, &InFlight)> = self.in_flight.iter().collect();
        entries.sort_by_key(|(_, entry)| entry.seq);
        entries
            .into_iter()
            .take(MAX_INTERRUPTED_LISTED)
            .filter_map(|(key, entry)| {
                Some(Interrupted {
                    id: request_id::RequestId::new(entry.spelled.as_deref().unwrap_or(key))?,
                    method: entry.method.to_string(),
                    name: entry.name.clone(),
                })
            })
            .collect()
    }

    /// A restarted server (`attempt` counts restarts): requests may come
    /// again; the line to bring it to the first server's state, if any.
    pub(crate) fn on_restarted(
        &mut self,
        attempt: u64,
        pid: u32,
        exit: Option<crate::record::Exit>,
    ) -> Option<Vec<u8>> {
        self.gone = None;
        self.facts.runs.restarts = attempt;
        self.out.audit.push(Audit::Restart(McpRestart {
            call_id: self.call_id.clone(),
            attempt,
            pid,
            exit,
        }));
        let line = self.opening.replay.start(attempt);
        if line.is_some() {
            self.opening
                .spoken
                .on_request("initialize", self.opening.replay.client_params());
        }
        line
    }

    /// What the incarnation that runs was spoken to in, so far.
    pub(crate) fn spoken(&self) -> (Option<Era>, Option<String>) {
        let spoken = &self.opening.spoken;
        (spoken.era, spoken.protocol_version.clone())
    }

    /// What the incarnation that went away was spoken to in; the next
    /// one starts unknown.
    pub(crate) fn take_spoken(&mut self) -> (Option<Era>, Option<String>) {
        let spoken = std::mem::take(&mut self.opening.spoken);
        (spoken.era, spoken.protocol_version)
    }

    /// The replayed initialize is still unanswered.
    pub(crate) fn replaying(&self) -> bool {
        self.opening.replay.waiting()
    }

    /// How the replayed initialize went, once.
    pub(crate) fn take_replayed(&mut self) -> Option<Result<(), String>> {
        self.opening.replayed.take()
    }

    /// The facts, for the loop to add what only it knows.
    pub(crate) fn facts_mut(&mut self) -> &mut McpFacts {
        &mut self.facts
    }

    /// Audit facts wait to be taken.
    pub(crate) fn has_audit(&self) -> bool {
        !self.out.audit.is_empty()
    }

    pub(crate) fn take_audit(&mut self) -> Vec<Audit> {
        std::mem::take(&mut self.out.audit)
    }

    pub(crate) fn facts(&self) -> McpFacts {
        self.facts.clone()
    }

    /// The server's stderr has had `bytes` so far (a request notes where
    /// it stood when the request came).
    pub(crate) fn note_stderr_seen(&mut self, bytes: u64) {
        self.stderr_seen = bytes;
    }

    /// The stream for the server's stdin has had `bytes` queued so far
    /// (what `to_server` holds goes after them).
    pub(crate) fn note_server_stream(&mut self, bytes: u64) {
        self.server_stream = bytes;
    }

    /// An authorized request, dispatched: into the table.
    fn admit(&mut self, key: Key, entry: InFlight) {
        if let Some(at) = entry.deadline {
            self.deadlines.insert((at, entry.seq), key.clone());
        }
        if let Some(token) = &entry.progress_token {
            self.progress.insert(token.clone(), key.clone());
        }
        self.in_flight.insert(key, entry);
        self.facts.peak_in_flight = self.facts.peak_in_flight.max(self.in_flight.len() as u64);
    }

    /// An excerpt of `text` for an answer's message, counted.
    fn agent_excerpt(&mut self, text: &str) -> Option<String> {
        let excerpt = answer::agent_excerpt(text, self.policy.agent_excerpt_bytes);
        self.count_excerpt(excerpt.as_deref());
        excerpt
    }

    fn count_excerpt(&mut self, excerpt: Option<&str>) {
        if let Some(excerpt) = excerpt {
            self.facts.agent_excerpts.answers += 1;
            self.facts.agent_excerpts.bytes += excerpt.len() as u64;
        }
    }

    /// Answer every request whose deadline `now` reached: cancel it at
    /// the server, answer the client, and drop the late response.
    /// `stderr_since(n)`: the last `n` bytes of the server's stderr (at
    /// most what a crash answer carries), masked; asked only for a request
    /// that timed out while the server wrote some.
    pub(crate) fn tick(&mut self, now: Instant, stderr_since: &mut dyn FnMut(u64) -> String) {
        self.tick_gate(now);
        while let Some(entry) = self.deadlines.first_key_value() {
            if entry.0.0 > now {
                return;
            }
            let key = entry.1.clone();
            let Some((id, entry)) = self.remove(&key) else {
                continue;
            };
            let timeout = entry.timeout.unwrap_or_default();
            self.to_server.extend(answer::cancelled(&id, timeout));
            self.facts.cancellations_sent += 1;
            let written = self.stderr_seen.saturating_sub(entry.stderr_at);
            let excerpt = (written > 0 && self.policy.agent_excerpt_bytes > 0)
                .then(|| stderr_since(written))
                .and_then(|text| self.agent_excerpt(&text));
            let answer = answer::timed_out(&id, &entry.method, timeout, excerpt.as_deref());
            let bytes = answer.len() as u64;
            self.to_client.extend(answer);
            self.facts.synthesized.request_timeout += 1;
            self.answered.insert(key.to_string());
            let end = End::by(RequestOutcome::TimedOut, Some(REQUEST_TIMEOUT));
            self.finish(now, id, entry, end, bytes);
        }
    }

    /// The server is gone (exited, its stdout closed): answer every
    /// request in flight, oldest first, and any that comes later at once.
    /// `written`: how far the stream for its stdin had been written.
    /// What the server's going cut off: how many requests, and the first
    /// 32 (for the incarnation; the loop says whether the session's end
    /// cut them off too).
    /// `host_ended`: the host ended the session (its hang-up or signal):
    /// then streams end unanswered, and are not counted as cut off.
    pub(crate) fn on_server_gone(
        &mut self,
        now: Instant,
        exit: Option<Exit>,
        stderr_tail: String,
        written: u64,
        host_ended: bool,
    ) -> (u64, Vec<Interrupted>) {
        let mut cut = Vec::new();
        if self.gone.is_some() {
            return (0, cut);
        }
        let mut left: Vec<(Key, InFlight)> = self
            .in_flight
            .drain()
            .map(|(key, entry)| taken(key, entry))
            .collect();
        left.sort_by_key(|(_, e)| e.seq);
        self.deadlines.clear();
        self.progress.clear();
        let (left, ended): (Vec<_>, Vec<_>) = left
            .into_iter()
            .partition(|(_, entry)| !host_ended || entry.kind.answered_at_the_hosts_end());
        for (id, entry) in ended {
            self.finish(now, id, entry, End::by(RequestOutcome::ShutDown, None), 0);
        }
        let count = left.len() as u64;
        let excerpt = answer::agent_excerpt(&stderr_tail, self.policy.agent_excerpt_bytes);
        for (id, entry) in left {
            self.count_excerpt(excerpt.as_deref());
            let answer = answer::server_exited(
                &id,
                exit.as_ref(),
                &stderr_tail,
                &self.call_id,
                entry.ends_at <= written,
                excerpt.as_deref(),
            );
            let bytes = answer.len() as u64;
            self.to_client.extend(answer);
            self.facts.synthesized.server_exited += 1;
            if cut.len() < MAX_INTERRUPTED_LISTED {
                cut.push(Interrupted {
                    id: request_id::RequestId::new(&id).expect("a tracked id is strict JSON"),
                    method: entry.method.to_string(),
                    name: entry.name.clone(),
                });
            }
            let end = End {
                interrupted: host_ended,
                ..End::by(RequestOutcome::ServerExited, Some(SERVER_ERROR))
            };
            self.finish(now, id, entry, end, bytes);
        }
        // The server held its tasks: they are lost with it.
        for task_id in self.tasks.open_ids() {
            self.task_ended(now, &task_id, TaskStatus::Lost, None);
        }
        self.gone = Some(Gone { exit, stderr_tail });
        (count, cut)
    }

    /// A request out of the table: its id as sent, and its entry.
    fn remove(&mut self, key: &str) -> Option<(Key, InFlight)> {
        let (key, entry) = self.in_flight.remove_entry(key)?;
        if let Some(at) = entry.deadline {
            self.deadlines.remove(&(at, entry.seq));
        }
        if let Some(token) = &entry.progress_token {
            self.progress.remove(token);
        }
        Some(taken(key, entry))
    }

    fn finish(&mut self, now: Instant, id: Key, entry: InFlight, end: End, bytes: u64) {
        self.trace_end(now, &id, &entry, &end);
        if entry.audited {
            self.out.audit.push(Audit::Response(McpResponse {
                call_id: self.call_id.clone(),
                request_id: Some(
                    request_id::RequestId::new(&id).expect("a tracked id is strict JSON"),
                ),
                method: Some(entry.method.to_string()),
                outcome: end.outcome,
                reason: None,
                error_code: end.error_code,
                result_type: end.result_type,
                duration_ms: millis(now.saturating_duration_since(entry.started)),
                bytes,
            }));
        }
    }
}

#[cfg(test)]
mod tests;
