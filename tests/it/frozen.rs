//! A journal written by an earlier binary (`tests/fixtures/journal-v1.jsonl`,
//! frozen: every kind of entry v1 had, a covered round, a restart, a
//! drift and a recovered torn tail) keeps reading: `verify`, each `log`
//! view, `check` and `report` take it as they did. Schema changes are
//! additive (`v: 1` stays), so an upgrade never breaks an old journal.
//! Never write this file again with a newer binary: that is its point.

use crate::util;

use std::path::PathBuf;

fn frozen() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/journal-v1.jsonl"
    ))
}

#[test]
fn a_journal_of_the_first_version_keeps_verifying_and_reading() {
    let journal = frozen();
    let j = journal.to_str().unwrap();
    util::check_journal_schema(&journal);
    let (ok, report) = util::verify_report(&journal);
    assert!(ok, "verify: {report}");
    assert_eq!(report["entries"], 51, "{report}");
    for args in [
        vec![j],
        vec!["--sessions", j],
        vec!["--requests", j],
        vec!["--json", j],
        vec!["--json", "--requests", j],
    ] {
        let (code, out, err) = util::subcommand("log", &args);
        assert_eq!(code, 0, "log {args:?}: {err}");
        assert!(err.is_empty(), "log {args:?}: {err}");
        assert!(out.lines().count() > 3, "log {args:?}: {out}");
    }
    let (code, out, err) = util::subcommand(
        "check",
        &["--expect-tool", "read_file", "--forbid-tool", "rm", j],
    );
    assert_eq!(code, 0, "check: {out}{err}");
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let (code, _, err) = util::subcommand("report", &[j, "-o", page.to_str().unwrap()]);
    assert_eq!(code, 0, "report: {err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("51 entries"), "the verify line");
}
