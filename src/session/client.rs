//! The client's side of the request table: each line from our stdin is
//! read as the server will read it, and every request the server may run
//! is journaled before it can act on it, or refused. The audit is never
//! weaker than the server's parser:
//!
//! - A line is read by the strict fast path when it is sure, and
//!   otherwise as the most permissive server parser reads it (`lenient`):
//!   `NaN`, `Infinity`, lone surrogates, any depth, the last of duplicate
//!   keys. A line that is not UTF-8 is read as a server decoding it with
//!   U+FFFD reads it.
//! - **Refused, answered -32600, nothing sent:** a key the audit reads
//!   given twice (`id`, `method`, `params`, or `params.name`), since
//!   parsers that keep the first and the last would run different calls;
//!   a line holding a carriage return that a reader splitting lines on CR
//!   (Python's universal newlines) would read as several messages; a
//!   batch that is not UTF-8.
//! - **Journaled with the SHA-256 of the line as sent** (an `irregular`
//!   request): one that is not UTF-8, not strict JSON, the last line with
//!   no newline, over --max-message-bytes (hashed as it streams; its entry
//!   goes before its newline), with the id of a request still in flight,
//!   or with an id that cannot be tracked.

use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::audit::{Audit, Irregular, McpRequest, RequestOutcome};
use super::gate::Verdict;
use super::kind::Kind;
use super::lenient::{self, Object, Reading};
use super::message::{self, Message, join_batch};
use super::{End, InFlight, Key, MAX_TRACKED, Session, answer};
use crate::ids::hex;
use crate::request_id::{self, RequestId};

/// How a client line came, beyond its bytes.
pub(super) struct Form<'l> {
    /// The line as sent (its newline included, if it had one).
    pub(super) raw: &'l [u8],
    /// One message, not a batch: it may be sent rewritten.
    pub(super) single: bool,
    /// --otel-propagate: the line as the server gets it instead.
    pub(super) rewritten: Option<Vec<u8>>,
    invalid_utf8: bool,
    not_strict: bool,
    unterminated: bool,
    line_sha256: Option<String>,
}

impl<'l> Form<'l> {
    fn new(raw: &'l [u8], unterminated: bool) -> Form<'l> {
        Form {
            raw,
            single: false,
            rewritten: None,
            invalid_utf8: false,
            not_strict: false,
            unterminated,
            line_sha256: None,
        }
    }

    pub(super) fn regular(&self) -> bool {
        !(self.invalid_utf8 || self.not_strict || self.unterminated)
    }

    fn irregular(&self) -> Vec<Irregular> {
        [
            (self.invalid_utf8, Irregular::InvalidUtf8),
            (self.not_strict, Irregular::NotStrictJson),
            (self.unterminated, Irregular::Unterminated),
        ]
        .into_iter()
        .filter_map(|(is, what)| is.then_some(what))
        .collect()
    }

    /// SHA-256 of the line as sent, without its newline (once a line).
    fn line_sha256(&mut self) -> String {
        let raw = self.raw;
        self.line_sha256
            .get_or_insert_with(|| hex(&Sha256::digest(raw.strip_suffix(b"\n").unwrap_or(raw))))
            .clone()
    }
}

/// Where the client line being read stands.
#[derive(Default)]
pub(super) struct CurrentLine {
    /// Where it ends in the server's stream (a lower bound for a batch,
    /// whose elements may be answered here).
    ends_at: u64,
    /// A line over --max-message-bytes is streaming through.
    pub(super) overlong: Option<Overlong>,
    /// The gate's tickets for calls in it that wait for approval.
    pub(super) held: Vec<u64>,
    /// In a batch under an approver: the requests entered as it came.
    pub(super) admitted: Vec<Key>,
    in_batch: bool,
}

/// A client line over --max-message-bytes, streaming through: its hash
/// so far (None: refused, under a gate, which cannot read it).
pub(super) struct Overlong {
    pub(super) hash: Option<Sha256>,
}

impl Session {
    /// A complete line from the client: what to pass on goes to `out`
    /// (the line itself, byte-exact, unless some of it was answered here).
    /// `out_at`: where `out[0]` sits in the stream for the server's stdin.
    pub fn on_client_line(&mut self, now: Instant, line: &[u8], out: &mut Vec<u8>, out_at: u64) {
        self.note_line_end(line, out, out_at);
        self.client_line(now, line, out, Form::new(line, false));
    }

    /// The client's last line, with no newline before EOF: a server that
    /// iterates over lines still reads it, so it is read here too.
    pub fn on_client_last_line(
        &mut self,
        now: Instant,
        line: &[u8],
        out: &mut Vec<u8>,
        out_at: u64,
    ) {
        self.note_line_end(line, out, out_at);
        self.client_line(now, line, out, Form::new(line, true));
    }

    fn note_line_end(&mut self, line: &[u8], out: &[u8], out_at: u64) {
        let end = out_at + out.len() as u64;
        // A batch may lose elements answered here: then only its first
        // byte's place is sure, and "not written" is never said wrongly.
        self.current_line.ends_at = match line.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'[') => end + 1,
            _ => end + line.len() as u64,
        };
    }

    fn client_line(&mut self, now: Instant, line: &[u8], out: &mut Vec<u8>, mut form: Form<'_>) {
        let lossy;
        let text = match std::str::from_utf8(line) {
            Ok(text) => text,
            Err(_) => {
                form.invalid_utf8 = true;
                lossy = String::from_utf8_lossy(line);
                &*lossy
            }
        };
        // The fast path, when it is sure; it says whether it saw a CR.
        let first = text
            .bytes()
            .find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
        let scanned = (first == Some(b'{'))
            .then(|| super::scan::object_and_cr(text))
            .flatten();
        let cr = scanned.as_ref().is_none_or(|(_, cr)| *cr);
        if let Some(ids) = cr.then(|| super::cr_split::split_by_cr(text)).flatten() {
            let ids: Vec<Option<&str>> = ids.into_iter().map(Some).collect();
            self.refuse(
                &ids,
                "a carriage return splits this line into several messages",
            );
            return;
        }
        let reading = match scanned {
            Some((fields, _)) => Reading::One(Object {
                fields,
                ..Object::default()
            }),
            None => self.read_leniently(text, &mut form),
        };
        match reading {
            Reading::NotJson => {
                self.facts.client.non_jsonrpc_lines += 1;
                out.extend_from_slice(line);
            }
            Reading::One(object) => {
                form.single = true;
                if self.client_message(now, message::read(object), &mut form) {
                    match form.rewritten.take() {
                        Some(rewritten) => out.extend_from_slice(&rewritten),
                        None => out.extend_from_slice(line),
                    }
                } else if !self.current_line.held.is_empty() {
                    self.hold_line(now, line, None);
                }
            }
            Reading::Batch(elements) if form.invalid_utf8 => {
                // Its elements cannot be passed on as they came one by one.
                let ids: Vec<Option<&str>> = elements
                    .iter()
                    .filter_map(|(_, object)| {
                        let fields = &object.as_ref()?.fields;
                        fields.method.as_ref().and(fields.id).map(Some)
                    })
                    .collect();
                self.refuse(&ids, "a batch that is not UTF-8");
            }
            Reading::Batch(elements) => {
                let total = elements.len();
                self.current_line.in_batch = self.gate.is_some();
                let kept: Vec<(&str, Option<u64>)> = elements
                    .into_iter()
                    .filter_map(|(raw, object)| {
                        let message = object.map_or(Message::Invalid, message::read);
                        let before = self.current_line.held.len();
                        let pass = self.client_message(now, message, &mut form);
                        let held = self.current_line.held[before..].first().copied();
                        (pass || held.is_some()).then_some((raw, held))
                    })
                    .collect();
                self.current_line.in_batch = false;
                if self.current_line.held.is_empty() {
                    self.current_line.admitted.clear();
                    let kept: Vec<&str> = kept.into_iter().map(|(raw, _)| raw).collect();
                    join_batch(line, total, &kept, out);
                } else {
                    // Held whole until its decisions are made.
                    let kept = kept
                        .into_iter()
                        .map(|(raw, held)| (raw.to_string(), held))
                        .collect();
                    self.hold_line(now, line, Some((total, kept)));
                }
            }
        }
    }

    fn read_leniently<'t>(&mut self, text: &'t str, form: &mut Form<'_>) -> Reading<'t> {
        let (reading, reach) = lenient::read(text);
        form.not_strict |= reach.nonstandard;
        reading
    }

    /// Answer -32600 for each of `ids` (the requests of what is refused;
    /// None: one whose id cannot be told, answered with null), and send
    /// nothing of it to the server.
    pub(super) fn refuse(&mut self, ids: &[Option<&str>], why: &str) {
        self.facts.refused += 1;
        let mut answered: Vec<Option<Key>> = Vec::new();
        for id in ids {
            // An id strict JSON cannot carry is answered with null too.
            let id = id.and_then(RequestId::new);
            let key = id.as_ref().map(|id| {
                request_id::key(id.get()).map_or_else(|| Key::new(id.get()), |k| Key::new(&*k))
            });
            if answered.contains(&key) {
                continue;
            }
            answered.push(key);
            self.to_client.extend(answer::invalid_request(
                id.as_ref().map(RequestId::get),
                why,
            ));
            self.facts.synthesized.invalid_request += 1;
        }
    }

    /// One client message: true to pass it on.
    fn client_message(&mut self, now: Instant, message: Message<'_>, form: &mut Form<'_>) -> bool {
        match message {
            Message::Request { id, method, params } => {
                self.client_request(now, id, &method, params, form)
            }
            Message::Ambiguous { id, key } => {
                let why = format!("the key \"{key}\" is given twice");
                // Which id a server keeps is just as unsure: null, as
                // JSON-RPC answers when the id cannot be told.
                let ids = match (key, id) {
                    ("id", _) => vec![None],
                    (_, Some(id)) => vec![Some(id)],
                    (_, None) => Vec::new(),
                };
                self.refuse(&ids, &why);
                false
            }
            Message::Notification { method, params } => {
                self.facts.client.notifications += 1;
                if method == "notifications/cancelled"
                    && let Some(key) = message::cancelled_id(params)
                    && let Some((id, entry)) = self.remove(&key)
                {
                    // The client no longer waits: a late answer is
                    // dropped (some hosts drop the connection on an answer
                    // for an id they no longer know).
                    self.answered.insert(key);
                    self.facts.cancelled_by_client += 1;
                    let end = End::by(RequestOutcome::Cancelled, None);
                    self.finish(now, id, entry, end, 0);
                } else if method == "notifications/cancelled"
                    && let Some(key) = message::cancelled_id(params)
                    && self.cancel_pending(now, &key)
                {
                    // A call still waiting for approval: never sent, and
                    // its approver ended.
                    self.facts.cancelled_by_client += 1;
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

    fn client_request(
        &mut self,
        now: Instant,
        id: &str,
        method: &str,
        params: Option<&str>,
        form: &mut Form<'_>,
    ) -> bool {
        self.facts.client.requests += 1;
        if let Some(gone) = &self.gone {
            // Answered here, never written anywhere.
            let excerpt = answer::agent_excerpt(&gone.stderr_tail, self.policy.agent_excerpt_bytes);
            let answer = answer::server_exited(
                id,
                gone.exit.as_ref(),
                &gone.stderr_tail,
                &self.call_id,
                false,
                excerpt.as_deref(),
            );
            self.count_excerpt(excerpt.as_deref());
            self.to_client.extend(answer);
            self.facts.synthesized.server_exited += 1;
            return false;
        }
        let name = if matches!(method, "tools/call" | "prompts/get") {
            match tool_name(params) {
                Some(name) => name,
                None => {
                    self.refuse(&[Some(id)], "the key \"name\" is given twice in params");
                    return false;
                }
            }
        } else {
            None
        };
        let verdict = self.gate_verdict(method, name.as_deref());
        let fits = id.len() <= MAX_TRACKED && method.len() <= MAX_TRACKED;
        let key = fits.then(|| request_id::key(id)).flatten();
        let mut irregular = if form.regular() {
            Vec::new()
        } else {
            form.irregular()
        };
        let tracked = match &key {
            None => {
                irregular.push(Irregular::UntrackedId);
                false
            }
            Some(key)
                if self.in_flight.contains_key(&**key)
                    || self
                        .gate
                        .as_ref()
                        .is_some_and(|g| g.ticket_of(key).is_some()) =>
            {
                irregular.push(Irregular::DuplicateId);
                false
            }
            Some(_) => true,
        };
        if verdict.is_some() && !tracked {
            // A decision is bound to one request: one the table cannot
            // tell apart is not sent.
            self.refuse(
                &[Some(id)],
                "a tools/call under the tool gate whose id cannot be tracked (in flight already, or not a short string or number)",
            );
            return false;
        }
        if tracked && self.in_flight.len() >= self.policy.max_in_flight {
            self.to_client
                .extend(answer::too_many_in_flight(id, self.policy.max_in_flight));
            self.facts.synthesized.too_many_in_flight += 1;
            return false;
        }
        // Under a gate every tools/call is journaled, so that its decision
        // is bound to it.
        let audited = self.policy.audit.covers(method) || verdict.is_some();
        let mut params_sha256 = audited
            .then(|| params.map(|p| hex(&Sha256::digest(p.as_bytes()))))
            .flatten();
        if audited {
            let line_sha256 = (!irregular.is_empty()).then(|| form.line_sha256());
            self.out.audit.push(Audit::Request(McpRequest {
                call_id: self.call_id.clone(),
                request_id: (id.len() <= MAX_TRACKED)
                    .then(|| RequestId::new(id))
                    .flatten(),
                method: (method.len() <= MAX_TRACKED).then(|| method.to_string()),
                name: name.clone(),
                // Moved when no gate needs it after (the common path).
                params_sha256: if verdict.is_some() {
                    params_sha256.clone()
                } else {
                    params_sha256.take()
                },
                line_sha256,
                irregular,
            }));
        }
        // Only under a gate: the tool's name is copied for it (nothing
        // is on the path of an ungated request).
        let call = verdict.map(|_| super::approval::Call {
            id,
            tool: name.clone().unwrap_or_default(),
            params,
            params_sha256,
        });
        if let (Some(tracing), Some(call)) = (&mut self.out.tracing, &call) {
            tracing.gated(call.id, call.params, 2 * self.policy.max_in_flight);
        }
        match (verdict, &call) {
            (Some(Verdict::Denied), Some(call)) => {
                self.decided_by_policy(now, call, false);
                return false;
            }
            (Some(Verdict::Allowed), Some(call)) => self.decided_by_policy(now, call, true),
            _ => {}
        }
        self.opening.spoken.on_request(method, params);
        let Some(key) = key.filter(|_| tracked) else {
            return true;
        };
        self.opening.replay.on_client_request(&key, method, params);
        let kind = Kind::of(method);
        let timeout = self.policy.timeout_for(method, kind);
        let progress_token = if self.policy.resets_on_progress && timeout.is_some() {
            message::request_progress_token(params)
        } else {
            None
        };
        self.marks.seq += 1;
        let task = method
            .starts_with("tasks/")
            .then(|| super::tasks::task_id_of(params))
            .flatten()
            .filter(|task_id| self.tasks.is_open(task_id));
        // A call held for approval is sent later, as it came.
        form.single &= !matches!(verdict, Some(Verdict::Ask));
        let trace = self.request_trace(params, form);
        if let Some(rewritten) = &form.rewritten {
            let grown = rewritten.len() as i64 - form.raw.len() as i64;
            self.current_line.ends_at = self.current_line.ends_at.saturating_add_signed(grown);
        }
        let entry = InFlight {
            spelled: (*key != *id).then(|| id.to_string()),
            kind,
            task,
            stderr_at: self.marks.stderr_seen,
            method: Key::new(method),
            name,
            started: now,
            seq: self.marks.seq,
            timeout,
            deadline: timeout.and_then(|t: Duration| now.checked_add(t)),
            progress_token,
            audited,
            ends_at: self.current_line.ends_at,
            trace,
        };
        let key = Key::new(&key);
        if let (Some(Verdict::Ask), Some(call)) = (verdict, &call) {
            self.hold(now, call, key, entry);
            return false;
        }
        if self.current_line.in_batch {
            self.current_line.admitted.push(key.clone());
        }
        self.admit(key, entry);
        true
    }
}

/// `params.name`: Some(the name, if any), or None when `name` is given
/// twice. The strict parse first; when it cannot tell, the permissive one.
fn tool_name(params: Option<&str>) -> Option<Option<String>> {
    let Some(params) = params else {
        return Some(None);
    };
    match message::name(params) {
        Ok(name) => Some(name),
        Err(()) => match lenient::name(params) {
            Some((_, true)) => None,
            Some((name, false)) => Some(name),
            None => Some(None),
        },
    }
}
