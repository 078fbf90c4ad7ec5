//! What a reader of the journal (`mcp-bound log`) views of an entry:
//! a few fields, borrowed from the line. Taken from the verifier's own
//! strict reading where the chain holds (no second parse), and read
//! leniently from the bytes past a break, where anything may stand.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::line::Parsed;
use super::shapes::Body;

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
    #[serde(default)]
    pub duration_ms: Option<u64>,
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
}

fn streams<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<(u64, u64)>, D::Error> {
    Ok(Option::<super::shapes::Streams>::deserialize(d)?.and_then(|s| s.stderr()))
}

fn borrowed<'a>(text: &'a Option<Cow<'a, str>>) -> Option<Cow<'a, str>> {
    text.as_deref().map(Cow::Borrowed)
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
                view.argv = Some(b.argv.iter().map(|a| Cow::Borrowed(&**a)).collect());
            }
            Body::Decision(b) => view.decision = borrowed(&b.decision),
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
            }
            _ => {}
        }
        view
    }
}
