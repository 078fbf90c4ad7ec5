//! A client line read as the most permissive of the parsers real servers
//! use reads it: the union of Node's `JSON.parse` and Python's
//! `json.loads`. That is JSON plus `NaN`, `Infinity` and `-Infinity`
//! (Python), `\u` escapes of lone surrogates (both), any depth of nesting
//! (serde_json stops at 128), and for a key given twice the last one
//! (both). The audit reads a client line this way whenever the strict
//! fast path is not sure, so that what it journals is what the server
//! runs: the audit is never weaker than the server's parser.
//!
//! Iterative, so no line can exhaust the stack; nothing is built but the
//! few fields the session reads. A key the audit reads (`jsonrpc`, `id`,
//! `method`, `params`; `name` and `arguments` inside a call's `params`)
//! is reported when it appears twice at its level (parsers that keep the
//! first and parsers that keep the last would run different requests),
//! and when it is spelled otherwise but folds to it (`fold.rs`: `Name`
//! or `param\u017f` read as `name` or `params` by Go's and .NET's
//! case-insensitive readers).

use std::borrow::Cow;

use super::fold::{CALL_KEYS, TOP_KEYS, folds_to};
use super::scan::Fields;

/// One top-level object as the permissive parsers read it.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Object<'a> {
    /// The fields, as [`super::scan`] gives them (null ones absent, but
    /// `result`, which a success response may hold as null).
    pub fields: Fields<'a>,
    /// `method` is there but not a string: no request at all.
    pub method_not_string: bool,
    /// `id` is there, and null (a request, for JSON-RPC 2.0).
    pub null_id: bool,
    /// Which of `jsonrpc`, `id`, `method`, `params` appeared more than once.
    pub duplicates: Vec<&'static str>,
    /// Which of them appeared spelled otherwise (see [`super::fold`]).
    pub variants: Vec<&'static str>,
}

/// A call's `params` as the permissive parsers read them.
#[derive(Debug, PartialEq)]
pub(crate) enum CallParams<'a> {
    /// Not an object (an array, a string, a number…).
    NotObject,
    Object {
        /// `name`: absent, a string (the last, decoded), or something else.
        name: Option<Result<String, ()>>,
        /// `arguments`: the last one's exact text.
        arguments: Option<&'a str>,
        /// `requestState` and `inputResponses` (a 2026-07-28 retry): the
        /// last one's exact text each, read at the top level only.
        request_state: Option<&'a str>,
        input_responses: Option<&'a str>,
        /// A key the audit reads given twice or spelled otherwise: which,
        /// and whether it was a spelling (else a repeat).
        ambiguous: Option<(&'static str, bool)>,
    },
}

/// A whole line.
#[derive(Debug, PartialEq)]
pub(crate) enum Reading<'a> {
    /// One object.
    One(Object<'a>),
    /// A batch: each element's exact text, and the element (None when it
    /// is not an object).
    Batch(Vec<(&'a str, Option<Object<'a>>)>),
    /// Not an object or a batch: what no permissive parser accepts, or
    /// a value no server runs (a number, a string, an empty array).
    NotJson,
}

/// Whether `text` holds anything only the permissive parsers accept
/// (`NaN`, `Infinity`, a lone surrogate escape), once read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reach {
    pub nonstandard: bool,
}

/// Read `text` (the line, its newline included or not).
pub(crate) fn read(text: &str) -> (Reading<'_>, Reach) {
    let mut reader = Reader::new(text);
    let reading = reader.line().unwrap_or(Reading::NotJson);
    (reading, reader.reach)
}

/// A call's `params`, read permissively: the last of each of
/// [`CALL_KEYS`], and whether one is ambiguous.
pub(crate) fn call_params(params: &str) -> CallParams<'_> {
    let mut reader = Reader::new(params);
    let mut last: [Option<&str>; CALL_KEYS.len()] = [None; CALL_KEYS.len()];
    let mut ambiguous = None;
    reader.space();
    let read = reader.object(&mut |key, value| {
        let Some(slot) =
            folds_to(&key, &CALL_KEYS).and_then(|t| CALL_KEYS.iter().position(|k| *k == t))
        else {
            return;
        };
        let target = CALL_KEYS[slot];
        if key != target {
            ambiguous.get_or_insert((target, true));
        } else if last[slot].replace(value).is_some() {
            ambiguous.get_or_insert((target, false));
        }
    });
    reader.space();
    if read.is_none() || reader.at != reader.bytes.len() {
        return CallParams::NotObject;
    }
    let [name, arguments, request_state, input_responses] = last;
    CallParams::Object {
        name: name.map(|raw| Reader::new(raw).string_value().ok_or(())),
        arguments,
        request_state,
        input_responses,
        ambiguous,
    }
}

/// `text` is one JSON value strict JSON can carry: no `NaN`, `Infinity`
/// or lone surrogate escape.
pub(crate) fn is_strict(text: &str) -> bool {
    let mut reader = Reader::new(text);
    reader.value().is_some() && {
        reader.space();
        reader.at == reader.bytes.len() && !reader.reach.nonstandard
    }
}

struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    reach: Reach,
}

impl<'a> Reader<'a> {
    fn new(text: &'a str) -> Reader<'a> {
        Reader {
            text,
            bytes: text.as_bytes(),
            at: 0,
            reach: Reach::default(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.next()? == byte).then_some(())
    }

    fn line(&mut self) -> Option<Reading<'a>> {
        self.space();
        let reading = match self.peek()? {
            b'{' => Reading::One(self.top_object()?),
            b'[' => {
                self.at += 1;
                let mut elements = Vec::new();
                self.space();
                if self.peek() == Some(b']') {
                    return None; // an empty array is no batch
                }
                loop {
                    self.space();
                    let start = self.at;
                    let element = if self.peek() == Some(b'{') {
                        Some(self.top_object()?)
                    } else {
                        self.value()?;
                        None
                    };
                    elements.push((&self.text[start..self.at], element));
                    self.space();
                    match self.next()? {
                        b',' => continue,
                        b']' => break,
                        _ => return None,
                    }
                }
                Reading::Batch(elements)
            }
            _ => {
                self.value()?;
                Reading::NotJson
            }
        };
        self.space();
        (self.at == self.bytes.len()).then_some(reading)
    }

    /// One object, its top-level fields read.
    fn top_object(&mut self) -> Option<Object<'a>> {
        let mut object = Object::default();
        let mut counts = [0u8; 6];
        let mut method: Option<&'a str> = None;
        self.object(&mut |key, value| {
            let slot = match &*key {
                "id" => 0,
                "method" => 1,
                "params" => 2,
                "result" => 3,
                "error" => 4,
                "jsonrpc" => 5,
                other => {
                    if let Some(target) = folds_to(other, &TOP_KEYS)
                        && !object.variants.contains(&target)
                    {
                        object.variants.push(target);
                    }
                    return;
                }
            };
            counts[slot] = counts[slot].saturating_add(1);
            let raw = (value != "null").then_some(value);
            match slot {
                0 => {
                    object.fields.id = raw;
                    object.null_id = raw.is_none();
                }
                1 => method = raw,
                2 => object.fields.params = raw,
                3 => object.fields.result = Some(value),
                4 => object.fields.error = raw,
                _ => {}
            }
        })?;
        for (slot, key) in [(5, "jsonrpc"), (0, "id"), (1, "method"), (2, "params")] {
            if counts[slot] > 1 {
                object.duplicates.push(key);
            }
        }
        if let Some(text) = method {
            match Reader::new(text).string_value() {
                Some(decoded) => object.fields.method = Some(decoded.into()),
                None => object.method_not_string = true,
            }
        }
        Some(object)
    }

    /// An object: each key (decoded) and its value's exact text go to
    /// `field`, in order.
    fn object(&mut self, field: &mut dyn FnMut(Cow<'a, str>, &'a str)) -> Option<()> {
        self.expect(b'{')?;
        self.space();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Some(());
        }
        loop {
            self.space();
            let key = self.string()?;
            self.space();
            self.expect(b':')?;
            self.space();
            let start = self.at;
            self.value()?;
            let value = &self.text[start..self.at];
            field(key, value);
            self.space();
            match self.next()? {
                b',' => continue,
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    /// Any one value, skipped (containers without recursion).
    fn value(&mut self) -> Option<()> {
        let mut open: Vec<u8> = Vec::new();
        loop {
            self.space();
            match self.peek()? {
                b'{' => {
                    self.at += 1;
                    self.space();
                    if self.peek() == Some(b'}') {
                        self.at += 1;
                    } else {
                        open.push(b'}');
                        self.key_colon()?;
                        continue;
                    }
                }
                b'[' => {
                    self.at += 1;
                    self.space();
                    if self.peek() == Some(b']') {
                        self.at += 1;
                    } else {
                        open.push(b']');
                        continue;
                    }
                }
                b'"' => {
                    self.string()?;
                }
                _ => self.scalar()?,
            }
            // After a value: close what it ends, or go on to the next.
            loop {
                let Some(&close) = open.last() else {
                    return Some(());
                };
                self.space();
                match self.next()? {
                    b',' => {
                        if close == b'}' {
                            self.key_colon()?;
                        }
                        break;
                    }
                    byte if byte == close => {
                        open.pop();
                    }
                    _ => return None,
                }
            }
        }
    }

    fn key_colon(&mut self) -> Option<()> {
        self.space();
        self.string()?;
        self.space();
        self.expect(b':')
    }

    /// A number, a literal, or what only Python accepts.
    fn scalar(&mut self) -> Option<()> {
        let rest = &self.bytes[self.at..];
        for (word, nonstandard) in [
            (&b"true"[..], false),
            (b"false", false),
            (b"null", false),
            (b"NaN", true),
            (b"Infinity", true),
            (b"-Infinity", true),
        ] {
            if rest.starts_with(word) {
                self.at += word.len();
                self.reach.nonstandard |= nonstandard;
                return Some(());
            }
        }
        self.number()
    }

    /// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        Some(())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
    }

    /// A string, decoded: a lone surrogate escape becomes U+FFFD (what a
    /// Rust string can hold of it), counted as nonstandard. A raw control
    /// character or a bad escape is refused, as both parsers refuse it.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.expect(b'"')?;
        let start = self.at;
        loop {
            match self.next()? {
                b'"' => return Some(Cow::Borrowed(&self.text[start..self.at - 1])),
                b'\\' => break,
                byte if byte < 0x20 => return None,
                _ => {}
            }
        }
        let mut out = String::from(&self.text[start..self.at - 1]);
        self.at -= 1;
        loop {
            match self.next()? {
                b'"' => return Some(Cow::Owned(out)),
                b'\\' => {
                    let decoded = match self.next()? {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return None,
                    };
                    out.push(decoded);
                }
                byte if byte < 0x20 => return None,
                _ => {
                    // The whole UTF-8 character (the text is a str).
                    let from = self.at - 1;
                    let mut to = self.at;
                    while !self.text.is_char_boundary(to) {
                        to += 1;
                    }
                    out.push_str(&self.text[from..to]);
                    self.at = to;
                }
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.bytes.get(self.at..self.at + 4)?;
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        let value = u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()?;
        self.at += 4;
        Some(value)
    }

    /// After `\u`: a character, a surrogate pair, or a lone surrogate.
    fn unicode_escape(&mut self) -> Option<char> {
        let high = self.hex4()?;
        if (0xD800..0xDC00).contains(&high) && self.bytes[self.at..].starts_with(b"\\u") {
            let save = self.at;
            self.at += 2;
            match self.hex4() {
                Some(low) if (0xDC00..0xE000).contains(&low) => {
                    let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                    return char::from_u32(code);
                }
                // Not a pair: the high one is lone; the next escape is read
                // on its own.
                Some(_) | None => self.at = save,
            }
        }
        match char::from_u32(high) {
            Some(c) => Some(c),
            None => {
                self.reach.nonstandard = true;
                Some('\u{FFFD}')
            }
        }
    }

    /// The whole text as one string value, decoded; None if it is not one.
    fn string_value(&mut self) -> Option<String> {
        self.space();
        let value = self.string()?.into_owned();
        self.space();
        (self.at == self.bytes.len()).then_some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Object<'_> {
        match read(text).0 {
            Reading::One(object) => object,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn what_only_the_permissive_parsers_accept_is_read_and_flagged() {
        for text in [
            r#"{"id":1,"method":"tools/call","params":{"n":NaN}}"#,
            r#"{"id":1,"method":"tools/call","params":{"n":Infinity}}"#,
            r#"{"id":1,"method":"tools/call","params":{"n":-Infinity}}"#,
            r#"{"id":1,"method":"tools/call","params":{"s":"\ud800"}}"#,
            r#"{"id":1,"method":"tools/call","params":{"s":"\udc00\ud800"}}"#,
        ] {
            let (reading, reach) = read(text);
            let Reading::One(object) = reading else {
                panic!("{text}")
            };
            assert_eq!(
                object.fields.method.as_deref(),
                Some("tools/call"),
                "{text}"
            );
            assert!(reach.nonstandard, "{text}");
        }
        // A surrogate pair is standard.
        let (_, reach) = read(r#"{"id":1,"method":"a","params":{"s":"\ud83d\ude00"}}"#);
        assert!(!reach.nonstandard);
        // A lone surrogate in a name is read as U+FFFD.
        assert_eq!(
            call_params(r#"{"name":"rm\ud800"}"#),
            CallParams::Object {
                name: Some(Ok("rm\u{FFFD}".into())),
                arguments: None,
                request_state: None,
                input_responses: None,
                ambiguous: None
            }
        );
    }

    #[test]
    fn the_last_of_duplicate_keys_counts_and_the_duplicate_is_reported() {
        let object = one(r#"{"jsonrpc":"2.0","method":"ping","id":1,"method":"tools/call"}"#);
        assert_eq!(object.fields.method.as_deref(), Some("tools/call"));
        assert_eq!(object.duplicates, ["method"]);
        let object = one(r#"{"id":1,"id":2,"m\u0065thod":"a","params":{},"params":[]}"#);
        assert_eq!(object.fields.id, Some("2"));
        assert_eq!(object.duplicates, ["id", "params"]);
        assert_eq!(
            call_params(r#"{"name":"safe","arguments":{},"n\u0061me":"rm"}"#),
            CallParams::Object {
                name: Some(Ok("rm".into())),
                arguments: Some("{}"),
                request_state: None,
                input_responses: None,
                ambiguous: Some(("name", false))
            }
        );
        // Keys nobody reads may repeat.
        assert!(
            one(r#"{"x":1,"x":2,"id":1,"method":"a"}"#)
                .duplicates
                .is_empty()
        );
        assert_eq!(
            call_params(r#"{"arguments":{"name":1,"name":2}}"#),
            CallParams::Object {
                name: None,
                arguments: Some(r#"{"name":1,"name":2}"#),
                request_state: None,
                input_responses: None,
                ambiguous: None
            }
        );
    }

    /// A key the audit reads, spelled in another case or folding, is one
    /// Go's encoding/json (and .NET's case-insensitive readers) take for it.
    #[test]
    fn a_key_spelled_otherwise_is_reported_as_its_variant() {
        for (text, variant) in [
            (r#"{"id":1,"method":"a","Params":{}}"#, "params"),
            (r#"{"id":1,"method":"a","param\u017f":{}}"#, "params"),
            ("{\"id\":1,\"method\":\"a\",\"paramſ\":{}}", "params"),
            (r#"{"id":1,"method":"a","METHOD":"b"}"#, "method"),
            (r#"{"id":1,"Id":2,"method":"a"}"#, "id"),
            (r#"{"jsonRPC":"2.0","id":1,"method":"a"}"#, "jsonrpc"),
        ] {
            let object = one(text);
            assert_eq!(object.variants, [variant], "{text}");
            assert!(object.duplicates.is_empty(), "{text}");
        }
        // Keys that fold to no audited key are anybody's.
        for text in [
            r#"{"id":1,"method":"a","paramz":{},"ids":1,"Result":1}"#,
            "{\"id\":1,\"method\":\"a\",\"ıd\":2}",
        ] {
            assert!(one(text).variants.is_empty(), "{text}");
        }
        for params in [
            r#"{"name":"a","Name":"b"}"#,
            r#"{"NAME":"b"}"#,
            r#"{"name":"a","ARGUMENTS":{}}"#,
            r#"{"name":"a","argument\u017f":{}}"#,
            r#"{"name":"a","requeststate":"s"}"#,
            r#"{"name":"a","InputResponses":{}}"#,
        ] {
            assert!(
                matches!(
                    call_params(params),
                    CallParams::Object {
                        ambiguous: Some((_, true)),
                        ..
                    }
                ),
                "{params}"
            );
        }
        assert_eq!(folds_to("\u{212A}ey", &["key"]), Some("key"), "Kelvin");
    }

    #[test]
    fn a_null_id_is_told_from_none() {
        assert!(one(r#"{"id":null,"method":"a"}"#).null_id);
        assert!(!one(r#"{"method":"a"}"#).null_id);
        assert!(!one(r#"{"id":1,"method":"a"}"#).null_id);
    }

    #[test]
    fn call_params_of_another_shape_and_names_of_another_type() {
        for params in ["[\"secret\"]", "\"x\"", "7", "null", "{", "{} x"] {
            assert_eq!(call_params(params), CallParams::NotObject, "{params}");
        }
        assert!(matches!(
            call_params(r#"{"name":7}"#),
            CallParams::Object {
                name: Some(Err(())),
                ..
            }
        ));
        assert!(is_strict(r#"{"a":[1,2.5e3,"\ud83d\ude00"]}"#));
        for text in [r#"{"a":NaN}"#, r#"[Infinity]"#, r#""\ud800""#, "{", "1 2"] {
            assert!(!is_strict(text), "{text}");
        }
    }

    #[test]
    fn any_depth_is_read_without_recursion() {
        let deep = format!(
            r#"{{"id":1,"method":"tools/call","params":{{"name":"x","a":{}1{}}}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(one(&deep).fields.method.as_deref(), Some("tools/call"));
        let unbalanced = format!(r#"{{"id":1,"method":"a","params":{}}}"#, "[".repeat(1000));
        assert_eq!(read(&unbalanced).0, Reading::NotJson);
    }

    #[test]
    fn what_neither_parser_accepts_is_not_json() {
        for text in [
            "",
            "Loading...",
            "{",
            r#"{"id":1,"method":"a"} x"#,
            r#"{"id":1,"method":"a"}{}"#,
            "{\"id\":1,\"method\":\"a\tb\"}",
            r#"{"id":01,"method":"a"}"#,
            r#"{"id":1,"method":"a",}"#,
            r#"{'id':1}"#,
            r#"{"id":nan}"#,
            r#"{"id":+1}"#,
            r#"{"id":"\x"}"#,
            r#"{"id":"\u12G4"}"#,
            "\u{feff}{\"id\":1,\"method\":\"a\"}",
            "[]",
        ] {
            assert_eq!(read(text).0, Reading::NotJson, "{text:?}");
        }
    }

    #[test]
    fn a_batch_keeps_each_element_exact() {
        let text = r#"[{"id":1,"method":"a"} , 7,{"method":"b","method":"c"}]"#;
        let Reading::Batch(elements) = read(text).0 else {
            panic!("a batch")
        };
        assert_eq!(elements[0].0, r#"{"id":1,"method":"a"}"#);
        assert_eq!(elements[1], ("7", None));
        assert_eq!(elements[2].1.as_ref().unwrap().duplicates, ["method"]);
    }

    #[test]
    fn a_method_that_is_not_a_string_is_marked() {
        let object = one(r#"{"id":1,"method":7}"#);
        assert!(object.method_not_string && object.fields.method.is_none());
        let object = one(r#"{"id":null,"method":"n","result":null}"#);
        assert_eq!(object.fields.id, None);
        assert_eq!(object.fields.result, Some("null"));
    }
}

/// On strict JSON with no key the session reads given twice, the
/// permissive reading and serde_json's (the strict definition) agree.
#[cfg(test)]
mod same_as_strict {
    use super::*;
    use proptest::prelude::*;

    fn strict(text: &str) -> Option<Fields<'_>> {
        #[derive(serde::Deserialize)]
        struct Wire<'a> {
            #[serde(borrow, default)]
            id: Option<&'a serde_json::value::RawValue>,
            #[serde(borrow, default)]
            method: Option<Cow<'a, str>>,
            #[serde(borrow, default)]
            params: Option<&'a serde_json::value::RawValue>,
            #[serde(borrow, default)]
            error: Option<&'a serde_json::value::RawValue>,
        }
        let wire: Wire = serde_json::from_str(text).ok()?;
        let result = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text)
            .ok()?
            .contains_key("result");
        Some(Fields {
            id: wire.id.map(|r| r.get()),
            method: wire.method,
            params: wire.params.map(|r| r.get()),
            result: result.then_some("?"),
            error: wire.error.map(|r| r.get()),
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn strict_objects_read_the_same(value in super::super::message::same_as_serde::json()) {
            // A serde_json map has no duplicate keys.
            let text = value.to_string();
            if let Some(theirs) = strict(&text) {
                let Reading::One(ours) = read(&text).0 else {
                    panic!("{text}")
                };
                prop_assert_eq!(ours.fields.id, theirs.id, "{}", text);
                prop_assert_eq!(ours.fields.method, theirs.method, "{}", text);
                prop_assert_eq!(ours.fields.params, theirs.params, "{}", text);
                prop_assert_eq!(ours.fields.error, theirs.error, "{}", text);
                prop_assert_eq!(ours.fields.result.is_some(), theirs.result.is_some(), "{}", text);
                prop_assert!(ours.duplicates.is_empty());
                prop_assert!(ours.variants.is_empty());
                if let Some(params) = ours.fields.params.filter(|p| p.starts_with('{')) {
                    let strict_name = serde_json::from_str::<serde_json::Value>(params)
                        .ok()
                        .and_then(|p| p.get("name").map(|n| n.as_str().map(str::to_string).ok_or(())));
                    let read = call_params(params);
                    prop_assert!(
                        matches!(&read, CallParams::Object { name, ambiguous: None, .. } if *name == strict_name),
                        "{}: {:?}", text, read
                    );
                }
            } else if value.is_object() {
                // Strict JSON whose fields have other types: still an object.
                prop_assert_ne!(read(&text).0, Reading::NotJson, "{}", text);
            }
        }
    }
}
