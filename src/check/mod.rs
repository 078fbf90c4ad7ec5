//! `mcp-bound check JOURNAL`: the journal held to the run expected of
//! it. One streaming pass checks the chain as `verify` does (`--key`,
//! `--anchor`) and hands each entry to the expectations (`expect.rs`,
//! pure; the `--expect FILE` lifecycle in `lifecycle.rs`). The verify
//! result is the first outcome: a journal that fails verification fails
//! `check`; a torn last line is a warning, as in `verify`. Text, a line
//! per expectation, or JUnit XML (`junit.rs`). Exit 0 every expectation
//! held, 1 one did not, 2 usage or I/O.

mod expect;
mod junit;
mod lifecycle;
mod outcomes;

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, code};
use crate::journal::{self, Report};
use crate::shown::untrusted;
use expect::{Checker, Expectations, Glob};
use lifecycle::Lifecycle;

/// One expectation's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// As the command line spells it (`forbid-tool rm*`).
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

/// What `mcp-bound check` was asked (`cli::CheckArgs`, resolved).
pub(crate) struct CheckCommand {
    /// The journal, its key and an anchor.
    pub source: crate::verify::JournalSource,
    pub expect_tools: Vec<String>,
    pub forbid_tools: Vec<String>,
    pub max_duration: Option<Duration>,
    pub requests: bool,
    pub expect_state: Option<String>,
    pub no_unfinished: bool,
    pub no_unapproved: bool,
    pub expect: Option<PathBuf>,
    pub since: Option<String>,
    pub until: Option<String>,
    pub junit: bool,
}

impl CheckCommand {
    fn expectations(&self) -> Result<Expectations, Error> {
        let lifecycle = match &self.expect {
            None => None,
            Some(path) => {
                let shown = path.display();
                let text = std::fs::read_to_string(path)
                    .map_err(|e| Error::VerifyUsage(format!("--expect {shown}: {e}")))?;
                let lifecycle = Lifecycle::parse(&text)
                    .map_err(|e| Error::VerifyUsage(format!("--expect {shown}: {e}")))?;
                Some((lifecycle, shown.to_string()))
            }
        };
        let bound = |option: &str, text: &Option<String>| {
            text.as_deref()
                .map(|t| crate::log::time_bound(option, t))
                .transpose()
        };
        Ok(Expectations {
            expect_tools: self.expect_tools.iter().map(|g| Glob::new(g)).collect(),
            forbid_tools: self.forbid_tools.iter().map(|g| Glob::new(g)).collect(),
            max_duration: self.max_duration.map(|d| {
                let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
                (ms, humantime::format_duration(d).to_string())
            }),
            requests: self.requests,
            expect_state: self.expect_state.clone(),
            no_unfinished: self.no_unfinished,
            no_unapproved: self.no_unapproved,
            lifecycle,
            since: bound("--since", &self.since)?,
            until: bound("--until", &self.until)?,
        })
    }
}

/// The chain's own outcome: a break fails; a torn last line passes
/// with its warning.
fn verified(report: &Report, last_line: u64) -> Outcome {
    let (passed, detail) = report.said(last_line);
    Outcome {
        name: "verify".into(),
        passed,
        detail,
    }
}

/// A line per expectation, then the verdict.
fn text(outcomes: &[Outcome]) -> String {
    let mut out = String::new();
    for outcome in outcomes {
        let mark = if outcome.passed { "PASS" } else { "FAIL" };
        // A tool's name and a call's id are the journal's words.
        out.push_str(&format!(
            "{mark}  {}: {}\n",
            untrusted(&outcome.name),
            untrusted(&outcome.detail)
        ));
    }
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    out.push_str(&match failed {
        0 => format!("check: all {} expectations held\n", outcomes.len()),
        n => format!("check: {n} of {} expectations failed\n", outcomes.len()),
    });
    out
}

pub(crate) fn run(command: &CheckCommand) -> Result<i32, Error> {
    let shown = command.source.path.display();
    let key = crate::verify::key_given(command.source.key.as_deref())?;
    let mut checker = Checker::new(command.expectations()?);
    let file = std::fs::File::open(&command.source.path)
        .map_err(|e| Error::VerifyUsage(format!("{shown}: {e}")))?;
    let mut last_line = 0;
    let report = journal::verify_observed(
        file,
        key.as_ref(),
        command.source.anchor.as_deref(),
        &mut |seen| {
            last_line = seen.line;
            if let Some(view) = seen.view() {
                checker.entry(seen.line, &view, seen.content);
            }
        },
    )
    .map_err(|err| crate::verify::unusable(&command.source.path, err))?;
    let mut outcomes = vec![verified(&report, last_line)];
    let (expected, found) = checker.finish();
    outcomes.extend(outcomes::of(&expected, &found));
    let out = match command.junit {
        true => junit::document(&shown.to_string(), &outcomes),
        false => text(&outcomes),
    };
    crate::printed::print_or_fail(&out)?;
    Ok(match outcomes.iter().all(|o| o.passed) {
        true => code::VERIFY_OK,
        false => code::VERIFY_BROKEN,
    })
}
