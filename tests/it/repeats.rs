//! What filled stderr: the summary of its most frequent lines, in the
//! record, the exit echo and the journal, masked, in constant memory.

use crate::util;

use serde_json::json;
use util::Call;

/// 5,000 retry lines with varying numbers, then a distinct tail: the
/// folded retry line is the first repeat, counted exactly (the stream is
/// within the exact part), the echo shows it after the marker, and the
/// tail is unchanged.
#[test]
fn retry_lines_are_summarised_and_the_tail_is_unchanged() {
    let done = Call::sh(
        "i=0; while [ $i -lt 5000 ]; do i=$((i+1)); echo \"connection retry $i failed\" >&2; done; echo 'the distinct tail line' >&2; exit 1",
    )
    .opt(&["--tail-bytes", "200"])
    .run();
    done.expect_state("completed", 1);
    let first = done.field("/stderr/repeats/0");
    done.check(
        first["line"] == "connection retry # failed",
        &first.to_string(),
    );
    let (count, error) = (
        first["count"].as_u64().unwrap(),
        first["count_error"].as_u64().unwrap(),
    );
    done.check(count >= 5000 && count - error <= 5000, &first.to_string());
    let seen = done.field("/stderr/bytes_seen").as_u64().unwrap();
    done.expect("/stderr/repeats_counted/bytes", json!(seen))
        .expect("/stderr/repeats_counted/lines", json!(5001));
    let excerpt = done.field("/stderr/excerpt").as_str().unwrap().to_string();
    done.check(
        excerpt.ends_with("retry 5000 failed\nthe distinct tail line\n")
            && !excerpt.contains("not kept"),
        "the record's excerpt is the tail, as before",
    );
    let echo = done.stderr_text();
    let mut lines = echo.lines();
    done.check(
        lines
            .next()
            .is_some_and(|l| l.starts_with("[stderr truncated: kept last 200 of "))
            && lines.next().is_some_and(|l| {
                l.starts_with("[not kept: ")
                    && l.contains("mostly \"connection retry # failed\" ×5000")
                    && l.ends_with("; digits folded to #]")
                    && !l.contains("sampled")
            }),
        &echo,
    );
    done.check(
        echo.contains("retry 5000 failed\nthe distinct tail line\nmcp-bound: completed"),
        "the echo's tail is unchanged",
    );
}

/// A secret in a repeated line never shows in the summary: not in the
/// record, the echo or the journal's terminal entry.
#[test]
fn a_secret_in_a_repeated_line_is_masked_in_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let done = Call::sh(
        "i=0; while [ $i -lt 300 ]; do i=$((i+1)); echo \"login failed password=hunter$i\" >&2; done; exit 2",
    )
    .opt(&["--tail-bytes", "64", "--journal", journal.to_str().unwrap()])
    .run();
    done.expect_state("completed", 2).expect(
        "/stderr/repeats/0/line",
        json!("login failed password=[REDACTED]"),
    );
    let journal_text = std::fs::read_to_string(&journal).unwrap();
    done.check(
        journal_text.contains("\"repeats\":[{\"line\":\"login failed password=[REDACTED]\""),
        &journal_text,
    );
    for text in [done.stderr_text(), done.record().to_string(), journal_text] {
        done.check(!text.contains("hunter"), &text);
    }
}

/// A repeated line is kept to its first 200 bytes: a token cut there is
/// half a secret no pattern knows, and showed unmasked in the summary,
/// the echo and the journal. Now the cut is masked as the capture's are.
#[test]
fn a_secret_cut_where_a_repeated_line_is_kept_never_shows() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let line = format!(
        "{} key sk-ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij rejected",
        "a".repeat(180)
    );
    let done = Call::sh(&format!(
        "i=0; while [ $i -lt 50 ]; do i=$((i+1)); echo '{line}' >&2; done; exit 2"
    ))
    .opt(&["--tail-bytes", "64", "--journal", journal.to_str().unwrap()])
    .run();
    done.expect_state("completed", 2);
    let shown = done
        .field("/stderr/repeats/0/line")
        .as_str()
        .unwrap()
        .to_string();
    done.check(shown.ends_with("[cut]"), &shown);
    let journal_text = std::fs::read_to_string(&journal).unwrap();
    for text in [done.stderr_text(), done.record().to_string(), journal_text] {
        done.check(!text.contains("sk-ABCDEF"), &text);
    }
}

/// 1 GiB of distinct lines: mcp-bound's memory stays flat, the summary is
/// a sample (it says so), and nothing repeats.
#[test]
fn memory_stays_flat_over_a_gib_of_distinct_lines() {
    let mut run = Call::sh(
        "head -c 805306368 /dev/urandom | base64 -w 100 >&2; echo DONE; read answer || true",
    )
    .start();
    run.wait_for_line("DONE");
    let rss = util::vm_hwm_kib(run.pid());
    run.close_stdin();
    let done = run.finish();
    done.expect_state("completed", 0);
    let seen = done.field("/stderr/bytes_seen").as_u64().unwrap();
    let counted = done
        .field("/stderr/repeats_counted/bytes")
        .as_u64()
        .unwrap();
    done.check(seen > 1 << 30, &format!("{seen} bytes seen"));
    done.check(
        counted < seen / 100,
        &format!("{counted} of {seen} bytes counted"),
    );
    done.check(rss < 32 * 1024, &format!("peak RSS {rss} KiB"));
    done.expect("/stderr/repeats", json!([]));
}

/// Under --live the echo is the summary line only: what filled stderr is
/// said there.
#[test]
fn under_live_the_summary_line_says_what_filled_stderr() {
    let done = Call::sh(
        "i=0; while [ $i -lt 5000 ]; do i=$((i+1)); echo \"backoff $i ms\" >&2; done; exit 3",
    )
    .opt(&["--live", "--live-rate", "1K", "--live-burst", "1K"])
    .run();
    done.expect_state("completed", 3);
    let summary = done
        .stderr_text()
        .lines()
        .find(|line| line.starts_with("mcp-bound: completed"))
        .unwrap_or_default()
        .to_string();
    done.check(
        summary.contains(" dropped, mostly \"backoff # ms\" ×5000"),
        &summary,
    );
}
