//! The session's fast path: one JSON object scanned once, byte by byte,
//! validated as JSON and its top-level fields found, with no allocation.
//! serde_json spends about half of a round trip's instructions on the two
//! small messages of a call; this does the same work in a fraction.
//!
//! It answers only when it is sure. Anything unusual returns None and the
//! line goes to serde_json, whose answer is the definition: an escape in
//! a top-level key or in `method`, a known key twice, a key some parser
//! folds onto a known one (`Method`, a non-ASCII key), a null `id`, a
//! `method` that is not a string, nesting deeper than [`MAX_DEPTH`]. The
//! tests hold the two
//! parses to the same answer on generated and on broken lines.

use std::borrow::Cow;

/// Deeper than this goes to serde_json (whose own limit is 128).
const MAX_DEPTH: usize = 64;

/// The bytes that end a run inside a string: the closing quote, a
/// backslash, and the control characters JSON forbids there.
const STRING_STOPS: [bool; 256] = {
    let mut stops = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        stops[b] = true;
        b += 1;
    }
    stops[b'"' as usize] = true;
    stops[b'\\' as usize] = true;
    stops
};

/// The top-level fields the session reads, as exact JSON text (`method`
/// as its string's content). A field that is `null` is absent, as for
/// serde's `Option`, except `result`: `"result": null` is a success
/// response (JSON-RPC 2.0), so its text is kept.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Fields<'a> {
    pub id: Option<&'a str>,
    pub method: Option<Cow<'a, str>>,
    pub params: Option<&'a str>,
    pub result: Option<&'a str>,
    pub error: Option<&'a str>,
}

/// `text` as one JSON object (whitespace around it allowed), or None:
/// not JSON, or not sure (then ask serde_json).
pub(crate) fn object(text: &str) -> Option<Fields<'_>> {
    object_and_cr(text).map(|(fields, _)| fields)
}

/// As [`object`], and whether a carriage return was seen. In an object the
/// scan takes, a CR can only be whitespace between tokens (a raw one in a
/// string is refused), so false means the line holds none at all.
pub(crate) fn object_and_cr(text: &str) -> Option<(Fields<'_>, bool)> {
    let mut scan = Scanner {
        bytes: text.as_bytes(),
        at: 0,
        cr: false,
    };
    if scan.token()? != b'{' {
        return None;
    }
    let mut fields = Fields::default();
    let mut seen = [false; 6];
    if scan.peek_token()? == b'}' {
        scan.at += 1;
    } else {
        loop {
            if scan.token()? != b'"' {
                return None;
            }
            let key_start = scan.at;
            if scan.string_rest()? {
                return None; // an escaped key: serde_json decides
            }
            let key = &text[key_start..scan.at - 1];
            if scan.token()? != b':' {
                return None;
            }
            scan.peek_token()?;
            let value_start = scan.at;
            scan.value(1)?;
            let value = &text[value_start..scan.at];
            let slot = match key {
                "id" => 0,
                "method" => 1,
                "params" => 2,
                "result" => 3,
                "error" => 4,
                "jsonrpc" => 5,
                // A key some parser may fold onto one the audit reads
                // (`Method`, `paramſ`): the permissive reading decides.
                other if folds(other) => return None,
                _ => usize::MAX,
            };
            if let Some(seen) = seen.get_mut(slot) {
                if *seen {
                    return None; // a known key twice: serde_json refuses it
                }
                *seen = true;
                if slot == 5 {
                    // `jsonrpc`: only its being there once matters here.
                } else {
                    let raw = (value != "null").then_some(value);
                    match slot {
                        // A null id is a request to JSON-RPC 2.0: not sure.
                        0 if raw.is_none() => return None,
                        0 => fields.id = raw,
                        1 => fields.method = method(raw)?,
                        2 => fields.params = raw,
                        // A null result is still a result: a success response.
                        3 => fields.result = Some(value),
                        4 => fields.error = raw,
                        _ => {}
                    }
                }
            }
            match scan.token()? {
                b',' => continue,
                b'}' => break,
                _ => return None,
            }
        }
    }
    scan.space();
    (scan.at == scan.bytes.len()).then_some((fields, scan.cr))
}

/// Whether a key other than those the session reads may fold onto one of
/// them in some server's parser: any non-ASCII byte, or ASCII case.
fn folds(key: &str) -> bool {
    !key.is_ascii()
        || super::fold::TOP_KEYS
            .iter()
            .any(|known| key.eq_ignore_ascii_case(known))
}

/// A `method` value: a string without escapes, or null.
fn method(raw: Option<&str>) -> Option<Option<Cow<'_, str>>> {
    match raw {
        None => Some(None),
        Some(text) => {
            let inner = text.strip_prefix('"')?.strip_suffix('"')?;
            (!inner.contains('\\')).then_some(Some(Cow::Borrowed(inner)))
        }
    }
}

/// Where the first quote, backslash or byte below 0x20 sits in eight
/// bytes read little-endian, or None: each byte tested at once with
/// Mycroft's zero-byte test, as serde_json does it. The test may also flag
/// a byte above a true stop (a borrow carries up), never one below: so
/// the lowest flagged byte is the first stop, and a word with none
/// flagged holds no stop.
fn first_stop(word: u64) -> Option<usize> {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES << 7;
    let control = word.wrapping_sub(ONES * 0x20) & !word;
    let quote = word ^ (ONES * u64::from(b'"'));
    let quote = quote.wrapping_sub(ONES) & !quote;
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let backslash = backslash.wrapping_sub(ONES) & !backslash;
    let flagged = (control | quote | backslash) & HIGH;
    (flagged != 0).then(|| flagged.trailing_zeros() as usize / 8)
}

struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
    /// A carriage return was seen (whitespace is the only place one can be).
    cr: bool,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    /// The next byte that is not whitespace, consumed. JSON text between
    /// tokens is nearly always compact: one comparison (every whitespace
    /// byte is at most a space; a control byte there is refused later).
    #[inline(always)]
    fn token(&mut self) -> Option<u8> {
        let byte = self.next()?;
        if byte > b' ' {
            return Some(byte);
        }
        self.at -= 1;
        self.space();
        self.next()
    }

    /// Past any whitespace, the next byte, not consumed.
    #[inline(always)]
    fn peek_token(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        if byte > b' ' {
            return Some(byte);
        }
        self.space();
        self.peek()
    }

    fn space(&mut self) {
        while let Some(byte @ (b' ' | b'\t' | b'\n' | b'\r')) = self.peek() {
            self.cr |= byte == b'\r';
            self.at += 1;
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        self.at - start
    }

    /// A string, from past its opening quote to past its closing one.
    /// Some(true) if it held an escape. The text is UTF-8 already (a
    /// `str`): only a quote, a backslash and a control character need a
    /// look. Inlined: most strings are a key or a short value, where a
    /// call costs as much as the scan.
    #[inline(always)]
    fn string_rest(&mut self) -> Option<bool> {
        let mut escaped = false;
        loop {
            self.skip_to_stop();
            match self.next()? {
                b'"' => return Some(escaped),
                b'\\' => {
                    escaped = true;
                    self.escape()?;
                }
                _ => return None, // a control character
            }
        }
    }

    /// To the next stop in a string: eight bytes at a time, straight to
    /// it; byte by byte only in the last seven bytes of the line.
    #[inline(always)]
    fn skip_to_stop(&mut self) {
        let bytes = self.bytes;
        while let Some(word) = bytes
            .get(self.at..self.at + 8)
            .and_then(|chunk| <[u8; 8]>::try_from(chunk).ok())
        {
            match first_stop(u64::from_le_bytes(word)) {
                Some(at) => {
                    self.at += at;
                    return;
                }
                None => self.at += 8,
            }
        }
        while bytes
            .get(self.at)
            .is_some_and(|b| !STRING_STOPS[usize::from(*b)])
        {
            self.at += 1;
        }
    }

    /// What follows a backslash.
    fn escape(&mut self) -> Option<()> {
        match self.next()? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(()),
            b'u' => {
                for _ in 0..4 {
                    if !self.next()?.is_ascii_hexdigit() {
                        return None;
                    }
                }
                Some(())
            }
            _ => None,
        }
    }

    /// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.next()? {
            b'0' => {
                if matches!(self.peek(), Some(b'0'..=b'9')) {
                    return None;
                }
            }
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        Some(())
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word).then(|| self.at = end)
    }

    /// Any value, validated; `depth` is how many containers enclose it.
    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => {
                self.at += 1;
                self.string_rest().map(|_| ())
            }
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            open @ (b'{' | b'[') => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                let close = if open == b'{' { b'}' } else { b']' };
                self.at += 1;
                if self.peek_token()? == close {
                    self.at += 1;
                    return Some(());
                }
                loop {
                    if open == b'{' {
                        if self.token()? != b'"' {
                            return None;
                        }
                        self.string_rest()?;
                        if self.token()? != b':' {
                            return None;
                        }
                    }
                    self.peek_token()?;
                    self.value(depth + 1)?;
                    match self.token()? {
                        b',' => continue,
                        byte if byte == close => return Some(()),
                        _ => return None,
                    }
                }
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word test finds the first stop wherever it sits, whatever
    /// lies above it: the bytes that make a borrow flag a false stop
    /// (0x20 over a control byte, `#` over a quote, `]` over a backslash)
    /// included.
    #[test]
    fn a_word_gives_its_first_stop() {
        let fills = [
            b'a', 0x7f, 0x80, 0xff, b' ', b'!', b'#', b'[', b']', 0x21, 0x01,
        ];
        for stop in (0u8..0x20).chain([b'"', b'\\']) {
            for at in 0..8 {
                for below in [b'a', 0x7f, 0x80, 0xff, b' ', b'!', b'#', b']', 0x21] {
                    for above in fills {
                        let mut word = [below; 8];
                        word[at] = stop;
                        word[at + 1..].fill(above);
                        assert_eq!(
                            first_stop(u64::from_le_bytes(word)),
                            Some(at),
                            "{stop:#x} at {at}, {below:#x} below, {above:#x} above"
                        );
                    }
                }
            }
        }
        for clean in [
            *b"abcdefgh",
            [0x7f; 8],
            [0xe6, 0x97, 0xa5, 0xe6, 0x9c, 0xac, b' ', b'!'],
        ] {
            assert_eq!(first_stop(u64::from_le_bytes(clean)), None);
        }
    }

    proptest::proptest! {
        /// Any eight bytes: the word test agrees with a byte-by-byte look.
        #[test]
        fn any_word_gives_the_same_first_stop(word in proptest::array::uniform8(proptest::num::u8::ANY)) {
            let naive = word.iter().position(|b| STRING_STOPS[usize::from(*b)]);
            proptest::prop_assert_eq!(first_stop(u64::from_le_bytes(word)), naive);
        }
    }
}
