//! The keys the audit reads, and how the loosest server parsers fold a
//! key onto them. Go's encoding/json matches a key to a struct field
//! without regard to case, folding `ſ` (U+017F) to `s` and `K` (U+212A,
//! Kelvin) to `k`, and keeps the last key that matches. .NET's
//! case-insensitive readers (`PropertyNameCaseInsensitive`) match by
//! ordinal ignore-case, which for these keys folds ASCII case and `ſ`:
//! a rule inside Go's. A key that folds onto one the audit reads, but is
//! not spelled as it, would be read as that key by such a server.

/// The keys the audit reads at a message's top level.
pub(crate) const TOP_KEYS: [&str; 4] = ["jsonrpc", "id", "method", "params"];
/// The keys the audit reads in a call's `params`, as spelled: the tool,
/// its arguments, and the 2026-07-28 retry's state and answers (the gate
/// reads those to tell a retry, so a server must not read them otherwise).
pub(crate) const CALL_KEYS: [&str; 4] = ["name", "arguments", "requestState", "inputResponses"];

/// One character as the loosest server parser folds it: ASCII case, `ſ`
/// (U+017F) to `s`, and `K` (U+212A, Kelvin) to `k`.
fn fold(c: char) -> char {
    match c {
        '\u{17F}' => 's',
        '\u{212A}' => 'k',
        c => c.to_ascii_lowercase(),
    }
}

/// Which of `keys` (ASCII) `key` folds to, if any.
pub(crate) fn folds_to(key: &str, keys: &[&'static str]) -> Option<&'static str> {
    keys.iter().copied().find(|target| {
        let mut chars = key.chars();
        target
            .chars()
            .all(|t| chars.next().map(fold) == Some(fold(t)))
            && chars.next().is_none()
    })
}

/// The keys of the JSON object `text` is, in order, repeats kept (as
/// serde_json reads the server's lines); None when it is not one object.
pub(crate) fn object_keys(text: &str) -> Option<Vec<std::borrow::Cow<'_, str>>> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = Vec<std::borrow::Cow<'de, str>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
            let mut keys = Vec::new();
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                map.next_value::<IgnoredAny>()?;
                keys.push(key);
            }
            Ok(keys)
        }
    }
    let mut reader = serde_json::Deserializer::from_str(text);
    let keys = reader.deserialize_map(Keys).ok()?;
    reader.end().ok()?;
    Some(keys)
}

/// A key of `keys` that another one folds onto (or that repeats): the
/// later one, which the loosest parsers take for the earlier.
pub(crate) fn colliding(keys: &[std::borrow::Cow<'_, str>]) -> Option<String> {
    let folded: Vec<String> = keys.iter().map(|k| k.chars().map(fold).collect()).collect();
    (1..keys.len())
        .find(|&i| folded[..i].contains(&folded[i]))
        .map(|i| keys[i].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_long_s_and_kelvin_fold_and_nothing_else_does() {
        for key in ["Name", "NAME", "nAmE"] {
            assert_eq!(folds_to(key, &CALL_KEYS), Some("name"), "{key}");
        }
        assert_eq!(folds_to("param\u{17F}", &TOP_KEYS), Some("params"));
        assert_eq!(folds_to("\u{212A}ey", &["key"]), Some("key"));
        let keys = |list: &[&'static str]| -> Vec<std::borrow::Cow<'static, str>> {
            list.iter()
                .map(|k| std::borrow::Cow::Borrowed(*k))
                .collect()
        };
        assert_eq!(
            colliding(&keys(&["name", "description", "Description"])),
            Some("Description".into())
        );
        assert_eq!(colliding(&keys(&["tools", "tools"])), Some("tools".into()));
        assert_eq!(
            colliding(&keys(&["de\u{17F}c", "desc"])),
            Some("desc".into())
        );
        assert_eq!(colliding(&keys(&["name", "title"])), None);
        let read = object_keys(r#"{"a":1,"b\u0041":{"x":[1]},"a":2}"#).unwrap();
        assert_eq!(read, ["a", "bA", "a"]);
        assert!(object_keys("[1]").is_none() && object_keys("{} 1").is_none());
        for key in ["requeststate", "REQUESTSTATE", "request\u{17F}tate"] {
            assert_eq!(folds_to(key, &CALL_KEYS), Some("requestState"), "{key}");
        }
        for key in ["\u{131}d", "\u{130}d", "ids", "i", "par\u{E1}ms", "ＩＤ"] {
            assert_eq!(folds_to(key, &TOP_KEYS), None, "{key}");
        }
    }
}
