//! One call, start to end: validate, write the in-flight record, spawn,
//! supervise, decide the state and exit code from what was observed, write
//! the final record and the bounded echo.

use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use crate::approve;
use crate::child::{self, ExitObs};
use crate::cli::Echo;
use crate::error::{Error, code};
use crate::ids::rfc3339;
use crate::journal::{self, Journal};
use crate::record::{
    Approval, CancelReason, Decision, Event, EventKind, Limits, Record, SCHEMA, State, StderrFacts,
    StdoutGuard, Supervisor,
};
use crate::redact::Redactor;
use crate::settings::{ApprovalSettings, JournalSettings, Settings};
use crate::signals::{self, SignalPipe};
use crate::sink::Sink;
use crate::supervise::{self, Outcome};
use crate::sys;
use crate::termination::Cancellation;
use crate::units::{limit_millis, millis};

/// How long the final writes to our stderr or a record fd may wait for a
/// reader that does not read. Past it they are dropped: never hang at exit.
const EXIT_WRITE_LIMIT: Duration = Duration::from_secs(1);

/// Run the call; the result is mcp-bound's exit code.
pub fn run(settings: Settings) -> Result<i32, Error> {
    let settings = &settings;
    let origin = Instant::now();
    let started_at = SystemTime::now();
    // First, so a signal during set-up is seen and cancels before dispatch.
    let signals = SignalPipe::install().map_err(|e| setup("cannot install signal handlers", e))?;
    if let Some(fd) = settings.record.fd {
        if !sys::is_open_for_writing(fd) {
            return Err(Error::Usage(format!(
                "--record-fd {fd}: descriptor {fd} is not open for writing"
            )));
        }
        // SAFETY: checked open just above; we never close it.
        let borrowed = unsafe { sys::borrow_raw(fd) };
        // The record channel is ours: the helper must not inherit it.
        sys::set_cloexec(borrowed).map_err(|e| setup("--record-fd", e))?;
    }
    sys::become_subreaper().map_err(|e| setup("cannot become a child subreaper", e))?;
    let journal = match &settings.journal {
        Some(JournalSettings { path, key, .. }) => {
            let key = match key {
                Some(key_path) => journal::Key::load(key_path).map_err(|e| {
                    Error::Usage(format!("--journal-key {}: {e}", key_path.display()))
                })?,
                None => journal::Key::Plain,
            };
            Some(Journal::new(path.clone(), key))
        }
        None => None,
    };

    let redactor = Redactor::new(&settings.capture.redact)
        .map_err(|e| Error::Usage(format!("--redact {e}")))?;
    let mut record = initial_record(settings, started_at, &redactor);
    let mut call = Finish {
        settings,
        origin,
        started_at,
        redactor: &redactor,
        journal: None,
        record_refused: std::cell::Cell::new(false),
    };
    // Fail closed: no intent in the journal, no helper.
    if let Some(journal) = &journal {
        let intent = journal::Intent {
            call_id: record.call_id.clone(),
            session_id: record.session_id.clone(),
            argv: record.argv.clone(),
            cwd: record.cwd.clone(),
            uid: sys::current_uid(),
            host: sys::hostname(),
            pid: std::process::id(),
            limits: record.limits.clone(),
        };
        if let Err(err) = journal.append(journal::Entry::Intent(&intent)) {
            let error = format!(
                "--journal {}: cannot write the intent: {err}; the helper was not started",
                journal.path.display()
            );
            return Ok(call.fail_before_dispatch(record, error, code::OWN_FAILURE));
        }
        call.journal = Some(journal);
    }
    if let Some(error) = call.write_in_flight(&record) {
        return Ok(call.fail_before_dispatch(record, error, code::OWN_FAILURE));
    }

    let pending = signals.take();
    if let Some(&(signo, _)) = pending.terminating.first() {
        return Ok(call.cancel_before_dispatch(record, signo));
    }

    if let Some(approval) = &settings.approval {
        if let Some(exit_code) = call.approve(&mut record, approval, &signals) {
            return Ok(exit_code);
        }
        // Approved: the in-flight record now says dispatched.
        record.state = State::Dispatched;
        if let Some(error) = call.write_in_flight(&record) {
            return Ok(call.fail_before_dispatch(record, error, code::OWN_FAILURE));
        }
    }

    let mut stdout = Sink::stdout();
    let dispatched_at = Instant::now();
    let helper = match child::spawn(&settings.command, None) {
        Ok(helper) => helper,
        Err(err) => {
            let program = settings.command[0].to_string_lossy();
            let (error, exit_code) = match err {
                child::SpawnError::NotFound(e) => (
                    Error::NotFound(format!("{program}: command not found ({e})")),
                    code::NOT_FOUND,
                ),
                child::SpawnError::NotExecutable(e) => (
                    Error::NotExecutable(format!("{program}: cannot run: {e}")),
                    code::NOT_EXECUTABLE,
                ),
            };
            return Ok(call.fail_before_dispatch(record, error.to_string(), exit_code));
        }
    };
    record.pid = Some(helper.pid as u32);

    let config = supervise::Config {
        policy: settings.policy,
        head_bytes: settings.capture.head_bytes,
        tail_bytes: settings.capture.tail_bytes,
        flood_path: settings.capture.flood_path,
        stdout: supervise::StdoutMode::Forward {
            guard: settings.streams.guard,
        },
        live: settings.streams.live,
        redactor: redactor.clone(),
    };
    let outcome = supervise::supervise(
        helper,
        dispatched_at,
        origin,
        &signals,
        &mut stdout,
        &config,
    );
    let exit_code = decide(settings, &outcome, &mut record);
    if let Some(failure) = &outcome.failure {
        call.say(format!("mcp-bound: {failure}\n"));
    }
    Ok(call.finish(record, exit_code, Some(outcome)))
}

fn setup(what: &str, err: io::Error) -> Error {
    Error::Setup(format!("{what}: {err}"))
}

fn initial_record(settings: &Settings, started_at: SystemTime, redactor: &Redactor) -> Record {
    let policy = settings.policy;
    let guard = StdoutGuard::new(settings.streams.guard.is_some());
    let live = settings.streams.live;
    let capture = &settings.capture;
    Record {
        schema: SCHEMA,
        call_id: settings
            .record
            .call_id
            .clone()
            .unwrap_or_else(crate::ids::call_id),
        session_id: settings.record.session_id.clone(),
        state: if settings.approval.is_some() {
            State::AwaitingApproval
        } else {
            State::Dispatched
        },
        cancel_reason: None,
        cancel_signal: None,
        exit: None,
        exit_code: None,
        stream_end: None,
        descendants_signalled: 0,
        argv: settings
            .command
            .iter()
            .map(|arg| redactor.redact(&arg.to_string_lossy()).into_owned())
            .collect(),
        cwd: std::env::current_dir()
            .ok()
            .map(|dir| dir.to_string_lossy().into_owned()),
        pid: None,
        started_at: rfc3339(started_at),
        ended_at: None,
        duration_ms: None,
        last_stdout_at: None,
        last_stderr_at: None,
        error: None,
        approval: match &settings.approval {
            Some(approval) => Approval {
                required: true,
                method: Some(approval.method.record()),
                timeout_ms: Some(limit_millis(approval.timeout)),
                ..Approval::default()
            },
            None => Approval::default(),
        },
        stdout: crate::record::StdoutFacts {
            guard,
            ..Default::default()
        },
        stderr: StderrFacts {
            head_bytes: capture.head_bytes as u64,
            tail_bytes: capture.tail_bytes as u64,
            ..Default::default()
        },
        limits: Limits {
            timeout_ms: policy.timeout.map(limit_millis),
            signal: signals::name(policy.signal),
            grace_ms: limit_millis(policy.grace),
            wait_delay_ms: limit_millis(policy.wait_delay),
            head_bytes: capture.head_bytes as u64,
            tail_bytes: capture.tail_bytes as u64,
            excerpt_bytes: capture.excerpt_bytes as u64,
            stdout_guard: guard,
            max_message_bytes: settings.streams.max_message_bytes as u64,
            live_rate: live.map(|budget| budget.rate),
            live_burst: live.map(|budget| budget.burst),
            stdin_close_grace_ms: policy.stdin_close_grace.map(limit_millis),
            redact_patterns: redactor.extra_patterns() as u64,
        },
        events: Vec::new(),
        mcp_bound: Supervisor {
            version: env!("CARGO_PKG_VERSION").to_string(),
            pid: std::process::id(),
        },
    }
}

/// The state and exit code follow from what was observed: a timeout
/// while the helper ran is `timed_out`; any other cancellation, while it
/// ran or during the clean-up after it exited (pipes held, leftovers), is
/// `cancelled_after_dispatch`, with the helper's real exit kept; otherwise
/// the helper completed, whatever happened to its descendants afterwards.
fn decide(settings: &Settings, outcome: &Outcome, record: &mut Record) -> i32 {
    let helper_status = outcome.exit.map(ExitObs::shell_status);
    let cancel = outcome.cancelled_while_running.or(outcome.cancellation);
    let (state, exit_code) = match cancel {
        // mcp-bound itself failed after dispatch: whatever else happened,
        // that is the truth of this call (the helper may have acted).
        _ if outcome.failure.is_some() => (State::FailedAfterDispatch, code::OWN_FAILURE),
        Some(Cancellation::Timeout) => {
            let status = if settings.preserve_status {
                helper_status.unwrap_or(code::TIMED_OUT)
            } else {
                code::TIMED_OUT
            };
            (State::TimedOut, status)
        }
        Some(Cancellation::Signal(signo)) => (State::CancelledAfterDispatch, 128 + signo),
        Some(Cancellation::ClientDisconnected) => {
            (State::CancelledAfterDispatch, code::CLIENT_DISCONNECTED)
        }
        // The host asked for shutdown by closing stdin and left: the
        // helper's own status says how it ended.
        Some(Cancellation::StdinClosed) => (
            State::CancelledAfterDispatch,
            helper_status.unwrap_or(code::OWN_FAILURE),
        ),
        None => (State::Completed, helper_status.unwrap_or(code::OWN_FAILURE)),
    };
    record.state = state;
    record.error = outcome.failure.clone();
    record.cancel_reason = cancel.map(CancelReason::from);
    record.cancel_signal = match cancel {
        Some(Cancellation::Signal(signo)) => Some(signals::name(signo)),
        Some(
            Cancellation::Timeout | Cancellation::ClientDisconnected | Cancellation::StdinClosed,
        )
        | None => None,
    };
    record.exit = outcome.exit.map(ExitObs::to_record);
    record.stream_end = Some(outcome.stream_end);
    record.descendants_signalled = outcome.descendants_signalled;
    record.stdout = outcome.stdout.clone();
    exit_code
}

/// A monotonic instant as wall-clock time, through the run's two origins.
fn wall_time(origin: Instant, started_at: SystemTime, at: Instant) -> String {
    rfc3339(started_at + at.saturating_duration_since(origin))
}

/// The end of a call, whichever way it ends.
struct Finish<'a> {
    settings: &'a Settings,
    origin: Instant,
    started_at: SystemTime,
    redactor: &'a Redactor,
    /// Set once the intent is in the journal: then a terminal entry is owed.
    journal: Option<&'a Journal>,
    /// The record path already refused the in-flight record, and said so:
    /// the final record is still tried, but a second refusal is not news.
    record_refused: std::cell::Cell<bool>,
}

impl Finish<'_> {
    /// Write the in-flight record; the error line if it cannot be written
    /// (then nothing may start).
    fn write_in_flight(&self, record: &Record) -> Option<String> {
        let path = self.settings.record.path.as_ref()?;
        let err = write_record_file(path, record).err()?;
        self.record_refused.set(true);
        Some(format!(
            "--record {}: cannot write the record before dispatch: {err}; the helper was not started",
            path.display()
        ))
    }

    fn cancel_before_dispatch(&self, mut record: Record, signo: i32) -> i32 {
        record.state = State::CancelledBeforeDispatch;
        record.cancel_reason = Some(Cancellation::Signal(signo).into());
        record.cancel_signal = Some(signals::name(signo));
        self.finish(record, 128 + signo, None)
    }

    /// Ask for approval. None: approved, go on. Some(code): the call ends
    /// here (denied, expired, cancelled, or the gate could not be asked),
    /// with the record and journal already written.
    fn approve(
        &self,
        record: &mut Record,
        approval: &ApprovalSettings,
        signals: &SignalPipe,
    ) -> Option<i32> {
        let method = &approval.method;
        let request = approve::Request {
            call_id: &record.call_id,
            session_id: record.session_id.as_deref(),
            argv: self
                .settings
                .command
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            cwd: record.cwd.as_deref(),
            timeout_ms: record.limits.timeout_ms,
            limits: &record.limits,
        };
        let gate = approve::Gate {
            timeout: approval.timeout,
            wait_delay: self.settings.policy.wait_delay,
            redactor: self.redactor,
            signals,
            origin: self.origin,
        };
        let outcome = approve::ask(method, &request, &gate);
        record.approval.decision = outcome.decision;
        record.approval.requested_at = Some(rfc3339(outcome.requested_at));
        record.approval.decided_at = Some(rfc3339(outcome.decided_at));
        record.approval.waited_ms = Some(millis(outcome.waited));
        record.approval.approver_exit = outcome.approver_exit.map(ExitObs::to_record);
        record.approval.excerpt = outcome.excerpt.clone();
        // The decision is its own journal entry, before anything runs.
        if let Some(journal) = self.journal {
            let entry = journal::DecisionEntry {
                call_id: record.call_id.clone(),
                decision: outcome.decision,
                method: method.record(),
                requested_at: rfc3339(outcome.requested_at),
                decided_at: rfc3339(outcome.decided_at),
                waited_ms: millis(outcome.waited),
                approver_exit: record.approval.approver_exit.clone(),
            };
            if let Err(err) = journal.append(journal::Entry::Decision(&entry)) {
                let error = format!(
                    "--journal {}: cannot write the decision: {err}; the helper was not started",
                    journal.path.display()
                );
                return Some(self.fail_before_dispatch(record.clone(), error, code::OWN_FAILURE));
            }
        }
        if let Some(signo) = outcome.cancelled_by {
            return Some(self.cancel_before_dispatch(record.clone(), signo));
        }
        let message = match outcome.decision {
            Some(Decision::Approved) => return None,
            Some(Decision::Error) | None => {
                let error = outcome.error.unwrap_or_else(|| "approval failed".into());
                return Some(self.fail_before_dispatch(record.clone(), error, code::OWN_FAILURE));
            }
            Some(Decision::Expired) => format!(
                "approval expired after {}; the helper was not started",
                humantime::format_duration(approval.timeout)
            ),
            Some(Decision::Denied) => match &record.approval.approver_exit {
                Some(exit) => format!(
                    "denied by the approver ({}); the helper was not started",
                    describe_exit(Some(exit))
                ),
                None => "denied; the helper was not started".to_string(),
            },
        };
        self.say(format!("mcp-bound: {message}\n"));
        record.state = State::Denied;
        Some(self.finish(record.clone(), code::DENIED, None))
    }

    /// Nothing was started: say so in one line, and in the record and
    /// journal where those exist.
    fn fail_before_dispatch(&self, mut record: Record, error: String, exit_code: i32) -> i32 {
        self.say(format!("mcp-bound: {error}\n"));
        record.state = State::FailedBeforeDispatch;
        record.error = Some(error);
        self.finish(record, exit_code, None)
    }

    /// The one way a line reaches our stderr from a call: masked, and
    /// bounded in time so a reader that does not read cannot hang us.
    fn say(&self, line: String) {
        let line = self.redactor.redact(&line);
        let _ = Sink::stderr().write_all_within(line.as_bytes(), EXIT_WRITE_LIMIT);
    }

    /// Complete the record, write it everywhere asked, echo, return the code.
    fn finish(&self, mut record: Record, exit_code: i32, outcome: Option<Outcome>) -> i32 {
        let settings = self.settings;
        // The error text can quote argv or a path: it leaves masked, like
        // everything else (the journal's terminal entry is built from this).
        record.error = record
            .error
            .map(|error| self.redactor.redact(&error).into_owned());
        record.exit_code = Some(exit_code);
        record.ended_at = Some(rfc3339(SystemTime::now()));
        record.duration_ms = Some(millis(self.origin.elapsed()));
        let mut echo_text = None;
        let mut journal_excerpt = None;
        if let Some(outcome) = outcome {
            let capture = &outcome.capture;
            let retained = capture.head_limit() + capture.tail_limit();
            record.stderr = StderrFacts {
                bytes_seen: capture.bytes_seen(),
                bytes_retained: capture.bytes_retained(),
                truncated: capture.truncated(),
                head_bytes: capture.head_limit() as u64,
                tail_bytes: capture.tail_limit() as u64,
                excerpt: capture.excerpt(retained, self.redactor).text,
                live_bytes_forwarded: outcome.live_forwarded,
                live_bytes_dropped: outcome.live_dropped,
                live_bytes_unsent: outcome.live_unsent,
            };
            record.last_stdout_at = outcome
                .last_stdout
                .map(|at| wall_time(self.origin, self.started_at, at));
            record.last_stderr_at = outcome
                .last_stderr
                .map(|at| wall_time(self.origin, self.started_at, at));
            record.events = outcome.events;
            echo_text = Some(
                capture
                    .excerpt(settings.capture.excerpt_bytes, self.redactor)
                    .text,
            );
            if let Some(journal) = &settings.journal
                && journal.excerpt_bytes > 0
            {
                journal_excerpt = Some(capture.excerpt(journal.excerpt_bytes, self.redactor).text);
            }
        }
        record.events.sort_by_key(|event: &Event| event.t_ms);

        let complain = |line: String| self.say(line);
        // A failure or denial before dispatch already printed its one line.
        let echo = match settings.capture.echo {
            _ if matches!(record.state, State::FailedBeforeDispatch | State::Denied) => false,
            Echo::Never => false,
            Echo::OnFailure => exit_code != 0,
            Echo::Always => true,
        };
        if echo {
            // With --live the host's log already has the stderr, as it
            // came: repeating it as an excerpt would show every line twice.
            // Only the summary line then, which says so.
            let shown_live = record.limits.live_rate.is_some();
            let mut text = if shown_live {
                String::new()
            } else {
                echo_text.unwrap_or_default()
            };
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&summary(&record));
            complain(text);
        }
        if let Some(path) = &settings.record.path
            && let Err(err) = write_record_file(path, &record)
            && !self.record_refused.get()
        {
            complain(format!(
                "mcp-bound: --record {}: cannot write the final record: {err}\n",
                path.display()
            ));
        }
        if let Some(journal) = self.journal {
            let terminal = journal::Terminal::from_record(&record, journal_excerpt);
            if let Err(err) = journal.append(journal::Entry::Terminal(&terminal)) {
                complain(format!(
                    "mcp-bound: --journal {}: cannot write the terminal entry: {err}\n",
                    journal.path.display()
                ));
            }
        }
        if let Some(fd) = settings.record.fd {
            let line = record.to_line();
            if let Err(err) = Sink::for_fd(fd).write_all_within(line.as_bytes(), EXIT_WRITE_LIMIT) {
                complain(format!(
                    "mcp-bound: --record-fd {fd}: cannot write the record: {err}\n"
                ));
            }
        }
        exit_code
    }
}

/// An observed exit in words, for the lines mcp-bound prints.
fn describe_exit(exit: Option<&crate::record::Exit>) -> String {
    match exit {
        Some(crate::record::Exit::Code { code }) => format!("exit {code}"),
        Some(crate::record::Exit::Signal { signal, .. }) => format!("killed by {signal}"),
        None => "no exit observed".to_string(),
    }
}

/// One line that says what happened, after the excerpt.
fn summary(record: &Record) -> String {
    let exit = describe_exit(record.exit.as_ref());
    let state = serde_json::to_value(record.state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let signals_sent: Vec<String> = record
        .events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::SignalSent { signal, target, .. } => Some(format!(
                "{signal} to {}",
                if *target == crate::record::Target::Group {
                    "group"
                } else {
                    "descendants"
                }
            )),
            _ => None,
        })
        .collect();
    let sent = if signals_sent.is_empty() {
        String::new()
    } else {
        format!("; sent {}", signals_sent.join(", "))
    };
    let stderr = &record.stderr;
    let kept = if record.limits.live_rate.is_some() {
        let mut live = format!("{} shown live", stderr.live_bytes_forwarded);
        if stderr.live_bytes_dropped > 0 {
            live.push_str(&format!(", {} dropped", stderr.live_bytes_dropped));
        }
        if stderr.live_bytes_unsent > 0 {
            live.push_str(&format!(", {} unsent at exit", stderr.live_bytes_unsent));
        }
        live
    } else {
        format!("{} kept", stderr.bytes_retained)
    };
    format!(
        "mcp-bound: {state} after {}ms ({exit}{sent}); stderr {} bytes seen, {kept}; exit {}\n",
        record.duration_ms.unwrap_or(0),
        stderr.bytes_seen,
        record.exit_code.unwrap_or(code::OWN_FAILURE),
    )
}

/// Replace the record at `path` atomically: a private temporary file in the
/// same directory, synced, then renamed over. A symlink at `path` is
/// refused rather than followed or replaced.
pub fn write_record_file(path: &Path, record: &Record) -> io::Result<()> {
    if let Ok(meta) = fs::symlink_metadata(path) {
        if meta.file_type().is_symlink() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a symlink; refusing to follow it",
            ));
        }
        if !meta.is_file() {
            // Renaming over a device or a FIFO would replace it.
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is not a regular file; refusing to replace it",
            ));
        }
    }
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "has no file name"))?;
    let temp = sys::parent_dir(path).join(format!(
        ".{}.{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        crate::ids::random_hex(4)
    ));
    let result = (|| {
        let mut file = sys::create_private(&temp)?;
        file.write_all(record.to_line().as_bytes())?;
        file.sync_data()?;
        fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn outcome(exit: Option<ExitObs>, failure: Option<&str>) -> Outcome {
        Outcome {
            exit,
            cancelled_while_running: None,
            cancellation: None,
            stream_end: crate::record::StreamEnd::ClosedWhileHeld,
            capture: crate::capture::Capture::new(0, 16),
            stdout: Default::default(),
            live_forwarded: 0,
            live_dropped: 0,
            live_unsent: 0,
            events: Vec::new(),
            descendants_signalled: 1,
            last_stdout: None,
            last_stderr: None,
            failure: failure.map(str::to_string),
        }
    }

    #[test]
    fn a_failure_after_dispatch_is_its_own_state_and_keeps_the_exit() {
        let cli = crate::cli::Cli::try_parse_from(["mcp-bound", "--", "true"]).unwrap();
        let cli = Settings::from(&cli);
        let redactor = Redactor::default();
        let mut record = initial_record(&cli, SystemTime::now(), &redactor);
        let killed = ExitObs::Signal {
            signo: signals::SIGKILL,
            core_dumped: false,
        };
        let code = decide(
            &cli,
            &outcome(Some(killed), Some("poll failed: x")),
            &mut record,
        );
        assert_eq!(code, code::OWN_FAILURE);
        assert_eq!(record.state, State::FailedAfterDispatch);
        assert_eq!(record.error.as_deref(), Some("poll failed: x"));
        assert_eq!(
            record.exit,
            Some(killed.to_record()),
            "the exit seen is kept"
        );
        // The journal's terminal entry carries the same state.
        let terminal = journal::Terminal::from_record(&record, None);
        let line = serde_json::to_string(&terminal).unwrap();
        assert!(
            line.contains("\"state\":\"failed_after_dispatch\""),
            "{line}"
        );
        // Without a failure the same outcome is a plain completion.
        let code = decide(&cli, &outcome(Some(ExitObs::Code(0)), None), &mut record);
        assert_eq!((code, record.state), (0, State::Completed));
        assert_eq!(record.error, None);
    }
}
