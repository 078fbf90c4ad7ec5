//! A milestone: what mcp-bound knows of a call in flight, told to its
//! watchdog at the few moments that change what a record would say (the
//! dispatch, each restart, the host's signal or hang-up). If mcp-bound is
//! then SIGKILLed before its final words, the watchdog's record carries
//! these facts, not the ones from before dispatch, with an event that says
//! when they were known. Never sent per request: the round trip does not
//! pay for it.

use serde::{Deserialize, Serialize};

use super::mcp::McpFacts;
use super::{CancelReason, Event, EventKind, Record, State, StdoutFacts};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Milestone {
    /// When, in the events' milliseconds.
    pub t_ms: u64,
    /// The first server's pid, as the record's `pid`.
    pub pid: u32,
    pub cancel_reason: Option<CancelReason>,
    pub cancel_signal: Option<String>,
    pub events: Vec<Event>,
    pub stdout: StdoutFacts,
    /// What the capture counted (it is not handed over: the excerpt of a
    /// killed call's record is empty).
    pub stderr_bytes_seen: u64,
    /// The session layer's facts; `interrupted` and `in_flight_at_exit`
    /// are the requests in flight then.
    pub mcp: Option<McpFacts>,
}

impl Record {
    /// The record the watchdog writes for a call whose mcp-bound died
    /// before its final words, `t_ms` after it started: this record (made
    /// before dispatch) with what the last milestone knew.
    pub fn supervisor_killed(&mut self, milestone: Option<Milestone>, t_ms: u64) {
        self.lifecycle.state = State::SupervisorKilled;
        self.times.duration_ms = Some(t_ms);
        let facts_t_ms = milestone.as_ref().map_or(0, |m| m.t_ms);
        if let Some(milestone) = milestone {
            self.invocation.pid = Some(milestone.pid);
            self.lifecycle.cancel_reason = milestone.cancel_reason;
            self.lifecycle.cancel_signal = milestone.cancel_signal;
            self.events = milestone.events;
            self.stdout = milestone.stdout;
            self.stderr.bytes_seen = milestone.stderr_bytes_seen;
            if milestone.mcp.is_some() {
                self.mcp = milestone.mcp;
            }
        }
        self.events.push(Event {
            t_ms,
            kind: EventKind::SupervisorKilled { facts_t_ms },
        });
    }
}
