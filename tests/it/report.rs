//! `mcp-bound report` in a real browser: a journal the real binary
//! writes (calls in five sessions and one with none, a timeout, a
//! denial, a debug window, a restart, an MCP session with tool calls run
//! and denied, an argument and a stderr line holding `<script>`) becomes one HTML file that headless Chromium
//! loads with the network off (`unshare -n`): the DOM it builds has a bar
//! per call, the verify line and head hash, the tool table; no console
//! error; the `<script>` stays text; a screenshot is kept as an artifact
//! (never compared by pixels). A broken chain is said on the page.
//! Without Chromium the tests say so and skip, unless
//! MCP_BOUND_INTEROP=require (as in CI).

use crate::util;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use util::{Call, parse_message as parse, rpc_request as request, server};

const SCRIPT: &str = "<script>document.title='pwned'</script>";

/// Chromium, with the network off; None (and a SKIPPED line) without it.
fn browser() -> Option<Vec<String>> {
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|name| {
            Command::new(name)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    let isolated = Command::new("unshare")
        .args(["-n", "true"])
        .status()
        .is_ok_and(|s| s.success());
    let why = match (chromium, isolated) {
        (Some(chromium), true) => {
            return Some(
                [
                    "unshare",
                    "-n",
                    chromium,
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                ]
                .map(str::to_string)
                .to_vec(),
            );
        }
        (None, _) => "no chromium on PATH (apt-get install chromium)",
        (Some(_), false) => {
            "unshare -n failed: the browser cannot be run with the network off (root, or user namespaces, needed)"
        }
    };
    if std::env::var("MCP_BOUND_INTEROP").as_deref() == Ok("require") {
        panic!("the report test needs a browser: {why}");
    }
    crate::skipped!("report in a browser: {why}; .ci/run installs it");
    None
}

/// The browser's run on `page` with `args`: its stdout, and its console
/// lines that came from the page.
fn load(browser: &[String], page: &Path, args: &[&str]) -> (String, Vec<String>) {
    let url = format!("file://{}", page.display());
    let out = Command::new(&browser[0])
        .args(&browser[1..])
        .args(["--enable-logging=stderr", "--v=0"])
        .args(args)
        .arg(&url)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium {args:?}: {stderr}");
    let console = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") && l.contains(&url) || l.contains("Uncaught"))
        .map(str::to_string)
        .collect();
    (String::from_utf8_lossy(&out.stdout).into_owned(), console)
}

/// `log`'s journal (a completed call, a timeout, a denial, an MCP
/// session), and four calls more: one whose argument and stderr hold
/// `<script>`, one with a debug window, an MCP session of three tool
/// calls, one denied, and one whose server crashed and was restarted:
/// eight calls.
fn written(dir: &Path) -> PathBuf {
    let journal = crate::log::written(dir);
    let j = journal.to_str().unwrap();
    Call::sh(&format!("echo \"{SCRIPT}\" >&2"))
        .opt(&["--journal", j, "--session-id", "s3"])
        .run()
        .expect_state("completed", 0);
    // A debug window opened (SIGUSR1) while a live helper runs.
    let log = dir.join("stderr.log");
    let mut run = Call::sh("echo READY; read line; exit 0")
        .opt(&["--live", "--stderr-log", log.to_str().unwrap()])
        .opt(&["--journal", j, "--session-id", "s3"])
        .stdin(std::process::Stdio::piped())
        .start();
    run.wait_for_line("READY");
    run.signal("USR1");
    crate::debug_window::wait_in_log(&log, "debug window open", 0);
    run.close_stdin();
    run.finish().expect_state("completed", 0);
    let mut run = server(&[])
        .opt(&[
            "--mcp",
            "--tool-deny",
            "rm",
            "--journal",
            j,
            "--session-id",
            "s4",
        ])
        .start();
    for (id, tool) in [(1, "read_file"), (2, "rm"), (3, "read_file")] {
        let args = json!({"name": tool, "arguments": {"path": SCRIPT}});
        run.send(&request(json!(id), "tools/call", args));
        assert_eq!(parse(&run.read_line())["id"], id);
    }
    run.close_stdin();
    run.finish().expect_state("shut_down", 0);
    // A server that crashes and is restarted (an mcp_restart entry).
    crate::session::restarted_once(&journal, &["--session-id", "s5"]);
    journal
}

fn report(journal: &Path, out: &Path) -> (i32, String) {
    let (code, _, err) = util::subcommand(
        "report",
        &[journal.to_str().unwrap(), "-o", out.to_str().unwrap()],
    );
    (code, err)
}

#[test]
fn a_report_opens_offline_with_a_bar_per_call_and_its_script_text_inert() {
    let dir = tempfile::tempdir().unwrap();
    let journal = written(dir.path());
    let page = dir.path().join("report.html");
    let (code, err) = report(&journal, &page);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("http://")
            || html.matches("http://").count()
                == html.matches("http://www.w3.org/2000/svg").count(),
        "no address but the SVG namespace"
    );
    assert!(!html.contains(SCRIPT), "the journal's <script> is escaped");
    let Some(browser) = browser() else { return };

    let (dom, console) = load(&browser, &page, &["--dump-dom"]);
    assert!(console.is_empty(), "console: {console:?}");
    let body = &dom[dom.find("<body").unwrap()..];
    let body = &body[..body.find('>').unwrap()];
    assert!(
        body.contains("data-ready=\"1\""),
        "the page's script ran to its end: {body}"
    );
    assert!(!body.contains("data-errors"), "{body}");
    let entries = crate::log::entries(&journal);
    let calls: Vec<&str> = entries
        .iter()
        .filter(|e| e["kind"] == "intent")
        .map(|e| e["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(calls.len(), 8);
    assert_eq!(
        dom.matches("<rect class=\"call ").count(),
        calls.len(),
        "a bar per call"
    );
    for call in &calls {
        assert!(dom.contains(&format!("data-call=\"{call}\"")), "{call}");
    }
    for state in ["s-completed", "s-timed_out", "s-denied", "s-shut_down"] {
        assert!(
            dom.contains(&format!("<rect class=\"call {state}\"")),
            "{state}"
        );
    }
    let (ok, verified) = util::verify_report(&journal);
    assert!(ok);
    let head = verified["head"]["h"].as_str().unwrap();
    let line = dom.split("id=\"verify\"").nth(1).unwrap();
    assert!(line.starts_with(" class=\"ok\">Verified: "), "{line}");
    assert!(
        line[..line.find("</p>").unwrap()].contains(head),
        "the head hash: {line}"
    );
    assert!(dom.contains("⚑1"), "the debug window is flagged");
    assert_eq!(
        dom.matches("<line class=\"restart\"").count(),
        1,
        "the restart is marked"
    );
    assert!(dom.contains("<b>1</b> restart<"), "and counted");
    let tools = dom.split("id=\"tools\"").nth(1).unwrap();
    let read_file = tools
        .split("<tr>")
        .find(|r| r.starts_with("<td><bdi>read_file</bdi></td>"))
        .unwrap();
    assert!(
        read_file.contains("<td data-v=\"3\">3</td><td><bdi>result</bdi> 3</td>"),
        "{read_file}"
    );
    let rm = tools
        .split("<tr>")
        .find(|r| r.starts_with("<td><bdi>rm</bdi></td>"))
        .unwrap();
    assert!(
        rm.contains("<td><bdi>denied</bdi> 2</td><td data-v=\"2\">2</td>"),
        "not run: {rm}"
    );
    // The <script> is text: escaped in the DOM, our one script the only one.
    assert!(dom.contains("&lt;script&gt;document.title="), "{dom}");
    assert_eq!(dom.matches("<script").count(), 1, "{dom}");
    assert!(
        dom.contains("<title>mcp-bound report: "),
        "the title stands"
    );

    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report.png");
    let _ = std::fs::remove_file(&shot);
    let (_, console) = load(
        &browser,
        &page,
        &[
            "--hide-scrollbars",
            "--window-size=1280,1000",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    assert!(console.is_empty(), "console: {console:?}");
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{}",
        png.len()
    );
    eprintln!("report screenshot: {}", shot.display());
}

#[test]
fn a_broken_chain_is_said_on_the_page_and_what_follows_is_marked() {
    let dir = tempfile::tempdir().unwrap();
    let journal = crate::log::written(dir.path());
    let broken = crate::log::broken(dir.path(), &journal);
    let page = dir.path().join("broken.html");
    let (code, err) = report(&broken, &page);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("HASH_MISMATCH"), "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("id=\"verify\" class=\"broken\">FAILED: the chain breaks at line"),
        "{html}"
    );
    assert_eq!(
        html.matches("<tr class=\"unverified\">").count(),
        3,
        "the rows after the break"
    );

    let (code, err) = report(&dir.path().join("none.jsonl"), &page);
    assert_eq!(code, 2, "{err}");
}
