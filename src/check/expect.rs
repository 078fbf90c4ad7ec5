//! The expectations of `mcp-bound check`, pure: journal entries in, one
//! outcome per expectation out, each with the reason a person reads.
//! A tool counts as *called* when a call to it reached the server; a
//! gate's denial is counted apart and is not a call. Memory follows the
//! calls in flight and their open tool calls, never the journal's length.

use std::collections::HashMap;

use crate::journal::OpenRequests;

use super::lifecycle::Lifecycle;
use crate::journal::{EntryView, NOT_SENT};

/// Most open requests of one call followed at once.
const MAX_PENDING: usize = 4096;

/// A glob, as typed and as matched.
#[derive(Debug, Clone)]
pub(super) struct Glob {
    pub text: String,
    regex: regex::Regex,
}

impl Glob {
    pub(super) fn new(text: &str) -> Glob {
        Glob {
            text: text.to_string(),
            regex: regex::Regex::new(&crate::session::glob_regex(text)).expect("an escaped glob"),
        }
    }

    pub(super) fn matches(&self, name: &str) -> bool {
        self.regex.is_match(name)
    }
}

/// What `check` was asked to hold.
#[derive(Debug, Default)]
pub(super) struct Expectations {
    pub expect_tools: Vec<Glob>,
    pub forbid_tools: Vec<Glob>,
    /// Milliseconds, and as typed.
    pub max_duration: Option<(u64, String)>,
    /// --max-duration applies to requests.
    pub requests: bool,
    pub expect_state: Option<String>,
    pub no_unfinished: bool,
    pub no_unapproved: bool,
    /// The lifecycle, and its file as named.
    pub lifecycle: Option<(Lifecycle, String)>,
    /// RFC 3339 bounds on a call's intent time.
    pub since: Option<String>,
    pub until: Option<String>,
}

/// The first of several: where it was, and how many there were.
#[derive(Debug, Default, Clone)]
pub(super) struct Seen {
    pub(super) count: u64,
    pub(super) first: Option<String>,
}

impl Seen {
    pub(super) fn add(&mut self, what: impl FnOnce() -> String) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(what());
        }
    }

    pub(super) fn first(&self) -> &str {
        self.first.as_deref().unwrap_or("?")
    }
}

/// What was found, per expectation.
#[derive(Default)]
pub(super) struct Found {
    pub(super) calls: u64,
    /// Per --expect-tool: calls that reached the server, and denials.
    pub(super) called: Vec<Seen>,
    pub(super) denied: Vec<u64>,
    /// Per --forbid-tool.
    pub(super) forbidden: Vec<Seen>,
    /// The longest call or request: its milliseconds and what it was.
    pub(super) worst: Option<(u64, String)>,
    /// How many were over --max-duration.
    pub(super) over: u64,
    pub(super) wrong_state: Seen,
    pub(super) unfinished: Seen,
    pub(super) unapproved: Seen,
    /// The call whose entries held the lifecycle; else the furthest any
    /// call got (its steps matched, its id).
    pub(super) lifecycle_held: Option<String>,
    pub(super) lifecycle_best: Option<(usize, String)>,
}

/// A request open in a call: its tool (a tools/call) and its gate's
/// decision, once made.
struct Pending {
    tool: Option<String>,
    approved: Option<bool>,
}

struct OpenCall {
    gated: bool,
    pending: OpenRequests<String, Pending>,
    /// Lifecycle steps matched so far.
    step: usize,
}

/// The journal's entries checked as they come.
pub(super) struct Checker {
    expect: Expectations,
    open: HashMap<String, OpenCall>,
    found: Found,
}

impl Checker {
    pub(super) fn new(expect: Expectations) -> Checker {
        let found = Found {
            called: vec![Seen::default(); expect.expect_tools.len()],
            denied: vec![0; expect.expect_tools.len()],
            forbidden: vec![Seen::default(); expect.forbid_tools.len()],
            ..Found::default()
        };
        Checker {
            expect,
            open: HashMap::new(),
            found,
        }
    }

    /// One entry: its line, its view, and its bytes (read again only
    /// for a lifecycle step naming fields).
    pub(super) fn entry(&mut self, line: u64, view: &EntryView<'_>, content: &[u8]) {
        let Some(call_id) = view.call_id.as_deref() else {
            return;
        };
        if view.kind == "intent" {
            let ts = &*view.ts;
            let in_window = self.expect.since.as_deref().is_none_or(|t| ts >= t)
                && self.expect.until.as_deref().is_none_or(|t| ts <= t);
            if !in_window {
                return;
            }
            self.found.calls += 1;
            let call = OpenCall {
                gated: view.tool_gate.is_some(),
                pending: OpenRequests::default(),
                step: 0,
            };
            if let Some(earlier) = self.open.insert(call_id.to_string(), call) {
                self.unfinished(call_id, earlier);
            }
        }
        let Some(call) = self.open.get_mut(call_id) else {
            return;
        };
        if let Some((lifecycle, _)) = &self.expect.lifecycle {
            lifecycle_step(&mut self.found, lifecycle, call, call_id, view, content);
        }
        match &*view.kind {
            "mcp_request" => {
                if let Some(id) = view.request_id
                    && call.pending.len() < MAX_PENDING
                {
                    let tool = view.tool_call().map(|(_, tool)| tool.to_string());
                    let pending = Pending {
                        tool,
                        approved: None,
                    };
                    call.pending.insert(id.get().to_string(), pending);
                }
            }
            "mcp_decision" => {
                let id = view.request_id.map(|id| id.get());
                if let Some(pending) = id.and_then(|id| call.pending.first_mut(id)) {
                    pending.approved = Some(view.decision.as_deref() == Some("approved"));
                }
            }
            "mcp_response" => self.response(call_id, line, view),
            "terminal" => {
                let call = self.open.remove(call_id).expect("open");
                self.terminal(call_id, line, view, call);
            }
            _ => {}
        }
    }

    fn response(&mut self, call_id: &str, line: u64, view: &EntryView<'_>) {
        let call = self.open.get_mut(call_id).expect("open");
        let gated = call.gated;
        let id = view.request_id.map(|id| id.get()).unwrap_or("null");
        let outcome = view.outcome.as_deref().unwrap_or("unknown");
        let pending = call.pending.answered(id, outcome);
        let method = view.method.as_deref().unwrap_or("?");
        if self.expect.requests
            && let Some(ms) = view.duration_ms
        {
            let tool = pending.as_ref().and_then(|p| p.tool.as_deref());
            let what = match tool {
                Some(tool) => format!("{method} {tool}"),
                None => method.to_string(),
            };
            self.duration(ms, || {
                format!("{what} (request {id} of call {call_id}, line {line})")
            });
        }
        let Some(Pending {
            tool: Some(tool),
            approved,
        }) = pending
        else {
            return;
        };
        if NOT_SENT.contains(&outcome) {
            for (glob, denied) in self.expect.expect_tools.iter().zip(&mut self.found.denied) {
                *denied += u64::from(glob.matches(&tool));
            }
            return;
        }
        self.called(call_id, line, &tool, gated, approved);
    }

    /// A tool call that reached the server.
    fn called(
        &mut self,
        call_id: &str,
        line: u64,
        tool: &str,
        gated: bool,
        approved: Option<bool>,
    ) {
        let at = || format!("{tool} in call {call_id} (line {line})");
        for (glob, seen) in self.expect.expect_tools.iter().zip(&mut self.found.called) {
            if glob.matches(tool) {
                seen.add(at);
            }
        }
        for (glob, seen) in self
            .expect
            .forbid_tools
            .iter()
            .zip(&mut self.found.forbidden)
        {
            if glob.matches(tool) {
                seen.add(at);
            }
        }
        if approved != Some(true) {
            let why = if gated { "no approval" } else { "no tool gate" };
            self.found
                .unapproved
                .add(|| format!("{tool} in call {call_id} (line {line}): {why}"));
        }
    }

    fn duration(&mut self, ms: u64, what: impl FnOnce() -> String) {
        let Some((limit, _)) = self.expect.max_duration else {
            return;
        };
        if ms > limit {
            self.found.over += 1;
        }
        if self
            .found
            .worst
            .as_ref()
            .is_none_or(|(worst, _)| ms > *worst)
        {
            self.found.worst = Some((ms, what()));
        }
    }

    fn terminal(&mut self, call_id: &str, line: u64, view: &EntryView<'_>, call: OpenCall) {
        let state = view.state.as_deref().unwrap_or("?");
        if let Some(expected) = &self.expect.expect_state
            && state != expected
        {
            self.found
                .wrong_state
                .add(|| format!("call {call_id} ended {state} (line {line})"));
        }
        if !self.expect.requests
            && let Some(ms) = view.duration_ms
        {
            self.duration(ms, || format!("call {call_id} (line {line})"));
        }
        self.left_open(call_id, line, call);
    }

    /// A call's requests never answered: a tools/call sent (no gate, or
    /// approved) reached the server; one held for a decision did not.
    fn left_open(&mut self, call_id: &str, line: u64, call: OpenCall) {
        for pending in call.pending.into_values() {
            let Some(tool) = pending.tool else { continue };
            if call.gated && pending.approved != Some(true) {
                self.found
                    .unapproved
                    .add(|| format!("{tool} in call {call_id} was left waiting for a decision"));
            } else {
                self.called(call_id, line, &tool, call.gated, pending.approved);
            }
        }
    }

    /// A call with no terminal entry.
    fn unfinished(&mut self, call_id: &str, call: OpenCall) {
        self.found
            .unfinished
            .add(|| format!("call {call_id} has no terminal entry"));
        if self.expect.expect_state.is_some() {
            self.found
                .wrong_state
                .add(|| format!("call {call_id} never ended (unfinished)"));
        }
        self.left_open(call_id, 0, call);
    }

    /// What was found, once the journal ended (the calls never finished
    /// counted as such), beside what was expected.
    pub(super) fn finish(mut self) -> (Expectations, Found) {
        let mut open: Vec<(String, OpenCall)> =
            std::mem::take(&mut self.open).into_iter().collect();
        open.sort_by(|a, b| a.0.cmp(&b.0));
        for (call_id, call) in open {
            self.unfinished(&call_id, call);
        }
        (self.expect, self.found)
    }
}

/// One entry of a call offered to its lifecycle's next step.
fn lifecycle_step(
    found: &mut Found,
    lifecycle: &Lifecycle,
    call: &mut OpenCall,
    call_id: &str,
    view: &EntryView<'_>,
    content: &[u8],
) {
    if found.lifecycle_held.is_some() || !lifecycle.matches(call.step, &view.kind, content) {
        return;
    }
    call.step += 1;
    if call.step == lifecycle.len() {
        found.lifecycle_held = Some(call_id.to_string());
    } else if found
        .lifecycle_best
        .as_ref()
        .is_none_or(|(n, _)| call.step > *n)
    {
        found.lifecycle_best = Some((call.step, call_id.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(expect: Expectations, lines: &[&str]) -> Vec<super::super::Outcome> {
        let mut checker = Checker::new(expect);
        for (i, line) in lines.iter().enumerate() {
            let view: EntryView<'_> = serde_json::from_str(line).unwrap();
            checker.entry(i as u64 + 1, &view, line.as_bytes());
        }
        let (expect, found) = checker.finish();
        super::super::outcomes::of(&expect, &found)
    }

    const TWO_CALLS: [&str; 8] = [
        r#"{"kind":"intent","ts":"t1","call_id":"a","argv":[],"tool_gate":{}}"#,
        r#"{"kind":"intent","ts":"t2","call_id":"b","argv":[]}"#,
        r#"{"kind":"mcp_request","ts":"t3","call_id":"a","request_id":1,"method":"tools/call","name":"search"}"#,
        r#"{"kind":"mcp_decision","ts":"t4","call_id":"a","request_id":1,"decision":"approved"}"#,
        r#"{"kind":"mcp_response","ts":"t5","call_id":"a","request_id":1,"method":"tools/call","outcome":"result","duration_ms":5}"#,
        r#"{"kind":"mcp_request","ts":"t6","call_id":"a","request_id":2,"method":"tools/call","name":"rm"}"#,
        r#"{"kind":"terminal","ts":"t7","call_id":"b","state":"completed","duration_ms":9}"#,
        r#"{"kind":"mcp_request","ts":"t8","call_id":"b","request_id":1,"method":"tools/call","name":"late"}"#,
    ];

    #[test]
    fn a_call_held_for_a_decision_is_not_run_and_one_never_ended_is_unfinished() {
        let outcomes = run(
            Expectations {
                expect_tools: vec![Glob::new("search"), Glob::new("rm")],
                no_unapproved: true,
                no_unfinished: true,
                expect_state: Some("completed".into()),
                ..Expectations::default()
            },
            &TWO_CALLS,
        );
        let passed: Vec<(&str, bool)> = outcomes.iter().map(|o| (&*o.name, o.passed)).collect();
        assert_eq!(
            passed,
            [
                ("expect-tool search", true),
                ("expect-tool rm", false),
                ("expect-state completed", false),
                ("no-unfinished", false),
                ("no-unapproved", false),
            ],
            "{outcomes:?}"
        );
        assert!(
            outcomes[4]
                .detail
                .contains("rm in call a was left waiting for a decision")
        );
        assert!(outcomes[3].detail.contains("call a has no terminal entry"));
    }

    #[test]
    fn a_lifecycle_is_one_calls_and_not_pieced_from_two() {
        let lifecycle = |steps: &str| {
            let file = format!(r#"{{"lifecycle":{steps}}}"#);
            Some((Lifecycle::parse(&file).unwrap(), "f".to_string()))
        };
        // b's terminal comes after a's request: in the journal's order,
        // not in one call's.
        let pieced = run(
            Expectations {
                lifecycle: lifecycle(
                    r#"[{"kind":"mcp_request","name":"search"},{"kind":"terminal"}]"#,
                ),
                ..Expectations::default()
            },
            &TWO_CALLS,
        );
        assert!(!pieced[0].passed, "{pieced:?}");
        assert!(
            pieced[0].detail.contains("call a got furthest, to step 1"),
            "{pieced:?}"
        );
        let whole = run(
            Expectations {
                lifecycle: lifecycle(
                    r#"[{"kind":"intent"},{"kind":"terminal","state":"completed"}]"#,
                ),
                ..Expectations::default()
            },
            &TWO_CALLS,
        );
        assert!(whole[0].passed, "{whole:?}");
        assert!(whole[0].detail.starts_with("call b holds"), "{whole:?}");
    }
}
