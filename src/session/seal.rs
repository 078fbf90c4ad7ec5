//! The `requestState` mcp-bound seals when it asks the person through a
//! 2026-07-28 client, pure. That era has no server-to-client requests:
//! the call is answered `input_required` with mcp-bound's card and a
//! sealed state, and the client's retry (a new request) carries the
//! answer and the state back.
//!
//! - **The seal** is an HMAC-SHA256, with a key made for this run, over
//!   what was approved: the tool, the original `params_sha256`, the
//!   original request id, a serial and the expiry (the approval's
//!   clock). A state changed in any byte fails it (`Tampered`).
//! - **Once.** The original params wait here, bounded like the calls
//!   waiting for approval, until the retry takes them: a second retry
//!   with the same state finds nothing (`Replayed`). Past its expiry a
//!   state is `Expired`, whether or not its entry is still here.
//! - **The original params are what runs:** the retry's own are never
//!   forwarded, so the server runs what the person was shown.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::ids::hex;

/// What begins every state mcp-bound seals.
pub(super) const PREFIX: &str = "mcp-bound-approval.";

/// The call as it was asked about, waiting for the client's retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Asked {
    pub(super) tool: String,
    /// The original `params`, their exact text.
    pub(super) params: Option<String>,
    pub(super) params_sha256: Option<String>,
    /// The original request id, its JSON text.
    pub(super) id: String,
    pub(super) asked: Instant,
}

/// What the seal binds, as it travels (hex-encoded JSON).
#[derive(Serialize, Deserialize)]
struct Payload {
    n: u64,
    /// Milliseconds from the run's epoch.
    exp: u64,
    tool: String,
    params_sha256: Option<String>,
    id: String,
}

/// Why a state was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Broken {
    /// Not a state this run sealed, or changed.
    Tampered,
    /// Used already.
    Replayed,
    /// Past the approval's deadline.
    Expired,
}

impl Broken {
    /// The reason word the client's error carries.
    pub(super) fn word(self) -> &'static str {
        match self {
            Broken::Tampered => "request_state_invalid",
            Broken::Replayed => "request_state_replayed",
            Broken::Expired => "tool_approval_expired",
        }
    }
}

/// The states sealed in this run and not yet used.
pub(super) struct Seals {
    key: Vec<u8>,
    epoch: Instant,
    next: u64,
    /// By serial: the call and its deadline.
    open: BTreeMap<u64, (Asked, Instant)>,
    max: usize,
}

impl Seals {
    /// `key`: this run's own, never written anywhere; `max`: the most
    /// states open at once.
    pub(super) fn new(key: Vec<u8>, epoch: Instant, max: usize) -> Seals {
        Seals {
            key,
            epoch,
            next: 0,
            open: BTreeMap::new(),
            max,
        }
    }

    fn mac(&self, payload: &[u8]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes any key");
        mac.update(payload);
        mac
    }

    /// Seal `asked` until `deadline`: its state, or None when `max` are
    /// open already (expired ones are let go first).
    pub(super) fn seal(&mut self, asked: Asked, deadline: Instant) -> Option<String> {
        let now = asked.asked;
        self.open.retain(|_, (_, until)| *until > now);
        if self.open.len() >= self.max {
            return None;
        }
        self.next += 1;
        let payload = Payload {
            n: self.next,
            exp: millis(deadline.saturating_duration_since(self.epoch)),
            tool: asked.tool.clone(),
            params_sha256: asked.params_sha256.clone(),
            id: asked.id.clone(),
        };
        let payload = serde_json::to_vec(&payload).expect("a payload serializes");
        let tag = self.mac(&payload).finalize().into_bytes();
        self.open.insert(self.next, (asked, deadline));
        Some(format!("{PREFIX}{}.{}", hex(&payload), hex(&tag)))
    }

    /// Take the call `state` sealed, once, before its deadline (which
    /// comes with it).
    pub(super) fn open(&mut self, state: &str, now: Instant) -> Result<(Asked, Instant), Broken> {
        let (payload, tag) = state
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split_once('.'))
            .and_then(|(p, t)| Some((unhex(p)?, unhex(t)?)))
            .ok_or(Broken::Tampered)?;
        self.mac(&payload)
            .verify_slice(&tag)
            .map_err(|_| Broken::Tampered)?;
        let payload: Payload = serde_json::from_slice(&payload).map_err(|_| Broken::Tampered)?;
        if millis(now.saturating_duration_since(self.epoch)) >= payload.exp {
            self.open.remove(&payload.n);
            return Err(Broken::Expired);
        }
        self.open.remove(&payload.n).ok_or(Broken::Replayed)
    }
}

/// An approval given through a 2026-07-28 client, covering the call's
/// later rounds (the server's own `input_required`) until its deadline:
/// a retry with the same tool and the same arguments is not asked again.
struct Grant {
    tool: String,
    /// The arguments as JSON reads them (the client may respell them).
    arguments: serde_json::Value,
    until: Instant,
    /// The approved retry's id, its JSON text.
    approved: String,
}

/// The approvals that cover later rounds, bounded.
pub(super) struct Grants {
    open: std::collections::VecDeque<Grant>,
    max: usize,
}

impl Grants {
    pub(super) fn new(max: usize) -> Grants {
        Grants {
            open: std::collections::VecDeque::new(),
            max,
        }
    }

    /// `approved` (a retry's id) approved `tool` with `arguments` (their
    /// text) until `until`; past the bound the oldest is let go.
    pub(super) fn grant(
        &mut self,
        tool: &str,
        arguments: Option<&str>,
        until: Instant,
        approved: &str,
    ) {
        let arguments = parse_arguments(arguments);
        if self.open.len() >= self.max {
            self.open.pop_front();
        }
        self.open.push_back(Grant {
            tool: tool.to_string(),
            arguments,
            until,
            approved: approved.to_string(),
        });
    }

    /// The approved retry whose grant covers this round, if one does.
    pub(super) fn covering(
        &mut self,
        tool: &str,
        arguments: Option<&str>,
        now: Instant,
    ) -> Option<String> {
        self.open.retain(|g| g.until > now);
        let arguments = parse_arguments(arguments);
        self.open
            .iter()
            .find(|g| g.tool == tool && g.arguments == arguments)
            .map(|g| g.approved.clone())
    }
}

fn parse_arguments(arguments: Option<&str>) -> serde_json::Value {
    arguments
        .and_then(|a| serde_json::from_str(a).ok())
        .unwrap_or(serde_json::Value::Null)
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(at: Instant) -> Asked {
        Asked {
            tool: "write".into(),
            params: Some(r#"{"name":"write","arguments":{"a":1}}"#.into()),
            params_sha256: Some("ab".into()),
            id: "7".into(),
            asked: at,
        }
    }

    #[test]
    fn a_state_opens_once_before_its_deadline() {
        let t0 = Instant::now();
        let mut seals = Seals::new(b"0123456789abcdef".to_vec(), t0, 4);
        let deadline = t0 + Duration::from_secs(60);
        let state = seals.seal(asked(t0), deadline).unwrap();
        assert!(state.starts_with(PREFIX));
        assert_eq!(
            seals.open(&state, t0 + Duration::from_secs(1)),
            Ok((asked(t0), deadline))
        );
        assert_eq!(
            seals.open(&state, t0 + Duration::from_secs(2)),
            Err(Broken::Replayed)
        );
    }

    #[test]
    fn a_changed_byte_or_another_runs_key_is_tampering() {
        let t0 = Instant::now();
        let mut seals = Seals::new(b"0123456789abcdef".to_vec(), t0, 4);
        let state = seals.seal(asked(t0), t0 + Duration::from_secs(60)).unwrap();
        for at in [PREFIX.len(), PREFIX.len() + 3, state.len() - 1] {
            let mut bytes = state.clone().into_bytes();
            bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
            let changed = String::from_utf8(bytes).unwrap();
            assert_eq!(seals.open(&changed, t0), Err(Broken::Tampered), "{at}");
        }
        assert_eq!(
            seals.open("mcp-bound-approval.zz.00", t0),
            Err(Broken::Tampered)
        );
        assert_eq!(seals.open("something else", t0), Err(Broken::Tampered));
        let mut other = Seals::new(b"fedcba9876543210".to_vec(), t0, 4);
        assert_eq!(other.open(&state, t0), Err(Broken::Tampered));
        assert!(
            seals.open(&state, t0).is_ok(),
            "the untouched state still opens"
        );
    }

    #[test]
    fn past_its_deadline_a_state_is_expired_and_the_bound_holds() {
        let t0 = Instant::now();
        let mut seals = Seals::new(b"0123456789abcdef".to_vec(), t0, 2);
        let deadline = t0 + Duration::from_secs(1);
        let first = seals.seal(asked(t0), deadline).unwrap();
        assert!(seals.seal(asked(t0), deadline).is_some());
        assert_eq!(seals.seal(asked(t0), deadline), None, "two open at most");
        assert_eq!(seals.open(&first, deadline), Err(Broken::Expired));
        // Expired ones are let go when a new one is sealed.
        let later = deadline + Duration::from_secs(1);
        assert!(seals.seal(asked(deadline), later).is_some());
    }

    #[test]
    fn a_grant_covers_the_same_tool_and_arguments_until_its_deadline() {
        let t0 = Instant::now();
        let until = t0 + Duration::from_secs(5);
        let mut grants = Grants::new(2);
        grants.grant("write", Some(r#"{"a": 1, "b": [2]}"#), until, "9");
        let respelled = Some(r#"{"b":[2],"a":1}"#);
        assert_eq!(grants.covering("write", respelled, t0), Some("9".into()));
        assert_eq!(
            grants.covering("write", Some(r#"{"a":2,"b":[2]}"#), t0),
            None
        );
        assert_eq!(grants.covering("read", respelled, t0), None);
        assert_eq!(grants.covering("write", respelled, until), None, "expired");
    }
}
