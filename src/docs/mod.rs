//! The documents the binary hands out, built from the one clap
//! definition (`cli`) with the defaults and rules of `settings` said in
//! it: `--help` ([`command`]), the man page (with the exit status, record
//! and other sections from `cli::texts` and `man_sections`), the shell
//! completions, and the published record and journal schemas. The
//! checked-in copies under man/, completions/ and schema/ are these bytes
//! (a test keeps them so).

use clap_complete::Shell;
use roff::{Roff, bold, roman};

pub use crate::cli::{EXAMPLES, EXIT_STATUS};
use crate::cli::{Generate, RECORD};
use crate::settings::defaults::{MCP_DEFAULTS, mcp_help};
pub use crate::settings::dependent_options;

mod man_sections;

pub use man_sections::MAN_SECTIONS;

/// The published schemas, as checked in.
pub const RECORD_SCHEMA: &str = include_str!("../../schema/record.schema.json");
pub const JOURNAL_SCHEMA: &str = include_str!("../../schema/journal.schema.json");

/// The clap definition as `--help` and the documents show it: each
/// default `--mcp` changes is said from `settings`' one table.
pub fn command() -> clap::Command {
    let rows = MCP_DEFAULTS.shown();
    crate::cli::command_with(&|arg| match arg.get_id().as_str() {
        "mcp" => Some(mcp_help()),
        id => rows.iter().find(|row| row.option == id).map(|row| {
            let own = arg.get_help().map(ToString::to_string).unwrap_or_default();
            format!("{own} {}", row.default_text())
        }),
    })
}

pub(crate) fn generate(what: Generate) -> String {
    match what {
        Generate::Man => man_page(),
        Generate::CompleteBash => completion(Shell::Bash),
        Generate::CompleteZsh => completion(Shell::Zsh),
        Generate::CompleteFish => completion(Shell::Fish),
        Generate::SchemaRecord => RECORD_SCHEMA.to_string(),
        Generate::SchemaJournal => JOURNAL_SCHEMA.to_string(),
    }
}

pub fn man_page() -> String {
    let command = command();
    let man = clap_mangen::Man::new(command.clone());
    let mut out = Vec::new();
    let rendered = (|| -> std::io::Result<()> {
        man.render_title(&mut out)?;
        man.render_name_section(&mut out)?;
        out.extend_from_slice(synopsis().as_bytes());
        man.render_description_section(&mut out)?;
        man.render_options_section(&mut out)?;
        Ok(())
    })();
    rendered.expect("writing to memory cannot fail");
    let mut extra = Roff::new();
    extra.control("SH", ["EXIT STATUS"]);
    for (status, meaning) in EXIT_STATUS {
        extra
            .control("TP", [])
            .text([bold(*status)])
            .text([roman(*meaning)]);
    }
    extra.control("SH", ["UNITS"]).text([roman(format!(
        "A DURATION is GNU timeout's: a number of seconds (10, 1.5, 1e-3, 0x1p-3, as strtod reads it) \
         or one with a unit ms, s, m, h or d; inf is none where a deadline is asked. It is never \
         negative. A size (BYTES) is {}. A value that is neither is exit 125, with the reason.",
        crate::units::SIZE_SYNTAX
    ))]);
    extra.control("SH", ["RECORD"]).text([roman(RECORD)]);
    for (title, text) in MAN_SECTIONS {
        extra.control("SH", [*title]).text([roman(*text)]);
    }
    extra.control("SH", ["EXAMPLES"]);
    for (what, example) in EXAMPLES {
        extra
            .control("PP", [])
            .text([roman(*what)])
            .control("PP", [])
            .control("RS", ["4"])
            .control("nf", []);
        for line in example.lines() {
            extra.text([roman(line)]).control("br", []);
        }
        extra.control("fi", []).control("RE", []);
    }
    extra.control("SH", ["ENVIRONMENT"]).text([roman(
        "Each option reads a default from the environment variable shown with it; \
         a command-line option wins over the environment. An option that only tunes \
         a feature that is off is refused when given on the command line (exit 125, \
         nothing runs), and ignored when it comes from its variable, which host \
         configs set broadly, except a tool policy (--tool-allow, --tool-deny, \
         --tool-approve-cmd, --tool-approve): one that cannot be applied is refused \
         from its variable too, naming it, since a security policy is never dropped \
         in silence. These are:",
    )]);
    for (option, needs, policy) in dependent_options() {
        let needs = if policy {
            format!("{needs} (a tool policy: refused from its variable too)")
        } else {
            needs.to_string()
        };
        extra
            .control("TP", [])
            .text([bold(option.as_str())])
            .text([roman(needs)]);
    }
    out.extend_from_slice(extra.render().as_bytes());
    man.render_version_section(&mut out)
        .expect("writing to memory cannot fail");
    String::from_utf8(out).expect("the man page is UTF-8")
}

/// The synopsis as it is typed: the `--` before the helper is what keeps
/// its options from being read as ours.
fn synopsis() -> String {
    let mut roff = Roff::new();
    roff.control("SH", ["SYNOPSIS"])
        .text([
            bold("mcp-bound"),
            roman(" [OPTIONS] "),
            bold("--"),
            roman(" COMMAND [ARGS]..."),
        ])
        .control("br", [])
        .text([
            bold("mcp-bound verify"),
            roman(" [--anchor HEX] [--json] [--key FILE] JOURNAL"),
        ])
        .control("br", [])
        .text([
            bold("mcp-bound log"),
            roman(" [--sessions | --requests] [-f] [--json] [--since TIME] [--tool GLOB] JOURNAL"),
        ])
        .control("br", [])
        .text([
            bold("mcp-bound check"),
            roman(" [--expect-tool GLOB] [--forbid-tool GLOB] [--expect FILE] [--format junit] JOURNAL"),
        ])
        .control("br", [])
        .text([bold("mcp-bound report"), roman(" -o FILE JOURNAL")])
        .control("br", [])
        .text([
            bold("mcp-bound pin"),
            roman(" [--accept NAME@SHA256]... [--key KEY] [--json] FILE"),
        ])
        .control("br", [])
        .text([bold("mcp-bound"), roman(" --generate WHAT")])
        .control("br", [])
        .text([bold("mcp-bound"), roman(" --help | --version")]);
    roff.render()
}

pub fn completion(shell: Shell) -> String {
    let mut command = command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, "mcp-bound", &mut out);
    let script = String::from_utf8(out).expect("a completion script is UTF-8");
    match shell {
        Shell::Bash => {
            script
                .replace(
                    "complete -F _mcp__bound ",
                    "complete -F _mcp__bound_or_helper ",
                )
                // clap_complete sets `cmd` to `mcp__bound__subcmd__verify`
                // but labels that case with the hyphen replaced twice, so a
                // subcommand's options never completed: one spelling.
                .replace("mcp__subcmd__bound__subcmd__", "mcp__bound__subcmd__")
                + BASH_AFTER_DOUBLE_DASH
        }
        _ => script,
    }
}

/// After `--` the words are the helper's: bash completes them as a command
/// line of their own, as GNU timeout's completion does (bash-completion's
/// `_comp_command_offset`, or `_command_offset` before 2.12; without
/// bash-completion, command names).
const BASH_AFTER_DOUBLE_DASH: &str = r#"
_mcp__bound_or_helper() {
    local i
    for (( i = 1; i < COMP_CWORD; i++ )); do
        if [[ ${COMP_WORDS[i]} == -- ]]; then
            if declare -F _comp_command_offset >/dev/null; then
                _comp_command_offset $(( i + 1 ))
            elif declare -F _command_offset >/dev/null; then
                _command_offset $(( i + 1 ))
            elif (( i + 1 == COMP_CWORD )); then
                COMPREPLY=( $(compgen -c -- "${COMP_WORDS[COMP_CWORD]}") )
            else
                COMPREPLY=( $(compgen -f -- "${COMP_WORDS[COMP_CWORD]}") )
            fi
            return 0
        fi
    done
    _mcp__bound "$@"
}
"#;
