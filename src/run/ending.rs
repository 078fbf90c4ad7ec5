//! How a call ends, whichever way it ends: the record completed (its
//! stderr facts, times, the call's span), the bounded echo with its
//! summary line, and the final writes in their one order, all masked,
//! none able to hang us.
//!
//! The final writes, in order (`FINAL_WRITES`), since the watchdog must
//! hear before anything is written:
//! 1. the watchdog hears the final words (if mcp-bound dies while
//!    writing them, it completes them, and never adds a terminal entry
//!    that is there already);
//! 2. the record file (then --record-keep's pruning);
//! 3. the journal's terminal entry;
//! 4. the watchdog hears that they were written (nothing left to do);
//! 5. the record's line to --record-fd.

use std::fs;
use std::time::{Instant, SystemTime};

use super::call::Ended;
use super::context::{Context, EXIT_WRITE_LIMIT};
use super::records::{keep_newest, write_record_text};
use crate::cli::Echo;
use crate::error::code;
use crate::ids::rfc3339;
use crate::journal;
use crate::otel::Resolved;
use crate::record::{
    CancelReason, DebugWindow, Event, EventKind, Record, RepeatsCounted, State, StderrFacts,
    WindowOpener, word,
};
use crate::settings::Settings;
use crate::sink::Sink;
use crate::supervise::Outcome;
use crate::units::millis;

/// A monotonic instant as wall-clock time, through the run's two origins.
fn wall_time(origin: Instant, started_at: SystemTime, at: Instant) -> String {
    rfc3339(started_at + at.saturating_duration_since(origin))
}

/// One of the final writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FinalWrite {
    TellWatchdog,
    RecordFile,
    TerminalEntry,
    WatchdogWritten,
    RecordFd,
}

/// The final writes, in the order the module's doc gives and explains.
const FINAL_WRITES: [FinalWrite; 5] = [
    FinalWrite::TellWatchdog,
    FinalWrite::RecordFile,
    FinalWrite::TerminalEntry,
    FinalWrite::WatchdogWritten,
    FinalWrite::RecordFd,
];

/// What the final writes write: the record as one line, and the journal's
/// terminal entry when one is owed.
struct FinalWords {
    record: Record,
    line: String,
    terminal: Option<journal::Terminal>,
}

/// What the capture gives the echo and the journal, besides the record.
#[derive(Default)]
struct Excerpts {
    echo: Option<String>,
    journal: Option<String>,
}

impl Context<'_> {
    /// The end: complete the record, echo, write it everywhere asked (the
    /// journal's terminal entry too), and return the exit code.
    pub(super) fn end(&self, ended: Ended) -> i32 {
        let Ended {
            mut record,
            exit_code,
            outcome,
        } = ended;
        self.complete(&mut record, exit_code);
        let excerpts = outcome
            .map(|outcome| self.take_outcome(&mut record, outcome))
            .unwrap_or_default();
        record.events.sort_by_key(|event: &Event| event.t_ms);
        if echoes(self.settings, &record, exit_code) {
            self.say(echo_text(&record, excerpts.echo));
        }
        record.otel = self.call_span(&record);
        let mut words = FinalWords {
            line: record.to_line(),
            terminal: self
                .journal
                .map(|_| journal::Terminal::from_record(&record, excerpts.journal)),
            record,
        };
        for write in FINAL_WRITES {
            if let Some(error) = self.final_write(write, &words) {
                // The terminal entry could not be written: the record
                // says so, written again (and so --record-fd gets it).
                words.record.mcp_bound.journal = Some(crate::record::TerminalWrite {
                    terminal_written: false,
                    error: Some(error),
                });
                words.line = words.record.to_line();
                self.write_record(&words);
            }
        }
        exit_code
    }

    /// The record's own end: its error masked (it can quote argv or a
    /// path), mcp-bound's exit code, the end time and the duration.
    fn complete(&self, record: &mut Record, exit_code: i32) {
        record.error = record
            .error
            .take()
            .map(|error| self.redactor.redact(&error).into_owned());
        record.lifecycle.exit_code = Some(crate::child::ChildExit::status_as_read(exit_code));
        record.times.ended_at = Some(rfc3339(SystemTime::now()));
        record.times.duration_ms = Some(millis(self.origin.elapsed()));
    }

    /// What supervision saw, into the record (the stderr facts, the last
    /// output times, the events); the excerpts for the echo and the journal.
    fn take_outcome(&self, record: &mut Record, outcome: Outcome) -> Excerpts {
        let wall = |at| wall_time(self.origin, self.started_at, at);
        record.stderr = self.stderr_facts(&outcome);
        record.times.last_stdout_at = outcome.last_stdout.map(wall);
        record.times.last_stderr_at = outcome.last_stderr.map(wall);
        let capture = &outcome.capture;
        let mut echo = capture
            .excerpt(self.settings.capture.excerpt_bytes, self.redactor)
            .text;
        // What was not kept, and what it mostly was: one line after the
        // truncation marker.
        let not_kept = capture.bytes_seen() - capture.bytes_retained();
        if let Some(line) = crate::repeats::not_kept_line(
            not_kept,
            &record.stderr.repeats,
            (!outcome.repeats.exact()).then_some(outcome.repeats.lines_counted),
        ) && let Some(marker_end) = echo.find("]\n")
        {
            echo.insert_str(marker_end + 2, &format!("{line}\n"));
        }
        let journal = self
            .settings
            .journal
            .as_ref()
            .filter(|journal| journal.excerpt_bytes > 0)
            .map(|journal| capture.excerpt(journal.excerpt_bytes, self.redactor).text);
        record.events = outcome.events;
        Excerpts {
            echo: Some(echo),
            journal,
        }
    }

    /// The record's `stderr`, from the capture, live output, the repeats
    /// and the debug windows.
    fn stderr_facts(&self, outcome: &Outcome) -> StderrFacts {
        let capture = &outcome.capture;
        let retained = capture.head_limit() + capture.tail_limit();
        let windows = outcome.live.windows.as_ref();
        StderrFacts {
            bytes_seen: capture.bytes_seen(),
            bytes_retained: capture.bytes_retained(),
            truncated: capture.truncated(),
            head_bytes: capture.head_limit() as u64,
            tail_bytes: capture.tail_limit() as u64,
            excerpt: capture.excerpt(retained, self.redactor).text,
            live_bytes_forwarded: outcome.live.forwarded,
            live_bytes_dropped: outcome.live.dropped,
            live_bytes_unsent: outcome.live.unsent,
            repeats: outcome.repeats.top(crate::repeats::SHOWN),
            repeats_counted: RepeatsCounted {
                lines: outcome.repeats.lines_counted,
                bytes: outcome.repeats.bytes_counted,
            },
            debug_windows: windows.map_or_else(Vec::new, |windows| {
                windows
                    .listed
                    .iter()
                    .map(|closed| DebugWindow {
                        opened_at: wall_time(self.origin, self.started_at, closed.opened),
                        closed_at: wall_time(self.origin, self.started_at, closed.closed),
                        by: WindowOpener::Signal,
                        closed_by: closed.end,
                        bytes_forwarded: closed.bytes_forwarded,
                    })
                    .collect()
            }),
            debug_windows_not_listed: windows.map_or(0, |windows| windows.not_listed),
            debug_windows_open_ms: windows.map_or(0, |windows| millis(windows.open_total)),
        }
    }

    /// The call's span, and what export knows now: the record is written
    /// before the last flush.
    fn call_span(&self, record: &Record) -> Option<crate::record::OtelFacts> {
        self.start_otel();
        match (&self.settings.otel, self.otel.get()) {
            (_, Some(Ok(tracer))) => Some(tracer.call_ended(record, self.origin, Instant::now())),
            (_, Some(Err(why))) | (Resolved::Unusable(why), None) => {
                Some(crate::otel::unusable(why))
            }
            (Resolved::Off | Resolved::On(_), None) => None,
        }
    }

    /// One of the final writes (see `FINAL_WRITES` for their order): why
    /// the terminal entry could not be written, when it could not.
    fn final_write(&self, write: FinalWrite, words: &FinalWords) -> Option<String> {
        let settings = self.settings;
        match write {
            FinalWrite::TellWatchdog => {
                if let Some(link) = self.watchdog.get() {
                    let body = words.terminal.as_ref().map(|terminal| {
                        serde_json::to_string(terminal).expect("entries serialize")
                    });
                    let journal_len = self
                        .journal
                        .and_then(|journal| fs::metadata(&journal.path).ok())
                        .map(|meta| meta.len());
                    link.final_words(&words.line, body.as_deref().unwrap_or("{}"), journal_len);
                }
            }
            FinalWrite::RecordFile => self.write_record(words),
            FinalWrite::TerminalEntry => return self.terminal_entry(words),
            FinalWrite::WatchdogWritten => {
                if let Some(link) = self.watchdog.get() {
                    link.written();
                }
            }
            FinalWrite::RecordFd => {
                if let Some(fd) = settings.record.fd
                    && let Err(err) =
                        Sink::for_fd(fd).write_all_within(words.line.as_bytes(), EXIT_WRITE_LIMIT)
                {
                    self.say(format!(
                        "mcp-bound: --record-fd {fd}: cannot write the record: {err}\n"
                    ));
                }
            }
        }
        None
    }

    /// The journal's terminal entry, when one is owed: why it could not
    /// be written, when it could not. A host's stop is not held up past
    /// its grace by another appender's lock.
    fn terminal_entry(&self, words: &FinalWords) -> Option<String> {
        let (Some(journal), Some(terminal)) = (self.journal, &words.terminal) else {
            return None;
        };
        let grace = self.settings.policy.grace;
        let signalled = words.record.lifecycle.cancel_signal.is_some();
        let err = journal
            .append_at_the_end(journal::Entry::Terminal(terminal), grace, signalled)
            .err()?;
        self.say(format!(
            "mcp-bound: --journal {}: cannot write the terminal entry: {err}\n",
            journal.path.display()
        ));
        Some(err.to_string())
    }

    /// The record file, then --record-keep's pruning; kept for the write
    /// after the last flush while span export is on.
    fn write_record(&self, words: &FinalWords) {
        let Some(path) = &self.settings.record.path else {
            return;
        };
        match write_record_text(path, &words.line) {
            Err(err) if !self.record_refused.get() => self.say(format!(
                "mcp-bound: --record {}: cannot write the final record: {err}\n",
                path.display()
            )),
            Err(_) => {}
            // Records a template made do not pile up.
            Ok(()) => {
                if let Some((template, keep)) = &self.settings.record.keep {
                    keep_newest(template, *keep);
                }
                if self.tracer().is_some() {
                    let _ = self.written.set(words.record.clone());
                }
            }
        }
    }
}

/// Whether the end is echoed: a failure or denial before dispatch already
/// printed its one line; our stdout's reader that stopped reading (`|
/// head`) is told nothing, as a shell says nothing for a command SIGPIPE
/// ended (the record keeps the facts; --echo always still prints).
fn echoes(settings: &Settings, record: &Record, exit_code: i32) -> bool {
    match settings.capture.echo {
        _ if matches!(
            record.lifecycle.state,
            State::FailedBeforeDispatch | State::Denied
        ) =>
        {
            false
        }
        Echo::Never => false,
        Echo::OnFailure
            if record.lifecycle.cancel_reason == Some(CancelReason::ClientDisconnected) =>
        {
            false
        }
        Echo::OnFailure => exit_code != 0,
        Echo::Always => true,
    }
}

/// The echo: the excerpt, then the summary line. With --live the host's
/// log already has the stderr as it came, so only the summary line, which
/// says so.
fn echo_text(record: &Record, excerpt: Option<String>) -> String {
    let mut text = if record.limits.live_rate.is_some() {
        String::new()
    } else {
        excerpt.unwrap_or_default()
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&summary(record));
    text
}

/// An observed exit in words, for the lines mcp-bound prints.
pub(super) fn describe_exit(exit: Option<&crate::record::Exit>) -> String {
    match exit {
        Some(exit @ crate::record::Exit::Code { .. }) => exit.to_string(),
        Some(crate::record::Exit::Signal { signal, .. }) => format!("killed by {signal}"),
        None => "no exit observed".to_string(),
    }
}

/// One line that says what happened, after the excerpt.
fn summary(record: &Record) -> String {
    let exit = describe_exit(record.lifecycle.exit.as_ref());
    let signals_sent: Vec<String> = record
        .events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::SignalSent { signal, target, .. } => {
                Some(format!("{signal} to {}", word(target)))
            }
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
        // The echo is this line only: what filled stderr goes here.
        if stderr.live_bytes_dropped > 0 && !stderr.repeats.is_empty() {
            let mostly: Vec<String> = stderr
                .repeats
                .iter()
                .take(2)
                .map(crate::repeats::counted)
                .collect();
            live.push_str(&format!(", mostly {}", mostly.join(", ")));
        }
        live
    } else {
        format!("{} kept", stderr.bytes_retained)
    };
    let usage = record.usage.map_or(String::new(), |u| {
        let cgroup_cpu = u
            .cgroup_cpu_ms
            .map_or(String::new(), |ms| format!(", cgroup cpu {ms}ms"));
        let peak = u
            .memory_peak_bytes
            .map_or(String::new(), |b| format!(", memory peak {b} bytes"));
        let rss = u
            .max_rss_kib
            .map_or(String::new(), |kib| format!(", max rss {kib} KiB"));
        format!(
            "; cpu {}ms user {}ms sys{rss}{cgroup_cpu}{peak}",
            u.user_ms, u.sys_ms
        )
    });
    let windows = stderr.debug_windows.len() as u64 + stderr.debug_windows_not_listed;
    let debug = if windows > 0 {
        format!(
            "; debug window open {} s",
            stderr.debug_windows_open_ms.div_ceil(1000)
        )
    } else {
        String::new()
    };
    let host = host_ended(record);
    let opening = opening(record, host.as_deref(), &exit, &sent);
    let status = record
        .lifecycle
        .exit_code
        .unwrap_or(i64::from(code::OWN_FAILURE));
    let sent_by_us = |name: &str| {
        record.events.iter().any(
            |event| matches!(&event.kind, EventKind::SignalSent { signal, .. } if signal == name),
        )
    };
    let ours = match (&record.lifecycle.exit, &host) {
        (Some(crate::record::Exit::Signal { signal, .. }), Some(_)) if sent_by_us(signal) => {
            format!(", the server's status after our {signal}")
        }
        _ => String::new(),
    };
    format!(
        "mcp-bound: {opening}; stderr {} bytes seen, {kept}{debug}{usage}; exit {status}{ours}\n",
        stderr.bytes_seen,
    )
}

/// How the host ended the session, when it did: our stdin closed, or a
/// signal with nothing in flight, or a hang-up the server answered by
/// exiting. None for any other end.
fn host_ended(record: &Record) -> Option<String> {
    let lifecycle = &record.lifecycle;
    match (lifecycle.state, lifecycle.cancel_reason) {
        (_, Some(CancelReason::StdinClosed)) => Some("stdin closed".to_string()),
        (State::ShutDown, Some(CancelReason::Signal)) => lifecycle
            .cancel_signal
            .as_ref()
            .map(|signal| format!("SIG{signal}")),
        (State::ShutDown, _) => Some("stdin closed".to_string()),
        _ => None,
    }
}

/// The line's opening: what ended the call (`host`: how the host ended
/// the session, if it did). The host's own end of a
/// session is said as that, not as a state word that reads as a failure
/// (the state stays in the record): the MCP shutdown is the host closing
/// our stdin, then, if the server stays, the stop signal after the grace.
fn opening(record: &Record, host: Option<&str>, exit: &str, sent: &str) -> String {
    let ms = record.times.duration_ms.unwrap_or(0);
    let Some(how) = host else {
        return format!(
            "{} after {ms}ms ({exit}{sent})",
            word(record.lifecycle.state)
        );
    };
    let server = if sent.is_empty() {
        format!("the server exited ({exit})")
    } else {
        format!("the server was stopped ({exit}{sent})")
    };
    let cut_off = match record.mcp.as_ref().map_or(0, |mcp| mcp.in_flight_at_exit) {
        0 => String::new(),
        1 => ", 1 request cut off (it may have acted)".to_string(),
        n => format!(", {n} requests cut off (they may have acted)"),
    };
    format!("the host ended the session ({how}) after {ms}ms; {server}{cut_off}")
}
