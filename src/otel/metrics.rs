//! The one metric, `mcp.client.operation.duration` (the MCP semantic
//! conventions' histogram, in seconds), aggregated from the request spans
//! the exporter already has: no second path from the loop. Pure. Bounded:
//! at most `MAX_SERIES` attribute sets, the rest in one overflow series
//! (`otel.metric.overflow`), as the OTel SDK's cardinality limit does.
//! Cumulative, from the first span seen.

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1 as metrics;
use prost::Message;

use super::proto::{Masker, key_value, resource, scope};
use super::span::{Kind, Span, Value};

/// The conventions' advised bucket boundaries, in seconds.
const BOUNDS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Most attribute sets kept apart.
pub(super) const MAX_SERIES: usize = 256;

/// The attributes a point is kept by.
const KEYS: [&str; 5] = [
    "mcp.method.name",
    "gen_ai.tool.name",
    "error.type",
    "mcp.protocol.version",
    "network.transport",
];

#[derive(Debug, Clone, PartialEq)]
struct Series {
    /// One per KEYS entry; None: the span did not carry it. All None:
    /// the overflow series.
    attributes: [Option<String>; 5],
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
    buckets: [u64; BOUNDS.len() + 1],
}

/// The histogram so far.
#[derive(Debug, Default)]
pub(super) struct Durations {
    series: Vec<Series>,
    start_unix_nanos: Option<u64>,
    /// Points added since the last export.
    fresh: bool,
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::Str(text) => Some(text.clone()),
        Value::Word(word) => Some((*word).to_string()),
        Value::Int(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
    }
}

impl Durations {
    /// A finished span: a point, if it is a request's.
    pub(super) fn add(&mut self, span: &Span) {
        if span.kind != Kind::Client {
            return;
        }
        let attributes = KEYS.map(|key| {
            span.attributes
                .iter()
                .find(|(k, _)| *k == key)
                .and_then(|(_, v)| text(v))
        });
        let seconds = span.end_unix_nanos.saturating_sub(span.start_unix_nanos) as f64 / 1e9;
        self.start_unix_nanos.get_or_insert(span.start_unix_nanos);
        self.fresh = true;
        let at = match self.series.iter().position(|s| s.attributes == attributes) {
            Some(at) => at,
            None if self.series.len() < MAX_SERIES => {
                self.series.push(Series::new(attributes));
                self.series.len() - 1
            }
            None => {
                let overflow = [None, None, None, None, None];
                match self.series.iter().position(|s| s.attributes == overflow) {
                    Some(at) => at,
                    None => {
                        self.series.push(Series::new(overflow));
                        self.series.len() - 1
                    }
                }
            }
        };
        self.series[at].record(seconds);
    }

    /// Whether there is something new to export.
    pub(super) fn fresh(&self) -> bool {
        self.fresh
    }

    /// The export's body, every series cumulative to `now`.
    pub(super) fn encode(
        &mut self,
        resource_attributes: &[(String, String)],
        masker: &Masker,
        now_unix_nanos: u64,
    ) -> Vec<u8> {
        self.fresh = false;
        let start = self.start_unix_nanos.unwrap_or(now_unix_nanos);
        let points = self
            .series
            .iter()
            .map(|series| series.point(masker, start, now_unix_nanos))
            .collect();
        let request = ExportMetricsServiceRequest {
            resource_metrics: vec![metrics::ResourceMetrics {
                resource: Some(resource(resource_attributes, masker)),
                scope_metrics: vec![metrics::ScopeMetrics {
                    scope: Some(scope()),
                    metrics: vec![metrics::Metric {
                        name: "mcp.client.operation.duration".into(),
                        description:
                            "The duration of an MCP request, as mcp-bound carried it to the server"
                                .into(),
                        unit: "s".into(),
                        data: Some(metrics::metric::Data::Histogram(metrics::Histogram {
                            data_points: points,
                            aggregation_temporality: metrics::AggregationTemporality::Cumulative
                                as i32,
                        })),
                        ..metrics::Metric::default()
                    }],
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
        };
        request.encode_to_vec()
    }
}

impl Series {
    fn new(attributes: [Option<String>; 5]) -> Series {
        Series {
            attributes,
            count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: 0.0,
            buckets: [0; BOUNDS.len() + 1],
        }
    }

    fn record(&mut self, seconds: f64) {
        self.count += 1;
        self.sum += seconds;
        self.min = self.min.min(seconds);
        self.max = self.max.max(seconds);
        // A bucket holds values up to and including its upper bound.
        let bucket = BOUNDS
            .iter()
            .position(|b| seconds <= *b)
            .unwrap_or(BOUNDS.len());
        self.buckets[bucket] += 1;
    }

    fn point(&self, masker: &Masker, start: u64, now: u64) -> metrics::HistogramDataPoint {
        let overflow = self.attributes.iter().all(Option::is_none);
        let mut attributes: Vec<KeyValue> = KEYS
            .iter()
            .zip(&self.attributes)
            .filter_map(|(key, value)| {
                let value = value.as_deref()?;
                Some(key_value(
                    key,
                    Some(any_value::Value::StringValue(masker.mask(value))),
                ))
            })
            .collect();
        if overflow {
            attributes.push(key_value(
                "otel.metric.overflow",
                Some(any_value::Value::BoolValue(true)),
            ));
        }
        metrics::HistogramDataPoint {
            attributes,
            start_time_unix_nano: start,
            time_unix_nano: now,
            count: self.count,
            sum: Some(self.sum),
            bucket_counts: self.buckets.to_vec(),
            explicit_bounds: BOUNDS.to_vec(),
            min: (self.count > 0).then_some(self.min),
            max: (self.count > 0).then_some(self.max),
            ..metrics::HistogramDataPoint::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace_context::SpanContext;

    fn span(method: &str, ms: u64, error: Option<&'static str>) -> Span {
        let mut attributes = vec![("mcp.method.name", Value::Str(method.into()))];
        if let Some(error) = error {
            attributes.push(("error.type", Value::Word(error)));
        }
        Span {
            context: SpanContext {
                trace_id: [1; 16],
                span_id: [1; 8],
                flags: 1,
                tracestate: None,
                remote: false,
            },
            parent: None,
            name: method.into(),
            kind: Kind::Client,
            start_unix_nanos: 1_000_000_000,
            end_unix_nanos: 1_000_000_000 + ms * 1_000_000,
            attributes,
            events: Vec::new(),
            links: Vec::new(),
            status: super::super::span::Status::Unset,
        }
    }

    #[test]
    fn points_by_attributes_buckets_inclusive_and_bounded_series() {
        let mut durations = Durations::default();
        durations.add(&span("tools/call", 10, None));
        durations.add(&span("tools/call", 300, None));
        durations.add(&span("tools/call", 300, Some("request_timeout")));
        let mut call = span("x", 5, None);
        call.kind = Kind::Internal;
        durations.add(&call);
        assert_eq!(durations.series.len(), 2);
        let ok = &durations.series[0];
        assert_eq!(
            (ok.count, ok.buckets[0], ok.buckets[5]),
            (2, 1, 1),
            "{ok:?}"
        );
        assert!((ok.sum - 0.31).abs() < 1e-9);
        for n in 0..MAX_SERIES + 10 {
            durations.add(&span(&format!("m{n}"), 1, None));
        }
        assert_eq!(durations.series.len(), MAX_SERIES + 1);
        let overflow = durations.series.last().unwrap();
        assert!(overflow.attributes.iter().all(Option::is_none));
        assert_eq!(overflow.count, 12);
    }
}
