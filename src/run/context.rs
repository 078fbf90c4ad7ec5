//! One call's context: what it runs under and what it holds as it goes,
//! the one way it says a line, span export's start and finish, the
//! in-flight record, and a failure before dispatch said once.

use std::time::{Duration, Instant, SystemTime};

use super::call::{BeforeDispatch, Ended};
use super::records::write_record_file;
use crate::error::{NotStarted, code};
use crate::journal::Journal;
use crate::otel::{Resolved, Tracer};
use crate::record::Record;
use crate::redact::Redactor;
use crate::settings::Settings;
use crate::sink::Sink;

/// How long the final writes to our stderr or a record fd may wait for a
/// reader that does not read. Past it they are dropped: never hang at exit.
pub(super) const EXIT_WRITE_LIMIT: Duration = Duration::from_secs(1);

/// One call's context, from its set-up to its end: what it runs under
/// (settings, clocks, the redactor), what it holds as it goes (the
/// journal once the intent is in, the watchdog's line, span export), and
/// the one way a line of its reaches our stderr. Each step of `run/`
/// takes it; `ending.rs` is how the call ends.
pub(super) struct Context<'a> {
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

impl Context<'_> {
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
    pub(super) fn write_in_flight(&self, record: &Record) -> Option<NotStarted> {
        let path = self.settings.record.path.as_ref()?;
        let err = write_record_file(path, record).err()?;
        self.record_refused.set(true);
        Some(NotStarted::helper(format!(
            "--record {}: cannot write the record before dispatch: {err}",
            path.display()
        )))
    }

    /// Refused before dispatch: said in one line, and the record's error
    /// (the record and journal say it at the end). Exit 125.
    pub(super) fn refused<S: BeforeDispatch>(&self, step: S, refusal: NotStarted) -> Box<Ended> {
        self.failed(step, refusal.to_string(), code::OWN_FAILURE)
    }

    /// The helper could not be started, in its own words (126 cannot
    /// run, 127 not found), or a refusal as `refused` words it.
    pub(super) fn failed<S: BeforeDispatch>(
        &self,
        step: S,
        error: String,
        exit_code: i32,
    ) -> Box<Ended> {
        self.say(format!("mcp-bound: {error}\n"));
        step.fail(error, exit_code)
    }

    /// The one way a line reaches our stderr from a call: masked, and
    /// bounded in time so a reader that does not read cannot hang us.
    pub(super) fn say(&self, line: String) {
        let line = self.redactor.redact(&line);
        let _ = Sink::stderr().write_all_within(line.as_bytes(), EXIT_WRITE_LIMIT);
    }
}
