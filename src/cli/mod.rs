//! The single clap definition, grouped by help heading (`#[command(flatten)]`),
//! and parsing with usage errors mapped to one line and exit 125. Clap
//! only: what the values mean together is `settings`' (`Settings::resolve`,
//! the one fallible step after this), and `docs` says the defaults in the
//! help. Nothing past `Settings::resolve` reads this.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::{Args, CommandFactory, FromArgMatches, Parser, ValueEnum};

use crate::error::Error;
use crate::units;

mod audit;
mod deadline;
mod given;
mod mcp;
mod otel;
mod readers;
mod texts;
mod usage_error;

pub(crate) use audit::{ApprovalArgs, ApproveOn, ApproveVia, JournalWriteArgs};
pub(crate) use deadline::{DeadlineArgs, LimitsMode};
pub(crate) use given::Given;
pub(crate) use mcp::{McpArgs, SessionMode};
pub(crate) use otel::{OtelArgs, OtelMode};
pub(crate) use readers::{
    CheckArgs, CheckFormat, JournalArgs, LogArgs, PinArgs, ReportArgs, SUBCOMMANDS, Sub, VerifyArgs,
};
pub(crate) use texts::RECORD;
pub use texts::{EXAMPLES, EXIT_STATUS};
pub(crate) use usage_error::subcommand_near;
use usage_error::{invalid_from_environment, one_line};

/// What `--generate` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Generate {
    /// The man page (roff), as man/mcp-bound.1.
    Man,
    /// The bash completion script.
    CompleteBash,
    /// The zsh completion script.
    CompleteZsh,
    /// The fish completion script.
    CompleteFish,
    /// The record's JSON Schema, as schema/record.schema.json.
    SchemaRecord,
    /// The JSON Schema of one journal line, as schema/journal.schema.json.
    SchemaJournal,
}

/// When mcp-bound prints the stderr excerpt to its own stderr at exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Echo {
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
    max_term_width = 100,
    override_usage = "mcp-bound [OPTIONS] -- <COMMAND> [ARGS]...\n       mcp-bound verify [OPTIONS] <JOURNAL>\n       mcp-bound log [OPTIONS] <JOURNAL>\n       mcp-bound check [OPTIONS] <JOURNAL>\n       mcp-bound report [OPTIONS] -o <FILE> <JOURNAL>\n       mcp-bound pin [OPTIONS] <FILE>",
    subcommand_negates_reqs = true,
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true
)]
pub(crate) struct Cli {
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
    pub debug_window: mcp::DebugWindowArgs,

    #[command(flatten)]
    pub approval: ApprovalArgs,

    #[command(flatten)]
    pub tool_gate: audit::ToolGateArgs,

    #[command(flatten)]
    pub journal: JournalWriteArgs,

    #[command(flatten)]
    pub otel: OtelArgs,

    /// Print a document to stdout and exit: the man page, a completion script, or the record's or a
    /// journal line's JSON Schema (nothing is run).
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

/// Capture options: what is kept of stderr, echoed and masked.
#[derive(Args, Debug)]
pub(crate) struct CaptureArgs {
    /// Bytes of the start of stderr to keep.
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_HEAD_BYTES", default_value = "0", value_parser = units::parse_capture_bytes, help_heading = "Capture options")]
    pub head_bytes: usize,

    /// Bytes of the end of stderr to keep (a ring: memory stays constant).
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_TAIL_BYTES", default_value = "16384", value_parser = units::parse_capture_bytes, help_heading = "Capture options")]
    pub tail_bytes: usize,

    /// Most bytes of captured stderr that mcp-bound prints to its own stderr at exit.
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_EXCERPT_BYTES", default_value = "4096", value_parser = units::parse_capture_bytes, help_heading = "Capture options")]
    pub excerpt_bytes: usize,

    /// When to print the stderr excerpt to mcp-bound's stderr at exit: on-failure is a non-zero
    /// exit, except 141 for a stdout reader that stopped reading (a pipeline into head).
    #[arg(
        long,
        value_name = "WHEN",
        env = "MCP_BOUND_ECHO",
        value_enum,
        default_value = "on-failure",
        help_heading = "Capture options"
    )]
    pub echo: Echo,

    /// How a stderr flood is drained: auto times reads and moves the flood inside the kernel
    /// (splice, Linux only: elsewhere a flood is read) while copying it is slow and moving proves
    /// faster; read always copies; splice always moves. Speed only: what is kept and counted is
    /// the same.
    #[arg(
        long,
        value_name = "HOW",
        env = "MCP_BOUND_FLOOD_PATH",
        value_enum,
        default_value = "auto",
        help_heading = "Capture options"
    )]
    pub flood_path: crate::diagnostics::FloodPath,

    /// Also mask matches of REGEX (repeatable) in everything written out of the capture; built-in
    /// patterns cover Authorization headers, Bearer tokens, private keys, common API token shapes
    /// and password=/token=/secret= pairs.
    #[arg(long, value_name = "REGEX", env = "MCP_BOUND_REDACT", value_delimiter = '\n', value_parser = parse_regex, help_heading = "Capture options")]
    pub redact: Vec<String>,
}

/// Stderr log options: the helper's whole stderr on disk, bounded.
#[derive(Args, Debug)]
pub(crate) struct StderrLogArgs {
    /// Write the helper's stderr (every drained byte, masked) to PATH as it arrives, rotated by
    /// size: PATH.1 … PATH.N are the older files. Mode 0600; a symlink is refused. If another
    /// mcp-bound holds PATH, this one writes PATH.<pid>.
    #[arg(
        long,
        value_name = "PATH",
        env = "MCP_BOUND_STDERR_LOG",
        help_heading = "Stderr log options"
    )]
    pub stderr_log: Option<PathBuf>,

    /// Rotate the stderr log when the next line would take it past this size (a longer line is
    /// split at it).
    #[arg(long, value_name = "BYTES", env = "MCP_BOUND_STDERR_LOG_SIZE", default_value = "10MiB", value_parser = positive_bytes, help_heading = "Stderr log options")]
    pub stderr_log_size: u64,

    /// Older stderr log files kept (PATH.1 … PATH.N): the disk used stays under size × (N + 1).
    #[arg(
        long,
        value_name = "N",
        env = "MCP_BOUND_STDERR_LOG_KEEP",
        default_value = "3",
        help_heading = "Stderr log options"
    )]
    pub stderr_log_keep: u32,

    /// Prefix each stderr log line with an RFC 3339 UTC time, taken when the line was read.
    #[arg(long, env = "MCP_BOUND_STDERR_LOG_TIMESTAMPS", value_parser = BoolishValueParser::new(), default_value_t = false, num_args = 0, default_missing_value = "true", help_heading = "Stderr log options")]
    pub stderr_log_timestamps: bool,

    /// A stderr log that cannot be opened does not stop the call (the record says why); otherwise
    /// it is exit 125 and nothing runs.
    #[arg(long, env = "MCP_BOUND_STDERR_LOG_OPTIONAL", value_parser = BoolishValueParser::new(), default_value_t = false, num_args = 0, default_missing_value = "true", help_heading = "Stderr log options")]
    pub stderr_log_optional: bool,
}

/// Record options: where the record goes and the ids in it.
#[derive(Args, Debug)]
pub(crate) struct RecordArgs {
    /// Write the record to PATH: "dispatched" before the helper starts, replaced atomically at the
    /// end (mode 0600; a symlink is refused). In the file name, {call_id} is the call's id and
    /// {pid} mcp-bound's pid ({{ and }} are braces), so that each run writes its own (a host that
    /// starts the same command again, a client's probe sibling).
    #[arg(
        long,
        value_name = "PATH",
        env = "MCP_BOUND_RECORD",
        value_parser = RecordPathParser,
        help_heading = "Record options"
    )]
    pub record: Option<crate::record::RecordTemplate>,

    /// With a --record template: after each run, keep the newest N final records it made and remove
    /// the others (a record still in flight is never removed).
    #[arg(long, value_name = "N", env = "MCP_BOUND_RECORD_KEEP", value_parser = clap::value_parser!(u32).range(1..), help_heading = "Record options")]
    pub record_keep: Option<u32>,

    /// Write the record as one line to descriptor N at the end (not 0 or 1: stdout belongs to the
    /// helper).
    #[arg(long, value_name = "N", env = "MCP_BOUND_RECORD_FD", value_parser = clap::value_parser!(i32).range(2..), help_heading = "Record options")]
    pub record_fd: Option<i32>,

    /// The call's id in the record (default: a random id). It may name a --record file, so it names
    /// no directory, here or on Windows: not . or .., and none of / \ : * ? " < > |.
    #[arg(long, value_name = "ID", env = "MCP_BOUND_CALL_ID", value_parser = parse_call_id, help_heading = "Record options")]
    pub call_id: Option<String>,

    /// The session's id in the record.
    #[arg(long, value_name = "ID", env = "MCP_BOUND_SESSION_ID", value_parser = parse_id, help_heading = "Record options")]
    pub session_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum GuardMode {
    Off,
    Jsonrpc,
}

pub(super) fn positive_duration(text: &str) -> Result<Duration, String> {
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

/// `--record`'s value: a path, or a template (placeholders in its file
/// name). Read as an OsStr: a path need not be UTF-8.
#[derive(Clone)]
struct RecordPathParser;

impl clap::builder::TypedValueParser for RecordPathParser {
    type Value = crate::record::RecordTemplate;

    fn parse_ref(
        &self,
        _command: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        crate::record::RecordTemplate::parse(value).map_err(|why| {
            let arg = arg.map_or("--record <PATH>".to_string(), ToString::to_string);
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!(
                    "invalid value '{}' for '{arg}': {why}\n",
                    value.to_string_lossy()
                ),
            )
        })
    }
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

/// A call id: an id that may stand in a file name (`{call_id}` in a
/// --record template), so it can name no other directory, on Linux or
/// Windows: not `.` or `..`, and no separator or character Windows keeps.
fn parse_call_id(text: &str) -> Result<String, String> {
    let id = parse_id(text)?;
    if id == "." || id == ".." {
        return Err("a call id names a file: it cannot be . or ..".into());
    }
    if let Some(c) = id.chars().find(|c| "/\\:*?\"<>|".contains(*c)) {
        return Err(format!(
            "a call id names a file: it cannot hold '{c}' (nor / \\ : * ? \" < > |)"
        ));
    }
    Ok(id)
}

/// The clap definition, as parsed (`docs::command` adds what the help
/// says of the defaults). An environment variable is named, never its
/// value: host configs set secrets there (`MCP_BOUND_REDACT`), and `VAR=`
/// for an unset one reads as if it were set to nothing.
pub(crate) fn command() -> clap::Command {
    command_with(&|_| None)
}

/// The clap definition, with the help another module says for some
/// options (`docs::command`: the defaults): `help(arg)`, read only for
/// those. One pass over the options, since each pass moves the whole
/// definition, and this is every run's start-up.
pub(crate) fn command_with(help: &dyn Fn(&clap::Arg) -> Option<String>) -> clap::Command {
    fn hide_values(command: clap::Command) -> clap::Command {
        command
            .mut_args(|arg| arg.hide_env_values(true))
            .mut_subcommands(hide_values)
    }
    hide_values(Cli::command())
        .mut_args(|arg| {
            // `--timeout -1s` is a bad value, not an unknown option: the
            // parser then says why.
            let numeric = arg.get_value_names().is_some_and(|names| {
                names
                    .iter()
                    .any(|name| NUMERIC_VALUES.contains(&name.as_str()))
            });
            let said = help(&arg);
            let arg = arg.allow_hyphen_values(numeric);
            match said {
                Some(text) => arg.help(text),
                None => arg,
            }
        })
        .after_help(after_help())
}

/// The value names of options whose value is a number, which may be
/// typed with a sign.
const NUMERIC_VALUES: [&str; 5] = ["DURATION", "BYTES", "N", "CPUS", "[METHOD=]DURATION"];

/// The after-help text, with the exit statuses (`EXIT_STATUS`, the man
/// page's table too).
fn after_help() -> String {
    let mut exit = String::from("\nExit status:\n");
    for (status, meaning) in EXIT_STATUS {
        exit.push_str(&format!("  {status:<6} {meaning}\n"));
    }
    texts::AFTER_HELP
        .replace("{exit}", &exit)
        .replace("{sizes}", units::SIZE_SYNTAX)
}

/// What the command line asks for.
pub(crate) enum Parsed {
    /// Run a helper: the options, and where each came from.
    Run {
        cli: Box<Cli>,
        given: Given,
    },
    /// --generate: print this document and exit 0.
    Generate(Generate),
    Verify(VerifyArgs),
    Log(LogArgs),
    Check(CheckArgs),
    Report(ReportArgs),
    Pin(PinArgs),
    /// --help or --version: print this to stdout and exit 0.
    Print(String),
}

impl From<Sub> for Parsed {
    fn from(sub: Sub) -> Parsed {
        match sub {
            Sub::Verify(args) => Parsed::Verify(args),
            Sub::Log(args) => Parsed::Log(args),
            Sub::Check(args) => Parsed::Check(args),
            Sub::Report(args) => Parsed::Report(args),
            Sub::Pin(args) => Parsed::Pin(args),
        }
    }
}

/// Parse with the plain definition; `--help` is rendered again from
/// `documented` (`docs::command`: the defaults said), which only help
/// needs, so a run does not build its texts. Usage errors become one line
/// and exit 125 (not clap's 2).
pub(crate) fn parse<I, T>(documented: fn() -> clap::Command, args: I) -> Result<Parsed, Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let verifying = args
        .get(1)
        .is_some_and(|arg| SUBCOMMANDS.contains(&&*arg.to_string_lossy()));
    let parsed = command().try_get_matches_from(&args).and_then(|matches| {
        let given = Given::from(&matches);
        Cli::from_arg_matches(&matches).map(|cli| (cli, given))
    });
    match parsed {
        Ok((cli, given)) => Ok(match cli {
            Cli {
                subcommand: Some(sub),
                ..
            } => Parsed::from(sub),
            Cli {
                generate: Some(what),
                ..
            } => Parsed::Generate(what),
            cli => Parsed::Run {
                cli: Box::new(cli),
                given,
            },
        }),
        Err(err) => match err.kind() {
            clap::error::ErrorKind::DisplayHelp => {
                let help = documented().try_get_matches_from(&args).err();
                Ok(Parsed::Print(help.unwrap_or(err).render().to_string()))
            }
            clap::error::ErrorKind::DisplayVersion => Ok(Parsed::Print(err.render().to_string())),
            kind if verifying => Err(Error::VerifyUsage(one_line(
                &err.render().to_string(),
                kind,
            ))),
            kind => {
                let text = one_line(&err.render().to_string(), kind);
                Err(Error::Usage(match invalid_from_environment(&err, &args) {
                    Some((option, variable)) => text.replacen(
                        &format!("for '{option}'"),
                        &format!("for '{option}' from {variable}"),
                        1,
                    ),
                    None => text,
                }))
            }
        },
    }
}
