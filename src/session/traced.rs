//! What the session tells span export of each request that ended, only
//! while export is on: its method and tool, its kind, when it came and
//! ended, how, the gate's decision, and the W3C trace context the client
//! put in `params._meta`. Never its arguments or its result.
//!
//! Under --otel-propagate, a request's line reaches the server with
//! `params._meta.traceparent` naming mcp-bound's span for it: the one
//! value replaced (or the key, or `_meta`, inserted), every other byte as
//! the client sent it. Where that cannot be done for sure (a batch, a
//! line held for approval or read leniently, `_meta` or `traceparent`
//! given twice or not an object or string, no `params` object), the line
//! goes as it came and its span says nothing was propagated.

use std::time::Instant;

use serde::Deserialize;

use super::gate::DecidedBy;
use super::kind::Kind;
use std::borrow::Cow;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::form::Form;
use super::{End, HashMap, InFlight, Key, RequestOutcome, ResultType, Session};
use crate::record::Decision;
use crate::trace_context::{Ids, SpanContext};

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
    /// --otel-propagate: the span id the server was told.
    pub span_id: Option<[u8; 8]>,
    /// Cut off by the host's end of the session: it may have acted, and
    /// did not fail.
    pub interrupted: bool,
}

/// --otel-propagate, as the session holds it: the call's span (the
/// parent of a request the client sent no trace context with), and the
/// ids for the request spans it names to the server.
pub(crate) struct Propagation {
    pub call: SpanContext,
    pub ids: Ids,
}

/// What a tracked request carries for its span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestTrace {
    pub client: Option<ClientContext>,
    pub span_id: Option<[u8; 8]>,
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
    /// Calls under the gate not yet ended, by id: their decision, and the
    /// client's trace context (a call denied before it was tracked has no
    /// table entry to keep it).
    gated: HashMap<Key, Gated>,
    /// --otel-propagate.
    propagation: Option<Propagation>,
}

#[derive(Default)]
pub(crate) struct Gated {
    pub decision: Option<Decided>,
    pub client: Option<ClientContext>,
}

impl Tracing {
    /// A call the gate decides came, with this context.
    pub(super) fn gated(&mut self, id: &str, params: Option<&str>, bound: usize) {
        if self.gated.len() < bound {
            let client = client_context(params);
            self.gated.insert(
                Key::new(id),
                Gated {
                    decision: None,
                    client,
                },
            );
        }
    }

    pub(super) fn decided(&mut self, id: &str, decided: Decided) {
        if let Some(gated) = self.gated.get_mut(id) {
            gated.decision = Some(decided);
        }
    }

    /// What the gate said of a call that ends.
    pub(super) fn take_gated(&mut self, id: &str) -> Gated {
        if self.gated.is_empty() {
            return Gated::default();
        }
        self.gated.remove(id).unwrap_or_default()
    }
}

impl Session {
    /// Span export is on: each request that ends is handed on
    /// (`take_traced`).
    pub(crate) fn trace_requests(&mut self, propagation: Option<Propagation>) {
        self.out.tracing = Some(Tracing {
            propagation,
            ..Tracing::default()
        });
    }

    /// A request as it is admitted: the client's trace context, and under
    /// --otel-propagate the line rewritten to name our span (into
    /// `form.rewritten`). None while export is off.
    pub(super) fn request_trace(
        &mut self,
        params: Option<&str>,
        form: &mut Form<'_>,
    ) -> Option<Box<RequestTrace>> {
        let tracing = self.out.tracing.as_mut()?;
        let client = client_context(params);
        let mut span_id = None;
        if let (Some(propagation), Some(params)) = (&mut tracing.propagation, params)
            && form.single
            && form.regular()
        {
            let parent = client
                .as_ref()
                .and_then(|c| SpanContext::from_traceparent(&c.traceparent, None))
                .unwrap_or_else(|| propagation.call.clone());
            let ours = SpanContext {
                span_id: propagation.ids.span_id(),
                tracestate: None,
                remote: false,
                ..parent
            };
            if let Some(line) = with_traceparent(form.raw, params, &ours.traceparent()) {
                form.rewritten = Some(line);
                span_id = Some(ours.span_id);
            }
        }
        Some(Box::new(RequestTrace { client, span_id }))
    }

    /// The requests that ended since the last call.
    pub(crate) fn take_traced(&mut self) -> Vec<Traced> {
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
        let decision = tracing.take_gated(id).decision;
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
            parent: entry.trace.as_ref().and_then(|t| t.client.clone()),
            decision,
            protocol_version: self.opening.spoken.protocol_version.clone(),
            span_id: entry.trace.as_ref().and_then(|t| t.span_id),
            interrupted: end.interrupted,
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

/// An object's entries in order, keys decoded, values as their raw text
/// (slices of the input).
struct Entries<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Entries<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Each;
        impl<'de> Visitor<'de> for Each {
            type Value = Entries<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Entries<'de>, M::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<Cow<'de, str>, &'de RawValue>()? {
                    entries.push(entry);
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(Each)
    }
}

/// The line with `params._meta.traceparent` set to `traceparent`: its
/// value replaced, or the key (or `_meta`) inserted first in its object.
/// None when that cannot be done for sure. `params` is a slice of `line`.
pub(crate) fn with_traceparent(line: &[u8], params: &str, traceparent: &str) -> Option<Vec<u8>> {
    let offset = |part: &str| {
        let at = (part.as_ptr() as usize).checked_sub(line.as_ptr() as usize)?;
        (at + part.len() <= line.len()).then_some(at)
    };
    let splice = |at: usize, cut: usize, text: &str| {
        let mut out = Vec::with_capacity(line.len() + text.len());
        out.extend_from_slice(&line[..at]);
        out.extend_from_slice(text.as_bytes());
        out.extend_from_slice(&line[at + cut..]);
        out
    };
    let value = format!("\"{traceparent}\"");
    let start = offset(params)?;
    let entries = serde_json::from_str::<Entries<'_>>(params).ok()?.0;
    let mut metas = entries.iter().filter(|(key, _)| key == "_meta");
    let (meta, twice) = (metas.next(), metas.next().is_some());
    match meta {
        _ if twice => None,
        None => {
            let comma = if entries.is_empty() { "" } else { "," };
            let text = format!("\"_meta\":{{\"traceparent\":{value}}}{comma}");
            Some(splice(start + 1, 0, &text))
        }
        Some((_, meta)) => {
            let meta = meta.get();
            let inner = serde_json::from_str::<Entries<'_>>(meta).ok()?.0;
            let meta_at = offset(meta)?;
            let mut found = inner.iter().filter(|(key, _)| key == "traceparent");
            match (found.next(), found.next()) {
                (None, _) => {
                    let comma = if inner.is_empty() { "" } else { "," };
                    Some(splice(
                        meta_at + 1,
                        0,
                        &format!("\"traceparent\":{value}{comma}"),
                    ))
                }
                (Some((_, old)), None) if old.get().starts_with('"') => {
                    Some(splice(offset(old.get())?, old.get().len(), &value))
                }
                _ => None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn rewritten(line: &str) -> Option<String> {
        let start = line.find("\"params\":")? + "\"params\":".len();
        let end = line.rfind('}')?;
        let params = &line[start..end];
        with_traceparent(line.as_bytes(), params, TP).map(|l| String::from_utf8(l).unwrap())
    }

    #[test]
    fn propagation_changes_only_the_traceparent() {
        let cases = [
            (
                r#"{"id":1,"method":"m","params":{"name":"x"}}"#,
                Some(format!(
                    r#"{{"id":1,"method":"m","params":{{"_meta":{{"traceparent":"{TP}"}},"name":"x"}}}}"#
                )),
            ),
            (
                r#"{"id":1,"method":"m","params":{}}"#,
                Some(format!(
                    r#"{{"id":1,"method":"m","params":{{"_meta":{{"traceparent":"{TP}"}}}}}}"#
                )),
            ),
            (
                r#"{"id":1,"method":"m","params":{ "_meta" : { "k" : 1 } , "z":2}}"#,
                Some(format!(
                    r#"{{"id":1,"method":"m","params":{{ "_meta" : {{"traceparent":"{TP}", "k" : 1 }} , "z":2}}}}"#
                )),
            ),
            (
                r#"{"id":1,"method":"m","params":{"_meta":{},"a":[1]}}"#,
                Some(format!(
                    r#"{{"id":1,"method":"m","params":{{"_meta":{{"traceparent":"{TP}"}},"a":[1]}}}}"#
                )),
            ),
            (
                r#"{"id":1,"method":"m","params":{"_meta":{"traceparent":"00-x","tracestate":"a=1"}}}"#,
                Some(format!(
                    r#"{{"id":1,"method":"m","params":{{"_meta":{{"traceparent":"{TP}","tracestate":"a=1"}}}}}}"#
                )),
            ),
            // Not sure what a server would read: left as it came.
            (
                r#"{"id":1,"method":"m","params":{"_meta":{"traceparent":"a","traceparent":"b"}}}"#,
                None,
            ),
            (
                r#"{"id":1,"method":"m","params":{"_meta":{},"_meta":{}}}"#,
                None,
            ),
            (r#"{"id":1,"method":"m","params":{"_meta":null}}"#, None),
            (
                r#"{"id":1,"method":"m","params":{"_meta":{"traceparent":7}}}"#,
                None,
            ),
            (r#"{"id":1,"method":"m","params":[1]}"#, None),
        ];
        for (line, want) in cases {
            let got = rewritten(line);
            assert_eq!(got, want, "{line}");
            if let Some(got) = got {
                let value: serde_json::Value = serde_json::from_str(&got).unwrap();
                assert_eq!(value["params"]["_meta"]["traceparent"], TP);
            }
        }
        // A slice that is not the line's is refused.
        let other = String::from("{}");
        assert_eq!(with_traceparent(b"{\"params\":{}}", &other, TP), None);
    }

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
