//! Verification's checks, over the one streaming pass `stream.rs` makes:
//! every line's hash, strict shape, `seq` continuity, `prev` linkage and
//! intent/decision/terminal pairing, and the first break reported.
//! Memory follows the calls in flight, never the journal's length.

use std::collections::HashMap;
use std::io;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::ZERO_HASH;
use super::key::{Key, KeyMismatch, check_genesis_key};
use super::line::{LineError, Parsed, parse_line};
use super::report::{Break, BreakKind, Head, Report, Unfinished};
use super::requests::OpenRequests;
use super::shapes::Body;
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

pub(super) struct Verifier<'k> {
    key: &'k Key,
    anchor: Option<&'k str>,
    pub(super) report: Report,
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

impl<'k> Verifier<'k> {
    /// Before the first line: nothing verified yet.
    pub(super) fn new(key: Option<&'k Key>, anchor: Option<&'k str>) -> Verifier<'k> {
        let key = key.unwrap_or(&Key::Plain);
        Verifier {
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
        }
    }

    /// A line is held as a possible torn fragment, until a `recover`
    /// entry accounts for it.
    pub(super) fn holds_torn(&self) -> bool {
        self.pending_torn.is_some()
    }
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

/// What one check of a line says: go on, or the break it found.
type Checked = Result<(), Break>;

fn broken(line: u64, kind: BreakKind, detail: String) -> Break {
    Break { line, kind, detail }
}

impl Verifier<'_> {
    /// One line: its bytes, its hash and shape, its place in the chain,
    /// and what its kind pairs with; then the head moves past it. The
    /// entry, read (None: a line held as a possible torn fragment).
    pub(super) fn line<'b>(
        &mut self,
        line_no: u64,
        offset: u64,
        bytes: &'b [u8],
        next: Option<&[u8]>,
    ) -> Result<Result<Option<Parsed<'b>>, Break>, VerifyError> {
        let content = match self.content(line_no, bytes) {
            Ok(content) => content,
            Err(broken) => return Ok(Err(broken)),
        };
        if self.last_seq.is_none()
            && self.pending_torn.is_none()
            && let Some(detail) = self.check_key(content)?
        {
            return Ok(Err(broken(line_no, BreakKind::Unkeyed, detail)));
        }
        let parsed = match parse_line(self.key, content) {
            Ok(parsed) => parsed,
            Err(error) => {
                return Ok(self
                    .unreadable(line_no, offset, content, error)
                    .map(|()| None));
            }
        };
        Ok(self
            .check_order(line_no, &parsed, next)
            .and_then(|()| self.check_pairing(line_no, &parsed))
            .map(|()| {
                self.advance(line_no, &parsed);
                Some(parsed)
            }))
    }

    /// The line without its newline. A last line lacking only that is
    /// still an entry (the write stopped after it): a warning, and the
    /// next append finishes the line; anything else without one is torn.
    fn content<'b>(&mut self, line_no: u64, bytes: &'b [u8]) -> Result<&'b [u8], Break> {
        match bytes.strip_suffix(b"\n") {
            Some(content) => Ok(content),
            None if self.pending_torn.is_none() && parse_line(self.key, bytes).is_ok() => {
                self.report.final_newline_missing = true;
                Ok(bytes)
            }
            None => Err(self.pending_torn.take().map_or_else(
                || {
                    broken(
                        line_no,
                        BreakKind::TornTail,
                        format!(
                            "the last line ({} bytes) has no newline: a write was cut short",
                            bytes.len()
                        ),
                    )
                },
                |pending| pending.error,
            )),
        }
    }

    /// A line that is not an entry: possibly a torn fragment that the next
    /// line, a `recover` entry, accounts for; kept pending until then.
    fn unreadable(
        &mut self,
        line_no: u64,
        offset: u64,
        content: &[u8],
        error: LineError,
    ) -> Checked {
        let error = match error {
            LineError::HashMismatch => broken(
                line_no,
                BreakKind::HashMismatch,
                "h does not match the line's bytes".into(),
            ),
            LineError::Malformed(detail) => broken(line_no, BreakKind::Malformed, detail),
        };
        if let Some(pending) = self.pending_torn.take() {
            return Err(pending.error);
        }
        self.pending_torn = Some(PendingTorn {
            offset,
            length: content.len() as u64,
            sha256: hex(&Sha256::digest(content)),
            error,
        });
        Ok(())
    }

    /// The entry's place: a bad line before it is forgiven only when this
    /// is the `recover` entry that accounts for it (or the genesis written
    /// after a torn first line); one genesis, first; `seq` continuous;
    /// `prev` the `h` before.
    fn check_order(&mut self, line_no: u64, parsed: &Parsed<'_>, next: Option<&[u8]>) -> Checked {
        let fail = |kind, detail| Err(broken(line_no, kind, detail));
        let recovering = matches!(parsed.body, Body::Recover(_) | Body::Genesis(_));
        if self.pending_torn.is_some() && !recovering {
            return Err(self.pending_torn.take().expect("checked").error);
        }
        match (&parsed.body, self.last_seq) {
            (Body::Genesis(_), Some(_)) => {
                return fail(BreakKind::Malformed, "a second genesis entry".into());
            }
            (Body::Genesis(genesis), None) => {
                self.report.journal_id = Some(genesis.journal_id.to_string());
                self.report.keyed = genesis.key_id.is_some();
            }
            (_, None) => {
                return fail(
                    BreakKind::Malformed,
                    "the first entry is not a genesis entry".into(),
                );
            }
            (_, Some(_)) => {}
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
        Ok(())
    }

    /// What the entry's kind pairs with: a recover with its torn line, an
    /// intent opening its call, a decision and the `mcp_*` entries inside
    /// an open call, a terminal closing it. Every kind is named here, so a
    /// new one does not compile until verify handles it.
    fn check_pairing(&mut self, line_no: u64, parsed: &Parsed<'_>) -> Checked {
        let fail = |kind, detail| Err(broken(line_no, kind, detail));
        if let Body::Recover(recover) = &parsed.body {
            let Some(pending) = self.pending_torn.take() else {
                return fail(
                    BreakKind::Malformed,
                    "a recover entry with no torn line before it".into(),
                );
            };
            let matches = recover.torn_offset == pending.offset
                && recover.torn_length == pending.length
                && recover.torn_sha256 == pending.sha256.as_str();
            return if matches { Ok(()) } else { Err(pending.error) };
        }
        if let Some(pending) = self.pending_torn.take() {
            return Err(pending.error);
        }
        let call_id = parsed.call_id().unwrap_or_default();
        match &parsed.body {
            Body::Genesis(_) | Body::Recover(_) => Ok(()),
            Body::Intent(intent) => self.intent(line_no, parsed, intent),
            Body::Decision(_) => match self.open.get_mut(call_id) {
                Some(open) if !open.decided => {
                    open.decided = true;
                    Ok(())
                }
                Some(_) => fail(
                    BreakKind::DuplicateCall,
                    format!("a second decision for call {call_id}"),
                ),
                None => fail(
                    BreakKind::OrphanTerminal,
                    format!("a decision for call {call_id} with no open intent"),
                ),
            },
            // Of a listing, or of the server's lifecycle: nothing to pair,
            // inside its call.
            Body::McpToolDrift(_) | Body::McpRestart(_) if self.open.contains_key(call_id) => {
                Ok(())
            }
            Body::McpToolDrift(_) | Body::McpRestart(_) => fail(
                BreakKind::OrphanTerminal,
                format!(
                    "an {} for call {call_id} with no open intent",
                    parsed.kind()
                ),
            ),
            Body::McpRequest(_)
            | Body::McpResponse(_)
            | Body::McpTask(_)
            | Body::McpDecision(_) => {
                let call = self.open.get(call_id);
                let (call_open, gated) = (call.is_some(), call.is_some_and(|c| c.gated));
                self.open_requests
                    .on_entry(line_no, parsed, call_open, gated)
                    .map_err(|(kind, detail)| broken(line_no, kind, detail))
            }
            Body::Terminal(_) => {
                // Also a second terminal for a call that already ended.
                if self.open.remove(call_id).is_none() {
                    return fail(
                        BreakKind::OrphanTerminal,
                        format!("a terminal for call {call_id} with no open intent"),
                    );
                }
                let ended = self
                    .open_requests
                    .call_ended(call_id)
                    .map_err(|(kind, detail)| broken(line_no, kind, detail))?;
                self.report.unfinished_requests.extend(ended);
                Ok(())
            }
        }
    }

    /// An intent opens its call; a call id may repeat once its call ended.
    fn intent(
        &mut self,
        line_no: u64,
        parsed: &Parsed<'_>,
        intent: &super::shapes::Intent<'_>,
    ) -> Checked {
        let call_id = parsed.call_id().unwrap_or_default();
        if self.open.contains_key(call_id) {
            return Err(broken(
                line_no,
                BreakKind::DuplicateCall,
                format!("a second intent for call {call_id} while it is open"),
            ));
        }
        self.open.insert(
            call_id.to_string(),
            Unfinished {
                line: line_no,
                call_id: call_id.to_string(),
                pid: Some(intent.pid),
                ts: parsed.ts.to_string(),
                decided: false,
                gated: intent.tool_gate.is_some(),
            },
        );
        Ok(())
    }

    /// The entry is verified: the head moves past it.
    fn advance(&mut self, line_no: u64, parsed: &Parsed<'_>) {
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
            h: parsed.h.to_string(),
        });
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

    pub(super) fn finish(&mut self) {
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
