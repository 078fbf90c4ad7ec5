//! Bringing a restarted server to where the client left the first one,
//! pure: the client's `initialize` is kept, and so is what the first
//! server answered. A restarted server gets that `initialize` under
//! mcp-bound's own id; its answer is consumed, never forwarded, and
//! compared with the first: the same protocol version and capabilities,
//! and `notifications/initialized` follows (plus a `list_changed` for
//! each list the server said may change, so the client reads it again);
//! anything else, and the restart is refused.

use serde::Deserialize;
use serde_json::Value;

/// What the first server said it is.
#[derive(Debug, Clone, PartialEq, Deserialize)]
struct ServerInit {
    #[serde(rename = "protocolVersion", default)]
    protocol_version: Value,
    #[serde(default)]
    capabilities: Value,
    #[serde(rename = "serverInfo", default)]
    server_info: Option<ServerInfo>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
struct ServerInfo {
    #[serde(default)]
    name: Option<String>,
}

/// What a restarted server's answer to the replayed `initialize` means.
#[derive(Debug, PartialEq)]
pub(crate) enum Replayed {
    /// The same server: these lines go to it and to the client.
    Same {
        to_server: Vec<u8>,
        to_client: Vec<u8>,
    },
    /// Another protocol version or other capabilities (or an error).
    Changed(String),
}

#[derive(Default)]
pub(crate) struct Replay {
    /// The client's initialize: its id (as a key) and params text.
    client: Option<(String, Option<String>)>,
    first: Option<ServerInit>,
    /// The id (as a key) of mcp-bound's own initialize, while it waits.
    pending: Option<String>,
    /// A 2026-07-28 server's name, from a result's `_meta`.
    modern_name: Option<String>,
}

impl Replay {
    /// A client request went to the server.
    pub(super) fn on_client_request(&mut self, key: &str, method: &str, params: Option<&str>) {
        if method == "initialize" && self.client.is_none() {
            self.client = Some((key.to_string(), params.map(str::to_string)));
        }
    }

    /// A server response: `Some` when it answers mcp-bound's own
    /// initialize (it is consumed); the first server's answer to the
    /// client's initialize is kept on the way through.
    pub(super) fn on_server_response(
        &mut self,
        key: &str,
        result: Option<&str>,
    ) -> Option<Replayed> {
        // Parsed only when it answers an initialize: not every response.
        let init = || result.and_then(|r| serde_json::from_str::<ServerInit>(r).ok());
        if self.pending.as_deref() == Some(key) {
            self.pending = None;
            return Some(self.compare(init()));
        }
        if self.first.is_none()
            && let Some((client_key, _)) = &self.client
            && client_key == key
        {
            self.first = init();
        }
        None
    }

    /// A restarted server: the line to send it first, if the client had
    /// initialized the first one.
    pub(super) fn start(&mut self, attempt: u64) -> Option<Vec<u8>> {
        let (_, params) = self.client.as_ref()?;
        self.first.as_ref()?;
        let id = format!("\"mcp-bound-replay-{attempt}\"");
        self.pending = Some(id.clone());
        let params = params
            .as_deref()
            .map(|p| format!(",\"params\":{p}"))
            .unwrap_or_default();
        Some(
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"initialize\"{params}}}\n")
                .into_bytes(),
        )
    }

    /// The params of the client's initialize, as it sent them.
    pub(super) fn client_params(&self) -> Option<&str> {
        self.client
            .as_ref()
            .and_then(|(_, params)| params.as_deref())
    }

    /// The first server's `serverInfo.name`, if it gave one (in its
    /// initialize result, or in 2026-07-28 a result's `_meta`).
    pub(super) fn server_name(&self) -> Option<&str> {
        self.first
            .as_ref()
            .and_then(|f| f.server_info.as_ref())
            .and_then(|i| i.name.as_deref())
            .or(self.modern_name.as_deref())
    }

    /// A 2026-07-28 result (its text): the server's name in its `_meta`,
    /// kept once seen.
    pub(super) fn on_modern_result(&mut self, result: &str) {
        const KEY: &str = "io.modelcontextprotocol/serverInfo";
        if self.modern_name.is_some() || !result.contains(KEY) {
            return;
        }
        #[derive(Deserialize)]
        struct WithMeta {
            #[serde(rename = "_meta", default)]
            meta: Option<Value>,
        }
        self.modern_name = serde_json::from_str::<WithMeta>(result)
            .ok()
            .and_then(|r| r.meta)
            .and_then(|m| m.get(KEY)?.get("name")?.as_str().map(str::to_string));
    }

    pub(super) fn waiting(&self) -> bool {
        self.pending.is_some()
    }

    fn compare(&self, init: Option<ServerInit>) -> Replayed {
        let Some(first) = &self.first else {
            return Replayed::Changed("the first server's initialize result was not seen".into());
        };
        let Some(now) = init else {
            return Replayed::Changed("the restarted server did not answer initialize".into());
        };
        if now.protocol_version != first.protocol_version {
            return Replayed::Changed(format!(
                "protocolVersion {} became {}",
                first.protocol_version, now.protocol_version
            ));
        }
        if now.capabilities != first.capabilities {
            return Replayed::Changed("the server's capabilities changed".into());
        }
        let mut to_client = Vec::new();
        for list in ["tools", "resources", "prompts"] {
            if first.capabilities[list]["listChanged"] == Value::Bool(true) {
                to_client.extend_from_slice(
                    format!(
                        "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/{list}/list_changed\"}}\n"
                    )
                    .as_bytes(),
                );
            }
        }
        Replayed::Same {
            to_server: b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n".to_vec(),
            to_client,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> &str {
        text
    }

    fn initialized(first_result: &str) -> Replay {
        let mut replay = Replay::default();
        replay.on_client_request(
            "1",
            "initialize",
            Some(raw(r#"{"protocolVersion":"2025-06-18"}"#)),
        );
        assert_eq!(
            replay.on_server_response("1", Some(raw(first_result))),
            None
        );
        replay
    }

    const FIRST: &str = r#"{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true},"prompts":{}},"serverInfo":{"name":"a"}}"#;

    #[test]
    fn the_same_server_is_initialized_and_the_client_told_to_read_its_lists_again() {
        let mut replay = initialized(FIRST);
        let line = replay.start(2).unwrap();
        assert_eq!(
            line,
            br#"{"jsonrpc":"2.0","id":"mcp-bound-replay-2","method":"initialize","params":{"protocolVersion":"2025-06-18"}}
"#
        );
        assert!(replay.waiting());
        // Another response passes; ours is consumed. serverInfo may differ.
        assert_eq!(replay.on_server_response("\"x\"", None), None);
        let again = r#"{"protocolVersion":"2025-06-18","capabilities":{"prompts":{},"tools":{"listChanged":true}},"serverInfo":{"name":"b"}}"#;
        let Some(Replayed::Same {
            to_server,
            to_client,
        }) = replay.on_server_response("\"mcp-bound-replay-2\"", Some(raw(again)))
        else {
            panic!("the same server")
        };
        assert_eq!(
            to_server,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
        );
        assert_eq!(
            to_client,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n"
        );
        assert!(!replay.waiting());
    }

    #[test]
    fn another_protocol_or_other_capabilities_refuse_the_restart() {
        let mut replay = initialized(FIRST);
        replay.start(1);
        let other = r#"{"protocolVersion":"2024-11-05","capabilities":{}}"#;
        let answer = replay.on_server_response("\"mcp-bound-replay-1\"", Some(raw(other)));
        assert_eq!(
            answer,
            Some(Replayed::Changed(
                "protocolVersion \"2025-06-18\" became \"2024-11-05\"".into()
            ))
        );
        replay.start(2);
        let fewer = r#"{"protocolVersion":"2025-06-18","capabilities":{"tools":{}}}"#;
        assert!(matches!(
            replay.on_server_response("\"mcp-bound-replay-2\"", Some(raw(fewer))),
            Some(Replayed::Changed(_))
        ));
        // An error response (no result) is a refusal too.
        replay.start(3);
        assert!(matches!(
            replay.on_server_response("\"mcp-bound-replay-3\"", None),
            Some(Replayed::Changed(_))
        ));
    }

    #[test]
    fn a_client_that_never_initialized_needs_no_replay() {
        let mut replay = Replay::default();
        assert_eq!(replay.start(1), None);
        assert!(!replay.waiting());
    }
}
