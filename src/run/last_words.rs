//! What the watchdog writes for a call whose mcp-bound died (it runs in
//! the forked watchdog, after the tree was killed):
//! - mcp-bound had written its final words and said so: nothing;
//! - it had begun to write them (the watchdog heard them first): what is
//!   missing of them, the record if the file does not hold a final one yet,
//!   the journal's terminal entry if none stands past where it was to go;
//! - it died before: `supervisor_killed`, in the record and the journal,
//!   with what its last milestone knew.
//!
//! On Windows the watchdog is mcp-bound started again (the heir), which
//! has nothing in memory: it is told a [`Brief`] first, and [`heir`] is
//! its whole life.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

use super::records::{holds_final_record, write_record_file, write_record_text};
use crate::contain::{FinalWords, LastWords};
use crate::ids::rfc3339;
use crate::journal::{self, Journal};
use crate::record::{Milestone, Record};
use crate::settings::Settings;
use crate::units::millis;

/// Where the last words go: the record's file and the journal.
pub(super) struct Destination<'a> {
    pub record: Option<&'a Path>,
    pub journal: Option<&'a Journal>,
}

/// `base`: the record as it was before dispatch; `t_ms`: how long the
/// call had run when mcp-bound was found dead.
pub(super) fn speak(to: &Destination<'_>, base: Record, t_ms: u64, words: LastWords) {
    match words.final_words {
        Some(FinalWords { written: true, .. }) => {}
        Some(final_words) => complete(to, &base.ids.call_id, &final_words),
        None => {
            let milestone = words
                .milestone
                .and_then(|text| serde_json::from_str::<Milestone>(&text).ok());
            killed(to, base, milestone, t_ms);
        }
    }
}

/// What the Windows watchdog is told first: what it needs to write the
/// last words, which a fork would have in memory.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Brief {
    /// --record's file.
    pub record: Option<PathBuf>,
    /// --journal's file, and its key's (read again by the heir).
    pub journal: Option<PathBuf>,
    pub journal_key: Option<PathBuf>,
    /// How long the call had run when the brief was written; the heir
    /// counts on from when it read it (its start, a few milliseconds,
    /// is not counted).
    pub ran_ms: u64,
    /// The record as it was before dispatch.
    pub base: Record,
}

impl Brief {
    pub(super) fn new(settings: &Settings, base: Record, origin: Instant) -> Brief {
        let journal = settings.journal.as_ref();
        Brief {
            record: settings.record.path.clone(),
            journal: journal.map(|j| j.path.clone()),
            journal_key: journal.and_then(|j| j.key.clone()),
            ran_ms: millis(origin.elapsed()),
            base,
        }
    }
}

/// The Windows watchdog's life (`mcp-bound-watchdog heir HANDLE`): read
/// the line until mcp-bound says done, or goes away; then, the tree
/// ended, write the last words the brief makes possible.
pub(crate) fn heir(args: &[std::ffi::OsString]) -> i32 {
    let line = crate::sys::HEIR
        .zip(args.get(2))
        .and_then(|(heirs, value)| (heirs.line)(&value.to_string_lossy()).ok());
    let Some(line) = line else {
        return crate::error::code::OWN_FAILURE;
    };
    let read_at = Instant::now();
    let Some((brief, words)) = crate::contain::heir_watch(line) else {
        return 0;
    };
    let Ok(brief) = serde_json::from_str::<Brief>(&brief) else {
        return crate::error::code::OWN_FAILURE;
    };
    let key = match &brief.journal_key {
        Some(path) => journal::Key::load(path).ok(),
        None => Some(journal::Key::Plain),
    };
    let journal = brief
        .journal
        .clone()
        .zip(key)
        .map(|(path, key)| Journal::new(path, key));
    let to = Destination {
        record: brief.record.as_deref(),
        journal: journal.as_ref(),
    };
    let t_ms = brief.ran_ms + millis(read_at.elapsed());
    speak(&to, brief.base, t_ms, words);
    0
}

/// mcp-bound died while writing its final words: write what is missing
/// of them, as mcp-bound would have.
fn complete(to: &Destination<'_>, call_id: &str, words: &FinalWords) {
    if let Some(path) = to.record
        && !holds_final_record(path)
    {
        let _ = write_record_text(path, &format!("{}\n", words.record));
    }
    if let Some(journal) = to.journal {
        let there = journal
            .has_terminal_after(call_id, words.journal_len.unwrap_or(0))
            .unwrap_or(false);
        if !there {
            let _ = journal.append(journal::Entry::RawTerminal(&words.terminal));
        }
    }
}

/// mcp-bound died before its final words: say so, with what it knew.
fn killed(to: &Destination<'_>, mut record: Record, milestone: Option<Milestone>, t_ms: u64) {
    record.supervisor_killed(milestone, t_ms);
    record.times.ended_at = Some(rfc3339(SystemTime::now()));
    if let Some(journal) = to.journal {
        // Bounded as mcp-bound's own end is: another appender's lock
        // holds the last words up for the grace at most.
        // (mcp-bound is dead: the wait is cut to the grace at once).
        let grace = Duration::from_millis(record.limits.grace_ms);
        let terminal = journal::Terminal::from_record(&record, None);
        let written = journal.append_at_the_end(journal::Entry::Terminal(&terminal), grace, true);
        if let Err(err) = written {
            record.mcp_bound.journal = Some(crate::record::TerminalWrite {
                terminal_written: false,
                error: Some(err.to_string()),
            });
        }
    }
    if let Some(path) = to.record {
        let _ = write_record_file(path, &record);
    }
}
