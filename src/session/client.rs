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
//! - **Refused, answered -32600, nothing sent** (`refusal.rs`, journaled
//!   wherever a gate decides or requests are audited): a key the audit
//!   reads given twice or spelled in another case or folding (`jsonrpc`,
//!   `id`, `method`, `params`; `name` or `arguments` in a call's params),
//!   since parsers that keep the first and the last, or that fold case,
//!   would run different calls; a line holding a carriage return that a
//!   reader splitting lines on CR (Python's universal newlines) would read
//!   as several messages; a batch that is not UTF-8. Under a gate or an
//!   audit also a line that is not exactly one JSON value (a message
//!   split over lines, pretty-printed, or followed by another: a server
//!   decoding a stream reads it), or that opens with a byte order mark.
//!   What the gate alone refuses is in `request.rs`.
//! - **Journaled with the SHA-256 of the line as sent** (an `irregular`
//!   request): one that is not UTF-8, not strict JSON, the last line with
//!   no newline, over --max-message-bytes (hashed as it streams; its entry
//!   goes before its newline), with the id of a request still in flight,
//!   or with an id that cannot be tracked (null, or none, for a method
//!   the audit covers).

use std::time::Instant;

use sha2::{Digest, Sha256};

use super::audit::{Audit, Irregular, McpRequest, RequestOutcome};
use super::form::Form;
use super::lenient::{self, Object, Reading};
use super::message::{self, Message, join_batch};
use super::refusal::{LineOf, Refusal, Refused};
use super::request::{Disposition, Request};
use super::{End, Key, MAX_TRACKED, Session};
use crate::ids::hex;

/// Where the client line being read stands.
#[derive(Default)]
pub(super) struct CurrentLine {
    /// Where it ends in the server's stream (a lower bound for a batch,
    /// whose elements may be answered here).
    pub(super) ends_at: u64,
    /// A line over --max-message-bytes is streaming through.
    pub(super) overlong: Option<Overlong>,
    /// The gate's tickets for calls in it that wait for approval.
    pub(super) held: Vec<u64>,
    /// In a batch under an approver: the requests entered as it came.
    pub(super) admitted: Vec<Key>,
    pub(super) in_batch: bool,
}

/// A client line over --max-message-bytes, streaming through (or, under
/// a gate, which cannot read it, refused): its hash so far.
pub(super) struct Overlong {
    pub(super) hash: Sha256,
    pub(super) refused: bool,
}

impl Session {
    /// A complete line from the client: what to pass on goes to `out`
    /// (the line itself, byte-exact, unless some of it was answered here).
    /// `out_at`: where `out[0]` sits in the stream for the server's stdin.
    pub(crate) fn on_client_line(
        &mut self,
        now: Instant,
        line: &[u8],
        out: &mut Vec<u8>,
        out_at: u64,
    ) {
        self.note_line_end(line, out, out_at);
        self.client_line(now, line, out, Form::new(line, false));
    }

    /// The client's last line, with no newline before EOF: a server that
    /// iterates over lines still reads it, so it is read here too.
    pub(crate) fn on_client_last_line(
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
        let guarded = self.guards_lines();
        if guarded && text.starts_with('\u{feff}') {
            self.refuse_line(Refusal::ByteOrderMark, &form, &[None]);
            return;
        }
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
            self.refuse_line(Refusal::CarriageReturn, &form, &ids);
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
            // Nothing a server runs, unless it decodes a stream (a value
            // split over lines) or skips a byte order mark: under a gate
            // or an audit, what is not blank is refused.
            Reading::NotJson if guarded && first.is_some() => {
                self.refuse_line(Refusal::NotOneValue, &form, &[None]);
            }
            Reading::NotJson => {
                self.facts.client.non_jsonrpc_lines += 1;
                out.extend_from_slice(line);
            }
            Reading::One(object) => {
                form.single = true;
                match self.client_message(now, message::read(object), &mut form) {
                    Disposition::Forward => match form.rewritten.take() {
                        Some(rewritten) => out.extend_from_slice(&rewritten),
                        None => out.extend_from_slice(line),
                    },
                    Disposition::Held => self.hold_line(now, line, None),
                    Disposition::Answered => {}
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
                self.refuse_line(Refusal::BatchNotUtf8, &form, &ids);
            }
            Reading::Batch(elements) => self.client_batch(now, line, elements, out, &mut form),
        }
    }

    /// A batch: each element decided on its own; what is kept goes on as
    /// one batch (the line itself when all is), or is held whole until its
    /// decisions are made.
    fn client_batch(
        &mut self,
        now: Instant,
        line: &[u8],
        elements: Vec<(&str, Option<Object<'_>>)>,
        out: &mut Vec<u8>,
        form: &mut Form<'_>,
    ) {
        let total = elements.len();
        self.current_line.in_batch = self.gate.is_some();
        let kept: Vec<(&str, Option<u64>)> = elements
            .into_iter()
            .filter_map(|(raw, object)| {
                let message = object.map_or(Message::Invalid, message::read);
                let before = self.current_line.held.len();
                let disposition = self.client_message(now, message, form);
                let held = self.current_line.held[before..].first().copied();
                (disposition != Disposition::Answered).then_some((raw, held))
            })
            .collect();
        self.current_line.in_batch = false;
        if self.current_line.held.is_empty() {
            self.current_line.admitted.clear();
            let kept: Vec<&str> = kept.into_iter().map(|(raw, _)| raw).collect();
            join_batch(line, total, &kept, out);
        } else {
            let kept = kept
                .into_iter()
                .map(|(raw, held)| (raw.to_string(), held))
                .collect();
            self.hold_line(now, line, Some((total, kept)));
        }
    }

    fn read_leniently<'t>(&mut self, text: &'t str, form: &mut Form<'_>) -> Reading<'t> {
        let (reading, reach) = lenient::read(text);
        form.not_strict |= reach.nonstandard;
        reading
    }

    /// Refuse what the line holds (`ids`: its requests), nothing of it
    /// read further.
    pub(super) fn refuse_line(&mut self, reason: Refusal, form: &Form<'_>, ids: &[Option<&str>]) {
        let irregular = form.irregular();
        self.refuse(
            reason,
            Refused {
                ids,
                method: None,
                line: LineOf::Bytes(form.raw),
                irregular,
            },
        );
    }

    /// One client message: where it goes.
    fn client_message(
        &mut self,
        now: Instant,
        message: Message<'_>,
        form: &mut Form<'_>,
    ) -> Disposition {
        match message {
            Message::Request { id, method, params } => {
                let request = Request {
                    id,
                    method: &method,
                    params,
                };
                self.client_request(now, request, form)
            }
            Message::Ambiguous { id, key, spelled } => {
                // Which id a server keeps is just as unsure: null, as
                // JSON-RPC answers when the id cannot be told.
                let ids = match (key, id) {
                    ("id", _) => vec![None],
                    (_, Some(id)) => vec![Some(id)],
                    (_, None) => Vec::new(),
                };
                let reason = if spelled {
                    Refusal::CaseVariantKey
                } else {
                    Refusal::DuplicateKey
                };
                self.refuse_line(reason, form, &ids);
                Disposition::Answered
            }
            Message::Notification {
                method,
                params,
                null_id,
            } => self.client_notification(now, &method, params, null_id, form),
            Message::Response { id, result, error } => {
                self.facts.client.responses += 1;
                match self.on_host_answer(now, id, result, error.is_some()) {
                    true => Disposition::Answered,
                    false => Disposition::Forward,
                }
            }
            Message::Invalid => {
                self.facts.client.non_jsonrpc_lines += 1;
                Disposition::Forward
            }
        }
    }

    /// A notification, or a request with a null id (JSON-RPC 2.0 answers
    /// it, under a null id no table can key). One of a method the gate
    /// decides is refused; one of a method the audit covers is journaled,
    /// untracked; a cancellation ends what it names.
    fn client_notification(
        &mut self,
        now: Instant,
        method: &str,
        params: Option<&str>,
        null_id: bool,
        form: &mut Form<'_>,
    ) -> Disposition {
        if self.gate_decides(method) {
            let (reason, ids): (_, &[Option<&str>]) = if null_id {
                (Refusal::NullId, &[None])
            } else {
                (Refusal::Notification, &[])
            };
            let irregular = form.irregular();
            self.refuse(
                reason,
                Refused {
                    ids,
                    method: Some(method),
                    line: LineOf::Bytes(form.raw),
                    irregular,
                },
            );
            return Disposition::Answered;
        }
        if self.policy.journals_requests() && super::AuditRequests::Tools.covers(method) {
            let request = Request {
                id: "null",
                method,
                params,
            };
            match self.read_call(&request) {
                Ok(call) => self.journal_untracked(&request, call.name, form),
                Err(reason) => {
                    let ids: &[Option<&str>] = if null_id { &[None] } else { &[] };
                    let irregular = form.irregular();
                    let refused = Refused {
                        ids,
                        method: Some(method),
                        line: LineOf::Bytes(form.raw),
                        irregular,
                    };
                    self.refuse(reason, refused);
                    return Disposition::Answered;
                }
            }
        }
        self.facts.client.notifications += 1;
        if method == "notifications/cancelled"
            && let Some(key) = message::cancelled_id(params)
        {
            if let Some((id, entry)) = self.remove(&key) {
                // The client no longer waits: a late answer is dropped
                // (some hosts drop the connection on an answer for an id
                // they no longer know).
                self.answered.insert(key);
                self.facts.cancelled_by_client += 1;
                let end = End::by(RequestOutcome::Cancelled, None);
                self.finish(now, id, entry, end, 0);
            } else if self.cancel_pending(now, &key) {
                // A call still waiting for approval: never sent, and its
                // approver ended.
                self.facts.cancelled_by_client += 1;
            }
        }
        Disposition::Forward
    }

    /// A message of a method that acts, sent with no id or a null one:
    /// the server may run it, so it is journaled, untracked.
    fn journal_untracked(
        &mut self,
        request: &Request<'_>,
        name: Option<String>,
        form: &mut Form<'_>,
    ) {
        let mut irregular = form.irregular();
        irregular.push(Irregular::UntrackedId);
        let line_sha256 = Some(form.line_sha256());
        let method = request.method;
        self.out.audit.push(Audit::Request(McpRequest {
            call_id: self.call_id.clone(),
            request_id: None,
            method: (method.len() <= MAX_TRACKED).then(|| method.to_string()),
            name,
            params_sha256: request.params.map(|p| hex(&Sha256::digest(p.as_bytes()))),
            line_sha256,
            irregular,
        }));
    }
}
