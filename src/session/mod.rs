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
mod audit;
mod late;
mod message;
mod policy;
mod replay;
mod restart;
mod scan;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use smol_str::SmolStr;

use crate::ids::hex;
use crate::record::Exit;
use crate::record::mcp::{Interrupted, MAX_INTERRUPTED_LISTED, McpFacts};
use crate::request_id;
use crate::units::millis;
pub(crate) use answer::{REQUEST_TIMEOUT, SERVER_ERROR};
use late::Answered;
use message::{Line, Message, join_batch};

pub use audit::{Audit, RequestOutcome};
pub use policy::{AuditRequests, SessionPolicy};
use replay::{Replay, Replayed};
pub use restart::RestartPolicy;
pub(crate) use restart::Restarts;

/// The session's tables hash ids and tokens the client chose: foldhash,
/// seeded per process, a few instructions for a short id.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// An id's key, or a method: kept inline when short (nearly always), so
/// tracking a request allocates nothing.
type Key = SmolStr;

/// An id or a method longer than this is passed on but not tracked.
const MAX_TRACKED: usize = 1024;

/// Which side a line came from.
#[derive(Clone, Copy)]
enum From {
    Client,
    Server,
}

struct InFlight {
    /// The id's JSON text, as the client sent it, when it is not its key
    /// already (most ids are: a plain integer or string).
    spelled: Option<String>,
    method: Key,
    name: Option<String>,
    started: Instant,
    seq: u64,
    timeout: Option<Duration>,
    deadline: Option<Instant>,
    progress_token: Option<String>,
    audited: bool,
    /// Where its line ends in the stream of bytes for the server's stdin:
    /// once the relay has written up to here, the server's pipe had it all.
    ends_at: u64,
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
    seq: u64,
    /// Ids answered by mcp-bound (timed out): their late response is dropped.
    answered: Answered,
    gone: Option<Gone>,
    /// Lines for the client (our stdout), whole.
    pub to_client: Vec<u8>,
    /// Lines for the server (its stdin), whole.
    pub to_server: Vec<u8>,
    audit: Vec<Audit>,
    facts: McpFacts,
    replay: Replay,
    /// How the last replayed initialize went, until the loop takes it.
    replayed: Option<Result<(), String>>,
    /// Where the client line being read ends in the server's stream (a
    /// lower bound for a batch, whose elements may be answered here).
    line_ends_at: u64,
}

impl Session {
    pub fn new(policy: SessionPolicy, call_id: String) -> Session {
        let max_in_flight = policy.max_in_flight;
        let facts = McpFacts {
            limits: policy.limits(),
            ..McpFacts::default()
        };
        Session {
            policy,
            call_id,
            in_flight: HashMap::default(),
            deadlines: BTreeMap::new(),
            progress: HashMap::default(),
            seq: 0,
            answered: Answered::new(max_in_flight),
            gone: None,
            to_client: Vec::new(),
            to_server: Vec::new(),
            audit: Vec::new(),
            facts,
            replay: Replay::default(),
            line_ends_at: 0,
            replayed: None,
        }
    }

    /// The earliest request deadline.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadlines.keys().next().map(|(at, _)| *at)
    }

    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    pub fn server_gone(&self) -> bool {
        self.gone.is_some()
    }

    /// A restarted server (`attempt` counts restarts): requests may come
    /// again; the line to bring it to the first server's state, if any.
    pub fn on_restarted(&mut self, attempt: u64) -> Option<Vec<u8>> {
        self.gone = None;
        self.facts.restarts = attempt;
        self.replay.start(attempt)
    }

    /// The replayed initialize is still unanswered.
    pub fn replaying(&self) -> bool {
        self.replay.waiting()
    }

    /// How the replayed initialize went, once.
    pub fn take_replayed(&mut self) -> Option<Result<(), String>> {
        self.replayed.take()
    }

    /// The facts, for the loop to add what only it knows.
    pub fn facts_mut(&mut self) -> &mut McpFacts {
        &mut self.facts
    }

    /// Audit facts wait to be taken.
    pub fn has_audit(&self) -> bool {
        !self.audit.is_empty()
    }

    pub fn take_audit(&mut self) -> Vec<Audit> {
        std::mem::take(&mut self.audit)
    }

    pub fn facts(&self) -> McpFacts {
        self.facts.clone()
    }

    /// A complete line from the client: what to pass on goes to `out`
    /// (the line itself, byte-exact, unless some of it was answered here).
    /// `out_at`: where `out[0]` sits in the stream for the server's stdin.
    pub fn on_client_line(&mut self, now: Instant, line: &[u8], out: &mut Vec<u8>, out_at: u64) {
        let end = out_at + out.len() as u64;
        // A batch may lose elements answered here: then only its first
        // byte's place is sure, and "not written" is never said wrongly.
        self.line_ends_at = match line.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'[') => end + 1,
            _ => end + line.len() as u64,
        };
        self.on_line(now, From::Client, line, out);
    }

    /// A complete line from the server, offered by the stdout guard: what
    /// reaches the client goes to `out`. False if the line is not one
    /// JSON message (then nothing was taken: the guard diverts it).
    pub fn on_server_line(&mut self, now: Instant, line: &[u8], out: &mut Vec<u8>) -> bool {
        self.on_line(now, From::Server, line, out)
    }

    /// True if the line was one JSON message (an object or a batch).
    fn on_line(&mut self, now: Instant, from: From, line: &[u8], out: &mut Vec<u8>) -> bool {
        // `bytes`: the message's own, for the audit of a response.
        let pass = |session: &mut Session, message, bytes: usize| match from {
            From::Client => session.client_message(now, message),
            From::Server => session.server_message(now, message, bytes),
        };
        match message::parse(line) {
            // The client's own protocol: passed on as it is, counted.
            Line::NotJson if matches!(from, From::Client) => {
                self.facts.client.non_jsonrpc_lines += 1;
                out.extend_from_slice(line);
            }
            Line::NotJson => return false,
            Line::One(message) => {
                if pass(self, message, line.len()) {
                    out.extend_from_slice(line);
                }
            }
            Line::Batch(elements) => {
                let total = elements.len();
                let kept: Vec<&str> = elements
                    .into_iter()
                    .filter_map(|(raw, message)| pass(self, message, raw.len()).then_some(raw))
                    .collect();
                join_batch(line, total, &kept, out);
            }
        }
        true
    }

    /// A client line not framed (over the bound, or cut by EOF): passed
    /// on unparsed, counted.
    pub fn on_client_unframed(&mut self) {
        self.facts.client.non_jsonrpc_lines += 1;
    }

    /// One client message: true to pass it on.
    fn client_message(&mut self, now: Instant, message: Message<'_>) -> bool {
        match message {
            Message::Request { id, method, params } => {
                self.facts.client.requests += 1;
                if let Some(gone) = &self.gone {
                    // Answered here, never written anywhere.
                    self.to_client.extend(answer::server_exited(
                        id,
                        gone.exit.as_ref(),
                        &gone.stderr_tail,
                        &self.call_id,
                        false,
                    ));
                    self.facts.synthesized.server_exited += 1;
                    return false;
                }
                let Some(key) = (id.len() <= MAX_TRACKED)
                    .then(|| request_id::key(id))
                    .flatten()
                else {
                    return true;
                };
                if method.len() > MAX_TRACKED || self.in_flight.contains_key(&*key) {
                    return true;
                }
                if self.in_flight.len() >= self.policy.max_in_flight {
                    self.to_client
                        .extend(answer::too_many_in_flight(id, self.policy.max_in_flight));
                    self.facts.synthesized.too_many_in_flight += 1;
                    return false;
                }
                let name = matches!(&*method, "tools/call" | "prompts/get")
                    .then(|| message::name(params))
                    .flatten();
                let audited = self.policy.audit.covers(&method);
                if audited {
                    self.audit.push(Audit::Request {
                        id: id.to_string(),
                        method: method.to_string(),
                        name: name.clone(),
                        params_sha256: params.map(|p| hex(&Sha256::digest(p.as_bytes()))),
                    });
                }
                self.replay.on_client_request(&key, &method, params);
                let timeout = self.policy.timeout_for(&method);
                let progress_token = if self.policy.resets_on_progress && timeout.is_some() {
                    message::request_progress_token(params)
                } else {
                    None
                };
                self.seq += 1;
                let entry = InFlight {
                    spelled: (*key != *id).then(|| id.to_string()),
                    method: Key::new(&method),
                    name,
                    started: now,
                    seq: self.seq,
                    timeout,
                    deadline: timeout.and_then(|t| now.checked_add(t)),
                    progress_token,
                    audited,
                    ends_at: self.line_ends_at,
                };
                let key = Key::new(&key);
                if let Some(at) = entry.deadline {
                    self.deadlines.insert((at, entry.seq), key.clone());
                }
                if let Some(token) = &entry.progress_token {
                    self.progress.insert(token.clone(), key.clone());
                }
                self.in_flight.insert(key, entry);
                self.facts.peak_in_flight =
                    self.facts.peak_in_flight.max(self.in_flight.len() as u64);
                true
            }
            Message::Notification { method, params } => {
                self.facts.client.notifications += 1;
                if method == "notifications/cancelled"
                    && let Some(key) = message::cancelled_id(params)
                    && let Some((id, entry)) = self.remove(&key)
                {
                    self.facts.cancelled_by_client += 1;
                    self.finish(now, id, entry, RequestOutcome::Cancelled, None, 0);
                }
                true
            }
            Message::Response { .. } => {
                self.facts.client.responses += 1;
                true
            }
            Message::Invalid => {
                self.facts.client.non_jsonrpc_lines += 1;
                true
            }
        }
    }

    fn server_message(&mut self, now: Instant, message: Message<'_>, bytes: usize) -> bool {
        match message {
            Message::Response { id, result, error } => {
                self.facts.server.responses += 1;
                let Some(key) = request_id::key(id) else {
                    self.facts.unmatched_responses += 1;
                    return true;
                };
                if let Some(replayed) = self.replay.on_server_response(&key, result) {
                    self.replayed = Some(match replayed {
                        Replayed::Same {
                            to_server,
                            to_client,
                        } => {
                            self.to_server.extend(to_server);
                            self.to_client.extend(to_client);
                            Ok(())
                        }
                        Replayed::Changed(why) => Err(why),
                    });
                    false
                } else if let Some((id, entry)) = self.remove(&key) {
                    let (outcome, code) = match error {
                        None => (RequestOutcome::Result, None),
                        Some(code) => (RequestOutcome::Error, code),
                    };
                    self.finish(now, id, entry, outcome, code, bytes as u64);
                    true
                } else if self.answered.take(&key) {
                    self.facts.late_responses_dropped += 1;
                    false
                } else {
                    self.facts.unmatched_responses += 1;
                    true
                }
            }
            Message::Request { .. } => {
                self.facts.server.requests += 1;
                true
            }
            Message::Notification { method, params } => {
                self.facts.server.notifications += 1;
                if method == "notifications/progress"
                    && let Some(token) = message::progress_token(params)
                    && let Some(key) = self.progress.get(&token).cloned()
                {
                    self.extend_deadline(now, &key);
                }
                true
            }
            Message::Invalid => {
                self.facts.server.non_jsonrpc_lines += 1;
                true
            }
        }
    }

    fn extend_deadline(&mut self, now: Instant, key: &str) {
        let Some(entry) = self.in_flight.get_mut(key) else {
            return;
        };
        if let (Some(at), Some(timeout)) = (entry.deadline, entry.timeout) {
            self.deadlines.remove(&(at, entry.seq));
            entry.deadline = now.checked_add(timeout);
            if let Some(at) = entry.deadline {
                self.deadlines.insert((at, entry.seq), Key::new(key));
            }
        }
    }

    /// Answer every request whose deadline `now` reached: cancel it at
    /// the server, answer the client, and drop the late response.
    pub fn tick(&mut self, now: Instant) {
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
            let answer = answer::timed_out(&id, &entry.method, timeout);
            let bytes = answer.len() as u64;
            self.to_client.extend(answer);
            self.facts.synthesized.request_timeout += 1;
            self.answered.insert(key.to_string());
            self.finish(
                now,
                id,
                entry,
                RequestOutcome::TimedOut,
                Some(REQUEST_TIMEOUT),
                bytes,
            );
        }
    }

    /// The server is gone (exited, its stdout closed): answer every
    /// request in flight, oldest first, and any that comes later at once.
    /// `written`: how far the stream for its stdin had been written.
    pub fn on_server_gone(
        &mut self,
        now: Instant,
        exit: Option<Exit>,
        stderr_tail: String,
        written: u64,
    ) {
        if self.gone.is_some() {
            return;
        }
        let mut left: Vec<(Key, InFlight)> = self
            .in_flight
            .drain()
            .map(|(key, entry)| taken(key, entry))
            .collect();
        left.sort_by_key(|(_, e)| e.seq);
        self.deadlines.clear();
        self.progress.clear();
        self.facts.in_flight_at_exit = left.len() as u64;
        for (id, entry) in left {
            let answer = answer::server_exited(
                &id,
                exit.as_ref(),
                &stderr_tail,
                &self.call_id,
                entry.ends_at <= written,
            );
            let bytes = answer.len() as u64;
            self.to_client.extend(answer);
            self.facts.synthesized.server_exited += 1;
            if self.facts.interrupted.len() < MAX_INTERRUPTED_LISTED {
                self.facts.interrupted.push(Interrupted {
                    id: request_id::RequestId::new(&id).expect("a tracked id is strict JSON"),
                    method: entry.method.to_string(),
                    name: entry.name.clone(),
                });
            }
            self.finish(
                now,
                id,
                entry,
                RequestOutcome::ServerExited,
                Some(SERVER_ERROR),
                bytes,
            );
        }
        self.gone = Some(Gone { exit, stderr_tail });
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

    fn finish(
        &mut self,
        now: Instant,
        id: Key,
        entry: InFlight,
        outcome: RequestOutcome,
        error_code: Option<i64>,
        bytes: u64,
    ) {
        if entry.audited {
            self.audit.push(Audit::Response {
                id: id.to_string(),
                method: entry.method.to_string(),
                outcome,
                error_code,
                duration_ms: millis(now.saturating_duration_since(entry.started)),
                bytes,
            });
        }
    }
}

#[cfg(test)]
mod tests;
