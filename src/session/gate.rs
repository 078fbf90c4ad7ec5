//! The per-tool-call gate, pure: which `tools/call` may run.
//! A tool call is an action of its own, so it goes through the states a
//! call goes through (`run/call.rs`), as the per-launch approval does:
//! received, validated,
//! then pending approval or authorized, then dispatched (forwarded to the
//! server), or it ends before dispatch (denied, expired, cancelled,
//! failed). Nothing the server or the approver prints moves a deadline.
//!
//! - **Policy by name:** `--tool-deny` wins; when any `--tool-allow` is
//!   given, a tool matching none is denied. Globs (`*`, `?`) match the
//!   name as the server knows it (`params.name`).
//! - **An approver per call:** a tool the policy allows and
//!   `--tool-approve` matches waits for a decision, on a wall-clock
//!   deadline, at most `max_pending` at once: from `--tool-approve-cmd`,
//!   or, with `--tool-approve-via host`, from the person, asked through
//!   the client (`session/host_ask.rs`).
//!
//! This module holds the patterns and the calls waiting for a decision;
//! `session/approval.rs` moves calls through it, and the loop's
//! `supervise/approvers.rs` runs the approvers it asks for.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use regex::RegexSet;
use serde::Serialize;

use super::{InFlight, Key};

/// The gate as the settings resolved it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolGate {
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    /// Which allowed tools the approver is asked about (default `*`).
    pub approve: Vec<String>,
    pub approver: Option<ApproverCommand>,
    /// `--tool-approve-via host`: the person is asked through the client
    /// (the command, if any, when the client cannot be asked).
    pub ask_host: bool,
    /// `--tool-approval-timeout`: one call's approval, from its arrival.
    pub timeout: Duration,
    /// `--max-pending-approvals`.
    pub max_pending: usize,
    /// `--redact` patterns, for the arguments the person is shown.
    pub redact: Vec<String>,
    /// What the approver is told about the server.
    pub session_id: Option<String>,
    pub server_argv: Vec<String>,
    /// `--tool-pin`: the server is held to the tools first trusted.
    pub pin: Option<super::ToolPinning>,
}

/// `--tool-approve-cmd`, split like a shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApproverCommand {
    pub argv: Vec<String>,
}

/// Who decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    Policy,
    Command,
    /// The person, asked through the client (MCP elicitation), or the
    /// client's inability to ask.
    Host,
    /// The pins (--tool-pin): the tool drifted from what was trusted.
    Pin,
}

/// Who a held call waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Asked {
    /// `--tool-approve-cmd`, started by the loop.
    Command,
    /// The client, under mcp-bound's own request id (its JSON text).
    Host { id: String },
}

/// What the gate says of a tool, before any approver is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Authorized by the policy alone.
    Allowed,
    /// Denied by the policy: never reaches the server.
    Denied,
    /// Denied by the pins (--tool-pin): the tool differs from its pin,
    /// or has none.
    Changed,
    /// The approver decides.
    Ask,
    /// A 2026-07-28 client's retry carried the state mcp-bound sealed
    /// when it asked the person: decided by the answer it carries.
    Sealed(Sealed),
}

/// A retry's decision, read from the answer it carried and its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sealed {
    pub(crate) decision: crate::record::Decision,
    pub(crate) action: Option<crate::record::mcp::HostAction>,
    pub(crate) waited_ms: u64,
    /// The state was refused: why.
    pub(crate) broken: Option<super::seal::Broken>,
    /// Until when an approval covers the call's later rounds.
    pub(crate) until: Option<Instant>,
    /// A later round an approval covers, not asked again: the approved
    /// retry's id (its JSON text).
    pub(crate) covered_by: Option<String>,
}

/// A glob as an anchored regular expression: `*` any run, `?` one
/// character, everything else itself.
pub(crate) fn glob_regex(glob: &str) -> String {
    let mut out = String::from("^(?s:");
    for c in glob.chars() {
        match c {
            '*' => out.push_str(".*"),
            '?' => out.push('.'),
            c => out.push_str(&regex::escape(c.encode_utf8(&mut [0; 4]))),
        }
    }
    out.push_str(")$");
    out
}

fn set(globs: &[String]) -> RegexSet {
    RegexSet::new(globs.iter().map(|g| glob_regex(g))).expect("an escaped glob is a valid regex")
}

struct Patterns {
    allow: Option<RegexSet>,
    deny: RegexSet,
    approve: RegexSet,
}

/// A call waiting for its approver: in the state "pending approval".
pub(super) struct Pending {
    /// The request's table key (its entry keeps the id as sent, when
    /// that differs).
    pub(super) key: Key,
    pub(super) tool: String,
    pub(super) params_sha256: Option<String>,
    pub(super) by: Asked,
    pub(super) asked: Instant,
    pub(super) deadline: Instant,
    /// Its table entry, made when it came and entered once it is sent.
    pub(super) entry: InFlight,
    /// The held line it belongs to.
    pub(super) line: u64,
}

/// A held batch: its element count, and each element kept with the
/// ticket that decides it (None: it goes with the batch).
pub(super) type HeldBatch = (usize, Vec<(String, Option<u64>)>);

impl Pending {
    /// The request's id as the client sent it.
    pub(super) fn id(&self) -> &str {
        self.entry.spelled.as_deref().unwrap_or(&self.key)
    }
}

/// A client line held while calls in it wait: sent (what is left of it)
/// once every decision in it is made.
pub(super) struct Held {
    pub(super) line: Vec<u8>,
    /// For a batch: its element count and each element kept, with the
    /// ticket of the call that decides it (None: it goes with the batch).
    pub(super) batch: Option<HeldBatch>,
    /// Tickets still waiting, and the calls approved (entered into the
    /// table when the line is sent).
    pub(super) waiting: usize,
    pub(super) approved: Vec<(u64, Key, InFlight)>,
    /// Requests of a held batch entered into the table when it came:
    /// where their line ends is known only when it is sent.
    pub(super) admitted: Vec<Key>,
}

/// The approver the loop is to start for `ticket`, with its stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ask {
    pub ticket: u64,
    pub stdin: Vec<u8>,
}

/// What the approver is told, on its stdin: one JSON object.
#[derive(Serialize)]
pub(super) struct ApprovalRequest<'a> {
    pub(super) tool: &'a str,
    /// The JSON the client sent as `params.arguments` (null if none).
    pub(super) arguments: &'a serde_json::value::RawValue,
    pub(super) params_sha256: Option<&'a str>,
    /// As the client wrote it.
    pub(super) request_id: &'a serde_json::value::RawValue,
    pub(super) call_id: &'a str,
    pub(super) session_id: Option<&'a str>,
    pub(super) argv: &'a [String],
}

/// The gate's state in the session.
pub(super) struct Gate {
    patterns: Patterns,
    pub(super) settings: ToolGate,
    /// By ticket, oldest first.
    pub(super) pending: BTreeMap<u64, Pending>,
    pub(super) held: BTreeMap<u64, Held>,
    next: u64,
    /// Approvers to start, and tickets whose approver is to be ended.
    pub(super) asks: Vec<Ask>,
    pub(super) ends: Vec<u64>,
    /// What makes mcp-bound's own request ids to the client its own.
    pub(super) nonce: String,
    /// Masks the arguments the person is shown.
    pub(super) redactor: crate::redact::Redactor,
    /// The states sealed for 2026-07-28 clients, until their retry.
    pub(super) seals: super::seal::Seals,
    /// The approvals that cover a call's later rounds.
    pub(super) grants: super::seal::Grants,
    /// The pins, under --tool-pin.
    pub(super) pinning: Option<super::pinning::Pinning>,
}

impl Gate {
    pub(super) fn new(settings: ToolGate) -> Gate {
        let patterns = Patterns {
            allow: (!settings.allow.is_empty()).then(|| set(&settings.allow)),
            deny: set(&settings.deny),
            approve: set(&settings.approve),
        };
        // The patterns were checked when the settings were made.
        let redactor = crate::redact::Redactor::new(&settings.redact).unwrap_or_default();
        let max_pending = settings.max_pending;
        let pinning = settings.pin.clone().map(super::pinning::Pinning::new);
        Gate {
            patterns,
            settings,
            pending: BTreeMap::new(),
            held: BTreeMap::new(),
            next: 0,
            asks: Vec::new(),
            ends: Vec::new(),
            nonce: crate::ids::random_hex(8),
            redactor,
            seals: super::seal::Seals::new(
                crate::ids::random_hex(32).into_bytes(),
                Instant::now(),
                max_pending,
            ),
            grants: super::seal::Grants::new(max_pending),
            pinning,
        }
    }

    /// The policy's word on `tool`, and whether the approver decides.
    pub(crate) fn verdict(&self, tool: &str) -> Verdict {
        let patterns = &self.patterns;
        if patterns.deny.is_match(tool)
            || patterns.allow.as_ref().is_some_and(|a| !a.is_match(tool))
        {
            Verdict::Denied
        } else if self.asks_someone() && patterns.approve.is_match(tool) {
            Verdict::Ask
        } else {
            Verdict::Allowed
        }
    }

    /// Someone is asked about the calls `--tool-approve` matches.
    pub(crate) fn asks_someone(&self) -> bool {
        self.settings.approver.is_some() || self.settings.ask_host
    }

    /// A tool a `tools/list` result may show.
    pub(crate) fn shows(&self, tool: &str) -> bool {
        self.verdict(tool) != Verdict::Denied
    }

    /// Whether a policy by name or pins are set (then `tools/list` is
    /// filtered).
    pub(crate) fn filters(&self) -> bool {
        self.patterns.allow.is_some() || !self.settings.deny.is_empty() || self.pinning.is_some()
    }

    /// A new ticket.
    pub(super) fn ticket(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    pub(super) fn is_full(&self) -> bool {
        !self.asks_someone() || self.pending.len() >= self.settings.max_pending
    }

    pub(super) fn ticket_of(&self, key: &str) -> Option<u64> {
        self.pending
            .iter()
            .find(|(_, p)| &*p.key == key)
            .map(|(t, _)| *t)
    }

    /// The earliest approval deadline (a few at most wait: a scan).
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.pending.values().map(|p| p.deadline).min()
    }

    /// Tickets whose deadline `now` reached.
    pub(super) fn expired(&self, now: Instant) -> Vec<u64> {
        self.pending
            .iter()
            .filter(|(_, p)| p.deadline <= now)
            .map(|(t, _)| *t)
            .collect()
    }

    pub(super) fn timeout(&self) -> Duration {
        self.settings.timeout
    }

    /// The call waiting for the client's answer to mcp-bound's request
    /// `id` (its JSON text).
    pub(super) fn asked_host(&self, id: &str) -> Option<u64> {
        self.pending
            .iter()
            .find(|(_, p)| matches!(&p.by, Asked::Host { id: ours } if ours == id))
            .map(|(t, _)| *t)
    }
}

/// `params.arguments` as the client wrote it (strict JSON: the gate
/// refuses a call for approval whose arguments are not), or null when
/// there are none.
pub(super) fn arguments_of(arguments: Option<&str>) -> Box<serde_json::value::RawValue> {
    let null = || serde_json::value::RawValue::from_string("null".into()).expect("null");
    arguments
        .and_then(|a| serde_json::value::RawValue::from_string(a.to_string()).ok())
        .unwrap_or_else(null)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(allow: &str, deny: &str, approve: Option<&str>) -> Gate {
        let list = |s: &str| -> Vec<String> {
            s.split(',')
                .filter(|p| !p.is_empty())
                .map(String::from)
                .collect()
        };
        Gate::new(ToolGate {
            allow: list(allow),
            deny: list(deny),
            approve: approve.map_or_else(|| vec!["*".into()], list),
            approver: approve.map(|_| ApproverCommand {
                argv: vec!["true".into()],
            }),
            timeout: Duration::from_secs(1),
            max_pending: 2,
            ..ToolGate::default()
        })
    }

    #[test]
    fn deny_wins_and_an_allow_list_denies_the_rest() {
        let g = gate("read_*,list", "read_secret*", None);
        assert_eq!(g.verdict("read_file"), Verdict::Allowed);
        assert_eq!(g.verdict("list"), Verdict::Allowed);
        assert_eq!(g.verdict("read_secret_key"), Verdict::Denied);
        assert_eq!(g.verdict("write_file"), Verdict::Denied);
        assert_eq!(g.verdict("lis"), Verdict::Denied, "a glob is anchored");
        let g = gate("", "rm", None);
        assert_eq!(g.verdict("anything"), Verdict::Allowed);
        assert_eq!(g.verdict("rm"), Verdict::Denied);
        assert_eq!(g.verdict("rm2"), Verdict::Allowed);
    }

    #[test]
    fn globs_are_star_and_question_mark_and_nothing_else_is_special() {
        let g = gate("a?c,x.y*,[z]", "", None);
        assert_eq!(g.verdict("abc"), Verdict::Allowed);
        assert_eq!(g.verdict("ac"), Verdict::Denied);
        assert_eq!(g.verdict("x.yz"), Verdict::Allowed);
        assert_eq!(g.verdict("xzyz"), Verdict::Denied, "a dot is a dot");
        assert_eq!(g.verdict("[z]"), Verdict::Allowed);
        assert_eq!(g.verdict("z"), Verdict::Denied, "brackets are literal");
        assert_eq!(
            g.verdict("a\nc"),
            Verdict::Allowed,
            "? is any one character"
        );
    }

    #[test]
    fn the_approver_is_asked_only_about_allowed_tools_it_matches() {
        let g = gate("", "rm", Some("write_*"));
        assert_eq!(g.verdict("write_file"), Verdict::Ask);
        assert_eq!(g.verdict("read_file"), Verdict::Allowed);
        assert_eq!(g.verdict("rm"), Verdict::Denied);
        assert!(!g.filters() || !g.shows("rm"));
        assert!(g.shows("write_file"), "a tool that asks is still listed");
    }

    #[test]
    fn arguments_are_the_clients_own_text() {
        let args = arguments_of(Some(r#"{"b": 1,"a":[ 2 ]}"#));
        assert_eq!(args.get(), r#"{"b": 1,"a":[ 2 ]}"#);
        assert_eq!(arguments_of(None).get(), "null");
    }
}
