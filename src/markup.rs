//! Text made safe for HTML and XML (the report, JUnit): the five
//! characters that mean markup become entities, and the control
//! characters but tab and newline (a CR is escaped too: a terminal
//! showing the file would act on it), the bidirectional controls and the
//! noncharacters that
//! `shown::is_unsafe` names (XML 1.0 cannot carry some, and a reader
//! would act on the others) are written as `\u{..}`, so that whatever a
//! journal holds (an argument, a stderr line holding `<script>`) stays
//! text.

use crate::shown;

/// `text`, escaped for an element's content or an attribute's value.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' => out.push(c),
            c if shown::is_unsafe(c) => shown::push_escaped(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// `text` escaped and isolated (`<bdi>`) for an element's content:
/// journal text, whose right-to-left letters must not reorder the page
/// around it.
pub(crate) fn isolated(text: &str) -> String {
    format!("<bdi>{}</bdi>", escape(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_control_characters_stay_text() {
        assert_eq!(
            escape("<script>alert('x&y')</script>\"\u{1b}[31m\u{0}\n"),
            "&lt;script&gt;alert(&#39;x&amp;y&#39;)&lt;/script&gt;&quot;\\u{1b}[31m\\u{0}\n"
        );
        assert_eq!(escape("plain é ✓"), "plain é ✓");
        assert_eq!(isolated("שלום <b>"), "<bdi>שלום &lt;b&gt;</bdi>");
        assert_eq!(
            escape("a\u{FFFE}b\u{FFFF}\u{202E}c"),
            "a\\u{fffe}b\\u{ffff}\\u{202e}c",
            "XML 1.0 cannot carry the noncharacters"
        );
    }
}
