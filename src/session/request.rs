//! One client request, from the message that holds it to where it goes:
//! first the decisions, each of which may answer it here (the server is
//! gone; the gate cannot read the call; the table cannot track a request
//! the gate decides; too many are in flight), then the bookkeeping of one
//! that goes on (its audit entry, the gate's decision, tracing, its
//! deadline), which forwards it or holds it for its approver.
//!
//! What the gate refuses, as no server would let it decide otherwise:
//! - a `tools/call` whose `params` is not an object, or whose `name` is
//!   not a string (never decided as `""`, which a deny list allows);
//! - a call the approver would be asked about whose `arguments` strict
//!   JSON cannot carry (the approver would not see what the server runs);
//! - a request it decides (every `tools/call`, and `tools/list` under a
//!   policy by name, whose result it filters) whose id the table cannot
//!   track, or that comes with a null id or as a notification (in
//!   `client.rs`).

use std::borrow::Cow;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::audit::{Audit, Irregular, McpRequest};
use super::form::Form;
use super::gate::Verdict;
use super::kind::Kind;
use super::lenient::{self, CallParams};
use super::message;
use super::refusal::{LineOf, Refusal, Refused};
use super::{InFlight, Key, MAX_TRACKED, Session, answer};
use crate::ids::hex;
use crate::request_id::{self, RequestId};

/// What became of a client request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Disposition {
    /// Sent on to the server (as it came, or rewritten by --otel-propagate).
    Forward,
    /// Answered here: nothing of it reaches the server.
    Answered,
    /// Held for its approver: sent once approved.
    Held,
}

/// A request as the client line gave it.
pub(super) struct Request<'a> {
    /// The id's JSON text, as sent.
    pub(super) id: &'a str,
    pub(super) method: &'a str,
    pub(super) params: Option<&'a str>,
}

/// What a call's `params` say to the gate and the audit.
#[derive(Default)]
pub(super) struct CallRead<'a> {
    pub(super) name: Option<String>,
    /// `params.arguments`, its exact text.
    arguments: Option<&'a str>,
    /// `params.requestState` and `params.inputResponses`, their exact
    /// text: a 2026-07-28 retry.
    pub(super) request_state: Option<&'a str>,
    pub(super) input_responses: Option<&'a str>,
}

/// How the table can keep a request.
struct Tracking<'a> {
    key: Option<Cow<'a, str>>,
    tracked: bool,
    irregular: Vec<Irregular>,
}

impl Session {
    /// Whether the gate decides requests of `method`: every `tools/call`,
    /// and `tools/list` under a policy by name (its result is filtered).
    pub(super) fn gate_decides(&self, method: &str) -> bool {
        self.gate
            .as_ref()
            .is_some_and(|g| method == "tools/call" || (method == "tools/list" && g.filters()))
    }

    /// A request from the client, and where it goes.
    pub(super) fn client_request(
        &mut self,
        now: Instant,
        request: Request<'_>,
        form: &mut Form<'_>,
    ) -> Disposition {
        self.facts.client.requests += 1;
        if self.gone.is_some() {
            self.answer_server_gone(request.id);
            return Disposition::Answered;
        }
        let call = match self.read_call(&request) {
            Ok(call) => call,
            Err(reason) => return self.refuse_request(reason, &request, form),
        };
        let verdict = match self.gate_verdict(request.method, call.name.as_deref()) {
            // A tool that drifted from its pin is not asked about.
            Some(Verdict::Allowed | Verdict::Ask)
                if !self.pin_allows(call.name.as_deref().unwrap_or_default()) =>
            {
                Some(Verdict::Changed)
            }
            verdict => verdict,
        };
        // Arguments strict JSON cannot read are refused before any
        // approval is looked for: none can cover what cannot be compared.
        if verdict == Some(Verdict::Ask) && call.arguments.is_some_and(|a| !lenient::is_strict(a)) {
            return self.refuse_request(Refusal::NotStrictJson, &request, form);
        }
        if verdict == Some(Verdict::Ask) {
            use super::input_required::{Retry, RetryCall};
            let retry = RetryCall {
                id: request.id,
                tool: call.name.as_deref().unwrap_or_default(),
                arguments: call.arguments,
                request_state: call.request_state,
                input_responses: call.input_responses,
            };
            match self.sealed_retry(now, retry, form) {
                None => {}
                Some(Retry::Decided(verdict)) => {
                    return self.checked_go_on(now, request, call, Some(verdict), form);
                }
                Some(Retry::Opened(opened)) => {
                    return self.go_on_opened(now, &request, opened, form);
                }
            }
        }
        self.checked_go_on(now, request, call, verdict, form)
    }

    /// A retry whose sealed state opened: the original call goes on
    /// under the retry's id, read, journaled and sent instead of it.
    fn go_on_opened(
        &mut self,
        now: Instant,
        request: &Request<'_>,
        opened: super::input_required::Opened,
        form: &mut Form<'_>,
    ) -> Disposition {
        let super::input_required::Opened {
            line,
            params,
            verdict,
        } = opened;
        let retry = Request {
            id: request.id,
            method: request.method,
            params: params.as_deref(),
        };
        let call = match self.read_call(&retry) {
            Ok(call) => call,
            Err(reason) => return self.refuse_request(reason, request, form),
        };
        let grown = line.len() as i64 - form.raw.len() as i64;
        self.current_line.ends_at = self.current_line.ends_at.saturating_add_signed(grown);
        let mut original = Form::new(&line, false);
        original.single = true;
        let disposition = self.checked_go_on(now, retry, call, Some(verdict), &mut original);
        if disposition == Disposition::Forward {
            form.rewritten = Some(original.rewritten.take().unwrap_or_else(|| line.clone()));
        }
        disposition
    }

    /// A request the table must be able to keep, within its bound.
    fn checked_go_on(
        &mut self,
        now: Instant,
        request: Request<'_>,
        call: CallRead<'_>,
        verdict: Option<Verdict>,
        form: &mut Form<'_>,
    ) -> Disposition {
        let tracking = self.tracking(&request, form);
        if !tracking.tracked && self.gate_decides(request.method) {
            // A decision is bound to one request: one the table cannot
            // tell apart is not sent.
            return self.refuse_request(Refusal::UntrackedId, &request, form);
        }
        if tracking.tracked && self.in_flight.len() >= self.policy.max_in_flight {
            self.to_client.extend(answer::too_many_in_flight(
                request.id,
                self.policy.max_in_flight,
            ));
            self.facts.synthesized.too_many_in_flight += 1;
            return Disposition::Answered;
        }
        self.go_on(now, &request, call, verdict, tracking, form)
    }

    /// Answered here, never written anywhere: the server is gone.
    fn answer_server_gone(&mut self, id: &str) {
        let Some(gone) = &self.gone else {
            return;
        };
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
    }

    fn refuse_request(
        &mut self,
        reason: Refusal,
        request: &Request<'_>,
        form: &Form<'_>,
    ) -> Disposition {
        let irregular = form.irregular();
        self.refuse(
            reason,
            Refused {
                ids: &[Some(request.id)],
                method: Some(request.method),
                line: LineOf::Bytes(form.raw),
                irregular,
            },
        );
        Disposition::Answered
    }

    /// The name and arguments of a `tools/call` or `prompts/get`, read as
    /// the most permissive server reads them; Err when a key the audit
    /// reads is ambiguous, or, for a call the gate decides, when the call
    /// cannot be decided as sent.
    pub(super) fn read_call<'a>(&self, request: &Request<'a>) -> Result<CallRead<'a>, Refusal> {
        if !matches!(request.method, "tools/call" | "prompts/get") {
            return Ok(CallRead::default());
        }
        let decided = self.gate.is_some() && request.method == "tools/call";
        let undecidable = |reason| {
            if decided {
                Err(reason)
            } else {
                Ok(CallRead::default())
            }
        };
        let Some(params) = request.params else {
            return undecidable(Refusal::NameNotString);
        };
        match lenient::call_params(params) {
            CallParams::NotObject => undecidable(Refusal::ParamsNotObject),
            CallParams::Object {
                ambiguous: Some((_, spelled)),
                ..
            } => Err(if spelled {
                Refusal::CaseVariantKey
            } else {
                Refusal::DuplicateKey
            }),
            CallParams::Object {
                name: Some(Ok(name)),
                arguments,
                request_state,
                input_responses,
                ..
            } => Ok(CallRead {
                name: Some(name),
                arguments,
                request_state,
                input_responses,
            }),
            CallParams::Object { .. } => undecidable(Refusal::NameNotString),
        }
    }

    /// Whether the table can keep `request`, and what makes it irregular.
    fn tracking<'a>(&self, request: &Request<'a>, form: &Form<'_>) -> Tracking<'a> {
        let (id, method) = (request.id, request.method);
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
        Tracking {
            key,
            tracked,
            irregular,
        }
    }

    /// A request that goes on: journaled where audited, decided by the
    /// policy or held for the approver, traced, and entered in the table.
    fn go_on(
        &mut self,
        now: Instant,
        request: &Request<'_>,
        read: CallRead<'_>,
        verdict: Option<Verdict>,
        tracking: Tracking<'_>,
        form: &mut Form<'_>,
    ) -> Disposition {
        let Request { id, method, params } = *request;
        // Under a gate every tools/call is journaled, so that its decision
        // is bound to it.
        let audited = self.policy.audit.covers(method) || verdict.is_some();
        let mut params_sha256 = audited
            .then(|| params.map(|p| hex(&Sha256::digest(p.as_bytes()))))
            .flatten();
        if audited {
            let line_sha256 = (!tracking.irregular.is_empty()).then(|| form.line_sha256());
            self.out.audit.push(Audit::Request(McpRequest {
                call_id: self.call_id.clone(),
                request_id: (id.len() <= MAX_TRACKED)
                    .then(|| RequestId::new(id))
                    .flatten(),
                method: (method.len() <= MAX_TRACKED).then(|| method.to_string()),
                name: read.name.clone(),
                // Moved when no gate needs it after (the common path).
                params_sha256: if verdict.is_some() {
                    params_sha256.clone()
                } else {
                    params_sha256.take()
                },
                line_sha256,
                irregular: tracking.irregular,
            }));
        }
        // Only under a gate: the tool's name is copied for it (nothing
        // is on the path of an ungated request).
        let call = verdict.as_ref().map(|_| super::ruling::Call {
            id,
            tool: read.name.clone().unwrap_or_default(),
            params,
            arguments: read.arguments,
            params_sha256,
        });
        if let (Some(tracing), Some(call)) = (&mut self.out.tracing, &call) {
            tracing.gated(call.id, call.params, 2 * self.policy.max_in_flight);
        }
        let asked = verdict == Some(Verdict::Ask);
        match (verdict, &call) {
            (Some(Verdict::Denied), Some(call)) => {
                self.decided_by_policy(now, call, false);
                return Disposition::Answered;
            }
            (Some(Verdict::Changed), Some(call)) => {
                self.decided_by_pin(now, call);
                return Disposition::Answered;
            }
            (Some(Verdict::Allowed), Some(call)) => self.decided_by_policy(now, call, true),
            // A retry's answer: approved, it goes on; else answered here.
            (Some(Verdict::Sealed(sealed)), Some(call))
                if !self.decided_through_seal(now, call, sealed.clone()) =>
            {
                return Disposition::Answered;
            }
            _ => {}
        }
        self.opening.spoken.on_request(method, params);
        let Some(key) = tracking.key.filter(|_| tracking.tracked) else {
            return Disposition::Forward;
        };
        self.opening.replay.on_client_request(&key, method, params);
        // A call held for approval is sent later, as it came.
        form.single &= !asked;
        let entry = self.new_entry(now, request, &key, read.name, audited, form);
        let key = Key::new(&key);
        if let (true, Some(call)) = (asked, &call) {
            return if self.hold(now, call, key, entry) {
                Disposition::Held
            } else {
                Disposition::Answered
            };
        }
        if self.current_line.in_batch {
            self.current_line.admitted.push(key.clone());
        }
        self.admit(key, entry);
        Disposition::Forward
    }

    /// The table's entry for a request that goes on: its kind, deadline,
    /// progress token, task and trace, and where its line ends.
    fn new_entry(
        &mut self,
        now: Instant,
        request: &Request<'_>,
        key: &str,
        name: Option<String>,
        audited: bool,
        form: &mut Form<'_>,
    ) -> InFlight {
        let Request { id, method, params } = *request;
        let kind = Kind::of(method);
        let timeout = self.policy.timeout_for(method, kind);
        let progress_token = if self.policy.resets_on_progress && timeout.is_some() {
            message::request_progress_token(params)
        } else {
            None
        };
        self.seq += 1;
        let task = method
            .starts_with("tasks/")
            .then(|| super::tasks::task_id_of(params))
            .flatten()
            .filter(|task_id| self.tasks.is_open(task_id));
        let trace = self.request_trace(params, form);
        if let Some(rewritten) = &form.rewritten {
            let grown = rewritten.len() as i64 - form.raw.len() as i64;
            self.current_line.ends_at = self.current_line.ends_at.saturating_add_signed(grown);
        }
        InFlight {
            spelled: (key != id).then(|| id.to_string()),
            kind,
            task,
            stderr_at: self.stderr_seen,
            method: Key::new(method),
            name,
            started: now,
            seq: self.seq,
            timeout,
            deadline: timeout.and_then(|t: Duration| now.checked_add(t)),
            progress_token,
            audited,
            ends_at: self.current_line.ends_at,
            trace,
        }
    }
}
