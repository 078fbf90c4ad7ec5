//! Verification: one streaming pass that checks every line's hash, strict
//! shape, `seq` continuity, `prev` linkage and intent/decision/terminal
//! pairing, and reports the first break. Memory follows the calls in
//! flight, never the journal's length.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::key::{Key, KeyMismatch, check_genesis_key};
use super::line::{LineError, parse_line};
use super::report::{Break, BreakKind, Head, Report, Unfinished};
use super::requests::OpenRequests;
use super::shapes::Body;
use super::{MAX_LINE, ZERO_HASH};
use crate::ids::hex;

/// A torn fragment waiting for the `recover` entry that accounts for it.
struct PendingTorn {
    offset: u64,
    length: u64,
    sha256: String,
    error: Break,
}

/// Why verification could not run at all (exit 2), as opposed to a break.
#[derive(Debug)]
pub enum VerifyError {
    Io(io::Error),
    Key(String),
}

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
    let mut reader = BufReader::with_capacity(256 * 1024, source);
    let plain = Key::Plain;
    let key = key.unwrap_or(&plain);
    let mut state = Verifier {
        key,
        anchor,
        report: Report {
            ok: false,
            entries: 0,
            journal_id: None,
            keyed: false,
            head: None,
            validated_lines: 0,
            broken: None,
            anchor: anchor.map(str::to_string),
            anchor_found: anchor.map(|_| false),
            unfinished: Vec::new(),
            unfinished_requests: Vec::new(),
            final_newline_missing: false,
        },
        open: HashMap::new(),
        open_requests: OpenRequests::default(),
        last_seq: None,
        last_h: ZERO_HASH.to_string(),
        pending_torn: None,
    };
    let mut current = Vec::new();
    let mut next = Vec::new();
    let mut offset = 0u64;
    let mut line_no = 0u64;
    let mut have_current = read_line(&mut reader, &mut current).map_err(VerifyError::Io)?;
    while have_current {
        let have_next = read_line(&mut reader, &mut next).map_err(VerifyError::Io)?;
        line_no += 1;
        let peek = have_next.then_some(next.as_slice());
        if let Err(broken) = state.line(line_no, offset, &current, peek)? {
            state.report.broken = Some(broken);
            break;
        }
        offset += current.len() as u64;
        std::mem::swap(&mut current, &mut next);
        have_current = have_next;
    }
    state.finish();
    Ok(state.report)
}

/// Read one line (with its newline, if any); false at EOF. A line over
/// [`MAX_LINE`] is cut there: it fails as malformed without being held.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<bool> {
    line.clear();
    let n = reader.take(MAX_LINE as u64 + 1).read_until(b'\n', line)?;
    Ok(n > 0)
}

struct Verifier<'k> {
    key: &'k Key,
    anchor: Option<&'k str>,
    report: Report,
    /// Calls with an intent and no terminal yet: the only per-call state,
    /// so memory follows the calls in flight, not the journal's length. A
    /// call id may repeat once its call has ended (hosts reuse
    /// --call-id); two calls with one id in flight at once are a break.
    open: HashMap<String, Unfinished>,
    /// Requests with no response yet: memory follows the requests in flight.
    open_requests: OpenRequests,
    last_seq: Option<u64>,
    last_h: String,
    pending_torn: Option<PendingTorn>,
}

fn peek_seq(line: &[u8]) -> Option<u64> {
    #[derive(Deserialize)]
    struct SeqOnly {
        seq: u64,
    }
    let content = line.strip_suffix(b"\n").unwrap_or(line);
    serde_json::from_slice::<SeqOnly>(content)
        .ok()
        .map(|s| s.seq)
}

impl Verifier<'_> {
    fn line(
        &mut self,
        line_no: u64,
        offset: u64,
        bytes: &[u8],
        next: Option<&[u8]>,
    ) -> Result<Result<(), Break>, VerifyError> {
        let fail = |kind, detail: String| {
            Ok(Err(Break {
                line: line_no,
                kind,
                detail,
            }))
        };
        let content = match bytes.strip_suffix(b"\n") {
            Some(content) => content,
            // The last line lacks its newline. A whole entry that lacks
            // only that is still an entry (the write stopped after it): a
            // warning, and the next append finishes the line.
            None if self.pending_torn.is_none() && parse_line(self.key, bytes).is_ok() => {
                self.report.final_newline_missing = true;
                bytes
            }
            None => {
                if let Some(pending) = self.pending_torn.take() {
                    return Ok(Err(pending.error));
                }
                return fail(
                    BreakKind::TornTail,
                    format!(
                        "the last line ({} bytes) has no newline: a write was cut short",
                        bytes.len()
                    ),
                );
            }
        };
        if self.last_seq.is_none()
            && self.pending_torn.is_none()
            && let Some(detail) = self.check_key(content)?
        {
            return fail(BreakKind::Unkeyed, detail);
        }
        let parsed = match parse_line(self.key, content) {
            Ok(parsed) => parsed,
            Err(error) => {
                let error = match error {
                    LineError::HashMismatch => Break {
                        line: line_no,
                        kind: BreakKind::HashMismatch,
                        detail: "h does not match the line's bytes".into(),
                    },
                    LineError::Malformed(detail) => Break {
                        line: line_no,
                        kind: BreakKind::Malformed,
                        detail,
                    },
                };
                // Possibly a torn fragment that a `recover` entry accounts for.
                if let Some(pending) = self.pending_torn.take() {
                    return Ok(Err(pending.error));
                }
                self.pending_torn = Some(PendingTorn {
                    offset,
                    length: content.len() as u64,
                    sha256: hex(&Sha256::digest(content)),
                    error,
                });
                return Ok(Ok(()));
            }
        };

        // A bad line is forgiven only when the very next entry is the
        // recover entry that accounts for it (or the genesis written after
        // a torn first line); anything else reports the bad line itself.
        if self.pending_torn.is_some() && !matches!(parsed.kind(), "recover" | "genesis") {
            return Ok(Err(self.pending_torn.take().expect("checked").error));
        }
        if let Body::Genesis(genesis) = &parsed.body {
            if self.last_seq.is_some() {
                return fail(BreakKind::Malformed, "a second genesis entry".into());
            }
            self.report.journal_id = Some(genesis.journal_id.to_string());
            self.report.keyed = genesis.key_id.is_some();
        } else if self.last_seq.is_none() {
            return fail(
                BreakKind::Malformed,
                "the first entry is not a genesis entry".into(),
            );
        }

        let expected = self.last_seq.map_or(0, |seq| seq + 1);
        if parsed.seq > expected {
            let swapped = next.and_then(peek_seq) == Some(expected);
            return if swapped {
                fail(
                    BreakKind::SeqOrder,
                    format!(
                        "seq {} comes before seq {expected}: lines out of order",
                        parsed.seq
                    ),
                )
            } else {
                fail(
                    BreakKind::SeqGap,
                    format!(
                        "seq {} follows seq {}: entries missing",
                        parsed.seq,
                        expected.saturating_sub(1)
                    ),
                )
            };
        }
        if parsed.seq < expected {
            return fail(
                BreakKind::SeqOrder,
                format!(
                    "seq {} after seq {}: repeated or out of order",
                    parsed.seq,
                    expected - 1
                ),
            );
        }
        if parsed.prev != self.last_h {
            return fail(
                BreakKind::ChainBreak,
                format!(
                    "prev does not match the h of the entry before (seq {})",
                    expected.saturating_sub(1)
                ),
            );
        }

        match &parsed.body {
            Body::Recover(recover) => {
                let Some(pending) = self.pending_torn.take() else {
                    return fail(
                        BreakKind::Malformed,
                        "a recover entry with no torn line before it".into(),
                    );
                };
                let matches = recover.torn_offset == pending.offset
                    && recover.torn_length == pending.length
                    && recover.torn_sha256 == pending.sha256.as_str();
                if !matches {
                    return Ok(Err(pending.error));
                }
            }
            Body::Genesis(_) => {}
            body => {
                if let Some(pending) = self.pending_torn.take() {
                    return Ok(Err(pending.error));
                }
                let kind = body.kind();
                let call_id = parsed.call_id().unwrap_or_default();
                if kind == "intent" {
                    if self.open.contains_key(call_id) {
                        return fail(
                            BreakKind::DuplicateCall,
                            format!("a second intent for call {call_id} while it is open"),
                        );
                    }
                    self.open.insert(
                        call_id.to_string(),
                        Unfinished {
                            line: line_no,
                            call_id: call_id.to_string(),
                            pid: match body {
                                Body::Intent(intent) => Some(intent.pid),
                                _ => None,
                            },
                            ts: parsed.ts.to_string(),
                            decided: false,
                            gated: matches!(body, Body::Intent(intent) if intent.tool_gate.is_some()),
                        },
                    );
                } else if kind == "decision" {
                    match self.open.get_mut(call_id) {
                        Some(open) if !open.decided => open.decided = true,
                        Some(_) => {
                            return fail(
                                BreakKind::DuplicateCall,
                                format!("a second decision for call {call_id}"),
                            );
                        }
                        None => {
                            return fail(
                                BreakKind::OrphanTerminal,
                                format!("a decision for call {call_id} with no open intent"),
                            );
                        }
                    }
                } else if kind.starts_with("mcp_") {
                    let call = self.open.get(call_id);
                    let (call_open, gated) = (call.is_some(), call.is_some_and(|c| c.gated));
                    if let Err((kind, detail)) = self
                        .open_requests
                        .on_entry(line_no, &parsed, call_open, gated)
                    {
                        return fail(kind, detail);
                    }
                } else if self.open.remove(call_id).is_none() {
                    // Also a second terminal for a call that already ended.
                    return fail(
                        BreakKind::OrphanTerminal,
                        format!("a terminal for call {call_id} with no open intent"),
                    );
                } else {
                    match self.open_requests.call_ended(call_id) {
                        Ok(ended) => self.report.unfinished_requests.extend(ended),
                        Err((kind, detail)) => return fail(kind, detail),
                    }
                }
            }
        }

        if self.pending_torn.is_none() {
            self.report.validated_lines = line_no;
        }
        if self.anchor == Some(parsed.h.as_ref()) {
            self.report.anchor_found = Some(true);
        }
        self.report.entries += 1;
        self.last_seq = Some(parsed.seq);
        self.last_h.clear();
        self.last_h.push_str(&parsed.h);
        self.report.head = Some(Head {
            seq: parsed.seq,
            h: parsed.h.into_owned(),
        });
        Ok(Ok(()))
    }

    /// Compare the genesis entry's key id with ours before any hash is
    /// checked: a wrong or missing key is a usage error, not tampering.
    /// But a journal that is not keyed when --key says it is may have been
    /// rewritten whole by someone without the key: Ok(Some(why)), a break.
    fn check_key(&self, content: &[u8]) -> Result<Option<String>, VerifyError> {
        // Not a genesis entry: the line's own checks will say what it is.
        let Some(Err(mismatch)) = check_genesis_key(content, self.key) else {
            return Ok(None);
        };
        Err(VerifyError::Key(match mismatch {
            KeyMismatch::KeyNeeded(id) => format!("the journal is keyed (key id {id}); pass --key"),
            KeyMismatch::NotKeyed => {
                return Ok(Some(
                    "--key was given and the journal is not keyed: it may have been rewritten without the key".into(),
                ));
            }
            KeyMismatch::OtherKey(id) => format!("--key is not this journal's key (key id {id})"),
        }))
    }

    fn finish(&mut self) {
        if self.report.broken.is_none()
            && let Some(pending) = self.pending_torn.take()
        {
            self.report.broken = Some(pending.error);
        }
        if self.report.broken.is_none() && self.report.anchor_found == Some(false) {
            self.report.broken = Some(Break {
                line: self.report.validated_lines + 1,
                kind: BreakKind::AnchorMissing,
                detail:
                    "no entry has the anchor's h: the journal was cut, rolled back or rewritten"
                        .into(),
            });
        }
        if self.report.broken.is_none() && self.report.entries == 0 {
            self.report.broken = Some(Break {
                line: 1,
                kind: BreakKind::Malformed,
                detail: "the journal is empty".into(),
            });
        }
        let mut unfinished: Vec<Unfinished> = self.open.drain().map(|(_, u)| u).collect();
        unfinished.sort_by_key(|u| u.line);
        self.report.unfinished = unfinished;
        let requests = &mut self.report.unfinished_requests;
        requests.extend(self.open_requests.drain());
        requests.sort_by_key(|r| r.line);
        self.report.ok = self.report.broken.is_none();
    }
}
