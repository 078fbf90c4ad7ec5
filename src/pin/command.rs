//! `mcp-bound pin FILE`: the pins and what drifted from them, and
//! `--accept NAME@HEX`, which trusts the latest definition seen for
//! NAME when its sha256 begins with HEX (as `pin` printed it), so that a
//! definition swapped in after the person read it is never accepted.
//! Exit 0 when nothing waits to be accepted, 1 when something does, 2
//! for usage or I/O (as `verify`).

use std::fmt::Write as _;

use std::path::PathBuf;

use super::{Latest, PinFile, Store};
use crate::error::{Error, code};
use crate::shown::untrusted;

/// What `mcp-bound pin` was asked (`cli::PinArgs`, resolved).
pub(crate) struct PinCommand {
    pub file: PathBuf,
    pub accept: Vec<String>,
    pub key: Option<String>,
    pub json: bool,
}

pub(crate) fn run(args: &PinCommand) -> Result<i32, Error> {
    let usage = |why: String| Error::VerifyUsage(format!("{}: {why}", args.file.display()));
    if !args.file.exists() {
        return Err(usage("no such pin file".into()));
    }
    let (mut store, warning) = Store::open(&args.file).map_err(usage)?;
    if let Some(warning) = warning {
        eprintln!("mcp-bound pin: {}: warning: {warning}", args.file.display());
    }
    let mut said = String::new();
    for accept in &args.accept {
        let (name, hex) = bound(accept).map_err(usage)?;
        let key = key_waiting(store.file(), name, args.key.as_deref()).map_err(usage)?;
        let mut seen = None;
        store
            .update(&key, |pins| {
                seen = pins.latest_sha256(name);
                seen.as_deref().is_some_and(|sha| sha.starts_with(&hex)) && pins.accept(name)
            })
            .map_err(|e| usage(e.to_string()))?;
        match seen {
            // Another process accepted it in between.
            None => {
                return Err(usage(format!(
                    "nothing of {} waits to be accepted",
                    untrusted(name)
                )));
            }
            Some(sha) if !sha.starts_with(&hex) => {
                return Err(usage(format!(
                    "the latest definition of {} is {}, not {hex}: read `mcp-bound pin FILE` again",
                    untrusted(name),
                    short(&sha)
                )));
            }
            Some(_) => {}
        }
        let _ = writeln!(said, "accepted {} for {}", untrusted(name), untrusted(&key));
    }
    let waiting = store
        .file()
        .servers
        .values()
        .any(|pins| pins.waiting().next().is_some());
    let text = if args.json {
        let mut line = serde_json::to_string(store.file()).expect("pins serialize");
        line.push('\n');
        line
    } else {
        said + &render(store.file())
    };
    crate::printed::print_or_fail(&text)?;
    Ok(if waiting {
        code::VERIFY_BROKEN
    } else {
        code::VERIFY_OK
    })
}

/// `NAME@HEX`, split at the last `@`: the tool, and HEX in lowercase,
/// at least 8 hex digits of the definition's sha256.
fn bound(accept: &str) -> Result<(&str, String), String> {
    let form = "--accept takes NAME@HEX, HEX at least 8 hex digits of the sha256 `mcp-bound pin FILE` shows for the definition";
    let Some((name, hex)) = accept.rsplit_once('@') else {
        return Err(format!("{form}; got {}", untrusted(accept)));
    };
    if hex.len() < 8
        || hex.len() > 64
        || !hex.bytes().all(|b| b.is_ascii_hexdigit())
        || name.is_empty()
    {
        return Err(format!("{form}; got {}", untrusted(accept)));
    }
    Ok((name, hex.to_ascii_lowercase()))
}

/// A digest as `pin` shows it: its first 12 hex digits.
fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// The one server key under which NAME waits (the given one, if any).
fn key_waiting(file: &PinFile, name: &str, given: Option<&str>) -> Result<String, String> {
    let keys: Vec<&String> = file
        .servers
        .iter()
        .filter(|(key, _)| given.is_none_or(|g| g == key.as_str()))
        .filter(|(_, pins)| pins.tools.get(name).is_some_and(|t| t.latest.is_some()))
        .map(|(key, _)| key)
        .collect();
    match keys.as_slice() {
        [key] => Ok(key.to_string()),
        [] => Err(match given {
            Some(key) if !file.servers.contains_key(key) => format!("no server {key} in the file"),
            _ => format!("nothing of {name} waits to be accepted"),
        }),
        _ => Err(format!(
            "{name} waits under {} servers; say which with --key ({})",
            keys.len(),
            keys.iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The pins as a person reads them: per server, each tool, and what
/// waits to be accepted.
fn render(file: &PinFile) -> String {
    let mut out = String::new();
    if file.servers.is_empty() {
        out.push_str("no pins yet: the first complete tools/list is pinned\n");
    }
    for (key, pins) in &file.servers {
        let waiting = pins.waiting().count();
        // The key holds the server's command, and the names are the
        // server's words: both shown through the one escaping rule.
        let _ = writeln!(
            out,
            "{}: {} tools, {waiting} waiting to be accepted",
            untrusted(key),
            pins.tools.len()
        );
        let width = pins
            .tools
            .keys()
            .map(|n| untrusted(n).chars().count())
            .max()
            .unwrap_or(0);
        for (name, tool) in &pins.tools {
            let name = untrusted(name);
            let state = match (&tool.pinned, &tool.latest) {
                (Some(pinned), None) => format!("pinned {}", pinned.seen),
                (Some(pinned), Some(latest)) => format!(
                    "pinned {}; CHANGED {} (seen {}, sha256 {}): hidden, calls denied",
                    pinned.seen,
                    untrusted(&latest.changed.join(", ")),
                    latest.seen.seen,
                    short(&latest.seen.sha256)
                ),
                (None, Some(latest)) => format!(
                    "NEW (seen {}, sha256 {}): hidden, calls denied",
                    latest.seen.seen,
                    short(&latest.seen.sha256)
                ),
                (None, None) => "no definition".to_string(),
            };
            let _ = writeln!(out, "  {name:width$}  {state}");
            if let Some(latest) = &tool.latest {
                out.push_str(&shown(latest));
            }
        }
    }
    if file.servers.values().any(|p| p.waiting().next().is_some()) {
        out.push_str("mcp-bound pin FILE --accept NAME@SHA256 trusts the definition shown with that sha256 (its first 8 hex digits or more); --json holds each whole\n");
    }
    out
}

/// The definition waiting, a line per field, each at most 200 chars.
fn shown(latest: &Latest) -> String {
    let mut out = String::new();
    let Some(fields) = latest.definition.as_object() else {
        return out;
    };
    for (field, value) in fields {
        let text = value.to_string();
        let cut: String = text.chars().take(200).collect();
        let more = if cut.len() < text.len() { "..." } else { "" };
        let _ = writeln!(out, "      {}: {}{more}", untrusted(field), untrusted(&cut));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Judgement, ServerPins, read_tool};
    use super::*;

    fn file() -> PinFile {
        let search = read_tool(r#"{"name":"search","description":"Find"}"#).unwrap();
        let upload = read_tool(r#"{"name":"search","description":"Upload"}"#).unwrap();
        let mut pins = ServerPins::default();
        pins.pin_all(&[search], "t0");
        let judgement = pins.judge(&upload);
        pins.note_latest(&upload, &judgement, "t1");
        let mut file = PinFile::default();
        file.servers.insert("a".into(), pins.clone());
        file.servers.insert("b".into(), pins);
        file
    }

    #[test]
    fn a_name_waiting_under_two_servers_needs_its_key() {
        let file = file();
        let err = key_waiting(&file, "search", None).unwrap_err();
        assert!(err.contains("--key (a, b)"), "{err}");
        assert_eq!(key_waiting(&file, "search", Some("b")).unwrap(), "b");
        let err = key_waiting(&file, "search", Some("c")).unwrap_err();
        assert_eq!(err, "no server c in the file");
        let err = key_waiting(&file, "rm", None).unwrap_err();
        assert_eq!(err, "nothing of rm waits to be accepted");
        assert_eq!(Judgement::New.word(), "new");
    }

    #[test]
    fn the_listing_names_what_changed_and_shows_it() {
        let text = render(&file());
        assert!(
            text.contains("search  pinned t0; CHANGED description (seen t1, sha256 "),
            "{text}"
        );
        assert!(text.contains("      description: \"Upload\""), "{text}");
        assert!(text.contains("--accept NAME"), "{text}");
    }
}
