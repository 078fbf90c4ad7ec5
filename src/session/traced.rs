//! What the session tells span export of each request that ended, only
//! while export is on: its method and tool, its kind, when it came and
//! ended, how, the gate's decision, and the W3C trace context the client
//! put in `params._meta`. Never its arguments or its result.

use std::time::Instant;

use serde::Deserialize;

use super::gate::DecidedBy;
use super::kind::Kind;
use super::{End, HashMap, InFlight, Key, RequestOutcome, ResultType, Session};
use crate::record::Decision;

/// One request that ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Traced {
    /// The id's JSON text, as the client sent it.
    pub id: String,
    pub method: String,
    pub tool: Option<String>,
    pub kind: Kind,
    pub started: Instant,
    pub ended: Instant,
    pub outcome: RequestOutcome,
    pub error_code: Option<i64>,
    pub result_type: Option<ResultType>,
    /// `traceparent` and `tracestate` from `params._meta`, as sent.
    pub parent: Option<ClientContext>,
    pub decision: Option<Decided>,
    /// The version the client spoke, as it named it.
    pub protocol_version: Option<String>,
}

/// The trace context a client sent with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientContext {
    pub traceparent: String,
    pub tracestate: Option<String>,
}

/// The gate's decision on a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decided {
    pub decision: Decision,
    pub by: DecidedBy,
    pub waited_ms: u64,
}

/// The session's side of span export.
#[derive(Default)]
pub(crate) struct Tracing {
    pub ended: Vec<Traced>,
    /// Decisions on calls not yet ended, by id.
    decided: HashMap<Key, Decided>,
}

impl Tracing {
    pub fn decided(&mut self, id: &str, decided: Decided, bound: usize) {
        if self.decided.len() < bound {
            self.decided.insert(Key::new(id), decided);
        }
    }

    pub fn take_decision(&mut self, id: &str) -> Option<Decided> {
        if self.decided.is_empty() {
            return None;
        }
        self.decided.remove(id)
    }
}

impl Session {
    /// Span export is on: each request that ends is handed on
    /// (`take_traced`).
    pub fn trace_requests(&mut self) {
        self.out.tracing.get_or_insert_with(Default::default);
    }

    /// The requests that ended since the last call.
    pub fn take_traced(&mut self) -> Vec<Traced> {
        self.out
            .tracing
            .as_mut()
            .map_or_else(Vec::new, |tracing| std::mem::take(&mut tracing.ended))
    }

    /// A tracked request ended (while export is on).
    pub(super) fn trace_end(&mut self, now: Instant, id: &str, entry: &InFlight, end: &End) {
        let Some(tracing) = &mut self.out.tracing else {
            return;
        };
        let decision = tracing.take_decision(id);
        tracing.ended.push(Traced {
            id: id.to_string(),
            method: entry.method.to_string(),
            tool: entry.name.clone(),
            kind: entry.kind,
            started: entry.started,
            ended: now,
            outcome: end.outcome,
            error_code: end.error_code,
            result_type: end.result_type,
            parent: entry.client_context.clone().map(|ctx| *ctx),
            decision,
            protocol_version: self.opening.spoken.protocol_version.clone(),
        });
    }
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<Meta<'a>>,
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(borrow, default)]
    traceparent: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    tracestate: Option<std::borrow::Cow<'a, str>>,
}

/// `params._meta.traceparent` (and `tracestate`), when a client sent one
/// (params without the word are not parsed). At most 512 bytes each.
pub(crate) fn client_context(params: Option<&str>) -> Option<ClientContext> {
    let params = params.filter(|p| p.contains("traceparent"))?;
    let meta = serde_json::from_str::<Params<'_>>(params).ok()?.meta?;
    let short = |s: &std::borrow::Cow<'_, str>| s.len() <= 512;
    Some(ClientContext {
        traceparent: meta.traceparent.filter(short)?.into_owned(),
        tracestate: meta.tracestate.filter(short).map(|s| s.into_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_is_read_from_meta_only() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let params =
            format!(r#"{{"name":"x","_meta":{{"traceparent":"{tp}","tracestate":"a=b"}}}}"#);
        let ctx = client_context(Some(&params)).unwrap();
        assert_eq!(
            (ctx.traceparent.as_str(), ctx.tracestate.as_deref()),
            (tp, Some("a=b"))
        );
        // In the arguments, not in _meta: not the client's context.
        let args = format!(r#"{{"name":"x","arguments":{{"traceparent":"{tp}"}}}}"#);
        assert_eq!(client_context(Some(&args)), None);
        assert_eq!(client_context(Some(r#"{"_meta":{"traceparent":7}}"#)), None);
        assert_eq!(client_context(None), None);
    }
}
