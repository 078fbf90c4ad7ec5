//! The messages mcp-bound writes on its own: error responses to the
//! client for a request the server will not answer, and
//! `notifications/cancelled` to the server. Each is one line of JSON. The
//! id is the client's own JSON text, so it keeps its type.

use std::time::Duration;

use serde_json::json;

use crate::record::Exit;
use crate::units::limit_millis;

/// -32001: the official SDKs' code for a request timeout.
pub(crate) const REQUEST_TIMEOUT: i64 = -32001;
/// -32000: a server error of mcp-bound's own (the server is gone, or
/// too many requests wait).
pub(crate) const SERVER_ERROR: i64 = -32000;
/// -32600: JSON-RPC's Invalid Request, for a request mcp-bound refused to
/// send because servers' parsers would not agree on what it says.
pub(crate) const INVALID_REQUEST: i64 = -32600;

fn error_line(id: &str, code: i64, message: &str, data: serde_json::Value) -> Vec<u8> {
    let error = json!({ "code": code, "message": message, "data": { "mcp_bound": data } });
    let mut line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{error}}}").into_bytes();
    line.push(b'\n');
    line
}

/// Whole seconds as `10s`, otherwise milliseconds as `1500ms`.
fn spoken(timeout: Duration) -> String {
    let ms = limit_millis(timeout);
    if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// The last whole lines of `text` (masked stderr) that fit in `max`
/// bytes, for an answer's message: some hosts show the model only
/// `error.message` (Claude Code), so what the server said must be there.
/// A last line longer than `max` is cut at its start, marked. None when
/// nothing is left, or `max` is 0.
pub(crate) fn agent_excerpt(text: &str, max: usize) -> Option<String> {
    let text = text.trim_end_matches(['\n', '\r']);
    if max == 0 || text.trim().is_empty() {
        return None;
    }
    // Line starts, from the last line back to the first.
    let starts = text
        .rmatch_indices('\n')
        .map(|(at, _)| at + 1)
        .chain(std::iter::once(0));
    let mut start = text.len();
    for line_start in starts {
        if text.len() - line_start > max {
            break;
        }
        start = line_start;
    }
    if text.len() - start > max || start == text.len() {
        // Even the last line does not fit: its end, marked.
        let mut cut = text.len() - max.min(text.len()).saturating_sub(3);
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        return Some(format!("...{}", &text[cut..]));
    }
    Some(text[start..].to_string())
}

/// `message`, then the excerpt behind a line that says what it is.
fn with_excerpt(message: String, label: &str, excerpt: Option<&str>) -> String {
    match excerpt {
        // The server's words, in a message a host shows in a terminal:
        // its lines kept, every control in them escaped.
        Some(excerpt) => format!(
            "{message}\n\n{label} (masked):\n{}",
            crate::shown::untrusted_lines(excerpt)
        ),
        None => message,
    }
}

/// `excerpt`: what the server wrote to stderr while the request ran.
pub(crate) fn timed_out(
    id: &str,
    method: &str,
    timeout: Duration,
    excerpt: Option<&str>,
) -> Vec<u8> {
    let message = format!(
        "Request timed out after {} (mcp-bound --request-timeout)",
        spoken(timeout)
    );
    error_line(
        id,
        REQUEST_TIMEOUT,
        &with_excerpt(message, "The server's stderr while it ran", excerpt),
        json!({
            "reason": "request_timeout",
            "method": method,
            "timeout_ms": limit_millis(timeout),
        }),
    )
}

/// How the server ended, as the message says it.
pub(super) fn ended(exit: Option<&Exit>) -> String {
    match exit {
        Some(exit @ Exit::Code { .. }) => exit.to_string(),
        Some(Exit::Signal { signal, .. }) => format!("killed by SIG{signal}"),
        None => "no exit observed".to_string(),
    }
}

/// `written`: whether every byte of the request had gone into the
/// server's stdin pipe. False means the server cannot have read it whole,
/// so it cannot have acted on it; true means it may have. `excerpt`: the
/// last stderr lines, for the message.
pub(crate) fn server_exited(
    id: &str,
    exit: Option<&Exit>,
    stderr_tail: &str,
    call_id: &str,
    written: bool,
    excerpt: Option<&str>,
) -> Vec<u8> {
    let message = format!("MCP server exited before responding ({})", ended(exit));
    error_line(
        id,
        SERVER_ERROR,
        &with_excerpt(message, "The server's last stderr lines", excerpt),
        json!({
            "reason": "server_exited",
            "exit": exit,
            "stderr_tail": stderr_tail,
            "call_id": call_id,
            "written_to_server": written,
        }),
    )
}

pub(crate) fn too_many_in_flight(id: &str, limit: usize) -> Vec<u8> {
    error_line(
        id,
        SERVER_ERROR,
        &format!("Too many requests in flight ({limit}; mcp-bound --max-in-flight)"),
        json!({ "reason": "too_many_in_flight", "max_in_flight": limit }),
    )
}

/// `id`: None when it cannot be told (JSON-RPC then answers with null).
/// `refusal`: the journal's word for why, `why` the same in words.
pub(crate) fn invalid_request(id: Option<&str>, refusal: &str, why: &str) -> Vec<u8> {
    error_line(
        id.unwrap_or("null"),
        INVALID_REQUEST,
        &format!("Invalid request: {why}; mcp-bound did not send it to the server"),
        json!({ "reason": "invalid_request", "refusal": refusal, "detail": why }),
    )
}

/// Why a `tools/call` was not sent: `reason` is the data's word
/// (`tool_denied`, `tool_approval_expired`, ...), `message` names the
/// tool and who said so, `detail` is the approver's reason line, masked.
pub(crate) fn tool_not_run(
    id: &str,
    tool: &str,
    reason: &str,
    message: &str,
    by: super::gate::DecidedBy,
    detail: Option<&str>,
) -> Vec<u8> {
    let message = match detail {
        Some(detail) => format!("{message}: {detail}"),
        None => message.to_string(),
    };
    error_line(
        id,
        SERVER_ERROR,
        &message,
        json!({ "reason": reason, "tool": tool, "by": by, "detail": detail }),
    )
}

/// A `tools/list` answer the gate could not filter: refused rather than
/// shown with tools the policy denies.
pub(crate) fn tools_list_unreadable(id: &str) -> Vec<u8> {
    error_line(
        id,
        SERVER_ERROR,
        "The server's tools/list result could not be read to remove the tools mcp-bound hides (--tool-allow, --tool-deny, --tool-pin); it was not passed on",
        json!({ "reason": "tools_list_unreadable" }),
    )
}

pub(crate) fn cancelled(id: &str, timeout: Duration) -> Vec<u8> {
    let reason = format!(
        "timed out after {} (mcp-bound --request-timeout)",
        spoken(timeout)
    );
    let reason = serde_json::to_string(&reason).expect("a string serializes");
    format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":{id},\"reason\":{reason}}}}}\n"
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn parse(line: &[u8]) -> Value {
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1, "one line");
        serde_json::from_slice(line).unwrap()
    }

    /// MCP 2026-07-28 reserves -32020..-32099 for the spec: no answer of
    /// ours uses it (-32001 and -32000 sit in the legacy range, -32600 is
    /// JSON-RPC's), and each says it is ours in `data.mcp_bound`, so it
    /// cannot be read as the server's.
    #[test]
    fn every_error_we_write_is_outside_the_reserved_range_and_says_it_is_ours() {
        let exit = Exit::Code {
            code: 1,
            ntstatus: None,
        };
        let answers = [
            timed_out("1", "tools/call", Duration::from_secs(1), None),
            timed_out("1", "tools/call", Duration::from_secs(1), Some("x")),
            server_exited("1", Some(&exit), "t", "c", true, Some("x")),
            server_exited("1", None, "", "c", false, None),
            too_many_in_flight("1", 4),
            invalid_request(Some("1"), "duplicate_key", "why"),
            invalid_request(None, "not_one_value", "why"),
        ];
        for line in &answers {
            let answer = parse(line);
            let code = answer["error"]["code"].as_i64().unwrap();
            assert!(!(-32099..=-32020).contains(&code), "{answer}");
            assert!(answer["error"]["data"]["mcp_bound"].is_object(), "{answer}");
        }
    }

    #[test]
    fn answers_keep_the_id_as_sent_and_say_why() {
        let answer = parse(&timed_out(
            "\"a-1\"",
            "tools/call",
            Duration::from_millis(1500),
            None,
        ));
        assert_eq!(answer["id"], "a-1");
        assert_eq!(answer["error"]["code"], -32001);
        assert_eq!(
            answer["error"]["message"],
            "Request timed out after 1500ms (mcp-bound --request-timeout)"
        );
        assert_eq!(answer["error"]["data"]["mcp_bound"]["timeout_ms"], 1500);
        let exit = Exit::Code {
            code: 1,
            ntstatus: None,
        };
        let answer = parse(&server_exited(
            "7",
            Some(&exit),
            "boom\n\"x\"",
            "c1",
            true,
            None,
        ));
        assert_eq!(answer["id"], 7);
        assert_eq!(
            answer["error"]["message"],
            "MCP server exited before responding (exit 1)"
        );
        let data = &answer["error"]["data"]["mcp_bound"];
        assert_eq!(data["exit"], serde_json::json!({"code": 1}));
        assert_eq!(data["stderr_tail"], "boom\n\"x\"");
        let notice = parse(&cancelled("7", Duration::from_secs(2)));
        assert_eq!(notice["params"]["requestId"], 7);
        assert_eq!(notice.get("id"), None, "a notification");
        let answer = parse(&too_many_in_flight("1.5", 4));
        assert_eq!(answer["id"], 1.5);
    }

    /// The excerpt is the last whole lines that fit, and a line too long
    /// for the bound is cut at its start, marked.
    #[test]
    fn the_agent_excerpt_is_the_last_whole_lines_that_fit() {
        let text = "first line\nsecond line\nTraceback: ValueError: boom\n";
        assert_eq!(
            agent_excerpt(text, 1024).as_deref(),
            Some("first line\nsecond line\nTraceback: ValueError: boom")
        );
        assert_eq!(
            agent_excerpt(text, 40).as_deref(),
            Some("second line\nTraceback: ValueError: boom")
        );
        assert_eq!(
            agent_excerpt(text, 10).as_deref(),
            Some("...r: boom"),
            "10 bytes"
        );
        assert_eq!(agent_excerpt(text, 0), None);
        assert_eq!(agent_excerpt("\n\n", 100), None);
        let answer = parse(&server_exited(
            "1",
            None,
            text,
            "c1",
            true,
            agent_excerpt(text, 40).as_deref(),
        ));
        assert_eq!(
            answer["error"]["message"],
            "MCP server exited before responding (no exit observed)\n\nThe server's last stderr lines (masked):\nsecond line\nTraceback: ValueError: boom"
        );
        assert_eq!(
            answer["error"]["data"]["mcp_bound"]["stderr_tail"], text,
            "the tail stays whole"
        );
    }
}
