//! `check --expect FILE`: the lifecycle one call should produce, as a
//! small JSON file, matched in order against each call's entries.
//!
//! ```json
//! {"lifecycle": [
//!   {"kind": "intent"},
//!   {"kind": "decision", "decision": "approved"},
//!   {"kind": "mcp_request", "method": "tools/call", "name": "search"},
//!   {"kind": "mcp_response", "method": "tools/call", "outcome": "result"},
//!   {"kind": "terminal", "state": "completed"}
//! ]}
//! ```
//!
//! Each step names a kind and any of that entry's fields, compared for
//! equality with the entry's own values. A call's entries hold the
//! lifecycle when the steps match them in order, other entries between
//! them allowed. Pure: the file's text in, a verdict per entry.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::journal::KINDS;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LifecycleFile {
    lifecycle: Vec<Map<String, Value>>,
}

/// One step: an entry's kind, and the fields it must hold.
#[derive(Debug, Clone, PartialEq)]
struct Step {
    kind: String,
    fields: Map<String, Value>,
}

/// The steps, in order.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Lifecycle {
    steps: Vec<Step>,
}

impl Lifecycle {
    /// The file's text read; what is wrong with it, said in one line.
    pub(super) fn parse(text: &str) -> Result<Lifecycle, String> {
        let file: LifecycleFile = serde_json::from_str(text).map_err(|e| {
            format!("{e}; expected {{\"lifecycle\": [{{\"kind\": \"intent\"}}, ...]}}")
        })?;
        if file.lifecycle.is_empty() {
            return Err("the lifecycle has no step".into());
        }
        let steps = file
            .lifecycle
            .into_iter()
            .enumerate()
            .map(|(at, mut fields)| {
                let kind = match fields.remove("kind") {
                    Some(Value::String(kind)) if KINDS.contains(&kind.as_str()) => kind,
                    Some(other) => {
                        return Err(format!(
                            "step {}: kind {other} is not one of {}",
                            at + 1,
                            KINDS.join(", ")
                        ));
                    }
                    None => return Err(format!("step {}: no kind", at + 1)),
                };
                Ok(Step { kind, fields })
            })
            .collect::<Result<_, _>>()?;
        Ok(Lifecycle { steps })
    }

    pub(super) fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether step `at` matches an entry of this kind and content (the
    /// line, read only when the kind matches and fields are asked).
    pub(super) fn matches(&self, at: usize, kind: &str, content: &[u8]) -> bool {
        let Some(step) = self.steps.get(at) else {
            return false;
        };
        if step.kind != kind {
            return false;
        }
        if step.fields.is_empty() {
            return true;
        }
        let Ok(entry) = serde_json::from_slice::<Map<String, Value>>(content) else {
            return false;
        };
        step.fields
            .iter()
            .all(|(name, value)| entry.get(name) == Some(value))
    }

    /// Step `at` as the file has it (one line of JSON).
    pub(super) fn describe(&self, at: usize) -> String {
        let Some(step) = self.steps.get(at) else {
            return String::new();
        };
        let mut object = Map::new();
        object.insert("kind".into(), Value::String(step.kind.clone()));
        object.extend(step.fields.clone());
        Value::Object(object).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_match_an_entry_of_their_kind_and_fields() {
        let lifecycle = Lifecycle::parse(
            r#"{"lifecycle":[{"kind":"intent"},{"kind":"mcp_response","outcome":"result","request_id":1}]}"#,
        )
        .unwrap();
        assert_eq!(lifecycle.len(), 2);
        assert!(lifecycle.matches(0, "intent", b"not read"));
        assert!(!lifecycle.matches(0, "terminal", b"{}"));
        let response = br#"{"kind":"mcp_response","outcome":"result","request_id":1,"h":"x"}"#;
        assert!(lifecycle.matches(1, "mcp_response", response));
        let other = br#"{"kind":"mcp_response","outcome":"result","request_id":"1"}"#;
        assert!(
            !lifecycle.matches(1, "mcp_response", other),
            "1 is not \"1\""
        );
        assert!(!lifecycle.matches(2, "intent", b"{}"), "past the end");
        assert_eq!(
            lifecycle.describe(1),
            r#"{"kind":"mcp_response","outcome":"result","request_id":1}"#
        );
    }

    #[test]
    fn a_bad_file_is_said_in_one_line() {
        for (text, says) in [
            ("[]", "expected {\"lifecycle\""),
            (r#"{"lifecycle":[]}"#, "no step"),
            (
                r#"{"lifecycle":[{"state":"completed"}]}"#,
                "step 1: no kind",
            ),
            (
                r#"{"lifecycle":[{"kind":"intent"},{"kind":"start"}]}"#,
                "step 2: kind \"start\"",
            ),
            (r#"{"lifecycle":[],"extra":1}"#, "unknown field"),
        ] {
            let err = Lifecycle::parse(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }
}
