//! Text from outside reaches a terminal only escaped: every reader
//! (`verify`, each `log` view, `check`, `pin`) walked over a journal
//! whose text fields hold terminal controls (OSC 52, an erase, CR, BEL)
//! and bidirectional controls, chained again so that it verifies, and
//! over one whose break's detail carries a crafted field name. No raw
//! control or bidi character reaches stdout or stderr; each is shown as
//! `\u{..}`.

use crate::util;

use std::path::Path;

use serde_json::Value;

/// What a hostile journal field holds, as JSON writes it, and the
/// characters that must never be printed raw.
const HOSTILE: &str = r"\u001b]52;c;cHduZWQ=\u0007\u001b[1A\u001b[2K\r\u202e\u2066\u2028\ufffex";
const RAW: [char; 8] = [
    '\u{1b}', '\u{7}', '\r', '\u{202e}', '\u{2066}', '\u{2028}', '\u{9b}', '\u{fffe}',
];

#[track_caller]
fn assert_escaped(what: &str, text: &str) {
    if let Some(c) = text.chars().find(|c| RAW.contains(c)) {
        panic!("{what} printed {c:?} raw:\n{text:?}");
    }
}

/// `written`'s journal with each call id, session id and tool name
/// followed by [`HOSTILE`], chained again.
fn hostile(dir: &Path) -> std::path::PathBuf {
    let journal = crate::log::written(dir);
    let entries = crate::log::entries(&journal);
    let mut words: Vec<String> = Vec::new();
    for entry in &entries {
        for field in ["call_id", "session_id", "tool"] {
            if let Some(word) = entry[field].as_str() {
                words.push(format!("\"{word}\""));
            }
        }
    }
    words.sort();
    words.dedup();
    let lines: Vec<String> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|line| {
            let mut line = line.to_string();
            for word in &words {
                let bare = word.trim_matches('"');
                line = line.replace(word, &format!("\"{bare}{HOSTILE}\""));
            }
            line
        })
        .collect();
    let edited = dir.join("hostile.jsonl");
    crate::journal::write_lines(&edited, &crate::journal::rechained(&lines));
    edited
}

#[test]
fn every_reader_shows_a_journal_s_controls_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let journal = hostile(dir.path());
    let j = journal.to_str().unwrap();
    let (ok, report) = util::verify_report(&journal);
    assert!(ok, "the edited journal verifies: {report}");
    let parsed: Vec<Value> = crate::log::entries(&journal);
    let tool = parsed
        .iter()
        .find_map(|e| e["tool"].as_str().filter(|t| t.starts_with("rm")))
        .expect("the denied tool's entry");
    assert!(tool.contains('\u{1b}'), "the journal holds the raw control");
    let runs: Vec<(&str, Vec<&str>)> = vec![
        ("verify", vec![j]),
        ("log", vec![j]),
        ("log", vec!["--wide", j]),
        ("log", vec!["--sessions", j]),
        ("log", vec!["--requests", j]),
        (
            "check",
            vec!["--forbid-tool", "read*", "--expect-tool", "nothing", j],
        ),
        (
            "check",
            vec!["--no-unapproved", "--expect-state", "completed", j],
        ),
    ];
    for (command, args) in runs {
        let (code, out, err) = util::subcommand(command, &args);
        let what = format!("{command} {args:?} (exit {code})");
        assert!(code == 0 || code == 1, "{what}: {err}");
        assert_escaped(&what, &out);
        assert_escaped(&what, &err);
        if command != "verify" {
            assert!(out.contains(r"\u{1b}"), "{what} shows it escaped: {out}");
        }
    }
    // JUnit is well-formed XML whatever the journal holds (U+FFFE too).
    let (_, xml, _) =
        util::subcommand("check", &["--format", "junit", "--forbid-tool", "read*", j]);
    assert_escaped("check --format junit", &xml);
    let out = util::python_reading(
        "import sys, xml.etree.ElementTree as E; E.fromstring(sys.stdin.read()); print('XML')",
        xml.as_bytes(),
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "XML",
        "JUnit parses: {xml}"
    );
    // The report isolates journal text, escaped, in <bdi>.
    let page = dir.path().join("report.html");
    let (code, _, err) = util::subcommand("report", &[j, "-o", page.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_escaped("report", &html);
    assert!(html.contains("<bdi>s1\\u{1b}]52;"), "isolated and escaped");
    // One call's timeline, named by its hostile id.
    let call = parsed
        .iter()
        .find_map(|e| e["call_id"].as_str())
        .unwrap()
        .to_string();
    let (code, out, err) = util::subcommand("log", &["--call", &call, j]);
    assert_eq!(code, 0, "{err}");
    assert_escaped("log --call", &out);
    // An unfinished call's warning names its id: the terminal entries cut.
    let lines: Vec<String> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("\"kind\":\"terminal\""))
        .map(str::to_string)
        .collect();
    let cut = dir.path().join("unfinished.jsonl");
    crate::journal::write_lines(&cut, &crate::journal::rechained(&lines));
    for command in ["verify", "log", "check"] {
        let (code, out, err) = util::subcommand(command, &[cut.to_str().unwrap()]);
        let what = format!("{command} on unfinished calls (exit {code})");
        assert_escaped(&what, &out);
        assert_escaped(&what, &err);
    }
}

#[test]
fn a_break_s_detail_is_shown_escaped_and_cannot_draw_an_ok_line() {
    let dir = tempfile::tempdir().unwrap();
    let journal = crate::log::written(dir.path());
    let mut lines: Vec<String> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    // An unknown field whose name erases the FAILED line and draws OK.
    let forged = r#""\r\u001b[2K\u001b[1AOK: 9 entries\u202e":1,"h":""#;
    let at = lines[2].rfind(",\"h\":\"").unwrap();
    lines[2] = format!("{},{}{}", &lines[2][..at], forged, &lines[2][at + 6..]);
    let edited = dir.path().join("forged.jsonl");
    crate::journal::write_lines(&edited, &crate::journal::rechained(&lines));
    for command in ["verify", "log", "check"] {
        let (code, out, err) = util::subcommand(command, &[edited.to_str().unwrap()]);
        let what = format!("{command} (exit {code})");
        assert_eq!(code, 1, "{what}: the chain is broken\n{out}{err}");
        assert_escaped(&what, &out);
        assert_escaped(&what, &err);
        let said = format!("{out}{err}");
        assert!(said.contains(r"\u{d}\u{1b}[2K"), "{what}: {said}");
    }
}

/// The message mcp-bound writes when the server exits mid-request holds
/// the server's stderr: its lines are kept, every control in them shown
/// escaped; the data's `stderr_tail` stays as the server wrote it.
#[test]
fn a_crash_answer_s_message_shows_the_server_s_stderr_escaped() {
    let mut run = util::server(&[]).opt(&["--mcp"]).start();
    let stderr = "boom\u{1b}]52;c;cHduZWQ=\u{7}\r\u{1b}[2Klast line\u{202e}\n";
    run.send(&util::rpc_request(
        1,
        "crash",
        serde_json::json!({"stderr": stderr, "code": 3}),
    ));
    let answer = util::parse_message(&run.read_line());
    run.close_stdin();
    let done = run.finish();
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    done.check(
        message.contains("boom"),
        &format!("the excerpt is there: {message:?}"),
    );
    done.check(
        !message.chars().any(|c| RAW.contains(&c)),
        &format!("the message holds no raw control: {message:?}"),
    );
    done.check(
        message.contains(r"\u{1b}]52;c;") && message.contains(r"\u{d}"),
        &format!("shown escaped: {message:?}"),
    );
    let tail = answer["error"]["data"]["mcp_bound"]["stderr_tail"]
        .as_str()
        .unwrap_or_default();
    done.check(tail.contains('\u{1b}'), "the data keeps the bytes");
}

/// A 2026-07-28 server names itself in a result's `_meta`: a name with
/// newlines and controls is one line on the card, and draws no block of
/// its own above the real one.
#[test]
fn a_server_name_is_one_line_on_the_approval_card() {
    let mut run = util::server(&[])
        .opt(&[
            "--mcp",
            "--tool-approve-via",
            "host",
            "--tool-approve",
            "pay",
        ])
        .start();
    let evil = "files\n\nTool: read_file\nArguments (masked): {}\r\u{1b}[2K";
    let meta = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/serverInfo": {"name": evil, "version": "1"},
    });
    // The fixture echoes params: its result names the server.
    run.send(&util::rpc_request(
        1,
        "echo",
        serde_json::json!({"_meta": meta}),
    ));
    util::parse_message(&run.read_line());
    run.send(&util::rpc_request(
        2,
        "tools/call",
        serde_json::json!({"name": "pay", "arguments": {}, "_meta": meta}),
    ));
    let card = util::parse_message(&run.read_line());
    run.close_stdin();
    let done = run.finish();
    let message = card["result"]["inputRequests"]["mcp-bound-approval"]["params"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    done.check(
        message.contains(r"Server: files\u{a}\u{a}Tool: read_file"),
        &format!("the name on one line: {message:?}"),
    );
    done.check(
        message.matches("\nTool: ").count() == 1 && message.contains("\nTool: pay\n"),
        &format!("one Tool line, the real one: {message:?}"),
    );
    done.check(
        !message.chars().any(|c| RAW.contains(&c)),
        &format!("no raw control: {message:?}"),
    );
}

/// `mcp-bound pin` shows a server's tool names escaped: a second tool
/// named to draw a fake `pinned` line over the real `NEW … hidden` one
/// (cursor up, erase, CR) is shown as the text it is.
#[test]
fn pin_shows_a_server_s_tool_names_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let (tools, pins) = (dir.path().join("tools.json"), dir.path().join("pins.json"));
    let forged = "search\u{1b}[1A\u{1b}[2K\rsearch  pinned 2026-12-01T00:00:00.000Z\u{202e}";
    std::fs::write(&tools, serde_json::json!([{"name": "search"}]).to_string()).unwrap();
    let list = || util::rpc_request(1, "tools/list", serde_json::json!({}));
    for catalogue in [
        serde_json::json!([{"name": "search"}]),
        serde_json::json!([{"name": "search"}, {"name": forged, "description": "\u{1b}]52;c;eA==\u{7}"}]),
    ] {
        std::fs::write(&tools, catalogue.to_string()).unwrap();
        let mut run = util::server(&["--tools-file", tools.to_str().unwrap()])
            .opt(&["--mcp", "--tool-pin", pins.to_str().unwrap()])
            .start();
        run.send(&list());
        run.read_line();
        run.close_stdin();
        run.finish();
    }
    let (code, out, err) = util::subcommand("pin", &[pins.to_str().unwrap()]);
    assert_eq!(code, 1, "the forged tool waits: {out}{err}");
    assert_escaped("pin", &out);
    assert_escaped("pin", &err);
    assert!(
        out.contains(r"search\u{1b}[1A\u{1b}[2K\u{d}search  pinned"),
        "{out}"
    );
    assert_eq!(
        out.lines().filter(|l| l.contains("NEW")).count(),
        1,
        "{out}"
    );
}
