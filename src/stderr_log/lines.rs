//! What goes into the stderr log, pure: the helper's bytes masked line by
//! line (a secret split across reads is still masked: a partial line waits
//! for its newline, up to `redact::MAX_CARRY` bytes), an optional RFC 3339
//! prefix once per line, and mcp-bound's own marker lines. Output is
//! appended as whole lines (a piece of an over-long line aside), so
//! rotation can always cut between lines.

use crate::redact::{LineRedactor, Redactor};

pub(crate) struct Lines {
    redactor: LineRedactor,
    timestamps: bool,
    /// The last output ended with a newline: the next byte starts a line.
    at_line_start: bool,
    scratch: Vec<u8>,
}

impl Lines {
    pub(super) fn new(redactor: Redactor, timestamps: bool) -> Lines {
        Lines {
            redactor: LineRedactor::new(redactor),
            timestamps,
            at_line_start: true,
            scratch: Vec::new(),
        }
    }

    /// Bytes read at `now` (RFC 3339): finished lines are appended to `out`.
    pub(super) fn feed(&mut self, now: &str, bytes: &[u8], out: &mut Vec<u8>) {
        self.scratch.clear();
        self.redactor.feed(bytes, &mut self.scratch);
        self.emit(now, out);
    }

    /// The stream ended: a held partial line goes out, with a newline.
    pub(super) fn finish(&mut self, now: &str, out: &mut Vec<u8>) {
        self.scratch.clear();
        self.redactor.flush(&mut self.scratch);
        if !self.scratch.is_empty() && self.scratch.last() != Some(&b'\n') {
            self.scratch.push(b'\n');
        }
        self.emit(now, out);
    }

    /// A line of mcp-bound's own, at a line boundary.
    pub(super) fn marker(&mut self, now: &str, text: &str, out: &mut Vec<u8>) {
        if !self.at_line_start {
            // A piece of an over-long line is out: end it first.
            out.push(b'\n');
        }
        if self.timestamps {
            out.extend_from_slice(now.as_bytes());
            out.push(b' ');
        }
        out.extend_from_slice(b"[mcp-bound: ");
        out.extend_from_slice(text.as_bytes());
        out.extend_from_slice(b"]\n");
        self.at_line_start = true;
    }

    fn emit(&mut self, now: &str, out: &mut Vec<u8>) {
        if self.scratch.is_empty() {
            return;
        }
        if !self.timestamps {
            out.extend_from_slice(&self.scratch);
            self.at_line_start = self.scratch.last() == Some(&b'\n');
            return;
        }
        let mut rest = &self.scratch[..];
        while !rest.is_empty() {
            let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
            let (piece, tail) = rest.split_at(end);
            rest = tail;
            if self.at_line_start {
                out.extend_from_slice(now.as_bytes());
                out.push(b' ');
            }
            out.extend_from_slice(piece);
            self.at_line_start = piece.last() == Some(&b'\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(timestamps: bool, reads: &[(&str, &[u8])]) -> Vec<String> {
        let mut lines = Lines::new(Redactor::default(), timestamps);
        let mut out = Vec::new();
        for (now, bytes) in reads {
            lines.feed(now, bytes, &mut out);
        }
        lines.finish("END", &mut out);
        String::from_utf8(out)
            .unwrap()
            .split_inclusive('\n')
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn each_line_gets_one_prefix_and_a_split_secret_is_masked() {
        let out = run(
            true,
            &[
                ("T1", b"one\ntoken=abc1"),
                ("T2", b"23secret\ntwo"),
                ("T3", b"\n"),
            ],
        );
        assert_eq!(
            out,
            ["T1 one\n", "T2 token=[REDACTED]\n", "T3 two\n"],
            "a line gets the time of the read that finished it"
        );
        let out = run(false, &[("T", b"last line without newline")]);
        assert_eq!(out, ["last line without newline\n"]);
    }

    #[test]
    fn a_marker_starts_its_own_line() {
        let mut lines = Lines::new(Redactor::default(), false);
        let mut out = Vec::new();
        let long = vec![b'x'; crate::redact::MAX_CARRY + 10];
        lines.feed("T", &long, &mut out);
        let before = out.len();
        lines.marker("T", "end", &mut out);
        assert_eq!(&out[before..], b"\n[mcp-bound: end]\n");
    }
}
