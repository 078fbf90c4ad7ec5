//! How `h` is computed: SHA-256, or HMAC-SHA256 under a key whose id (a
//! hash of the key, never the key) the genesis entry records, and the one
//! check of that id against the key in hand.

use std::io;
use std::path::Path;

use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::ids::hex;

/// How `h` is computed.
#[derive(Clone)]
pub enum Key {
    Plain,
    Hmac { secret: Vec<u8>, id: String },
}

impl Key {
    /// Read a key file; its id (a hash of the key, not the key) goes into
    /// the genesis entry so a verifier can tell a wrong key from tampering.
    /// Read a key file, which must be private (`trust`: ours or root's,
    /// no access for others).
    pub fn load(path: &Path) -> io::Result<Key> {
        use std::io::Read;
        // Never a wait: a FIFO opens at once, and is refused below.
        let mut file = crate::sys::open_to_read(path)?;
        crate::trust::judge(
            &crate::sys::seen(&file)?,
            crate::sys::effective_uid(),
            crate::trust::Role::Key,
        )
        .map_err(|why| io::Error::new(io::ErrorKind::PermissionDenied, why))?;
        let mut secret = Vec::new();
        file.read_to_end(&mut secret)?;
        while secret.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            secret.pop();
        }
        if secret.len() < 16 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a journal key must be at least 16 bytes",
            ));
        }
        let mut hasher = Sha256::new();
        hasher.update(b"mcp-bound journal key id\0");
        hasher.update(&secret);
        let id = hex(&hasher.finalize()[..8]);
        Ok(Key::Hmac { secret, id })
    }

    pub fn id(&self) -> Option<&str> {
        match self {
            Key::Plain => None,
            Key::Hmac { id, .. } => Some(id),
        }
    }

    pub fn digest(&self, bytes: &[u8]) -> String {
        match self {
            Key::Plain => hex(&Sha256::digest(bytes)),
            Key::Hmac { secret, .. } => {
                let mut mac =
                    Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
                mac.update(bytes);
                hex(&mac.finalize().into_bytes())
            }
        }
    }
}

/// How the genesis entry's key id and the key in hand disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeyMismatch {
    /// The journal is keyed (with this key id), and no key was given.
    KeyNeeded(String),
    /// The journal is not keyed, and a key was given.
    NotKeyed,
    /// A different key (the journal's key id).
    OtherKey(String),
}

/// Compare the genesis entry's key id with `key` before any hash is
/// checked, so a wrong or missing key reads as that, not as damage.
/// None: `first_line` is not a genesis entry at all.
pub(crate) fn check_genesis_key(first_line: &[u8], key: &Key) -> Option<Result<(), KeyMismatch>> {
    #[derive(Deserialize)]
    struct GenesisKey {
        kind: String,
        key_id: Option<String>,
    }
    let genesis: GenesisKey = serde_json::from_slice(first_line).ok()?;
    if genesis.kind != "genesis" {
        return None;
    }
    Some(match (genesis.key_id, key.id()) {
        (theirs, ours) if theirs.as_deref() == ours => Ok(()),
        (Some(id), None) => Err(KeyMismatch::KeyNeeded(id)),
        (None, Some(_)) => Err(KeyMismatch::NotKeyed),
        (Some(id), Some(_)) => Err(KeyMismatch::OtherKey(id)),
        (None, None) => Ok(()),
    })
}
