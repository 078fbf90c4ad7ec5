//! How a client line came, beyond its bytes: what made it irregular (not
//! UTF-8, not strict JSON, unterminated), whether it is one message that
//! may be sent rewritten, and its SHA-256 once asked for.

use sha2::{Digest, Sha256};

use super::audit::Irregular;
use crate::ids::hex;

/// How a client line came, beyond its bytes.
pub(super) struct Form<'l> {
    /// The line as sent (its newline included, if it had one).
    pub(super) raw: &'l [u8],
    /// One message, not a batch: it may be sent rewritten.
    pub(super) single: bool,
    /// --otel-propagate: the line as the server gets it instead.
    pub(super) rewritten: Option<Vec<u8>>,
    pub(super) invalid_utf8: bool,
    pub(super) not_strict: bool,
    unterminated: bool,
    line_sha256: Option<String>,
}

impl<'l> Form<'l> {
    pub(super) fn new(raw: &'l [u8], unterminated: bool) -> Form<'l> {
        Form {
            raw,
            single: false,
            rewritten: None,
            invalid_utf8: false,
            not_strict: false,
            unterminated,
            line_sha256: None,
        }
    }

    pub(super) fn regular(&self) -> bool {
        !(self.invalid_utf8 || self.not_strict || self.unterminated)
    }

    pub(super) fn irregular(&self) -> Vec<Irregular> {
        [
            (self.invalid_utf8, Irregular::InvalidUtf8),
            (self.not_strict, Irregular::NotStrictJson),
            (self.unterminated, Irregular::Unterminated),
        ]
        .into_iter()
        .filter_map(|(is, what)| is.then_some(what))
        .collect()
    }

    /// SHA-256 of the line as sent, without its newline (once a line).
    pub(super) fn line_sha256(&mut self) -> String {
        let raw = self.raw;
        self.line_sha256
            .get_or_insert_with(|| line_sha256(raw))
            .clone()
    }
}

/// SHA-256 of a line as sent, without its newline: what the journal's
/// `line_sha256` holds.
pub(super) fn line_sha256(line: &[u8]) -> String {
    hex(&Sha256::digest(line.strip_suffix(b"\n").unwrap_or(line)))
}
