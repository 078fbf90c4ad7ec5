//! One call, start to end: validate, write the in-flight record, spawn,
//! supervise, decide the state and exit code from what was observed, write
//! the final record and the bounded echo.

use std::io;
use std::time::{Duration, Instant, SystemTime};

use crate::child::{self, ExitObs};
use crate::contain::Contain;
use crate::error::{Error, code};
use crate::ids::rfc3339;
use crate::journal::{self, Journal};
use crate::record::{
    Approval, CancelReason, Ids, Invocation, Lifecycle, Limits, Record, SCHEMA, State, StderrFacts,
    StderrLogFacts, StdoutGuard, Supervisor, Times, Usage,
};
use crate::redact::Redactor;
use crate::settings::{JournalSettings, Settings};
use crate::signals::{self, SignalPipe};
use crate::sink::Sink;
use crate::stderr_log::StderrLog;
use crate::supervise::{self, Outcome};
use crate::sys;
use crate::termination::Cancellation;
use crate::units::limit_millis;

mod approval;
mod ending;
mod last_words;
mod records;

use ending::Ending;

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
    let mut call = Ending {
        settings,
        origin,
        started_at,
        redactor: &redactor,
        journal: None,
        record_refused: std::cell::Cell::new(false),
        watchdog: std::cell::OnceCell::new(),
    };
    let mut stderr_log = None;
    if let Some(log_settings) = &settings.capture.log {
        match StderrLog::open(log_settings, redactor.clone()) {
            Ok(mut log) => {
                if let Some(note) = log.error_to_say.take() {
                    call.say(note);
                }
                stderr_log = Some(log);
            }
            Err(error) if log_settings.optional => {
                call.say(format!("mcp-bound: {error}; going on without it\n"));
                record.stderr_log = Some(StderrLogFacts {
                    path: log_settings.path.to_string_lossy().into_owned(),
                    error: Some(error),
                    ..StderrLogFacts::default()
                });
            }
            Err(error) => return Ok(call.fail_before_dispatch(record, error, code::OWN_FAILURE)),
        }
    }
    // Containment first: --contain cgroup without a cgroup is refused.
    let mut contain = match Contain::prepare(settings.contain, &settings.cgroup_limits) {
        Ok(contain) => contain,
        Err(error) => return Ok(call.fail_before_dispatch(record, error, code::OWN_FAILURE)),
    };
    record.contain = Some(contain.facts.clone());
    // A limit that cannot be set: refused before anything runs.
    for limit in &settings.rlimits {
        let current = sys::hard_rlimit(limit.resource);
        if let Err(error) = crate::rlimit::check(limit, current, || sys::may_set_rlimit(limit)) {
            return Ok(call.fail_before_dispatch(record, error, code::OWN_FAILURE));
        }
    }
    // Fail closed: no intent in the journal, no helper.
    if let Some(journal) = &journal {
        let intent = journal::Intent {
            call_id: record.ids.call_id.clone(),
            session_id: record.ids.session_id.clone(),
            argv: record.invocation.argv.clone(),
            cwd: record.invocation.cwd.clone(),
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
    // The watchdog: if mcp-bound is SIGKILLed from here on, it ends the
    // tree and writes these last words, so the journal and the record
    // stay true. (Its pid goes into the record: copy first, then start.)
    // Without a journal or a record file there is nothing to say, and the
    // watchdog can be the cheap kind that only ends the tree.
    let speaks = call.journal.is_some() || settings.record.path.is_some();
    let base = speaks.then(|| record.clone());
    let journal_for_words = call.journal;
    let watchdog = contain.start_watchdog(base.map(|base| {
        move |words| last_words::speak(settings, journal_for_words, base, origin, words)
    }));
    if let Err(err) = watchdog {
        let error = format!("cannot start the watchdog: {err}; the helper was not started");
        return Ok(call.fail_before_dispatch(record, error, code::OWN_FAILURE));
    }
    // The final words are told to it before they are written.
    if let Some(link) = contain.link() {
        let _ = call.watchdog.set(link);
    }
    // The in-flight record names the watchdog (one more write, --record only).
    record.contain = Some(contain.facts.clone());
    if let Some(error) = call.write_in_flight(&record) {
        return Ok(call.fail_before_dispatch(record, error, code::OWN_FAILURE));
    }

    let pending = signals.take();
    if let Some(&(signo, _)) = pending.terminating.first() {
        return Ok(call.cancel_before_dispatch(record, signo));
    }

    if let Some(approval) = &settings.approval {
        if let Some(exit_code) = approval::ask(&call, &mut record, approval, &signals) {
            return Ok(exit_code);
        }
        // Approved: the in-flight record now says dispatched.
        record.lifecycle.state = State::Dispatched;
        if let Some(error) = call.write_in_flight(&record) {
            return Ok(call.fail_before_dispatch(record, error, code::OWN_FAILURE));
        }
    }

    let mut stdout = Sink::stdout();
    // An approver's time is not the helper's: only what comes after counts.
    let before = sys::children_usage();
    let dispatched_at = Instant::now();
    let stdin = if settings.streams.session.is_some() {
        child::StdinFrom::Pipe
    } else {
        child::StdinFrom::Inherit
    };
    let confine = child::Confine {
        rlimits: settings.rlimits.clone(),
        cgroup: contain.cgroup_dir().map(ToOwned::to_owned),
        tree_mark: Some(contain.mark()),
        join_by_moving: false,
    };
    let helper = match child::spawn(&settings.command, stdin, &confine) {
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
    record.invocation.pid = Some(helper.pid as u32);
    if let Some(link) = call.watchdog.get() {
        link.dispatched(helper.pid);
    }
    if let Some(log) = stderr_log.as_mut() {
        let argv = serde_json::to_string(&record.invocation.argv).unwrap_or_default();
        log.marker(&format!(
            "start call_id={} pid={} argv={argv}",
            record.ids.call_id, helper.pid
        ));
    }

    let config = supervise::Config {
        watchdog: contain.link(),
        policy: settings.policy,
        head_bytes: settings.capture.head_bytes,
        tail_bytes: settings.capture.tail_bytes,
        flood_path: settings.capture.flood_path,
        stdout: supervise::StdoutMode::Forward {
            guard: settings.streams.guard,
        },
        live: settings.streams.live,
        redactor: redactor.clone(),
        stderr_log,
        session: settings
            .streams
            .session
            .clone()
            .map(|policy| supervise::SessionConfig {
                policy,
                call_id: record.ids.call_id.clone(),
                journal: call.journal,
                max_message_bytes: settings.streams.max_message_bytes,
                argv: settings.command.clone(),
                confine: confine.clone(),
            }),
    };
    let mut outcome =
        supervise::supervise(helper, dispatched_at, origin, &signals, &mut stdout, config);
    let exit_code = decide(settings, &outcome, &mut record);
    record.usage = usage_since(before).map(|usage| {
        let (cgroup_cpu_ms, memory_peak_bytes) = contain.cgroup_usage();
        Usage {
            cgroup_cpu_ms,
            memory_peak_bytes,
            ..usage
        }
    });
    if let Some(facts) = record.contain.as_mut() {
        facts.oom_kills = contain.oom_kills().or(facts.oom_kills);
    }
    if let Some(mut log) = outcome.stderr_log.take() {
        let exit = serde_json::to_string(&record.lifecycle.exit).unwrap_or_default();
        let state = serde_json::to_string(&record.lifecycle.state).unwrap_or_default();
        log.finish(&format!(
            "end state={} exit={exit} exit_code={exit_code}",
            state.trim_matches('"')
        ));
        if let Some(line) = log.error_to_say.take() {
            call.say(line);
        }
        record.stderr_log = Some(log.facts());
    }
    if let Some(failure) = &outcome.failure {
        call.say(format!("mcp-bound: {failure}\n"));
    }
    Ok(call.finish(record, exit_code, Some(outcome)))
}

/// The tree's usage: every descendant reaped since `before`.
fn usage_since(before: Option<(Duration, Duration, u64)>) -> Option<Usage> {
    let (user, sys_time, max_rss_kib) = sys::children_usage()?;
    let (user_before, sys_before, _) = before.unwrap_or_default();
    Some(Usage {
        user_ms: crate::units::millis(user.saturating_sub(user_before)),
        sys_ms: crate::units::millis(sys_time.saturating_sub(sys_before)),
        max_rss_kib,
        cgroup_cpu_ms: None,
        memory_peak_bytes: None,
    })
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
        ids: Ids {
            schema: SCHEMA,
            call_id: settings.record.call_id.clone(),
            session_id: settings.record.session_id.clone(),
        },
        lifecycle: Lifecycle {
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
        },
        invocation: Invocation {
            argv: settings
                .command
                .iter()
                .map(|arg| redactor.redact(&arg.to_string_lossy()).into_owned())
                .collect(),
            cwd: std::env::current_dir()
                .ok()
                .map(|dir| dir.to_string_lossy().into_owned()),
            pid: None,
        },
        times: Times {
            started_at: rfc3339(started_at),
            ended_at: None,
            duration_ms: None,
            last_stdout_at: None,
            last_stderr_at: None,
        },
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
        contain: None,
        usage: None,
        stderr_log: None,
        mcp: settings
            .streams
            .session
            .as_ref()
            .map(|policy| crate::record::mcp::McpFacts {
                limits: policy.limits(),
                ..Default::default()
            }),
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
            rlimits: settings
                .rlimits
                .iter()
                .map(|limit| {
                    let record = crate::rlimit::RlimitRecord {
                        soft: limit.soft,
                        hard: limit.hard,
                    };
                    (limit.resource.name(), record)
                })
                .collect(),
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
    // Under the session layer, the host ending the session (a signal, or
    // our stdin closing) with no request in flight is its normal end.
    let host_ended = match cancel {
        Some(Cancellation::Signal(_) | Cancellation::StdinClosed) => true,
        None => outcome.host_hung_up,
        Some(Cancellation::Timeout | Cancellation::ClientDisconnected) => false,
    };
    let state = match &outcome.mcp {
        Some(mcp) if host_ended && mcp.in_flight_at_exit == 0 && outcome.failure.is_none() => {
            State::ShutDown
        }
        Some(_) | None => state,
    };
    if outcome.mcp.is_some() {
        record.mcp = outcome.mcp.clone();
    }
    record.lifecycle.state = state;
    record.error = outcome.failure.clone();
    record.lifecycle.cancel_reason = cancel.map(CancelReason::from);
    record.lifecycle.cancel_signal = cancel.and_then(Cancellation::signal).map(signals::name);
    record.lifecycle.exit = outcome.exit.map(ExitObs::to_record);
    record.lifecycle.stream_end = Some(outcome.stream_end);
    record.lifecycle.descendants_signalled = outcome.descendants_signalled;
    record.stdout = outcome.stdout.clone();
    exit_code
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
            live: Default::default(),
            events: Vec::new(),
            descendants_signalled: 1,
            last_stdout: None,
            last_stderr: None,
            failure: failure.map(str::to_string),
            host_hung_up: false,
            mcp: None,
            stderr_log: None,
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
        assert_eq!(record.lifecycle.state, State::FailedAfterDispatch);
        assert_eq!(record.error.as_deref(), Some("poll failed: x"));
        assert_eq!(
            record.lifecycle.exit,
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
        assert_eq!((code, record.lifecycle.state), (0, State::Completed));
        assert_eq!(record.error, None);
    }
}
