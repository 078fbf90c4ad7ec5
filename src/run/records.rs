//! The record file: replaced atomically, a final record told apart from
//! one written while the call was in flight, and, with a `--record`
//! template and `--record-keep N`, the oldest final records it made
//! removed, so that a record per run does not pile up.

use std::fs;
use std::io;
use std::path::Path;

use crate::record::{Record, RecordTemplate};
use crate::sys;

/// Replace the record at `path` atomically: a private temporary file in the
/// same directory, synced, then renamed over. A symlink at `path` is
/// refused rather than followed or replaced.
pub(super) fn write_record_file(path: &Path, record: &Record) -> io::Result<()> {
    write_record_text(path, &record.to_line())
}

/// As [`write_record_file`], for a record already written out as a line.
pub(super) fn write_record_text(path: &Path, line: &str) -> io::Result<()> {
    crate::replace::replace_atomically(path, line)
}

/// Whether the record file holds a call's final record (not the one
/// written while it was in flight). Only a regular file of ours is read,
/// and only its first [`HEAD`] bytes: `state` is the record's fourth
/// field, after the schema and two ids of at most 256 bytes each.
pub(super) fn holds_final_record(path: &Path) -> bool {
    sys::read_own_head(path, HEAD)
        .and_then(|head| state_of(&head).map(str::to_string))
        .is_some_and(|state| !matches!(state.as_str(), "dispatched" | "awaiting_approval"))
}

/// How much of a file `--record-keep` reads to tell a final record.
const HEAD: usize = 4096;

/// The `state` a record's opening bytes name, if they open a record of
/// ours. A quote inside a JSON string is escaped, so the first
/// `"state":"` is the record's own key.
fn state_of(head: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(head)
        .or_else(|e| std::str::from_utf8(&head[..e.valid_up_to()]))
        .ok()?;
    let rest = text.strip_prefix("{\"schema\":\"mcp-bound/record/v1\",")?;
    let (_, after) = rest.split_once("\"state\":\"")?;
    after.split_once('"').map(|(state, _)| state)
}

/// Keep the newest `keep` final records `template` made (this run's
/// among them), removing the others. A record still in flight (another
/// run of the same command, a probe sibling) is never touched, nor is
/// anything the template does not make. Best effort: a file that cannot
/// be read or removed stays.
pub(super) fn keep_newest(template: &RecordTemplate, keep: usize) {
    let Ok(entries) = fs::read_dir(template.dir()) else {
        return;
    };
    let mut finals: Vec<(std::time::SystemTime, std::path::PathBuf)> = entries
        .flatten()
        .filter(|entry| template.makes(&entry.file_name()))
        .filter_map(|entry| {
            let meta = entry.metadata().ok()?;
            let path = entry.path();
            let modified = meta.modified().ok()?;
            (meta.is_file() && holds_final_record(&path)).then_some((modified, path))
        })
        .collect();
    finals.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    for (_, path) in finals.into_iter().skip(keep) {
        let _ = fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_is_read_from_the_opening_bytes_of_a_record_of_ours() {
        let record = br#"{"schema":"mcp-bound/record/v1","call_id":"c_\"state\":\"x","session_id":null,"state":"completed","exit":0}"#;
        assert_eq!(state_of(record), Some("completed"));
        assert_eq!(state_of(&record[..98]), Some("completed"));
        assert_eq!(state_of(&record[..90]), None, "cut before its end");
        assert_eq!(state_of(br#"{"state":"completed"}"#), None, "not ours");
        assert_eq!(state_of(&[0u8; 64]), None);
    }
}
