//! A client line over --max-message-bytes: it streams through to the
//! server unread, hashed as it goes, and its request entry (for a line the
//! audit cannot read) is made before its newline is passed on. Under
//! a tool gate, which cannot read it either, it is refused instead,
//! with the same hash in its journal entry.

use sha2::{Digest, Sha256};

use super::Session;
use super::audit::{Audit, Irregular, McpRequest};
use super::client::Overlong;
use super::refusal::{LineOf, Refusal, Refused};
use crate::ids::hex;

impl Session {
    /// A piece of a client line over --max-message-bytes (`first` on the
    /// one that found it too long). It goes on unread, but hashed: when
    /// the piece with its newline comes, the request entry (for a line the
    /// audit cannot read, whatever it may hold) is made first, and the
    /// loop writes it to the journal before that piece reaches the server.
    pub(crate) fn on_client_overlong(&mut self, piece: &[u8], first: bool, out: &mut Vec<u8>) {
        if first {
            self.facts.client.non_jsonrpc_lines += 1;
            // A gate cannot read it, so it might be a tools/call: refused.
            self.current_line.overlong = Some(Overlong {
                hash: Sha256::new(),
                refused: self.gate.is_some(),
            });
        }
        let complete = piece.last() == Some(&b'\n');
        let Some(overlong) = self.current_line.overlong.as_mut() else {
            out.extend_from_slice(piece);
            return;
        };
        overlong.hash.update(if complete {
            &piece[..piece.len() - 1]
        } else {
            piece
        });
        if !overlong.refused {
            out.extend_from_slice(piece);
        }
        if complete {
            self.end_overlong(false);
        }
    }

    /// The client's stream ended inside a line over --max-message-bytes.
    pub(crate) fn on_client_overlong_eof(&mut self) {
        self.end_overlong(true);
    }

    fn end_overlong(&mut self, unterminated: bool) {
        let Some(overlong) = self.current_line.overlong.take() else {
            return;
        };
        let line_sha256 = hex(&overlong.hash.finalize());
        let mut irregular = vec![Irregular::OverMaxMessageBytes];
        if unterminated {
            irregular.push(Irregular::Unterminated);
        }
        if overlong.refused {
            // Nothing of it reached the server.
            let refused = Refused {
                ids: &[None],
                method: None,
                line: LineOf::Sha256(line_sha256),
                irregular,
            };
            self.refuse(Refusal::OverMaxMessageBytes, refused);
            return;
        }
        if self.policy.audit == super::AuditRequests::None {
            return;
        }
        self.out.audit.push(Audit::Request(McpRequest {
            call_id: self.call_id.clone(),
            request_id: None,
            method: None,
            name: None,
            params_sha256: None,
            line_sha256: Some(line_sha256),
            irregular,
        }));
    }
}
