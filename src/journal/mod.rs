//! The hash-chained audit journal: append-only JSON Lines shared by many
//! mcp-bound processes, and its offline verification.
//!
//! Line format, fields in this order: `v`, `seq`, `prev`, `kind`, `ts`, the
//! kind's own fields, and last `h`. `h` is the lowercase hex SHA-256 (or,
//! with a key, HMAC-SHA256) of the exact bytes of the line before the suffix
//! `,"h":"<64 hex>"}`; nothing is ever re-serialised to be hashed. `prev` is
//! the previous line's `h`; the first line is a `genesis` entry whose `prev`
//! is 64 zeros.
//!
//! Appending takes an exclusive flock for one append only (never while a
//! helper runs), reads the last line for `seq` and `prev`, writes the new
//! line with one write, and unlocks. A torn last line (a crash mid-write) is
//! kept and accounted for by a `recover` entry; nothing is deleted.
//!
//! What verification proves: every line is intact, in order and linked, and
//! intents and terminals pair up. What it cannot prove without more: a cut
//! tail, a rollback or a whole rewritten file pass unless checked against
//! an anchor (a head `h` kept elsewhere); a correctly chained forged append
//! passes unless the journal is keyed and the forger lacks the key.
//!
//! Parts: `key` (how `h` is computed), `entry` (the entries and how a line
//! is formatted), `line` (how a line is checked and parsed strictly),
//! `append` (the flock appender and torn-tail recovery), `verify` (the
//! verifier's checks), `stream` (the pass that reads and hands on each line).

mod append;
mod entry;
mod follow;
mod key;
mod line;
mod open;
mod report;
mod requests;
mod shapes;
mod stream;
mod verify;
mod view;

pub use crate::ids::hex;
pub use append::Journal;
pub use entry::{
    Appended, DecisionEntry, Entry, Intent, IntentGate, McpDecision, McpRequest, McpResponse,
    McpTask, SignalFact, StreamFacts, Terminal,
};
pub use follow::Follow;
pub use key::Key;
pub use open::OpenRequests;
pub use report::{Break, BreakKind, Head, Report, Unfinished, Verdict};
pub use shapes::KINDS;
pub use stream::{Seen, verify, verify_observed, verify_reader};
pub use verify::VerifyError;
pub use view::{EntryView, NOT_SENT, restart_after};

pub const VERSION: u64 = 1;
pub const ZERO_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// A longer line is not an entry mcp-bound writes: verification stops
/// there instead of holding it in memory.
pub const MAX_LINE: usize = 16 << 20;

#[cfg(test)]
mod tests {
    use super::entry::{Genesis, format_line};
    use super::line::{LineError, parse_line};
    use super::*;
    use crate::request_id::RequestId;
    use sha2::{Digest, Sha256};

    #[test]
    fn line_hash_covers_exact_bytes_before_suffix() {
        let (line, h) = format_line(
            &Key::Plain,
            0,
            ZERO_HASH,
            "genesis",
            "2026-01-01T00:00:00.000Z",
            &Genesis {
                journal_id: "j_1",
                key_id: None,
            },
        );
        let text = String::from_utf8(line.clone()).unwrap();
        assert!(text.starts_with(r#"{"v":1,"seq":0,"prev":"0000"#), "{text}");
        assert!(text.ends_with(&format!(",\"h\":\"{h}\"}}\n")));
        let prefix = &line[..line.len() - (6 + 64 + 2 + 1)];
        assert_eq!(hex(&Sha256::digest(prefix)), h);
        let parsed = parse_line(&Key::Plain, &line[..line.len() - 1])
            .ok()
            .unwrap();
        assert_eq!(parsed.kind(), "genesis");
    }

    #[test]
    fn each_kind_has_its_shape_and_no_other_kinds_fields() {
        let line = |kind: &str, body: serde_json::Value| {
            let (line, _) = format_line(
                &Key::Plain,
                1,
                ZERO_HASH,
                kind,
                "2026-01-01T00:00:00.000Z",
                &body,
            );
            match parse_line(&Key::Plain, &line[..line.len() - 1]) {
                Ok(_) => Ok(()),
                Err(LineError::Malformed(why)) => Err(why),
                Err(LineError::HashMismatch) => Err("hash".into()),
            }
        };
        let intent =
            serde_json::json!({"call_id": "c", "argv": ["x"], "uid": 0, "pid": 1, "limits": {}});
        assert!(line("intent", intent.clone()).is_ok());
        let mut with_state = intent.clone();
        with_state["state"] = "completed".into();
        assert!(
            line("intent", with_state).is_err(),
            "a terminal field in an intent"
        );
        let mut no_pid = intent;
        no_pid.as_object_mut().unwrap().remove("pid");
        assert!(line("intent", no_pid).is_err(), "a required field missing");
        let recover = serde_json::json!({"torn_offset": 1, "torn_length": 2, "torn_sha256": "ab"});
        assert!(line("recover", recover.clone()).is_ok());
        let mut with_call = recover;
        with_call["call_id"] = "c".into();
        assert!(line("recover", with_call).is_err(), "recover has no call");
        assert!(
            line(
                "genesis",
                serde_json::json!({"journal_id": "j", "key_id": null})
            )
            .is_ok()
        );
        assert!(line("mystery", serde_json::json!({})).is_err());
        let decision = serde_json::json!({"call_id": "c", "decision": "approved", "method": "tty",
            "requested_at": "t", "decided_at": "t", "waited_ms": 1, "approver_exit": null});
        assert!(line("decision", decision).is_ok());
    }

    /// The header is read in the writer's order (`v`, `seq`, `prev`,
    /// `kind`, `ts`): a line sealed with its hash but the header reordered
    /// is no entry of ours. A required field that is null is missing.
    #[test]
    fn the_header_comes_in_the_writers_order_and_required_means_not_null() {
        let sealed = |object: &str| {
            let prefix = object.strip_suffix('}').unwrap();
            let h = Key::Plain.digest(prefix.as_bytes());
            let line = format!("{prefix},\"h\":\"{h}\"}}");
            parse_line(&Key::Plain, line.as_bytes()).map(|_| ())
        };
        let zero = ZERO_HASH;
        let ts = "2026-01-01T00:00:00.000Z";
        let good = format!(
            r#"{{"v":1,"seq":1,"prev":"{zero}","kind":"recover","ts":"{ts}","torn_offset":1,"torn_length":2,"torn_sha256":"ab"}}"#
        );
        assert!(sealed(&good).is_ok());
        let reordered = format!(
            r#"{{"seq":1,"v":1,"prev":"{zero}","kind":"recover","ts":"{ts}","torn_offset":1,"torn_length":2,"torn_sha256":"ab"}}"#
        );
        assert!(matches!(sealed(&reordered), Err(LineError::Malformed(_))));
        let intent = |limits: &str| {
            format!(
                r#"{{"v":1,"seq":1,"prev":"{zero}","kind":"intent","ts":"{ts}","call_id":"c","argv":[],"uid":0,"pid":1,"limits":{limits}}}"#
            )
        };
        assert!(sealed(&intent("{}")).is_ok());
        assert!(matches!(
            sealed(&intent("null")),
            Err(LineError::Malformed(_))
        ));
    }

    /// A terminal handed over as text (to the watchdog) makes the same
    /// line as the entry itself, and the journal verifies.
    #[test]
    fn a_raw_terminal_is_the_same_entry() {
        let terminal = Terminal {
            call_id: "c1".into(),
            state: crate::record::State::Completed,
            exit: Some(crate::record::Exit::Code {
                code: 3,
                ntstatus: None,
            }),
            exit_code: Some(3),
            cancel_reason: None,
            cancel_signal: None,
            signals: Vec::new(),
            stream_end: None,
            descendants_signalled: 0,
            duration_ms: Some(5),
            streams: StreamFacts {
                stdout_bytes: 0,
                stderr_bytes_seen: 0,
                stderr_bytes_retained: 0,
                stderr_truncated: false,
            },
            excerpt: Some("x".into()),
            usage: None,
            repeats: Vec::new(),
            debug_windows: None,
        };
        let text = serde_json::to_string(&terminal).unwrap();
        let ts = "2026-01-01T00:00:00.000Z";
        let typed = Entry::Terminal(&terminal).format(&Key::Plain, 3, ZERO_HASH, ts);
        let raw = Entry::RawTerminal(&text).format(&Key::Plain, 3, ZERO_HASH, ts);
        assert_eq!(
            String::from_utf8(raw.0).unwrap(),
            String::from_utf8(typed.0).unwrap()
        );
        assert_eq!(raw.1, typed.1);
    }

    #[test]
    fn hmac_differs_from_plain_and_needs_the_key() {
        let key = Key::Hmac {
            secret: b"0123456789abcdef".to_vec(),
            id: "k".into(),
        };
        assert_ne!(key.digest(b"x"), Key::Plain.digest(b"x"));
        assert_eq!(key.digest(b"x").len(), 64);
    }

    /// The strict parser (`line::Parsed`) and the writer's entry structs
    /// must agree: every field any entry writes, with every optional field
    /// filled, is accepted, and the journal verifies. A field added to an
    /// entry and not to the parser fails here (the structs are built in
    /// full, so a new field must be filled in below first).
    #[test]
    fn every_field_the_writer_emits_is_one_the_parser_accepts() {
        use crate::record::{
            ApprovalMethod, CancelReason, Decision, Exit, Limits, SignalReason, State, StdoutGuard,
            StreamEnd, Target,
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("all-fields.jsonl");
        let mut journal = Journal::new(path.clone(), Key::Plain);
        journal.sync = false;
        let limits = Limits {
            timeout_ms: Some(1),
            signal: "TERM".into(),
            grace_ms: 1,
            wait_delay_ms: 1,
            head_bytes: 1,
            tail_bytes: 1,
            excerpt_bytes: 1,
            stdout_guard: StdoutGuard::Jsonrpc,
            max_message_bytes: 1,
            live_rate: Some(1),
            live_burst: Some(1),
            stdin_close_grace_ms: Some(1),
            redact_patterns: 1,
            rlimits: [(
                "nofile",
                crate::rlimit::RlimitRecord {
                    soft: Some(1),
                    hard: None,
                },
            )]
            .into(),
        };
        let intent = Intent {
            call_id: "c_all".into(),
            session_id: Some("s".into()),
            argv: vec!["true".into()],
            cwd: Some("/".into()),
            uid: 0,
            host: Some("h".into()),
            pid: 1,
            limits,
            tool_gate: None,
        };
        let decision = DecisionEntry {
            call_id: "c_all".into(),
            decision: Some(Decision::Approved),
            method: ApprovalMethod::Command,
            requested_at: "2026-01-01T00:00:00.000Z".into(),
            decided_at: "2026-01-01T00:00:00.000Z".into(),
            waited_ms: 1,
            approver_exit: Some(Exit::Code {
                code: 0,
                ntstatus: None,
            }),
        };
        let terminal = Terminal {
            call_id: "c_all".into(),
            state: State::CancelledAfterDispatch,
            exit: Some(Exit::Signal {
                signal: "TERM".into(),
                core_dumped: false,
            }),
            exit_code: Some(143),
            cancel_reason: Some(CancelReason::Signal),
            cancel_signal: Some("TERM".into()),
            signals: vec![SignalFact {
                t_ms: 1,
                signal: "TERM".into(),
                target: Target::Group,
                count: 1,
                reason: SignalReason::Signal,
            }],
            stream_end: Some(StreamEnd::Eof),
            descendants_signalled: 1,
            duration_ms: Some(1),
            streams: StreamFacts {
                stdout_bytes: 1,
                stderr_bytes_seen: 1,
                stderr_bytes_retained: 1,
                stderr_truncated: false,
            },
            excerpt: Some("x".into()),
            usage: Some(crate::record::Usage {
                user_ms: 1,
                sys_ms: 1,
                max_rss_kib: Some(1),
                cgroup_cpu_ms: Some(1),
                memory_peak_bytes: Some(1),
            }),
            repeats: Vec::new(),
            debug_windows: None,
        };
        let request = McpRequest {
            call_id: "c_all".into(),
            request_id: RequestId::new("\"r1\""),
            method: Some("tools/call".into()),
            name: Some("t".into()),
            params_sha256: Some("a".repeat(64)),
            line_sha256: Some("b".repeat(64)),
            irregular: vec![crate::session::Irregular::Unterminated],
        };
        let response = McpResponse {
            call_id: "c_all".into(),
            request_id: RequestId::new("\"r1\""),
            method: Some("tools/call".into()),
            outcome: crate::session::RequestOutcome::Error,
            reason: None,
            error_code: Some(-32001),
            result_type: Some(crate::session::ResultType::InputRequired),
            duration_ms: 1,
            bytes: 1,
        };
        journal.append(Entry::Intent(&intent)).unwrap();
        journal.append(Entry::Decision(&decision)).unwrap();
        let last = journal
            .append_all(&[Entry::McpRequest(&request), Entry::McpResponse(&response)])
            .unwrap();
        assert_eq!(last.seq, 4, "a group commit numbers each entry");
        let created = McpResponse {
            result_type: Some(crate::session::ResultType::Task),
            outcome: crate::session::RequestOutcome::Result,
            error_code: None,
            ..response.clone()
        };
        let task = McpTask {
            call_id: "c_all".into(),
            request_id: RequestId::new("\"r1\"").unwrap(),
            method: "tools/call".into(),
            task_id: "t1".into(),
            status: crate::session::TaskStatus::Failed,
            error_code: Some(-32603),
            duration_ms: 3,
        };
        journal
            .append_all(&[
                Entry::McpRequest(&request),
                Entry::McpResponse(&created),
                Entry::McpTask(&task),
            ])
            .unwrap();
        journal.append(Entry::Terminal(&terminal)).unwrap();
        let report = verify(&path, None, None).unwrap();
        assert!(report.ok, "{:?}", report.broken);
        assert_eq!(report.entries, 9);
        assert!(report.unfinished.is_empty());
        assert!(report.unfinished_requests.is_empty());
    }

    /// Each per-request fact is defined once (`session/audit.rs`): what
    /// it writes, with every optional field set, is exactly its kind's
    /// properties in the schema, and the strict reading takes it.
    // jsonschema is built for the Unix tests only.
    #[cfg(unix)]
    #[test]
    fn each_audit_fact_is_its_schema_entry_field_for_field() {
        use crate::session::{Audit, Irregular, RequestOutcome, ResultType, TaskStatus};
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../schema/journal.schema.json")).unwrap();
        let id = || RequestId::new("7").unwrap();
        let facts = [
            Audit::Request(McpRequest {
                call_id: "c".into(),
                request_id: Some(id()),
                method: Some("tools/call".into()),
                name: Some("t".into()),
                params_sha256: Some("a".repeat(64)),
                line_sha256: Some("b".repeat(64)),
                irregular: vec![Irregular::InvalidUtf8],
            }),
            Audit::Response(McpResponse {
                call_id: "c".into(),
                request_id: Some(id()),
                method: Some("tools/call".into()),
                outcome: RequestOutcome::Refused,
                reason: Some(crate::session::Refusal::CaseVariantKey),
                error_code: Some(1),
                result_type: Some(ResultType::Complete),
                duration_ms: 1,
                bytes: 1,
            }),
            Audit::Decision(McpDecision {
                call_id: "c".into(),
                request_id: id(),
                tool: "t".into(),
                params_sha256: Some("a".repeat(64)),
                decision: crate::record::Decision::Approved,
                by: crate::session::DecidedBy::Command,
                waited_ms: 1,
                approver_exit: Some(crate::record::Exit::Code {
                    code: 0,
                    ntstatus: None,
                }),
                action: None,
                covered_by: None,
            }),
            Audit::Decision(McpDecision {
                call_id: "c".into(),
                request_id: id(),
                tool: "t".into(),
                params_sha256: Some("a".repeat(64)),
                decision: crate::record::Decision::Denied,
                by: crate::session::DecidedBy::Host,
                waited_ms: 1,
                approver_exit: None,
                action: Some(crate::record::mcp::HostAction::Accept),
                covered_by: Some(id()),
            }),
            Audit::Task(McpTask {
                call_id: "c".into(),
                request_id: id(),
                method: "tools/call".into(),
                task_id: "t1".into(),
                status: TaskStatus::Completed,
                error_code: Some(1),
                duration_ms: 1,
            }),
            Audit::ToolDrift(crate::session::McpToolDrift {
                call_id: "c".into(),
                request_id: id(),
                key: "files (npx files)".into(),
                tool: "t".into(),
                change: "changed",
                fields: vec!["description".into()],
                sha256: "a".repeat(64),
                pinned_sha256: Some("b".repeat(64)),
            }),
            Audit::Restart(crate::session::McpRestart {
                call_id: "c".into(),
                attempt: 1,
                pid: 42,
                exit: Some(crate::record::Exit::Signal {
                    signal: "KILL".into(),
                    core_dumped: false,
                }),
            }),
            Audit::Restart(crate::session::McpRestart {
                call_id: "c".into(),
                attempt: 2,
                pid: 43,
                exit: None,
            }),
            Audit::Decision(McpDecision {
                call_id: "c".into(),
                request_id: id(),
                tool: "t".into(),
                params_sha256: None,
                decision: crate::record::Decision::Denied,
                by: crate::session::DecidedBy::Pin,
                waited_ms: 0,
                approver_exit: None,
                action: None,
                covered_by: None,
            }),
        ];
        for fact in &facts {
            let (line, _) =
                Entry::from(fact).format(&Key::Plain, 1, ZERO_HASH, "2026-01-01T00:00:00.000Z");
            let parsed = parse_line(&Key::Plain, &line[..line.len() - 1])
                .unwrap_or_else(|_| panic!("the strict reading refuses {fact:?}"));
            let kind = parsed.kind();
            let value: serde_json::Value = serde_json::from_slice(&line).unwrap();
            let written: std::collections::BTreeSet<&str> = value
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            let branch = schema["oneOf"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["title"] == kind)
                .unwrap_or_else(|| panic!("no schema entry for {kind}"));
            let listed: std::collections::BTreeSet<&str> = branch["properties"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(written, listed, "{kind}: written against the schema");
            let validator = jsonschema::validator_for(&schema).unwrap();
            assert!(validator.is_valid(&value), "{kind}: {value}");
        }
    }

    #[test]
    fn requests_pair_with_their_responses_inside_their_call() {
        let dir = tempfile::tempdir().unwrap();
        let request = |call: &str, id: &str| McpRequest {
            call_id: call.into(),
            request_id: RequestId::new(id),
            method: Some("tools/call".into()),
            name: None,
            params_sha256: None,
            line_sha256: None,
            irregular: Vec::new(),
        };
        let response = |call: &str, id: &str| McpResponse {
            call_id: call.into(),
            request_id: RequestId::new(id),
            method: Some("tools/call".into()),
            outcome: crate::session::RequestOutcome::Result,
            reason: None,
            error_code: None,
            result_type: Some(crate::session::ResultType::Complete),
            duration_ms: 0,
            bytes: 10,
        };
        let intent = |call: &str| Intent {
            call_id: call.into(),
            session_id: None,
            argv: vec!["x".into()],
            cwd: None,
            uid: 0,
            host: None,
            pid: 1,
            limits: crate::record::Limits {
                timeout_ms: None,
                signal: "TERM".into(),
                grace_ms: 0,
                wait_delay_ms: 0,
                head_bytes: 0,
                tail_bytes: 0,
                excerpt_bytes: 0,
                stdout_guard: crate::record::StdoutGuard::Jsonrpc,
                max_message_bytes: 1,
                live_rate: None,
                live_burst: None,
                stdin_close_grace_ms: None,
                redact_patterns: 0,
                rlimits: Default::default(),
            },
            tool_gate: None,
        };
        let run = |name: &str, entries: &[Entry<'_>]| {
            let path = dir.path().join(name);
            let mut journal = Journal::new(path.clone(), Key::Plain);
            journal.sync = false;
            for entry in entries {
                journal.append_all(std::slice::from_ref(entry)).unwrap();
            }
            verify(&path, None, None).unwrap()
        };
        let (a, b) = (intent("a"), intent("b"));
        let (q1, q1_again, r1, r1_spelled) = (
            request("a", "1"),
            request("a", "1.0"),
            response("a", "1"),
            response("a", "1e0"),
        );
        // Paired, and an id may come back once its request ended.
        let report = run(
            "ok.jsonl",
            &[
                Entry::Intent(&a),
                Entry::McpRequest(&q1),
                Entry::McpResponse(&r1),
                Entry::McpRequest(&q1),
                Entry::McpResponse(&r1),
            ],
        );
        assert!(report.ok, "{:?}", report.broken);
        // A response with no request.
        let report = run(
            "orphan.jsonl",
            &[Entry::Intent(&a), Entry::McpResponse(&r1)],
        );
        assert_eq!(report.broken.unwrap().kind, BreakKind::OrphanTerminal);
        // A request outside any open call.
        let report = run(
            "outside.jsonl",
            &[Entry::Intent(&b), Entry::McpRequest(&q1)],
        );
        assert_eq!(report.broken.unwrap().kind, BreakKind::OrphanTerminal);
        // Two requests with one id in flight: 1 and 1.0 are one id, as
        // the session matched them.
        let report = run(
            "dup.jsonl",
            &[
                Entry::Intent(&a),
                Entry::McpRequest(&q1),
                Entry::McpRequest(&q1_again),
            ],
        );
        assert_eq!(report.broken.unwrap().kind, BreakKind::DuplicateCall);
        // A duplicate the session marked (and did not track) is not a
        // second open request: the journal still verifies, and the first
        // is the one a response ends.
        let marked = McpRequest {
            irregular: vec![crate::session::Irregular::DuplicateId],
            line_sha256: Some("c".repeat(64)),
            ..request("a", "1")
        };
        let report = run(
            "marked.jsonl",
            &[
                Entry::Intent(&a),
                Entry::McpRequest(&q1),
                Entry::McpRequest(&marked),
                Entry::McpResponse(&r1),
            ],
        );
        assert!(report.ok, "{:?}", report.broken);
        assert!(report.unfinished_requests.is_empty());
        // A response spelled otherwise ends the request.
        let report = run(
            "spelled.jsonl",
            &[
                Entry::Intent(&a),
                Entry::McpRequest(&q1_again),
                Entry::McpResponse(&r1_spelled),
            ],
        );
        assert!(report.ok, "{:?}", report.broken);
        assert!(report.unfinished_requests.is_empty());
        // A request still open when its call ends never ended.
        let terminal = Terminal {
            call_id: "a".into(),
            state: crate::record::State::ShutDown,
            exit: None,
            exit_code: Some(0),
            cancel_reason: None,
            cancel_signal: None,
            signals: Vec::new(),
            stream_end: None,
            descendants_signalled: 0,
            duration_ms: Some(1),
            streams: StreamFacts {
                stdout_bytes: 0,
                stderr_bytes_seen: 0,
                stderr_bytes_retained: 0,
                stderr_truncated: false,
            },
            excerpt: None,
            usage: None,
            repeats: Vec::new(),
            debug_windows: None,
        };
        let report = run(
            "unfinished.jsonl",
            &[
                Entry::Intent(&a),
                Entry::McpRequest(&q1),
                Entry::Terminal(&terminal),
            ],
        );
        assert!(report.ok, "{:?}", report.broken);
        assert_eq!(report.unfinished_requests.len(), 1);
        assert_eq!(report.unfinished_requests[0].request_id, "1");
        assert_eq!(report.unfinished_requests[0].method, "tools/call");
        // A refused request is ended by the call's very next entry, its
        // refused response under the same id (null too); its id is never
        // open, so an id in flight may be refused.
        let refused = |id: Option<&str>| {
            let request = McpRequest {
                request_id: id.and_then(RequestId::new),
                irregular: vec![crate::session::Irregular::Refused],
                line_sha256: Some("d".repeat(64)),
                ..request("a", "1")
            };
            let end = McpResponse {
                request_id: id.and_then(RequestId::new),
                outcome: crate::session::RequestOutcome::Refused,
                reason: Some(crate::session::Refusal::NotOneValue),
                error_code: Some(-32600),
                result_type: None,
                ..response("a", "1")
            };
            (request, end)
        };
        let (refused_null, end_null) = refused(None);
        let (refused_1, end_1) = refused(Some("1"));
        let report = run(
            "refused.jsonl",
            &[
                Entry::Intent(&a),
                Entry::McpRequest(&q1),
                Entry::McpRequest(&refused_null),
                Entry::McpResponse(&end_null),
                Entry::McpRequest(&refused_1),
                Entry::McpResponse(&end_1),
                Entry::McpResponse(&r1),
                Entry::Terminal(&terminal),
            ],
        );
        assert!(report.ok, "{:?}", report.broken);
        assert!(report.unfinished_requests.is_empty());
        for (name, entries) in [
            (
                "refused-alone.jsonl",
                &[Entry::Intent(&a), Entry::McpResponse(&end_null)][..],
            ),
            (
                "refused-other-id.jsonl",
                &[
                    Entry::Intent(&a),
                    Entry::McpRequest(&refused_null),
                    Entry::McpResponse(&end_1),
                ],
            ),
            (
                "refused-then-request.jsonl",
                &[
                    Entry::Intent(&a),
                    Entry::McpRequest(&refused_1),
                    Entry::McpRequest(&q1),
                ],
            ),
            (
                "refused-then-end.jsonl",
                &[
                    Entry::Intent(&a),
                    Entry::McpRequest(&refused_1),
                    Entry::Terminal(&terminal),
                ],
            ),
        ] {
            let report = run(name, entries);
            assert_eq!(
                report.broken.map(|b| b.kind),
                Some(BreakKind::OrphanTerminal),
                "{name}"
            );
        }
    }
}
