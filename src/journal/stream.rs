//! The verifying pass over a journal's bytes: each line read once (cut
//! at [`MAX_LINE`]), checked by the `Verifier` (`verify.rs`) with the next
//! line in view, and handed to an observer (`log`, `check`, `report`) as
//! it is checked; after a break, the rest is handed on unverified. A
//! source that says `WouldBlock` at the end of what is written (a
//! followed journal, `follow.rs`) has its last line checked with no next
//! line in view, rather than held until another is written; a line is
//! only ever checked whole.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use super::MAX_LINE;
use super::key::Key;
use super::line::Parsed;
use super::report::Report;
use super::verify::{Verifier, VerifyError};

/// Verify a journal file in one streaming pass.
pub fn verify(path: &Path, key: Option<&Key>, anchor: Option<&str>) -> Result<Report, VerifyError> {
    let file = File::open(path).map_err(VerifyError::Io)?;
    verify_reader(file, key, anchor)
}

/// Verify a journal read from any source, in one streaming pass.
pub fn verify_reader(
    source: impl Read,
    key: Option<&Key>,
    anchor: Option<&str>,
) -> Result<Report, VerifyError> {
    verify_observed(source, key, anchor, &mut |_| {})
}

/// One line as the verifying pass hands it to a reader of the journal
/// (`mcp-bound log`): its bytes without the newline, and whether the chain
/// held up to it. Past the first break the rest is still handed on,
/// unverified, so that a view can say which entries came after it.
pub struct Seen<'a> {
    pub line: u64,
    pub content: &'a [u8],
    /// The entry as the verifier read it (none past a break).
    pub(crate) parsed: Option<&'a Parsed<'a>>,
    pub verified: bool,
}

/// As [`verify_reader`], handing each line to `observe` as it goes.
pub fn verify_observed(
    source: impl Read,
    key: Option<&Key>,
    anchor: Option<&str>,
    observe: &mut dyn FnMut(Seen<'_>),
) -> Result<Report, VerifyError> {
    let mut reader = BufReader::with_capacity(256 * 1024, source);
    let mut state = Verifier::new(key, anchor);
    let mut current = Vec::new();
    let mut next = Vec::new();
    let mut offset = 0u64;
    let mut line_no = 0u64;
    let mut have_current = read_line(&mut reader, &mut current).map_err(VerifyError::Io)?;
    // A line kept pending as a possible torn fragment, until a recover
    // entry accounts for it (then it was no entry) or the chain breaks.
    let mut held: Option<(u64, Vec<u8>)> = None;
    let mut next_unread = false;
    while have_current {
        let peeked = peek_line(&mut reader, &mut next).map_err(VerifyError::Io)?;
        line_no += 1;
        let peek = (peeked == Some(true)).then_some(next.as_slice());
        let checked = state.line(line_no, offset, &current, peek)?;
        let mut have_next = || match peeked {
            Some(have) => Ok(have),
            None => finish_line(&mut reader, &mut next).map_err(VerifyError::Io),
        };
        match checked {
            Err(broken) => {
                state.report.broken = Some(broken);
                next_unread = have_next()?;
                break;
            }
            Ok(parsed) if !state.holds_torn() => {
                held = None;
                observe(Seen {
                    line: line_no,
                    content: current.strip_suffix(b"\n").unwrap_or(&current),
                    parsed: parsed.as_ref(),
                    verified: true,
                });
            }
            Ok(_) if held.is_none() => held = Some((line_no, current.clone())),
            Ok(_) => {}
        }
        let have_next = have_next()?;
        offset += current.len() as u64;
        std::mem::swap(&mut current, &mut next);
        have_current = have_next;
    }
    if state.report.broken.is_some() || state.holds_torn() {
        // From the break on, every line is handed on unverified.
        let unverified = |line: u64, bytes: &[u8], observe: &mut dyn FnMut(Seen<'_>)| {
            observe(Seen {
                line,
                content: bytes.strip_suffix(b"\n").unwrap_or(bytes),
                parsed: None,
                verified: false,
            })
        };
        if let Some((line, bytes)) = held.take() {
            unverified(line, &bytes, observe);
        }
        if state.report.broken.is_some() && have_current {
            unverified(line_no, &current, observe);
            if next_unread {
                line_no += 1;
                unverified(line_no, &next, observe);
                while read_line(&mut reader, &mut current).map_err(VerifyError::Io)? {
                    line_no += 1;
                    unverified(line_no, &current, observe);
                }
            }
        }
    }
    state.finish();
    Ok(state.report)
}

/// Read one line (with its newline, if any); false at EOF. A line over
/// [`MAX_LINE`] is cut there: it fails as malformed without being held.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<bool> {
    line.clear();
    finish_line(reader, line)
}

/// The next line, if it is written: None when the source says it has no
/// more for now (`WouldBlock`), the part read kept for [`finish_line`].
fn peek_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<Option<bool>> {
    line.clear();
    match more(reader, line) {
        Err(err) if err.kind() == io::ErrorKind::WouldBlock => Ok(None),
        read => read.map(|()| Some(!line.is_empty())),
    }
}

/// The rest of a line begun, waiting for it (a followed source blocks
/// on the second ask).
fn finish_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<bool> {
    loop {
        match more(reader, line) {
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => continue,
            read => return read.map(|()| !line.is_empty()),
        }
    }
}

/// Read on to the newline, the end, or the line's limit.
fn more(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<()> {
    if line.ends_with(b"\n") || line.len() > MAX_LINE {
        return Ok(());
    }
    let room = MAX_LINE as u64 + 1 - line.len() as u64;
    reader.take(room).read_until(b'\n', line).map(|_| ())
}
