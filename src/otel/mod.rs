//! OpenTelemetry spans, for fleets: one span per call and, under the
//! session layer, one per client request (the MCP semantic conventions'
//! client span), sent as OTLP/HTTP protobuf to a collector.
//!
//! - `config.rs`: `--otel` and the OTel SDK's environment, resolved once;
//! - `span.rs`: spans as plain values, W3C trace context, ids, the clock;
//! - `build.rs`: the call's span from its record, a request's from the
//!   session's facts;
//! - `proto.rs`: OTLP encoding (the `opentelemetry-proto` types), masked;
//! - `metrics.rs`: `mcp.client.operation.duration`, from the request spans;
//! - `export.rs`: the one exporter thread and its bounded queue.
//!
//! Off (nothing set), none of this runs: no thread, no socket, no system
//! call. On, the loop only hands finished spans to a bounded queue; the
//! record and the journal are written before the last flush, which waits
//! at most the flush bound.

mod build;
mod config;
mod export;
mod metrics;
mod proto;
mod span;

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::session::Propagation;
use crate::trace_context::Ids;
pub(crate) use config::{Flags, OtelConfig, Resolved, resolve};
use span::{Clock, SpanContext};

use crate::record::{OtelFacts, Record};
use crate::redact::Redactor;
use crate::session::Traced;

/// Span export for one call, from the dispatch (or the end, for a call
/// that ended before) to the exit.
pub(crate) struct Tracer {
    exporter: export::Exporter,
    ids: Cell<Ids>,
    clock: Clock,
    /// The call's own span: the parent (or the link) of every request's.
    call: SpanContext,
    /// The caller's span (TRACEPARENT), when one was given.
    call_parent: Option<SpanContext>,
    call_id: String,
    redactor: Redactor,
    /// --otel-propagate.
    propagate: bool,
    endpoint: String,
}

impl Tracer {
    /// Start the exporter (after the watchdog's fork: that child must not
    /// inherit a second thread). `origin`/`started_at` are the call's.
    pub(crate) fn start(
        config: &OtelConfig,
        redactor: &Redactor,
        call_id: &str,
        origin: Instant,
        started_at: std::time::SystemTime,
    ) -> std::io::Result<Tracer> {
        let exporter = export::Exporter::start(config, redactor.clone())?;
        let mut ids = Ids::seeded();
        // Under a caller's trace (TRACEPARENT), the call's span is its child.
        let parent = config
            .parent
            .as_ref()
            .and_then(|(tp, state)| SpanContext::from_traceparent(tp, state.as_deref()));
        let call = SpanContext {
            trace_id: parent
                .as_ref()
                .map_or_else(|| ids.trace_id(), |p| p.trace_id),
            span_id: ids.span_id(),
            flags: parent.as_ref().map_or(1, |p| p.flags),
            tracestate: parent.as_ref().and_then(|p| p.tracestate.clone()),
            remote: false,
        };
        Ok(Tracer {
            exporter,
            ids: Cell::new(ids),
            clock: Clock::at(origin, started_at),
            call,
            call_parent: parent,
            call_id: call_id.to_string(),
            redactor: redactor.clone(),
            propagate: config.propagate,
            endpoint: config.endpoint.url(),
        })
    }

    fn span_id(&self) -> [u8; 8] {
        let mut ids = self.ids.replace(Ids::empty());
        let id = ids.span_id();
        self.ids.set(ids);
        id
    }

    /// --otel-propagate: what the session needs to name each request's
    /// span to the server.
    pub(crate) fn propagation(&self) -> Option<Propagation> {
        self.propagate.then(|| Propagation {
            call: self.call.clone(),
            ids: Ids::seeded(),
        })
    }

    /// A request that ended.
    pub(crate) fn request(&self, traced: &Traced) {
        let span_id = traced.span_id.unwrap_or_else(|| self.span_id());
        let span = build::request_span(&self.call, span_id, traced, &self.call_id, &self.clock);
        self.exporter.submit(span);
    }

    /// The call's span, from its final record; then the facts the record
    /// carries, as known now.
    pub(crate) fn call_ended(&self, record: &Record, origin: Instant, now: Instant) -> OtelFacts {
        self.exporter.submit(build::call_span(
            (&self.call, self.call_parent.as_ref()),
            record,
            &self.clock,
            (origin, now),
        ));
        self.facts()
    }

    pub(crate) fn facts(&self) -> OtelFacts {
        let counters = &self.exporter.counters;
        let error = counters
            .error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let queued = counters.queued.load(Ordering::Relaxed);
        let exported = counters.exported.load(Ordering::Relaxed);
        let failed = counters.failed.load(Ordering::Relaxed);
        OtelFacts {
            endpoint: Some(self.endpoint.clone()),
            propagate: self.propagate,
            spans_queued: queued,
            spans_exported: exported,
            spans_pending: queued.saturating_sub(exported + failed),
            spans_dropped: counters.dropped.load(Ordering::Relaxed),
            error: error.map(|e| self.redactor.redact(&e).into_owned()),
        }
    }

    /// The exit: the last batches, within the flush bound; then what
    /// export did in the end.
    pub(crate) fn finish(mut self, signals: &crate::sys::SignalPipe) -> OtelFacts {
        self.exporter.finish(signals);
        self.facts()
    }
}

/// The record's `otel` before export starts (the in-flight record).
pub(crate) fn before_start(config: &OtelConfig) -> OtelFacts {
    OtelFacts {
        endpoint: Some(config.endpoint.url()),
        propagate: config.propagate,
        spans_queued: 0,
        spans_exported: 0,
        spans_pending: 0,
        spans_dropped: 0,
        error: None,
    }
}

/// The record's `otel` for export that was asked for but not usable.
pub(crate) fn unusable(why: &str) -> OtelFacts {
    OtelFacts {
        endpoint: None,
        propagate: false,
        spans_queued: 0,
        spans_exported: 0,
        spans_pending: 0,
        spans_dropped: 0,
        error: Some(why.to_string()),
    }
}
