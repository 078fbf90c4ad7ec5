//! The one way text from outside (a server's or a client's words, a
//! journal's fields) is shown: on a terminal, in an approval card, in a
//! message mcp-bound composes, in the report and in JUnit. What a
//! terminal or a reader would act on instead of showing is written as
//! `\u{..}`, lowercase hex: the C0 and C1 controls and DEL (ESC, OSC,
//! CR, BEL), the bidirectional controls that reorder what is shown
//! (U+202A–202E, U+2066–2069, U+200E/F, U+061C), the line and paragraph
//! separators (U+2028/2029), and the noncharacters U+FFFE/U+FFFF that
//! XML cannot carry. Everything else is kept as it is.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is written escaped wherever outside text is shown.
pub(crate) fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{061C}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{FFFE}'
                | '\u{FFFF}'
        )
}

/// `c` as it is shown escaped: `\u{1b}`.
pub(crate) fn push_escaped(out: &mut String, c: char) {
    let _ = write!(out, "\\u{{{:x}}}", c as u32);
}

/// `text` from outside, safe to show on one line: every character
/// [`is_unsafe`] says is written `\u{..}`, newlines and tabs included.
pub(crate) fn untrusted(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match is_unsafe(c) {
            true => push_escaped(&mut out, c),
            false => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// As [`untrusted`], keeping line breaks and tabs: for a block of
/// several lines (a card's arguments, a stderr excerpt) whose lines are
/// each shown as text.
pub(crate) fn untrusted_lines(text: &str) -> Cow<'_, str> {
    let kept = |c: char| matches!(c, '\n' | '\t');
    if !text.chars().any(|c| is_unsafe(c) && !kept(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match is_unsafe(c) && !kept(c) {
            true => push_escaped(&mut out, c),
            false => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_bidi_and_separators_are_escaped_and_the_rest_kept() {
        assert_eq!(untrusted("plain é ✓ 日本"), "plain é ✓ 日本");
        assert!(matches!(untrusted("plain"), Cow::Borrowed(_)));
        assert_eq!(
            untrusted("a\u{1b}]52;c;eA==\u{7}b\rc\nd\te\u{7f}\u{9b}"),
            "a\\u{1b}]52;c;eA==\\u{7}b\\u{d}c\\u{a}d\\u{9}e\\u{7f}\\u{9b}"
        );
        for c in [
            '\u{202A}', '\u{202E}', '\u{2066}', '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}',
            '\u{2028}', '\u{2029}', '\u{FFFE}', '\u{FFFF}',
        ] {
            let shown = untrusted(&format!("x{c}y")).into_owned();
            assert_eq!(shown, format!("x\\u{{{:x}}}y", c as u32));
        }
    }

    #[test]
    fn a_block_keeps_its_line_breaks_and_tabs_only() {
        assert_eq!(
            untrusted_lines("a\n\tb\r\u{1b}[2K\u{202E}"),
            "a\n\tb\\u{d}\\u{1b}[2K\\u{202e}"
        );
    }
}
