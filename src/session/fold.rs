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
        for key in ["requeststate", "REQUESTSTATE", "request\u{17F}tate"] {
            assert_eq!(folds_to(key, &CALL_KEYS), Some("requestState"), "{key}");
        }
        for key in ["\u{131}d", "\u{130}d", "ids", "i", "par\u{E1}ms", "ＩＤ"] {
            assert_eq!(folds_to(key, &TOP_KEYS), None, "{key}");
        }
    }
}
