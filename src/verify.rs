//! The `verify` command: run the journal check and report it, as text or
//! as one JSON object. Also what every reader of a journal shares: the
//! journal, its key and an anchor (`JournalSource`), the key loaded, and
//! a journal that cannot be read said as one.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{Error, code};
use crate::journal::{self, Key, Report, VerifyError};
use crate::shown::untrusted;

/// The journal a reader reads, with its key and an anchor (`verify`,
/// `log`, `check` and `report` take it alike).
pub(crate) struct JournalSource {
    pub path: PathBuf,
    /// `--key FILE`: the key of a keyed journal.
    pub key: Option<PathBuf>,
    /// `--anchor HEX`: a head recorded earlier that must still be in it.
    pub anchor: Option<String>,
}

/// What `mcp-bound verify` was asked.
pub(crate) struct VerifyCommand {
    pub source: JournalSource,
    /// `--json`: one JSON object.
    pub json: bool,
}

/// `--key FILE`, loaded (for `verify` and the journal's readers).
pub(crate) fn key_given(path: Option<&Path>) -> Result<Option<Key>, Error> {
    path.map(|path| {
        Key::load(path).map_err(|e| Error::VerifyUsage(format!("--key {}: {e}", path.display())))
    })
    .transpose()
}

/// Why the journal could not be read at all (exit 2), naming it.
pub(crate) fn unusable(journal: &Path, err: VerifyError) -> Error {
    match err {
        VerifyError::Io(e) => Error::VerifyUsage(format!("{}: {e}", journal.display())),
        VerifyError::Key(text) => Error::VerifyUsage(format!("{}: {text}", journal.display())),
    }
}

/// Verify and print; the result is the exit code.
pub(crate) fn run(command: &VerifyCommand) -> Result<i32, Error> {
    let source = &command.source;
    let key = key_given(source.key.as_deref())?;
    let report = journal::verify(&source.path, key.as_ref(), source.anchor.as_deref())
        .map_err(|err| unusable(&source.path, err))?;
    let text = if command.json {
        let mut line = serde_json::to_string(&report).expect("a report serializes");
        line.push('\n');
        line
    } else {
        render(&report)
    };
    crate::printed::print_or_fail(&text)?;
    Ok(if report.ok {
        code::VERIFY_OK
    } else {
        code::VERIFY_BROKEN
    })
}

/// Warnings first, then the verdict on the last line.
pub(crate) fn render(report: &Report) -> String {
    let mut out = String::new();
    for call in &report.unfinished {
        let pid = call.pid.map_or("?".to_string(), |p| p.to_string());
        let _ = writeln!(
            out,
            "WARNING: unfinished call {} (pid {pid}, intent at {}, line {}): no terminal entry; its outcome is unknown",
            untrusted(&call.call_id),
            untrusted(&call.ts),
            call.line
        );
    }
    for request in &report.unfinished_requests {
        let what = if request.task {
            "its task's end (mcp_task) never came; the task may still be running"
        } else {
            "no mcp_response entry; it may have acted"
        };
        let _ = writeln!(
            out,
            "WARNING: unfinished request {} {} of call {} (at {}, line {}): {what}",
            untrusted(&request.method),
            untrusted(&request.request_id),
            untrusted(&request.call_id),
            untrusted(&request.ts),
            request.line
        );
    }
    if report.final_newline_missing && report.broken.is_none() {
        let _ = writeln!(
            out,
            "WARNING: the last entry (line {}) lacks its final newline: the write stopped after a whole entry; the next append finishes the line",
            report.validated_lines
        );
    }
    match (&report.broken, &report.head) {
        (Some(broken), _) => {
            let verified = match report.validated_lines {
                0 => "no line verified".to_string(),
                1 => "line 1 verified".to_string(),
                n => format!("lines 1-{n} verified"),
            };
            let _ = writeln!(
                out,
                "FAILED: line {}: {}: {} ({verified})",
                broken.line,
                broken.kind.as_str(),
                untrusted(&broken.detail),
            );
        }
        (None, Some(head)) => {
            let _ = writeln!(
                out,
                "OK: {} entries, journal {}, head seq={} h={}",
                report.entries,
                untrusted(report.journal_id.as_deref().unwrap_or("?")),
                head.seq,
                head.h
            );
        }
        (None, None) => {}
    }
    out
}
