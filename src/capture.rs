//! The bounded stderr capture: a fixed head, a ring for the tail, exact counts,
//! UTF-8-safe cuts and the truncation marker. Pure: no I/O, no clock.
//!
//! Memory is `head_limit + tail_limit` at most, whatever the stream's volume.
//! The ring grows lazily, so a large limit costs nothing until bytes arrive.
//! Only the part of a chunk that the ring will keep is copied.

use crate::redact::Redactor;

/// What the capture keeps of one stream, and what it saw.
#[derive(Debug, Clone)]
pub struct Capture {
    head_limit: usize,
    tail_limit: usize,
    head: Vec<u8>,
    /// Set once the head is full (and cut back to a character boundary);
    /// from then on every byte goes to the ring.
    head_closed: bool,
    ring: Vec<u8>,
    /// Index of the oldest byte once the ring is full.
    ring_start: usize,
    bytes_seen: u64,
}

/// A rendered view of the capture, bounded by a byte budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excerpt {
    /// Marker (if anything was left out), head, separator, tail; lossy UTF-8.
    pub text: String,
    /// Raw bytes of the helper's stream shown, head and tail.
    pub head_shown: usize,
    pub tail_shown: usize,
    pub truncated: bool,
}

impl Capture {
    pub fn new(head_limit: usize, tail_limit: usize) -> Self {
        Capture {
            head_limit,
            tail_limit,
            head: Vec::new(),
            head_closed: head_limit == 0,
            ring: Vec::new(),
            ring_start: 0,
            bytes_seen: 0,
        }
    }

    pub fn head_limit(&self) -> usize {
        self.head_limit
    }

    pub fn tail_limit(&self) -> usize {
        self.tail_limit
    }

    pub fn bytes_seen(&self) -> u64 {
        self.bytes_seen
    }

    /// Feed the next chunk of the stream. Splitting a stream differently
    /// never changes what is retained.
    pub fn push(&mut self, mut chunk: &[u8]) {
        self.bytes_seen += chunk.len() as u64;
        if !self.head_closed {
            let room = self.head_limit - self.head.len();
            let take = room.min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
            if self.head.len() == self.head_limit {
                self.head_closed = true;
                // A character cut by the head limit moves whole to the tail,
                // so nothing is lost while the stream fits in head + tail.
                let keep = utf8_complete_prefix_len(&self.head);
                let spill = self.head.split_off(keep);
                self.push_tail(&spill);
            }
        }
        self.push_tail(chunk);
    }

    fn push_tail(&mut self, chunk: &[u8]) {
        let limit = self.tail_limit;
        if limit == 0 || chunk.is_empty() {
            return;
        }
        if chunk.len() >= limit {
            // Only the last `limit` bytes can survive: copy just those.
            self.ring.clear();
            self.ring.extend_from_slice(&chunk[chunk.len() - limit..]);
            self.ring_start = 0;
            return;
        }
        let growable = limit - self.ring.len();
        if growable > 0 {
            let take = growable.min(chunk.len());
            self.ring.extend_from_slice(&chunk[..take]);
            let rest = &chunk[take..];
            if rest.is_empty() {
                return;
            }
            return self.overwrite(rest);
        }
        self.overwrite(chunk);
    }

    /// Ring is full and `chunk.len() < limit`: overwrite the oldest bytes.
    fn overwrite(&mut self, chunk: &[u8]) {
        let limit = self.ring.len();
        let first = (limit - self.ring_start).min(chunk.len());
        self.ring[self.ring_start..self.ring_start + first].copy_from_slice(&chunk[..first]);
        let second = chunk.len() - first;
        self.ring[..second].copy_from_slice(&chunk[first..]);
        self.ring_start = (self.ring_start + chunk.len()) % limit;
    }

    /// Whether the head is full, so every further byte is tail material.
    pub fn head_closed(&self) -> bool {
        self.head_closed
    }

    /// Count `len` bytes of the stream that were never handed over because
    /// the tail cannot keep them. Only sound once the head is closed and
    /// when at least `tail_limit` more bytes follow (they evict everything
    /// the ring holds now, so it is emptied here): a caller that keeps the
    /// newest bytes elsewhere and discards the older ones unread.
    pub fn skip_superseded(&mut self, len: u64) {
        debug_assert!(self.head_closed, "the head still wants bytes");
        self.bytes_seen += len;
        self.ring.clear();
        self.ring_start = 0;
    }

    /// The retained head, ending on a character boundary.
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// The retained tail in stream order. When bytes were evicted before it,
    /// it starts on a character boundary (leading continuation bytes are cut).
    pub fn tail(&self) -> Vec<u8> {
        let mut tail = Vec::with_capacity(self.ring.len());
        tail.extend_from_slice(&self.ring[self.ring_start..]);
        tail.extend_from_slice(&self.ring[..self.ring_start]);
        if self.evicted_before_tail() {
            let skip = leading_continuation_len(&tail);
            tail.drain(..skip);
        }
        tail
    }

    /// The last `n` bytes kept of the stream, starting on a character
    /// boundary, and whether bytes were lost right before them.
    pub fn last(&self, n: usize) -> (Vec<u8>, bool) {
        let tail = self.tail();
        let mut kept = if self.evicted_before_tail() {
            tail
        } else {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            all
        };
        let mut cut = self.evicted_before_tail();
        if kept.len() > n {
            kept.drain(..kept.len() - n);
            cut = true;
        }
        if cut {
            let skip = leading_continuation_len(&kept);
            kept.drain(..skip);
        }
        (kept, cut)
    }

    fn evicted_before_tail(&self) -> bool {
        self.bytes_seen > (self.head.len() + self.ring.len()) as u64
    }

    /// Bytes kept, after UTF-8-safe cuts. Always `<= head_limit + tail_limit`.
    pub fn bytes_retained(&self) -> u64 {
        let tail_len = if self.evicted_before_tail() {
            let (a, b) = (&self.ring[self.ring_start..], &self.ring[..self.ring_start]);
            let skip = leading_continuation_len_split(a, b);
            self.ring.len() - skip
        } else {
            self.ring.len()
        };
        (self.head.len() + tail_len) as u64
    }

    pub fn truncated(&self) -> bool {
        self.bytes_seen > self.bytes_retained()
    }

    /// Render at most `budget` bytes of the stream (plus the marker mcp-bound
    /// writes), with secrets masked. The head gets at most half of a shared
    /// budget.
    pub fn excerpt(&self, budget: usize, redactor: &Redactor) -> Excerpt {
        let head = self.head();
        let tail = self.tail();
        let (mut head_shown, mut tail_shown) = (head.len(), tail.len());
        let cut_to_budget = head_shown + tail_shown > budget;
        if cut_to_budget {
            head_shown = if tail.is_empty() {
                budget.min(head.len())
            } else {
                (budget / 2).min(head.len())
            };
            tail_shown = (budget - head_shown).min(tail.len());
        }
        let head_part = &head[..utf8_complete_prefix_len(&head[..head_shown])];
        let tail_from = tail.len() - tail_shown;
        let mut tail_part = &tail[tail_from..];
        if tail_from > 0 {
            tail_part = &tail_part[leading_continuation_len(tail_part)..];
        }
        let shown = (head_part.len() + tail_part.len()) as u64;
        let truncated = shown < self.bytes_seen;
        let mut text = String::new();
        if truncated {
            let seen = self.bytes_seen;
            // What was kept (the record's bytes_retained, the summary's
            // "kept"), then, when the budget cut it, what is shown of it.
            let marker = match (head.is_empty(), tail.is_empty()) {
                _ if self.bytes_retained() == seen => format!("kept all {seen} bytes"),
                (true, false) => format!("kept last {} of {seen} bytes", tail.len()),
                (false, true) => format!("kept first {} of {seen} bytes", head.len()),
                (false, false) => format!(
                    "kept first {} and last {} of {seen} bytes",
                    head.len(),
                    tail.len()
                ),
                (true, true) => format!("kept 0 of {seen} bytes"),
            };
            let showing = match (head_part.is_empty(), tail_part.is_empty()) {
                _ if !cut_to_budget => String::new(),
                (true, false) => format!("; showing the last {}", tail_part.len()),
                (false, true) => format!("; showing the first {}", head_part.len()),
                (false, false) => format!(
                    "; showing the first {} and the last {}",
                    head_part.len(),
                    tail_part.len()
                ),
                (true, true) => "; showing none".to_string(),
            };
            text.push_str(&format!("[stderr truncated: {marker}{showing}]\n"));
        }
        let head_text = String::from_utf8_lossy(head_part);
        let tail_text = String::from_utf8_lossy(tail_part);
        if !truncated {
            // Contiguous: a secret across the head/tail seam is whole here.
            text.push_str(&redactor.redact(&format!("{head_text}{tail_text}")));
        } else {
            text.push_str(&redactor.redact_piece(&head_text, false, true));
            if !head_part.is_empty() && !tail_part.is_empty() {
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                let dropped = self.bytes_seen - shown;
                text.push_str(&format!("[stderr: {dropped} bytes dropped here]\n"));
            }
            let cut_before = tail_part.len() as u64 + (head_part.len() as u64) < self.bytes_seen;
            text.push_str(&redactor.redact_piece(
                &tail_text,
                cut_before && !tail_part.is_empty(),
                false,
            ));
        }
        Excerpt {
            text,
            head_shown: head_part.len(),
            tail_shown: tail_part.len(),
            truncated,
        }
    }
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// Expected length of a UTF-8 sequence from its lead byte; None if not a lead.
fn sequence_len(lead: u8) -> Option<usize> {
    match lead {
        0x00..=0x7F => Some(1),
        0xC2..=0xDF => Some(2),
        0xE0..=0xEF => Some(3),
        0xF0..=0xF4 => Some(4),
        _ => None,
    }
}

/// Length of `bytes` without a trailing, incomplete multibyte sequence.
/// Invalid bytes are left alone: they become U+FFFD when text is built.
pub fn utf8_complete_prefix_len(bytes: &[u8]) -> usize {
    let len = bytes.len();
    // A sequence is at most 4 bytes, so its lead is within the last 4.
    for back in 1..=len.min(4) {
        let byte = bytes[len - back];
        if is_continuation(byte) {
            continue;
        }
        return match sequence_len(byte) {
            Some(need) if need > back => len - back,
            _ => len,
        };
    }
    len
}

/// How many leading bytes belong to a character whose start was cut off.
/// At most 3: a longer run of continuation bytes is invalid anyway.
pub fn leading_continuation_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|b| is_continuation(**b))
        .count()
}

fn leading_continuation_len_split(a: &[u8], b: &[u8]) -> usize {
    a.iter()
        .chain(b.iter())
        .take(3)
        .take_while(|b| is_continuation(**b))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Capture {
        /// Tests of cuts and markers use text with nothing to mask.
        fn plain(&self, budget: usize) -> Excerpt {
            self.excerpt(budget, &Redactor::default())
        }
    }

    fn fed(head: usize, tail: usize, chunks: &[&[u8]]) -> Capture {
        let mut capture = Capture::new(head, tail);
        for chunk in chunks {
            capture.push(chunk);
        }
        capture
    }

    #[test]
    fn small_stream_is_kept_whole_without_marker() {
        let capture = fed(0, 16, &[b"hello ", b"world"]);
        assert_eq!(capture.tail(), b"hello world");
        assert_eq!(capture.bytes_seen(), 11);
        assert_eq!(capture.bytes_retained(), 11);
        assert!(!capture.truncated());
        assert_eq!(capture.plain(100).text, "hello world");
    }

    #[test]
    fn the_last_bytes_join_head_and_tail_and_start_on_a_character() {
        assert_eq!(
            fed(4, 8, &[b"abcdef"]).last(100),
            (b"abcdef".to_vec(), false)
        );
        assert_eq!(fed(4, 8, &[b"abcdefghij"]).last(3), (b"hij".to_vec(), true));
        // A gap between head and tail: only the tail is the end.
        assert_eq!(fed(2, 3, &[b"abcdefgh"]).last(10), (b"fgh".to_vec(), true));
        // The cut never leaves half a character.
        assert_eq!(fed(0, 16, &["xé".as_bytes()]).last(1), (Vec::new(), true));
    }

    #[test]
    fn ring_keeps_last_bytes_and_marks_truncation() {
        let capture = fed(0, 4, &[b"abc", b"def", b"gh"]);
        assert_eq!(capture.tail(), b"efgh");
        assert_eq!(capture.bytes_seen(), 8);
        assert_eq!(capture.bytes_retained(), 4);
        let excerpt = capture.plain(4);
        assert_eq!(
            excerpt.text,
            "[stderr truncated: kept last 4 of 8 bytes]\nefgh"
        );
    }

    #[test]
    fn big_chunk_replaces_ring() {
        let capture = fed(0, 4, &[b"ab", b"0123456789"]);
        assert_eq!(capture.tail(), b"6789");
    }

    #[test]
    fn head_and_tail_are_never_joined_silently() {
        let capture = fed(3, 3, &[b"abcdefghij"]);
        assert_eq!(capture.head(), b"abc");
        assert_eq!(capture.tail(), b"hij");
        let text = capture.plain(6).text;
        assert_eq!(
            text,
            "[stderr truncated: kept first 3 and last 3 of 10 bytes]\nabc\n\
             [stderr: 4 bytes dropped here]\nhij"
        );
    }

    #[test]
    fn head_and_tail_exactly_filling_loses_nothing() {
        let capture = fed(3, 3, &[b"ab", b"cdef"]);
        assert!(!capture.truncated());
        assert_eq!(capture.plain(6).text, "abcdef");
    }

    #[test]
    fn head_never_ends_inside_a_character() {
        // "é" is C3 A9; the head limit falls between its two bytes.
        let capture = fed(2, 8, &[b"a\xC3\xA9z"]);
        assert_eq!(capture.head(), b"a");
        assert_eq!(capture.tail(), b"\xC3\xA9z");
        assert!(!capture.truncated());
    }

    #[test]
    fn tail_never_starts_inside_a_character() {
        // "€" is E2 82 AC; the ring keeps "\x82\xACx" which must be cut.
        let capture = fed(0, 3, &[b"ab\xE2\x82\xACx"]);
        assert_eq!(capture.tail(), b"x");
        assert_eq!(capture.bytes_retained(), 1);
        assert!(capture.plain(3).text.ends_with("]\nx"));
    }

    #[test]
    fn invalid_bytes_become_replacement_only_in_text() {
        let capture = fed(0, 16, &[b"ok\xFF\xFEok"]);
        assert_eq!(capture.tail(), b"ok\xFF\xFEok");
        assert_eq!(capture.plain(16).text, "ok\u{FFFD}\u{FFFD}ok");
    }

    #[test]
    fn excerpt_budget_smaller_than_retained() {
        let capture = fed(0, 10, &[b"0123456789"]);
        let excerpt = capture.plain(4);
        assert_eq!(excerpt.tail_shown, 4);
        assert_eq!(
            excerpt.text,
            "[stderr truncated: kept all 10 bytes; showing the last 4]\n6789"
        );
        // Kept less than seen, shown less than kept: each number said.
        let capture = fed(0, 6, &[b"0123456789"]);
        assert_eq!(
            capture.plain(4).text,
            "[stderr truncated: kept last 6 of 10 bytes; showing the last 4]\n6789"
        );
        let capture = fed(3, 3, &[b"0123456789"]);
        assert_eq!(
            capture.plain(4).text,
            "[stderr truncated: kept first 3 and last 3 of 10 bytes; showing the first 2 and the last 2]\n01\n[stderr: 6 bytes dropped here]\n89"
        );
    }

    #[test]
    fn zero_limits_count_everything_keep_nothing() {
        let capture = fed(0, 0, &[b"abc"]);
        assert_eq!(capture.bytes_retained(), 0);
        assert_eq!(
            capture.plain(0).text,
            "[stderr truncated: kept 0 of 3 bytes]\n"
        );
    }

    #[test]
    fn head_only() {
        let capture = fed(4, 0, &[b"abcdefgh"]);
        assert_eq!(
            capture.plain(100).text,
            "[stderr truncated: kept first 4 of 8 bytes]\nabcd"
        );
    }

    #[test]
    fn utf8_prefix_rules() {
        assert_eq!(utf8_complete_prefix_len(b"ab"), 2);
        assert_eq!(utf8_complete_prefix_len(b"a\xE2\x82"), 1);
        assert_eq!(utf8_complete_prefix_len(b"a\xE2\x82\xAC"), 4);
        assert_eq!(utf8_complete_prefix_len(b"a\xF0\x9F\x98"), 1);
        assert_eq!(utf8_complete_prefix_len(b"\xFF"), 1);
        assert_eq!(leading_continuation_len(b"\x82\xACx"), 2);
        assert_eq!(leading_continuation_len(b"\x80\x80\x80\x80"), 3);
    }

    mod properties {
        use super::*;
        use proptest::collection::vec;
        use proptest::prelude::*;

        /// Text with multibyte characters, or arbitrary bytes.
        fn stream() -> impl Strategy<Value = Vec<u8>> {
            prop_oneof![
                "[a-zé€😀\\n]{0,400}".prop_map(String::into_bytes),
                vec(any::<u8>(), 0..400),
            ]
        }

        fn split<'a>(data: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
            let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut from = 0;
            for cut in cuts {
                chunks.push(&data[from..cut]);
                from = cut;
            }
            chunks.push(&data[from..]);
            chunks
        }

        fn same_retained(a: &Capture, b: &Capture, budget: usize) -> Result<(), TestCaseError> {
            prop_assert_eq!(a.head(), b.head());
            prop_assert_eq!(a.tail(), b.tail());
            prop_assert_eq!(a.bytes_seen(), b.bytes_seen());
            prop_assert_eq!(a.bytes_retained(), b.bytes_retained());
            prop_assert_eq!(a.plain(budget), b.plain(budget));
            Ok(())
        }

        proptest! {
            #[test]
            fn every_split_retains_the_same(
                data in stream(),
                head in 0usize..40,
                tail in 0usize..40,
                cuts in vec(0usize..1000, 0..12),
                budget in 0usize..100,
            ) {
                let whole = fed(head, tail, &[&data]);
                let pieces = fed(head, tail, &split(&data, &cuts));
                prop_assert_eq!(whole.bytes_seen(), data.len() as u64);
                same_retained(&whole, &pieces, budget)?;
            }

            #[test]
            fn skipping_superseded_bytes_retains_the_same(
                data in stream(),
                head in 0usize..40,
                tail in 0usize..40,
                cuts in vec(0usize..1000, 2),
                budget in 0usize..100,
            ) {
                // Split into what is pushed, what is skipped unread and the
                // newest bytes, as a caller holding the tail elsewhere does:
                // the skip comes after the head closes, and at least
                // `tail` bytes follow it.
                let skip_from = (head + cuts[0] % 8).min(data.len());
                let newest_from = data.len().saturating_sub(tail + cuts[1] % 8).max(skip_from);
                let mut skipping = fed(head, tail, &[&data[..skip_from]]);
                prop_assume!(skipping.head_closed() && data.len() - newest_from >= tail);
                skipping.skip_superseded((newest_from - skip_from) as u64);
                skipping.push(&data[newest_from..]);
                same_retained(&fed(head, tail, &[&data]), &skipping, budget)?;
            }

            #[test]
            fn limits_and_cut_rules_hold(
                data in stream(),
                head in 0usize..40,
                tail in 0usize..40,
                budget in 0usize..100,
            ) {
                let capture = fed(head, tail, &[&data]);
                let retained = capture.bytes_retained() as usize;
                prop_assert!(retained <= head + tail);
                prop_assert_eq!(retained, capture.head().len() + capture.tail().len());
                prop_assert_eq!(capture.truncated(), retained < data.len());
                // Head is a prefix, tail a suffix. When the stream is valid
                // UTF-8, no cut splits a character: both stay valid, and the
                // text has no U+FFFD that the stream did not have.
                let tail = capture.tail();
                prop_assert!(data.starts_with(capture.head()));
                prop_assert!(data.ends_with(&tail));
                if let Ok(text) = std::str::from_utf8(&data) {
                    prop_assert!(std::str::from_utf8(capture.head()).is_ok());
                    prop_assert!(std::str::from_utf8(&tail).is_ok());
                    let replacement = char::REPLACEMENT_CHARACTER;
                    let replaced = capture.plain(budget).text.contains(replacement);
                    prop_assert!(!replaced || text.contains(replacement), "cut split a character");
                }
                // While the stream fits (with room for one cut character),
                // nothing is lost and nothing is marked.
                if data.len() + 3 <= head + capture.tail_limit() {
                    prop_assert!(!capture.truncated());
                }
                let excerpt = capture.plain(budget);
                prop_assert!(excerpt.head_shown + excerpt.tail_shown <= budget);
                prop_assert_eq!(
                    excerpt.truncated,
                    excerpt.head_shown + excerpt.tail_shown < data.len()
                );
                if excerpt.truncated {
                    prop_assert!(excerpt.text.starts_with("[stderr truncated: kept "));
                }
            }
        }
    }
}
