//! What a usage error says: clap's message on one line (what is missing,
//! the values it takes, its typo tip, a pointer to --help), naming the environment variable a
//! refused value came from; and the subcommand a helper's name was
//! probably meant to be.

use std::ffi::OsString;

use super::command;

/// clap's message on one line, without its "error: " prefix. A missing
/// argument names what is missing and shows the usage line; other errors
/// point to --help.
pub(super) fn one_line(rendered: &str, kind: clap::error::ErrorKind) -> String {
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
    // A value not among the choices: clap lists them on a line of its own.
    if let Some(values) = rendered.lines().find_map(|line| {
        line.trim()
            .strip_prefix("[possible values: ")
            .and_then(|rest| rest.strip_suffix(']'))
    }) {
        text.push_str("; possible values: ");
        text.push_str(values);
    }
    // clap's suggestion for a typo ("tip: a similar argument exists:
    // '--timeout'") is on a line of its own: kept on ours.
    if let Some(tip) = rendered
        .lines()
        .find_map(|line| line.trim().strip_prefix("tip: "))
    {
        text.push_str("; ");
        text.push_str(tip);
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

/// When clap refused a value that came from an option's environment
/// variable (set to that value, the option not on the command line), the
/// option as clap names it and the variable, so the message names where
/// the value came from.
pub(super) fn invalid_from_environment(
    err: &clap::Error,
    args: &[OsString],
) -> Option<(String, String)> {
    use clap::error::{ContextKind, ContextValue};
    let (Some(ContextValue::String(option)), Some(ContextValue::String(value))) = (
        err.get(ContextKind::InvalidArg),
        err.get(ContextKind::InvalidValue),
    ) else {
        return None;
    };
    let long = option.split_whitespace().next()?.strip_prefix("--")?;
    let command = command();
    let arg = command
        .get_arguments()
        .find(|a| a.get_long() == Some(long))?;
    let variable = arg.get_env()?.to_str()?;
    let spelled = |word: &str| {
        word.strip_prefix("--")
            .is_some_and(|rest| rest == long || rest.starts_with(&format!("{long}=")))
            || arg.get_short().is_some_and(|short| {
                word.strip_prefix('-')
                    .is_some_and(|rest| !rest.starts_with('-') && rest.starts_with(short))
            })
    };
    let on_the_line = args
        .iter()
        .skip(1)
        .take_while(|word| *word != "--")
        .any(|word| spelled(&word.to_string_lossy()));
    let from_it = std::env::var_os(variable).is_some_and(|set| set == value.as_str());
    (from_it && !on_the_line).then(|| (option.clone(), variable.to_string()))
}

/// The subcommand `helper` is a typo of (`verfy` for `verify`): one or
/// two edits away, or for a name of four letters or fewer only its
/// letters in another case or order (`pni` is `pin`; `pip` and `git` are
/// programs), and not itself a path. A helper that was not found may
/// have been meant as one.
pub(crate) fn subcommand_near(helper: &str) -> Option<String> {
    if helper.contains(['/', '\\']) || helper.len() < 3 {
        return None;
    }
    command()
        .get_subcommands()
        .map(|sub| sub.get_name().to_string())
        .filter(|name| name != helper)
        .find(|name| {
            if name.len() > 4 {
                return strsim::damerau_levenshtein(name, helper) <= 2;
            }
            let letters = |word: &str| {
                let mut letters: Vec<char> = word.to_lowercase().chars().collect();
                letters.sort_unstable();
                letters
            };
            letters(name) == letters(helper)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_not_among_the_choices_names_them() {
        let refused = command()
            .try_get_matches_from(["mcp-bound", "--generate", "mna", "--", "true"])
            .unwrap_err();
        let line = one_line(&refused.render().to_string(), refused.kind());
        assert_eq!(
            line,
            "invalid value 'mna' for '--generate <WHAT>'; possible values: man, complete-bash, \
             complete-zsh, complete-fish, schema-record, schema-journal (see --help)"
        );
    }

    #[test]
    fn a_typo_of_a_subcommand_is_named_and_other_names_are_not() {
        for typo in ["verfy", "verifi", "vreify", "Verify"] {
            assert_eq!(subcommand_near(typo).as_deref(), Some("verify"), "{typo}");
        }
        for typo in ["pni", "ipn", "Pin"] {
            assert_eq!(subcommand_near(typo).as_deref(), Some("pin"), "{typo}");
        }
        for other in [
            "verify",
            "pin",
            "node",
            "ls",
            "./verfy",
            "/usr/bin/verfy",
            "vi",
        ] {
            assert_eq!(subcommand_near(other), None, "{other}");
        }
        for other in ["git", "pip", "bin", "npm", "pins", "pnpm"] {
            assert_eq!(subcommand_near(other), None, "{other}");
        }
    }
}
