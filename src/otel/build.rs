//! The two spans mcp-bound makes, from facts it already has: the call's
//! span from the final record (the process: state, exit, cancel reason,
//! stderr counts, usage, containment; the record's events as span events),
//! and a request's span from what the session says of it (the MCP
//! semantic conventions' client span). Pure.

use std::time::Instant;

use super::span::{Attributes, Clock, Event, Kind, Span, SpanContext, Status, Value};
use crate::record::{Exit, Record, State, word};
use crate::session::{RequestOutcome, Traced};

fn push(attributes: &mut Attributes, key: &'static str, value: Option<impl Into<Value>>) {
    if let Some(value) = value {
        attributes.push((key, value.into()));
    }
}

/// The program's name, without its directory.
fn program(record: &Record) -> String {
    let argv0 = record.invocation.argv.first().map_or("", String::as_str);
    argv0.rsplit('/').next().unwrap_or(argv0).to_string()
}

/// Whether a state is a failure of the call (an error status): a call
/// cancelled or shut down is not, since it may have acted.
fn failed(state: State) -> bool {
    match state {
        State::TimedOut
        | State::FailedBeforeDispatch
        | State::FailedAfterDispatch
        | State::Denied
        | State::SupervisorKilled => true,
        State::AwaitingApproval
        | State::Dispatched
        | State::Completed
        | State::ShutDown
        | State::CancelledBeforeDispatch
        | State::CancelledAfterDispatch => false,
    }
}

/// The call's span, from its final record.
pub(super) fn call_span(
    (context, parent): (&SpanContext, Option<&SpanContext>),
    record: &Record,
    clock: &Clock,
    (start, end): (Instant, Instant),
) -> Span {
    let program = program(record);
    let mut a: Attributes = vec![
        ("mcp_bound.call_id", record.ids.call_id.as_str().into()),
        ("mcp_bound.state", word(record.lifecycle.state).into()),
        ("process.executable.name", program.as_str().into()),
    ];
    push(
        &mut a,
        "mcp_bound.session_id",
        record.ids.session_id.clone(),
    );
    push(
        &mut a,
        "mcp_bound.cancel_reason",
        record.lifecycle.cancel_reason.map(word),
    );
    push(
        &mut a,
        "mcp_bound.cancel_signal",
        record.lifecycle.cancel_signal.clone(),
    );
    push(
        &mut a,
        "mcp_bound.helper.pid",
        record.invocation.pid.map(u64::from),
    );
    push(&mut a, "mcp_bound.exit_code", record.lifecycle.exit_code);
    let status = exit_attributes(record, &mut a);
    resource_attributes(record, &mut a);
    Span {
        context: context.clone(),
        parent: parent.cloned(),
        name: format!("mcp-bound {program}"),
        kind: Kind::Internal,
        start_unix_nanos: clock.unix_nanos(start),
        end_unix_nanos: clock.unix_nanos(end),
        attributes: a,
        events: events(record, clock, start),
        links: Vec::new(),
        status,
    }
}

/// The helper's exit, and whether the call failed: its `error.type` and
/// the span's status. A cancelled call has none: it may have acted.
fn exit_attributes(record: &Record, a: &mut Attributes) -> Status {
    let state = record.lifecycle.state;
    let mut status = Status::Unset;
    match &record.lifecycle.exit {
        Some(Exit::Code { code, .. }) => {
            a.push(("process.exit.code", i64::from(*code).into()));
            if *code != 0 && state == State::Completed {
                status = Status::Error(format!("exit {code}"));
                a.push(("error.type", "exit_status".into()));
            }
        }
        Some(Exit::Signal { signal, .. }) => {
            a.push(("mcp_bound.exit.signal", signal.as_str().into()));
            if state == State::Completed {
                status = Status::Error(format!("killed by {signal}"));
                a.push(("error.type", "exit_signal".into()));
            }
        }
        None => {}
    }
    if failed(state) {
        let why = record.error.clone().unwrap_or_else(|| word(state));
        status = Status::Error(why);
        a.push(("error.type", word(state).into()));
    }
    status
}

/// What the call's stderr, tree and containment came to.
fn resource_attributes(record: &Record, a: &mut Attributes) {
    let stderr = &record.stderr;
    a.push(("mcp_bound.stderr.bytes_seen", stderr.bytes_seen.into()));
    a.push((
        "mcp_bound.stderr.bytes_retained",
        stderr.bytes_retained.into(),
    ));
    a.push(("mcp_bound.stderr.truncated", stderr.truncated.into()));
    a.push((
        "mcp_bound.stderr.live_bytes_dropped",
        stderr.live_bytes_dropped.into(),
    ));
    if let Some(usage) = &record.usage {
        a.push(("mcp_bound.usage.user_ms", usage.user_ms.into()));
        a.push(("mcp_bound.usage.sys_ms", usage.sys_ms.into()));
        push(a, "mcp_bound.usage.max_rss_kib", usage.max_rss_kib);
        push(
            a,
            "mcp_bound.usage.memory_peak_bytes",
            usage.memory_peak_bytes,
        );
    }
    if let Some(contain) = &record.contain {
        a.push(("mcp_bound.contain.method", contain.method.into()));
    }
}

/// The record's events as span events, each field an attribute.
fn events(record: &Record, clock: &Clock, start: Instant) -> Vec<Event> {
    record
        .events
        .iter()
        .map(|event| {
            let mut attributes = Vec::new();
            let mut name = String::new();
            if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(&event.kind) {
                for (key, value) in fields {
                    if key == "event" {
                        name = value.as_str().unwrap_or("").to_string();
                        continue;
                    }
                    attributes.push((key, flat(value)));
                }
            }
            Event {
                name,
                at_unix_nanos: clock.unix_nanos_ms(start, event.t_ms),
                attributes,
            }
        })
        .collect()
}

fn flat(value: serde_json::Value) -> Value {
    match value {
        serde_json::Value::String(text) => Value::Str(text),
        serde_json::Value::Bool(b) => Value::Bool(b),
        serde_json::Value::Number(n) => n
            .as_i64()
            .map_or_else(|| Value::Str(n.to_string()), Value::Int),
        other => Value::Str(other.to_string()),
    }
}

/// What a request's end says as `error.type` and the status: None for
/// an end that is no failure (a result, or a call cancelled or cut off,
/// which may have acted).
fn error_of(outcome: RequestOutcome, code: Option<i64>) -> Option<(Value, String)> {
    let ours = |kind: &'static str, why: &str| Some((Value::Word(kind), why.to_string()));
    match outcome {
        RequestOutcome::TimedOut => ours("request_timeout", "mcp-bound timed the request out"),
        RequestOutcome::ServerExited => {
            ours("server_exited", "the server exited before it answered")
        }
        RequestOutcome::Denied => ours("tool_denied", "the tool gate did not let the call through"),
        RequestOutcome::Refused => ours(
            "request_refused",
            "mcp-bound refused the request as it came",
        ),
        RequestOutcome::Error => {
            let code = code.map_or_else(|| "_OTHER".to_string(), |c| c.to_string());
            let why = format!("JSON-RPC error {code}");
            Some((Value::Str(code), why))
        }
        RequestOutcome::Result
        | RequestOutcome::Cancelled
        | RequestOutcome::Ended
        | RequestOutcome::ShutDown
        | RequestOutcome::Asked => None,
    }
}

/// A request's span. Its parent is the client's span when the request
/// carried a valid `traceparent` (the call's span is then a link), and
/// the call's span otherwise.
pub(super) fn request_span(
    call: &SpanContext,
    span_id: [u8; 8],
    traced: &Traced,
    call_id: &str,
    clock: &Clock,
) -> Span {
    let client = traced
        .parent
        .as_ref()
        .and_then(|ctx| SpanContext::from_traceparent(&ctx.traceparent, ctx.tracestate.as_deref()));
    let (parent, links) = match client {
        Some(client) => (client, vec![call.clone()]),
        None => (call.clone(), Vec::new()),
    };
    let context = SpanContext {
        trace_id: parent.trace_id,
        span_id,
        flags: parent.flags,
        tracestate: parent.tracestate.clone(),
        remote: false,
    };
    let tool = traced
        .tool
        .as_deref()
        .filter(|_| traced.method == "tools/call");
    let name = match tool {
        Some(tool) => format!("{} {tool}", traced.method),
        None => traced.method.clone(),
    };
    let mut a: Attributes = vec![
        ("mcp.method.name", traced.method.as_str().into()),
        ("jsonrpc.request.id", request_id_text(&traced.id).into()),
        ("network.transport", Value::Word("pipe")),
        ("mcp_bound.call_id", call_id.into()),
        ("mcp_bound.outcome", Value::Word(traced.outcome.word())),
        ("mcp_bound.request_kind", Value::Word(traced.kind.word())),
    ];
    push(&mut a, "gen_ai.tool.name", tool);
    if traced.span_id.is_some() {
        a.push(("mcp_bound.propagated", true.into()));
    }
    if tool.is_some() {
        a.push(("gen_ai.operation.name", Value::Word("execute_tool")));
    }
    push(
        &mut a,
        "mcp.protocol.version",
        traced.protocol_version.clone(),
    );
    push(
        &mut a,
        "mcp_bound.result_type",
        traced.result_type.map(|r| Value::Word(r.word())),
    );
    push(
        &mut a,
        "rpc.response.status_code",
        traced.error_code.map(|c| c.to_string()),
    );
    if traced.interrupted {
        a.push(("mcp_bound.interrupted", true.into()));
    }
    let failure = error_of(traced.outcome, traced.error_code).filter(|_| !traced.interrupted);
    let status = match failure {
        Some((kind, description)) => {
            a.push(("error.type", kind));
            Status::Error(description)
        }
        None => Status::Unset,
    };
    let events = traced
        .decision
        .map(|decided| Event {
            name: "mcp_bound.tool_decision".to_string(),
            at_unix_nanos: clock.unix_nanos_ms(traced.started, decided.waited_ms),
            attributes: vec![
                (
                    "mcp_bound.decision".to_string(),
                    word(decided.decision).into(),
                ),
                ("mcp_bound.decided_by".to_string(), word(decided.by).into()),
                ("mcp_bound.waited_ms".to_string(), decided.waited_ms.into()),
            ],
        })
        .into_iter()
        .collect();
    Span {
        context,
        parent: Some(parent),
        name,
        kind: Kind::Client,
        start_unix_nanos: clock.unix_nanos(traced.started),
        end_unix_nanos: clock.unix_nanos(traced.ended),
        attributes: a,
        events,
        links,
        status,
    }
}

/// An id as the conventions want it: a string's text, a number's digits.
fn request_id_text(json: &str) -> String {
    let plain = json.len() >= 2 && json.starts_with('"') && json.ends_with('"');
    if json.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
        return json.to_string();
    }
    if plain && !json.contains('\\') {
        return json[1..json.len() - 1].to_string();
    }
    match serde_json::from_str::<serde_json::Value>(json) {
        Ok(serde_json::Value::String(text)) => text,
        _ => json.to_string(),
    }
}
