//! What the session layer runs under: per-method request deadlines, the
//! bound on requests in flight, and which requests are audited.

use std::time::Duration;

use super::RestartPolicy;
use super::kind::Kind;
use crate::record::mcp::SessionLimits;
use crate::units::limit_millis;

/// Which requests get `mcp_request`/`mcp_response` journal entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum AuditRequests {
    /// tools/call, resources/read and prompts/get: the calls that act or read.
    Tools,
    All,
    None,
}

impl AuditRequests {
    pub(crate) fn covers(self, method: &str) -> bool {
        match self {
            AuditRequests::Tools => {
                matches!(method, "tools/call" | "resources/read" | "prompts/get")
            }
            AuditRequests::All => true,
            AuditRequests::None => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionPolicy {
    /// For any method without a timeout of its own.
    pub default_timeout: Option<Duration>,
    /// A method's own timeout (None: that method has none); the last
    /// given for a method counts.
    pub method_timeouts: Vec<(String, Option<Duration>)>,
    pub resets_on_progress: bool,
    pub max_in_flight: usize,
    pub audit: AuditRequests,
    /// A --journal is written: the audit has somewhere to go.
    pub journal: bool,
    pub restart: RestartPolicy,
    /// Most bytes of the server's last stderr lines in the message of an
    /// error mcp-bound answers (0: none).
    pub agent_excerpt_bytes: usize,
    /// The per-tool-call gate, when one is set.
    pub tools: Option<super::ToolGate>,
}

impl SessionPolicy {
    /// Requests are audited into a journal.
    pub(crate) fn journals_requests(&self) -> bool {
        self.journal && self.audit != AuditRequests::None
    }

    /// A request's deadline: its method's own timeout, else the default
    /// for a kind that the default times.
    pub(crate) fn timeout_for(&self, method: &str, kind: Kind) -> Option<Duration> {
        let default = kind
            .timed_by_default()
            .then_some(self.default_timeout)
            .flatten();
        self.method_timeouts
            .iter()
            .rev()
            .find(|(m, _)| m == method)
            .map_or(default, |(_, t)| *t)
    }

    pub(crate) fn limits(&self) -> SessionLimits {
        SessionLimits {
            request_timeout_ms: self.default_timeout.map(limit_millis),
            method_timeouts_ms: self
                .method_timeouts
                .iter()
                .map(|(m, t)| (m.clone(), t.map(limit_millis)))
                .collect(),
            timeout_resets_on_progress: self.resets_on_progress,
            max_in_flight: self.max_in_flight as u64,
            restart: self.restart.mode,
            max_restarts: u64::from(self.restart.max_restarts),
            restart_window_ms: limit_millis(self.restart.window),
            agent_excerpt_bytes: self.agent_excerpt_bytes as u64,
        }
    }
}
