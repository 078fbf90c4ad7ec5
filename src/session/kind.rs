//! What kind of request a tracked one is, and each kind's rules, in one
//! place. A kind is known by the request's method when it arrives:
//! - a **call** (the default): one request, one answer, timed by
//!   --request-timeout;
//! - a **stream**, `subscriptions/listen` (MCP 2026-07-28): one long-lived
//!   request that gets no response while it is open. It ends by the
//!   client's cancel, the server's cancel naming it (the only use the spec
//!   allows a server), a result, or the server's exit;
//! - a **task's result**, a 2025-11-25 `tasks/result`, which blocks until
//!   the task ends, by design;
//! - the **opening**: a legacy `initialize`, or the 2026-07-28
//!   `server/discover` probe. It waits on the server's start (a cold
//!   `npx -y` takes seconds), which hosts time themselves (Claude Code's
//!   `MCP_TIMEOUT`, Codex's `startup_timeout_sec`): a -32001 from the
//!   default would fail a start the host would have waited for, and a
//!   -32001 for the probe reads as "legacy" and changes the era.
//!
//! MRTR rounds and task creations are told by their response, not here.

/// The kind of a tracked request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Call,
    Stream,
    TaskResult,
    Opening,
}

impl Kind {
    /// Its name, as spans carry it.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Kind::Call => "call",
            Kind::Stream => "stream",
            Kind::TaskResult => "task_result",
            Kind::Opening => "opening",
        }
    }

    pub(crate) fn of(method: &str) -> Kind {
        match method {
            "subscriptions/listen" => Kind::Stream,
            "tasks/result" => Kind::TaskResult,
            "initialize" | "server/discover" => Kind::Opening,
            _ => Kind::Call,
        }
    }

    /// Whether the default --request-timeout applies (a method's own
    /// timeout always does): a stream and a task's result wait by design,
    /// and the host times the opening.
    pub(crate) fn timed_by_default(self) -> bool {
        match self {
            Kind::Call => true,
            Kind::Stream | Kind::TaskResult | Kind::Opening => false,
        }
    }

    /// Whether the server may end it with `notifications/cancelled`.
    pub(crate) fn ended_by_a_server_cancel(self) -> bool {
        match self {
            Kind::Stream => true,
            Kind::Call | Kind::TaskResult | Kind::Opening => false,
        }
    }

    /// Whether it is answered, and counted as cut off, when the host ends
    /// the session (its hang-up or signal): a stream just ends, since the
    /// host is going away; a call may have acted, and says so.
    pub(crate) fn answered_at_the_hosts_end(self) -> bool {
        match self {
            Kind::Call | Kind::TaskResult | Kind::Opening => true,
            Kind::Stream => false,
        }
    }
}
