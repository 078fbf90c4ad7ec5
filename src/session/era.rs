//! Which era of MCP a server process spoke, pure: the legacy one, opened
//! by the client's `initialize` (2025 and earlier), or the stateless one
//! (2026-07-28), where every request carries its protocol version in
//! `_meta`. The era is a property of the server process, so it is found
//! again for each incarnation, from the first request it gets: a modern
//! client's first request already names its version, so the `params` of
//! no later one are read (nothing per request). An `initialize` always
//! decides, whenever it comes (Claude Code's `server/discover` probe comes
//! before its `initialize`).

use serde::Deserialize;

use crate::record::mcp::Era;

/// The `_meta` key a 2026-07-28 request names its protocol version by.
const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

#[derive(Deserialize)]
struct Initialize {
    #[serde(rename = "protocolVersion", default)]
    protocol_version: Option<String>,
}

#[derive(Deserialize)]
struct Stateless {
    #[serde(rename = "_meta", default)]
    meta: Option<Meta>,
}

#[derive(Deserialize)]
struct Meta {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", default)]
    protocol_version: Option<String>,
}

/// What one incarnation was seen to speak.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Spoken {
    pub era: Option<Era>,
    /// The version the client asked for, as it sent it.
    pub protocol_version: Option<String>,
    /// The first request was read: only an `initialize` can decide now.
    settled: bool,
}

impl Spoken {
    /// A request that went to the server.
    pub(super) fn on_request(&mut self, method: &str, params: Option<&str>) {
        if method == "initialize" {
            if self.era != Some(Era::Legacy) {
                let version = params
                    .and_then(|p| serde_json::from_str::<Initialize>(p).ok())
                    .and_then(|init| init.protocol_version);
                *self = Spoken {
                    era: Some(Era::Legacy),
                    protocol_version: version,
                    settled: true,
                };
            }
            return;
        }
        if std::mem::replace(&mut self.settled, true) {
            return;
        }
        // A cheap look first: most params of a legacy client never name it.
        let Some(params) = params.filter(|p| p.contains(VERSION_KEY)) else {
            return;
        };
        if let Some(version) = serde_json::from_str::<Stateless>(params)
            .ok()
            .and_then(|s| s.meta)
            .and_then(|m| m.protocol_version)
        {
            *self = Spoken {
                era: Some(Era::Modern),
                protocol_version: Some(version),
                settled: true,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spoken(requests: &[(&str, Option<&str>)]) -> Spoken {
        let mut spoken = Spoken::default();
        for (method, params) in requests {
            spoken.on_request(method, *params);
        }
        spoken
    }

    const MODERN: &str = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"x"}"#;

    #[test]
    fn nothing_seen_is_no_era() {
        assert_eq!(spoken(&[]).era, None);
        assert_eq!(spoken(&[("tools/list", None)]).era, None);
        assert_eq!(spoken(&[("tools/list", Some("{}"))]).era, None);
    }

    /// Only the first request is read (a modern client's first already
    /// names its version): nothing is parsed per request after it.
    #[test]
    fn only_the_first_request_is_read_unless_an_initialize_comes() {
        let seen = spoken(&[("tools/list", Some("{}")), ("tools/call", Some(MODERN))]);
        assert_eq!(seen.era, None);
        let seen = spoken(&[
            ("tools/list", Some("{}")),
            ("initialize", Some(r#"{"protocolVersion":"2025-06-18"}"#)),
        ]);
        assert_eq!(seen.era, Some(Era::Legacy));
    }

    #[test]
    fn initialize_is_the_legacy_era_with_the_version_the_client_asked_for() {
        let seen = spoken(&[("initialize", Some(r#"{"protocolVersion":"2025-06-18"}"#))]);
        assert_eq!(seen.era, Some(Era::Legacy));
        assert_eq!(seen.protocol_version.as_deref(), Some("2025-06-18"));
        // An initialize without a readable version is still the handshake.
        let seen = spoken(&[("initialize", Some(r#"{"protocolVersion":7}"#))]);
        assert_eq!(seen.era, Some(Era::Legacy));
        assert_eq!(seen.protocol_version, None);
        assert_eq!(spoken(&[("initialize", None)]).era, Some(Era::Legacy));
    }

    #[test]
    fn a_request_meta_version_is_the_modern_era() {
        let seen = spoken(&[("tools/call", Some(MODERN))]);
        assert_eq!(seen.era, Some(Era::Modern));
        assert_eq!(seen.protocol_version.as_deref(), Some("2026-07-28"));
    }

    #[test]
    fn the_key_named_outside_meta_is_not_the_modern_era() {
        let params = r#"{"arguments":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#;
        assert_eq!(spoken(&[("tools/call", Some(params))]).era, None);
        // Nor a _meta without it, nor a version that is no string.
        let params =
            r#"{"_meta":{"progressToken":1},"x":"io.modelcontextprotocol/protocolVersion"}"#;
        assert_eq!(spoken(&[("tools/call", Some(params))]).era, None);
        let params = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728}}"#;
        assert_eq!(spoken(&[("tools/call", Some(params))]).era, None);
    }

    #[test]
    fn the_first_modern_request_decides_and_later_ones_are_not_read() {
        let other = MODERN.replace("2026-07-28", "2027-01-01");
        let seen = spoken(&[("tools/list", Some(MODERN)), ("tools/call", Some(&other))]);
        assert_eq!(seen.protocol_version.as_deref(), Some("2026-07-28"));
    }

    #[test]
    fn initialize_after_a_discover_probe_is_the_legacy_era() {
        let seen = spoken(&[
            ("server/discover", Some(MODERN)),
            ("initialize", Some(r#"{"protocolVersion":"2025-11-25"}"#)),
            ("tools/list", Some(MODERN)),
        ]);
        assert_eq!(seen.era, Some(Era::Legacy));
        assert_eq!(seen.protocol_version.as_deref(), Some("2025-11-25"));
    }

    #[test]
    fn a_second_initialize_keeps_the_first_handshake() {
        let seen = spoken(&[
            ("initialize", Some(r#"{"protocolVersion":"2025-06-18"}"#)),
            ("initialize", Some(r#"{"protocolVersion":"2024-11-05"}"#)),
        ]);
        assert_eq!(seen.protocol_version.as_deref(), Some("2025-06-18"));
    }
}
