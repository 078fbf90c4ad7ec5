//! The single clap definition, grouped by help heading (`#[command(flatten)]`),
//! and parsing with usage errors mapped to one line and exit 125. `--help`,
//! the man page and the shell completions are all generated from
//! [`command`]; their longer texts are in `texts`. Nothing past
//! `Settings::from(&Cli)` reads this.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

use crate::error::Error;
use crate::{signals, units};

mod docs;
mod texts;
pub use docs::{Generate, completion, generate, man_page};
use texts::{AFTER_HELP, VERIFY_AFTER_HELP};
pub use texts::{EXIT_STATUS, MAN_SECTIONS, RECORD};

/// When mcp-bound prints the stderr excerpt to its own stderr at exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Echo {
    Never,
    OnFailure,
    Always,
}

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

    #[command(flatten)]
    pub deadline: DeadlineArgs,

    #[command(flatten)]
    pub capture: CaptureArgs,

    #[command(flatten)]
    pub stderr_log: StderrLogArgs,

    #[command(flatten)]
    pub record: RecordArgs,

    #[command(flatten)]
    pub mcp_mode: McpArgs,

    #[command(flatten)]
    pub approval: ApprovalArgs,

    #[command(flatten)]
    pub journal: JournalArgs,

    /// Print a document to stdout and exit: the man page, a completion script, or the record's or a journal line's JSON Schema (nothing is run).
    #[arg(
        long,
        value_name = "WHAT",
        value_enum,
        exclusive = true,
        help_heading = "Other options"
    )]
    pub generate: Option<Generate>,

    /// The helper and its arguments (after --).
    #[arg(value_name = "COMMAND", required = true, num_args = 1.., trailing_var_arg = true)]
    pub command: Vec<OsString>,
}

/// Deadline options: when and how the helper is ended.
#[derive(Args, Debug)]
pub struct DeadlineArgs {
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

    /// A resource limit for the helper, set before it starts, as prlimit takes it (repeatable): NAME=SOFT[:HARD] with NAME one of as, core, cpu, data, fsize, nofile, nproc, stack; sizes take units (64MiB), cpu is seconds; unlimited for none. One that cannot be set is exit 125, and nothing runs.
    #[arg(long, value_name = "NAME=SOFT[:HARD]", env = "MCP_BOUND_RLIMIT", value_delimiter = ',', value_parser = crate::rlimit::parse, help_heading = "Deadline options")]
    pub rlimit: Vec<crate::rlimit::Rlimit>,

    /// How the helper's tree is contained, so that nothing outlives mcp-bound, even when it is SIGKILLed: cgroup (a cgroup v2 of its own, which everything it forks stays in), group (its process group; after mcp-bound's death a descendant that left the group is not found), or auto (cgroup when one can be made). A watchdog process ends the tree if mcp-bound dies.
    #[arg(
        long,
        value_name = "HOW",
        env = "MCP_BOUND_CONTAIN",
        value_enum,
        default_value = "auto",
        help_heading = "Deadline options"
    )]
    pub contain: crate::contain::ContainMode,

    /// Most memory the whole tree may use (cgroup memory.max); the kernel's OOM killer acts inside the cgroup, and the record counts its kills. Needs --contain cgroup and the memory controller.
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_MEMORY_MAX", value_parser = positive_bytes, help_heading = "Deadline options")]
    pub memory_max: Option<u64>,

    /// Most processes (and threads) the whole tree may have (cgroup pids.max): a fork bomb stops there. Needs --contain cgroup and the pids controller.
    #[arg(long, value_name = "N", env = "MCP_BOUND_PIDS_MAX", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Deadline options")]
    pub pids_max: Option<u64>,

    /// Most CPU the whole tree may use, in CPUs (0.5: half of one; cgroup cpu.max). Needs --contain cgroup and the cpu controller.
    #[arg(long, value_name = "CPUS", env = "MCP_BOUND_CPU_MAX", value_parser = parse_cpus, help_heading = "Deadline options")]
    pub cpu_max: Option<f64>,

    /// What to do when a cgroup limit cannot be applied (no cgroup, or no such controller): strict refuses the call (125, nothing runs); best-effort goes on and the record lists what was not applied.
    #[arg(
        long,
        value_name = "HOW",
        env = "MCP_BOUND_LIMITS",
        value_enum,
        default_value = "strict",
        help_heading = "Deadline options"
    )]
    pub limits: LimitsMode,
}

/// Whether a cgroup limit the machine cannot apply stops the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LimitsMode {
    Strict,
    BestEffort,
}

fn parse_cpus(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(cpus) if cpus > 0.0 && cpus.is_finite() => Ok(cpus),
        _ => Err("a positive number of CPUs, e.g. 0.5 or 2".into()),
    }
}

/// Capture options: what is kept of stderr, echoed and masked.
#[derive(Args, Debug)]
pub struct CaptureArgs {
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
    pub flood_path: crate::diagnostics::FloodPath,

    /// Also mask matches of REGEX (repeatable) in everything written out of the capture; built-in patterns cover Authorization headers, Bearer tokens, private keys, common API token shapes and password=/token=/secret= pairs.
    #[arg(long, value_name = "REGEX", env = "MCP_BOUND_REDACT", value_delimiter = '\n', value_parser = parse_regex, help_heading = "Capture options")]
    pub redact: Vec<String>,
}

/// Stderr log options: the helper's whole stderr on disk, bounded.
#[derive(Args, Debug)]
pub struct StderrLogArgs {
    /// Write the helper's stderr (every drained byte, masked) to PATH as it arrives, rotated by size: PATH.1 … PATH.N are the older files. Mode 0600; a symlink is refused. If another mcp-bound holds PATH, this one writes PATH.<pid>.
    #[arg(
        long,
        value_name = "PATH",
        env = "MCP_BOUND_STDERR_LOG",
        help_heading = "Stderr log options"
    )]
    pub stderr_log: Option<PathBuf>,

    /// Rotate the stderr log when the next line would take it past this size (a longer line is split at it).
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_STDERR_LOG_SIZE", default_value = "10MiB", value_parser = positive_bytes, requires = "stderr_log", help_heading = "Stderr log options")]
    pub stderr_log_size: u64,

    /// Older stderr log files kept (PATH.1 … PATH.N): the disk used stays under size × (N + 1).
    #[arg(
        long,
        value_name = "N",
        env = "MCP_BOUND_STDERR_LOG_KEEP",
        default_value = "3",
        requires = "stderr_log",
        help_heading = "Stderr log options"
    )]
    pub stderr_log_keep: u32,

    /// Prefix each stderr log line with an RFC 3339 UTC time, taken when the line was read.
    #[arg(long, env = "MCP_BOUND_STDERR_LOG_TIMESTAMPS", value_parser = BoolishValueParser::new(), default_value_t = false, num_args = 0, default_missing_value = "true", requires = "stderr_log", help_heading = "Stderr log options")]
    pub stderr_log_timestamps: bool,

    /// A stderr log that cannot be opened does not stop the call (the record says why); otherwise it is exit 125 and nothing runs.
    #[arg(long, env = "MCP_BOUND_STDERR_LOG_OPTIONAL", value_parser = BoolishValueParser::new(), default_value_t = false, num_args = 0, default_missing_value = "true", requires = "stderr_log", help_heading = "Stderr log options")]
    pub stderr_log_optional: bool,
}

/// Record options: where the record goes and the ids in it.
#[derive(Args, Debug)]
pub struct RecordArgs {
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
}

/// MCP server mode options.
#[derive(Args, Debug)]
pub struct McpArgs {
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

    /// After our stdin closes (the MCP shutdown), give the helper this long to exit before terminating it [default: off; 2s with --mcp].
    #[arg(long, value_name = "DURATION", env = "MCP_BOUND_STDIN_CLOSE_GRACE", value_parser = units::parse_duration, help_heading = "MCP server mode options")]
    pub stdin_close_grace: Option<Duration>,

    /// The session layer: relay our stdin to the server line by line, track each request, answer for the server when it cannot (timeouts, a crash) [default: off; jsonrpc with --mcp unless --stdout-guard off]. off: the helper inherits our stdin.
    #[arg(
        long,
        value_name = "MODE",
        env = "MCP_BOUND_SESSION",
        value_enum,
        help_heading = "MCP session options"
    )]
    pub session: Option<SessionMode>,

    /// Answer a request with no response in time with error -32001, and send the server notifications/cancelled; its late response is dropped. METHOD=DURATION sets one method's (repeatable); 0 or inf: none.
    #[arg(long, value_name = "[METHOD=]DURATION", env = "MCP_BOUND_REQUEST_TIMEOUT", value_delimiter = ',', value_parser = parse_request_timeout, help_heading = "MCP session options")]
    pub request_timeout: Vec<RequestTimeout>,

    /// A notifications/progress for a request starts its --request-timeout again.
    #[arg(long, env = "MCP_BOUND_REQUEST_TIMEOUT_RESETS_ON_PROGRESS", value_parser = BoolishValueParser::new(), default_value_t = false, num_args = 0, default_missing_value = "true", help_heading = "MCP session options")]
    pub request_timeout_resets_on_progress: bool,

    /// Most client requests waiting for the server at once; past it, a request is answered with an error at once (at least 1).
    #[arg(long, value_name = "N", env = "MCP_BOUND_MAX_IN_FLIGHT", default_value = "4096", value_parser = clap::value_parser!(u32).range(1..), help_heading = "MCP session options")]
    pub max_in_flight: u32,

    /// Start the server again when it exits on its own: never, on-failure (non-zero exit or a signal) or always. Requests in flight are answered (-32000), never re-sent; the client's initialize is replayed. Never after stdin EOF, a signal from the host or --timeout.
    #[arg(
        long,
        value_name = "WHEN",
        env = "MCP_BOUND_RESTART",
        value_enum,
        default_value = "never",
        help_heading = "MCP session options"
    )]
    pub restart: crate::record::mcp::RestartMode,

    /// Most restarts within --restart-window; past it the session ends with the server.
    #[arg(
        long,
        value_name = "N",
        env = "MCP_BOUND_MAX_RESTARTS",
        default_value = "5",
        help_heading = "MCP session options"
    )]
    pub max_restarts: u32,

    /// The window --max-restarts counts in.
    #[arg(long, value_name = "DURATION", env = "MCP_BOUND_RESTART_WINDOW", default_value = "60s", value_parser = positive_duration, help_heading = "MCP session options")]
    pub restart_window: Duration,

    /// The wait before the first restart in the window; each further one doubles it, up to 10s.
    #[arg(long, value_name = "DURATION", env = "MCP_BOUND_RESTART_BACKOFF", default_value = "250ms", value_parser = units::parse_duration, help_heading = "MCP session options")]
    pub restart_backoff: Duration,
}

/// Whether the session layer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SessionMode {
    Off,
    Jsonrpc,
}

/// One --request-timeout: for one method, or (None) for any other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestTimeout {
    pub method: Option<String>,
    /// Zero: no timeout.
    pub timeout: Duration,
}

fn parse_request_timeout(text: &str) -> Result<RequestTimeout, String> {
    let (method, duration) = match text.split_once('=') {
        Some(("", _)) => {
            return Err("a method name goes before '='".into());
        }
        Some((method, duration)) => (Some(method.to_string()), duration),
        None => (None, text),
    };
    Ok(RequestTimeout {
        method,
        timeout: units::parse_timeout(duration)?,
    })
}

/// Approval options: the gate before dispatch.
#[derive(Args, Debug)]
pub struct ApprovalArgs {
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
}

/// Journal options: the hash-chained audit trail.
#[derive(Args, Debug)]
pub struct JournalArgs {
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

    /// Under the session layer, which client requests get an mcp_request entry (synced before the request reaches the server) and an mcp_response entry: tools (tools/call, resources/read, prompts/get), all, or none.
    #[arg(
        long,
        value_name = "WHICH",
        env = "MCP_BOUND_JOURNAL_REQUESTS",
        value_enum,
        default_value = "tools",
        requires = "journal",
        help_heading = "Journal options"
    )]
    pub journal_requests: crate::session::AuditRequests,
}

#[derive(Subcommand, Debug)]
pub enum Sub {
    /// Check a journal offline: hashes, chain, order, pairing. Exit 0 intact (warnings allowed), 1 integrity failure, 2 usage or I/O error.
    #[command(after_help = VERIFY_AFTER_HELP)]
    Verify(VerifyArgs),
}

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
pub enum GuardMode {
    Off,
    Jsonrpc,
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
    /// --generate: print this document and exit 0.
    Generate(Generate),
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
        Ok(Cli {
            generate: Some(what),
            ..
        }) => Ok(Parsed::Generate(what)),
        Ok(cli) => match check(&cli) {
            Ok(()) => Ok(Parsed::Run(Box::new(cli))),
            Err(text) => Err(Error::Usage(text)),
        },
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

/// What clap cannot say: options that would do nothing, or contradict
/// each other, in this combination.
fn check(cli: &Cli) -> Result<(), String> {
    let server = &cli.mcp_mode;
    let guard_off = server.stdout_guard == Some(GuardMode::Off)
        || (server.stdout_guard.is_none() && !server.mcp);
    let session = match server.session {
        Some(mode) => mode == SessionMode::Jsonrpc,
        None => server.mcp && server.stdout_guard != Some(GuardMode::Off),
    };
    if server.session == Some(SessionMode::Jsonrpc) && guard_off {
        return Err("--session jsonrpc reads the server's responses through the stdout guard; it cannot run with --stdout-guard off".into());
    }
    if !session {
        let needs = "needs the session layer (--mcp, or --session jsonrpc)";
        if !server.request_timeout.is_empty() {
            return Err(format!("--request-timeout {needs}"));
        }
        if server.request_timeout_resets_on_progress {
            return Err(format!("--request-timeout-resets-on-progress {needs}"));
        }
        if server.restart != crate::record::mcp::RestartMode::Never {
            return Err(format!("--restart {needs}"));
        }
    }
    Ok(())
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
