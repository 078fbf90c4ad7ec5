//! What a newcomer types: options that need another, values out of range,
//! sizes, and the help and man page saying what the binary does.

use crate::util;

use util::Call;

/// A value each dependent option accepts.
fn sample(option: &str) -> Option<&'static str> {
    Some(match option {
        "--stderr-log-size" => "1M",
        "--stderr-log-keep" => "2",
        "--journal-key" => "/nonexistent-key",
        "--journal-requests" => "all",
        "--journal-excerpt-bytes" => "100",
        "--live-rate" | "--live-burst" | "--debug-window-bytes" => "1K",
        "--debug-window" | "--otel-flush-timeout" => "10s",
        "--max-restarts" => "2",
        "--restart-window"
        | "--restart-backoff"
        | "--tool-approval-timeout"
        | "--approval-timeout" => "1s",
        "--max-message-bytes" => "1K",
        "--request-timeout" => "5s",
        "--restart" => "always",
        "--agent-excerpt-bytes" => "100",
        "--max-in-flight" | "--max-pending-approvals" => "3",
        "--tool-allow" | "--tool-deny" | "--tool-approve" => "echo",
        "--tool-approve-cmd" => "true",
        "--tool-approve-via" => "host",
        "--tool-pin" => "/nonexistent-dir/pins.json",
        "--tool-pin-key" => "files",
        "--stderr-log-timestamps"
        | "--stderr-log-optional"
        | "--request-timeout-resets-on-progress"
        | "--otel-propagate" => return None,
        other => panic!("no sample value for {other}: add one"),
    })
}

fn env_name(option: &str) -> String {
    format!(
        "MCP_BOUND_{}",
        option
            .trim_start_matches("--")
            .replace('-', "_")
            .to_uppercase()
    )
}

/// Each option that needs another is refused on the command line with one
/// line naming what it needs, nothing run; from its variable it is
/// ignored, unless it is a tool policy, which is refused from there too,
/// its variable named. The man page lists the same options.
#[test]
fn an_option_that_needs_another_is_refused_on_the_line_and_ignored_from_the_environment() {
    let man = mcp_bound::docs::man_page();
    let environment = man
        .split(".SH ENVIRONMENT")
        .nth(1)
        .expect("ENVIRONMENT section");
    let options: Vec<(String, &str, bool)> = mcp_bound::docs::dependent_options().collect();
    assert!(options.len() >= 20, "{options:?}");
    for (option, needs, policy) in &options {
        let roff = option.replace('-', "\\-");
        assert!(
            environment.contains(&roff),
            "{option} missing from the man page"
        );
        let mut line = vec![option.as_str()];
        line.extend(sample(option));
        let stderr = util::refused(&line);
        assert_eq!(stderr, format!("mcp-bound: {option} {needs}\n"));
        let from_environment = Call::sh("true")
            .env(&env_name(option), sample(option).unwrap_or("true"))
            .run();
        if *policy {
            from_environment.expect_code(125);
            from_environment.check(
                from_environment.stderr_text().contains(&env_name(option)),
                "a tool policy from its variable is refused, the variable named",
            );
        } else {
            from_environment.expect_state("completed", 0);
        }
    }
}

/// Given with the feature it tunes, each is accepted (the feature turned
/// on by its own variable counts).
#[test]
fn an_option_with_its_feature_is_accepted_however_the_feature_is_on() {
    let log = tempfile::tempdir().unwrap();
    let path = log.path().join("log");
    Call::sh("echo x >&2")
        .env("MCP_BOUND_STDERR_LOG", path.to_str().unwrap())
        .opt(&["--stderr-log-keep", "2"])
        .run()
        .expect_state("completed", 0)
        .expect(
            "/stderr_log/path",
            serde_json::json!(path.to_str().unwrap()),
        );
    Call::sh("true")
        .opt(&["--live", "--live-rate", "1K"])
        .run()
        .expect_state("completed", 0);
}

/// A negative or malformed number is a bad value, said as such, not an
/// unknown option; nothing runs.
#[test]
fn a_negative_value_is_refused_as_a_value() {
    for (options, needle) in [
        (&["--timeout", "-1s"][..], "a duration cannot be negative"),
        (&["--grace", "-1"][..], "a duration cannot be negative"),
        (&["--tail-bytes", "-5"][..], "a size cannot be negative"),
        (&["--cpu-max", "-1"][..], "a positive number of CPUs"),
        (&["--pids-max", "-2"][..], "'-2'"),
        (&["--tail-bytes", "0.1K"][..], "not a whole number of bytes"),
    ] {
        let stderr = util::refused(options);
        assert!(
            stderr.contains(needle)
                && stderr.contains("invalid value")
                && !stderr.contains("unexpected argument"),
            "{options:?}: {stderr}"
        );
    }
}

/// The sizes users type are accepted, and mean what `--help` says:
/// binary suffixes, any case, a fraction when it makes whole bytes.
#[test]
fn sizes_take_the_spellings_help_documents() {
    let help = util::help();
    let man = mcp_bound::docs::man_page();
    for said in [&help, &man] {
        assert!(said.contains("1K, 1KB and 1KiB are 1024"), "{said}");
    }
    for (size, bytes) in [
        ("1.5K", 1536),
        ("1e3", 1000),
        ("0x10", 16),
        ("2kb", 2048),
        ("1KB", 1024),
    ] {
        Call::sh("true")
            .opt(&["--tail-bytes", size])
            .run()
            .expect_state("completed", 0)
            .expect("/stderr/tail_bytes", serde_json::json!(bytes));
    }
}

/// `--help` shows the exit statuses (the same table as the man page), and
/// says that the helper's own status passes through whatever it is.
#[test]
fn help_shows_the_exit_statuses_and_the_timeout_default() {
    let help = util::help();
    assert!(help.contains("Exit status:"), "{help}");
    for (status, _) in mcp_bound::docs::EXIT_STATUS {
        assert!(
            help.contains(&format!("  {status} ")),
            "{status} missing from --help"
        );
    }
    assert!(
        help.contains("state"),
        "points to the record's state as the unambiguous answer"
    );
    let timeout = help
        .split("--timeout <DURATION>")
        .nth(1)
        .unwrap()
        .split("\n      --")
        .next()
        .unwrap();
    assert!(timeout.contains("[default: off]"), "{timeout}");
}

/// The man page's SYNOPSIS shows the `--` before the helper.
#[test]
fn the_man_page_synopsis_shows_the_double_dash() {
    let man = mcp_bound::docs::man_page();
    let synopsis = man
        .split(".SH SYNOPSIS")
        .nth(1)
        .and_then(|rest| rest.split(".SH ").next())
        .expect("SYNOPSIS");
    assert!(
        synopsis.contains("[OPTIONS] \\fB\\-\\-\\fR COMMAND"),
        "{synopsis}"
    );
    assert!(synopsis.contains("verify"), "{synopsis}");
}

/// Every JSON example in the docs and the man page is what mcp-bound
/// takes or writes: a record validates against the record schema, a host
/// config's args parse as mcp-bound's own command line.
/// A `check --expect` file's steps: each a kind the journal's schema has,
/// naming only fields that kind has.
fn lifecycle_steps_are_journal_fields(source: &str, steps: &serde_json::Value) {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../schema/journal.schema.json")).unwrap();
    let kinds = schema["oneOf"].as_array().unwrap();
    for step in steps.as_array().unwrap() {
        let kind = &step["kind"];
        let shape = kinds
            .iter()
            .find(|k| k["properties"]["kind"]["const"] == *kind)
            .unwrap_or_else(|| panic!("{source}: no journal kind {kind}"));
        for field in step.as_object().unwrap().keys() {
            assert!(
                shape["properties"].get(field).is_some(),
                "{source}: a {kind} entry has no field {field}"
            );
        }
    }
}

#[test]
fn every_json_example_in_the_docs_is_valid() {
    let mut blocks: Vec<(String, String)> = Vec::new();
    for (page, text) in util::prose_docs() {
        let mut rest = text.as_str();
        while let Some(start) = rest.find("```json\n") {
            let body = &rest[start + 8..];
            let end = body.find("```").unwrap();
            blocks.push((page.clone(), body[..end].to_string()));
            rest = &body[end..];
        }
    }
    for (what, example) in mcp_bound::docs::EXAMPLES {
        if example.starts_with('{') {
            blocks.push((format!("man EXAMPLES: {what}"), example.to_string()));
        }
    }
    let man = mcp_bound::docs::man_page();
    let (mut records, mut configs) = (0, 0);
    for (source, body) in &blocks {
        let value: serde_json::Value = serde_json::from_str(body)
            .unwrap_or_else(|e| panic!("{source}: JSON does not parse: {e}\n{body}"));
        if value["schema"] == "mcp-bound/record/v1" {
            util::check_schema(&value);
            records += 1;
            continue;
        }
        if let Some(steps) = value.get("lifecycle") {
            lifecycle_steps_are_journal_fields(source, steps);
            continue;
        }
        let servers = value
            .get("mcpServers")
            .or_else(|| value.get("servers"))
            .and_then(|servers| servers.as_object())
            .unwrap_or_else(|| panic!("{source}: neither a record nor a host config\n{body}"));
        for (name, server) in servers {
            // A bare name, or (Claude Desktop, which starts it without
            // the shell's PATH) an absolute path to it, on Windows too.
            let command = server["command"].as_str().unwrap_or_default();
            assert!(
                command == "mcp-bound"
                    || command.ends_with("/bin/mcp-bound")
                    || command.ends_with("\\bin\\mcp-bound.exe"),
                "{source}: {name}: {command}"
            );
            let mut argv = vec!["mcp-bound".to_string()];
            argv.extend(
                server["args"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|arg| arg.as_str().unwrap())
                    // What Cursor and VS Code expand before they start it.
                    .map(|arg| {
                        arg.replace("${userHome}", "/home/me")
                            .replace("${workspaceFolder}", "/home/me/projects")
                    }),
            );
            match mcp_bound::would_run(&argv) {
                Ok(true) => {}
                Err(e) => panic!("{source}: {name}: args refused: {e}"),
                Ok(false) => panic!("{source}: {name}: args do not run a server"),
            }
            configs += 1;
        }
        if source.starts_with("man") {
            assert!(man.contains("\"mcpServers\""), "the man page shows it");
        }
    }
    assert!(
        records >= 1 && configs >= 4,
        "{records} records, {configs} configs"
    );
}

/// The man page's flood repro does what it says: exit 124, the last KiB
/// kept, echoed with its marker and the summary line.
#[test]
fn the_man_page_flood_repro_does_what_it_says() {
    let (_, example) = mcp_bound::docs::EXAMPLES
        .iter()
        .find(|(what, _)| what.starts_with("A flood repro"))
        .unwrap();
    let options = example
        .strip_prefix("mcp-bound ")
        .and_then(|rest| rest.split(" -- ").next())
        .unwrap();
    let script = example
        .split(" -- sh -c '")
        .nth(1)
        .and_then(|rest| rest.strip_suffix('\''))
        .unwrap();
    let options: Vec<&str> = options.split_whitespace().collect();
    let done = Call::sh(script).opt(&options).run();
    done.expect_state("timed_out", 124)
        .expect("/stderr/bytes_retained", serde_json::json!(1024));
    let stderr = done.stderr_text();
    done.check(
        stderr.starts_with("[stderr truncated: kept last 1024 of ")
            && stderr.contains("helper-diagnostic\n")
            && stderr.contains("mcp-bound: timed_out after ")
            && stderr.contains(" bytes seen, 1024 kept"),
        "marker, excerpt and summary, with the same count",
    );
}

/// A helper that is not executable gets the OS's words, unmasked: the
/// `passwd` in its path is no password label.
#[test]
fn a_path_with_passwd_in_it_is_not_masked() {
    let done = Call::new(&["/etc/passwd"]).run();
    done.expect_state("failed_before_dispatch", 126);
    let stderr = done.stderr_text();
    done.check(
        stderr.contains("/etc/passwd: cannot run: Permission denied")
            && !stderr.contains("REDACTED"),
        &stderr,
    );
    done.check(
        done.field("/error")
            .as_str()
            .is_some_and(|error| error.contains("cannot run")),
        "the record's error too",
    );
}

/// Every refusal before dispatch says that nothing was started, and names
/// what is wrong: the missing directory, not a lock file beside it.
#[test]
fn a_refusal_before_dispatch_says_nothing_was_started() {
    let dir = tempfile::tempdir().unwrap();
    let short_key = dir.path().join("key");
    std::fs::write(&short_key, b"short").unwrap();
    std::fs::set_permissions(
        &short_key,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let journal = dir.path().join("journal.jsonl");
    for (options, names) in [
        (
            vec!["--stderr-log", "/nonexistent-dir/log"],
            "no directory /nonexistent-dir",
        ),
        (
            vec![
                "--journal",
                journal.to_str().unwrap(),
                "--journal-key",
                short_key.to_str().unwrap(),
            ],
            "at least 16 bytes",
        ),
        (
            vec!["--approve-cmd", "/nonexistent-approver"],
            "/nonexistent-approver",
        ),
    ] {
        let stderr = util::refused(&options);
        assert!(
            stderr.contains(names)
                && !stderr.contains(".lock")
                && (stderr.trim_end().ends_with("nothing was started")
                    || stderr.trim_end().ends_with("the helper was not started")),
            "{options:?}: {stderr}"
        );
    }
}

/// `verify` of a file with no entry says so, not "lines 1-0 verified".
#[test]
fn verify_of_a_file_that_is_no_journal_says_no_line_was_verified() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, b"").unwrap();
    for path in [std::path::Path::new("/etc/passwd"), empty.as_path()] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-bound"))
            .arg("verify")
            .arg(path)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{output:?}");
        let said = String::from_utf8_lossy(&output.stdout).to_string()
            + &String::from_utf8_lossy(&output.stderr);
        assert!(
            said.contains("MALFORMED")
                && said.contains("(no line verified)")
                && !said.contains("1-0"),
            "{path:?}: {said}"
        );
    }
}

/// The docs and the man page name every journal kind the schema has,
/// and no other.
#[test]
fn the_docs_name_every_journal_kind() {
    let schema: serde_json::Value = serde_json::from_str(mcp_bound::docs::JOURNAL_SCHEMA).unwrap();
    let mut kinds: Vec<String> = schema["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|each| {
            each["properties"]["kind"]["const"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    kinds.sort();
    let start = "describes one line of each kind:";
    let (page, readme) = util::prose_docs()
        .into_iter()
        .find(|(_, text)| text.replace('\n', " ").contains(start))
        .expect("a page of the docs lists every journal kind");
    let man = mcp_bound::docs::man_page()
        .replace("\\-", "-")
        .replace('\n', " ");
    for (doc, text, start) in [
        (page.as_str(), readme.replace('\n', " "), start),
        ("man page", man, "for each kind:"),
    ] {
        let list = text
            .split(start)
            .nth(1)
            .and_then(|rest| rest.split('.').next())
            .unwrap_or_else(|| panic!("{doc}: no list of kinds"));
        let mut named: Vec<String> = list
            .split(|c: char| !(c.is_ascii_lowercase() || c == '_'))
            .filter(|word| {
                !word.is_empty() && !["and", "under", "the", "session", "layer"].contains(word)
            })
            .map(str::to_string)
            .collect();
        named.sort();
        assert_eq!(named, kinds, "{doc}: {list}");
    }
}

/// A subcommand's name is the subcommand; after `--` it is a helper.
#[test]
fn a_helper_named_as_a_subcommand_runs_after_the_double_dash() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for name in ["verify", "log", "check", "report", "pin"] {
        let helper = dir.path().join(name);
        std::fs::write(&helper, format!("#!/bin/sh\necho the {name} helper ran\n")).unwrap();
        std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
        let run = |args: &[&str]| {
            std::process::Command::new(util::BIN)
                .args(args)
                .env("PATH", &path)
                .output()
                .unwrap()
        };
        let helper_ran = run(&["--", name]);
        assert_eq!(helper_ran.status.code(), Some(0), "{helper_ran:?}");
        assert_eq!(
            String::from_utf8_lossy(&helper_ran.stdout),
            format!("the {name} helper ran\n")
        );
        let subcommand = run(&[name]);
        assert_eq!(subcommand.status.code(), Some(2), "{name}: {subcommand:?}");
        assert!(
            subcommand.stdout.is_empty(),
            "{name}: the helper did not run"
        );
    }
}
