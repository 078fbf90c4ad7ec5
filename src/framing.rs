//! Newline framing with a bound, shared by the stdout guard (the server's
//! lines) and the stdin relay (the client's). Pure: chunks in, frames out.
//!
//! A line is held until its newline, up to `max` bytes. A longer line is
//! never held: what was held and the rest of it come out as they arrive,
//! as `Overlong` pieces, so memory stays bounded by `max`.

/// What a chunk turned into, in order.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame<'a> {
    /// A complete line, newline included.
    Line(&'a [u8]),
    /// A piece of a line over the bound; `first` on the piece that found
    /// it too long (which carries what had been held).
    Overlong { bytes: &'a [u8], first: bool },
}

#[derive(Debug, Clone)]
pub(crate) struct Framer {
    max: usize,
    pending: Vec<u8>,
    /// Inside a line over the bound: pieces pass until its newline.
    skipping: bool,
}

/// After a huge held line, give the memory back.
const KEEP_CAPACITY: usize = 1 << 20;

impl Framer {
    pub(crate) fn new(max: usize) -> Framer {
        Framer {
            max,
            pending: Vec::new(),
            skipping: false,
        }
    }

    /// True between lines: nothing of a line has come out yet.
    pub(crate) fn at_boundary(&self) -> bool {
        !self.skipping
    }

    /// Frame a chunk.
    pub(crate) fn feed(&mut self, mut chunk: &[u8], frame: &mut impl FnMut(Frame<'_>)) {
        while !chunk.is_empty() {
            let newline = memchr::memchr(b'\n', chunk);
            let (piece, rest) = match newline {
                Some(i) => chunk.split_at(i + 1),
                None => (chunk, &chunk[chunk.len()..]),
            };
            chunk = rest;
            let complete = newline.is_some();
            if self.skipping {
                frame(Frame::Overlong {
                    bytes: piece,
                    first: false,
                });
                self.skipping = !complete;
            } else if self.pending.len() + piece.len() > self.max {
                let mut head = std::mem::take(&mut self.pending);
                head.extend_from_slice(piece);
                frame(Frame::Overlong {
                    bytes: &head,
                    first: true,
                });
                self.skipping = !complete;
            } else if !complete {
                self.pending.extend_from_slice(piece);
            } else if self.pending.is_empty() {
                frame(Frame::Line(piece));
            } else {
                let mut line = std::mem::take(&mut self.pending);
                line.extend_from_slice(piece);
                frame(Frame::Line(&line));
                line.clear();
                if line.capacity() <= KEEP_CAPACITY {
                    self.pending = line;
                }
            }
        }
    }

    /// The stream ended: the unfinished line, if any (empty if none).
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        self.skipping = false;
        std::mem::take(&mut self.pending)
    }

    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(max: usize, chunks: &[&[u8]]) -> (Vec<(String, Vec<u8>)>, Vec<u8>) {
        let mut framer = Framer::new(max);
        let mut out = Vec::new();
        for chunk in chunks {
            framer.feed(chunk, &mut |frame| {
                out.push(match frame {
                    Frame::Line(bytes) => ("line".to_string(), bytes.to_vec()),
                    Frame::Overlong { bytes, first } => (format!("long {first}"), bytes.to_vec()),
                })
            });
            assert!(framer.held() <= max, "the held line is bounded");
        }
        (out, framer.finish())
    }

    #[test]
    fn lines_are_joined_across_chunks_and_the_last_byte_is_kept() {
        let (out, rest) = frames(64, &[b"ab", b"c\nd", b"e\n\nf"]);
        let lines: Vec<&[u8]> = out.iter().map(|(_, b)| b.as_slice()).collect();
        assert_eq!(lines, [&b"abc\n"[..], b"de\n", b"\n"]);
        assert_eq!(rest, b"f", "the unterminated end");
    }

    #[test]
    fn a_line_over_the_bound_streams_out_and_framing_resumes_after_it() {
        let (out, rest) = frames(4, &[b"abc", b"defg", b"hi\nok\n"]);
        assert_eq!(
            out,
            [
                ("long true".to_string(), b"abcdefg".to_vec()),
                ("long false".to_string(), b"hi\n".to_vec()),
                ("line".to_string(), b"ok\n".to_vec()),
            ]
        );
        assert!(rest.is_empty());
        // Exactly at the bound is still a line.
        let (out, _) = frames(4, &[b"abc\n"]);
        assert_eq!(out, [("line".to_string(), b"abc\n".to_vec())]);
    }
}
