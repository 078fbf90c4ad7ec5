//! `mcp-bound log JOURNAL`: the journal read, not only verified. One
//! streaming pass checks the chain as `verify` does (`--key`,
//! `--anchor`) and hands each entry to the activity view
//! (`activity.rs`, pure): one row per call at its terminal entry (or at
//! the end, unfinished), with `--sessions` one per session, or with
//! `--call ID` that call's entries as a timeline (`timeline.rs`); filtered
//! by `--since`, `--until`, `--session`, `--state` and `--tool`; text
//! (`render.rs`) or `--json` (JSON Lines, `schema/log.schema.json`).
//! A break is reported where it is, and the rows after it are marked
//! unverified. Exit 0, 1 (the chain is broken), 2 (usage or I/O), as
//! `verify`.

mod activity;
mod render;
mod requests;
mod timeline;

use std::io::{IsTerminal, Read, Write};
use std::time::SystemTime;

use crate::error::{Error, code};
use crate::journal::{self, Follow, Verdict};
use crate::printed::Printed;
use crate::shown::untrusted;
use crate::sys;
use activity::{Activity, CallRow, Filter, Sessions};
use render::Layout;
use requests::RequestRow;
use requests::Requests;

/// What `mcp-bound log` was asked (`cli::LogArgs`, resolved).
pub(crate) struct LogCommand {
    /// The journal, its key and an anchor.
    pub source: crate::verify::JournalSource,
    pub sessions: bool,
    /// `--call ID`: that call's entries, one a line.
    pub call: Option<String>,
    pub json: bool,
    pub wide: bool,
    pub since: Option<String>,
    pub until: Option<String>,
    pub session: Option<String>,
    pub state: Option<String>,
    pub tool: Option<String>,
    /// `--requests`: each call's MCP requests under its row.
    pub requests: bool,
    /// `-f`: follow the journal as it grows.
    pub follow: bool,
}

/// `--since` or `--until`: RFC 3339, or a DURATION ago (`1h`, `90`: as
/// `--timeout` reads one), as the journal writes times (UTC,
/// milliseconds), so that they compare as text.
pub(crate) fn time_bound(option: &str, text: &str) -> Result<String, Error> {
    if let Ok(ago) = crate::units::parse_duration(text) {
        let at = SystemTime::now()
            .checked_sub(ago)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        return Ok(crate::ids::rfc3339(at));
    }
    humantime::parse_rfc3339_weak(text)
        .map(crate::ids::rfc3339)
        .map_err(|_| {
            Error::VerifyUsage(format!(
                "{option} {text}: neither an RFC 3339 time (2026-12-01T09:00:00Z) nor a duration ago (1h)"
            ))
        })
}

impl LogCommand {
    fn filter(&self) -> Result<Filter, Error> {
        Ok(Filter {
            since: self
                .since
                .as_deref()
                .map(|t| time_bound("--since", t))
                .transpose()?,
            until: self
                .until
                .as_deref()
                .map(|t| time_bound("--until", t))
                .transpose()?,
            session: self.session.clone(),
            state: self.state.clone(),
            tool: self.tool.as_deref().map(|glob| {
                regex::Regex::new(&crate::session::glob_regex(glob)).expect("an escaped glob")
            }),
        })
    }

    fn layout(&self) -> Layout {
        let terminal = std::io::stdout().is_terminal();
        let columns = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok());
        Layout {
            width: (terminal && !self.wide).then(|| columns.unwrap_or(120)),
            colour: terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }
}

/// Where the rows go: printed as they come, or folded into sessions.
struct Out<'a> {
    command: &'a LogCommand,
    filter: Filter,
    layout: Layout,
    sessions: Sessions,
    stdout: Printed<std::io::BufWriter<std::io::StdoutLock<'static>>>,
    header: bool,
    /// `--call`: its entries shown.
    entries: u64,
}

impl Out<'_> {
    fn row(&mut self, row: CallRow) {
        if !self.filter.keeps(&row) {
            return;
        }
        if self.command.sessions {
            self.sessions.add(&row);
            return;
        }
        let layout = self.layout;
        self.print(&row, render::call_header, |row| render::call(row, layout));
    }

    /// A row: as JSON, or as text under its header (once).
    fn print<T: serde::Serialize>(
        &mut self,
        row: &T,
        header: fn() -> String,
        text: impl FnOnce(&T) -> String,
    ) {
        let line = if self.command.json {
            serde_json::to_string(row).expect("a row serializes")
        } else {
            if !self.header {
                self.header = true;
                let _ = writeln!(self.stdout, "{}", header());
            }
            text(row)
        };
        let _ = writeln!(self.stdout, "{line}");
        self.flush_if_following();
    }

    /// `--requests`: one request's row.
    fn request(&mut self, row: RequestRow) {
        if !self.filter.keeps_request(&row) {
            return;
        }
        let layout = self.layout;
        self.print(&row, render::request_header, |row| {
            render::request(row, layout)
        });
    }

    /// Followed, a row is seen as it comes, not when a buffer fills.
    fn flush_if_following(&mut self) {
        if self.command.follow {
            let _ = self.stdout.flush();
        }
    }

    /// `--call`: one of its entries, as the journal has it (`--json`)
    /// or as a line of its timeline.
    fn entry(&mut self, content: &[u8], line: u64, verified: bool) {
        self.entries += 1;
        if self.command.json {
            let _ = self.stdout.write_all(content);
            let _ = self.stdout.write_all(b"\n");
            return;
        }
        if !self.header {
            self.header = true;
            let _ = writeln!(
                self.stdout,
                "  {:<24}  {:>8}  {:<14}  WHAT",
                "TIME", "LINE", "KIND"
            );
        }
        let entry: serde_json::Value = serde_json::from_slice(content).unwrap_or_default();
        let _ = writeln!(self.stdout, "{}", timeline::line(&entry, line, verified));
    }

    fn sessions(&mut self) {
        let rows = std::mem::take(&mut self.sessions).rows();
        if !self.command.json && !rows.is_empty() {
            let _ = writeln!(self.stdout, "{}", render::session_header());
        }
        for row in rows {
            let line = match self.command.json {
                true => serde_json::to_string(&row).expect("a row serializes"),
                false => render::session(&row, self.layout),
            };
            let _ = writeln!(self.stdout, "{line}");
        }
    }
}

pub(crate) fn run(command: &LogCommand) -> Result<i32, Error> {
    let shown = command.source.path.display();
    let usage = |why: String| Error::VerifyUsage(format!("{shown}: {why}"));
    let key = crate::verify::key_given(command.source.key.as_deref())?;
    let mut out = Out {
        command,
        filter: command.filter()?,
        layout: command.layout(),
        sessions: Sessions::default(),
        stdout: Printed::new(std::io::BufWriter::new(std::io::stdout().lock())),
        header: false,
        entries: 0,
    };
    if !command.follow {
        let file = std::fs::File::open(&command.source.path).map_err(|e| usage(e.to_string()))?;
        return pass(&mut out, key.as_ref(), file);
    }
    // Followed: read to the end, then as it grows; a replaced file is
    // read again from its start, as a journal of its own. Once stdout's
    // reader is gone, nothing more can be shown: the following ends.
    let stopped = out.stdout.stopped();
    loop {
        let stopped = std::rc::Rc::clone(&stopped);
        let wait = Box::new(move |interval| !stopped.get() && !sys::wait_for_output_gone(interval));
        let mut source =
            Follow::open(&command.source.path, wait).map_err(|e| usage(e.to_string()))?;
        let code = pass(&mut out, key.as_ref(), &mut source)?;
        if !source.replaced() {
            return Ok(code);
        }
        eprintln!(
            "mcp-bound log: {shown}: the file was replaced; reading the new one from its start"
        );
    }
}

/// One reading of the journal, to its end: the rows as they come, then
/// the calls never finished, the sessions, and the verdict's exit.
fn pass(out: &mut Out<'_>, key: Option<&journal::Key>, source: impl Read) -> Result<i32, Error> {
    let command = out.command;
    let shown = command.source.path.display();
    let mut activity = Activity::default();
    let mut requests = Requests::default();
    let mut last_line = 0;
    let report =
        journal::verify_observed(source, key, command.source.anchor.as_deref(), &mut |seen| {
            last_line = seen.line;
            let Some(fields) = seen.view() else { return };
            if let Some(call) = &command.call {
                if fields.call_id.as_deref() == Some(call.as_str()) {
                    out.entry(seen.content, seen.line, seen.verified);
                }
            } else if command.requests {
                for row in requests.entry(seen.line, seen.verified, &fields) {
                    out.request(row);
                }
            } else if let Some(row) = activity.entry(seen.line, seen.verified, &fields) {
                out.row(row);
            }
        })
        .map_err(|err| crate::verify::unusable(&command.source.path, err))?;
    if command.requests {
        if requests.unfollowed > 0 {
            eprintln!(
                "mcp-bound log: {shown}: {} requests not listed: more were open at once than are followed",
                requests.unfollowed
            );
        }
        for row in requests.unanswered() {
            out.request(row);
        }
    }
    for row in activity.unfinished() {
        out.row(row);
    }
    out.sessions();
    out.stdout.finish().map_err(crate::printed::failed)?;
    if let Some(call) = command.call.as_ref().filter(|_| out.entries == 0) {
        return Err(Error::VerifyUsage(format!(
            "{shown}: no entry of call {call}"
        )));
    }
    match report.verdict(last_line) {
        Verdict::TornTail(torn) => {
            eprintln!(
                "mcp-bound log: {shown}: warning: {}",
                untrusted(&torn.detail)
            );
            return Ok(code::VERIFY_OK);
        }
        Verdict::Broken(broken) => {
            eprintln!(
                "mcp-bound log: {shown}: the chain breaks at line {} ({}: {}); the rows marked ! came after it and are not verified",
                broken.line,
                broken.kind.as_str(),
                untrusted(&broken.detail)
            );
            return Ok(code::VERIFY_BROKEN);
        }
        Verdict::Intact => {}
    }
    if report.final_newline_missing {
        eprintln!("mcp-bound log: {shown}: warning: the last entry has no newline");
    }
    Ok(code::VERIFY_OK)
}
