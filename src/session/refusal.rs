//! One way to refuse a client line: it is answered -32600 (JSON-RPC's
//! Invalid Request) for each request it held, nothing of it reaches the
//! server, and, wherever requests are audited or a gate decides, each
//! answer is in the journal: an `mcp_request` marked `refused` (with the
//! SHA-256 of the line as sent) and, next, an `mcp_response` whose
//! outcome is `refused` and whose `reason` is the word below.

use serde::{Deserialize, Serialize};

use super::audit::{Audit, Irregular, McpRequest, McpResponse, RequestOutcome};
use super::{Key, MAX_TRACKED, Session, answer};
use crate::request_id::{self, RequestId};

/// Why a client line or batch element was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// A key the audit reads (`jsonrpc`, `id`, `method`, `params`; `name`
    /// or `arguments` in a call's params) given twice: parsers keeping the
    /// first and the last would run different requests.
    DuplicateKey,
    /// Such a key spelled otherwise (`Name`, `param\u017f`, `ıd`): Go's
    /// encoding/json and .NET's case-insensitive readers take it as the key.
    CaseVariantKey,
    /// A carriage return splits the line into several messages for a
    /// reader that splits lines on CR.
    CarriageReturn,
    /// A batch that is not UTF-8: its elements cannot pass as they came.
    BatchNotUtf8,
    /// Under a gate or an audit: not exactly one JSON value (an object or
    /// a batch) as the permissive reading reads it: a message split over
    /// lines, pretty-printed, or followed by another on the same line
    /// (a server decoding a stream reads them all).
    NotOneValue,
    /// Under a gate or an audit: a UTF-8 byte order mark before the value
    /// (Python's json.loads(bytes) skips it; it is refused, not stripped).
    ByteOrderMark,
    /// Under a gate, a call the gate decides with `"id": null`.
    NullId,
    /// Under a gate, a call the gate decides sent as a notification.
    Notification,
    /// Under a gate, a `tools/call` whose `params` is not an object.
    ParamsNotObject,
    /// Under a gate, a `tools/call` whose `params.name` is not a string.
    NameNotString,
    /// Under a gate, a call the approver would be asked about whose
    /// arguments strict JSON cannot carry (NaN, Infinity, a lone
    /// surrogate): the approver would not see what the server runs.
    NotStrictJson,
    /// Under a gate, a request it decides whose id the table cannot track
    /// (in flight already, or not a short string or number).
    UntrackedId,
    /// Under a gate, a line over --max-message-bytes, which it cannot read.
    OverMaxMessageBytes,
}

impl Refusal {
    /// Why, for the client's -32600 message.
    fn why(self) -> &'static str {
        match self {
            Refusal::DuplicateKey => "a key the audit reads is given twice",
            Refusal::CaseVariantKey => {
                "a key the audit reads is spelled in another case or folding, which some servers read as that key"
            }
            Refusal::CarriageReturn => "a carriage return splits this line into several messages",
            Refusal::BatchNotUtf8 => "a batch that is not UTF-8",
            Refusal::NotOneValue => {
                "a line that is not exactly one JSON object or batch, under the tool gate or the audit"
            }
            Refusal::ByteOrderMark => {
                "a line opening with a byte order mark, under the tool gate or the audit"
            }
            Refusal::NullId => "a call the tool gate decides with a null id",
            Refusal::Notification => "a call the tool gate decides, sent as a notification",
            Refusal::ParamsNotObject => {
                "a tools/call whose params is not an object, under the tool gate"
            }
            Refusal::NameNotString => {
                "a tools/call whose params.name is not a string, under the tool gate"
            }
            Refusal::NotStrictJson => {
                "a call for approval whose arguments strict JSON cannot carry (NaN, Infinity, a lone surrogate)"
            }
            Refusal::UntrackedId => {
                "a request under the tool gate whose id cannot be tracked (in flight already, or not a short string or number)"
            }
            Refusal::OverMaxMessageBytes => {
                "a line over --max-message-bytes, which the tool gate cannot read"
            }
        }
    }

    /// Its word, as the journal carries it.
    pub fn word(self) -> &'static str {
        match self {
            Refusal::DuplicateKey => "duplicate_key",
            Refusal::CaseVariantKey => "case_variant_key",
            Refusal::CarriageReturn => "carriage_return",
            Refusal::BatchNotUtf8 => "batch_not_utf8",
            Refusal::NotOneValue => "not_one_value",
            Refusal::ByteOrderMark => "byte_order_mark",
            Refusal::NullId => "null_id",
            Refusal::Notification => "notification",
            Refusal::ParamsNotObject => "params_not_object",
            Refusal::NameNotString => "name_not_string",
            Refusal::NotStrictJson => "not_strict_json",
            Refusal::UntrackedId => "untracked_id",
            Refusal::OverMaxMessageBytes => "over_max_message_bytes",
        }
    }

    /// Every reason, for the tests that hold the schema to them.
    pub const ALL: [Refusal; 13] = [
        Refusal::DuplicateKey,
        Refusal::CaseVariantKey,
        Refusal::CarriageReturn,
        Refusal::BatchNotUtf8,
        Refusal::NotOneValue,
        Refusal::ByteOrderMark,
        Refusal::NullId,
        Refusal::Notification,
        Refusal::ParamsNotObject,
        Refusal::NameNotString,
        Refusal::NotStrictJson,
        Refusal::UntrackedId,
        Refusal::OverMaxMessageBytes,
    ];
}

/// What is refused: the requests it held, as far as they could be read.
pub(super) struct Refused<'a> {
    /// The id of each request answered (None: one whose id cannot be
    /// told, answered with null).
    pub(super) ids: &'a [Option<&'a str>],
    /// The method, when the line was read that far.
    pub(super) method: Option<&'a str>,
    /// The line as sent (its newline dropped for its hash), or, for a
    /// line that streamed past unread, its hash.
    pub(super) line: LineOf<'a>,
    /// What else made the line irregular (not UTF-8, not strict JSON).
    pub(super) irregular: Vec<Irregular>,
}

/// The refused line, for its journal entry.
pub(super) enum LineOf<'a> {
    Bytes(&'a [u8]),
    Sha256(String),
}

impl Session {
    /// Refusals are journaled wherever a gate decides or requests are
    /// audited into a journal.
    pub(super) fn guards_lines(&self) -> bool {
        self.gate.is_some() || self.policy.journals_requests()
    }

    /// Answer -32600 for each request of what is refused (each id once;
    /// a notification gets no answer), send nothing of it to the server,
    /// and journal each refused message.
    pub(super) fn refuse(&mut self, reason: Refusal, refused: Refused<'_>) {
        self.facts.refused += 1;
        let line_sha256 = self.guards_lines().then(|| match refused.line {
            LineOf::Bytes(line) => super::form::line_sha256(line),
            LineOf::Sha256(hash) => hash,
        });
        let method = refused
            .method
            .filter(|m| m.len() <= MAX_TRACKED)
            .map(str::to_string);
        let mut answered: Vec<Option<Key>> = Vec::new();
        for id in refused.ids {
            // Journaled as written (up to 1 KiB, strict JSON); answered
            // under it when it is a string or a number, else with null,
            // as JSON-RPC answers an id it cannot take.
            let id = id
                .filter(|id| id.len() <= MAX_TRACKED)
                .and_then(RequestId::new);
            let key = id.as_ref().and_then(|id| request_id::key(id.get()));
            let answer_id = key
                .is_some()
                .then(|| id.as_ref().map(RequestId::get))
                .flatten();
            let key = key.map(|k| Key::new(&*k));
            if answered.contains(&key) {
                continue;
            }
            answered.push(key);
            let line = answer::invalid_request(answer_id, reason.word(), reason.why());
            self.facts.synthesized.invalid_request += 1;
            if let Some(line_sha256) = &line_sha256 {
                let entry = (id, method.clone(), line.len() as u64);
                self.journal_refusal(reason, entry, line_sha256, &refused.irregular);
            }
            self.to_client.extend(line);
        }
        if let Some(line_sha256) = line_sha256.as_ref().filter(|_| refused.ids.is_empty()) {
            // A notification: unanswered, journaled all the same.
            let entry = (None, method, 0);
            self.journal_refusal(reason, entry, line_sha256, &refused.irregular);
        }
    }

    /// The refused message's two entries: its request, marked refused,
    /// and at once its end. `entry`: its id, method and answer's bytes.
    fn journal_refusal(
        &mut self,
        reason: Refusal,
        (request_id, method, bytes): (Option<RequestId>, Option<String>, u64),
        line_sha256: &str,
        irregular: &[Irregular],
    ) {
        let mut irregular = irregular.to_vec();
        irregular.push(Irregular::Refused);
        self.out.audit.push(Audit::Request(McpRequest {
            call_id: self.call_id.clone(),
            request_id: request_id.clone(),
            method: method.clone(),
            name: None,
            params_sha256: None,
            line_sha256: Some(line_sha256.to_string()),
            irregular,
        }));
        self.out.audit.push(Audit::Response(McpResponse {
            call_id: self.call_id.clone(),
            request_id,
            method,
            outcome: RequestOutcome::Refused,
            reason: Some(reason),
            error_code: Some(answer::INVALID_REQUEST),
            result_type: None,
            duration_ms: 0,
            bytes,
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each word is the serialized one, and in the journal's schema.
    #[test]
    fn every_reason_is_its_word_and_in_the_journal_schema() {
        for reason in Refusal::ALL {
            // A new reason must be listed in ALL first.
            match reason {
                Refusal::DuplicateKey
                | Refusal::CaseVariantKey
                | Refusal::CarriageReturn
                | Refusal::BatchNotUtf8
                | Refusal::NotOneValue
                | Refusal::ByteOrderMark
                | Refusal::NullId
                | Refusal::Notification
                | Refusal::ParamsNotObject
                | Refusal::NameNotString
                | Refusal::NotStrictJson
                | Refusal::UntrackedId
                | Refusal::OverMaxMessageBytes => {}
            }
            let word = serde_json::to_value(reason).unwrap();
            assert_eq!(word, reason.word());
            assert!(
                include_str!("../../schema/journal.schema.json")
                    .contains(&format!("\"{}\"", reason.word())),
                "{} is not in schema/journal.schema.json",
                reason.word()
            );
        }
    }
}
