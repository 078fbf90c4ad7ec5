//! Reading one line back: the hash over its exact bytes first, then a
//! strict parse (unknown fields refused, each kind's fields required).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::VERSION;
use super::entry::HASH_KEY;
use super::key::Key;

/// The fields of any entry, borrowed from the line where possible. Unknown
/// fields are refused; each kind's required fields are checked in `shape`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
// Fields only listed so that deny_unknown_fields accepts them are not read.
#[allow(dead_code)]
pub(crate) struct Parsed<'a> {
    pub(crate) v: u64,
    pub(crate) seq: u64,
    #[serde(borrow)]
    pub(crate) prev: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) kind: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) ts: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) h: Cow<'a, str>,
    // genesis
    #[serde(default, borrow)]
    pub(crate) journal_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) key_id: Option<Cow<'a, str>>,
    // intent and terminal
    #[serde(default, borrow)]
    pub(crate) call_id: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(crate) session_id: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) argv: Option<Vec<serde::de::IgnoredAny>>,
    #[serde(default)]
    pub(crate) cwd: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) uid: Option<u32>,
    #[serde(default)]
    pub(crate) host: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) pid: Option<u32>,
    #[serde(default)]
    pub(crate) limits: Option<serde::de::IgnoredAny>,
    // terminal
    #[serde(default, borrow)]
    pub(crate) state: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(crate) exit: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) exit_code: Option<i32>,
    #[serde(default)]
    pub(crate) cancel_reason: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) cancel_signal: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) signals: Option<Vec<serde::de::IgnoredAny>>,
    #[serde(default)]
    pub(crate) stream_end: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) descendants_signalled: Option<u32>,
    #[serde(default)]
    pub(crate) duration_ms: Option<u64>,
    #[serde(default)]
    pub(crate) streams: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) excerpt: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) usage: Option<serde::de::IgnoredAny>,
    // decision
    #[serde(default)]
    pub(crate) decision: Option<serde::de::IgnoredAny>,
    /// Present (null included, which an mcp_request may hold) or not.
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) method: Option<&'a RawValue>,
    #[serde(default)]
    pub(crate) requested_at: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) decided_at: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) waited_ms: Option<u64>,
    #[serde(default)]
    pub(crate) approver_exit: Option<serde::de::IgnoredAny>,
    // mcp_request and mcp_response (`method` and `duration_ms` shared)
    /// Present (null included) or not.
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) request_id: Option<&'a RawValue>,
    #[serde(default)]
    pub(crate) name: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) params_sha256: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) line_sha256: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) irregular: Option<Vec<crate::session::Irregular>>,
    #[serde(default)]
    pub(crate) outcome: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) error_code: Option<i64>,
    #[serde(default)]
    pub(crate) result_type: Option<crate::session::ResultType>,
    #[serde(default)]
    pub(crate) bytes: Option<u64>,
    // mcp_task (`method`, `error_code`, `duration_ms` shared)
    #[serde(default)]
    pub(crate) task_id: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) status: Option<crate::session::TaskStatus>,
    // recover
    #[serde(default)]
    pub(crate) torn_offset: Option<u64>,
    #[serde(default)]
    pub(crate) torn_length: Option<u64>,
    #[serde(default, borrow)]
    pub(crate) torn_sha256: Option<Cow<'a, str>>,
}

/// A field's raw text, `null` included (an absent field is None).
fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(Some)
}

impl<'a> Parsed<'a> {
    /// `method` as a string, when it is one.
    pub(crate) fn method_str(&self) -> Option<String> {
        serde_json::from_str(self.method?.get()).ok()
    }

    /// The kind's required fields are present and no other kind's are.
    fn shape(&self) -> Result<(), String> {
        // Fields that belong to one kind only: none of another kind's may
        // appear. call_id is shared by intent, decision, terminal and the
        // mcp_ kinds; method by decision and the mcp_ kinds.
        let mcp = self.kind.starts_with("mcp_");
        let markers = [
            ("genesis", self.journal_id.is_some()),
            (
                "intent",
                self.argv.is_some() || self.uid.is_some() || self.limits.is_some(),
            ),
            (
                "terminal",
                self.state.is_some() || self.signals.is_some() || self.streams.is_some(),
            ),
            (
                "recover",
                self.torn_offset.is_some() || self.torn_sha256.is_some(),
            ),
            (
                "decision",
                (self.method.is_some() && !mcp)
                    || self.waited_ms.is_some()
                    || self.decided_at.is_some(),
            ),
            (
                "mcp_request",
                self.params_sha256.is_some()
                    || self.name.is_some()
                    || self.line_sha256.is_some()
                    || self.irregular.is_some(),
            ),
            (
                "mcp_response",
                self.outcome.is_some() || self.bytes.is_some() || self.result_type.is_some(),
            ),
            ("mcp_task", self.task_id.is_some() || self.status.is_some()),
            ("mcp_", self.request_id.is_some()),
        ];
        let foreign = markers
            .iter()
            .any(|(kind, present)| *present && *kind != self.kind && !(*kind == "mcp_" && mcp));
        let call = self.call_id.is_some();
        let complete = match self.kind.as_ref() {
            "genesis" => self.journal_id.is_some() && !call,
            "intent" => {
                call && self.argv.is_some()
                    && self.uid.is_some()
                    && self.pid.is_some()
                    && self.limits.is_some()
            }
            "decision" => {
                call && self.method_str().is_some()
                    && self.waited_ms.is_some()
                    && self.decided_at.is_some()
            }
            "terminal" => {
                call && self.state.is_some() && self.signals.is_some() && self.streams.is_some()
            }
            "mcp_request" => call && self.request_id.is_some() && self.method.is_some(),
            "mcp_response" => {
                call && self.request_id.is_some_and(|id| id.get() != "null")
                    && self.method_str().is_some()
                    && self.outcome.is_some()
                    && self.duration_ms.is_some()
                    && self.bytes.is_some()
            }
            "mcp_task" => {
                call && self.request_id.is_some_and(|id| id.get() != "null")
                    && self.method_str().is_some()
                    && self.task_id.is_some()
                    && self.status.is_some()
                    && self.duration_ms.is_some()
            }
            "recover" => {
                !call
                    && self.torn_offset.is_some()
                    && self.torn_length.is_some()
                    && self.torn_sha256.is_some()
            }
            other => return Err(format!("unknown kind '{other}'")),
        };
        let ok = complete && !foreign;
        if !ok {
            return Err(format!("fields do not fit the '{}' shape", self.kind));
        }
        if self.v != VERSION {
            return Err(format!("unknown version {}", self.v));
        }
        if self.prev.len() != 64 || !self.prev.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("prev is not 64 hex digits".into());
        }
        if humantime::parse_rfc3339_weak(&self.ts).is_err() {
            return Err("ts is not an RFC 3339 time".into());
        }
        Ok(())
    }
}

/// Why one line is not a good entry.
pub(crate) enum LineError {
    Malformed(String),
    HashMismatch,
}

/// Check the hash over the exact bytes, then parse strictly.
pub(crate) fn parse_line<'a>(key: &Key, content: &'a [u8]) -> Result<Parsed<'a>, LineError> {
    const SUFFIX_LEN: usize = 6 + 64 + 2; // ,"h":" + hex + "}
    if content.len() < SUFFIX_LEN + 2 || !content.ends_with(b"\"}") {
        return Err(LineError::Malformed("not an entry line".into()));
    }
    let split = content.len() - SUFFIX_LEN;
    let (prefix, suffix) = content.split_at(split);
    let given = &suffix[HASH_KEY.len()..HASH_KEY.len() + 64];
    if !suffix.starts_with(HASH_KEY)
        || !given.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(LineError::Malformed(
            "the line does not end with its hash".into(),
        ));
    }
    if key.digest(prefix).as_bytes() != given {
        return Err(LineError::HashMismatch);
    }
    let parsed: Parsed = serde_json::from_slice(content)
        .map_err(|e| LineError::Malformed(format!("not strict JSON of a known shape: {e}")))?;
    parsed.shape().map_err(LineError::Malformed)?;
    Ok(parsed)
}
