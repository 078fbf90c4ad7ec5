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
/// later rounds (the server's own `input_required`), one at a time: the
/// server's latest `input_required` answer to the approved call (or to
/// the round covered last) names a `requestState` (or none), and the
/// one retry that carries that state byte for byte (or, for none, none),
/// with the same tool and the same arguments, is covered. The grant then
/// waits for that retry's answer: another `input_required` moves it to
/// the new state, any other answer ends it, and so does the deadline.
struct Grant {
    tool: String,
    /// The arguments as canonical JSON of a strict parse (None: none
    /// given), since the client's SDK may respell them.
    arguments: Option<String>,
    until: Instant,
    /// The approved retry's id, its JSON text.
    approved: String,
    /// Where the grant stands.
    stage: Stage,
}

impl Grant {
    /// Whether it waits for the server's answer to `key`.
    fn awaits(&self, key: &str) -> bool {
        matches!(&self.stage, Stage::Answer(k) if k == key)
    }
}

/// A grant waits for the server's answer to one request, or for the
/// client's retry carrying one state.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stage {
    /// The key of the request whose answer moves the grant on.
    Answer(String),
    /// The `requestState` the server's last `input_required` named
    /// (None: it named none).
    Retry(Option<String>),
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

    /// `approved` (a retry's id, its JSON text; `key`, the table's key
    /// for it) approved `tool` with `arguments` (their text) until
    /// `until`. Arguments that strict JSON does not read are never
    /// covered. Past the bound the oldest is let go.
    pub(super) fn grant(
        &mut self,
        tool: &str,
        arguments: Option<&str>,
        until: Instant,
        (approved, key): (&str, &str),
    ) {
        let Ok(arguments) = canonical_arguments(arguments) else {
            return;
        };
        if self.open.len() >= self.max {
            self.open.pop_front();
        }
        self.open.push_back(Grant {
            tool: tool.to_string(),
            arguments,
            until,
            approved: approved.to_string(),
            stage: Stage::Answer(key.to_string()),
        });
    }

    /// The server answered the request `key`: with `input_required` and
    /// this `state` (Some(None): no state), or (None) otherwise. A grant
    /// waiting for that answer moves to the state, or ends.
    pub(super) fn answered(&mut self, key: &str, state: Option<Option<String>>) {
        let Some(at) = self.open.iter().position(|g| g.awaits(key)) else {
            return;
        };
        match state {
            Some(state) => self.open[at].stage = Stage::Retry(state),
            None => {
                self.open.remove(at);
            }
        }
    }

    /// Whether a grant waits for the answer to `key`.
    pub(super) fn awaits(&self, key: &str) -> bool {
        self.open.iter().any(|g| g.awaits(key))
    }

    /// The round `key` (a retry carrying `state`, or none) of `tool` with
    /// `arguments`: the approved retry whose grant covers it, used up by
    /// it (the grant then waits for this round's answer), if one does.
    pub(super) fn cover(
        &mut self,
        tool: &str,
        arguments: Option<&str>,
        (state, key): (Option<&str>, &str),
        now: Instant,
    ) -> Option<String> {
        self.open.retain(|g| g.until > now);
        let arguments = canonical_arguments(arguments).ok()?;
        let grant = self.open.iter_mut().find(|g| {
            g.tool == tool
                && g.arguments == arguments
                && matches!(&g.stage, Stage::Retry(s) if s.as_deref() == state)
        })?;
        grant.stage = Stage::Answer(key.to_string());
        Some(grant.approved.clone())
    }
}

/// `arguments` as canonical JSON (keys sorted, as serde_json's map
/// keeps them), None when absent; Err when strict JSON does not read
/// them, so that what cannot be read never equals what can.
fn canonical_arguments(arguments: Option<&str>) -> Result<Option<String>, ()> {
    arguments
        .map(|text| {
            serde_json::from_str::<serde_json::Value>(text)
                .map(|value| value.to_string())
                .map_err(|_| ())
        })
        .transpose()
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
    fn a_grant_covers_one_retry_carrying_the_servers_state_and_moves_with_its_answers() {
        let t0 = Instant::now();
        let until = t0 + Duration::from_secs(5);
        let mut grants = Grants::new(2);
        grants.grant("write", Some(r#"{"a": 1, "b": [2]}"#), until, ("9", "9"));
        let respelled = Some(r#"{"b":[2],"a":1}"#);
        assert_eq!(
            grants.cover("write", respelled, (Some("s1"), "10"), t0),
            None,
            "no state from the server yet"
        );
        grants.answered("9", Some(Some("s1".into())));
        assert_eq!(
            grants.cover("write", respelled, (Some("s0"), "10"), t0),
            None
        );
        assert_eq!(
            grants.cover("write", Some(r#"{"a":2,"b":[2]}"#), (Some("s1"), "10"), t0),
            None
        );
        assert_eq!(
            grants.cover("read", respelled, (Some("s1"), "10"), t0),
            None
        );
        assert_eq!(
            grants.cover("write", respelled, (Some("s1"), "10"), t0),
            Some("9".into())
        );
        assert_eq!(
            grants.cover("write", respelled, (Some("s1"), "11"), t0),
            None,
            "used up by the round it covered"
        );
        assert!(grants.awaits("10"));
        grants.answered("10", Some(Some("s2".into())));
        assert_eq!(
            grants.cover("write", respelled, (Some("s2"), "11"), t0),
            Some("9".into())
        );
        grants.answered("11", None);
        assert!(!grants.awaits("11"), "a final answer ends it");
        assert_eq!(
            grants.cover("write", respelled, (Some("s2"), "12"), t0),
            None
        );
        grants.grant("write", None, until, ("20", "20"));
        grants.answered("20", Some(Some("s".into())));
        assert_eq!(
            grants.cover("write", Some("{\"n\":NaN}"), (Some("s"), "21"), t0),
            None,
            "what strict JSON cannot read is not \"no arguments\""
        );
        assert_eq!(
            grants.cover("write", None, (Some("s"), "21"), until),
            None,
            "expired"
        );
        grants.grant("write", None, until, ("40", "40"));
        grants.answered("40", Some(None));
        assert_eq!(grants.cover("write", None, (Some("x"), "41"), t0), None);
        assert_eq!(
            grants.cover("write", None, (None, "41"), t0),
            Some("40".into()),
            "no state named, none carried"
        );
        grants.grant("write", Some("{\"n\":NaN}"), until, ("30", "30"));
        assert!(
            !grants.awaits("30"),
            "unreadable arguments are never granted"
        );
    }
}
