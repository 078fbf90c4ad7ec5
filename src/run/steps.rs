//! The steps of one call, in the order they happen. Each does the I/O its
//! transition owns (`call.rs` holds the transitions themselves) and
//! returns the next step, or the call's end:
//! - `validate`: received → validated. The stderr log, the containment
//!   and every rlimit checked; the intent journaled (fail closed).
//! - `secure`: entering pending approval or authorized. The in-flight
//!   record written, the watchdog started (and named in it), a signal
//!   that came meanwhile honoured.
//! - approval (`approval.rs`): pending approval → authorized or denied.
//! - `dispatch`: authorized → dispatched. The helper spawned, confined.
//! - `supervise`: dispatched → the end. The loop, then usage and the
//!   stderr log's end line.

use std::time::{Duration, Instant};

use super::call::{Authorized, BeforeDispatch, Dispatched, Ended, Received, Step, Validated};
use super::context::Context;
use super::last_words;
use crate::child::{self, Confine, Helper};
use crate::contain::Contain;
use crate::error::{Error, NotStarted, code};
use crate::journal::{self, Journal};
use crate::record::{StderrLogFacts, Usage};
use crate::signals::SignalPipe;
use crate::sink::Sink;
use crate::stderr_log::StderrLog;
use crate::supervise;
use crate::sys;

/// What validation set up for the helper. It is held until the end has
/// been written: dropping the containment lets the watchdog go, and the
/// watchdog must hear the final words first.
pub(super) struct Prepared {
    stderr_log: Option<StderrLog>,
    contain: Contain,
}

impl Prepared {
    /// The call's mark (`MCP_BOUND_TREE`'s value), which its approvers
    /// carry too.
    pub(super) fn mark(&self) -> String {
        self.contain.mark().1
    }
}

/// Received → validated: nothing is started unless each of these holds.
pub(super) fn validate<'a>(
    call: &mut Context<'a>,
    mut received: Received,
    journal: Option<&'a Journal>,
) -> Result<(Validated, Prepared), Box<Ended>> {
    let settings = call.settings;
    let mut stderr_log = None;
    if let Some(log_settings) = &settings.capture.log {
        match StderrLog::open(log_settings, call.redactor.clone()) {
            Ok(mut log) => {
                if let Some(note) = log.error_to_say.take() {
                    call.say(note);
                }
                if let Some(warning) = log.warning.take() {
                    call.say(format!("mcp-bound: {warning}\n"));
                    received.record_mut().mcp_bound.warnings.push(warning);
                }
                stderr_log = Some(log);
            }
            Err(error) if log_settings.optional => {
                call.say(format!("mcp-bound: {error}; going on without it\n"));
                received.record_mut().stderr_log = Some(StderrLogFacts {
                    path: log_settings.path.to_string_lossy().into_owned(),
                    error: Some(error),
                    ..StderrLogFacts::default()
                });
            }
            Err(error) => return Err(call.refused(received, NotStarted::helper(error))),
        }
    }
    // Containment first: --contain cgroup without a cgroup is refused.
    let contain = match Contain::prepare(settings.contain, &settings.tree_limits) {
        Ok(contain) => contain,
        Err(refusal) => return Err(call.refused(received, refusal)),
    };
    received.record_mut().contain = Some(contain.facts.clone());
    // A limit that cannot be set: refused before anything runs.
    if let Err(error) = check_rlimits(&settings.rlimits) {
        return Err(call.refused(received, NotStarted::nothing(error)));
    }
    // Pins that cannot be read or kept: nothing runs unheld.
    if let Err(refusal) = check_pins(call, &mut received) {
        return Err(call.refused(received, refusal));
    }
    // Fail closed: no intent in the journal, no helper.
    if let Some(journal) = journal {
        let record = received.record();
        let intent = journal::Intent {
            call_id: record.ids.call_id.clone(),
            session_id: record.ids.session_id.clone(),
            argv: record.invocation.argv.clone(),
            cwd: record.invocation.cwd.clone(),
            uid: sys::current_uid(),
            host: sys::hostname(),
            pid: std::process::id(),
            limits: record.limits.clone(),
            tool_gate: settings
                .streams
                .session
                .as_ref()
                .and_then(|s| s.tools.as_ref())
                .map(journal::IntentGate::from),
        };
        match journal.check_owner() {
            Ok(Some(warning)) => {
                let warning = format!("--journal {}: {warning}", journal.path.display());
                call.say(format!("mcp-bound: {warning}\n"));
                received.record_mut().mcp_bound.warnings.push(warning);
            }
            Ok(None) => {}
            Err(err) => {
                let refusal = NotStarted::helper(format!(
                    "--journal {}: cannot write the intent: {err}",
                    journal.path.display()
                ));
                return Err(call.refused(received, refusal));
            }
        }
        if let Err(err) = journal.append(journal::Entry::Intent(&intent)) {
            let refusal = NotStarted::helper(format!(
                "--journal {}: cannot write the intent: {err}",
                journal.path.display()
            ));
            return Err(call.refused(received, refusal));
        }
        call.journal = Some(journal);
    }
    let prepared = Prepared {
        stderr_log,
        contain,
    };
    Ok((received.validated(), prepared))
}

/// `--tool-pin`: the file is read and its lock made before anything
/// starts; a warning (others can read it) is said and recorded.
fn check_pins(call: &mut Context<'_>, received: &mut Received) -> Result<(), NotStarted> {
    let session = call.settings.streams.session.as_ref();
    let Some(pin) = session.and_then(|s| s.tools.as_ref()?.pin.as_ref()) else {
        return Ok(());
    };
    let shown = pin.file.display();
    match crate::pin::Store::open(&pin.file) {
        Ok((_, None)) => Ok(()),
        Ok((_, Some(warning))) => {
            let warning = format!("--tool-pin {shown}: {warning}");
            call.say(format!("mcp-bound: {warning}\n"));
            received.record_mut().mcp_bound.warnings.push(warning);
            Ok(())
        }
        Err(why) => Err(NotStarted::helper(format!("--tool-pin {shown}: {why}"))),
    }
}

/// The first durable step (pending approval, or authorized): the
/// in-flight record is written and the watchdog started, so that from
/// here on a SIGKILL of mcp-bound still leaves the journal and the record
/// true. Without a journal or a record file there is nothing to say, and
/// the watchdog can be the cheap kind that only ends the tree.
pub(super) fn secure<S: BeforeDispatch>(
    call: &Context<'_>,
    step: S,
    prepared: &mut Prepared,
    signals: &SignalPipe,
) -> Result<S, Box<Ended>> {
    let settings = call.settings;
    if let Some(refusal) = call.write_in_flight(step.record()) {
        return Err(call.refused(step, refusal));
    }
    let speaks = call.journal.is_some() || settings.record.path.is_some();
    if !crate::contain::needs_watchdog(speaks) {
        // The job ends the tree whatever ends us; with nothing to write,
        // no watchdog is started.
        return secured(call, step, prepared, signals);
    }
    // (Its pid goes into the record: copy first, then start.)
    let base = speaks.then(|| step.record().clone());
    let (journal, origin) = (call.journal, call.origin);
    let watchdog = match base {
        // Windows: mcp-bound again, told what a fork would know.
        Some(mut base) if crate::contain::watchdog_is_heir() => {
            prepared.contain.start_heir(|facts| {
                base.contain = Some(facts.clone());
                let brief = last_words::Brief::new(settings, base, origin);
                serde_json::to_string(&brief).expect("a brief always serializes")
            })
        }
        base => prepared.contain.start_watchdog(base.map(|base| {
            move |words| {
                let to = last_words::Destination {
                    record: settings.record.path.as_deref(),
                    journal,
                };
                last_words::speak(&to, base, crate::units::millis(origin.elapsed()), words);
            }
        })),
    };
    if let Err(err) = watchdog {
        let refusal = NotStarted::helper(format!("cannot start the watchdog: {err}"));
        return Err(call.refused(step, refusal));
    }
    // The final words are told to it before they are written.
    if let Some(link) = prepared.contain.link() {
        let _ = call.watchdog.set(link);
    }
    secured(call, step, prepared, signals)
}

/// After the watchdog (or the job) holds the tree: the record says so,
/// and a cancellation that came meanwhile ends the call here.
fn secured<S: BeforeDispatch>(
    call: &Context<'_>,
    mut step: S,
    prepared: &Prepared,
    signals: &SignalPipe,
) -> Result<S, Box<Ended>> {
    // The in-flight record names the watchdog (one more write, --record only).
    step.record_mut().contain = Some(prepared.contain.facts.clone());
    if let Some(refusal) = call.write_in_flight(step.record()) {
        return Err(call.refused(step, refusal));
    }
    match signals.take().terminating.first() {
        Some(&(signal, _)) => Err(step.cancel(signal)),
        None => Ok(step),
    }
}

/// The helper as it started.
pub(super) struct Started {
    helper: Helper,
    confine: Confine,
    at: Instant,
    /// The usage of children reaped before it (an approver's).
    usage_before: Option<(Duration, Duration)>,
}

/// Authorized → dispatched: the helper spawned in its confinement.
pub(super) fn dispatch(
    call: &Context<'_>,
    authorized: Authorized,
    prepared: &mut Prepared,
) -> Result<(Dispatched, Started), Box<Ended>> {
    let settings = call.settings;
    // Span export starts here: after the watchdog's fork, before the
    // helper (the endpoint's name is resolved now, never in the loop).
    call.start_otel();
    // An approver's time is not the helper's: only what comes after counts.
    let usage_before = sys::children_cpu();
    let at = Instant::now();
    let stdin = if settings.streams.session.is_some() {
        child::StdinFrom::Pipe
    } else {
        child::StdinFrom::Inherit
    };
    let confine = Confine {
        rlimits: settings.rlimits.clone(),
        cgroup: prepared.contain.cgroup().cloned(),
        tree_mark: Some(prepared.contain.mark()),
        join_by_moving: false,
        job_limits: prepared.contain.job_limits(),
    };
    let helper = match child::spawn(&settings.command, stdin, &confine) {
        Ok(helper) => helper,
        Err(err) => {
            let program = settings.command[0].to_string_lossy();
            let (error, exit_code) = match err {
                child::SpawnError::NotFound(e) => {
                    // `mcp-bound help` runs a command named help, and
                    // `mcp-bound verfy` one named verfy.
                    let hint = if program == "help" {
                        "; mcp-bound's own help is mcp-bound --help".to_string()
                    } else if let Some(sub) = crate::cli::subcommand_near(&program) {
                        format!(
                            "; did you mean the subcommand `{sub}`? a helper of that name goes after `--`"
                        )
                    } else {
                        String::new()
                    };
                    (
                        Error::NotFound(format!("{program}: command not found ({e}){hint}")),
                        code::NOT_FOUND,
                    )
                }
                child::SpawnError::NotExecutable(e) => (
                    Error::NotExecutable(format!("{program}: cannot run: {e}")),
                    code::NOT_EXECUTABLE,
                ),
            };
            return Err(call.failed(authorized, error.to_string(), exit_code));
        }
    };
    let dispatched = authorized.dispatched(helper.pid);
    if let Some(link) = call.watchdog.get() {
        link.dispatched(helper.pid);
    }
    if let Some(log) = prepared.stderr_log.as_mut() {
        let record = dispatched.record();
        let argv = serde_json::to_string(&record.invocation.argv).unwrap_or_default();
        log.marker(&format!(
            "start call_id={} pid={} argv={argv}",
            record.ids.call_id, helper.pid
        ));
    }
    let started = Started {
        helper,
        confine,
        at,
        usage_before,
    };
    Ok((dispatched, started))
}

/// Dispatched → the end: the loop runs until the helper, its tree and
/// its streams are done, then what the tree used and the stderr log's
/// end line are added.
pub(super) fn supervise(
    call: &Context<'_>,
    dispatched: Dispatched,
    started: Started,
    prepared: &mut Prepared,
    signals: &SignalPipe,
) -> Ended {
    let settings = call.settings;
    let stderr_log = prepared.stderr_log.take();
    let contain = &prepared.contain;
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
        redactor: call.redactor.clone(),
        stderr_log,
        session: settings
            .streams
            .session
            .clone()
            .map(|policy| supervise::SessionConfig {
                policy,
                call_id: dispatched.record().ids.call_id.clone(),
                journal: call.journal,
                tracer: call.tracer(),
                max_message_bytes: settings.streams.max_message_bytes,
                argv: settings.command.clone(),
                confine: started.confine.clone(),
            }),
    };
    let mut stdout = Sink::stdout();
    let mut outcome = supervise::supervise(
        started.helper,
        started.at,
        call.origin,
        signals,
        &mut stdout,
        config,
    );
    let stderr_log = outcome.stderr_log.take();
    let mut ended = dispatched.ended(settings.preserve_status, outcome);
    let record = &mut ended.record;
    // The per-call approvers were reaped too: their CPU is theirs.
    let approvers = record
        .mcp
        .as_ref()
        .and_then(|mcp| mcp.tool_gate.as_ref())
        .map(|gate| gate.approver_cpu)
        .unwrap_or_default();
    record.usage = usage_since(started.usage_before).map(|usage| {
        let (cgroup_cpu_ms, memory_peak_bytes) = contain.cgroup_usage();
        Usage {
            user_ms: usage.user_ms.saturating_sub(approvers.user_ms),
            sys_ms: usage.sys_ms.saturating_sub(approvers.sys_ms),
            cgroup_cpu_ms,
            memory_peak_bytes,
            ..usage
        }
    });
    if let Some(facts) = record.contain.as_mut() {
        facts.oom_kills = contain.oom_kills().or(facts.oom_kills);
    }
    if let Some(mut log) = stderr_log {
        let exit = serde_json::to_string(&record.lifecycle.exit).unwrap_or_default();
        let state = serde_json::to_string(&record.lifecycle.state).unwrap_or_default();
        log.finish(&format!(
            "end state={} exit={exit} exit_code={}",
            state.trim_matches('"'),
            ended.exit_code
        ));
        if let Some(line) = log.error_to_say.take() {
            call.say(line);
        }
        ended.record.stderr_log = Some(log.facts());
    }
    if let Some(failure) = ended.outcome.as_ref().and_then(|o| o.failure.as_ref()) {
        call.say(format!("mcp-bound: {failure}\n"));
    }
    ended
}

/// The tree's usage: the CPU of every descendant reaped since `before`,
/// and the peak of those mcp-bound reaped itself.
fn usage_since(before: Option<(Duration, Duration)>) -> Option<Usage> {
    let (user, sys_time) = sys::children_cpu()?;
    let (user_before, sys_before) = before.unwrap_or_default();
    Some(Usage {
        user_ms: crate::units::millis(user.saturating_sub(user_before)),
        sys_ms: crate::units::millis(sys_time.saturating_sub(sys_before)),
        max_rss_kib: sys::reaped_peak_kib(),
        cgroup_cpu_ms: None,
        memory_peak_bytes: None,
    })
}

/// Each `--rlimit` that cannot be set, refused before anything runs (the
/// rules refused them all where the system has none).
fn check_rlimits(limits: &[crate::rlimit::Rlimit]) -> Result<(), String> {
    let Some(rlimits) = sys::RLIMITS else {
        return Ok(());
    };
    for limit in limits {
        let current = (rlimits.hard)(limit.resource);
        crate::rlimit::check(limit, current, || (rlimits.may_set)(limit))?;
    }
    Ok(())
}
