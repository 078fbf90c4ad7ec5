//! Ids and timestamps, written once: random hex, the call and journal ids
//! built from it, lowercase hex of digests, and RFC 3339 times with
//! milliseconds (the record's and the journal's).

use std::io::Read;
use std::time::SystemTime;

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(DIGITS[(byte >> 4) as usize] as char);
        out.push(DIGITS[(byte & 15) as usize] as char);
    }
    out
}

/// `bytes` random bytes as hex, from /dev/urandom. Unpredictability is not
/// needed, only uniqueness in practice: without /dev/urandom the clock and
/// the pid are mixed instead.
pub(crate) fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    let filled = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .is_ok();
    if !filled {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let mixed = nanos ^ ((std::process::id() as u128) << 64);
        for (i, byte) in buf.iter_mut().enumerate() {
            *byte = (mixed >> ((i % 16) * 8)) as u8;
        }
    }
    hex(&buf)
}

/// A call's id when none was given: `c_` and 16 hex digits.
pub(crate) fn call_id() -> String {
    format!("c_{}", random_hex(8))
}

/// A new journal's id: `j_` and 16 hex digits.
pub(crate) fn journal_id() -> String {
    format!("j_{}", random_hex(8))
}

/// RFC 3339 in UTC with milliseconds, as the record and journal write it.
pub(crate) fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

pub(crate) fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(hex(&[0, 1, 0xab, 0xff]), "0001abff");
        let id = call_id();
        assert!(id.len() == 18 && id.starts_with("c_"), "{id}");
        assert!(journal_id().starts_with("j_"));
        assert_ne!(random_hex(8), random_hex(8));
        let time = SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1500);
        assert_eq!(rfc3339(time), "1970-01-01T00:00:01.500Z");
    }
}
