//! Reading one line back: the hash over its exact bytes first, then a
//! strict parse: the header in the writer's order, then the kind's own
//! shape (`shapes.rs`: unknown fields refused, its fields required).

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer as _, Error as _, MapAccess, Visitor};

use super::VERSION;
use super::entry::HASH_KEY;
use super::key::Key;
use super::shapes::Body;

/// One entry, read strictly: the header every entry opens with, in the
/// order the writer writes it (`v`, `seq`, `prev`, `kind`, `ts`), then
/// the kind's own fields (`shapes`), `h` last. Borrowed from the line
/// where possible.
pub(crate) struct Parsed<'a> {
    pub(crate) seq: u64,
    pub(crate) prev: Cow<'a, str>,
    pub(crate) ts: Cow<'a, str>,
    /// The line's hash, as checked over its bytes.
    pub(crate) h: Cow<'a, str>,
    pub(crate) body: Body<'a>,
}

impl<'a> Parsed<'a> {
    pub(crate) fn kind(&self) -> &'static str {
        self.body.kind()
    }

    pub(crate) fn call_id(&self) -> Option<&str> {
        self.body.call_id()
    }

    /// The header's own rules, once the shape is known.
    fn check(&self, v: u64) -> Result<(), String> {
        if v != VERSION {
            return Err(format!("unknown version {v}"));
        }
        if self.prev.len() != 64 || !self.prev.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("prev is not 64 hex digits".into());
        }
        if humantime::parse_rfc3339_weak(&self.ts).is_err() {
            return Err("ts is not an RFC 3339 time".into());
        }
        Ok(())
    }
}

/// Reads the header in order, then hands the rest of the object to the
/// kind's shape.
struct Reader<'de> {
    h: &'de str,
}

impl<'de> Visitor<'de> for Reader<'de> {
    type Value = (u64, Parsed<'de>);

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a journal entry object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        fn field<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
            map: &mut A,
            name: &'static str,
        ) -> Result<T, A::Error> {
            match map.next_key::<Cow<'de, str>>()? {
                Some(key) if key == name => map.next_value(),
                Some(key) => Err(A::Error::custom(format!(
                    "expected `{name}` in the header, found `{key}`"
                ))),
                None => Err(A::Error::missing_field(name)),
            }
        }
        let v: u64 = field(&mut map, "v")?;
        let seq: u64 = field(&mut map, "seq")?;
        let prev: Cow<'de, str> = field(&mut map, "prev")?;
        let kind: Cow<'de, str> = field(&mut map, "kind")?;
        let ts: Cow<'de, str> = field(&mut map, "ts")?;
        let body = Body::read(&kind, MapAccessDeserializer::new(map))?;
        Ok((
            v,
            Parsed {
                seq,
                prev,
                ts,
                h: Cow::Borrowed(self.h),
                body,
            },
        ))
    }
}

/// Why one line is not a good entry.
pub(crate) enum LineError {
    Malformed(String),
    HashMismatch,
}

/// Check the hash over the exact bytes, then parse strictly.
pub(crate) fn parse_line<'a>(key: &Key, content: &'a [u8]) -> Result<Parsed<'a>, LineError> {
    const SUFFIX_LEN: usize = 6 + 64 + 2; // ,"h":" + hex + "}
    if content.len() < SUFFIX_LEN + 2 || !content.ends_with(b"\"}") {
        return Err(LineError::Malformed("not an entry line".into()));
    }
    let split = content.len() - SUFFIX_LEN;
    let (prefix, suffix) = content.split_at(split);
    let given = &suffix[HASH_KEY.len()..HASH_KEY.len() + 64];
    if !suffix.starts_with(HASH_KEY)
        || !given.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(LineError::Malformed(
            "the line does not end with its hash".into(),
        ));
    }
    if key.digest(prefix).as_bytes() != given {
        return Err(LineError::HashMismatch);
    }
    // The 64 hex digits were checked above.
    let h = std::str::from_utf8(given).unwrap_or_default();
    let mut reader = serde_json::Deserializer::from_slice(content);
    let (v, parsed) = reader
        .deserialize_map(Reader { h })
        .and_then(|parsed| reader.end().map(|()| parsed))
        .map_err(|e| LineError::Malformed(format!("not strict JSON of a known shape: {e}")))?;
    parsed.check(v).map_err(LineError::Malformed)?;
    Ok(parsed)
}
