//! Text made safe for HTML and XML (the report, JUnit): the five
//! characters that mean markup become entities, and the control
//! characters XML 1.0 cannot carry are written as `\u{..}`, so that
//! whatever a journal holds (an argument, a stderr line holding
//! `<script>`) stays text.

use std::fmt::Write as _;

/// `text`, escaped for an element's content or an attribute's value.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
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
    }
}
