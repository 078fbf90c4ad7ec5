//! The record file as a template: each run writes a record of
//! its own (a host that respawns a server, a client's probe sibling), and
//! --record-keep bounds how many a template leaves behind, never touching
//! one still in flight.

use crate::util;

use serde_json::Value;
use util::Call;

/// The records in `dir` whose names start with `prefix`, as values.
fn records(dir: &std::path::Path, prefix: &str) -> Vec<(String, Value)> {
    let mut found: Vec<(String, Value)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(e.path()).ok()?;
            name.starts_with(prefix)
                .then(|| (name, util::parse_json(text.as_bytes()).unwrap()))
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// Two runs of one command with one template: two records, each named by
/// its own call id (the second does not overwrite the first), each valid.
#[test]
fn each_run_of_a_template_writes_its_own_record() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("gh-{call_id}.json");
    for _ in 0..2 {
        Call::new(&["true"])
            .without_record()
            .opt(&["--record", template.to_str().unwrap()])
            .run()
            .expect_code(0);
    }
    let found = records(dir.path(), "gh-");
    assert_eq!(found.len(), 2, "{found:?}");
    for (name, record) in &found {
        util::check_schema(record);
        assert_eq!(
            name,
            &format!("gh-{}.json", record["call_id"].as_str().unwrap())
        );
        assert_eq!(record["state"], "completed");
    }
    // {pid} and escaped braces.
    let other = dir.path().join("p{{x}}-{pid}.json");
    Call::new(&["true"])
        .without_record()
        .opt(&["--record", other.to_str().unwrap()])
        .run();
    let found = records(dir.path(), "p{x}-");
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].0,
        format!("p{{x}}-{}.json", found[0].1["mcp_bound"]["pid"])
    );
}

/// --record-keep N leaves the newest N final records a template made, and
/// never removes a record still in flight (another run of the command).
#[test]
fn record_keep_removes_the_oldest_final_records_and_never_one_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("srv-{call_id}.json");
    let unrelated = dir.path().join("srv-notes.txt");
    std::fs::write(&unrelated, "mine").unwrap();
    // A run still in flight (it waits on its stdin) while the others end.
    let running = Call::new(&["sh", "-c", "read x"])
        .without_record()
        .opt(&["--record", template.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .start();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while records(dir.path(), "srv-c").is_empty() {
        assert!(std::time::Instant::now() < deadline, "no in-flight record");
        std::thread::yield_now();
    }
    for _ in 0..4 {
        Call::new(&["true"])
            .without_record()
            .opt(&["--record", template.to_str().unwrap(), "--record-keep", "2"])
            .run()
            .expect_code(0);
    }
    let states: Vec<String> = records(dir.path(), "srv-c")
        .iter()
        .map(|(_, r)| r["state"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        states.iter().filter(|s| *s == "completed").count(),
        2,
        "the two newest final records: {states:?}"
    );
    assert_eq!(
        states.iter().filter(|s| *s == "dispatched").count(),
        1,
        "the running one"
    );
    assert!(
        util::exists(&unrelated),
        "what the template does not make is left alone"
    );
    // Its stdin closed, `read` fails: exit 1.
    running.finish().expect_code(1);
}

/// A template that cannot be one, and --record-keep without a template:
/// one line, 125, nothing run. From the environment, --record-keep is a
/// default, never an error.
#[test]
fn a_bad_template_or_a_keep_without_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    for (options, why) in [
        (
            vec!["--record", "r-{nope}.json"],
            "unknown placeholder {nope}",
        ),
        (vec!["--record", "r-{call_id.json"], "unclosed"),
        (vec!["--record", "d-{pid}/r.json"], "file name"),
        (
            vec!["--record", "plain.json", "--record-keep", "3"],
            "--record-keep",
        ),
        (vec!["--record-keep", "3"], "--record-keep"),
        (
            vec!["--record", "r-{call_id}.json", "--record-keep", "0"],
            "--record-keep",
        ),
    ] {
        let done = Call::new(&["touch", ran.to_str().unwrap()])
            .without_record()
            .opt(&options)
            .run();
        done.expect_code(125);
        let stderr = done.stderr_text();
        done.check(
            stderr.lines().count() == 1 && stderr.contains(why),
            &format!("{options:?}: {why}"),
        );
        done.check(!util::exists(&ran), "nothing ran");
    }
    let done = Call::new(&["true"]).env("MCP_BOUND_RECORD_KEEP", "3").run();
    done.expect_state("completed", 0);
    done.check(done.record.is_some(), "the record is where --record says");
}

/// A call id goes into a --record template's file name, so it is kept to
/// a set that names no other directory, here or on Windows: `../x`
/// wrote the record outside the template's directory. Each such id is
/// refused, one line, nothing run, nothing written.
#[test]
fn a_call_id_that_would_leave_the_templates_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records");
    std::fs::create_dir(&records).unwrap();
    let template = records.join("{call_id}.json");
    let ran = dir.path().join("ran");
    for id in [
        "../x", "..", ".", "a/b", "a\\b", "c:x", "a*b", "a?b", "a|b", "a<b>",
    ] {
        let done = Call::new(&["touch", ran.to_str().unwrap()])
            .without_record()
            .opt(&["--record", template.to_str().unwrap(), "--call-id", id])
            .run();
        done.expect_code(125);
        let stderr = done.stderr_text();
        done.check(
            stderr.lines().count() == 1 && stderr.contains("--call-id"),
            &format!("{id}: one line naming the option: {stderr}"),
        );
        done.check(!util::exists(&ran), &format!("{id}: nothing ran"));
    }
    let outside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(outside, ["records"], "nothing written beside the template");
    // An id of the safe set names a file in the template's directory.
    let done = Call::new(&["true"])
        .without_record()
        .opt(&[
            "--record",
            template.to_str().unwrap(),
            "--call-id",
            "host-call_1.2+x@y",
        ])
        .run();
    done.expect_code(0);
    done.check(
        util::exists(&records.join("host-call_1.2+x@y.json")),
        "the record is in the template's directory",
    );
}

/// --record-keep looks at each file its template could make, so it must
/// not trust them: a 1 GiB file was read whole (1 GiB of memory at every
/// exit), and a FIFO swapped in blocked the exit for good. Now a few KiB
/// at most are read, without blocking or following a link, and what is
/// not a record of ours is left alone.
#[test]
fn record_keep_reads_a_few_kib_and_never_blocks_on_what_it_finds() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("srv-{call_id}.json");
    let big = dir.path().join("srv-cbig.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    util::mkfifo(&dir.path().join("srv-cfifo.json"));
    let script = "import resource, subprocess, sys\n\
        code = subprocess.run(sys.argv[1:]).returncode\n\
        print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)";
    let output = std::process::Command::new("python3")
        .args(["-c", script, util::BIN])
        .args([
            "--record",
            template.to_str().unwrap(),
            "--record-keep",
            "1",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    let mut words = text.split_whitespace();
    let code: i32 = words.next().unwrap().parse().unwrap();
    let peak_kib: u64 = words.next().unwrap().parse().unwrap();
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&output.stderr));
    assert!(peak_kib < 64 * 1024, "mcp-bound's peak RSS {peak_kib} KiB");
    assert!(util::exists(&big), "not ours: left alone");
    assert!(util::exists(&dir.path().join("srv-cfifo.json")));
}
