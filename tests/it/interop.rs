//! Interop with the official MCP SDKs, where users meet them:
//! a client on the TypeScript SDK v2 (`@modelcontextprotocol/client`
//! 2.4.0) or v1 (`@modelcontextprotocol/sdk` 1.32.2) starts a server on
//! the TypeScript SDK v2 or v1, or the Python SDK (`mcp` 2.3.0), over
//! stdio, once directly and once through mcp-bound, and the two runs are
//! compared: what the client saw (tests/interop/client_*.mjs print it as
//! one JSON object), then mcp-bound's records and journal.
//!
//! The SDKs are pinned in tests/interop/package.json (package-lock.json)
//! and requirements.txt; `.ci/run` installs them there. Without them each
//! test says so and passes, unless MCP_BOUND_INTEROP=require (as in CI),
//! where a missing SDK fails.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A client run that takes this long is hung.
const LIMIT: Duration = Duration::from_secs(90);

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop");

/// The npm packages and the Python distribution, at their pinned versions.
const PINNED: [(&str, &str); 3] = [
    ("@modelcontextprotocol/client", "2.4.0"),
    ("@modelcontextprotocol/server", "2.4.0"),
    ("@modelcontextprotocol/sdk", "1.32.2"),
];
const PYTHON_MCP: &str = "2.3.0";

/// What is missing, if anything, to run the suite.
fn missing() -> Option<String> {
    let dir = Path::new(DIR);
    if Command::new("node").arg("--version").output().is_err() {
        return Some("node is not installed".into());
    }
    for (package, version) in PINNED {
        let manifest = dir.join("node_modules").join(package).join("package.json");
        let found = std::fs::read_to_string(&manifest)
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
            .and_then(|v| v["version"].as_str().map(str::to_string));
        if found.as_deref() != Some(version) {
            return Some(format!(
                "{package} {version} is not installed in tests/interop (found {found:?})"
            ));
        }
    }
    let python = python();
    let check = Command::new(&python)
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('mcp'))",
        ])
        .output();
    match check {
        Ok(out) if String::from_utf8_lossy(&out.stdout).trim() == PYTHON_MCP => None,
        Ok(out) => Some(format!(
            "Python mcp {PYTHON_MCP} is not installed in tests/interop/.venv ({})",
            String::from_utf8_lossy(&out.stdout).trim()
        )),
        Err(e) => Some(format!("{} cannot run: {e}", python.display())),
    }
}

fn python() -> PathBuf {
    Path::new(DIR).join(".venv/bin/python")
}

/// Whether the suite can run: without the SDKs it says why and skips,
/// unless MCP_BOUND_INTEROP=require.
pub(crate) fn ready() -> bool {
    let Some(why) = missing() else {
        return true;
    };
    let install = "npm ci --prefix tests/interop && python3 -m venv tests/interop/.venv \
        && tests/interop/.venv/bin/pip install -r tests/interop/requirements.txt";
    if std::env::var("MCP_BOUND_INTEROP").as_deref() == Ok("require") {
        panic!("the interop suite needs the official SDKs: {why} (install: {install})");
    }
    skipped!("{why}; install with: {install} (.ci/run does)");
    false
}

/// A server command, by SDK.
fn server(sdk: &str) -> Vec<String> {
    let dir = Path::new(DIR);
    match sdk {
        "v2" => vec![
            "node".into(),
            dir.join("server_v2.mjs").display().to_string(),
        ],
        "v1" => vec![
            "node".into(),
            dir.join("server_v1.mjs").display().to_string(),
        ],
        "py" => vec![
            python().display().to_string(),
            dir.join("server.py").display().to_string(),
        ],
        other => panic!("no server {other}"),
    }
}

/// One client run.
pub(crate) struct Played {
    pub(crate) command: Vec<String>,
    pub(crate) output: Output,
    /// What the client saw.
    pub(crate) seen: Value,
    /// Through mcp-bound: its records (by file name) and journal.
    pub(crate) records: Vec<(String, Value)>,
    pub(crate) journal: Vec<Value>,
}

impl Played {
    #[track_caller]
    pub(crate) fn check(&self, ok: bool, what: &str) {
        if !ok {
            panic!("{what}\n{self}");
        }
    }

    /// The record of the run whose requests were more than the probe's.
    pub(crate) fn record(&self) -> &Value {
        let probes = self.probe_calls();
        let real: Vec<&(String, Value)> = self
            .records
            .iter()
            .filter(|(_, r)| !probes.iter().any(|p| r["call_id"] == *p))
            .collect();
        self.check(real.len() == 1, "one record besides the probe's");
        &real[0].1
    }

    /// The call ids whose only request was the server/discover probe.
    fn probe_calls(&self) -> Vec<String> {
        let mut by_call: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for entry in &self.journal {
            if entry["kind"] == "mcp_request" {
                by_call
                    .entry(entry["call_id"].as_str().unwrap_or_default().into())
                    .or_default()
                    .push(entry["method"].as_str().unwrap_or_default().into());
            }
        }
        by_call
            .into_iter()
            .filter(|(_, methods)| methods == &["server/discover"])
            .map(|(call, _)| call)
            .collect()
    }

    /// The journal's `kind` entries of the real run (not the probe's).
    pub(crate) fn entries(&self, kind: &str) -> Vec<Value> {
        let probes = self.probe_calls();
        self.journal
            .iter()
            .filter(|e| e["kind"] == kind && !probes.iter().any(|p| e["call_id"] == *p))
            .cloned()
            .collect()
    }
}

impl std::fmt::Display for Played {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "command: {}", self.command.join(" "))?;
        writeln!(f, "status: {}", self.output.status)?;
        writeln!(
            f,
            "stdout: {}",
            String::from_utf8_lossy(&self.output.stdout)
        )?;
        writeln!(
            f,
            "stderr: {}",
            String::from_utf8_lossy(&self.output.stderr)
        )?;
        for (name, record) in &self.records {
            writeln!(f, "record {name}: {record:#}")?;
        }
        for entry in &self.journal {
            writeln!(f, "journal: {entry}")?;
        }
        Ok(())
    }
}

/// Play `scenario` with `client` ("v2" or "v1") against `server`,
/// directly (`wrap` None) or through mcp-bound with these options, a
/// record per run (`{call_id}`) and a journal of every request.
fn play(
    client: &str,
    scenario: &str,
    sdk: &str,
    wrap: Option<&[&str]>,
    env: &[(&str, &str)],
) -> Played {
    play_with(client, scenario, (sdk, &[]), wrap, env)
}

/// As [`play`], the server started with these variables too
/// (`server`: its SDK, and its environment), and `client` "py" for the
/// Python SDK's client (tests/interop/client.py).
pub(crate) fn play_with(
    client: &str,
    scenario: &str,
    (sdk, server_env): (&str, &[(&str, &str)]),
    wrap: Option<&[&str]>,
    env: &[(&str, &str)],
) -> Played {
    let tag = util::unique_tag();
    // The SDKs start a server with a filtered environment: the tag is
    // given on the command line, through env(1).
    let mut command: Vec<String> = vec!["env".into(), format!("{}={tag}", util::TAG_VAR)];
    command.extend(server_env.iter().map(|(k, v)| format!("{k}={v}")));
    let dir = wrap.map(|_| tempfile::tempdir().expect("temp dir"));
    if let (Some(options), Some(dir)) = (wrap, &dir) {
        command.push(util::BIN.into());
        command.extend(["--mcp", "--journal-requests", "all"].map(String::from));
        command.push("--journal".into());
        command.push(dir.path().join("journal.jsonl").display().to_string());
        command.push("--record".into());
        command.push(dir.path().join("r-{call_id}.json").display().to_string());
        command.extend(options.iter().map(|o| o.to_string()));
        command.push("--".into());
    }
    command.extend(server(sdk));
    let mut child = match client {
        "py" => {
            let mut child = Command::new(python());
            child.arg(Path::new(DIR).join("client.py"));
            child
        }
        _ => {
            let mut child = Command::new("node");
            child.arg(Path::new(DIR).join(format!("client_{client}.mjs")));
            child
        }
    };
    child
        .arg(scenario)
        .arg("--")
        .args(&command)
        .env(util::TAG_VAR, &tag)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    util::with_default_signals(&mut child);
    let child = child.spawn().expect("start node");
    let output = wait_with_limit(child, &tag);
    util::assert_nothing_left(&tag);
    let mut records = Vec::new();
    let mut journal = Vec::new();
    if let Some(dir) = &dir {
        let mut names: Vec<PathBuf> = std::fs::read_dir(dir.path())
            .expect("read the run's directory")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        names.sort();
        for path in names {
            let text = std::fs::read_to_string(&path).expect("read a record");
            let record: Value = util::parse_json(text.as_bytes())
                .unwrap_or_else(|e| panic!("record {} is no JSON: {e}\n{text}", path.display()));
            util::check_schema(&record);
            records.push((
                path.file_name().unwrap().to_string_lossy().into_owned(),
                record,
            ));
        }
        let path = dir.path().join("journal.jsonl");
        if path.exists() {
            util::check_journal_schema(&path);
            let (ok, report) = util::verify_report(&path);
            assert!(ok, "verify: {report}");
            journal = std::fs::read_to_string(&path)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).expect("a journal line"))
                .collect();
        }
    }
    let seen = String::from_utf8_lossy(&output.stdout)
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null);
    let played = Played {
        command,
        output,
        seen,
        records,
        journal,
    };
    played.check(played.output.status.success(), "the client ran to its end");
    played
}

fn wait_with_limit(mut child: std::process::Child, tag: &str) -> Output {
    let started = Instant::now();
    // Drain both pipes while waiting: a client that writes much must not block.
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let (out, err) = (read(Box::new(stdout)), read(Box::new(stderr)));
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            for (pid, _) in util::tagged_processes(tag) {
                util::send_signal(pid, "KILL");
            }
            panic!("the client hung past {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Both runs saw the same, and through mcp-bound nothing was made up.
#[track_caller]
fn same(direct: &Played, wrapped: &Played) {
    wrapped.check(
        direct.seen == wrapped.seen && !direct.seen.is_null(),
        &format!(
            "the client saw the same direct and through mcp-bound\ndirect: {}\n--- direct run:\n{direct}",
            direct.seen
        ),
    );
}

fn outcomes(played: &Played, method: &str) -> Vec<(Value, Value)> {
    played
        .entries("mcp_response")
        .iter()
        .filter(|e| e["method"] == method)
        .map(|e| (e["outcome"].clone(), e["result_type"].clone()))
        .collect()
}

/// A listen stream open longer than --request-timeout still delivers the
/// change it was opened for (nothing timed it out or cancelled it), and
/// the client's close ends it. The Python server also takes most of a
/// second to start: the opening is not timed either.
#[test]
fn a_listen_stream_outlives_the_request_timeout() {
    if !ready() {
        return;
    }
    let env = [("INTEROP_LISTEN_MS", "1500")];
    for sdk in ["v2", "py"] {
        let direct = play("v2", "listen", sdk, None, &env);
        let timed = ["--request-timeout", "500ms"];
        let wrapped = play("v2", "listen", sdk, Some(&timed), &env);
        same(&direct, &wrapped);
        let notified = direct.seen["notified"] == true;
        wrapped.check(notified, "the change reached the client");
        let record = wrapped.record();
        wrapped.check(
            record["state"] == "shut_down"
                && record["mcp"]["synthesized"]["request_timeout"] == 0
                && record["mcp"]["cancellations_sent"] == 0
                && record["mcp"]["interrupted"] == json!([]),
            "nothing was timed out, cancelled or cut off",
        );
        wrapped.check(
            outcomes(&wrapped, "subscriptions/listen") == [(json!("cancelled"), Value::Null)],
            "the stream is journaled as the client's cancel ended it",
        );
    }
}

/// The server ends the stream itself (the SDKs send a graceful result).
#[test]
fn a_stream_the_server_ends() {
    if !ready() {
        return;
    }
    let direct = play("v2", "server-ended", "v2", None, &[]);
    let wrapped = play(
        "v2",
        "server-ended",
        "v2",
        Some(&["--request-timeout", "500ms"]),
        &[],
    );
    same(&direct, &wrapped);
    wrapped.check(direct.seen["closed"] == "graceful", "the server ended it");
    wrapped.check(
        outcomes(&wrapped, "subscriptions/listen") == [(json!("result"), json!("complete"))],
        "the stream's end is the server's result",
    );
    wrapped.check(
        wrapped.record()["mcp"]["interrupted"] == json!([]),
        "nothing cut off",
    );
}

/// The host closes while listening: the session is shut down, nothing was
/// interrupted, and no answer was written to a client that hung up.
#[test]
fn closing_while_listening_is_a_clean_shutdown() {
    if !ready() {
        return;
    }
    let direct = play("v2", "close-listening", "v2", None, &[]);
    let wrapped = play("v2", "close-listening", "v2", Some(&[]), &[]);
    same(&direct, &wrapped);
    let record = wrapped.record();
    wrapped.check(
        record["state"] == "shut_down"
            && record["mcp"]["in_flight_at_exit"] == 0
            && record["mcp"]["interrupted"] == json!([])
            && record["mcp"]["synthesized"]["server_exited"] == 0,
        "a clean shutdown, no answer made up",
    );
    wrapped.check(
        outcomes(&wrapped, "subscriptions/listen") == [(json!("shut_down"), Value::Null)],
        "the stream ended with the session",
    );
}

/// A multi-round-trip call: journaled as two rounds, the first
/// `input_required`, the retry (a new request id) `complete`.
#[test]
fn an_mrtr_round_trip_is_two_rounds() {
    if !ready() {
        return;
    }
    let direct = play("v2", "mrtr", "v2", None, &[]);
    let wrapped = play("v2", "mrtr", "v2", Some(&[]), &[]);
    same(&direct, &wrapped);
    wrapped.check(direct.seen["asked"] == 1, "one question asked");
    let rounds: Vec<(Value, Value, Value)> = wrapped
        .entries("mcp_response")
        .iter()
        .filter(|e| e["method"] == "tools/call")
        .map(|e| {
            (
                e["request_id"].clone(),
                e["outcome"].clone(),
                e["result_type"].clone(),
            )
        })
        .collect();
    wrapped.check(
        rounds.len() == 2
            && rounds[0].0 != rounds[1].0
            && (rounds[0].1.clone(), rounds[0].2.clone())
                == (json!("result"), json!("input_required"))
            && (rounds[1].1.clone(), rounds[1].2.clone()) == (json!("result"), json!("complete")),
        &format!("two rounds: {rounds:?}"),
    );
}

/// A 2025-11-25 task: tasks/result blocks past --request-timeout by
/// design and gets the result; the journal says what the tool call
/// finally did, against it.
#[test]
fn a_tasks_result_outlives_the_timeout_and_its_end_is_journaled() {
    if !ready() {
        return;
    }
    let env = [("INTEROP_TASK_MS", "1500")];
    let direct = play("v1", "task", "v1", None, &env);
    let wrapped = play(
        "v1",
        "task",
        "v1",
        Some(&["--request-timeout", "500ms"]),
        &env,
    );
    same(&direct, &wrapped);
    wrapped.check(
        direct.seen["result"]["text"] == "delayed 1500",
        "the task's result reached the client",
    );
    wrapped.check(
        wrapped.record()["mcp"]["synthesized"]["request_timeout"] == 0,
        "nothing timed out",
    );
    let calls = wrapped.entries("mcp_response");
    let created = calls
        .iter()
        .find(|e| e["method"] == "tools/call" && e["result_type"] == "task");
    let tasks = wrapped.entries("mcp_task");
    wrapped.check(
        created.is_some()
            && tasks.len() == 1
            && tasks[0]["status"] == "completed"
            && tasks[0]["request_id"] == created.unwrap()["request_id"],
        "the task's end is journaled against the call that created it",
    );
}

/// A crash in a modern session: directly, the connection is gone; through
/// mcp-bound with --restart, the crashed call gets -32000 and the next
/// call reaches a new server, with no initialize replayed (the new
/// server is spoken to in the modern era).
#[test]
fn a_modern_crash_restarts_without_a_replay() {
    if !ready() {
        return;
    }
    for sdk in ["v2", "py"] {
        let direct = play("v2", "crash", sdk, None, &[]);
        let wrapped = play("v2", "crash", sdk, Some(&["--restart", "on-failure"]), &[]);
        direct.check(
            direct.seen["crash"]["code"] == "CONNECTION_CLOSED"
                && direct.seen["after"]["error"].is_null(),
            "directly, the crash closes the connection",
        );
        wrapped.check(
            wrapped.seen["crash"] == json!({"code": -32000})
                && wrapped.seen["after"] == json!({"new_server": true}),
            "through mcp-bound the crashed call is answered and the next reaches a new server",
        );
        let incarnations = &wrapped.record()["mcp"]["incarnations"];
        wrapped.check(
            incarnations.as_array().map(Vec::len) == Some(2)
                && incarnations[0]["era"] == "modern"
                && incarnations[1]["era"] == "modern",
            "both servers were spoken to in the modern era: no initialize was replayed",
        );
    }
}

/// A crash in a legacy session: the new server is initialized again
/// (replay) and the client told to read its tools again.
#[test]
fn a_legacy_crash_restarts_with_a_replay() {
    if !ready() {
        return;
    }
    let wrapped = play("v1", "crash", "v1", Some(&["--restart", "on-failure"]), &[]);
    wrapped.check(
        wrapped.seen["after"] == json!({"new_server": true})
            && wrapped.seen["list_changed"] == true,
        "the next call reaches a new server, announced by list_changed",
    );
    let incarnations = &wrapped.record()["mcp"]["incarnations"];
    wrapped.check(
        incarnations[1]["era"] == "legacy"
            && incarnations[1]["protocol_version"] == incarnations[0]["protocol_version"],
        "the new server got the client's initialize again",
    );
}

/// The v2 client probes on a throwaway sibling: against a v1 server the
/// probe fails and it falls back to legacy. Each run has its own record
/// (`{call_id}`); the probe's says it was a modern request and nothing more.
#[test]
fn a_v2_client_against_a_v1_server_probes_then_falls_back() {
    if !ready() {
        return;
    }
    let direct = play("v2", "probe", "v1", None, &[]);
    let wrapped = play("v2", "probe", "v1", Some(&[]), &[]);
    same(&direct, &wrapped);
    wrapped.check(direct.seen["version"] == "2025-11-25", "the legacy era");
    wrapped.check(wrapped.records.len() == 2, "two runs, two records");
    wrapped.check(wrapped.probe_calls().len() == 1, "one of them the probe");
    let incarnations = &wrapped.record()["mcp"]["incarnations"];
    wrapped.check(incarnations[0]["era"] == "legacy", "the real run is legacy");
    let probe = wrapped
        .records
        .iter()
        .find(|(_, r)| r["call_id"] == wrapped.probe_calls()[0])
        .map(|(_, r)| r)
        .unwrap();
    wrapped.check(
        probe["mcp"]["incarnations"][0]["era"] == "modern"
            && probe["mcp"]["client"]["requests"] == 1,
        "the probe's record",
    );
}

/// A v2 client finds a v2 server modern; a v1 client speaks legacy to it.
#[test]
fn each_client_generation_against_a_v2_server() {
    if !ready() {
        return;
    }
    let direct = play("v2", "probe", "v2", None, &[]);
    let wrapped = play("v2", "probe", "v2", Some(&[]), &[]);
    same(&direct, &wrapped);
    wrapped.check(direct.seen["version"] == "2026-07-28", "the modern era");
    wrapped.check(
        wrapped.record()["mcp"]["incarnations"][0]["era"] == "modern",
        "recorded modern",
    );
    let direct = play("v1", "echo", "v2", None, &[]);
    let wrapped = play("v1", "echo", "v2", Some(&[]), &[]);
    same(&direct, &wrapped);
    wrapped.check(
        wrapped.record()["mcp"]["incarnations"][0]["era"] == "legacy",
        "recorded legacy",
    );
}
