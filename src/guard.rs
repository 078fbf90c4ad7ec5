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

use crate::framing::{Frame, Framer};

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
    /// Junk glued to the front of a JSON-RPC message on one line (a
    /// `print` with no newline); the message itself went through.
    GluedBefore,
    /// Junk after a JSON-RPC message on the same line.
    GluedAfter,
}

/// Bytes of the first diverted line kept for the record.
pub const FIRST_DIVERTED_BYTES: usize = 256;

#[derive(Debug, Clone)]
pub struct Guard {
    framer: Framer,
    pub lines_forwarded: u64,
    pub lines_diverted: u64,
    pub bytes_diverted: u64,
    pub first_diverted: Option<Vec<u8>>,
    /// JSON-RPC messages forwarded out of a line with junk glued to them.
    pub lines_salvaged: u64,
}

/// Bytes of a line searched for a glued message, and `{` tried in them.
const SALVAGE_ATTEMPTS: usize = 4;

fn is_json_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// One complete line (with its newline) is one JSON object: `{` first,
/// and nothing but JSON whitespace after the value. JSON text is UTF-8
/// (RFC 8259, 8.1), in every string, also the ones nobody reads.
pub fn is_json_object(line: &[u8]) -> bool {
    if std::str::from_utf8(line).is_err() {
        return false;
    }
    match line.iter().position(|b| !is_json_space(*b)) {
        Some(i) if line[i] == b'{' => serde_json::from_slice::<IgnoredAny>(line).is_ok(),
        _ => false,
    }
}

/// One JSON object, or a JSON-RPC batch: a non-empty array of objects,
/// all of it UTF-8.
pub fn is_json_message(line: &[u8]) -> bool {
    if std::str::from_utf8(line).is_err() {
        return false;
    }
    match line.iter().position(|b| !is_json_space(*b)) {
        Some(i) if line[i] == b'{' => serde_json::from_slice::<IgnoredAny>(line).is_ok(),
        Some(i) if line[i] == b'[' => {
            serde_json::from_slice::<Vec<&serde_json::value::RawValue>>(line)
                .is_ok_and(|all| !all.is_empty() && all.iter().all(|v| v.get().starts_with('{')))
        }
        _ => false,
    }
}

/// A JSON-RPC object: `"jsonrpc"` is a field (what tells a glued message
/// from a brace in a log line).
#[derive(serde::Deserialize)]
struct JsonRpc<'a> {
    #[serde(borrow)]
    jsonrpc: std::borrow::Cow<'a, str>,
}

/// Where the first JSON-RPC object sits in a line that is not one as a
/// whole: `line[start..end]` is the object; what is around it is junk.
/// Each candidate brace that turns out not to start one uses one of
/// `attempts` (a line gets [`SALVAGE_ATTEMPTS`] in all, so a long line of
/// braces costs a bounded number of parses).
pub fn find_glued(line: &[u8], attempts: &mut usize) -> Option<(usize, usize)> {
    let mut from = 0;
    while *attempts > 0 {
        let start = from + memchr::memchr(b'{', &line[from..])?;
        let mut values =
            serde_json::Deserializer::from_slice(&line[start..]).into_iter::<JsonRpc>();
        if let Some(Ok(message)) = values.next()
            && message.jsonrpc == "2.0"
            && std::str::from_utf8(&line[start..start + values.byte_offset()]).is_ok()
        {
            return Some((start, start + values.byte_offset()));
        }
        *attempts -= 1;
        from = start + 1;
    }
    None
}

impl Guard {
    pub fn new(max_message: usize) -> Guard {
        Guard {
            framer: Framer::new(max_message),
            lines_forwarded: 0,
            lines_diverted: 0,
            bytes_diverted: 0,
            first_diverted: None,
            lines_salvaged: 0,
        }
    }

    /// Feed a chunk: approved lines are appended to `out`; everything else
    /// goes to `divert` with its reason.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        out: &mut Vec<u8>,
        divert: &mut impl FnMut(&[u8], DivertReason),
    ) {
        let mut accept = |line: &[u8]| {
            let message = is_json_message(line);
            if message {
                out.extend_from_slice(line);
            }
            message
        };
        self.feed_lines(chunk, &mut accept, divert);
    }

    /// Feed a chunk: each complete line (newline included) is offered to
    /// `accept`, which takes it and returns true if it is one JSON message
    /// (an object, or a batch of them: what [`is_json_message`] says; the
    /// session layer's parse says it in the same pass that reads the
    /// message). Everything else goes to `divert` with its reason.
    pub fn feed_lines(
        &mut self,
        chunk: &[u8],
        accept: &mut impl FnMut(&[u8]) -> bool,
        divert: &mut impl FnMut(&[u8], DivertReason),
    ) {
        let mut framer = std::mem::replace(&mut self.framer, Framer::new(0));
        framer.feed(chunk, &mut |frame| match frame {
            Frame::Line(line) => self.judge(line, accept, divert),
            // Too long to hold: divert what we have and the rest as it comes.
            Frame::Overlong { bytes, first: true } => {
                self.divert(bytes, DivertReason::TooLong, divert, true);
            }
            Frame::Overlong {
                bytes,
                first: false,
            } => {
                self.divert(bytes, DivertReason::TooLongContinued, divert, false);
            }
        });
        self.framer = framer;
    }

    fn judge(
        &mut self,
        line: &[u8],
        accept: &mut impl FnMut(&[u8]) -> bool,
        divert: &mut impl FnMut(&[u8], DivertReason),
    ) {
        if accept(line) {
            self.lines_forwarded += 1;
            return;
        }
        // Salvage every message glued on the line, in order: each goes on
        // with a newline of its own (the last with the line's), and the
        // junk around them is diverted, each part as one diverted line.
        let mut attempts = SALVAGE_ATTEMPTS;
        let mut rest = line;
        let mut salvaged = false;
        while let Some((start, end)) = find_glued(rest, &mut attempts) {
            let before = &rest[..start];
            let spaces_before = before.iter().all(|b| is_json_space(*b));
            if !spaces_before {
                self.divert(before, DivertReason::GluedBefore, divert, true);
            }
            let from = if spaces_before { 0 } else { start };
            let last = rest[end..].iter().all(|b| is_json_space(*b));
            let taken = if last {
                accept(&rest[from..])
            } else {
                let mut message = rest[from..end].to_vec();
                message.push(b'\n');
                accept(&message)
            };
            if taken {
                self.lines_forwarded += 1;
                self.lines_salvaged += 1;
            } else {
                // find_glued's parse took it, the message parse did not:
                // diverted, never dropped.
                let object = if last {
                    &rest[from..]
                } else {
                    &rest[from..end]
                };
                self.divert(object, DivertReason::NotJsonObject, divert, true);
            }
            salvaged = true;
            if last {
                return;
            }
            rest = &rest[end..];
        }
        if salvaged {
            let rest = rest.strip_suffix(b"\n").unwrap_or(rest);
            self.divert(rest, DivertReason::GluedAfter, divert, true);
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
        let pending = self.framer.finish();
        if !pending.is_empty() {
            self.divert(&pending, DivertReason::PartialAtEof, divert, true);
        }
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

    /// A glued message the caller's parse refuses is diverted, not lost:
    /// every byte is either forwarded or diverted, and counted.
    #[test]
    fn a_glued_message_the_caller_refuses_is_diverted() {
        let mut guard = Guard::new(1 << 20);
        let mut diverted = Vec::new();
        let line = b"Loading...{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}} done\n";
        guard.feed_lines(line, &mut |_| false, &mut |bytes, reason| {
            diverted.push((bytes.to_vec(), reason))
        });
        let reasons: Vec<DivertReason> = diverted.iter().map(|(_, r)| *r).collect();
        assert_eq!(
            reasons,
            [
                DivertReason::GluedBefore,
                DivertReason::NotJsonObject,
                DivertReason::GluedAfter
            ]
        );
        let bytes: usize = diverted.iter().map(|(b, _)| b.len()).sum();
        assert_eq!(bytes, line.len() - 1, "every byte but the newline");
        assert_eq!((guard.lines_forwarded, guard.lines_salvaged), (0, 0));
    }

    /// A line that is not UTF-8 is not JSON, even where the bad byte sits
    /// in a field nothing reads; the line after it passes.
    #[test]
    fn a_line_that_is_not_utf8_is_diverted_whole() {
        let bad: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"\xff\"}}\n";
        let good = "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"t\":\"日本\"}}\n".as_bytes();
        let (out, diverted, _) = run(1 << 20, &[bad, good]);
        assert_eq!(out, good);
        assert_eq!(diverted.len(), 1);
        assert_eq!(diverted[0].0, bad);
        assert!(!is_json_object(bad) && is_json_object(good));
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
    fn a_message_glued_to_a_stray_print_is_salvaged_and_the_junk_diverted() {
        let msg = b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}";
        let mut input = b"Loading\xE2\x80\xA6".to_vec();
        input.extend_from_slice(msg);
        input.extend_from_slice(b" done.\r\n");
        input.extend_from_slice(b"{x}");
        input.extend_from_slice(msg);
        input.extend_from_slice(b"  \n");
        let (out, diverted, guard) = run(1024, &[&input]);
        let mut expected = msg.to_vec();
        expected.push(b'\n');
        expected.extend_from_slice(msg);
        expected.extend_from_slice(b"  \n");
        assert_eq!(out, expected, "each message byte-exact, on its own line");
        assert_eq!(
            diverted,
            [
                (b"Loading\xE2\x80\xA6".to_vec(), DivertReason::GluedBefore),
                (b" done.\r".to_vec(), DivertReason::GluedAfter),
                (b"{x}".to_vec(), DivertReason::GluedBefore),
            ]
        );
        assert_eq!((guard.lines_forwarded, guard.lines_salvaged), (2, 2));
        assert_eq!(
            out.len() as u64 + guard.bytes_diverted,
            input.len() as u64,
            "nothing lost or invented"
        );
    }

    /// Two messages glued on one line (a server that wrote one without
    /// its newline) are both salvaged, each on its own line, with any junk
    /// between and around them diverted.
    #[test]
    fn every_message_glued_on_one_line_is_salvaged() {
        let one = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}";
        let two = b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":null}";
        let three = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}";
        let mut input = one.to_vec();
        input.extend_from_slice(two);
        input.extend_from_slice(b" -- ");
        input.extend_from_slice(three);
        input.extend_from_slice(b"\n");
        let (out, diverted, guard) = run(1024, &[&input]);
        let expected = [&one[..], b"\n", two, b"\n", three, b"\n"].concat();
        assert_eq!(out, expected);
        assert_eq!(diverted, [(b" -- ".to_vec(), DivertReason::GluedBefore)]);
        assert_eq!((guard.lines_forwarded, guard.lines_salvaged), (3, 3));
        assert_eq!(
            out.len() as u64 + guard.bytes_diverted,
            input.len() as u64 + 2,
            "nothing lost; a newline added for each message but the last"
        );
    }

    #[test]
    fn salvage_needs_a_jsonrpc_object_and_tries_a_bounded_number_of_braces() {
        // Braces in a log line are not a message.
        let (out, diverted, _) = run(1024, &[b"state {\"a\":1} ok\n"]);
        assert!(out.is_empty());
        assert_eq!(diverted[0].1, DivertReason::NotJsonObject);
        // Past the fourth brace nothing more is tried.
        let far = b"{ { { { {\"jsonrpc\":\"2.0\",\"id\":1}\n";
        let (out, _, _) = run(1024, &[far]);
        assert!(out.is_empty());
        let near = b"{ { { {\"jsonrpc\":\"2.0\",\"id\":1}\n";
        let (out, _, _) = run(1024, &[near]);
        assert_eq!(out, b"{\"jsonrpc\":\"2.0\",\"id\":1}\n");
    }

    #[test]
    fn a_batch_of_objects_is_one_message() {
        let (out, diverted, _) = run(1024, &[b"[{\"id\":1},{\"id\":2}]\n[1,2]\n[]\n"]);
        assert_eq!(out, b"[{\"id\":1},{\"id\":2}]\n");
        assert_eq!(diverted.len(), 2);
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
        assert!(guard.framer.held() <= 16, "the held line is bounded");
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
                // Every forwarded line is one JSON object or batch.
                for line in whole_out.split_inclusive(|b| *b == b'\n') {
                    prop_assert!(is_json_message(line));
                }
            }
        }
    }
}
