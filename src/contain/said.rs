//! The watchdog's protocol: what mcp-bound tells its watchdog, one line
//! each, as one type with its encoding and its decoding. The line's first
//! byte says what it is:
//! - `B<json>`: first, to the Windows watchdog only (a process of its
//!   own, not a fork, so it has nothing in memory): the brief, what it
//!   needs to write last words (the record made before dispatch, where
//!   the record and the journal go);
//! - `P<pgid>`: the helper's process group, after each spawn; `P0` just
//!   before mcp-bound reaps the helper, since from then on that number may
//!   name a stranger's group. On Windows the group is the helper's job,
//!   and the number is a handle to it that mcp-bound put in the
//!   watchdog's own handle table;
//! - `S<json>`: a milestone, what mcp-bound knows of the call now (at the
//!   dispatch, each restart, the host's signal or hang-up): a fork's last
//!   words carry it;
//! - `R<record>`, `T<terminal>`, `F<journal length>`: the final words,
//!   about to be written;
//! - `W`: the final words are written: nothing is left to say;
//! - `D`: done, the tree is gone.
//!
//! The waiter (`sys::Waiter`), which may not allocate, reads `P` and `D`
//! with a parser of its own (`sys::WaiterReading`); a test holds the two
//! readings to one answer on every message.

/// One line to the watchdog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Said {
    /// `B`: the brief, one JSON object (Windows).
    Brief(String),
    /// `P`: the helper's process group (0: none to signal).
    Group(i32),
    /// `S`: a milestone, one JSON object.
    Milestone(String),
    /// `R`: the final record, one JSON line.
    Record(String),
    /// `T`: the journal's terminal entry's fields, one JSON object.
    Terminal(String),
    /// `F`: the journal's length before the terminal (None: no journal).
    JournalLength(Option<u64>),
    /// `W`: the final words are written.
    Written,
    /// `D`: done.
    Done,
}

impl Said {
    /// The line, its newline included.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let (kind, body) = match self {
            Said::Brief(json) => (b'B', json.clone()),
            Said::Group(pgid) => (b'P', pgid.to_string()),
            Said::Milestone(json) => (b'S', json.clone()),
            Said::Record(line) => (b'R', line.trim_end().to_string()),
            Said::Terminal(json) => (b'T', json.clone()),
            Said::JournalLength(len) => (b'F', len.map_or(String::new(), |l| l.to_string())),
            Said::Written => (b'W', String::new()),
            Said::Done => (b'D', String::new()),
        };
        let mut line = Vec::with_capacity(body.len() + 2);
        line.push(kind);
        line.extend_from_slice(body.as_bytes());
        line.push(b'\n');
        line
    }

    /// A line without its newline; None for one no version writes.
    pub(crate) fn decode(line: &[u8]) -> Option<Said> {
        let (&kind, body) = line.split_first()?;
        let text = || String::from_utf8_lossy(body).into_owned();
        Some(match kind {
            b'B' => Said::Brief(text()),
            b'P' => Said::Group(text().parse().unwrap_or(0)),
            b'S' => Said::Milestone(text()),
            b'R' => Said::Record(text()),
            b'T' => Said::Terminal(text()),
            b'F' => Said::JournalLength(text().parse().ok()),
            b'W' => Said::Written,
            b'D' => Said::Done,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_kind() -> Vec<Said> {
        vec![
            Said::Brief(r#"{"record":"r.json","ran_ms":3}"#.into()),
            Said::Group(0),
            Said::Group(4_194_303),
            Said::Milestone(r#"{"state":"dispatched","pid":7}"#.into()),
            Said::Record("{\"state\":\"completed\"}\n".into()),
            Said::Terminal(r#"{"call_id":"c_1"}"#.into()),
            Said::JournalLength(Some(1234)),
            Said::JournalLength(None),
            Said::Written,
            Said::Done,
        ]
    }

    #[test]
    fn every_message_decodes_to_itself() {
        for said in every_kind() {
            let line = said.encode();
            assert_eq!(line.last(), Some(&b'\n'));
            let decoded = Said::decode(&line[..line.len() - 1]).unwrap();
            let expected = match &said {
                // The record's own newline is not part of the line.
                Said::Record(record) => Said::Record(record.trim_end().into()),
                other => other.clone(),
            };
            assert_eq!(decoded, expected);
        }
        assert_eq!(Said::decode(b"Xwhat"), None);
        assert_eq!(Said::decode(b""), None);
    }

    /// The waiter's own allocation-free reading hears the same group and
    /// the same "done" as the decoder, over every message, fed in any
    /// chunking: it is this protocol's decoder for `P` and `D`.
    #[cfg(all(target_os = "linux", not(mcp_bound_portable)))]
    #[test]
    fn the_waiters_reading_agrees_with_the_decoder() {
        use crate::sys::{WaiterHeard, WaiterReading};
        let all: Vec<u8> = every_kind().iter().flat_map(Said::encode).collect();
        let mut expected = Vec::new();
        for line in all.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            match Said::decode(line) {
                Some(Said::Group(pgid)) => expected.push(WaiterHeard::Group(pgid)),
                Some(Said::Done) => expected.push(WaiterHeard::Done),
                _ => {}
            }
        }
        for chunk in [1, 2, 3, 7, all.len()] {
            let mut reading = WaiterReading::default();
            let mut heard = Vec::new();
            for piece in all.chunks(chunk) {
                heard.extend(piece.iter().filter_map(|b| reading.feed(*b)));
            }
            assert_eq!(heard, expected, "chunks of {chunk}");
        }
    }
}
