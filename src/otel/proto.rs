//! Spans as OTLP: an `ExportTraceServiceRequest` in the OpenTelemetry
//! project's own generated types (`opentelemetry-proto`), protobuf-encoded
//! by prost. Every string an attribute, a name or a status carries is
//! masked here, as every other line mcp-bound writes.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1 as trace;
use prost::Message;

use super::span::{Kind, Span, Status, Value};
use crate::redact::Redactor;

/// Masking, with the masked form of short texts kept: spans repeat the
/// same methods, tools and versions, and a text masks the same way each
/// time. Bounded: emptied when full.
pub(super) struct Masker {
    redactor: Redactor,
    seen:
        std::cell::RefCell<std::collections::HashMap<String, String, foldhash::fast::RandomState>>,
}

/// Texts longer than this are masked each time, never kept.
const KEPT_TEXT: usize = 128;
const KEPT_TEXTS: usize = 1024;

impl Masker {
    pub(super) fn new(redactor: Redactor) -> Masker {
        Masker {
            redactor,
            seen: Default::default(),
        }
    }

    pub(super) fn mask(&self, text: &str) -> String {
        if text.len() > KEPT_TEXT {
            return self.redactor.redact(text).into_owned();
        }
        let mut seen = self.seen.borrow_mut();
        if let Some(masked) = seen.get(text) {
            return masked.clone();
        }
        let masked = self.redactor.redact(text).into_owned();
        if seen.len() >= KEPT_TEXTS {
            seen.clear();
        }
        seen.insert(text.to_string(), masked.clone());
        masked
    }
}

/// One export's body.
pub(super) fn encode(
    spans: &[Span],
    resource_attributes: &[(String, String)],
    masker: &Masker,
) -> Vec<u8> {
    let mask = |text: &str| masker.mask(text);
    let request = ExportTraceServiceRequest {
        resource_spans: vec![trace::ResourceSpans {
            resource: Some(resource(resource_attributes, masker)),
            scope_spans: vec![trace::ScopeSpans {
                scope: Some(scope()),
                spans: spans.iter().map(|span| one(span, &mask)).collect(),
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    };
    request.encode_to_vec()
}

/// The resource every export names: the configured attributes (masked),
/// and mcp-bound's own.
pub(super) fn resource(attributes: &[(String, String)], masker: &Masker) -> Resource {
    Resource {
        attributes: attributes
            .iter()
            .map(|(key, value)| {
                key_value(key, Some(any_value::Value::StringValue(masker.mask(value))))
            })
            .chain([
                key_value("service.version", Some(string(env!("CARGO_PKG_VERSION")))),
                key_value("telemetry.sdk.name", Some(string("mcp-bound"))),
                key_value("telemetry.sdk.language", Some(string("rust"))),
                key_value(
                    "process.pid",
                    Some(any_value::Value::IntValue(i64::from(std::process::id()))),
                ),
            ])
            .collect(),
        ..Resource::default()
    }
}

/// mcp-bound as the instrumentation scope of every export.
pub(super) fn scope() -> InstrumentationScope {
    InstrumentationScope {
        name: "mcp-bound".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        ..InstrumentationScope::default()
    }
}

fn string(text: &str) -> any_value::Value {
    any_value::Value::StringValue(text.to_string())
}

pub(super) fn key_value(key: &str, value: Option<any_value::Value>) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value }),
        ..KeyValue::default()
    }
}

fn attributes<K: AsRef<str>>(list: &[(K, Value)], mask: &dyn Fn(&str) -> String) -> Vec<KeyValue> {
    list.iter()
        .map(|(key, value)| {
            key_value(
                key.as_ref(),
                Some(match value {
                    Value::Str(text) => any_value::Value::StringValue(mask(text)),
                    Value::Word(word) => any_value::Value::StringValue((*word).to_string()),
                    Value::Int(n) => any_value::Value::IntValue(*n),
                    Value::Bool(b) => any_value::Value::BoolValue(*b),
                }),
            )
        })
        .collect()
}

/// W3C flags as OTLP carries them (bits 0-7), with "is the parent remote
/// known" (bit 8) and "is it remote" (bit 9).
fn flags(w3c: u8, remote: bool) -> u32 {
    u32::from(w3c) | 0x100 | if remote { 0x200 } else { 0 }
}

fn one(span: &Span, mask: &dyn Fn(&str) -> String) -> trace::Span {
    trace::Span {
        trace_id: span.context.trace_id.to_vec(),
        span_id: span.context.span_id.to_vec(),
        trace_state: span.context.tracestate.clone().unwrap_or_default(),
        parent_span_id: span
            .parent
            .as_ref()
            .map_or_else(Vec::new, |p| p.span_id.to_vec()),
        flags: flags(
            span.context.flags,
            span.parent.as_ref().is_some_and(|p| p.remote),
        ),
        name: mask(&span.name),
        kind: match span.kind {
            Kind::Internal => trace::span::SpanKind::Internal as i32,
            Kind::Client => trace::span::SpanKind::Client as i32,
        },
        start_time_unix_nano: span.start_unix_nanos,
        end_time_unix_nano: span.end_unix_nanos.max(span.start_unix_nanos),
        attributes: attributes(&span.attributes, mask),
        events: span
            .events
            .iter()
            .map(|event| trace::span::Event {
                time_unix_nano: event.at_unix_nanos,
                name: mask(&event.name),
                attributes: attributes(&event.attributes, mask),
                dropped_attributes_count: 0,
            })
            .collect(),
        links: span
            .links
            .iter()
            .map(|link| trace::span::Link {
                trace_id: link.trace_id.to_vec(),
                span_id: link.span_id.to_vec(),
                trace_state: link.tracestate.clone().unwrap_or_default(),
                flags: flags(link.flags, link.remote),
                ..trace::span::Link::default()
            })
            .collect(),
        status: match &span.status {
            Status::Unset => None,
            Status::Error(message) => Some(trace::Status {
                message: mask(message),
                code: trace::status::StatusCode::Error as i32,
            }),
        },
        ..trace::Span::default()
    }
}
