//! What the watchdog writes for a call whose mcp-bound died (it runs in
//! the forked watchdog, after the tree was killed):
//! - mcp-bound had written its final words and said so: nothing;
//! - it had begun to write them (the watchdog heard them first): what is
//!   missing of them, the record if the file does not hold a final one yet,
//!   the journal's terminal entry if none stands past where it was to go;
//! - it died before: `supervisor_killed`, in the record and the journal,
//!   with what its last milestone knew.

use std::time::{Instant, SystemTime};

use super::records::{holds_final_record, write_record_file, write_record_text};
use crate::contain::{FinalWords, LastWords};
use crate::ids::rfc3339;
use crate::journal::{self, Journal};
use crate::record::{Milestone, Record};
use crate::settings::Settings;
use crate::units::millis;

/// `base`: the record as it was before dispatch; `origin`: when the call
/// started (the events' zero).
pub(super) fn speak(
    settings: &Settings,
    journal: Option<&Journal>,
    base: Record,
    origin: Instant,
    words: LastWords,
) {
    match words.final_words {
        Some(FinalWords { written: true, .. }) => {}
        Some(final_words) => complete(settings, journal, &base.ids.call_id, &final_words),
        None => {
            let milestone = words
                .milestone
                .and_then(|text| serde_json::from_str::<Milestone>(&text).ok());
            killed(settings, journal, base, milestone, millis(origin.elapsed()));
        }
    }
}

/// mcp-bound died while writing its final words: write what is missing
/// of them, as mcp-bound would have.
fn complete(settings: &Settings, journal: Option<&Journal>, call_id: &str, words: &FinalWords) {
    if let Some(path) = &settings.record.path
        && !holds_final_record(path)
    {
        let _ = write_record_text(path, &format!("{}\n", words.record));
    }
    if let Some(journal) = journal {
        let there = journal
            .has_terminal_after(call_id, words.journal_len.unwrap_or(0))
            .unwrap_or(false);
        if !there {
            let _ = journal.append(journal::Entry::RawTerminal(&words.terminal));
        }
    }
}

/// mcp-bound died before its final words: say so, with what it knew.
fn killed(
    settings: &Settings,
    journal: Option<&Journal>,
    mut record: Record,
    milestone: Option<Milestone>,
    t_ms: u64,
) {
    record.supervisor_killed(milestone, t_ms);
    record.times.ended_at = Some(rfc3339(SystemTime::now()));
    if let Some(journal) = journal {
        let _ = journal.append(journal::Entry::Terminal(&journal::Terminal::from_record(
            &record, None,
        )));
    }
    if let Some(path) = &settings.record.path {
        let _ = write_record_file(path, &record);
    }
}
