//! Whether a file mcp-bound opened by name is its own to write into. A
//! journal, a stderr log or the log's lock in a shared directory (a sticky
//! /tmp) may have been planted by another local user, who would then read
//! the intent and the server's stderr, and own the chain. Pure: it judges
//! what `fstat` said of the descriptor that was opened (`sys::seen`), so
//! a file swapped in between a check and the open cannot pass.

/// What `fstat` said of an open file (on Windows, its security
/// descriptor, in the same terms: see `sys/windows/owner.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    pub uid: u32,
    /// The permission bits.
    pub mode: u32,
    pub kind: Kind,
    /// How the user makes such a file theirs alone, as the advice in a
    /// line says it (`chmod 600`; icacls on Windows).
    pub make_private: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Regular,
    Fifo,
    CharDevice,
    Other,
}

/// What the file is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Journal,
    /// `--stderr-log`: a regular file, or a FIFO or a character device
    /// (`/dev/null`, a pipe to a log shipper) owned by us or by root.
    StderrLog,
    /// The stderr log's `.lock`.
    Lock,
    /// A journal key (--journal-key, verify --key): ours or root's, and
    /// private, or it is no secret.
    Key,
}

/// Ok(None): ours, private. Ok(Some(warning)): ours, but others can read
/// it (an existing 0644 file keeps working; the warning is said once and
/// recorded). Err: refused (exit 125, nothing run), why in words. The
/// caller names the file.
pub(crate) fn judge(seen: &Seen, euid: u32, role: Role) -> Result<Option<String>, String> {
    let special = matches!(seen.kind, Kind::Fifo | Kind::CharDevice);
    if special && role == Role::StderrLog {
        return if seen.uid == euid || seen.uid == 0 {
            Ok(None)
        } else {
            Err(format!(
                "the device or FIFO belongs to uid {}, neither us nor root: refusing to write the server's stderr to it",
                seen.uid
            ))
        };
    }
    if role == Role::Key {
        return key(seen, euid);
    }
    if seen.kind != Kind::Regular {
        return Err("not a regular file: refusing to write to it".into());
    }
    if seen.uid != euid {
        return Err(format!(
            "the file belongs to uid {}, not to us (uid {euid}): another user may have planted it; refusing to write to it",
            seen.uid
        ));
    }
    if seen.mode & 0o022 != 0 {
        return Err(format!(
            "the file is writable by others (mode {:04o}): refusing to write to it",
            seen.mode & 0o7777
        ));
    }
    Ok((seen.mode & 0o044 != 0 && role != Role::Lock).then(|| {
        format!(
            "others can read it (mode {:04o}); {} keeps it private",
            seen.mode & 0o7777,
            seen.make_private
        )
    }))
}

/// A key is a secret: ours or root's, and no one else may read or write it.
fn key(seen: &Seen, euid: u32) -> Result<Option<String>, String> {
    if seen.kind != Kind::Regular {
        return Err("a key is a regular file".into());
    }
    if seen.uid != euid && seen.uid != 0 {
        return Err(format!(
            "the key belongs to uid {}, neither us nor root: refusing it",
            seen.uid
        ));
    }
    if seen.mode & 0o077 != 0 {
        return Err(format!(
            "others can read or write the key (mode {:04o}), so it is no secret: {} makes it one",
            seen.mode & 0o7777,
            seen.make_private
        ));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(uid: u32, mode: u32, kind: Kind) -> Seen {
        Seen {
            uid,
            mode,
            kind,
            make_private: "chmod 600",
        }
    }

    #[test]
    fn ours_and_private_passes_readable_warns_anything_else_is_refused() {
        let me = 1000;
        for role in [Role::Journal, Role::StderrLog, Role::Lock] {
            assert_eq!(judge(&seen(me, 0o600, Kind::Regular), me, role), Ok(None));
            assert!(judge(&seen(1001, 0o600, Kind::Regular), me, role).is_err());
            assert!(judge(&seen(0, 0o600, Kind::Regular), me, role).is_err());
            assert!(judge(&seen(me, 0o620, Kind::Regular), me, role).is_err());
            assert!(judge(&seen(me, 0o602, Kind::Regular), me, role).is_err());
        }
        let warned = judge(&seen(me, 0o644, Kind::Regular), me, Role::Journal);
        assert!(
            warned
                .as_ref()
                .is_ok_and(|w| w.as_ref().is_some_and(|w| w.contains("0644")))
        );
        assert_eq!(
            judge(&seen(me, 0o644, Kind::Regular), me, Role::Lock),
            Ok(None)
        );
        // The journal is a regular file, always.
        assert!(judge(&seen(me, 0o600, Kind::Fifo), me, Role::Journal).is_err());
        assert!(judge(&seen(me, 0o600, Kind::CharDevice), me, Role::Lock).is_err());
        // A log may be /dev/null (root's, 0666), or a FIFO of ours.
        assert_eq!(
            judge(&seen(0, 0o666, Kind::CharDevice), me, Role::StderrLog),
            Ok(None)
        );
        assert_eq!(
            judge(&seen(me, 0o644, Kind::Fifo), me, Role::StderrLog),
            Ok(None)
        );
        assert!(judge(&seen(1001, 0o600, Kind::Fifo), me, Role::StderrLog).is_err());
        assert!(judge(&seen(me, 0o600, Kind::Other), me, Role::StderrLog).is_err());
        // A key: private, ours or root's.
        assert_eq!(
            judge(&seen(me, 0o600, Kind::Regular), me, Role::Key),
            Ok(None)
        );
        assert_eq!(
            judge(&seen(0, 0o400, Kind::Regular), me, Role::Key),
            Ok(None)
        );
        for mode in [0o640, 0o604, 0o620] {
            assert!(judge(&seen(me, mode, Kind::Regular), me, Role::Key).is_err());
        }
        assert!(judge(&seen(1001, 0o600, Kind::Regular), me, Role::Key).is_err());
    }
}
