//! Tool pinning (`--tool-pin FILE`), pure: what a server's tools were
//! when they were first trusted, and whether a listing still matches.
//!
//! A person approves a tool as the server described it; a server can
//! change a tool's description, schema or annotations afterwards (the
//! "rug pull"). The pin file holds, per server key (`serverInfo.name`
//! and the command, or `--tool-pin-key`), per tool, the digest of each
//! field of its definition that tells the model or the person what the
//! tool does ([`FIELDS`]), and the latest definition seen but not
//! accepted.
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

pub use command::{PinCommand, run};
pub use store::Store;

/// The fields of a tool's definition that are pinned, as the 2025 and
/// 2026 schemas name them. `name` is the pin's key.
pub const FIELDS: [&str; 5] = [
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
];

/// The file's version word.
pub const FORMAT: u64 = 1;

/// The whole file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinFile {
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
pub struct ServerPins {
    pub tools: BTreeMap<String, ToolPin>,
}

/// One tool: what was trusted, and what was seen since and not accepted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolPin {
    /// Null: a tool first seen after the first listing, never accepted.
    pub pinned: Option<Seen>,
    /// The latest definition seen that differs from `pinned`.
    pub latest: Option<Latest>,
}

/// A definition as digests, and when it was seen (RFC 3339).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Seen {
    /// SHA-256 of the pinned fields together.
    pub sha256: String,
    /// SHA-256 of each pinned field present.
    pub fields: BTreeMap<String, String>,
    pub seen: String,
}

/// A definition seen and not accepted: its digests, the fields that
/// differ from the pin, and the definition itself, for a person to read
/// before accepting it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Latest {
    #[serde(flatten)]
    pub seen: Seen,
    pub changed: Vec<String>,
    pub definition: Value,
}

/// A tool as a listing gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    pub name: String,
    pub sha256: String,
    pub fields: BTreeMap<String, String>,
    /// The pinned fields, keys sorted.
    pub body: Value,
}

/// A listed tool against its pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    Pinned,
    /// Differs from its pin in these fields.
    Changed(Vec<String>),
    /// No pin: seen after the first listing.
    New,
}

impl Judgement {
    pub fn shows(&self) -> bool {
        *self == Judgement::Pinned
    }

    /// The journal's word.
    pub fn word(&self) -> &'static str {
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
/// object with a string `name`. Each field is digested as canonical JSON
/// (keys sorted), so a server that reorders keys has not changed.
pub fn read_tool(raw: &str) -> Option<Definition> {
    let Value::Object(mut tool) = serde_json::from_str::<Value>(raw).ok()? else {
        return None;
    };
    let Value::String(name) = tool.remove("name")? else {
        return None;
    };
    let mut body = serde_json::Map::new();
    let mut fields = BTreeMap::new();
    for field in FIELDS {
        if let Some(value) = tool.remove(field) {
            let canonical = serde_json::to_string(&value).expect("a Value serializes");
            fields.insert(field.to_string(), sha256_hex(canonical.as_bytes()));
            body.insert(field.to_string(), value);
        }
    }
    let body = Value::Object(body);
    let sha256 = sha256_hex(
        serde_json::to_string(&body)
            .expect("a Value serializes")
            .as_bytes(),
    );
    Some(Definition {
        name,
        sha256,
        fields,
        body,
    })
}

/// The fields in which two digests differ (present in one only, or
/// with another digest).
fn changed(pinned: &BTreeMap<String, String>, seen: &BTreeMap<String, String>) -> Vec<String> {
    FIELDS
        .iter()
        .filter(|field| pinned.get(**field) != seen.get(**field))
        .map(|field| field.to_string())
        .collect()
}

impl ServerPins {
    /// A listed tool against its pin.
    pub fn judge(&self, tool: &Definition) -> Judgement {
        match self.tools.get(&tool.name).and_then(|t| t.pinned.as_ref()) {
            None => Judgement::New,
            Some(pinned) if pinned.sha256 == tool.sha256 => Judgement::Pinned,
            Some(pinned) => Judgement::Changed(changed(&pinned.fields, &tool.fields)),
        }
    }

    /// A tool called by name, with no listing of this run to judge it
    /// by: trusted when pinned and nothing else was seen of it since.
    pub fn trusts(&self, name: &str) -> bool {
        self.tools
            .get(name)
            .is_some_and(|t| t.pinned.is_some() && t.latest.is_none())
    }

    /// Trust a whole listing (the first use).
    pub fn pin_all(&mut self, tools: &[Definition], now: &str) {
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
    pub fn note_latest(&mut self, tool: &Definition, judgement: &Judgement, now: &str) -> bool {
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
    pub fn matched(&mut self, name: &str) -> bool {
        self.tools
            .get_mut(name)
            .is_some_and(|t| t.latest.take().is_some())
    }

    /// `pin --accept NAME`: the latest definition seen becomes the pin.
    /// False when nothing of NAME waits.
    pub fn accept(&mut self, name: &str) -> bool {
        let Some(tool) = self.tools.get_mut(name) else {
            return false;
        };
        let Some(latest) = tool.latest.take() else {
            return false;
        };
        tool.pinned = Some(latest.seen);
        true
    }

    /// Tools with a definition waiting to be accepted.
    pub fn waiting(&self) -> impl Iterator<Item = (&String, &Latest)> {
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
    }
}

/// The key a server's pins are kept under: `--tool-pin-key`, else the
/// name the server gives itself and its command, else the command.
pub fn server_key(given: Option<&str>, server_name: Option<&str>, argv: &[String]) -> String {
    if let Some(key) = given {
        return key.to_string();
    }
    let command =
        shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| argv.join(" "));
    match server_name {
        Some(name) => format!("{name} ({command})"),
        None => command,
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
        let reordered = r#"{"inputSchema":{"properties":{"q":{"type":"string"}},"type":"object"},"description":"Find files","name":"search","extra":1}"#;
        assert_eq!(tool(SEARCH).sha256, tool(reordered).sha256);
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
                "description".into(),
                "inputSchema".into(),
                "annotations".into()
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
    fn the_key_is_the_given_one_or_the_name_and_the_command() {
        let argv = vec!["npx".to_string(), "my server".to_string()];
        assert_eq!(server_key(Some("files"), Some("x"), &argv), "files");
        assert_eq!(
            server_key(None, Some("files"), &argv),
            "files (npx 'my server')"
        );
        assert_eq!(server_key(None, None, &argv), "npx 'my server'");
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
