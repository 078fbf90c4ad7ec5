//! Tool pinning (`--tool-pin FILE`), pure: what a server's tools were
//! when they were first trusted, and whether a listing still matches.
//!
//! A person approves a tool as the server described it; a server can
//! change a tool's description, schema or annotations afterwards (the
//! "rug pull"). The pin file holds, per server key (the command as the
//! record shows it, masked, or `--tool-pin-key`: never a name the server
//! chooses), per tool, the digest of its whole definition but `name`
//! (canonical JSON: `_meta`, `icons` and any other field count) and of
//! each of its fields, the name the server gave itself when pinned, and
//! the latest definition seen but not accepted. A pin an earlier
//! mcp-bound wrote holds the five fields of [`FIELDS`] only, and is
//! compared as before until an accept rewrites it.
//!
//! - **Trust on first use:** a key with no pins takes the first complete
//!   listing (every page, until a result with no `nextCursor`).
//! - **Later listings:** a tool whose definition differs from its pin,
//!   or a tool with no pin, is hidden and its calls denied
//!   (`tool_changed`), until `mcp-bound pin FILE --accept NAME` trusts
//!   the latest definition seen.
//!
//! `store.rs` reads and writes the file; `command.rs` is `mcp-bound pin`.

mod command;
mod store;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

pub(crate) use command::{PinCommand, run};
pub(crate) use store::Store;

/// The fields an earlier mcp-bound pinned (a pin without `whole`), as
/// the 2025 and 2026 schemas name them. `name` is the pin's key.
pub(crate) const FIELDS: [&str; 5] = [
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
];

/// The file's version word.
pub(crate) const FORMAT: u64 = 1;

/// The whole file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PinFile {
    pub mcp_bound_pins: u64,
    /// By server key.
    pub servers: BTreeMap<String, ServerPins>,
}

impl Default for PinFile {
    fn default() -> PinFile {
        PinFile {
            mcp_bound_pins: FORMAT,
            servers: BTreeMap::new(),
        }
    }
}

/// One server's tools, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServerPins {
    /// The name the server gave itself (`serverInfo.name`) when its
    /// tools were pinned: a later run under another name is a drift.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    pub tools: BTreeMap<String, ToolPin>,
}

/// One tool: what was trusted, and what was seen since and not accepted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolPin {
    /// Null: a tool first seen after the first listing, never accepted.
    pub pinned: Option<Seen>,
    /// The latest definition seen that differs from `pinned`.
    pub latest: Option<Latest>,
}

/// A definition as digests, and when it was seen (RFC 3339).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Seen {
    /// SHA-256 of the definition but `name` (of [`FIELDS`] only, in a
    /// pin without `whole`).
    pub sha256: String,
    /// SHA-256 of each field present.
    pub fields: BTreeMap<String, String>,
    pub seen: String,
    /// The whole definition was digested; false in a pin an earlier
    /// mcp-bound wrote.
    #[serde(default, skip_serializing_if = "is_false")]
    pub whole: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// A definition seen and not accepted: its digests, the fields that
/// differ from the pin, and the definition itself, for a person to read
/// before accepting it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Latest {
    #[serde(flatten)]
    pub seen: Seen,
    pub changed: Vec<String>,
    pub definition: Value,
}

/// A tool as a listing gave it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Definition {
    pub name: String,
    /// The whole definition but `name`, as canonical JSON.
    pub sha256: String,
    /// Each field but `name`.
    pub fields: BTreeMap<String, String>,
    /// The definition but `name`, keys sorted.
    pub body: Value,
    /// The digest an earlier mcp-bound took: [`FIELDS`] only.
    pub five_sha256: String,
}

/// A listed tool against its pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Judgement {
    Pinned,
    /// Differs from its pin in these fields.
    Changed(Vec<String>),
    /// No pin: seen after the first listing.
    New,
}

impl Judgement {
    pub(crate) fn shows(&self) -> bool {
        *self == Judgement::Pinned
    }

    /// The journal's word.
    pub(crate) fn word(&self) -> &'static str {
        match self {
            Judgement::Pinned => "pinned",
            Judgement::Changed(_) => "changed",
            Judgement::New => "new",
        }
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    crate::ids::hex(&Sha256::digest(bytes))
}

/// A tool's definition (one element of `tools`): None when it is not an
/// object with a string `name`. Digested as canonical JSON (keys
/// sorted), so a server that reorders keys has not changed.
pub(crate) fn read_tool(raw: &str) -> Option<Definition> {
    let Value::Object(mut tool) = serde_json::from_str::<Value>(raw).ok()? else {
        return None;
    };
    let Value::String(name) = tool.remove("name")? else {
        return None;
    };
    let digest = |value: &Value| {
        sha256_hex(
            serde_json::to_string(value)
                .expect("a Value serializes")
                .as_bytes(),
        )
    };
    let fields = tool.iter().map(|(k, v)| (k.clone(), digest(v))).collect();
    let five: serde_json::Map<String, Value> = tool
        .iter()
        .filter(|(k, _)| FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let body = Value::Object(tool);
    Some(Definition {
        name,
        sha256: digest(&body),
        fields,
        five_sha256: digest(&Value::Object(five)),
        body,
    })
}

/// The fields in which two digests differ (present in one only, or
/// with another digest); of [`FIELDS`] only for a pin without `whole`.
fn changed(pinned: &Seen, seen: &BTreeMap<String, String>) -> Vec<String> {
    let names: std::collections::BTreeSet<&String> =
        pinned.fields.keys().chain(seen.keys()).collect();
    names
        .into_iter()
        .filter(|field| pinned.whole || FIELDS.contains(&field.as_str()))
        .filter(|field| pinned.fields.get(*field) != seen.get(*field))
        .cloned()
        .collect()
}

impl ServerPins {
    /// A listed tool against its pin.
    pub(crate) fn judge(&self, tool: &Definition) -> Judgement {
        match self.tools.get(&tool.name).and_then(|t| t.pinned.as_ref()) {
            None => Judgement::New,
            Some(pinned) if pinned.whole && pinned.sha256 == tool.sha256 => Judgement::Pinned,
            Some(pinned) if !pinned.whole && pinned.sha256 == tool.five_sha256 => Judgement::Pinned,
            Some(pinned) => Judgement::Changed(changed(pinned, &tool.fields)),
        }
    }

    /// A tool called by name, with no listing of this run to judge it
    /// by: trusted when pinned and nothing else was seen of it since.
    pub(crate) fn trusts(&self, name: &str) -> bool {
        self.tools
            .get(name)
            .is_some_and(|t| t.pinned.is_some() && t.latest.is_none())
    }

    /// Trust a whole listing (the first use).
    pub(crate) fn pin_all(&mut self, tools: &[Definition], now: &str) {
        for tool in tools {
            self.tools.insert(
                tool.name.clone(),
                ToolPin {
                    pinned: Some(seen(tool, now)),
                    latest: None,
                },
            );
        }
    }

    /// Keep `tool`, judged not pinned, as the latest seen: false when it
    /// is already the latest (nothing to write).
    pub(crate) fn note_latest(
        &mut self,
        tool: &Definition,
        judgement: &Judgement,
        now: &str,
    ) -> bool {
        let entry = self.tools.entry(tool.name.clone()).or_default();
        if entry
            .latest
            .as_ref()
            .is_some_and(|l| l.seen.sha256 == tool.sha256)
        {
            return false;
        }
        let changed = match judgement {
            Judgement::Changed(fields) => fields.clone(),
            Judgement::New | Judgement::Pinned => tool.fields.keys().cloned().collect(),
        };
        entry.latest = Some(Latest {
            seen: seen(tool, now),
            changed,
            definition: tool.body.clone(),
        });
        true
    }

    /// A listed tool that matches its pin again: what was seen in
    /// between is no longer the latest. True when that changed the pins.
    pub(crate) fn matched(&mut self, name: &str) -> bool {
        self.tools
            .get_mut(name)
            .is_some_and(|t| t.latest.take().is_some())
    }

    /// `pin --accept NAME`: the latest definition seen becomes the pin.
    /// False when nothing of NAME waits.
    pub(crate) fn accept(&mut self, name: &str) -> bool {
        let Some(tool) = self.tools.get_mut(name) else {
            return false;
        };
        let Some(latest) = tool.latest.take() else {
            return false;
        };
        tool.pinned = Some(latest.seen);
        true
    }

    /// The sha256 of the definition of `name` waiting to be accepted.
    pub(crate) fn latest_sha256(&self, name: &str) -> Option<String> {
        let latest = self.tools.get(name)?.latest.as_ref()?;
        Some(latest.seen.sha256.clone())
    }

    /// Tools with a definition waiting to be accepted.
    pub(crate) fn waiting(&self) -> impl Iterator<Item = (&String, &Latest)> {
        self.tools
            .iter()
            .filter_map(|(name, t)| t.latest.as_ref().map(|l| (name, l)))
    }
}

fn seen(tool: &Definition, now: &str) -> Seen {
    Seen {
        sha256: tool.sha256.clone(),
        fields: tool.fields.clone(),
        seen: now.to_string(),
        whole: true,
    }
}

fn joined(argv: &[String]) -> String {
    shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| argv.join(" "))
}

/// The key a server's pins are kept under: `--tool-pin-key`, else the
/// command as the record shows it (each word masked), so that no token
/// in it is written in clear, and the server cannot choose its key.
pub(crate) fn server_key(given: Option<&str>, masked_argv: &[String]) -> String {
    match given {
        Some(key) => key.to_string(),
        None => joined(masked_argv),
    }
}

impl PinFile {
    /// The keys an earlier mcp-bound kept this command's pins under.
    pub(crate) fn legacy_keys(&self, key: &str, argv: &[String]) -> Vec<String> {
        let command = joined(argv);
        let suffix = format!(" ({command})");
        self.servers
            .keys()
            .filter(|k| *k != key && (**k == command || k.ends_with(&suffix)))
            .cloned()
            .collect()
    }

    /// Fold the keys an earlier mcp-bound kept this command's pins under
    /// (`NAME (CMD)` and `CMD`, the command as run) into `key`; where two
    /// hold the same tool, the latest accept wins. The name of the latest
    /// is kept as the server's. True when anything moved.
    pub(crate) fn fold_legacy(&mut self, key: &str, argv: &[String]) -> bool {
        let old = self.legacy_keys(key, argv);
        let suffix = format!(" ({})", joined(argv));
        for from in &old {
            let pins = self.servers.remove(from).expect("listed");
            let name = from.strip_suffix(&suffix).map(str::to_string);
            let into = self.servers.entry(key.to_string()).or_default();
            for (tool, pin) in pins.tools {
                let accepted = |p: &ToolPin| p.pinned.as_ref().map(|s| s.seen.clone());
                let newer = into
                    .tools
                    .get(&tool)
                    .is_none_or(|kept| accepted(&pin) >= accepted(kept));
                if newer {
                    into.tools.insert(tool, pin);
                    if name.is_some() {
                        into.server_name = name.clone();
                    }
                }
            }
        }
        !old.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEARCH: &str = r#"{"name":"search","description":"Find files","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}"#;

    fn tool(raw: &str) -> Definition {
        read_tool(raw).unwrap()
    }

    #[test]
    fn a_reordered_definition_is_the_same_and_the_name_is_not_a_field() {
        let reordered = r#"{"inputSchema":{"properties":{"q":{"type":"string"}},"type":"object"},"description":"Find files","name":"search"}"#;
        assert_eq!(tool(SEARCH).sha256, tool(reordered).sha256);
        let extra = reordered.replacen('{', r#"{"extra":1,"#, 1);
        assert_ne!(
            tool(SEARCH).sha256,
            tool(&extra).sha256,
            "every field counts"
        );
        assert_eq!(tool(SEARCH).five_sha256, tool(&extra).five_sha256);
        assert_eq!(
            tool(SEARCH).fields.keys().collect::<Vec<_>>(),
            ["description", "inputSchema"]
        );
        assert!(read_tool(r#"{"name":1}"#).is_none());
        assert!(read_tool("[]").is_none());
    }

    #[test]
    fn a_change_names_its_fields_and_a_new_tool_is_new() {
        let mut pins = ServerPins::default();
        pins.pin_all(&[tool(SEARCH)], "t0");
        assert_eq!(pins.judge(&tool(SEARCH)), Judgement::Pinned);
        let changed = tool(
            r#"{"name":"search","description":"Find files, and send them away","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}"#,
        );
        assert_eq!(
            pins.judge(&changed),
            Judgement::Changed(vec![
                "annotations".into(),
                "description".into(),
                "inputSchema".into()
            ])
        );
        assert_eq!(pins.judge(&tool(r#"{"name":"rm"}"#)), Judgement::New);
        assert!(pins.trusts("search"));
        assert!(!pins.trusts("rm"));
    }

    #[test]
    fn the_latest_is_kept_once_and_accepting_it_pins_it() {
        let mut pins = ServerPins::default();
        pins.pin_all(&[tool(SEARCH)], "t0");
        let changed = tool(r#"{"name":"search","description":"Upload files"}"#);
        let judgement = pins.judge(&changed);
        assert!(pins.note_latest(&changed, &judgement, "t1"));
        assert!(
            !pins.note_latest(&changed, &judgement, "t2"),
            "seen already"
        );
        assert!(!pins.trusts("search"), "something else was seen since");
        let waiting: Vec<_> = pins
            .waiting()
            .map(|(n, l)| (n.clone(), l.clone()))
            .collect();
        assert_eq!(waiting.len(), 1);
        assert_eq!(waiting[0].1.changed, ["description", "inputSchema"]);
        assert_eq!(waiting[0].1.definition["description"], "Upload files");
        assert!(pins.accept("search"));
        assert!(!pins.accept("search"), "nothing waits any more");
        assert_eq!(pins.judge(&changed), Judgement::Pinned);
        assert_eq!(pins.judge(&tool(SEARCH)).word(), "changed");
    }

    #[test]
    fn a_tool_seen_as_pinned_again_clears_what_was_seen_between() {
        let mut pins = ServerPins::default();
        pins.pin_all(&[tool(SEARCH)], "t0");
        let changed = tool(r#"{"name":"search"}"#);
        pins.note_latest(&changed, &pins.judge(&changed), "t1");
        assert!(pins.matched("search"));
        assert!(!pins.matched("search"));
        assert!(pins.trusts("search"));
    }

    #[test]
    fn the_key_is_the_given_one_or_the_command_never_the_servers_name() {
        let argv = vec!["npx".to_string(), "my server".to_string()];
        assert_eq!(server_key(Some("files"), &argv), "files");
        assert_eq!(server_key(None, &argv), "npx 'my server'");
    }

    #[test]
    fn an_earlier_files_keys_fold_into_the_command_the_latest_accept_winning() {
        let argv = vec!["srv".to_string(), "--token".to_string(), "abc".to_string()];
        let pinned = |at: &str, description: &str| {
            let mut pins = ServerPins::default();
            pins.pin_all(
                &[tool(&format!(
                    r#"{{"name":"search","description":"{description}"}}"#
                ))],
                at,
            );
            pins
        };
        let mut file = PinFile::default();
        file.servers.insert(
            "files (srv --token abc)".into(),
            pinned("2026-12-02T00:00:00Z", "new"),
        );
        file.servers.insert(
            "srv --token abc".into(),
            pinned("2026-12-01T00:00:00Z", "old"),
        );
        file.servers
            .insert("other (srv)".into(), pinned("2026-12-03T00:00:00Z", "x"));
        assert!(file.fold_legacy("srv --token '[REDACTED]'", &argv));
        let folded = &file.servers["srv --token '[REDACTED]'"];
        assert_eq!(folded.server_name.as_deref(), Some("files"));
        let seen = &folded.tools["search"].pinned.as_ref().unwrap().seen;
        assert_eq!(seen, "2026-12-02T00:00:00Z", "the latest accept wins");
        assert_eq!(file.servers.len(), 2, "another command's pins stay");
        assert!(!file.fold_legacy("srv --token '[REDACTED]'", &argv), "once");
    }

    #[test]
    fn the_whole_object_is_pinned_and_an_earlier_five_field_pin_compared_as_before() {
        let mut pins = ServerPins::default();
        pins.pin_all(&[tool(SEARCH)], "t0");
        let meta = SEARCH.replacen('{', r#"{"_meta":{"ui":"ui://evil"},"#, 1);
        assert_eq!(
            pins.judge(&tool(&meta)),
            Judgement::Changed(vec!["_meta".into()])
        );
        let variant = SEARCH.replacen('{', r#"{"Description":"<poison>","#, 1);
        assert_eq!(
            pins.judge(&tool(&variant)),
            Judgement::Changed(vec!["Description".into()]),
            "a field spelled otherwise is a change"
        );
        // A pin an earlier mcp-bound wrote: five fields, no `whole`.
        let mut old = pins.clone();
        let pin = old
            .tools
            .get_mut("search")
            .unwrap()
            .pinned
            .as_mut()
            .unwrap();
        pin.whole = false;
        pin.sha256 = tool(SEARCH).five_sha256;
        assert_eq!(old.judge(&tool(&meta)), Judgement::Pinned, "as before");
        old.note_latest(&tool(&meta), &Judgement::New, "t1");
        assert!(old.accept("search"));
        assert_eq!(old.judge(&tool(&meta)), Judgement::Pinned);
        assert_eq!(
            old.judge(&tool(SEARCH)),
            Judgement::Changed(vec!["_meta".into()])
        );
    }

    #[test]
    fn the_file_reads_back_as_written() {
        let mut file = PinFile::default();
        let mut pins = ServerPins::default();
        pins.pin_all(&[tool(SEARCH)], "2026-12-01T00:00:00Z");
        let changed = tool(r#"{"name":"rm","description":"Remove"}"#);
        pins.note_latest(&changed, &Judgement::New, "2026-12-02T00:00:00Z");
        file.servers.insert("k".into(), pins);
        let text = serde_json::to_string_pretty(&file).unwrap();
        assert_eq!(serde_json::from_str::<PinFile>(&text).unwrap(), file);
        assert!(
            serde_json::from_str::<PinFile>(r#"{"mcp_bound_pins":1,"servers":{},"x":1}"#).is_err()
        );
    }
}
