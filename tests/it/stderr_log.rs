//! `--stderr-log`: the helper's stderr on disk, masked, bounded by
//! rotation, written without ever stalling the drain.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use util::Call;

fn files(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let file = p.file_name().unwrap().to_string_lossy().into_owned();
            file == name || (file.starts_with(&format!("{name}.")) && !file.ends_with(".lock"))
        })
        .collect();
    found.sort();
    found
}

fn read(path: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned()
}

#[test]
fn a_200_megabyte_flood_stays_within_size_times_keep_plus_one() {
    let call = Call::sh("yes helper-diagnostic-line | head -c 200000000 >&2; echo LAST-LINE >&2");
    let log = call.path("server.log");
    let done = call
        .opt(&[
            "--stderr-log",
            log.to_str().unwrap(),
            "--stderr-log-size",
            "1M",
            "--stderr-log-keep",
            "2",
        ])
        .run();
    done.expect_state("completed", 0)
        .expect("/stderr_log/bytes_dropped", json!(0))
        .expect("/stderr_log/error", Value::Null)
        .expect("/stderr_log/path", json!(log.to_str().unwrap()));
    let dir = log.parent().unwrap();
    let kept = files(dir, "server.log");
    done.check(
        kept.len() == 3,
        &format!("PATH, PATH.1, PATH.2 and no more: {kept:?}"),
    );
    for file in &kept {
        let len = std::fs::metadata(file).unwrap().len();
        done.check(len <= 1 << 20, &format!("{file:?} is {len} bytes"));
        let text = read(file);
        done.check(
            text.lines().all(|l| {
                l == "helper-diagnostic-line"
                    || l.starts_with("[mcp-bound:")
                    || l.ends_with("LAST-LINE")
            }),
            &format!("{file:?} holds only whole lines"),
        );
    }
    let newest = read(&log);
    done.check(
        newest.ends_with(
            "LAST-LINE\n[mcp-bound: end state=completed exit={\"code\":0} exit_code=0]\n",
        ),
        "the newest file ends with the flood's last bytes and the end line",
    );
    let rotations = done.field("/stderr_log/rotations").as_u64().unwrap();
    done.check(rotations >= 190, &format!("{rotations} rotations"));
    let written = done.field("/stderr_log/bytes_written").as_u64().unwrap();
    done.check(written > 200_000_000, "every byte went to the log");
}

#[test]
fn a_reader_following_the_name_never_sees_a_torn_line_and_nothing_is_lost() {
    let call = Call::sh("seq 1 300000 >&2");
    let log = call.path("s.log");
    std::fs::write(&log, "").unwrap();
    let seen = call.path("tail.out");
    let mut tail = Command::new("tail")
        .args(["-F", "-n", "+1"])
        .arg(&log)
        .stdout(std::fs::File::create(&seen).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let done = call
        .opt(&[
            "--stderr-log",
            log.to_str().unwrap(),
            "--stderr-log-size",
            "256K",
            "--stderr-log-keep",
            "50",
        ])
        .run();
    // Handshake: the reader is done once it printed the end line.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !String::from_utf8_lossy(&std::fs::read(&seen).unwrap_or_default())
        .contains("[mcp-bound: end ")
        && Instant::now() < deadline
    {
        std::thread::yield_now();
    }
    let _ = tail.kill();
    let _ = tail.wait();
    done.expect_state("completed", 0);
    let printed = read(&seen);
    let numbers: Vec<u64> = printed
        .lines()
        .filter(|l| !l.starts_with("[mcp-bound:"))
        .map(|l| l.parse().unwrap_or_else(|_| panic!("a torn line: {l:?}")))
        .collect();
    done.check(
        numbers.windows(2).all(|w| w[0] < w[1]),
        "in order, never twice",
    );
    // What the reader skipped (a file rotated away before it looked) is
    // on disk, whole: rotation by rename loses nothing.
    let mut on_disk: Vec<u64> = Vec::new();
    for file in files(log.parent().unwrap(), "s.log") {
        on_disk.extend(read(&file).lines().filter_map(|l| l.parse::<u64>().ok()));
    }
    on_disk.sort_unstable();
    done.check(
        on_disk == (1..=300_000).collect::<Vec<u64>>(),
        "every line is in exactly one file",
    );
    done.check(
        done.field("/stderr_log/rotations").as_u64() > Some(5),
        "it rotated",
    );
}

#[test]
fn secrets_are_masked_in_the_log_and_lines_carry_times() {
    let call = Call::sh(
        "printf 'password=hunter2-very-secret\\n' >&2; printf 'plain\\n' >&2; printf 'no newline at the end' >&2",
    );
    let log = call.path("s.log");
    let done = call
        .opt(&[
            "--stderr-log",
            log.to_str().unwrap(),
            "--stderr-log-timestamps",
        ])
        .run();
    done.expect_state("completed", 0);
    let text = read(&log);
    done.check(!text.contains("hunter2"), "masked");
    let time = regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ").unwrap();
    done.check(
        text.lines().all(|l| time.is_match(l)),
        &format!("every line starts with its time:\n{text}"),
    );
    let body: Vec<&str> = text.lines().map(|l| &l[25..]).collect();
    done.check(
        body[0].starts_with("[mcp-bound: start call_id=")
            && body[0].contains("argv=[\"sh\",\"-c\"")
            && body[1] == "password=[REDACTED]"
            && body[2] == "plain"
            && body[3] == "no newline at the end"
            && body[4].starts_with("[mcp-bound: end state=completed"),
        &format!("{body:?}"),
    );
}

#[test]
fn a_log_that_cannot_be_written_never_fails_the_call() {
    let done = Call::sh("echo one >&2; echo two >&2")
        .opt(&["--stderr-log", "/dev/full"])
        .run();
    done.expect_state("completed", 0)
        .expect("/stderr_log/path", json!("/dev/full"))
        .expect("/stderr_log/bytes_written", json!(0));
    let error = done.field("/stderr_log/error").as_str().unwrap_or_default();
    done.check(error.contains("No space left"), error);
    done.check(
        done.field("/stderr_log/bytes_dropped").as_u64() > Some(0),
        "what was not written is counted",
    );
    let stderr = done.stderr_text();
    done.check(
        stderr.matches("--stderr-log /dev/full").count() == 1,
        &format!("said once: {stderr}"),
    );
    done.check(
        done.field("/stderr/bytes_seen") == &json!(8),
        "the drain went on",
    );
}

/// mcp-bound's own lines said in the loop ("best effort, never waited
/// for") reach a terminal too: a stderr that is a terminal is written
/// once it can take them, not only after the loop saw it writable.
#[test]
fn a_line_of_our_own_reaches_a_terminal_on_stderr() {
    let script = format!(
        r#"
import os, pty, subprocess, sys
master, slave = pty.openpty()
p = subprocess.Popen([{bin:?}, "--stderr-log", "/dev/full", "--", "sh", "-c", "echo one >&2"],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
os.close(slave)
seen = b""
try:
    while True:
        chunk = os.read(master, 4096)
        if not chunk:
            break
        seen += chunk
except OSError:
    pass
sys.stdout.write(seen.decode(errors="replace"))
sys.exit(p.wait())
"#,
        bin = util::BIN,
    );
    let output = util::python(&script);
    let screen = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{screen}");
    assert_eq!(
        screen.matches("--stderr-log /dev/full").count(),
        1,
        "said once, on the terminal: {screen:?}"
    );
}

#[test]
fn a_log_that_cannot_be_opened_stops_the_call_unless_optional() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("link.log");
    std::os::unix::fs::symlink("/tmp/elsewhere.log", &link).unwrap();
    let missing = dir.path().join("no-such-dir").join("s.log");
    for path in [&link, &missing] {
        let ran = dir.path().join("ran");
        let done = Call::sh(&format!("touch {}", ran.display()))
            .opt(&["--stderr-log", path.to_str().unwrap()])
            .run();
        done.expect_state("failed_before_dispatch", 125);
        let stderr = done.stderr_text();
        done.check(
            stderr.contains("--stderr-log") && stderr.lines().count() == 1,
            &stderr,
        );
        done.check(!ran.exists(), "nothing ran");
        done.check(
            !Path::new("/tmp/elsewhere.log").exists(),
            "no write through the link",
        );
    }
    let done = Call::sh("echo ran >&2")
        .opt(&[
            "--stderr-log",
            missing.to_str().unwrap(),
            "--stderr-log-optional",
        ])
        .run();
    done.expect_state("completed", 0);
    done.check(
        done.field("/stderr_log/error")
            .as_str()
            .is_some_and(|e| e.contains("cannot open")),
        "the record says why",
    );
    // The size and keep options without a log would do nothing.
    let done = Call::sh("true")
        .opt(&["--stderr-log-keep", "2"])
        .without_record()
        .run();
    done.expect_code(125);
}

#[test]
fn two_writers_on_one_path_do_not_mix() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("shared.log");
    let gate = dir.path().join("gate");
    util::mkfifo(&gate);
    // The first holds the log until we open the gate.
    let first = Call::sh(&format!(
        "echo first-writer >&2; read x < {}",
        gate.display()
    ))
    .opt(&["--stderr-log", log.to_str().unwrap()])
    .start();
    // Its start line is there: it holds the lock (a file handshake).
    let deadline = Instant::now() + Duration::from_secs(20);
    while !String::from_utf8_lossy(&std::fs::read(&log).unwrap_or_default())
        .contains("first-writer")
    {
        assert!(Instant::now() < deadline, "the first writer never wrote");
        std::thread::yield_now();
    }
    let second = Call::sh("echo second-writer >&2")
        .opt(&["--stderr-log", log.to_str().unwrap()])
        .run();
    std::fs::write(&gate, "go\n").unwrap();
    let first = first.finish();
    first.expect_state("completed", 0);
    second.expect_state("completed", 0);
    let own = second
        .field("/stderr_log/path")
        .as_str()
        .unwrap()
        .to_string();
    // PATH.<pid>.<random>: a name another local user cannot plant ahead.
    let prefix = format!("{}.{}.", log.display(), second.field("/mcp_bound/pid"));
    second.check(
        own.strip_prefix(&prefix).is_some_and(|random| {
            random.len() >= 8 && random.bytes().all(|b| b.is_ascii_hexdigit())
        }),
        &format!("the second writes PATH.<pid>.<random>: {own}"),
    );
    second.check(
        second
            .stderr_text()
            .contains("is in use by another mcp-bound"),
        "and says so",
    );
    let one = read(&log);
    let two = read(Path::new(&own));
    first.check(
        one.contains("first-writer") && !one.contains("second-writer"),
        &one,
    );
    first.check(
        two.contains("second-writer") && !two.contains("first-writer"),
        &two,
    );
    for text in [&one, &two] {
        first.check(
            text.starts_with("[mcp-bound: start ")
                && text
                    .trim_end()
                    .lines()
                    .last()
                    .unwrap()
                    .starts_with("[mcp-bound: end "),
            "each file is one writer's, whole",
        );
    }
}

#[test]
fn a_log_directory_that_fills_up_never_fails_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&small)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        skipped!(
            "cannot mount a small tmpfs here (not root, or no CAP_SYS_ADMIN); /dev/full is tested above"
        );
        return;
    }
    let log = small.join("s.log");
    let done = Call::sh("yes helper-line | head -c 2000000 >&2; echo done")
        .opt(&["--stderr-log", log.to_str().unwrap()])
        .run();
    let on_disk = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
    let _ = Command::new("umount").arg(&small).status();
    done.expect_state("completed", 0)
        .expect("/stderr/bytes_seen", json!(2_000_000));
    done.check(done.stdout == b"done\n", "the call went on");
    let error = done.field("/stderr_log/error").as_str().unwrap_or_default();
    done.check(error.contains("No space left"), error);
    let written = done.field("/stderr_log/bytes_written").as_u64().unwrap();
    let dropped = done.field("/stderr_log/bytes_dropped").as_u64().unwrap();
    done.check(
        written == on_disk && written + dropped >= 2_000_000,
        &format!("what reached the disk is counted ({written} of {on_disk}), the rest dropped ({dropped})"),
    );
}
