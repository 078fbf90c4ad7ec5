//! The stdout guard for JSON-RPC over stdio: frame the helper's stdout on
//! newlines and let through only complete lines that are one JSON object.
//! Pure: bytes in, approved bytes and diverted bytes out.
//!
//! The MCP stdio transport says a server MUST NOT write anything to stdout
//! that is not a valid MCP message. One stray `print` (a banner, a
//! progress line, a BOM) breaks the host's parser, and a line without a
//! newline glues onto the next response. The guard diverts all of those
//! into the stderr capture, counted, and never merges, splits or rewrites
//! a forwarded message. One bad line never ends the session.
//!
//! Memory: a partial line is held until its newline, up to
//! `max_message` bytes. A longer line is diverted as it streams, never held.

use serde::de::IgnoredAny;

/// Why a line did not reach the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DivertReason {
    /// A complete line that is not one JSON object.
    NotJsonObject,
    /// The start of a line longer than `max_message`.
    TooLong,
    /// More bytes of that too-long line.
    TooLongContinued,
    /// Bytes with no newline when the stream ended.
    PartialAtEof,
}

/// Bytes of the first diverted line kept for the record.
pub const FIRST_DIVERTED_BYTES: usize = 256;

#[derive(Debug, Clone)]
pub struct Guard {
    max_message: usize,
    pending: Vec<u8>,
    /// Inside a too-long line: divert until its newline.
    skipping: bool,
    pub lines_forwarded: u64,
    pub lines_diverted: u64,
    pub bytes_diverted: u64,
    pub first_diverted: Option<Vec<u8>>,
}

/// One complete line (with its newline) is one JSON object: `{` first,
/// and nothing but JSON whitespace after the value.
pub fn is_json_object(line: &[u8]) -> bool {
    let start = line
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
    match start {
        Some(i) if line[i] == b'{' => serde_json::from_slice::<IgnoredAny>(line).is_ok(),
        _ => false,
    }
}

impl Guard {
    pub fn new(max_message: usize) -> Guard {
        Guard {
            max_message,
            pending: Vec::new(),
            skipping: false,
            lines_forwarded: 0,
            lines_diverted: 0,
            bytes_diverted: 0,
            first_diverted: None,
        }
    }

    /// Feed a chunk: approved lines are appended to `out`; everything else
    /// goes to `divert` with its reason.
    pub fn feed(
        &mut self,
        mut chunk: &[u8],
        out: &mut Vec<u8>,
        divert: &mut impl FnMut(&[u8], DivertReason),
    ) {
        while !chunk.is_empty() {
            let newline = memchr::memchr(b'\n', chunk);
            let (piece, rest) = match newline {
                Some(i) => chunk.split_at(i + 1),
                None => (chunk, &chunk[chunk.len()..]),
            };
            chunk = rest;
            let complete = newline.is_some();
            if self.skipping {
                self.divert(piece, DivertReason::TooLongContinued, divert, false);
                self.skipping = !complete;
                continue;
            }
            if self.pending.len() + piece.len() > self.max_message {
                // Too long to hold: divert what we have and the rest as it comes.
                let mut head = std::mem::take(&mut self.pending);
                head.extend_from_slice(piece);
                self.divert(&head, DivertReason::TooLong, divert, true);
                self.skipping = !complete;
                continue;
            }
            if !complete {
                self.pending.extend_from_slice(piece);
                continue;
            }
            if self.pending.is_empty() {
                self.judge(piece, out, divert);
            } else {
                let mut line = std::mem::take(&mut self.pending);
                line.extend_from_slice(piece);
                self.judge(&line, out, divert);
                line.clear();
                self.pending = line;
            }
        }
    }

    fn judge(
        &mut self,
        line: &[u8],
        out: &mut Vec<u8>,
        divert: &mut impl FnMut(&[u8], DivertReason),
    ) {
        if is_json_object(line) {
            out.extend_from_slice(line);
            self.lines_forwarded += 1;
        } else {
            self.divert(line, DivertReason::NotJsonObject, divert, true);
        }
    }

    fn divert(
        &mut self,
        bytes: &[u8],
        reason: DivertReason,
        divert: &mut impl FnMut(&[u8], DivertReason),
        new_line: bool,
    ) {
        if new_line {
            self.lines_diverted += 1;
        }
        self.bytes_diverted += bytes.len() as u64;
        if self.first_diverted.is_none() {
            let keep = bytes.len().min(FIRST_DIVERTED_BYTES);
            self.first_diverted = Some(bytes[..keep].to_vec());
        }
        divert(bytes, reason);
    }

    /// The stream ended: an unfinished line never reaches the host.
    pub fn finish(&mut self, divert: &mut impl FnMut(&[u8], DivertReason)) {
        let pending = std::mem::take(&mut self.pending);
        if !pending.is_empty() {
            self.divert(&pending, DivertReason::PartialAtEof, divert, true);
        }
        self.skipping = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Diverted = Vec<(Vec<u8>, DivertReason)>;

    fn run(max: usize, chunks: &[&[u8]]) -> (Vec<u8>, Diverted, Guard) {
        let mut guard = Guard::new(max);
        let mut out = Vec::new();
        let mut diverted = Vec::new();
        for chunk in chunks {
            guard.feed(chunk, &mut out, &mut |bytes, reason| {
                diverted.push((bytes.to_vec(), reason))
            });
        }
        guard.finish(&mut |bytes, reason| diverted.push((bytes.to_vec(), reason)));
        (out, diverted, guard)
    }

    #[test]
    fn objects_pass_byte_exact_and_the_rest_is_diverted() {
        let (out, diverted, guard) = run(
            1024,
            &[
                b"{\"jsonrpc\":\"2.0\",\"id\":1}\nLoading...\n",
                b"  {\"a\" : [1, 2]}\r\n[1]\n\n",
            ],
        );
        assert_eq!(
            out,
            b"{\"jsonrpc\":\"2.0\",\"id\":1}\n  {\"a\" : [1, 2]}\r\n"
        );
        let lines: Vec<&[u8]> = diverted.iter().map(|(b, _)| b.as_slice()).collect();
        assert_eq!(lines, [&b"Loading...\n"[..], b"[1]\n", b"\n"]);
        assert_eq!(guard.lines_forwarded, 2);
        assert_eq!(guard.lines_diverted, 3);
        assert_eq!(guard.bytes_diverted, 11 + 4 + 1);
        assert_eq!(guard.first_diverted.as_deref(), Some(&b"Loading...\n"[..]));
    }

    #[test]
    fn messages_split_across_chunks_are_joined_not_merged() {
        let (out, diverted, _) = run(1024, &[b"{\"id\":", b"1}\n{\"id\"", b":2}\n"]);
        assert_eq!(out, b"{\"id\":1}\n{\"id\":2}\n");
        assert!(diverted.is_empty());
    }

    #[test]
    fn bom_invalid_json_and_two_objects_on_a_line_are_diverted() {
        let (out, diverted, _) = run(
            1024,
            &[b"\xEF\xBB\xBF{\"id\":1}\n{\"id\":2}{\"id\":3}\n{\"id\":\n"],
        );
        assert!(out.is_empty());
        assert_eq!(diverted.len(), 3);
    }

    #[test]
    fn partial_line_at_eof_is_diverted() {
        let (out, diverted, _) = run(1024, &[b"{\"id\":1}\n{\"id\":2}"]);
        assert_eq!(out, b"{\"id\":1}\n");
        assert_eq!(
            diverted,
            [(b"{\"id\":2}".to_vec(), DivertReason::PartialAtEof)]
        );
    }

    #[test]
    fn too_long_lines_stream_through_divert_without_being_held() {
        let long = [b'x'; 30];
        let (out, diverted, guard) = run(16, &[&long[..10], &long[10..], b"xx\n{\"ok\":1}\n"]);
        assert_eq!(out, b"{\"ok\":1}\n");
        assert_eq!(diverted[0].1, DivertReason::TooLong);
        assert!(
            diverted[1..]
                .iter()
                .all(|(_, r)| *r == DivertReason::TooLongContinued)
        );
        let total: usize = diverted.iter().map(|(b, _)| b.len()).sum();
        assert_eq!(total, 33);
        assert_eq!(guard.lines_diverted, 1);
        assert!(guard.pending.len() <= 16, "the held line is bounded");
    }

    mod properties {
        use super::*;
        use proptest::collection::vec;
        use proptest::prelude::*;

        fn stream() -> impl Strategy<Value = Vec<u8>> {
            let line = prop_oneof![
                Just(b"{\"jsonrpc\":\"2.0\",\"id\":1}\n".to_vec()),
                Just(b"{\"a\": [1, {\"b\": \"\\n\"}]}\r\n".to_vec()),
                Just(b"Loading...\n".to_vec()),
                Just(b"\n".to_vec()),
                vec(any::<u8>(), 0..40),
            ];
            vec(line, 0..12).prop_map(|lines| lines.concat())
        }

        proptest! {
            #[test]
            fn every_split_forwards_the_same_messages(
                data in stream(),
                cuts in vec(0usize..1000, 0..10),
                max in 8usize..64,
            ) {
                let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
                cuts.sort_unstable();
                let mut chunks: Vec<&[u8]> = Vec::new();
                let mut from = 0;
                for cut in cuts {
                    chunks.push(&data[from..cut]);
                    from = cut;
                }
                chunks.push(&data[from..]);
                let (whole_out, whole_div, whole) = run(max, &[&data]);
                let (split_out, split_div, split) = run(max, &chunks);
                prop_assert_eq!(&whole_out, &split_out);
                let bytes = |d: &Diverted| d.iter().flat_map(|(b, _)| b.clone()).collect::<Vec<u8>>();
                prop_assert_eq!(bytes(&whole_div), bytes(&split_div));
                prop_assert_eq!(whole.lines_forwarded, split.lines_forwarded);
                prop_assert_eq!(whole.lines_diverted, split.lines_diverted);
                // Nothing is lost or invented: forwarded + diverted = input.
                prop_assert_eq!(whole_out.len() as u64 + whole.bytes_diverted, data.len() as u64);
                // Every forwarded line is one JSON object.
                for line in whole_out.split_inclusive(|b| *b == b'\n') {
                    prop_assert!(is_json_object(line));
                }
            }
        }
    }
}
