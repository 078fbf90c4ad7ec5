//! One call, start to end, as a state machine of typed steps: received,
//! validated, pending approval and authorized (or authorized at once),
//! dispatched, and one end. `call.rs` holds the typed steps and their
//! transitions, `steps.rs` the I/O each owns, `approval.rs` the approval
//! step, `ending.rs` the end's writes; this file the set-up before the
//! record exists, and the record as it starts.

use std::io;
use std::time::{Instant, SystemTime};

use crate::error::{Error, NotStarted};
use crate::ids::rfc3339;
use crate::journal::{self, Journal};
use crate::record::{
    Approval, Ids, Invocation, Lifecycle, Limits, Record, SCHEMA, State, StderrFacts, StdoutGuard,
    Supervisor, Times,
};
use crate::redact::Redactor;
use crate::settings::{JournalSettings, Settings};
use crate::signals::SignalPipe;
use crate::sys;
use crate::units::limit_millis;

mod approval;
mod call;
mod context;
mod ending;
mod last_words;
mod records;
mod steps;

use call::{Ended, Received, Validated};
use context::Context;
pub(crate) use last_words::heir;
use steps::Prepared;

/// Run the call; the result is mcp-bound's exit code. Its options were
/// resolved and checked (`Settings::resolve`): set-up that fails here is
/// a refusal that nothing was started (exit 125, no record), never a
/// usage error; from the record on, the call goes through its steps
/// (`steps.rs`, `call.rs`).
pub(crate) fn run(settings: Settings) -> Result<i32, Error> {
    let settings = &settings;
    let origin = Instant::now();
    let started_at = SystemTime::now();
    // First, so a signal during set-up is seen and cancels before dispatch.
    let signals = SignalPipe::install().map_err(|e| setup("cannot install signal handlers", e))?;
    claim_record_fd(settings)?;
    record_directory_exists(settings)?;
    if sys::BACKEND.subreaper {
        sys::become_subreaper().map_err(|e| setup("cannot become a child subreaper", e))?;
    }
    let journal = open_journal(settings)?;
    let redactor = &settings.redactor;
    let mut call = Context {
        settings,
        origin,
        started_at,
        redactor,
        journal: None,
        record_refused: std::cell::Cell::new(false),
        watchdog: std::cell::OnceCell::new(),
        otel: std::cell::OnceCell::new(),
        written: std::cell::OnceCell::new(),
    };
    if let crate::otel::Resolved::Unusable(why) = &settings.otel {
        call.say(format!("mcp-bound: span export is off: {why}\n"));
    }
    let received = Received::new(initial_record(settings, started_at, redactor));
    let (validated, mut prepared) = match steps::validate(&mut call, received, journal.as_ref()) {
        Ok(validated) => validated,
        Err(end) => {
            let exit_code = call.end(*end);
            call.finish_otel(&signals);
            return Ok(exit_code);
        }
    };
    let ended = validated_on(&call, validated, &mut prepared, &signals).unwrap_or_else(|end| *end);
    let exit_code = call.end(ended);
    // Only now: dropping the containment lets the watchdog go.
    drop(prepared);
    call.finish_otel(&signals);
    Ok(exit_code)
}

/// The transitions after validation, in order; any step may end
/// the call instead.
fn validated_on(
    call: &Context<'_>,
    validated: Validated,
    prepared: &mut Prepared,
    signals: &SignalPipe,
) -> Result<Ended, Box<Ended>> {
    let authorized = match &call.settings.approval {
        Some(approval) => {
            let pending = steps::secure(call, validated.pending_approval(), prepared, signals)?;
            approval::decide(call, pending, approval, signals, prepared.mark())?
        }
        None => steps::secure(call, validated.authorized(), prepared, signals)?,
    };
    let (dispatched, started) = steps::dispatch(call, authorized, prepared)?;
    Ok(steps::supervise(
        call, dispatched, started, prepared, signals,
    ))
}

/// --record's directory, first: where it is missing, no record can say
/// why the call ended, so that is said alone, before another output in
/// the same directory fails and the record's final write fails after it.
fn record_directory_exists(settings: &Settings) -> Result<(), Error> {
    let Some(path) = &settings.record.path else {
        return Ok(());
    };
    let dir = sys::parent_dir(path);
    if dir.is_dir() {
        return Ok(());
    }
    Err(NotStarted::nothing(format!(
        "--record {}: no directory {}",
        path.display(),
        dir.display()
    ))
    .into())
}

/// --record-fd: open for writing, and never inherited by the helper.
fn claim_record_fd(settings: &Settings) -> Result<(), Error> {
    let Some(fd) = settings.record.fd else {
        return Ok(());
    };
    if !sys::is_open_for_writing(fd) {
        return Err(NotStarted::nothing(format!(
            "--record-fd {fd}: descriptor {fd} is not open for writing"
        ))
        .into());
    }
    // SAFETY: checked open just above; we never close it.
    let borrowed = unsafe { sys::borrow_raw(fd) };
    sys::set_cloexec(borrowed).map_err(|e| setup("--record-fd", e))
}

/// --journal, with its key loaded (a key that cannot be read is a usage
/// error: nothing is written).
fn open_journal(settings: &Settings) -> Result<Option<Journal>, Error> {
    let Some(JournalSettings { path, key, .. }) = &settings.journal else {
        return Ok(None);
    };
    let key = match key {
        Some(key_path) => journal::Key::load(key_path).map_err(|e| {
            NotStarted::nothing(format!("--journal-key {}: {e}", key_path.display()))
        })?,
        None => journal::Key::Plain,
    };
    Ok(Some(Journal::new(path.clone(), key)))
}

fn setup(what: &str, err: io::Error) -> Error {
    NotStarted::nothing(format!("{what}: {err}")).into()
}

fn initial_record(settings: &Settings, started_at: SystemTime, redactor: &Redactor) -> Record {
    let guard = StdoutGuard::new(settings.streams.guard.is_some());
    let capture = &settings.capture;
    Record {
        ids: Ids {
            schema: SCHEMA,
            call_id: settings.record.call_id.clone(),
            session_id: settings.record.session_id.clone(),
        },
        lifecycle: Lifecycle {
            // Set by the steps (`call.rs`) before it is first written.
            state: State::Dispatched,
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
        otel: match &settings.otel {
            crate::otel::Resolved::Off => None,
            crate::otel::Resolved::Unusable(why) => Some(crate::otel::unusable(why)),
            crate::otel::Resolved::On(config) => Some(crate::otel::before_start(config)),
        },
        limits: limits(settings, redactor, guard),
        events: Vec::new(),
        mcp_bound: Supervisor {
            version: env!("CARGO_PKG_VERSION").to_string(),
            pid: std::process::id(),
            os: sys::BACKEND.os,
            warnings: Vec::new(),
            journal: None,
        },
    }
}

/// The limits in force, as the record and the intent give them.
fn limits(settings: &Settings, redactor: &Redactor, guard: StdoutGuard) -> Limits {
    let policy = settings.policy;
    let live = settings.streams.live;
    let capture = &settings.capture;
    Limits {
        timeout_ms: policy.timeout.map(limit_millis),
        signal: policy.signal.name(),
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
    }
}
