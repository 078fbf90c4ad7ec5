//! A client line that a reader splitting lines on a carriage return too
//! (Python's universal newlines) would read as several messages.

use super::lenient::{self, Object, Reading};

/// A line that a reader splitting lines on a carriage return too (as
/// Python's universal newlines do) would read as two or more pieces, one
/// of them a message: the ids of every request in the line and in its
/// pieces. None for a line with no such CR (the common case: one memchr).
pub(super) fn split_by_cr(text: &str) -> Option<Vec<&str>> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let body = body.strip_suffix('\r').unwrap_or(body);
    memchr::memchr(b'\r', body.as_bytes())?;
    let blank = |piece: &str| piece.trim_matches([' ', '\t', '\r', '\n']).is_empty();
    let pieces: Vec<&str> = body.split('\r').filter(|piece| !blank(piece)).collect();
    if pieces.len() < 2 {
        return None;
    }
    let mut ids = Vec::new();
    let mut any_message = false;
    for (i, piece) in pieces
        .iter()
        .copied()
        .chain(std::iter::once(body))
        .enumerate()
    {
        let reading = lenient::read(piece).0;
        let objects: Vec<Object<'_>> = match reading {
            Reading::One(object) => vec![object],
            Reading::Batch(elements) => elements.into_iter().filter_map(|(_, o)| o).collect(),
            Reading::NotJson => Vec::new(),
        };
        for object in objects {
            let is_piece = i < pieces.len();
            let message = object.fields.method.is_some() || object.fields.id.is_some();
            any_message |= is_piece && message;
            if object.fields.method.is_some() {
                ids.extend(object.fields.id);
            }
        }
    }
    any_message.then_some(ids)
}
