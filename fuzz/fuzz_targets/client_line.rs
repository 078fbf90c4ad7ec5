//! Fuzz the session's reading of client lines against two references that
//! read them as permissive servers do:
//! - Python's json.loads on bytes decoded with U+FFFD, lines split on LF
//!   and also on CR as universal newlines split them, NaN/Infinity, lone
//!   surrogates, the last of duplicate keys, any depth;
//! - Go's encoding/json through a json.Decoder on the whole stream (the
//!   Go SDK's stdio transport): values one after another whatever the
//!   lines, keys matched to fields without regard to case (`ſ` folded to
//!   `s`, `K` to `k`), the last match kept, and a tools/call run whether
//!   it has an id or not.
//!
//! Whatever a reference would run as a tools/call in what mcp-bound
//! passes on must have an mcp_request entry with that name: the audit is
//! never weaker than the server's parser.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[derive(Debug)]
enum Value {
    Null,
    Bool,
    Number,
    Str(String),
    Array(Vec<Value>),
    /// Keys in order; the last of a key counts.
    Object(Vec<(String, Value)>),
}

impl Value {
    fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(fields) => fields.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// As Go's encoding/json finds a struct field's value: the last key
    /// that equals `key` under its folding (ASCII case, ſ, K).
    fn get_folded(&self, key: &str) -> Option<&Value> {
        let fold = |c: char| match c {
            '\u{17F}' => 's',
            '\u{212A}' => 'k',
            c => c.to_ascii_lowercase(),
        };
        let folded = |k: &str| k.chars().map(fold).eq(key.chars());
        match self {
            Value::Object(fields) => fields.iter().rev().find(|(k, _)| folded(k)).map(|(_, v)| v),
            _ => None,
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while matches!(self.s.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, word: &[u8]) -> bool {
        if self.s[self.at..].starts_with(word) {
            self.at += word.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Option<Value> {
        self.ws();
        match *self.s.get(self.at)? {
            b'{' => {
                self.at += 1;
                let mut fields = Vec::new();
                self.ws();
                if self.eat(b"}") {
                    return Some(Value::Object(fields));
                }
                loop {
                    self.ws();
                    let key = self.string()?;
                    self.ws();
                    if !self.eat(b":") {
                        return None;
                    }
                    let value = self.value()?;
                    fields.push((key, value));
                    self.ws();
                    if self.eat(b",") {
                        continue;
                    }
                    return self.eat(b"}").then_some(Value::Object(fields));
                }
            }
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                self.ws();
                if self.eat(b"]") {
                    return Some(Value::Array(items));
                }
                loop {
                    items.push(self.value()?);
                    self.ws();
                    if self.eat(b",") {
                        continue;
                    }
                    return self.eat(b"]").then_some(Value::Array(items));
                }
            }
            b'"' => self.string().map(Value::Str),
            _ => {
                if self.eat(b"true") || self.eat(b"false") {
                    return Some(Value::Bool);
                }
                if self.eat(b"null") {
                    return Some(Value::Null);
                }
                if self.eat(b"NaN") || self.eat(b"Infinity") || self.eat(b"-Infinity") {
                    return Some(Value::Number);
                }
                self.number().then_some(Value::Number)
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while self.s.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        self.at - start
    }

    fn number(&mut self) -> bool {
        self.eat(b"-");
        if self.eat(b"0") {
        } else if !matches!(self.s.get(self.at), Some(b'1'..=b'9')) || self.digits() == 0 {
            return false;
        }
        if self.eat(b".") && self.digits() == 0 {
            return false;
        }
        if self.eat(b"e") || self.eat(b"E") {
            let _ = self.eat(b"+") || self.eat(b"-");
            if self.digits() == 0 {
                return false;
            }
        }
        true
    }

    fn hex4(&mut self) -> Option<u32> {
        let text = std::str::from_utf8(self.s.get(self.at..self.at + 4)?).ok()?;
        if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.at += 4;
        u32::from_str_radix(text, 16).ok()
    }

    fn string(&mut self) -> Option<String> {
        if !self.eat(b"\"") {
            return None;
        }
        let mut units: Vec<u16> = Vec::new();
        let mut out = String::new();
        let flush = |units: &mut Vec<u16>, out: &mut String| {
            out.extend(char::decode_utf16(units.drain(..)).map(|c| c.unwrap_or('\u{FFFD}')));
        };
        loop {
            let b = *self.s.get(self.at)?;
            self.at += 1;
            match b {
                b'"' => {
                    flush(&mut units, &mut out);
                    return Some(out);
                }
                b'\\' => {
                    let e = *self.s.get(self.at)?;
                    self.at += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            units.push(self.hex4()? as u16);
                            continue;
                        }
                        _ => return None,
                    };
                    flush(&mut units, &mut out);
                    out.push(c);
                }
                b if b < 0x20 => return None,
                _ => {
                    flush(&mut units, &mut out);
                    // The text is valid UTF-8 (decoded with U+FFFD first).
                    let start = self.at - 1;
                    let len = match b {
                        0x00..=0x7f => 1,
                        0xc0..=0xdf => 2,
                        0xe0..=0xef => 3,
                        _ => 4,
                    };
                    self.at = start + len;
                    out.push_str(std::str::from_utf8(self.s.get(start..self.at)?).ok()?);
                }
            }
        }
    }
}

fn parse(text: &str) -> Option<Value> {
    let mut parser = Parser { s: text.as_bytes(), at: 0 };
    let value = parser.value()?;
    parser.ws();
    (parser.at == parser.s.len()).then_some(value)
}

/// The values a stream decoder reads from `text`, one after another
/// whatever the lines, until the first it cannot read (Go's json.Decoder
/// stops there). Go refuses NaN and Infinity, so a value holding one ends
/// the stream as well.
fn stream(text: &str) -> Vec<Value> {
    let mut parser = Parser { s: text.as_bytes(), at: 0 };
    let mut values = Vec::new();
    loop {
        parser.ws();
        if parser.at == parser.s.len() {
            return values;
        }
        let start = parser.at;
        let Some(value) = parser.value() else {
            return values;
        };
        let raw = &text[start..parser.at];
        if raw.contains("NaN") || raw.contains("Infinity") {
            // Outside a string these are Go's syntax errors; inside one,
            // a false stop only shortens what the reference runs.
            return values;
        }
        values.push(value);
    }
}

/// A batch's elements, or the one message.
fn messages(value: Value) -> Vec<Value> {
    match value {
        Value::Array(items) => items,
        other => vec![other],
    }
}

/// The tool names of the tools/call messages a Go server runs in these
/// bytes: a name that is not a string runs as "" there, read here as None.
fn go_would_run(bytes: &[u8]) -> Vec<Option<String>> {
    let text = String::from_utf8_lossy(bytes);
    let mut names = Vec::new();
    for value in stream(&text) {
        for message in &messages(value) {
            let is_call =
                matches!(message.get_folded("method"), Some(Value::Str(m)) if m == "tools/call");
            if is_call {
                let params = message.get_folded("params");
                names.push(match params.and_then(|p| p.get_folded("name")) {
                    Some(Value::Str(name)) => Some(name.clone()),
                    _ => None,
                });
            }
        }
    }
    names
}

/// The tool names of the tools/call requests a server would run in these
/// bytes (the name as a string, or None), for each way servers split
/// lines: on LF only (Node's readers, the TypeScript SDK), and on LF, CRLF
/// and a lone CR (Python's universal newlines).
fn would_run(bytes: &[u8]) -> [Vec<Option<String>>; 2] {
    let text = String::from_utf8_lossy(bytes);
    [
        text.split('\n').collect::<Vec<_>>(),
        text.split(['\n', '\r']).collect(),
    ]
    .map(|lines| {
        let mut names = Vec::new();
        for line in lines {
            let Some(value) = parse(line) else { continue };
            for message in &messages(value) {
                let is_call =
                    matches!(message.get("method"), Some(Value::Str(m)) if m == "tools/call");
                let has_id = !matches!(message.get("id"), None | Some(Value::Null));
                if is_call && has_id {
                    names.push(match message.get("params").and_then(|p| p.get("name")) {
                        Some(Value::Str(name)) => Some(name.clone()),
                        _ => None,
                    });
                }
            }
        }
        names
    })
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, data)) = input.split_first() else {
        return;
    };
    // One line: its newline at the end (or none, for the last line).
    if data.contains(&b'\n') {
        return;
    }
    let last = mode & 1 == 1;
    let line = if last { data.to_vec() } else { [data, b"\n"].concat() };
    let (forwarded, requests) = mcp_bound::fuzz_client_line(&line, last);
    let journaled: Vec<Option<String>> = requests
        .into_iter()
        .filter(|(method, _)| method.as_deref() == Some("tools/call"))
        .map(|(_, name)| name)
        .collect();
    let [lf, universal] = would_run(&forwarded);
    for reading in [lf, universal, go_would_run(&forwarded)] {
        let mut left = journaled.clone();
        for name in reading {
            let Some(at) = left.iter().position(|n| *n == name) else {
                panic!(
                    "a tools/call {name:?} reaches the server with no entry: {:?}",
                    String::from_utf8_lossy(&line)
                );
            };
            left.swap_remove(at);
        }
    }
});
