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

use std::io::Write;
use std::path::PathBuf;

use crate::error::{Error, code};
use crate::journal::{self, Verdict};
use collect::Collected;
use html::Verified;

/// What `mcp-bound report` was asked (`cli::ReportArgs`, resolved).
pub struct ReportCommand {
    pub journal: PathBuf,
    /// `-` for stdout.
    pub output: PathBuf,
    pub key: Option<PathBuf>,
    pub anchor: Option<String>,
}

fn verified(report: &journal::Report, last_line: u64) -> Verified {
    let head = |report: &journal::Report| {
        report
            .head
            .as_ref()
            .map(|h| {
                format!(
                    ", journal {}, head seq={} h={}",
                    report.journal_id.as_deref().unwrap_or("?"),
                    h.seq,
                    h.h
                )
            })
            .unwrap_or_default()
    };
    match report.verdict(last_line) {
        Verdict::Intact => Verified {
            ok: true,
            text: format!(
                "Verified: {} entries intact{}",
                report.entries,
                head(report)
            ),
        },
        Verdict::TornTail(torn) => Verified {
            ok: true,
            text: format!(
                "Verified: {} entries intact{}; warning: line {}: {}",
                report.entries,
                head(report),
                torn.line,
                torn.detail
            ),
        },
        Verdict::Broken(broken) => Verified {
            ok: false,
            text: format!(
                "FAILED: the chain breaks at line {} ({}: {}); {} lines verified before it; what came after is shown, marked, and not verified",
                broken.line,
                broken.kind.as_str(),
                broken.detail,
                report.validated_lines
            ),
        },
    }
}

pub fn run(command: &ReportCommand) -> Result<i32, Error> {
    let shown = command.journal.display().to_string();
    let key = crate::verify::key_given(command.key.as_deref())?;
    let file = std::fs::File::open(&command.journal)
        .map_err(|e| Error::VerifyUsage(format!("{shown}: {e}")))?;
    let mut collected = Collected::default();
    let mut last_line = 0;
    let report =
        journal::verify_observed(file, key.as_ref(), command.anchor.as_deref(), &mut |seen| {
            last_line = seen.line;
            if let Some(view) = seen.view() {
                collected.entry(seen.line, seen.verified, &view, seen.content);
            }
        })
        .map_err(|err| crate::verify::unusable(&command.journal, err))?;
    let verified = verified(&report, last_line);
    let generated = crate::ids::rfc3339(std::time::SystemTime::now());
    let page = html::page(&shown, &verified, &collected.end(), &generated);
    let output = command.output.display();
    let written = if command.output.as_os_str() == "-" {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(page.as_bytes())
            .and_then(|()| stdout.flush())
    } else {
        crate::replace::replace_atomically(&command.output, &page)
    };
    written.map_err(|e| Error::VerifyUsage(format!("-o {output}: {e}")))?;
    if !verified.ok {
        eprintln!("mcp-bound report: {shown}: {}", verified.text);
        return Ok(code::VERIFY_BROKEN);
    }
    Ok(code::VERIFY_OK)
}
