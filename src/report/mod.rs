//! `mcp-bound report JOURNAL -o FILE`: one self-contained HTML page of a
//! journal. One streaming pass checks the chain as `verify` does
//! (`--key`, `--anchor`) and gathers what the page shows
//! (`collect.rs`, pure, bounded by what is shown; percentiles from a
//! sketch, `sketch.rs`); the page (`html.rs`, with its style and script
//! beside it) draws a timeline per session (`svg.rs`). Exit 0, 1 the
//! chain is broken (the page says where, and the rows after it are
//! marked), 2 usage or I/O.

mod collect;
mod html;
mod sketch;
mod svg;

use std::path::PathBuf;

use crate::error::{Error, code};
use crate::journal;
use collect::Collected;
use html::Verified;

/// What `mcp-bound report` was asked (`cli::ReportArgs`, resolved).
pub(crate) struct ReportCommand {
    /// The journal, its key and an anchor.
    pub source: crate::verify::JournalSource,
    /// Where the HTML goes (- for stdout).
    pub output: PathBuf,
}

fn verified(report: &journal::Report, last_line: u64) -> Verified {
    let (ok, said) = report.said(last_line);
    let text = match ok {
        true => format!("Verified: {said}"),
        false => format!("FAILED: {said}"),
    };
    Verified { ok, text }
}

pub(crate) fn run(command: &ReportCommand) -> Result<i32, Error> {
    let shown = command.source.path.display().to_string();
    let key = crate::verify::key_given(command.source.key.as_deref())?;
    let file = std::fs::File::open(&command.source.path)
        .map_err(|e| Error::VerifyUsage(format!("{shown}: {e}")))?;
    let mut collected = Collected::default();
    let mut last_line = 0;
    let report = journal::verify_observed(
        file,
        key.as_ref(),
        command.source.anchor.as_deref(),
        &mut |seen| {
            last_line = seen.line;
            if let Some(view) = seen.view() {
                collected.entry(seen.line, seen.verified, &view, seen.content);
            }
        },
    )
    .map_err(|err| crate::verify::unusable(&command.source.path, err))?;
    let verified = verified(&report, last_line);
    let generated = crate::ids::rfc3339(std::time::SystemTime::now());
    let page = html::page(&shown, &verified, &collected.end(), &generated);
    if command.output.as_os_str() == "-" {
        crate::printed::print_or_fail(&page)?;
    } else {
        crate::replace::replace_atomically(&command.output, &page)
            .map_err(|e| Error::VerifyUsage(format!("-o {}: {e}", command.output.display())))?;
    }
    if !verified.ok {
        eprintln!("mcp-bound report: {shown}: {}", verified.text);
        return Ok(code::VERIFY_BROKEN);
    }
    Ok(code::VERIFY_OK)
}
