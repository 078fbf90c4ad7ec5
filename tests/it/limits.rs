//! What the tree may use (`--rlimit`) and what it used (`usage`).

use crate::util;

use serde_json::{Value, json};
use util::Call;

#[test]
fn limits_are_set_in_the_helper_and_recorded() {
    let done = Call::sh("ulimit -Sn; ulimit -Hn; ulimit -St")
        .opt(&["--rlimit", "nofile=32:64", "--rlimit", "cpu=7"])
        .run();
    done.expect_state("completed", 0).expect(
        "/limits/rlimits",
        json!({"nofile": {"soft": 32, "hard": 64}, "cpu": {"soft": 7, "hard": 7}}),
    );
    done.check(done.stdout == b"32\n64\n7\n", "the helper runs under them");
    // mcp-bound itself keeps its own limits.
    let ours = Call::sh("ulimit -Sn").run();
    ours.check(ours.stdout != b"32\n", "only the helper is limited");
}

#[test]
fn an_address_space_too_small_for_the_helper_gives_a_truthful_record() {
    let done = Call::new(&["python3", "-c", "x = bytearray(512 * 1024 * 1024)"])
        .opt(&["--rlimit", "as=256MiB"])
        .run();
    done.expect_state("completed", 1)
        .expect("/exit", json!({"code": 1}))
        .expect(
            "/limits/rlimits/as",
            json!({"soft": 268435456u64, "hard": 268435456u64}),
        );
    done.check(
        done.field("/stderr/excerpt")
            .as_str()
            .unwrap()
            .contains("MemoryError"),
        "the helper's own words say why",
    );
}

#[test]
fn a_fork_bomb_under_nproc_ends() {
    // Root is not held to RLIMIT_NPROC: the bomb runs as nobody.
    let call = Call::sh(
        "i=0; while [ $i -lt 400 ]; do (sleep 30) & i=$((i+1)); done 2>/dev/null; echo forked-all",
    )
    .opt(&["--rlimit", "nproc=40", "--timeout", "20s"]);
    let done = call.via_nobody().run();
    // The shell cannot fork past the limit: it fails and stops early, and
    // what it did start is ended with it (the tree is swept).
    done.check(
        done.code() != 124,
        "it ended on its own, not at the deadline",
    );
    done.check(
        !String::from_utf8_lossy(&done.stdout).contains("forked-all"),
        "the limit held",
    );
    done.expect("/limits/rlimits/nproc", json!({"soft": 40, "hard": 40}));
}

#[test]
fn a_limit_that_cannot_be_set_is_refused_before_anything_runs() {
    let marker = tempfile::tempdir().unwrap();
    let ran = marker.path().join("ran");
    let touch = format!("touch {}", ran.display());
    for (options, needle) in [
        (&["--rlimit", "nofile"][..], "NAME=SOFT[:HARD]"),
        (&["--rlimit", "files=3"][..], "unknown limit 'files'"),
        (
            &["--rlimit", "nofile=9:3"][..],
            "soft limit is above the hard limit",
        ),
        (&["--rlimit", "as=lots"][..], "--rlimit"),
    ] {
        let done = Call::sh(&touch).opt(options).without_record().run();
        done.expect_code(125);
        let stderr = done.stderr_text();
        done.check(
            stderr.contains(needle) && stderr.lines().count() == 1,
            &stderr,
        );
        done.check(!ran.exists(), "nothing ran");
    }
    // Raising a hard limit needs privilege: nobody is refused, with a
    // record that says so.
    std::fs::set_permissions(
        marker.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let call = Call::sh(&touch).opt(&["--rlimit", "nofile=16:unlimited"]);
    let done = call.via_nobody().run();
    done.expect_state("failed_before_dispatch", 125);
    let error = done
        .field("/error")
        .as_str()
        .unwrap_or_default()
        .to_string();
    done.check(error.contains("cannot raise the hard limit"), &error);
    done.check(!ran.exists(), "nothing ran");
}

/// `getrusage(RUSAGE_CHILDREN)`'s peak survives exec: a process that
/// reaped a 600 MB child and then exec'd mcp-bound handed that peak to
/// the helper's record (`cargo run` does just that). The peak is now the
/// helper's tree's alone, from each process mcp-bound reaps.
#[test]
fn a_peak_from_before_exec_is_not_the_helpers() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("record.json");
    let script = "import os, subprocess, sys\n\
        subprocess.run([sys.executable, '-c', 'b = bytearray(600 << 20); b[::4096] = b\"x\" * len(b[::4096])'], check=True)\n\
        os.execv(sys.argv[1], sys.argv[1:])";
    let status = std::process::Command::new("python3")
        .args(["-c", script, util::BIN, "--record"])
        .arg(&record)
        .args(["--", "true"])
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&record).unwrap();
    let record: Value = serde_json::from_str(&text).unwrap();
    util::check_schema(&record);
    let peak = record["usage"]["max_rss_kib"].as_u64().unwrap_or_default();
    assert!(
        peak < 100 * 1024,
        "`true` peaked at {peak} KiB: the 600 MB child before exec is counted"
    );
}

#[test]
fn the_whole_tree_s_usage_is_recorded() {
    // The CPU is spent by a grandchild that leaves the helper's group.
    let call = Call::sh("setsid sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done' & wait")
        .opt(&["--echo", "always", "--journal"]);
    let journal = call.path("journal.jsonl");
    let done = call.opt(&[journal.to_str().unwrap()]).run();
    done.expect_state("completed", 0);
    let user = done.field("/usage/user_ms").as_u64().unwrap();
    done.check(
        user > 50,
        &format!("the grandchild's CPU counts: {user} ms"),
    );
    done.check(
        done.field("/usage/max_rss_kib").as_u64() > Some(0),
        "peak memory",
    );
    done.check(
        done.stderr_text().contains("; cpu "),
        "the summary line says it",
    );
    let text = std::fs::read_to_string(&journal).unwrap();
    let terminal: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    done.check(
        terminal["usage"] == *done.field("/usage"),
        "the journal's terminal entry has the same figures",
    );
    // Before dispatch, nothing ran: null.
    let done = Call::new(&["/no/such/helper"]).run();
    done.expect_state("failed_before_dispatch", 127)
        .expect("/usage", Value::Null);
}

/// Raising a hard limit takes CAP_SYS_RESOURCE, not uid 0: root without
/// it (any container that drops it) is refused with one line and 125
/// before anything runs, not blamed on the helper with a 126.
#[test]
fn raising_a_hard_limit_without_the_capability_is_refused_before_anything_runs() {
    let hard =
        util::python("import resource; print(resource.getrlimit(resource.RLIMIT_NOFILE)[1])");
    let hard: u64 = String::from_utf8_lossy(&hard.stdout)
        .trim()
        .parse()
        .unwrap();
    let is_root = util::python("import os; print(os.geteuid())").stdout == b"0\n";
    if !is_root {
        skipped!("needs root (to drop CAP_SYS_RESOURCE from it)");
        return;
    }
    let wanted = format!("nofile=64:{}", hard + 1);
    let drop_cap = [
        "setpriv",
        "--inh-caps=-sys_resource",
        "--bounding-set=-sys_resource",
        "--",
    ];
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let done = Call::new(&["sh", "-c", "touch \"$0\"", ran.to_str().unwrap()])
        .opt(&["--rlimit", &wanted])
        .via(&drop_cap)
        .run();
    done.expect_state("failed_before_dispatch", 125);
    let stderr = done.stderr_text();
    done.check(
        stderr.lines().count() == 1
            && stderr.contains("--rlimit")
            && stderr.contains("nothing was started"),
        "one line that says why",
    );
    done.check(!util::exists(&ran), "the helper never ran");
    // With the capability, root may raise it (where root has it: this
    // machine's may not).
    let raise = format!(
        "import resource\ntry:\n    resource.setrlimit(resource.RLIMIT_NOFILE, (64, {}))\n    print('yes')\nexcept (ValueError, OSError):\n    print('no')",
        hard + 1
    );
    if util::python(&raise).stdout != b"yes\n" {
        skipped!("the raise: this root has no CAP_SYS_RESOURCE either");
        return;
    }
    let done = Call::new(&["sh", "-c", "ulimit -Hn"])
        .opt(&["--rlimit", &wanted])
        .run();
    done.expect_state("completed", 0);
    done.check(
        done.stdout == format!("{}\n", hard + 1).into_bytes(),
        "raised",
    );
}
