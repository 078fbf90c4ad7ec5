//! Tool pinning in the session (`--tool-pin FILE`): each `tools/list`
//! result judged against the pins (`pin/`), a tool that drifted or is
//! new hidden from it and journaled (`mcp_tool_drift`), and a call to
//! such a tool denied (`tool_changed`). The first complete listing of a
//! server with no pins is pinned. The file is read again when it
//! changed, so a `pin --accept` in another terminal takes effect at the
//! next listing or call. Nothing is ever invented: no `list_changed`.
//!
//! The pin file cannot be read or written mid-session: what this run
//! knows stands, the failure is counted and the record says it; a tool
//! nothing trusted stays hidden.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use serde::Serialize;
use sha2::Digest as _;

use super::Session;
use crate::pin::{Definition, Judgement, Store};
use crate::record::mcp::ToolPinFacts;
use crate::request_id::RequestId;

/// `--tool-pin FILE` and `--tool-pin-key NAME`, as the settings resolved
/// them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolPinning {
    pub file: PathBuf,
    pub key: Option<String>,
}

/// Most tools one run remembers a judgement of (a listing's tools).
const MAX_REMEMBERED: usize = 4096;

/// The session's pins.
pub(super) struct Pinning {
    settings: ToolPinning,
    store: Result<Store, String>,
    /// Whether this run's latest listing showed each tool, by name.
    listed: HashMap<String, bool>,
    /// A server with no pins: the first listing's pages so far.
    first: Vec<Definition>,
    /// (tool, sha256) journaled as drift in this run.
    journaled: HashSet<(String, String)>,
    /// The server's key, made once (it names the command, which stays).
    key: Option<String>,
}

/// A tool that drifted from its pin, as its `mcp_tool_drift` entry says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpToolDrift {
    pub call_id: String,
    /// The `tools/list` request whose result showed it.
    pub request_id: RequestId,
    /// The pin file's key for the server.
    pub key: String,
    pub tool: String,
    /// `changed` (differs from its pin) or `new` (no pin).
    pub change: &'static str,
    /// The fields that differ (for a new tool: those it has).
    pub fields: Vec<String>,
    pub sha256: String,
    /// Null for a new tool.
    pub pinned_sha256: Option<String>,
}

impl Pinning {
    pub(super) fn new(settings: ToolPinning) -> Pinning {
        let store = Store::open(&settings.file).map(|(store, _)| store);
        Pinning {
            settings,
            store,
            listed: HashMap::new(),
            first: Vec::new(),
            journaled: HashSet::new(),
            key: None,
        }
    }

    pub(super) fn facts(&self) -> ToolPinFacts {
        ToolPinFacts {
            file: self.settings.file.to_string_lossy().into_owned(),
            ..ToolPinFacts::default()
        }
    }
}

impl Session {
    fn pinning(&mut self) -> Option<&mut Pinning> {
        self.gate.as_mut()?.pinning.as_mut()
    }

    fn pin_facts(&mut self) -> &mut ToolPinFacts {
        let gate = self.facts.tool_gate_mut();
        gate.pin.get_or_insert_with(ToolPinFacts::default)
    }

    /// The key this server's pins are kept under: its command as the
    /// record shows it (masked), or `--tool-pin-key`.
    /// Made once, when an earlier file's keys are folded into it.
    fn pin_key(&mut self) -> Option<String> {
        if let Some(key) = &self.pinning()?.key {
            return Some(key.clone());
        }
        let gate = self.gate.as_ref()?;
        let masked: Vec<String> = gate
            .settings
            .server_argv
            .iter()
            .map(|word| gate.redactor.redact(word).into_owned())
            .collect();
        let given = gate.pinning.as_ref()?.settings.key.as_deref();
        let key = crate::pin::server_key(given, &masked);
        self.pinning()?.key = Some(key.clone());
        self.fold_legacy_pins(&key);
        Some(key)
    }

    /// Pins an earlier mcp-bound kept under `NAME (CMD)` or `CMD` are
    /// folded into `key`, once, when `key` has none.
    fn fold_legacy_pins(&mut self, key: &str) {
        let Some(gate) = self.gate.as_mut() else {
            return;
        };
        let argv = &gate.settings.server_argv;
        let Some(Pinning {
            store: Ok(store),
            settings,
            ..
        }) = gate.pinning.as_mut()
        else {
            return;
        };
        let none_old = store.file().legacy_keys(key, argv).is_empty();
        if settings.key.is_some() || store.pins(key).is_some() || none_old {
            return;
        }
        if let Err(e) = store.update_file(|file| file.fold_legacy(key, argv)) {
            self.pin_failed(e.to_string());
        }
    }

    /// Under --tool-pin: the pin file as it is now (read again if it
    /// changed; a failure counted and said in the record), and the
    /// server's key in it, which the record keeps.
    fn pins_now(&mut self) -> Option<String> {
        let pinning = self.pinning()?;
        let failed = match &mut pinning.store {
            Ok(store) => store.refresh().err().map(|e| e.to_string()),
            Err(why) => Some(why.clone()),
        };
        if let Some(why) = failed {
            self.pin_failed(why);
        }
        let key = self.pin_key()?;
        self.pin_facts().key = Some(key.clone());
        Some(key)
    }

    fn pin_failed(&mut self, why: String) {
        let facts = self.pin_facts();
        facts.file_errors += 1;
        facts.last_error = Some(why);
    }

    /// Whether a `tools/call` to `tool` may go on: false when this run
    /// saw it drift, or, unlisted in this run, the pins do not trust it
    /// (a server with no pins yet trusts every tool).
    pub(super) fn pin_allows(&mut self, tool: &str) -> bool {
        let Some(key) = self.pins_now() else {
            return true;
        };
        let pinning = self.pinning().expect("pinning");
        let allowed = match &pinning.store {
            Err(_) => false,
            Ok(store) => match store.pins(&key) {
                // No pins yet: nothing to hold the server to.
                None => true,
                // As this run's listing showed it, or else (not listed,
                // or hidden and accepted since) as the pins say.
                Some(pins) => pinning.listed.get(tool) == Some(&true) || pins.trusts(tool),
            },
        };
        if !allowed {
            self.pin_facts().calls_denied += 1;
        }
        allowed
    }

    /// One `tools/list` result's tools (each element's text), judged:
    /// which are shown. `more` when the result names a `nextCursor`.
    pub(super) fn pin_listing(
        &mut self,
        request_id: &str,
        tools: &[&str],
        more: bool,
    ) -> Vec<bool> {
        let Some(key) = self.pins_now() else {
            return vec![true; tools.len()];
        };
        let read: Vec<Option<Definition>> =
            tools.iter().map(|t| crate::pin::read_tool(t)).collect();
        // A tool with a key spelled twice after folding (`description` and
        // `Description`): Go's clients read the other one. Never shown.
        let twice: Vec<Option<String>> = tools
            .iter()
            .map(|t| super::fold::object_keys(t).and_then(|keys| super::fold::colliding(&keys)))
            .collect();
        let now = crate::ids::now_rfc3339();
        let pinning = self.pinning().expect("pinning");
        let Ok(store) = &mut pinning.store else {
            return vec![false; tools.len()];
        };
        if store.pins(&key).is_some() {
            return self.judge_listing(request_id, &key, (read, twice), &now);
        }
        // First use: every page until one with no nextCursor.
        let room = MAX_REMEMBERED.saturating_sub(pinning.first.len());
        let readable = read.iter().zip(&twice).filter(|(_, t)| t.is_none());
        pinning
            .first
            .extend(readable.filter_map(|(d, _)| d.clone()).take(room));
        let shown: Vec<bool> = read
            .iter()
            .zip(&twice)
            .map(|(d, t)| d.is_some() && t.is_none())
            .collect();
        if more {
            return shown;
        }
        let first = std::mem::take(&mut pinning.first);
        let mut raced = false;
        let name = self.opening.replay.server_name().map(str::to_string);
        let Some(Pinning {
            store: Ok(store), ..
        }) = self.pinning()
        else {
            return vec![false; tools.len()];
        };
        let written = store.update(&key, |pins| {
            // Another process pinned it first: judged by its pins.
            raced = !pins.tools.is_empty();
            !raced && {
                pins.pin_all(&first, &now);
                pins.server_name = name;
                true
            }
        });
        match written {
            Ok(()) if raced => return self.judge_listing(request_id, &key, (read, twice), &now),
            Ok(()) => {
                let facts = self.pin_facts();
                facts.first_use = true;
                facts.tools_pinned = first.len() as u64;
            }
            Err(e) => self.pin_failed(e.to_string()),
        }
        shown
    }

    /// The server now names itself otherwise than when its tools were
    /// pinned: a drift, journaled once in this run (its tools are still
    /// judged by the pins of its command, never trusted anew).
    fn server_renamed(&mut self, request_id: &RequestId, key: &str) {
        let now = self.opening.replay.server_name().map(str::to_string);
        let Some(Pinning {
            store: Ok(store),
            journaled,
            ..
        }) = self.gate.as_mut().and_then(|g| g.pinning.as_mut())
        else {
            return;
        };
        let before = store.pins(key).and_then(|p| p.server_name.clone());
        let (Some(now), Some(before)) = (now, before) else {
            return;
        };
        if now == before || !journaled.insert((String::new(), now.clone())) {
            return;
        }
        let digest = |text: &str| crate::ids::hex(&sha2::Sha256::digest(text.as_bytes()));
        self.out.audit.push(super::Audit::ToolDrift(McpToolDrift {
            call_id: self.call_id.clone(),
            request_id: request_id.clone(),
            key: key.to_string(),
            tool: now.clone(),
            change: "server_renamed",
            fields: vec!["serverInfo.name".into()],
            sha256: digest(&now),
            pinned_sha256: Some(digest(&before)),
        }));
        self.pin_facts().drifts += 1;
    }

    /// A later listing: each tool against its pin; what drifted is
    /// hidden, kept in the file as the latest seen, and journaled once
    /// in this run.
    fn judge_listing(
        &mut self,
        request_id: &str,
        key: &str,
        (read, twice): (Vec<Option<Definition>>, Vec<Option<String>>),
        now: &str,
    ) -> Vec<bool> {
        let request_id = RequestId::new(request_id);
        if let Some(request_id) = &request_id {
            self.server_renamed(request_id, key);
        }
        let pinning = self.gate.as_mut().and_then(|g| g.pinning.as_mut());
        let Some(Pinning {
            store: Ok(store),
            listed,
            journaled,
            ..
        }) = pinning
        else {
            return vec![false; read.len()];
        };
        let empty = crate::pin::ServerPins::default();
        let pins = store.pins(key).unwrap_or(&empty);
        let mut shown = Vec::with_capacity(read.len());
        // What the file says of a tool that is no longer so: written in
        // one change after the listing.
        let mut stale = Vec::new();
        let mut drifts = 0;
        for (tool, twice) in read.iter().zip(&twice) {
            let Some(tool) = tool else {
                // Not a tool definition: nothing can vouch for it.
                shown.push(false);
                continue;
            };
            let judgement = match twice {
                Some(spelled) => Judgement::Changed(vec![spelled.clone()]),
                None => pins.judge(tool),
            };
            let shows = judgement.shows();
            if listed.len() < MAX_REMEMBERED || listed.contains_key(&tool.name) {
                listed.insert(tool.name.clone(), shows);
            }
            shown.push(shows);
            let latest = pins.tools.get(&tool.name).and_then(|t| t.latest.as_ref());
            let outdated = match &judgement {
                Judgement::Pinned => latest.is_some(),
                _ => latest.is_none_or(|l| l.seen.sha256 != tool.sha256),
            };
            let first_seen = !shows && journaled.insert((tool.name.clone(), tool.sha256.clone()));
            if first_seen && let Some(request_id) = &request_id {
                drifts += 1;
                self.out.audit.push(super::Audit::ToolDrift(McpToolDrift {
                    call_id: self.call_id.clone(),
                    request_id: request_id.clone(),
                    key: key.to_string(),
                    tool: tool.name.clone(),
                    change: judgement.word(),
                    fields: match &judgement {
                        Judgement::Changed(fields) => fields.clone(),
                        _ => tool.fields.keys().cloned().collect(),
                    },
                    sha256: tool.sha256.clone(),
                    pinned_sha256: pins
                        .tools
                        .get(&tool.name)
                        .and_then(|t| t.pinned.as_ref())
                        .map(|p| p.sha256.clone()),
                }));
            }
            // One spelled twice is never waiting to be accepted.
            if outdated && twice.is_none() {
                stale.push((tool, judgement));
            }
        }
        let written = match stale.is_empty() {
            true => Ok(()),
            false => store.update(key, |pins| {
                stale.iter().fold(false, |changed, (tool, judgement)| {
                    let change = match judgement {
                        Judgement::Pinned => pins.matched(&tool.name),
                        drifted => pins.note_latest(tool, drifted, now),
                    };
                    change || changed
                })
            }),
        };
        let failure = written.err().map(|e| e.to_string());
        if let Some(why) = failure {
            self.pin_failed(why);
        }
        let facts = self.pin_facts();
        facts.tools_hidden += shown.iter().filter(|s| !**s).count() as u64;
        facts.drifts += drifts;
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::super::{SessionPolicy, ToolGate};
    use super::*;
    use serde_json::Value;
    use std::time::Instant;

    const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

    fn session(file: &std::path::Path) -> Session {
        let policy = SessionPolicy {
            tools: Some(ToolGate {
                approve: vec!["*".into()],
                server_argv: vec!["server".into()],
                pin: Some(ToolPinning {
                    file: file.to_path_buf(),
                    key: None,
                }),
                ..ToolGate::default()
            }),
            ..super::super::tests::policy()
        };
        Session::new(policy, "c1".into())
    }

    /// A 2026-07-28 listing: the request, then the server's result with
    /// these tools and its name in `_meta`; what reached the client.
    fn listed(session: &mut Session, id: u64, tools: &str) -> Vec<Value> {
        let now = Instant::now();
        let request =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{{META}}}}}"#)
                + "\n";
        let mut out = Vec::new();
        session.on_client_line(now, request.as_bytes(), &mut out, 0);
        let result = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":{tools},"_meta":{{"io.modelcontextprotocol/serverInfo":{{"name":"files","version":"1"}}}}}}}}"#
        ) + "\n";
        let mut out = Vec::new();
        session.on_server_line(now, result.as_bytes(), &mut out);
        out.extend(std::mem::take(&mut session.to_client));
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// In 2026-07-28 a drift is hidden and journaled, and nothing else
    /// reaches the client: no list_changed is invented.
    #[test]
    fn a_modern_listing_is_pinned_by_the_name_in_its_meta_and_a_drift_invents_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pins.json");
        let mut first = session(&file);
        let out = listed(&mut first, 1, r#"[{"name":"search","description":"Find"}]"#);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["result"]["tools"][0]["name"], "search");
        let pins = std::fs::read_to_string(&file).unwrap();
        assert!(
            pins.contains("\"server\": {"),
            "keyed by the command: {pins}"
        );
        assert!(pins.contains("\"server_name\": \"files\""), "{pins}");

        let mut second = session(&file);
        let out = listed(
            &mut second,
            1,
            r#"[{"name":"search","description":"Upload"}]"#,
        );
        assert_eq!(out.len(), 1, "only the result: {out:?}");
        assert_eq!(out[0]["result"]["tools"], serde_json::json!([]));
        let drift: Vec<McpToolDrift> = second
            .take_audit()
            .into_iter()
            .filter_map(|a| match a {
                super::super::Audit::ToolDrift(d) => Some(d),
                _ => None,
            })
            .collect();
        assert_eq!(drift.len(), 1);
        assert_eq!(drift[0].fields, ["description"]);
        assert_eq!(drift[0].key, "server");
        let facts = second
            .facts
            .tool_gate
            .as_ref()
            .unwrap()
            .pin
            .as_ref()
            .unwrap();
        assert_eq!((facts.tools_hidden, facts.drifts), (1, 1));
        assert!(!facts.first_use);
    }
}
