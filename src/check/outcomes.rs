//! What `check` found, and each expectation's outcome said from it:
//! passed or not, with the reason a person reads (how many, and the
//! first or the worst named).

use super::Outcome;
use super::expect::{Expectations, Found, Seen};

fn times(n: u64) -> String {
    match n {
        1 => "once".to_string(),
        n => format!("{n} times"),
    }
}

/// "1 call", "2 calls".
fn counted(n: u64, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    }
}

/// "2 times, first: X"
fn said(seen: &Seen) -> String {
    format!("{}, first: {}", times(seen.count), seen.first())
}

fn outcome(name: String, passed: bool, detail: String) -> Outcome {
    Outcome {
        name,
        passed,
        detail,
    }
}

/// Each expectation asked, in the order `--help` lists the options.
pub(super) fn of(expect: &Expectations, found: &Found) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    tools(expect, found, &mut outcomes);
    outcomes.extend(max_duration(expect, found));
    ends(expect, found, &mut outcomes);
    outcomes.extend(lifecycle(expect, found));
    outcomes
}

/// --expect-tool and --forbid-tool.
fn tools(expect: &Expectations, found: &Found, outcomes: &mut Vec<Outcome>) {
    for ((glob, called), denied) in expect
        .expect_tools
        .iter()
        .zip(&found.called)
        .zip(&found.denied)
    {
        let denials = match denied {
            0 => String::new(),
            n => format!("; denied {} (a denial is not a call)", times(*n)),
        };
        let detail = match called.count {
            0 => format!(
                "no call to a tool matching {} reached the server{denials}",
                glob.text
            ),
            _ => format!("called {}{denials}", said(called)),
        };
        outcomes.push(outcome(
            format!("expect-tool {}", glob.text),
            called.count > 0,
            detail,
        ));
    }
    for (glob, forbidden) in expect.forbid_tools.iter().zip(&found.forbidden) {
        let detail = match forbidden.count {
            0 => format!(
                "no call to a tool matching {} reached the server",
                glob.text
            ),
            _ => format!("called {}", said(forbidden)),
        };
        let name = format!("forbid-tool {}", glob.text);
        outcomes.push(outcome(name, forbidden.count == 0, detail));
    }
}

fn max_duration(expect: &Expectations, found: &Found) -> Option<Outcome> {
    let (limit, typed) = expect.max_duration.as_ref()?;
    let what = if expect.requests { "requests" } else { "calls" };
    let detail = match &found.worst {
        None => format!("no {what} with a duration"),
        Some((ms, worst)) => format!(
            "{} of the {what} over {typed}; the longest: {worst}, {}",
            found.over,
            crate::units::short_duration(*ms)
        ),
    };
    let passed = found.worst.as_ref().is_none_or(|(ms, _)| ms <= limit);
    let name = match expect.requests {
        true => format!("max-duration {typed} (requests)"),
        false => format!("max-duration {typed}"),
    };
    Some(outcome(name, passed, detail))
}

/// --expect-state, --no-unfinished, --no-unapproved: how the calls ended.
fn ends(expect: &Expectations, found: &Found, outcomes: &mut Vec<Outcome>) {
    let calls = format!("{} checked", counted(found.calls, "call"));
    if let Some(state) = &expect.expect_state {
        let seen = &found.wrong_state;
        let detail = match seen.count {
            0 => format!("{calls}, every one ended {state}"),
            n => format!(
                "{} did not end {state}; first: {}",
                counted(n, "call"),
                seen.first()
            ),
        };
        outcomes.push(outcome(
            format!("expect-state {state}"),
            seen.count == 0,
            detail,
        ));
    }
    if expect.no_unfinished {
        let seen = &found.unfinished;
        let detail = match seen.count {
            0 => format!("{calls}, every one has its terminal entry"),
            n => format!("{} unfinished; first: {}", counted(n, "call"), seen.first()),
        };
        outcomes.push(outcome("no-unfinished".into(), seen.count == 0, detail));
    }
    if expect.no_unapproved {
        let seen = &found.unapproved;
        let detail = match seen.count {
            0 => format!("{calls}, every tool call that reached the server was approved"),
            n => format!(
                "{} not approved; first: {}",
                counted(n, "tool call"),
                seen.first()
            ),
        };
        outcomes.push(outcome("no-unapproved".into(), seen.count == 0, detail));
    }
}

/// --expect FILE.
fn lifecycle(expect: &Expectations, found: &Found) -> Option<Outcome> {
    let (lifecycle, file) = expect.lifecycle.as_ref()?;
    let detail = match (&found.lifecycle_held, &found.lifecycle_best) {
        (Some(call), _) => format!("call {call} holds all {} steps in order", lifecycle.len()),
        (None, Some((steps, call))) => format!(
            "no call holds the {} steps; call {call} got furthest, to step {steps}, and never had the next: {}",
            lifecycle.len(),
            lifecycle.describe(*steps)
        ),
        (None, None) => format!(
            "no call holds the {} steps; none matched the first: {}",
            lifecycle.len(),
            lifecycle.describe(0)
        ),
    };
    let name = format!("expect {file}");
    Some(outcome(name, found.lifecycle_held.is_some(), detail))
}
