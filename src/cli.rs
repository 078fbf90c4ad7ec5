//! The single clap definition. `--help`, the man page and the shell
//! completions are all generated from [`command`]; the texts shared by help
//! and man page (exit status, record) live here too.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

use crate::error::Error;
use crate::{signals, units};

/// When mcp-bound prints the stderr excerpt to its own stderr at exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Echo {
    Never,
    OnFailure,
    Always,
}

pub const EXIT_STATUS: &[(&str, &str)] = &[
    ("0-123", "the helper's own exit code"),
    (
        "124",
        "the deadline passed (with --preserve-status: the helper's own status instead)",
    ),
    (
        "125",
        "mcp-bound itself failed: bad usage or value, or a record that could not be written before dispatch (nothing was started); or, after dispatch, mcp-bound could not go on supervising (state failed_after_dispatch: the helper's tree was killed)",
    ),
    ("126", "the helper was found but could not be run"),
    ("127", "the helper was not found"),
    (
        "128+N",
        "the helper died of signal N that mcp-bound did not send; or mcp-bound received signal N (INT, TERM, HUP, QUIT) and cancelled the helper",
    ),
    (
        "77",
        "the approver denied the call, or the approval expired; the helper never ran",
    ),
    (
        "141",
        "mcp-bound's stdout reader went away (EPIPE) and the helper was cancelled",
    ),
];

pub const RECORD: &str = "\
One JSON object (schema mcp-bound/record/v1, published as schema/record.schema.json). \
With --record PATH it is written before the helper starts (state awaiting_approval while an approval \
is asked, then dispatched, with exit null), then replaced atomically (temporary file and rename, \
mode 0600) at the end; with --record-fd N one line is written at the end. \
Lifecycle facts come first. state: awaiting_approval, dispatched (in flight; stays if mcp-bound is \
SIGKILLed), completed, timed_out, cancelled_before_dispatch, cancelled_after_dispatch (also a cancel \
during clean-up after the helper exited), failed_before_dispatch (nothing started: 125, 126 or 127, \
with error), failed_after_dispatch (mcp-bound itself failed after the start: the helper's tree was \
killed, exit 125, with error; the helper may have acted), denied (approval denied or expired, exit 77). \
cancel_reason: timeout, signal, client_disconnected, stdin_closed. \
exit ({\"code\": N}, {\"signal\": \"TERM\", \"core_dumped\": false}, or null when no exit was observed; never 0 unless 0 was seen), \
exit_code (mcp-bound's own), stream_end (eof, eof_after_descendants_killed, closed_while_held), \
descendants_signalled. Then argv, cwd, pid, started_at, ended_at (RFC 3339), duration_ms, \
approval {required, method (command, tty), decision (approved, denied, expired, error), requested_at, \
decided_at, waited_ms, timeout_ms, approver_exit, excerpt}, \
stdout {bytes_seen, bytes_forwarded, bytes_discarded, guard (off, jsonrpc), lines_forwarded, \
lines_diverted, bytes_diverted, first_diverted}, \
stderr {bytes_seen, bytes_retained, truncated, head_bytes, tail_bytes, excerpt, live_bytes_forwarded, \
live_bytes_dropped, live_bytes_unsent: with --live every byte seen is one of the three}, the limits in force, \
and events: dispatched, cancel_requested, signal_sent (signal, target group or descendants, count, \
reason: timeout, signal, client_disconnected, stdin_closed, pipes_held, leftovers, supervisor_failure), \
helper_exited, stdout_closed, stderr_closed, stdin_closed, streams_abandoned, each with t_ms, \
milliseconds on the monotonic clock since mcp-bound started. \
A cancellation after dispatch is never reported as a failure: the helper may already have acted.";

/// Further man page sections, as (title, text).
pub const MAN_SECTIONS: &[(&str, &str)] = &[
    (
        "SIGNALS",
        "INT, TERM, HUP and QUIT received by mcp-bound cancel the helper: the received signal is \
forwarded to the helper's process group (as GNU timeout does), then CONT, then KILL after --grace. \
A second such signal sends KILL at once. mcp-bound exits 128+N after writing the record. \
A terminating signal that was ignored when mcp-bound started stays ignored. SIGPIPE is ignored; \
EPIPE on stdout cancels the helper with reason client_disconnected. Signals reach the poll loop \
through a self-pipe: no thread handles them.",
    ),
    (
        "PROCESS TREE",
        "The helper runs in its own process group. On Linux mcp-bound is a child subreaper, so \
descendants that leave the group (setsid, double fork) re-parent to it and are still found: \
every termination step signals the group with killpg and every other live descendant one by one, \
never the same process twice in one step. Only the helper's tree is signalled: children mcp-bound \
already had before dispatch (a shell that exec'd it hands over its background jobs and process \
substitutions) and processes older than the helper are never signalled or waited for, only reaped \
if they exit. The helper is observed with waitid(WNOWAIT) and reaped \
last, so its process group id cannot be reused while it is signalled. When the helper exits but \
descendants hold its stdout or stderr open, mcp-bound waits --wait-delay, then terminates them \
(signal, --grace, KILL); the helper's real exit status is kept and stream_end says what happened. \
Descendants still running after the helper exited and its pipes closed are terminated the same way. \
On Linux the helper gets PR_SET_PDEATHSIG=SIGKILL, so it dies if mcp-bound is SIGKILLed; this \
covers the helper itself, not its descendants, which must watch their own parent or stdin.",
    ),
    (
        "MCP SERVER MODE",
        "With --mcp: the stdout guard lets through only complete lines that are one JSON object and \
diverts the rest (banners, BOMs, partial lines, over-long lines) into the stderr capture, counted; \
stderr is forwarded live within a token bucket, drops counted and announced, and the exit echo is then \
the summary line only (no line twice in the host's log); stdin is watched for \
hang-up without being read (a socket shut down for writing counts), and the server then gets --stdin-close-grace (2s) to exit before its \
tree is terminated. Hosts close stdin, SIGTERM 2s later and SIGKILL 2s after that; with --grace 1s \
and --wait-delay 500ms the worst case ends, record written, by about 3.5s: keep \
stdin-close-grace + grace + wait-delay below the host's total.",
    ),
    (
        "APPROVAL",
        "--approve-cmd runs an approver before the helper starts, with the call as one JSON object on \
its stdin (argv exact); exit 0 approves. --approve tty asks on /dev/tty, default no. \
--approval-timeout is a wall-clock deadline nothing extends: at the deadline the approver's tree \
gets TERM and KILL together (--grace does not apply). Denied or expired: the helper is \
never started, state denied, exit 77. With --journal, the decision is its own entry between intent \
and terminal.",
    ),
    (
        "JOURNAL",
        "--journal appends an intent (synced, before dispatch; if it cannot be written the helper is \
not started) and a terminal entry, hash-chained: h is SHA-256 (HMAC-SHA256 with --journal-key) of \
the exact bytes of the line before its h field, prev links to the previous h. Appends take an \
exclusive flock; a torn tail is kept and accounted for by a recover entry (a whole last entry that \
lacks only its newline is finished and chained onto, and verify warns about it). mcp-bound verify checks \
every line's hash, strict shape, seq continuity, prev linkage and intent/decision/terminal pairing, \
reports the first break (HASH_MISMATCH, CHAIN_BREAK, SEQ_GAP, SEQ_ORDER, TORN_TAIL, \
ORPHAN_TERMINAL, DUPLICATE_CALL for a second intent while the call is open, MALFORMED, ANCHOR_MISSING) \
with its line, lists unfinished calls, uses memory for the calls in flight only, \
and exits 0 intact, 1 broken, 2 unusable. What it cannot prove alone: a cut tail, a rollback or a \
whole rewritten file pass unless checked with --anchor (a head h kept elsewhere); a correctly \
chained forged append passes unless the journal is keyed and the forger lacks the key.",
    ),
    (
        "VERIFY",
        "mcp-bound verify [--anchor HEX] [--json] [--key FILE] JOURNAL. --anchor HEX: a head h \
recorded earlier (from \"OK: ... h=<hex>\"), which must still be in the journal; this catches a cut \
tail, a rollback or a rewrite. --json: print the report as one JSON object (ok, entries, journal_id, \
keyed, head, validated_lines, break, anchor, anchor_found, unfinished, final_newline_missing) \
instead of text. --key FILE: the key of a keyed journal (the one given to --journal-key). Exit 0 \
intact (warnings allowed), 1 integrity failure, 2 usage or I/O error.",
    ),
    (
        "REDACTION",
        "A safety net, not a guarantee: helpers must not print credentials. Captured text is masked \
when it is written out (record, echo, journal, live stderr, argv): Authorization headers, Bearer \
tokens, private key blocks, AWS/GitHub/GitLab/Slack/sk- tokens, password=/token=/secret= pairs, \
and --redact patterns. A token cut in two by truncation is masked as [cut] (at most 64 bytes at the cut). \
Error text and every line mcp-bound prints about a call are masked too. Masking cannot undo a \
secret that already reached a terminal or another log. The environment is never recorded.",
    ),
    (
        "CAVEATS",
        "The helper is not in the terminal's foreground process group: an interactive helper that \
reads from a terminal is stopped by SIGTTIN. mcp-bound is made for pipes (MCP hosts, scripts). \
Unlike GNU timeout, a timed-out call exits 124 even when KILL was needed; use --preserve-status \
for the helper's own status (137 after KILL).",
    ),
];

const AFTER_HELP: &str = "\
Every option also reads an environment variable, named in brackets.

Examples:
  mcp-bound --timeout 30s --record call.json -- ssh host uptime
  mcp-bound --timeout 2s -- sh -c 'yes helper-diagnostic 1>&2'";

#[derive(Parser, Debug)]
#[command(
    name = "mcp-bound",
    version,
    about = "Run one helper under a bounded supervisor and write a truthful lifecycle record",
    long_about = "Run one helper under a bounded supervisor and write a truthful lifecycle record.\n\n\
mcp-bound drains the helper's stdout and stderr continuously in one poll() loop. \
stdout is forwarded byte-exact (a protocol channel). stderr is always drained; a bounded \
head and tail of it are kept, what is dropped is counted and marked. A deadline or a \
signal ends the helper's whole process tree: signal, grace, then KILL. At the end one JSON \
record states what was observed.",
    after_help = AFTER_HELP,
    max_term_width = 100,
    override_usage = "mcp-bound [OPTIONS] -- <COMMAND> [ARGS]...\n       mcp-bound verify [OPTIONS] <JOURNAL>",
    subcommand_negates_reqs = true,
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub subcommand: Option<Sub>,

    /// Deadline for the helper, from its start; 0 or inf means none. GNU syntax: 10, 1.5, 1e-3, 0x1p-3, 500ms, 30s, 5m, 1h, 1d.
    #[arg(long, value_name = "DURATION", env = "MCP_BOUND_TIMEOUT", value_parser = units::parse_timeout, help_heading = "Deadline options")]
    pub timeout: Option<Duration>,

    /// Signal sent to the helper's group at the deadline: a name (any case, SIG optional; RTMIN+N, RTMAX-N) or a number.
    #[arg(short = 's', long, value_name = "SIGNAL", env = "MCP_BOUND_SIGNAL", default_value = "TERM", value_parser = signals::parse, help_heading = "Deadline options")]
    pub signal: i32,

    /// Time between the first signal and SIGKILL to the whole tree; 0 kills at once. Also spelled --kill-after, as GNU timeout names it [default: 5s; 1s with --mcp].
    #[arg(short = 'k', long, visible_alias = "kill-after", value_name = "DURATION", env = "MCP_BOUND_GRACE", value_parser = units::parse_duration, help_heading = "Deadline options")]
    pub grace: Option<Duration>,

    /// After the helper exits, how long to wait for descendants to release its pipes before terminating them; also the wait for EOF after the final KILL [default: 1s; 500ms with --mcp].
    #[arg(long, value_name = "DURATION", env = "MCP_BOUND_WAIT_DELAY", value_parser = units::parse_duration, help_heading = "Deadline options")]
    pub wait_delay: Option<Duration>,

    /// On timeout, exit with the helper's own status instead of 124.
    #[arg(long, env = "MCP_BOUND_PRESERVE_STATUS", value_parser = BoolishValueParser::new(), default_value_t = false, num_args = 0, default_missing_value = "true", help_heading = "Deadline options")]
    pub preserve_status: bool,

    /// Bytes of the start of stderr to keep.
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_HEAD_BYTES", default_value = "0", value_parser = units::parse_capture_bytes, help_heading = "Capture options")]
    pub head_bytes: usize,

    /// Bytes of the end of stderr to keep (a ring: memory stays constant).
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_TAIL_BYTES", default_value = "16384", value_parser = units::parse_capture_bytes, help_heading = "Capture options")]
    pub tail_bytes: usize,

    /// Most bytes of captured stderr that mcp-bound prints to its own stderr at exit.
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_EXCERPT_BYTES", default_value = "4096", value_parser = units::parse_capture_bytes, help_heading = "Capture options")]
    pub excerpt_bytes: usize,

    /// When to print the stderr excerpt to mcp-bound's stderr at exit.
    #[arg(
        long,
        value_name = "WHEN",
        env = "MCP_BOUND_ECHO",
        value_enum,
        default_value = "on-failure",
        help_heading = "Capture options"
    )]
    pub echo: Echo,

    /// How a stderr flood is drained: auto times reads and moves the flood inside the kernel (splice) while copying it is slow and moving proves faster; read always copies; splice always moves. Speed only: what is kept and counted is the same.
    #[arg(
        long,
        value_name = "HOW",
        env = "MCP_BOUND_FLOOD_PATH",
        value_enum,
        default_value = "auto",
        help_heading = "Capture options"
    )]
    pub flood_path: FloodPath,

    /// Write the record to PATH: "dispatched" before the helper starts, replaced atomically at the end (mode 0600; a symlink is refused).
    #[arg(
        long,
        value_name = "PATH",
        env = "MCP_BOUND_RECORD",
        help_heading = "Record options"
    )]
    pub record: Option<PathBuf>,

    /// Write the record as one line to descriptor N at the end (not 0 or 1: stdout belongs to the helper).
    #[arg(long, value_name = "N", env = "MCP_BOUND_RECORD_FD", value_parser = clap::value_parser!(i32).range(2..), help_heading = "Record options")]
    pub record_fd: Option<i32>,

    /// The call's id in the record (default: a random id).
    #[arg(long, value_name = "ID", env = "MCP_BOUND_CALL_ID", value_parser = parse_id, help_heading = "Record options")]
    pub call_id: Option<String>,

    /// The session's id in the record.
    #[arg(long, value_name = "ID", env = "MCP_BOUND_SESSION_ID", value_parser = parse_id, help_heading = "Record options")]
    pub session_id: Option<String>,

    /// MCP stdio server mode: --stdout-guard jsonrpc, --live, --stdin-close-grace 2s, --grace 1s, --wait-delay 500ms (each can still be set on its own).
    #[arg(long, env = "MCP_BOUND_MCP", value_parser = BoolishValueParser::new(), default_value_t = false, num_args = 0, default_missing_value = "true", help_heading = "MCP server mode options")]
    pub mcp: bool,

    /// Let through only complete stdout lines that are one JSON object; divert everything else into the stderr capture [default: off; jsonrpc with --mcp].
    #[arg(
        long,
        value_name = "MODE",
        env = "MCP_BOUND_STDOUT_GUARD",
        value_enum,
        help_heading = "MCP server mode options"
    )]
    pub stdout_guard: Option<GuardMode>,

    /// With the guard, a longer stdout line is diverted, never held (at least 1).
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_MAX_MESSAGE_BYTES", default_value = "16MiB", value_parser = positive_capture_bytes, help_heading = "MCP server mode options")]
    pub max_message_bytes: usize,

    /// Forward the helper's stderr to ours as it arrives, within --live-rate and --live-burst; drops are counted and announced [default: off; on with --mcp].
    #[arg(long, value_name = "BOOL", env = "MCP_BOUND_LIVE", value_parser = BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "true", require_equals = true, help_heading = "MCP server mode options")]
    pub live: Option<bool>,

    /// Live stderr budget: bytes per second (at least 1; --live=false turns live output off).
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_LIVE_RATE", default_value = "16KiB", value_parser = positive_bytes, help_heading = "MCP server mode options")]
    pub live_rate: u64,

    /// Live stderr budget: most bytes at once (also the bound on what waits to be written).
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_LIVE_BURST", default_value = "256KiB", value_parser = units::parse_capture_bytes, help_heading = "MCP server mode options")]
    pub live_burst: usize,

    /// Watch our stdin for hang-up (without reading it); then give the helper this long to exit before terminating it [default: off; 2s with --mcp].
    #[arg(long, value_name = "DURATION", env = "MCP_BOUND_STDIN_CLOSE_GRACE", value_parser = units::parse_duration, help_heading = "MCP server mode options")]
    pub stdin_close_grace: Option<Duration>,

    /// Also mask matches of REGEX (repeatable) in everything written out of the capture; built-in patterns cover Authorization headers, Bearer tokens, private keys, common API token shapes and password=/token=/secret= pairs.
    #[arg(long, value_name = "REGEX", env = "MCP_BOUND_REDACT", value_delimiter = '\n', value_parser = parse_regex, help_heading = "Capture options")]
    pub redact: Vec<String>,

    /// Before the helper starts, run COMMAND (split into words like a shell does; no shell is run) with the call as one JSON object on its stdin; exit 0 approves, anything else denies. It runs in its own process group, bounded, and is terminated at the deadline.
    #[arg(long, value_name = "COMMAND", env = "MCP_BOUND_APPROVE_CMD", value_parser = parse_command_line, conflicts_with = "approve", help_heading = "Approval options")]
    pub approve_cmd: Option<CommandLine>,

    /// Before the helper starts, ask on the controlling terminal (/dev/tty, never stdin or stdout); the default answer is no.
    #[arg(
        long,
        value_name = "WHERE",
        env = "MCP_BOUND_APPROVE",
        value_enum,
        help_heading = "Approval options"
    )]
    pub approve: Option<ApproveOn>,

    /// Wall-clock deadline for the approval, from the request; nothing extends it. When it passes, the call is denied as expired (exit 77).
    #[arg(long, value_name = "DURATION", env = "MCP_BOUND_APPROVAL_TIMEOUT", default_value = "60s", value_parser = positive_duration, help_heading = "Approval options")]
    pub approval_timeout: Duration,

    /// Append an intent (before dispatch, synced) and a terminal entry to this hash-chained journal. If the intent cannot be written, the helper is not started.
    #[arg(
        long,
        value_name = "PATH",
        env = "MCP_BOUND_JOURNAL",
        help_heading = "Journal options"
    )]
    pub journal: Option<PathBuf>,

    /// Most bytes of stderr excerpt in the journal's terminal entry; 0 for none.
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_JOURNAL_EXCERPT_BYTES", default_value = "1024", value_parser = units::parse_capture_bytes, help_heading = "Journal options")]
    pub journal_excerpt_bytes: usize,

    /// Key the journal: h becomes HMAC-SHA256 with the key in FILE (at least 16 bytes), so an append forged without the key fails verification.
    #[arg(
        long,
        value_name = "FILE",
        env = "MCP_BOUND_JOURNAL_KEY",
        requires = "journal",
        help_heading = "Journal options"
    )]
    pub journal_key: Option<PathBuf>,

    /// The helper and its arguments (after --).
    #[arg(value_name = "COMMAND", required = true, num_args = 1.., trailing_var_arg = true)]
    pub command: Vec<OsString>,
}

#[derive(Subcommand, Debug)]
pub enum Sub {
    /// Check a journal offline: hashes, chain, order, pairing. Exit 0 intact (warnings allowed), 1 integrity failure, 2 usage or I/O error.
    #[command(after_help = VERIFY_AFTER_HELP)]
    Verify(VerifyArgs),
}

const VERIFY_AFTER_HELP: &str = "\
What a pass proves: every line is intact, in order and linked to the one before, and every \
terminal entry has its intent. What it cannot prove alone: a cut tail, a rollback or a whole \
rewritten file pass unless checked with --anchor (a head h kept elsewhere); a correctly chained \
forged append passes unless the journal is keyed (--journal-key) and the forger lacks the key.";

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The journal file.
    #[arg(value_name = "JOURNAL")]
    pub journal: PathBuf,

    /// A head h recorded earlier (from "OK: ... h=<hex>"): it must still be in the journal.
    #[arg(long, value_name = "HEX", value_parser = parse_anchor)]
    pub anchor: Option<String>,

    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,

    /// The key of a keyed journal.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
}

fn parse_anchor(text: &str) -> Result<String, String> {
    let hex = text.trim().to_ascii_lowercase();
    if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(hex)
    } else {
        Err("an anchor is 64 hex digits (the h printed by verify)".into())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FloodPath {
    Auto,
    Read,
    Splice,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GuardMode {
    Off,
    Jsonrpc,
}

impl Cli {
    pub fn grace(&self) -> Duration {
        self.grace.unwrap_or(if self.mcp {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(5)
        })
    }

    pub fn wait_delay(&self) -> Duration {
        self.wait_delay.unwrap_or(if self.mcp {
            Duration::from_millis(500)
        } else {
            Duration::from_secs(1)
        })
    }

    pub fn stdin_close_grace(&self) -> Option<Duration> {
        self.stdin_close_grace
            .or(self.mcp.then_some(Duration::from_secs(2)))
    }

    /// Some(max message bytes) when stdout is guarded.
    pub fn guard(&self) -> Option<usize> {
        let mode = self.stdout_guard.unwrap_or(if self.mcp {
            GuardMode::Jsonrpc
        } else {
            GuardMode::Off
        });
        (mode == GuardMode::Jsonrpc).then_some(self.max_message_bytes)
    }

    pub fn flood_path(&self) -> crate::pipe_tail::FloodPath {
        use crate::pipe_tail::FloodPath as Path;
        match self.flood_path {
            FloodPath::Auto => Path::Auto,
            FloodPath::Read => Path::Read,
            FloodPath::Splice => Path::Splice,
        }
    }

    /// Some((rate, burst)) when stderr is forwarded live.
    pub fn live(&self) -> Option<(u64, u64)> {
        self.live
            .unwrap_or(self.mcp)
            .then_some((self.live_rate, self.live_burst as u64))
    }
}

/// Where --approve asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApproveOn {
    Tty,
}

/// A command line split into words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine(pub Vec<String>);

fn parse_command_line(text: &str) -> Result<CommandLine, String> {
    match shlex::split(text) {
        Some(words) if !words.is_empty() => Ok(CommandLine(words)),
        Some(_) => Err("empty command".into()),
        None => Err("unbalanced quotes".into()),
    }
}

fn positive_duration(text: &str) -> Result<Duration, String> {
    match units::parse_duration(text)? {
        duration if duration.is_zero() => Err("must be more than 0".into()),
        duration => Ok(duration),
    }
}

/// A byte count where 0 would silently lose everything.
fn positive_bytes(text: &str) -> Result<u64, String> {
    match units::parse_bytes(text)? {
        0 => Err("must be at least 1 (0 would drop everything, unannounced)".into()),
        bytes => Ok(bytes),
    }
}

fn positive_capture_bytes(text: &str) -> Result<usize, String> {
    match units::parse_capture_bytes(text)? {
        0 => Err("must be at least 1 (0 would divert every message)".into()),
        bytes => Ok(bytes),
    }
}

fn parse_regex(text: &str) -> Result<String, String> {
    crate::redact::Redactor::new(&[text.to_string()]).map(|_| text.to_string())
}

/// An id is printable and short: it ends up in file names and log lines.
fn parse_id(text: &str) -> Result<String, String> {
    if text.is_empty() || text.len() > 256 {
        return Err("an id must be 1 to 256 bytes".into());
    }
    if text.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("an id must not contain spaces or control characters".into());
    }
    Ok(text.to_string())
}

pub fn command() -> clap::Command {
    Cli::command()
}

/// What the command line asks for.
pub enum Parsed {
    Run(Box<Cli>),
    Verify(VerifyArgs),
    /// --help or --version: print this to stdout and exit 0.
    Print(String),
}

/// Parse; usage errors become one line and exit 125 (not clap's 2).
pub fn parse<I, T>(args: I) -> Result<Parsed, Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let verifying = args.get(1).is_some_and(|arg| arg == "verify");
    match Cli::try_parse_from(&args) {
        Ok(Cli {
            subcommand: Some(Sub::Verify(verify)),
            ..
        }) => Ok(Parsed::Verify(verify)),
        Ok(cli) => Ok(Parsed::Run(Box::new(cli))),
        Err(err) => match err.kind() {
            clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                Ok(Parsed::Print(err.render().to_string()))
            }
            kind if verifying => Err(Error::VerifyUsage(one_line(
                &err.render().to_string(),
                kind,
            ))),
            kind => Err(Error::Usage(one_line(&err.render().to_string(), kind))),
        },
    }
}

/// clap's message on one line, without its "error: " prefix. A missing
/// argument names what is missing and shows the usage line; other errors
/// point to --help.
fn one_line(rendered: &str, kind: clap::error::ErrorKind) -> String {
    let mut lines = rendered.lines();
    let first = lines.next().unwrap_or("invalid usage");
    let mut text = first.strip_prefix("error: ").unwrap_or(first).to_string();
    // clap lists missing arguments on indented lines after a colon.
    if text.ends_with(':') {
        let missing: Vec<&str> = rendered
            .lines()
            .skip(1)
            .take_while(|line| line.starts_with("  "))
            .map(str::trim)
            .collect();
        text.push(' ');
        text.push_str(&missing.join(", "));
    }
    let usage = rendered
        .lines()
        .find_map(|line| line.strip_prefix("Usage: "));
    match (kind, usage) {
        (clap::error::ErrorKind::MissingRequiredArgument, Some(usage)) => {
            format!("{text}; Usage: {}", usage.trim())
        }
        _ => format!("{text} (see --help)"),
    }
}
