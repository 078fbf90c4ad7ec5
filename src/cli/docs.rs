//! The documents the binary hands out with `--generate`, built from the
//! same clap definition as `--help`: the man page (with the exit status,
//! record and other sections from `texts`), the shell completions, and the
//! published record and journal schemas. The checked-in copies under man/, completions/
//! and schema/ are these bytes (a test keeps them so).

use clap::ValueEnum;
use clap_complete::Shell;
use roff::{Roff, bold, roman};

use super::{EXIT_STATUS, MAN_SECTIONS, RECORD, command};

/// What `--generate` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Generate {
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

/// The published schemas, as checked in.
pub const RECORD_SCHEMA: &str = include_str!("../../schema/record.schema.json");
pub const JOURNAL_SCHEMA: &str = include_str!("../../schema/journal.schema.json");

pub fn generate(what: Generate) -> String {
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
        man.render_synopsis_section(&mut out)?;
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
    extra.control("SH", ["ENVIRONMENT"]).text([roman(
        "Each option reads a default from the environment variable shown with it; \
         a command-line option wins over the environment. An option that only tunes \
         a feature that is off is refused when given on the command line (exit 125, \
         nothing runs), and ignored when it comes from its variable, which host \
         configs set broadly. These are:",
    )]);
    for (option, needs) in super::check::dependent_options() {
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

pub fn completion(shell: Shell) -> String {
    let mut command = command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, "mcp-bound", &mut out);
    String::from_utf8(out).expect("a completion script is UTF-8")
}
