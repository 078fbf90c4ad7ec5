//! The spans mcp-bound makes, as plain values: attributes, events, links,
//! status, and the clock that turns the loop's `Instant`s into Unix time.
//! Pure; `proto.rs` turns them into OTLP.

use std::time::{Duration, Instant, SystemTime};

pub(super) use crate::trace_context::SpanContext;

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    /// Text from outside (a method, a tool's name, an id): masked when
    /// encoded.
    Str(String),
    /// mcp-bound's own vocabulary: sent as it is.
    Word(&'static str),
    Int(i64),
    Bool(bool),
}

impl From<&str> for Value {
    fn from(text: &str) -> Value {
        Value::Str(text.to_string())
    }
}

impl From<String> for Value {
    fn from(text: String) -> Value {
        Value::Str(text)
    }
}

impl From<u64> for Value {
    fn from(n: u64) -> Value {
        Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Int(n)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

pub(super) type Attributes = Vec<(&'static str, Value)>;

/// Something that happened during a span (a restart, a decision).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Event {
    pub name: String,
    pub at_unix_nanos: u64,
    pub attributes: Vec<(String, Value)>,
}

/// The span's kind, as OTLP numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// The call: mcp-bound's own work.
    Internal,
    /// A request mcp-bound carries to the server and waits on.
    Client,
}

/// How a span ended: an error carries its description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Status {
    Unset,
    Error(String),
}

/// One finished span.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Span {
    pub context: SpanContext,
    pub parent: Option<SpanContext>,
    pub name: String,
    pub kind: Kind,
    pub start_unix_nanos: u64,
    pub end_unix_nanos: u64,
    pub attributes: Attributes,
    pub events: Vec<Event>,
    pub links: Vec<SpanContext>,
    pub status: Status,
}

/// Instants as Unix nanoseconds: one reading of both clocks, taken when
/// export starts, so that the pure modules keep their `Instant`s.
#[derive(Debug, Clone, Copy)]
pub(super) struct Clock {
    instant: Instant,
    unix_nanos: u64,
}

impl Clock {
    pub(super) fn at(instant: Instant, wall: SystemTime) -> Clock {
        let unix_nanos = wall
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        Clock {
            instant,
            unix_nanos,
        }
    }

    /// `ms` milliseconds after `at`.
    pub(super) fn unix_nanos_ms(&self, at: Instant, ms: u64) -> u64 {
        self.unix_nanos(at)
            .saturating_add(ms.saturating_mul(1_000_000))
    }

    pub(super) fn unix_nanos(&self, at: Instant) -> u64 {
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        if at >= self.instant {
            self.unix_nanos.saturating_add(nanos(at - self.instant))
        } else {
            self.unix_nanos.saturating_sub(nanos(self.instant - at))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_maps_instants_both_ways() {
        let now = Instant::now();
        let clock = Clock::at(now, SystemTime::UNIX_EPOCH + Duration::from_secs(10));
        assert_eq!(
            clock.unix_nanos(now + Duration::from_millis(1)),
            10_001_000_000
        );
        assert_eq!(
            clock.unix_nanos(now - Duration::from_secs(1)),
            9_000_000_000
        );
    }
}
