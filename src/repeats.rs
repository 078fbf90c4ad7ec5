//! What filled stderr: a bounded summary of its most frequent lines, kept
//! while it is drained, for the lines the capture could not keep. Pure.
//!
//! Memory is constant: a table of [`ENTRIES`] lines, kept by the
//! Space-Saving algorithm (Metwally, Agrawal and El Abbadi, 2005). A line
//! not in a full table takes the place of the least counted one, with
//! that one's count plus one; the count it inherited is its error. So for
//! each entry the true number of counted lines like it is between
//! `count - count_error` and `count`, and every line that makes up more
//! than 1/[`ENTRIES`] of the counted lines is in the table.
//!
//! Lines are compared with every run of ASCII digits folded to `#`, so
//! `retry 17 failed` and `retry 18 failed` are one line, and on their
//! first [`LINE_BYTES`] bytes. Counting hashes the raw line; a line's
//! text is masked when it is seen a second time (a line seen once is
//! never shown), and only its masked, folded text is kept.
//!
//! Counting every line of a flood would cost more than draining it (the
//! drain copies at gigabytes a second; a hash per line cannot keep up).
//! So the first [`EXACT_BYTES`] (256 KiB) of the stream are counted line by line,
//! and after that at most one byte in [`SAMPLE_RATIO`]: whole lines, while
//! credit lasts, resuming at the next line start. `bytes_counted` against
//! the stream's `bytes_seen` says how much was sampled. Bytes that never
//! reach user space (the flood path moves them inside the kernel) are not
//! counted either; its periodic read windows are.

use crate::redact::Redactor;

/// Lines the table keeps.
pub(crate) const ENTRIES: usize = 64;
/// A line is compared, and kept, on this many of its first bytes.
pub(crate) const LINE_BYTES: usize = 200;
/// Every line of the first this-many bytes is counted (as much as the
/// flood path lets pass before it considers a stream a flood)...
pub(crate) const EXACT_BYTES: u64 = 256 << 10;
/// ...and then at most one byte in this many.
pub(crate) const SAMPLE_RATIO: u64 = 1024;
/// How many entries the record, the journal and the echo show.
pub(crate) const SHOWN: usize = 5;

/// One line of the summary, as it is shown: masked, digits folded, at
/// most [`LINE_BYTES`] bytes of the line.
pub(crate) use crate::record::Repeat;

#[derive(Debug, Clone)]
struct Entry {
    hash: u64,
    /// Masked when the line is seen a second time: a line seen once is
    /// never shown, and masking every distinct line of a flood would cost
    /// more than the drain.
    line: Option<String>,
    count: u64,
    error: u64,
}

/// The line being read, when it started in counted bytes.
#[derive(Debug, Clone)]
struct Current {
    hash: u64,
    /// Its first bytes, raw (masked only if it is shown): in place, so a
    /// line costs no allocation.
    start: [u8; LINE_BYTES],
    len: usize,
    in_digits: bool,
    /// Bytes past the first [`LINE_BYTES`] were dropped: what is kept
    /// ends in a cut, masked as the capture masks its cuts.
    cut: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Repeats {
    table: Vec<Entry>,
    redactor: Redactor,
    current: Option<Current>,
    /// Bytes that may still be counted (see [`SAMPLE_RATIO`]).
    credit: u64,
    /// Skipping to the next line start: a line is counted whole or not.
    resync: bool,
    /// Whole lines counted, and the bytes they had.
    pub lines_counted: u64,
    pub bytes_counted: u64,
    /// Bytes offered (the stream's bytes that reached user space).
    pub bytes_offered: u64,
    /// Bytes of the stream that never reached user space.
    pub bytes_unseen: u64,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

impl Repeats {
    /// Lines enter the table masked by `redactor`.
    pub(crate) fn new(redactor: Redactor) -> Repeats {
        Repeats {
            table: Vec::with_capacity(ENTRIES),
            redactor,
            current: None,
            credit: EXACT_BYTES,
            resync: false,
            lines_counted: 0,
            bytes_counted: 0,
            bytes_offered: 0,
            bytes_unseen: 0,
        }
    }

    /// Stream bytes that passed without reaching user space.
    pub(crate) fn unseen(&mut self, n: u64) {
        self.bytes_unseen += n;
        // A line cut by bytes we did not see is not the line it looks like.
        self.current = None;
        self.resync = true;
    }

    /// Bytes of the stream, in order, as read. Every byte looked at, to
    /// count it or to find where a line starts, is paid for from the
    /// credit: a flood costs at most one byte in [`SAMPLE_RATIO`].
    pub(crate) fn offer(&mut self, mut bytes: &[u8]) {
        self.bytes_offered += bytes.len() as u64;
        if self.bytes_offered > EXACT_BYTES {
            self.credit = self
                .credit
                .saturating_add(bytes.len() as u64 / SAMPLE_RATIO);
        }
        while !bytes.is_empty() {
            let window = usize::try_from(self.credit)
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            if window == 0 {
                // Not looked at: a line in progress is cut by it, and
                // counting resumes at a line start.
                self.current = None;
                self.resync = true;
                return;
            }
            let end = memchr::memchr(b'\n', &bytes[..window]);
            if self.resync {
                let skipped = end.map_or(window, |end| end + 1);
                self.resync = end.is_none();
                self.credit -= skipped as u64;
                bytes = &bytes[skipped..];
                continue;
            }
            let current = match &mut self.current {
                Some(current) => current,
                slot @ None => slot.insert(Current {
                    hash: FNV_OFFSET,
                    start: [0; LINE_BYTES],
                    len: 0,
                    in_digits: false,
                    cut: false,
                }),
            };
            let line = &bytes[..end.unwrap_or(window)];
            current.fold(line);
            let used = line.len() + usize::from(end.is_some());
            self.credit -= used as u64;
            self.bytes_counted += used as u64;
            bytes = &bytes[used..];
            if end.is_some() {
                let done = self.current.take().expect("a line is being read");
                self.count(done);
            }
        }
    }

    fn count(&mut self, line: Current) {
        self.lines_counted += 1;
        if let Some(entry) = self.table.iter_mut().find(|e| e.hash == line.hash) {
            entry.count += 1;
            if entry.line.is_none() {
                entry.line = Some(shown_text(
                    &self.redactor,
                    &line.start[..line.len],
                    line.cut,
                ));
            }
            return;
        }
        if self.table.len() < ENTRIES {
            self.table.push(Entry {
                hash: line.hash,
                line: None,
                count: 1,
                error: 0,
            });
            return;
        }
        let least = self
            .table
            .iter_mut()
            .min_by_key(|e| e.count)
            .expect("the table is full");
        *least = Entry {
            hash: line.hash,
            line: None,
            count: least.count + 1,
            error: least.count,
        };
    }

    /// The most counted lines that repeat (counted at least twice, error
    /// aside), most first, at most `n`.
    pub(crate) fn top(&self, n: usize) -> Vec<Repeat> {
        let mut entries: Vec<&Entry> = self
            .table
            .iter()
            .filter(|e| e.count - e.error >= 2 && e.line.is_some())
            .collect();
        entries.sort_by(|a, b| b.count.cmp(&a.count).then(a.line.cmp(&b.line)));
        entries
            .into_iter()
            .take(n)
            .map(|e| Repeat {
                line: e.line.clone().unwrap_or_default(),
                count: e.count,
                count_error: e.error,
            })
            .collect()
    }

    /// Whether every byte of the stream was counted.
    pub(crate) fn exact(&self) -> bool {
        self.bytes_unseen == 0 && self.bytes_counted == self.bytes_offered
    }
}

impl Current {
    /// Hash the line's first [`LINE_BYTES`] bytes, folded, and keep them.
    fn fold(&mut self, bytes: &[u8]) {
        let room = LINE_BYTES - self.len;
        self.cut |= bytes.len() > room;
        let taken = &bytes[..room.min(bytes.len())];
        self.start[self.len..self.len + taken.len()].copy_from_slice(taken);
        self.len += taken.len();
        let (mut hash, mut in_digits) = (self.hash, self.in_digits);
        for &b in taken {
            let digit = b.is_ascii_digit();
            if !(digit && in_digits) {
                let c = if digit { b'#' } else { b };
                hash = (hash ^ u64::from(c)).wrapping_mul(FNV_PRIME);
            }
            in_digits = digit;
        }
        (self.hash, self.in_digits) = (hash, in_digits);
    }
}

/// A line as the summary keeps it: masked first (a pattern may need the
/// digits; a cut line as a piece cut at its end), then digit runs folded,
/// trailing CR dropped.
fn shown_text(redactor: &Redactor, start: &[u8], cut: bool) -> String {
    let raw = String::from_utf8_lossy(start);
    let masked = redactor.redact_piece(raw.trim_end_matches('\r'), false, cut);
    let mut out = String::with_capacity(masked.len());
    let mut in_digits = false;
    for c in masked.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('#');
            }
            in_digits = true;
        } else {
            in_digits = false;
            out.push(c);
        }
    }
    out
}

/// The bracketed line of the exit echo: what was not kept, and what it
/// mostly was: counts when every line was counted, else each line's share
/// of the lines sampled (`sampled`: how many). None when nothing repeats.
pub(crate) fn not_kept_line(not_kept: u64, top: &[Repeat], sampled: Option<u64>) -> Option<String> {
    if top.is_empty() || not_kept == 0 {
        return None;
    }
    let shown: Vec<String> = top
        .iter()
        .take(3)
        .map(|r| match sampled {
            None => counted(r),
            Some(lines) => format!("{:?} {}%", r.line, (r.count * 100).div_ceil(lines.max(1))),
        })
        .collect();
    let sampled = sampled.map_or(String::new(), |lines| format!(" of {lines} lines sampled"));
    let folded = if top.iter().take(3).any(|r| r.line.contains('#')) {
        "; digits folded to #"
    } else {
        ""
    };
    Some(format!(
        "[not kept: {}, mostly {}{sampled}{folded}]",
        size(not_kept),
        shown.join(", ")
    ))
}

/// One repeat as the echo and the summary line show it: `"LINE" ×N`.
pub(crate) fn counted(repeat: &Repeat) -> String {
    format!("{:?} ×{}", repeat.line, repeat.count)
}

/// A byte count as a person reads it.
pub(crate) fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed(chunks: &[&[u8]]) -> Repeats {
        let mut repeats = Repeats::new(Redactor::default());
        for chunk in chunks {
            repeats.offer(chunk);
        }
        repeats
    }

    #[test]
    fn digit_runs_fold_and_lines_split_across_chunks_are_one() {
        let repeats = fed(&[
            b"retry 17 fa",
            b"iled\nretry 18 failed\nretry 1",
            b"234 failed\nother\n",
        ]);
        assert_eq!(
            repeats.top(5),
            vec![Repeat {
                line: "retry # failed".into(),
                count: 3,
                count_error: 0
            }]
        );
        assert_eq!(repeats.lines_counted, 4);
        assert!(repeats.exact());
    }

    #[test]
    fn a_secret_is_masked_when_the_line_enters_the_table() {
        let repeats = fed(&[
            b"auth failed password=hunter2\n",
            b"auth failed password=hunter2\n",
        ]);
        let top = repeats.top(1);
        assert_eq!(top[0].line, "auth failed password=[REDACTED]");
        assert!(!format!("{:?}", repeats.table).contains("hunter2"));
    }

    /// A line is kept to its first [`LINE_BYTES`]; a token cut there is
    /// half a secret no pattern matches, so the cut is masked as the
    /// capture masks its cuts.
    #[test]
    fn a_secret_cut_at_the_kept_bytes_is_masked_as_a_cut() {
        let secret = "sk-ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij";
        let line = format!("{} key {secret} rejected\n", "a".repeat(LINE_BYTES - 20));
        let repeats = fed(&[line.as_bytes(), line.as_bytes()]);
        let top = repeats.top(1);
        let shown = &top[0].line;
        assert!(!shown.contains("sk-ABCDEF"), "{shown}");
        assert!(shown.ends_with(crate::redact::CUT_MASK), "{shown}");
        // A line that fits is shown whole, unmarked.
        let short = fed(&[b"short line\n", b"short line\n"]);
        assert_eq!(short.top(1)[0].line, "short line");
    }

    #[test]
    fn the_frequent_line_survives_many_distinct_ones_within_the_stated_error() {
        let mut text = Vec::new();
        for i in 0..5000u32 {
            text.extend(format!("connection retry {i} failed\n").as_bytes());
            // Distinct lines between the repeats: letters, not digits.
            let word: String = (0..6)
                .map(|k| (b'a' + ((i >> (k * 4)) & 15) as u8) as char)
                .collect();
            text.extend(format!("noise {word}\n").as_bytes());
        }
        let repeats = fed(&[&text]);
        let top = repeats.top(3);
        assert_eq!(top[0].line, "connection retry # failed");
        assert!(
            top[0].count >= 5000 && top[0].count - top[0].count_error <= 5000,
            "{top:?}"
        );
        assert!(top[0].count_error <= repeats.lines_counted / ENTRIES as u64);
    }

    #[test]
    fn past_the_exact_part_a_flood_is_sampled_and_memory_stays_flat() {
        let mut repeats = Repeats::new(Redactor::default());
        let line = b"helper-diagnostic 42\n";
        let chunk: Vec<u8> = line.iter().copied().cycle().take(64 * 1024 - 5).collect();
        for _ in 0..2000 {
            repeats.offer(&chunk);
        }
        let offered = repeats.bytes_offered;
        assert!(!repeats.exact());
        // The exact part, then at most one byte in SAMPLE_RATIO.
        let bound = EXACT_BYTES + offered / SAMPLE_RATIO;
        assert!(
            repeats.bytes_counted <= bound,
            "{} > {bound}",
            repeats.bytes_counted
        );
        assert_eq!(repeats.top(1)[0].line, "helper-diagnostic #");
        // Chunks restart the line mid-way: the seams are lines of their own.
        assert!(repeats.top(1)[0].count * 100 >= repeats.lines_counted * 99);
        assert!(repeats.table.len() <= ENTRIES);
    }

    /// A flood with no newline at all (`head -c … /dev/zero`): past the
    /// exact part, no byte is looked at beyond the credit.
    #[test]
    fn a_stream_without_newlines_is_not_scanned_past_its_credit() {
        let mut repeats = Repeats::new(Redactor::default());
        let chunk = vec![0u8; 64 * 1024];
        for _ in 0..4096 {
            repeats.offer(&chunk);
        }
        assert!(repeats.bytes_counted <= EXACT_BYTES + repeats.bytes_offered / SAMPLE_RATIO);
        assert_eq!(repeats.lines_counted, 0);
        assert!(repeats.top(5).is_empty());
    }

    #[test]
    fn unseen_bytes_cut_the_line_in_progress() {
        let mut repeats = Repeats::new(Redactor::default());
        repeats.offer(b"first half");
        repeats.unseen(1 << 20);
        repeats.offer(b" second half\nwhole\nwhole\n");
        assert_eq!(repeats.top(5)[0].line, "whole");
        assert_eq!(repeats.lines_counted, 2);
        assert!(!repeats.exact());
    }

    #[test]
    fn the_echo_line_says_what_was_not_kept_and_what_it_was() {
        let top = vec![
            Repeat {
                line: "connection retry # failed".into(),
                count: 1832,
                count_error: 0,
            },
            Repeat {
                line: "backoff # ms".into(),
                count: 1790,
                count_error: 3,
            },
        ];
        assert_eq!(
            not_kept_line(1_258_291, &top, None).unwrap(),
            "[not kept: 1.2 MiB, mostly \"connection retry # failed\" ×1832, \"backoff # ms\" ×1790; digits folded to #]"
        );
        assert_eq!(
            not_kept_line(1_258_291, &top, Some(3640)).unwrap(),
            "[not kept: 1.2 MiB, mostly \"connection retry # failed\" 51%, \"backoff # ms\" 50% of 3640 lines sampled; digits folded to #]"
        );
        assert_eq!(not_kept_line(0, &top, None), None);
        assert_eq!(not_kept_line(5, &[], None), None);
    }
}
