//! A JSON-RPC line, parsed only as far as the session needs: what kind of
//! message it is, its `id` (kept as the exact JSON text that was sent),
//! its `method`, and for a few methods one field of `params`. Everything
//! else is skipped without being built, and the bytes that are forwarded
//! are always the bytes that came in.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::scan::{self, Fields};

/// The exact JSON text of one value, as it came (validated JSON).
pub(crate) type Raw<'a> = &'a str;

/// One JSON-RPC message, by what it is.
#[derive(Debug)]
pub(crate) enum Message<'a> {
    Request {
        id: Raw<'a>,
        method: Cow<'a, str>,
        params: Option<Raw<'a>>,
    },
    Notification {
        method: Cow<'a, str>,
        params: Option<Raw<'a>>,
        /// `"id": null` was given: JSON-RPC 2.0 reads that as a request
        /// (only the permissive reading of client lines tells it).
        null_id: bool,
    },
    Response {
        id: Raw<'a>,
        result: Option<Raw<'a>>,
        /// Some(code) for an error response (`None` inside: no integer code).
        error: Option<Option<i64>>,
    },
    /// A JSON object that is none of the above.
    Invalid,
    /// A client object in which a key the audit reads (`jsonrpc`, `id`,
    /// `method`, `params`) is given twice (`spelled` false: parsers that
    /// keep the first and parsers that keep the last read different
    /// messages) or spelled otherwise (`spelled`: Go's and .NET's
    /// case-insensitive readers take it for the key). Only the permissive
    /// reading of client lines finds it; `id` is the last one.
    Ambiguous {
        id: Option<Raw<'a>>,
        key: &'static str,
        spelled: bool,
    },
}

/// A whole line.
#[derive(Debug)]
pub(crate) enum Line<'a> {
    One(Message<'a>),
    /// A JSON-RPC batch: each element, with its exact text.
    Batch(Vec<(Raw<'a>, Message<'a>)>),
    /// Not JSON, or JSON that is neither an object nor an array.
    NotJson,
}

#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    /// Present even when null: `"result": null` is a success response.
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// A field's raw text, `null` included (an absent field is None).
fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(Some)
}

#[derive(Deserialize)]
struct ErrorCode {
    #[serde(default)]
    code: Option<i64>,
}

impl<'a> From<Wire<'a>> for Fields<'a> {
    fn from(wire: Wire<'a>) -> Fields<'a> {
        Fields {
            id: wire.id.map(RawValue::get),
            method: wire.method,
            params: wire.params.map(RawValue::get),
            result: wire.result.map(RawValue::get),
            error: wire.error.map(RawValue::get),
        }
    }
}

fn classify(fields: Fields<'_>) -> Message<'_> {
    // `"id": null` reads as no id: a null id names no request.
    let Fields {
        id,
        method,
        params,
        result,
        error,
    } = fields;
    match (method, id) {
        (Some(method), Some(id)) => Message::Request { id, method, params },
        (Some(method), None) => Message::Notification {
            method,
            params,
            null_id: false,
        },
        (None, Some(id)) if result.is_some() || error.is_some() => Message::Response {
            id,
            result,
            error: error.map(|raw| {
                serde_json::from_str::<ErrorCode>(raw)
                    .ok()
                    .and_then(|e| e.code)
            }),
        },
        (None, _) => Message::Invalid,
    }
}

/// A client object as the permissive reading found it. A key given twice
/// or spelled otherwise matters only in what may be a request or a
/// notification (one with a method, in any spelling): a client's response
/// touches nothing the session keeps.
pub(crate) fn read(object: super::lenient::Object<'_>) -> Message<'_> {
    // What the fast path hands over, and nearly every line: nothing to weigh.
    if object.duplicates.is_empty()
        && object.variants.is_empty()
        && !object.method_not_string
        && !object.null_id
    {
        return classify(object.fields);
    }
    let has_method = object.fields.method.is_some()
        || object.method_not_string
        || object.duplicates.contains(&"method")
        || object.variants.contains(&"method");
    let ambiguous = (object.duplicates.first().map(|key| (key, false)))
        .or(object.variants.first().map(|key| (key, true)))
        .filter(|_| has_method);
    if let Some((key, spelled)) = ambiguous {
        return Message::Ambiguous {
            id: object.fields.id,
            key,
            spelled,
        };
    }
    if object.method_not_string {
        return Message::Invalid;
    }
    match classify(object.fields) {
        Message::Notification { method, params, .. } => Message::Notification {
            method,
            params,
            null_id: object.null_id,
        },
        message => message,
    }
}

fn first_byte(line: &[u8]) -> Option<u8> {
    line.iter()
        .copied()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

/// Parse one line (its newline included or not).
///
/// JSON text is UTF-8 (RFC 8259, 8.1): the whole line is checked once, up
/// front (std checks ASCII a word at a time), and then parsed as a `str`,
/// so no string and no raw value inside is checked again. A line that is
/// not UTF-8 is not JSON, whatever part of it the session would read.
pub(crate) fn parse(line: &[u8]) -> Line<'_> {
    let Ok(text) = std::str::from_utf8(line) else {
        return Line::NotJson;
    };
    // One object, the common case: scanned by hand when it can be sure.
    if first_byte(line) == Some(b'{')
        && let Some(fields) = scan::object(text)
    {
        return Line::One(classify(fields));
    }
    parse_with_serde(line, text)
}

/// The definition of the parse, which the fast path must agree with.
fn parse_with_serde<'a>(line: &[u8], text: &'a str) -> Line<'a> {
    match first_byte(line) {
        Some(b'{') => match serde_json::from_str::<Wire>(text) {
            Ok(wire) => Line::One(classify(wire.into())),
            Err(_) => match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                // An object whose fields have the wrong types.
                Ok(_) => Line::One(Message::Invalid),
                Err(_) => Line::NotJson,
            },
        },
        // A batch: a non-empty array of objects (what the guard lets through).
        Some(b'[') => match serde_json::from_str::<Vec<&RawValue>>(text) {
            Ok(elements)
                if !elements.is_empty() && elements.iter().all(|e| e.get().starts_with('{')) =>
            {
                Line::Batch(
                    elements
                        .into_iter()
                        .map(|raw| {
                            let message = serde_json::from_str::<Wire>(raw.get())
                                .map_or(Message::Invalid, |wire| classify(wire.into()));
                            (raw.get(), message)
                        })
                        .collect(),
                )
            }
            Ok(_) | Err(_) => Line::NotJson,
        },
        _ => Line::NotJson,
    }
}

#[derive(Deserialize, Default)]
struct Params<'a> {
    #[serde(borrow, default, rename = "requestId")]
    request_id: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "progressToken")]
    progress_token: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "_meta")]
    meta: Option<Meta<'a>>,
}

#[derive(Deserialize, Default)]
struct Meta<'a> {
    #[serde(borrow, default, rename = "progressToken")]
    progress_token: Option<&'a RawValue>,
}

/// `params` parsed, when its text can hold `key` at all: most requests
/// carry no progress token, and a substring search is far cheaper than a
/// parse. A backslash anywhere could spell the key with escapes, so then
/// it is parsed whatever the search says.
fn params<'a>(raw: Option<Raw<'a>>, key: &str) -> Params<'a> {
    raw.filter(|raw| raw.contains(key) || raw.contains('\\'))
        .and_then(|raw| serde_json::from_str(raw).ok())
        .unwrap_or_default()
}

/// `params.requestId` of `notifications/cancelled`, as a key.
pub(crate) fn cancelled_id(raw: Option<Raw<'_>>) -> Option<String> {
    params(raw, "requestId")
        .request_id
        .and_then(|id| crate::request_id::key(id.get()).map(Cow::into_owned))
}

/// `params._meta.progressToken` of a request, as a key.
pub(crate) fn request_progress_token(raw: Option<Raw<'_>>) -> Option<String> {
    params(raw, "progressToken")
        .meta
        .and_then(|meta| meta.progress_token)
        .and_then(|token| crate::request_id::key(token.get()).map(Cow::into_owned))
}

/// `params.progressToken` of `notifications/progress`, as a key.
pub(crate) fn progress_token(raw: Option<Raw<'_>>) -> Option<String> {
    params(raw, "progressToken")
        .progress_token
        .and_then(|token| crate::request_id::key(token.get()).map(Cow::into_owned))
}

/// A batch of which `kept` elements pass: the line itself when all do,
/// else the kept elements (each byte-exact) as a new array, else nothing.
pub(crate) fn join_batch(line: &[u8], total: usize, kept: &[&str], out: &mut Vec<u8>) {
    if kept.len() == total {
        out.extend_from_slice(line);
    } else if !kept.is_empty() {
        out.push(b'[');
        for (i, element) in kept.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(element.as_bytes());
        }
        out.extend_from_slice(b"]\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Message<'_> {
        match parse(line.as_bytes()) {
            Line::One(message) => message,
            other => panic!("{line}: {other:?}"),
        }
    }

    /// JSON text is UTF-8: a byte that is not, in any part of the line,
    /// even one the session never reads, makes it no JSON (the guard then
    /// diverts it: a host decoding our stdout as UTF-8 would choke on it).
    #[test]
    fn a_line_that_is_not_utf8_anywhere_is_not_json() {
        for bad in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"x\":\"\xff\"}"[..],
            b"{\"jsonrpc\":\"2\xc3.0\",\"id\":1,\"result\":{}}",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"\xed\xa0\x80\"}}",
            b"[{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"x\":\"\xc0\xaf\"}]",
        ] {
            assert!(matches!(parse(bad), Line::NotJson), "{bad:?}");
        }
        // Non-ASCII that is UTF-8 passes, in a part the session reads or not.
        let good = "{\"jsonrpc\":\"2.0\",\"id\":\"é\",\"result\":{\"t\":\"日本\"},\"x\":\"ü\"}";
        assert!(matches!(one(good), Message::Response { .. }));
    }

    /// Params are parsed only when their text can hold the key, or any
    /// backslash could spell it with escapes.
    #[test]
    fn a_key_spelled_with_escapes_in_params_is_still_found() {
        match one(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"x","_meta":{"progress\u0054oken":7}}}"#,
        ) {
            Message::Request { params, .. } => {
                assert!(params.unwrap().contains("n\\u0061me"), "as sent");
                assert_eq!(request_progress_token(params).as_deref(), Some("7"));
            }
            other => panic!("{other:?}"),
        }
        match one(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"other":"named"}}"#) {
            Message::Request { params, .. } => {
                assert_eq!(request_progress_token(params), None);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn each_kind_of_message_is_told_apart() {
        match one(r#"{"jsonrpc":"2.0","id":"a\u0062","method":"tools/call","params":{"name":"x"}}"#)
        {
            Message::Request { id, method, params } => {
                assert_eq!(id, r#""a\u0062""#, "the id as sent");
                assert_eq!(method, "tools/call");
                assert_eq!(params, Some(r#"{"name":"x"}"#));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            one(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Message::Notification { .. }
        ));
        assert!(matches!(
            one(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#),
            Message::Notification { .. }
        ));
        assert!(matches!(
            one(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#),
            Message::Response { error: None, .. }
        ));
        assert!(matches!(
            one(r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}"#),
            Message::Response {
                error: Some(Some(-32601)),
                ..
            }
        ));
        assert!(matches!(one(r#"{"id":7}"#), Message::Invalid));
        assert!(matches!(one(r#"{"method":7}"#), Message::Invalid));
        assert!(matches!(parse(b"Loading..."), Line::NotJson));
        assert!(matches!(parse(b"[]"), Line::NotJson));
        assert!(matches!(parse(b"{\"id\":"), Line::NotJson));
    }

    #[test]
    fn a_batch_keeps_each_element_exact() {
        let line =
            br#"[{"jsonrpc":"2.0","id":1,"method":"a"}, {"jsonrpc":"2.0","method":"b"},{"id":3}]"#;
        let Line::Batch(elements) = parse(line) else {
            panic!("a batch")
        };
        assert_eq!(elements.len(), 3);
        assert_eq!(elements[0].0, r#"{"jsonrpc":"2.0","id":1,"method":"a"}"#);
        assert!(matches!(elements[1].1, Message::Notification { .. }));
        assert!(matches!(elements[2].1, Message::Invalid));
        // Only an array of objects is a batch (as the guard has it).
        assert!(matches!(parse(br#"[{"id":1},3]"#), Line::NotJson));
    }

    #[test]
    fn params_fields_the_session_reads() {
        let raw = |s: &'static str| Some(s);
        assert_eq!(
            cancelled_id(raw(r#"{"requestId":1.0}"#)).as_deref(),
            Some("1")
        );
        assert_eq!(
            request_progress_token(raw(r#"{"_meta":{"progressToken":"t"}}"#)).as_deref(),
            Some(r#""t""#)
        );
        assert_eq!(
            progress_token(raw(r#"{"progressToken":5}"#)).as_deref(),
            Some("5")
        );
    }
}

/// The fast path (`scan`) against serde_json, the definition: on every
/// line both must say the same, whether the fast path answers or not.
#[cfg(test)]
pub(super) mod same_as_serde {
    use super::*;
    use proptest::prelude::*;

    #[track_caller]
    fn same(text: &str) {
        let ours = format!("{:?}", parse(text.as_bytes()));
        let theirs = format!("{:?}", parse_with_serde(text.as_bytes(), text));
        assert_eq!(ours, theirs, "{text:?}");
    }

    #[test]
    fn the_edges_where_json_is_strict() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"a"}"#,
            r#"  {"jsonrpc":"2.0","id":1,"method":"a"}  "#,
            "{\"id\":1,\"method\":\"a\"}\r\n",
            r#"{}"#,
            r#"{ }"#,
            r#"{"id":null,"method":"n"}"#,
            r#"{"id":1,"result":null}"#,
            r#"{"id":1,"result":{},"error":null}"#,
            r#"{"id":1,"error":{"code":-32000,"message":"x"}}"#,
            r#"{"id":1,"method":null}"#,
            r#"{"id":1,"method":7}"#,
            r#"{"id":1,"method":"a\nb"}"#,
            r#"{"id":1,"method":"a\u0062"}"#,
            r#"{"id":1,"id":2,"method":"a"}"#,
            r#"{"x":1,"x":2,"id":1,"method":"a"}"#,
            r#"{"i\u0064":1,"method":"a"}"#,
            r#"{"id":01,"method":"a"}"#,
            r#"{"id":-0,"method":"a"}"#,
            r#"{"id":1.,"method":"a"}"#,
            r#"{"id":.5,"method":"a"}"#,
            r#"{"id":1e,"method":"a"}"#,
            r#"{"id":1e+5,"method":"a"}"#,
            r#"{"id":-,"method":"a"}"#,
            r#"{"id":1,"method":"a",}"#,
            r#"{"id":1,,"method":"a"}"#,
            r#"{"id":[1,],"method":"a"}"#,
            r#"{"id":tru,"method":"a"}"#,
            r#"{"id":true,"method":"a"}"#,
            r#"{"id":1,"method":"a"} x"#,
            r#"{"id":1,"method":"a"}{}"#,
            r#"{"id":1 "method":"a"}"#,
            r#"{"id":"\x"}"#,
            r#"{"id":"\u12G4","method":"a"}"#,
            r#"{"id":"\uD800","method":"a"}"#,
            "{\"id\":\"a\tb\",\"method\":\"a\"}",
            "{\"id\":\"a\u{7f}b\",\"method\":\"a\"}",
            r#"{"id":"é","method":"ü","params":{"t":"日本"}}"#,
            r#"{"id":1,"method":"a","params":[[[[[[]]]]]]}"#,
            r#"{"id":1,"method":"a","params":{"a":{"b":[1,2,{"c":null}]}}}"#,
            r#"{"id":1,"method":"a","params":"#,
            r#"{"id":1,"method":"a""#,
            "{",
            "{\"",
        ] {
            same(text);
        }
        // Long strings, read eight bytes at a time, with a stop (a quote,
        // an escape, a raw control character) at every place in a word.
        for at in 0..20 {
            for stop in ["\\\"", "\\n", "\t", "\u{1f}", "é"] {
                let text = format!("{}{stop}{}", "a".repeat(at), "b".repeat(20 - at));
                same(&format!(r#"{{"id":1,"method":"a","params":"{text}"}}"#));
                same(&format!(r#"{{"id":"{text}","method":"a"}}"#));
            }
        }
        // Nesting at, around and past the fast path's own bound.
        for depth in [62, 63, 64, 65, 127, 128, 129, 200] {
            let deep = format!(
                r#"{{"id":1,"method":"a","params":{}{}}}"#,
                "[".repeat(depth),
                "]".repeat(depth)
            );
            same(&deep);
        }
    }

    /// The fast path is taken for what MCP sends most.
    #[test]
    fn plain_messages_take_the_fast_path() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"q":"a\nb"}}}"#,
            r#"{"jsonrpc":"2.0","id":"r-1","result":{"content":[{"type":"text","text":"say \"hi\""}]}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}"#,
        ] {
            assert!(scan::object(text).is_some(), "{text}");
            same(text);
        }
    }

    /// JSON values whose objects use the keys a message has.
    pub(in crate::session) fn json() -> impl Strategy<Value = serde_json::Value> {
        use serde_json::Value;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            "[a-z\"\\\\\n\t\u{1}é日/ ]{0,24}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
                prop::collection::vec(
                    (
                        prop_oneof![
                            Just("id".to_string()),
                            Just("method".to_string()),
                            Just("params".to_string()),
                            Just("result".to_string()),
                            Just("error".to_string()),
                            Just("jsonrpc".to_string()),
                            Just("name".to_string()),
                            "[a-z\\\\\"]{0,4}",
                        ],
                        inner
                    ),
                    0..5
                )
                .prop_map(|pairs| serde_json::Value::Object(pairs.into_iter().collect())),
            ]
        })
    }

    /// A message with any of the known keys, any values, sometimes a key
    /// twice, written out and then maybe broken at one place.
    fn line() -> impl Strategy<Value = String> {
        let field = (
            prop_oneof![
                Just("id"),
                Just("method"),
                Just("params"),
                Just("result"),
                Just("error"),
                Just("jsonrpc"),
                Just("other"),
            ],
            json(),
        );
        (
            prop::collection::vec(field, 0..6),
            prop::option::of((any::<prop::sample::Index>(), "[ -~é]{0,2}", 0usize..3)),
        )
            .prop_map(|(fields, edit)| {
                let body: Vec<String> = fields
                    .iter()
                    .map(|(key, value)| format!("\"{key}\":{value}"))
                    .collect();
                let mut text = format!("{{{}}}\n", body.join(","));
                if let Some((at, insert, remove)) = edit {
                    let chars: Vec<char> = text.chars().collect();
                    let at = at.index(chars.len());
                    let end = (at + remove).min(chars.len());
                    text = chars[..at]
                        .iter()
                        .chain(insert.chars().collect::<Vec<_>>().iter())
                        .chain(chars[end..].iter())
                        .collect();
                }
                text
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn any_line_gets_the_same_answer(text in line()) {
            same(&text);
        }
    }
}
