//! `--stderr-log PATH`: the helper's stderr (every drained byte, masked)
//! in a bounded, rotating file, as multilog and s6-log keep one.
//!
//! - **Bounded disk:** rotation by size (`rotation.rs`), by rename
//!   (`PATH` → `PATH.1` → … → `PATH.keep`, the oldest removed), never by
//!   truncation, so a reader following the file (`tail -F`) sees no torn
//!   line; a line is split across files only if it is longer than a file.
//! - **Never blocks the drain:** lines wait in a bounded queue and are
//!   written between polls (what waits, at most [`QUEUE_LIMIT`] a turn). What
//!   does not fit in the queue is dropped, counted, and said in the log.
//!   A write error (ENOSPC, EIO) stops the log, never the call: the record
//!   and one line on our stderr say so.
//! - **One writer per PATH:** an exclusive lock on `PATH.lock`. When
//!   another mcp-bound holds it, this one writes `PATH.<pid>` instead (its
//!   own rotation) and says so.
//! - Opened like the record: mode 0600, a symlink refused.

mod lines;
mod rotation;

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::ids::now_rfc3339;
use crate::record::StderrLogFacts;
use crate::redact::Redactor;
use crate::sys;
use crate::trust::Role;
use lines::Lines;
use rotation::{Rotation, Step};

/// A rotation's patience with a file held open (`sys::replace_file`).
const NOW: Duration = Duration::ZERO;

/// Most bytes of lines waiting to be written.
const QUEUE_LIMIT: usize = 4 << 20;
/// Most bytes written in one loop turn: all that waits (the queue's
/// bound), so a healthy disk keeps up with any drain; only a disk slower
/// than the helper makes the queue overflow.
pub(crate) const WRITE_PER_TURN: usize = QUEUE_LIMIT;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StderrLogSettings {
    pub path: PathBuf,
    pub size: u64,
    pub keep: u32,
    pub timestamps: bool,
    /// A log that cannot be opened is not an error (the record says why).
    pub optional: bool,
}

pub(crate) struct StderrLog {
    settings: StderrLogSettings,
    /// The path written: PATH, or PATH.<pid> when PATH was in use.
    path: PathBuf,
    /// None after a write error: the log is over.
    file: Option<File>,
    /// Held for as long as we write PATH.
    _lock: Option<File>,
    /// Rotation applies to a regular file only (not /dev/full, a FIFO).
    regular: bool,
    rotation: Rotation,
    lines: Lines,
    /// Output waiting to be written: `queue[start..]`, whole lines.
    queue: Vec<u8>,
    start: usize,
    /// Reused for each offer's output.
    scratch: Vec<u8>,
    /// Dropped since the last drop marker.
    unannounced: u64,
    facts: StderrLogFacts,
    /// Set once an error was said on our stderr.
    pub error_to_say: Option<String>,
    /// Others can read the log (`trust`): said once and recorded.
    pub warning: Option<String>,
}

impl StderrLog {
    /// Open (or take over) the log before dispatch. On failure: the error
    /// line; the caller refuses the call unless the log is optional.
    pub(crate) fn open(
        settings: &StderrLogSettings,
        redactor: Redactor,
    ) -> Result<StderrLog, String> {
        let shown = settings.path.display();
        // A device or a FIFO (/dev/full, a pipe to a shipper) is written
        // as it is: no lock file beside it, no rotation.
        let special = std::fs::symlink_metadata(&settings.path)
            .is_ok_and(|m| !m.file_type().is_file() && !m.file_type().is_symlink());
        let lock = if special {
            None
        } else {
            let lock_path = suffixed(&settings.path, "lock");
            let (lock, _) = sys::open_append_private(&lock_path)
                .and_then(|(lock, created)| sys::judged(&lock, Role::Lock).map(|_| (lock, created)))
                .map_err(|e| {
                    // The lock file is opened first: name what the user gave.
                    match settings.path.parent().filter(|d| !d.as_os_str().is_empty()) {
                        Some(dir) if !dir.is_dir() => format!(
                            "--stderr-log {shown}: cannot open: no directory {}",
                            dir.display()
                        ),
                        _ => format!(
                            "--stderr-log {shown}: cannot open its lock file {}: {e}",
                            lock_path.display()
                        ),
                    }
                })?;
            Some(lock)
        };
        let held = lock
            .as_ref()
            .is_none_or(|lock| sys::lock_exclusive(lock, Duration::ZERO).is_ok());
        let (path, lock, note) = match held {
            true => (settings.path.clone(), lock, None),
            false => {
                // A name no other local user can plant ahead of us.
                let own = suffixed(
                    &settings.path,
                    &format!("{}.{}", std::process::id(), crate::ids::random_hex(4)),
                );
                let note = format!(
                    "mcp-bound: --stderr-log {shown} is in use by another mcp-bound; writing {} instead\n",
                    own.display()
                );
                (own, None, Some(note))
            }
        };
        let (file, _) = sys::open_append_private(&path)
            .map_err(|e| format!("--stderr-log {}: cannot open: {e}", path.display()))?;
        let warning = sys::judged(&file, Role::StderrLog)
            .map_err(|e| format!("--stderr-log {}: {e}", path.display()))?
            .map(|w| format!("--stderr-log {}: {w}", path.display()));
        let meta = file
            .metadata()
            .map_err(|e| format!("--stderr-log {}: {e}", path.display()))?;
        Ok(StderrLog {
            settings: settings.clone(),
            path: path.clone(),
            regular: meta.file_type().is_file(),
            rotation: Rotation::new(settings.size, meta.len()),
            file: Some(file),
            _lock: lock,
            lines: Lines::new(redactor, settings.timestamps),
            queue: Vec::new(),
            start: 0,
            scratch: Vec::new(),
            unannounced: 0,
            facts: StderrLogFacts {
                path: path.to_string_lossy().into_owned(),
                ..StderrLogFacts::default()
            },
            error_to_say: note,
            warning,
        })
    }

    /// A line of mcp-bound's own (start, restart, end).
    pub(crate) fn marker(&mut self, text: &str) {
        let mut out = std::mem::take(&mut self.scratch);
        out.clear();
        self.lines.marker(&now_rfc3339(), text, &mut out);
        self.enqueue(&out);
        self.scratch = out;
    }

    /// Drained bytes: masked, framed, queued.
    pub(crate) fn offer(&mut self, bytes: &[u8]) {
        if self.file.is_none() {
            self.facts.bytes_dropped += bytes.len() as u64;
            return;
        }
        let now = if self.settings.timestamps {
            now_rfc3339()
        } else {
            String::new()
        };
        let mut out = std::mem::take(&mut self.scratch);
        out.clear();
        self.lines.feed(&now, bytes, &mut out);
        self.enqueue(&out);
        self.scratch = out;
    }

    /// Whole lines, queued if they fit; otherwise dropped, counted, and
    /// said in the log once there is room again.
    fn enqueue(&mut self, lines: &[u8]) {
        if lines.is_empty() {
            return;
        }
        if self.file.is_none() {
            self.facts.bytes_dropped += lines.len() as u64;
            return;
        }
        if self.queue.len() - self.start + lines.len() > QUEUE_LIMIT {
            self.unannounced += lines.len() as u64;
            self.facts.bytes_dropped += lines.len() as u64;
            return;
        }
        if self.start > 0 && self.start * 2 > self.queue.len() {
            self.queue.drain(..self.start);
            self.start = 0;
        }
        if self.unannounced > 0 {
            let dropped = std::mem::take(&mut self.unannounced);
            let text = format!(
                "[mcp-bound: {dropped} bytes of stderr not written to this log: it could not keep up]\n"
            );
            self.queue.extend_from_slice(text.as_bytes());
        }
        self.queue.extend_from_slice(lines);
    }

    /// Lines wait to be written.
    pub(crate) fn pending(&self) -> bool {
        self.file.is_some() && self.start < self.queue.len()
    }

    /// Write up to `limit` bytes of what waits, in as few writes as the
    /// rotation allows: each write ends at a line end (or, for a line
    /// longer than a file, at the cap).
    pub(crate) fn write_some(&mut self, limit: usize) {
        let mut budget = limit;
        while budget > 0 && self.file.is_some() && self.start < self.queue.len() {
            let waiting = self.queue.len() - self.start;
            let step = if self.regular {
                let batch = waiting.min(budget);
                match self.rotation.step(batch) {
                    Step::Write(n) if n == batch => Step::Write(n),
                    // Not all of it fits: up to the last line end that does.
                    _ => {
                        let room = self.rotation.room().min(batch);
                        let window = &self.queue[self.start..self.start + room];
                        match memchr::memrchr(b'\n', window) {
                            Some(i) => Step::Write(i + 1),
                            None => {
                                let line = memchr::memchr(b'\n', &self.queue[self.start..])
                                    .map_or(waiting, |i| i + 1);
                                self.rotation.step(line)
                            }
                        }
                    }
                }
            } else {
                Step::Write(waiting.min(budget))
            };
            let result = match step {
                Step::Rotate => self.rotate(),
                Step::Write(n) => self.write_out(n),
            };
            match result {
                Ok(n) => budget = budget.saturating_sub(n),
                Err(err) => {
                    self.fail(err);
                    return;
                }
            }
        }
        if self.start == self.queue.len() {
            self.queue.clear();
            self.start = 0;
        }
    }

    /// Write `n` waiting bytes; what reached the file is counted even when
    /// a later part fails (a disk that fills up in the middle).
    fn write_out(&mut self, n: usize) -> io::Result<usize> {
        let file = self.file.as_mut().expect("checked by the caller");
        let end = self.start + n;
        while self.start < end {
            match file.write(&self.queue[self.start..end]) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(wrote) => {
                    self.start += wrote;
                    self.rotation.wrote(wrote);
                    self.facts.bytes_written += wrote as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }

    /// PATH → PATH.1 → … → PATH.keep (the oldest replaced), then a new PATH.
    /// In the loop, so never waited for: on Windows, a reader holding one
    /// open without sharing its deletion stops the log, and its error says
    /// so.
    fn rotate(&mut self) -> io::Result<usize> {
        self.file = None;
        let keep = self.settings.keep;
        if keep == 0 {
            std::fs::remove_file(&self.path)?;
        } else {
            for n in (1..keep).rev() {
                let from = suffixed(&self.path, &n.to_string());
                match sys::replace_file(&from, &suffixed(&self.path, &(n + 1).to_string()), NOW) {
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    other => other?,
                }
            }
            sys::replace_file(&self.path, &suffixed(&self.path, "1"), NOW)?;
        }
        let (file, _) = sys::open_append_private(&self.path)?;
        self.file = Some(file);
        self.rotation.rotated();
        self.facts.rotations += 1;
        Ok(0)
    }

    fn fail(&mut self, err: io::Error) {
        let text = format!("{}: {err}", self.path.display());
        self.error_to_say = Some(format!(
            "mcp-bound: --stderr-log {text}; the log stops here, the call goes on\n"
        ));
        self.facts.error = Some(text);
        self.file = None;
        self.facts.bytes_dropped += (self.queue.len() - self.start) as u64;
        self.queue = Vec::new();
        self.start = 0;
    }

    /// The stream ended: a held partial line, then `end`, all written.
    pub(crate) fn finish(&mut self, end: &str) {
        let mut out = std::mem::take(&mut self.scratch);
        out.clear();
        self.lines.finish(&now_rfc3339(), &mut out);
        self.enqueue(&out);
        self.scratch = out;
        self.marker(end);
        self.write_some(usize::MAX);
    }

    pub(crate) fn facts(&self) -> StderrLogFacts {
        self.facts.clone()
    }
}

impl std::fmt::Debug for StderrLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StderrLog")
            .field("path", &self.path)
            .field("facts", &self.facts)
            .finish_non_exhaustive()
    }
}

/// `PATH.suffix`.
fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}
