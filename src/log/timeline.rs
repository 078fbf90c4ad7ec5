//! `mcp-bound log --call ID`: one call's whole lifecycle, an entry a
//! line, in the journal's order: the intent, the approval, each MCP
//! request, decision and response, each task's end, each tool drift,
//! the terminal entry. Pure: an entry in, its line out.

use serde_json::Value;

/// A JSON value as a short text: strings bare, null as `-`.
fn word(value: &Value) -> String {
    match value {
        Value::Null => "-".to_string(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// What an entry of `kind` says, in a few words.
fn summary(kind: &str, entry: &Value) -> String {
    let f = |name: &str| word(&entry[name]);
    match kind {
        "intent" => {
            let argv: Vec<String> = entry["argv"]
                .as_array()
                .map(|a| a.iter().map(word).collect())
                .unwrap_or_default();
            let command =
                shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| argv.join(" "));
            format!("session {}, cwd {}: {command}", f("session_id"), f("cwd"))
        }
        "decision" => format!("{} after {}ms", f("decision"), f("waited_ms")),
        "mcp_request" => format!("{} {} {}", f("request_id"), f("method"), f("name")),
        "mcp_decision" => format!(
            "{} {} {} by {} after {}ms{}",
            f("request_id"),
            f("tool"),
            f("decision"),
            f("by"),
            f("waited_ms"),
            match &entry["action"] {
                Value::Null => String::new(),
                action => format!(" (the client: {})", word(action)),
            }
        ),
        "mcp_response" => format!(
            "{} {} {} in {}ms{}",
            f("request_id"),
            f("method"),
            f("outcome"),
            f("duration_ms"),
            match &entry["reason"] {
                Value::Null => String::new(),
                reason => format!(" ({})", word(reason)),
            }
        ),
        "mcp_task" => format!(
            "{} task {} {} after {}ms",
            f("request_id"),
            f("task_id"),
            f("status"),
            f("duration_ms")
        ),
        "mcp_tool_drift" => format!(
            "tool {} {}: {}",
            f("tool"),
            f("change"),
            entry["fields"]
                .as_array()
                .map(|a| a.iter().map(word).collect::<Vec<_>>().join(", "))
                .unwrap_or_default()
        ),
        "mcp_restart" => format!(
            "restart {}: pid {}, after the last one {}",
            f("attempt"),
            f("pid"),
            crate::journal::restart_after(&entry["exit"])
        ),
        "terminal" => format!(
            "{}, exit {}, {}ms, stderr {} seen {} kept",
            f("state"),
            f("exit_code"),
            f("duration_ms"),
            word(&entry["streams"]["stderr_bytes_seen"]),
            word(&entry["streams"]["stderr_bytes_retained"]),
        ),
        _ => String::new(),
    }
}

/// One entry's line: its mark (`!` unverified), time, line number, kind
/// and summary; control characters shown escaped.
pub(super) fn line(entry: &Value, line: u64, verified: bool) -> String {
    let kind = entry["kind"].as_str().unwrap_or("?");
    let ts = entry["ts"].as_str().unwrap_or("?");
    let text = format!(
        "{} {ts}  {line:>8}  {kind:<14}  {}",
        if verified { ' ' } else { '!' },
        summary(kind, entry)
    );
    crate::shown::untrusted(&text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_kind_says_what_it_holds() {
        let entry = json!({"kind": "mcp_response", "ts": "2026-12-03T08:00:00.000Z",
            "request_id": 7, "method": "tools/call", "outcome": "refused", "reason": "duplicate_key",
            "duration_ms": 0});
        assert_eq!(
            line(&entry, 12, true),
            "  2026-12-03T08:00:00.000Z        12  mcp_response    7 tools/call refused in 0ms (duplicate_key)"
        );
        let intent = json!({"kind": "intent", "ts": "t", "session_id": null, "cwd": "/w",
            "argv": ["sh", "-c", "echo\n<b>"]});
        let text = line(&intent, 2, false);
        assert!(text.starts_with("! t"), "{text}");
        assert!(
            text.contains(r"session -, cwd /w: sh -c 'echo\u{a}<b>'"),
            "{text}"
        );
        let decision = json!({"kind": "mcp_decision", "ts": "t", "request_id": "a", "tool": "w",
            "decision": "denied", "by": "host", "waited_ms": 5, "action": "decline"});
        assert!(
            line(&decision, 3, true)
                .ends_with("a w denied by host after 5ms (the client: decline)")
        );
    }
}
