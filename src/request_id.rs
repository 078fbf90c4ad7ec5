//! A JSON-RPC request id: its exact text as the client wrote it (what the
//! journal and the record carry), and the key it is matched by, as the
//! SDKs match ids: as a JSON value.
//! A string by its text after unescaping; a number by its exact decimal
//! value, never through f64, so `1`, `1.0`, `10e-1` and `1e0` are one id,
//! and two 30-digit integers that differ in their last digit are two
//! (Python's `json.loads` keeps them apart; an f64 would not). The request
//! table and `verify` match ids by this one key.
//!
//! The key is text: a string's is its canonical JSON (quotes included, so
//! `"1"` and `1` stay apart), a number's is its digits, as a plain integer
//! when it is one of at most [`PLAIN_DIGITS`] digits, otherwise
//! `<digits>e<exponent>`. An id whose text is already its key (a plain
//! integer, a string with no escape) is not copied.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// A request id exactly as the client wrote it: its JSON text, written
/// into the journal and the record as it came (never through f64, so
/// `1e400` stays `1e400` and a 30-digit integer keeps its last digit).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequestId(Box<RawValue>);

impl RequestId {
    /// `text`, if it is strict JSON: a string or number with a [`key`], or
    /// another value that decodes. None for what strict JSON cannot carry
    /// (`NaN`, a lone surrogate).
    pub fn new(text: &str) -> Option<RequestId> {
        let strict = key(text).is_some() || serde_json::from_str::<serde_json::Value>(text).is_ok();
        strict
            .then(|| RawValue::from_string(text.to_string()).ok())
            .flatten()
            .map(RequestId)
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for RequestId {
    fn eq(&self, other: &RequestId) -> bool {
        self.get() == other.get()
    }
}

impl Eq for RequestId {}

/// An integer of at most this many digits keys as itself; beyond, as
/// `<digits>e<exponent>` (so `1e400` does not become 401 bytes).
const PLAIN_DIGITS: usize = 64;

/// The key `raw`, an id's exact JSON text, is matched by. None for what
/// cannot name a request: neither a string nor a number, or not strict
/// JSON (a lone surrogate, a raw control character, `NaN`).
pub(crate) fn key(raw: &str) -> Option<Cow<'_, str>> {
    let bytes = raw.as_bytes();
    match bytes.first()? {
        b'"' => {
            let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
            if !inner.bytes().any(|b| b == b'\\' || b == b'"' || b < 0x20) {
                return Some(Cow::Borrowed(raw));
            }
            string_key(inner).map(Cow::Owned)
        }
        b'-' | b'0'..=b'9' => {
            let digits = raw.strip_prefix('-').unwrap_or(raw);
            let plain_integer = !digits.is_empty()
                && digits.len() <= PLAIN_DIGITS
                && digits.bytes().all(|b| b.is_ascii_digit())
                && (digits == "0" || !digits.starts_with('0'))
                && raw != "-0";
            if plain_integer {
                return Some(Cow::Borrowed(raw));
            }
            number_key(raw).map(Cow::Owned)
        }
        _ => None,
    }
}

/// A string's content (between its quotes) decoded and written back the
/// one way: only `"`, `\` and control characters escaped.
fn string_key(inner: &str) -> Option<String> {
    let mut out = String::with_capacity(inner.len() + 2);
    out.push('"');
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return None,
            '\\' => {
                let decoded = match chars.next()? {
                    '"' => '"',
                    '\\' => '\\',
                    '/' => '/',
                    'b' => '\u{8}',
                    'f' => '\u{c}',
                    'n' => '\n',
                    'r' => '\r',
                    't' => '\t',
                    'u' => {
                        let high = hex4(&mut chars)?;
                        match high {
                            0xD800..=0xDBFF => {
                                // A surrogate pair, or nothing strict.
                                if chars.next()? != '\\' || chars.next()? != 'u' {
                                    return None;
                                }
                                let low = hex4(&mut chars)?;
                                if !(0xDC00..=0xDFFF).contains(&low) {
                                    return None;
                                }
                                let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                                char::from_u32(code)?
                            }
                            0xDC00..=0xDFFF => return None,
                            _ => char::from_u32(high)?,
                        }
                    }
                    _ => return None,
                };
                push_escaped(&mut out, decoded);
            }
            c if (c as u32) < 0x20 => return None,
            c => out.push(c),
        }
    }
    out.push('"');
    Some(out)
}

fn hex4(chars: &mut std::str::Chars<'_>) -> Option<u32> {
    let mut value = 0;
    for _ in 0..4 {
        value = value * 16 + chars.next()?.to_digit(16)?;
    }
    Some(value)
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
        c => out.push(c),
    }
}

/// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? as its exact value.
fn number_key(text: &str) -> Option<String> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let bytes = rest.as_bytes();
    let mut at = 0;
    let digits_from = |at: &mut usize| {
        let start = *at;
        while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
            *at += 1;
        }
        &rest[start..*at]
    };
    let integer = digits_from(&mut at);
    if integer.is_empty() || (integer.len() > 1 && integer.starts_with('0')) {
        return None;
    }
    let mut fraction = "";
    if bytes.get(at) == Some(&b'.') {
        at += 1;
        fraction = digits_from(&mut at);
        if fraction.is_empty() {
            return None;
        }
    }
    let mut exponent: i64 = 0;
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        at += 1;
        let sign = match bytes.get(at) {
            Some(b'-') => {
                at += 1;
                -1
            }
            Some(b'+') => {
                at += 1;
                1
            }
            _ => 1,
        };
        let literal = digits_from(&mut at);
        if literal.is_empty() {
            return None;
        }
        let significant = literal.trim_start_matches('0');
        if significant.len() > 15 {
            // Past any exponent a real id has: kept as spelled, so that
            // two such spellings are still two ids, and one is one.
            return (at == bytes.len()).then(|| format!("~{text}"));
        }
        exponent = sign * significant.parse::<i64>().unwrap_or(0);
    }
    if at != bytes.len() {
        return None;
    }
    // value = digits × 10^exponent, with no leading or trailing zeros.
    let all: String = [integer, fraction].concat();
    let mut exponent = exponent - fraction.len() as i64;
    let significant = all.trim_start_matches('0');
    let trimmed = significant.trim_end_matches('0');
    exponent += (significant.len() - trimmed.len()) as i64;
    if trimmed.is_empty() {
        return Some("0".to_string());
    }
    let sign = if negative { "-" } else { "" };
    let plain = exponent >= 0 && trimmed.len() as i64 + exponent <= PLAIN_DIGITS as i64;
    Some(if plain {
        format!("{sign}{trimmed}{}", "0".repeat(exponent as usize))
    } else {
        format!("{sign}{trimmed}e{exponent}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(raw: &str) -> Option<String> {
        key(raw).map(Cow::into_owned)
    }

    #[test]
    fn numbers_are_one_id_by_their_exact_value() {
        for same in ["1", "1.0", "1e0", "10e-1", "0.1e1", "1.000", "1E+0"] {
            assert_eq!(k(same).as_deref(), Some("1"), "{same}");
        }
        for same in ["100", "1e2", "1.0e2", "1000e-1"] {
            assert_eq!(k(same).as_deref(), Some("100"), "{same}");
        }
        assert_eq!(k("-0").as_deref(), Some("0"));
        assert_eq!(k("0.0e5").as_deref(), Some("0"));
        assert_eq!(k("1.5").as_deref(), Some("15e-1"));
        assert_eq!(k("-0.015").as_deref(), Some("-15e-3"));
        // Two big integers an f64 would make one.
        let a = "100000000000000000000000000001";
        let b = "100000000000000000000000000002";
        assert_ne!(k(a), k(b));
        assert_eq!(k(a).as_deref(), Some(a), "a plain integer is its own key");
        assert_eq!(k("1e29"), k("100000000000000000000000000000"));
        // An exponent past f64 is still a value.
        assert_eq!(k("1e400").as_deref(), Some("1e400"));
        assert_eq!(k("10e399"), k("1e400"));
        assert_ne!(k("1e400"), k("1e401"));
        // Huge exponents: kept as spelled.
        assert_eq!(
            k("1e99999999999999999999").as_deref(),
            Some("~1e99999999999999999999")
        );
        // A plain integer past the plain bound keys like its exponent form.
        let long = format!("1{}", "0".repeat(70));
        assert_eq!(k(&long), k("1e70"));
    }

    #[test]
    fn strings_are_one_id_by_their_text_after_unescaping() {
        assert_eq!(k("\"ab\"").as_deref(), Some("\"ab\""));
        assert_eq!(k("\"a\\u0062\""), k("\"ab\""));
        assert_eq!(k("\"\\/\""), k("\"/\""));
        assert_eq!(k("\"\\ud83d\\ude00\""), k("\"😀\""));
        assert_eq!(k("\"\\\"\"").as_deref(), Some("\"\\\"\""));
        assert_eq!(k("\"\\u0001\"").as_deref(), Some("\"\\u0001\""));
        assert_eq!(k("\"\"").as_deref(), Some("\"\""));
        assert_ne!(k("\"1\""), k("1"), "a string is not a number");
    }

    #[test]
    fn what_cannot_name_a_request_has_no_key() {
        for raw in [
            "\"\\ud800\"",
            "\"\\udc00x\"",
            "\"\\ud800\\u0041\"",
            "\"a\tb\"",
            "\"\\x\"",
            "NaN",
            "Infinity",
            "-Infinity",
            "01",
            "1.",
            ".5",
            "1e",
            "-",
            "true",
            "null",
            "{}",
            "[1]",
            "",
        ] {
            assert_eq!(k(raw), None, "{raw}");
        }
    }

    /// The plain ids every SDK sends are looked up without a copy, and
    /// agree with the full rule.
    #[test]
    fn plain_ids_are_their_own_key() {
        for plain in ["7", "-7", "0", "\"ab\"", "\"tools-1\"", "\"é\""] {
            assert!(matches!(key(plain), Some(Cow::Borrowed(_))), "{plain}");
        }
        for (raw, full) in [("7", "7"), ("-7", "-7"), ("\"ab\"", "\"ab\"")] {
            let slow = if raw.starts_with('"') {
                string_key(&raw[1..raw.len() - 1])
            } else {
                number_key(raw)
            };
            assert_eq!(slow.as_deref(), Some(full));
        }
    }
}
