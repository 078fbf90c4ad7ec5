//! How a call ends, whichever way it ends: the record completed and
//! written (file, descriptor), the journal's terminal entry, and the
//! bounded echo with its summary line, all masked, none able to hang us.

use std::fs;
use std::time::{Duration, Instant, SystemTime};

use super::call::{BeforeDispatch, Ended};
use super::records::{keep_newest, write_record_file, write_record_text};
use crate::cli::Echo;
use crate::error::code;
use crate::ids::rfc3339;
use crate::journal::{self, Journal};
use crate::otel::{Resolved, Tracer};
use crate::record::{
    CancelReason, DebugWindow, Event, EventKind, Record, RepeatsCounted, State, StderrFacts,
    WindowOpener, word,
};
use crate::redact::Redactor;
use crate::settings::Settings;
use crate::sink::Sink;
use crate::units::millis;

/// How long the final writes to our stderr or a record fd may wait for a
/// reader that does not read. Past it they are dropped: never hang at exit.
const EXIT_WRITE_LIMIT: Duration = Duration::from_secs(1);

/// A monotonic instant as wall-clock time, through the run's two origins.
fn wall_time(origin: Instant, started_at: SystemTime, at: Instant) -> String {
    rfc3339(started_at + at.saturating_duration_since(origin))
}

/// The end of a call, whichever way it ends.
pub(super) struct Ending<'a> {
    pub(super) settings: &'a Settings,
    pub(super) origin: Instant,
    pub(super) started_at: SystemTime,
    pub(super) redactor: &'a Redactor,
    /// Set once the intent is in the journal: then a terminal entry is owed.
    pub(super) journal: Option<&'a Journal>,
    /// The record path already refused the in-flight record, and said so:
    /// the final record is still tried, but a second refusal is not news.
    pub(super) record_refused: std::cell::Cell<bool>,
    /// The line to the watchdog, once it runs: it hears the final words
    /// before they are written, and that they were.
    pub(super) watchdog: std::cell::OnceCell<crate::contain::Link>,
    /// Span export, once started (at the dispatch, or at the end for a
    /// call that never got there); Err: it could not start, and why.
    pub(super) otel: std::cell::OnceCell<Result<Tracer, String>>,
    /// The final record as --record has it, while span export is on: it
    /// is written again with what the last flush sent.
    pub(super) written: std::cell::OnceCell<Record>,
}

impl Ending<'_> {
    /// Start span export, if it is on (once).
    pub(super) fn start_otel(&self) {
        if let Resolved::On(config) = &self.settings.otel {
            self.otel.get_or_init(|| {
                Tracer::start(
                    config,
                    self.redactor,
                    &self.settings.record.call_id,
                    self.origin,
                    self.started_at,
                )
                .map_err(|err| format!("cannot start the exporter thread: {err}"))
            });
        }
    }

    pub(super) fn tracer(&self) -> Option<&Tracer> {
        self.otel.get().and_then(|started| started.as_ref().ok())
    }

    /// The exit, after the record and the journal: the last spans, within
    /// the flush bound; then the record file again, atomically, with what
    /// export did in the end (the first writing stands if this fails).
    pub(super) fn finish_otel(&mut self, signals: &crate::sys::SignalPipe) {
        let Some(Ok(tracer)) = self.otel.take() else {
            return;
        };
        let facts = tracer.finish(signals);
        if let (Some(mut record), Some(path)) = (self.written.take(), &self.settings.record.path) {
            record.otel = Some(facts);
            let _ = write_record_file(path, &record);
        }
    }

    /// Write the in-flight record; the error line if it cannot be written
    /// (then nothing may start).
    pub(super) fn write_in_flight(&self, record: &Record) -> Option<String> {
        let path = self.settings.record.path.as_ref()?;
        let err = write_record_file(path, record).err()?;
        self.record_refused.set(true);
        Some(format!(
            "--record {}: cannot write the record before dispatch: {err}; the helper was not started",
            path.display()
        ))
    }

    /// Nothing was started: say so in one line (the record and journal
    /// say it at the end).
    pub(super) fn failed<S: BeforeDispatch>(
        &self,
        step: S,
        error: String,
        exit_code: i32,
    ) -> Box<Ended> {
        // 126 and 127 say it in their own words (cannot run, not found).
        let said = if exit_code == code::OWN_FAILURE
            && !error.ends_with("not started")
            && !error.contains("nothing was started")
        {
            format!("{error}; the helper was not started")
        } else {
            error.clone()
        };
        self.say(format!("mcp-bound: {said}\n"));
        step.fail(error, exit_code)
    }

    /// The one way a line reaches our stderr from a call: masked, and
    /// bounded in time so a reader that does not read cannot hang us.
    pub(super) fn say(&self, line: String) {
        let line = self.redactor.redact(&line);
        let _ = Sink::stderr().write_all_within(line.as_bytes(), EXIT_WRITE_LIMIT);
    }

    /// The end: complete the record, write it everywhere asked (the
    /// journal's terminal entry too), echo, and return the exit code.
    pub(super) fn end(&self, ended: Ended) -> i32 {
        let Ended {
            mut record,
            exit_code,
            outcome,
        } = ended;
        let settings = self.settings;
        // The error text can quote argv or a path: it leaves masked, like
        // everything else (the journal's terminal entry is built from this).
        record.error = record
            .error
            .map(|error| self.redactor.redact(&error).into_owned());
        record.lifecycle.exit_code = Some(exit_code);
        record.times.ended_at = Some(rfc3339(SystemTime::now()));
        record.times.duration_ms = Some(millis(self.origin.elapsed()));
        let mut echo_text = None;
        let mut journal_excerpt = None;
        if let Some(outcome) = outcome {
            let capture = &outcome.capture;
            let retained = capture.head_limit() + capture.tail_limit();
            let windows = outcome.live.windows.as_ref();
            record.stderr = StderrFacts {
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
            };
            record.times.last_stdout_at = outcome
                .last_stdout
                .map(|at| wall_time(self.origin, self.started_at, at));
            record.times.last_stderr_at = outcome
                .last_stderr
                .map(|at| wall_time(self.origin, self.started_at, at));
            record.events = outcome.events;
            let mut text = capture
                .excerpt(settings.capture.excerpt_bytes, self.redactor)
                .text;
            // What was not kept, and what it mostly was: one line after
            // the truncation marker.
            let not_kept = capture.bytes_seen() - capture.bytes_retained();
            if let Some(line) = crate::repeats::not_kept_line(
                not_kept,
                &record.stderr.repeats,
                (!outcome.repeats.exact()).then_some(outcome.repeats.lines_counted),
            ) && let Some(marker_end) = text.find("]\n")
            {
                text.insert_str(marker_end + 2, &format!("{line}\n"));
            }
            echo_text = Some(text);
            if let Some(journal) = &settings.journal
                && journal.excerpt_bytes > 0
            {
                journal_excerpt = Some(capture.excerpt(journal.excerpt_bytes, self.redactor).text);
            }
        }
        record.events.sort_by_key(|event: &Event| event.t_ms);

        // A failure or denial before dispatch already printed its one line.
        let echo = match settings.capture.echo {
            _ if matches!(
                record.lifecycle.state,
                State::FailedBeforeDispatch | State::Denied
            ) =>
            {
                false
            }
            Echo::Never => false,
            // Our stdout's reader stopped reading (`| head`): a shell says
            // nothing for a command SIGPIPE ended, and neither do we. The
            // record keeps the facts; --echo always still prints.
            Echo::OnFailure
                if record.lifecycle.cancel_reason == Some(CancelReason::ClientDisconnected) =>
            {
                false
            }
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
            self.say(text);
        }
        // The call's span, and what export knows now: the record is
        // written before the last flush.
        self.start_otel();
        record.otel = match (&settings.otel, self.otel.get()) {
            (_, Some(Ok(tracer))) => Some(tracer.call_ended(&record, self.origin, Instant::now())),
            (_, Some(Err(why))) | (Resolved::Unusable(why), None) => {
                Some(crate::otel::unusable(why))
            }
            (Resolved::Off | Resolved::On(_), None) => None,
        };
        let line = record.to_line();
        let terminal = self
            .journal
            .map(|_| journal::Terminal::from_record(&record, journal_excerpt));
        // The watchdog hears the final words before they are written: if
        // mcp-bound dies while writing them, it completes them (and never
        // adds a terminal that is there already).
        if let Some(link) = self.watchdog.get() {
            let body = terminal
                .as_ref()
                .map(|terminal| serde_json::to_string(terminal).expect("entries serialize"));
            let journal_len = self
                .journal
                .and_then(|journal| fs::metadata(&journal.path).ok())
                .map(|meta| meta.len());
            link.final_words(&line, body.as_deref().unwrap_or("{}"), journal_len);
        }
        if let Some(path) = &settings.record.path {
            match write_record_text(path, &line) {
                Err(err) if !self.record_refused.get() => self.say(format!(
                    "mcp-bound: --record {}: cannot write the final record: {err}\n",
                    path.display()
                )),
                Err(_) => {}
                // Records a template made do not pile up.
                Ok(()) => {
                    if let Some((template, keep)) = &settings.record.keep {
                        keep_newest(template, *keep);
                    }
                    if self.tracer().is_some() {
                        let _ = self.written.set(record.clone());
                    }
                }
            }
        }
        if let (Some(journal), Some(terminal)) = (self.journal, &terminal)
            && let Err(err) = journal.append(journal::Entry::Terminal(terminal))
        {
            self.say(format!(
                "mcp-bound: --journal {}: cannot write the terminal entry: {err}\n",
                journal.path.display()
            ));
        }
        if let Some(link) = self.watchdog.get() {
            link.written();
        }
        if let Some(fd) = settings.record.fd {
            if let Err(err) = Sink::for_fd(fd).write_all_within(line.as_bytes(), EXIT_WRITE_LIMIT) {
                self.say(format!(
                    "mcp-bound: --record-fd {fd}: cannot write the record: {err}\n"
                ));
            }
        }
        exit_code
    }
}

/// An observed exit in words, for the lines mcp-bound prints.
pub(super) fn describe_exit(exit: Option<&crate::record::Exit>) -> String {
    match exit {
        Some(crate::record::Exit::Code { code }) => format!("exit {code}"),
        Some(crate::record::Exit::Signal { signal, .. }) => format!("killed by {signal}"),
        None => "no exit observed".to_string(),
    }
}

/// One line that says what happened, after the excerpt.
fn summary(record: &Record) -> String {
    let exit = describe_exit(record.lifecycle.exit.as_ref());
    let state = word(record.lifecycle.state);
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
    format!(
        "mcp-bound: {state} after {}ms ({exit}{sent}); stderr {} bytes seen, {kept}{debug}{usage}; exit {}\n",
        record.times.duration_ms.unwrap_or(0),
        stderr.bytes_seen,
        record.lifecycle.exit_code.unwrap_or(code::OWN_FAILURE),
    )
}
