//! What a reader of the journal (`log`, `check`) views of an entry:
//! a few fields, borrowed from the line. Taken from the verifier's own
//! strict reading where the chain holds (no second parse), and read
//! leniently from the bytes past a break, where anything may stand.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::line::Parsed;
use super::shapes::Body;

/// Outcomes of an mcp_response whose request never reached the server
/// (a gate's denial, a refused line, a person asked): not a call.
pub const NOT_SENT: [&str; 3] = ["denied", "refused", "asked"];

/// An entry's fields that a view shows; the rest is left unread.
#[derive(Deserialize, Default)]
pub struct EntryView<'a> {
    #[serde(borrow)]
    pub kind: Cow<'a, str>,
    #[serde(borrow)]
    pub ts: Cow<'a, str>,
    #[serde(default, borrow)]
    pub call_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub session_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub argv: Option<Vec<Cow<'a, str>>>,
    #[serde(default, borrow)]
    pub state: Option<Cow<'a, str>>,
    #[serde(default)]
    pub exit_code: Option<i64>,
    /// A terminal's, or an mcp_response's.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// A decision's or an mcp_decision's wait for its answer.
    #[serde(default)]
    pub waited_ms: Option<u64>,
    /// stderr bytes seen and kept.
    #[serde(default, deserialize_with = "streams")]
    pub streams: Option<(u64, u64)>,
    #[serde(default, borrow)]
    pub decision: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub outcome: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub request_id: Option<&'a RawValue>,
    /// An intent's tool gate: present when its tools/calls need a decision.
    #[serde(default)]
    pub tool_gate: Option<serde::de::IgnoredAny>,
}

fn streams<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<(u64, u64)>, D::Error> {
    Ok(Option::<super::shapes::Streams>::deserialize(d)?.and_then(|s| s.stderr()))
}

fn borrowed<'a>(text: &'a Option<Cow<'a, str>>) -> Option<Cow<'a, str>> {
    text.as_deref().map(Cow::Borrowed)
}

/// How the incarnation before a restart ended, from an `mcp_restart`
/// entry's `exit`, as every reader says it: "exited 3", "was killed by
/// SIGTERM", "with no exit seen".
pub fn restart_after(exit: &serde_json::Value) -> String {
    match (exit["signal"].as_str(), &exit["code"]) {
        _ if exit.is_null() => "with no exit seen".to_string(),
        (Some(signal), _) => format!("was killed by SIG{signal}"),
        (None, serde_json::Value::Number(code)) => format!("exited {code}"),
        (None, _) => "exited -".to_string(),
    }
}

impl EntryView<'_> {
    /// A tools/call request's id (as JSON text) and tool ("" when it
    /// names none): what the readers follow until its response.
    pub fn tool_call(&self) -> Option<(&str, &str)> {
        if self.kind != "mcp_request" || self.method.as_deref() != Some("tools/call") {
            return None;
        }
        let id = self.request_id?.get();
        Some((id, self.name.as_deref().unwrap_or("")))
    }
}

impl<'a> EntryView<'a> {
    /// From the verifier's strict reading of the line.
    pub(crate) fn of(parsed: &'a Parsed<'a>) -> EntryView<'a> {
        let mut view = EntryView {
            kind: Cow::Borrowed(parsed.kind()),
            ts: Cow::Borrowed(&parsed.ts),
            call_id: parsed.call_id().map(Cow::Borrowed),
            ..EntryView::default()
        };
        match &parsed.body {
            Body::Intent(b) => {
                view.session_id = borrowed(&b.session_id);
                view.tool_gate = b.tool_gate;
                view.argv = Some(b.argv.iter().map(|a| Cow::Borrowed(&**a)).collect());
            }
            Body::Decision(b) => {
                view.decision = borrowed(&b.decision);
                view.waited_ms = Some(b.waited_ms);
            }
            Body::McpDecision(b) => {
                view.decision = Some(Cow::Borrowed(b.decision.as_str()));
                view.waited_ms = Some(b.waited_ms);
                view.request_id = Some(b.request_id);
            }
            Body::Terminal(b) => {
                view.state = Some(Cow::Borrowed(&b.state));
                view.exit_code = b.exit_code;
                view.duration_ms = b.duration_ms;
                view.streams = b.streams.stderr();
            }
            Body::McpRequest(b) => {
                view.method = serde_json::from_str::<Option<Cow<'a, str>>>(b.method.get())
                    .ok()
                    .flatten();
                view.name = borrowed(&b.name);
                view.request_id = Some(b.request_id);
            }
            Body::McpResponse(b) => {
                view.method = borrowed(&b.method);
                view.outcome = Some(Cow::Borrowed(&b.outcome));
                view.request_id = Some(b.request_id);
                view.duration_ms = Some(b.duration_ms);
            }
            _ => {}
        }
        view
    }
}

impl<'a> super::Seen<'a> {
    /// The entry's view: from the verifier's reading where the chain
    /// holds; past a break, read leniently, and none for what is not an
    /// entry.
    pub fn view(&self) -> Option<EntryView<'a>> {
        match self.parsed {
            Some(parsed) => Some(EntryView::of(parsed)),
            None => serde_json::from_slice(self.content).ok(),
        }
    }
}
