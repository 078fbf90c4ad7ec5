//! Parsing of the units users type: durations (GNU timeout's syntax, plus
//! `ms`) and byte sizes (bytes, with optional binary suffixes). Pure.

use std::time::Duration;

/// The longest duration we keep; larger values are clamped, as GNU timeout
/// does, rather than rejected. About 136 years: no deadline in practice.
pub const MAX_DURATION: Duration = Duration::from_secs(u32::MAX as u64);

/// Largest head or tail limit accepted: 1 GiB. A bound on memory is the
/// point of these limits; a larger one is almost surely a typo.
pub const MAX_CAPTURE_BYTES: u64 = 1 << 30;

/// Parse `10`, `10.34`, `1e-3`, `.1`, `500ms`, `30s`, `5m`, `1h`, `1d`,
/// `2.34e+5d`. A bare number is seconds. Tiny values round up to 1 ns, so
/// a deadline is never shorter than asked; huge values clamp.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("empty duration".into());
    }
    let (number, unit_seconds) = split_unit(trimmed);
    let value: f64 = number
        .parse()
        .ok()
        .filter(|_| is_plain_number(number))
        .ok_or_else(|| {
            format!("'{text}' is not a duration (use e.g. 10, 1.5, 500ms, 30s, 5m, 1h, 1d)")
        })?;
    if value.is_sign_negative() && value != 0.0 {
        return Err(format!("'{text}': a duration cannot be negative"));
    }
    let seconds = value * unit_seconds;
    if seconds == 0.0 {
        return Ok(Duration::ZERO);
    }
    if seconds >= MAX_DURATION.as_secs_f64() {
        return Ok(MAX_DURATION);
    }
    let nanos = (seconds * 1e9).ceil().max(1.0);
    Ok(Duration::from_nanos(nanos as u64))
}

fn split_unit(text: &str) -> (&str, f64) {
    const UNITS: [(&str, f64); 5] = [
        ("ms", 1e-3),
        ("s", 1.0),
        ("m", 60.0),
        ("h", 3600.0),
        ("d", 86400.0),
    ];
    for (suffix, seconds) in UNITS {
        if let Some(number) = text.strip_suffix(suffix) {
            return (number, seconds);
        }
    }
    (text, 1.0)
}

/// Rust's float parser also takes `inf`, `nan` and `infinity`; GNU does not.
fn is_plain_number(number: &str) -> bool {
    !number.is_empty()
        && number
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        && number.bytes().any(|b| b.is_ascii_digit())
}

/// Parse a byte count: `16384`, `16K`, `16KiB`, `4M`, `1MiB`, `1G`.
/// Suffixes are binary (K = 1024), as limits on memory usually are.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (digits, suffix) = trimmed.split_at(split);
    if digits.is_empty() {
        return Err(format!(
            "'{text}' is not a byte count (use e.g. 4096, 16K, 1MiB)"
        ));
    }
    let multiplier: u64 = match suffix.trim() {
        "" | "B" => 1,
        "K" | "k" | "KiB" | "KB" => 1 << 10,
        "M" | "MiB" | "MB" => 1 << 20,
        "G" | "GiB" | "GB" => 1 << 30,
        other => return Err(format!("'{text}': unknown size suffix '{other}'")),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .ok_or_else(|| format!("'{text}' is too large"))
}

/// A capture limit: a byte count no larger than [`MAX_CAPTURE_BYTES`].
pub fn parse_capture_bytes(text: &str) -> Result<usize, String> {
    let bytes = parse_bytes(text)?;
    if bytes > MAX_CAPTURE_BYTES {
        return Err(format!("'{text}' exceeds the largest capture limit, 1GiB"));
    }
    Ok(bytes as usize)
}

/// Milliseconds for the record, saturating.
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gnu_durations() {
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("10.34"), Ok(Duration::from_millis(10_340)));
        assert_eq!(parse_duration("1e-3"), Ok(Duration::from_millis(1)));
        assert_eq!(parse_duration(".1"), Ok(Duration::from_millis(100)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86400)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(
            parse_duration("2.34e+5d"),
            Ok(MAX_DURATION.min(Duration::from_secs_f64(2.34e5 * 86400.0)))
        );
    }

    #[test]
    fn tiny_rounds_up_and_huge_clamps() {
        assert_eq!(parse_duration("1e-12"), Ok(Duration::from_nanos(1)));
        assert_eq!(parse_duration("1e300"), Ok(MAX_DURATION));
        assert_eq!(parse_duration("99999999999d"), Ok(MAX_DURATION));
    }

    #[test]
    fn bad_durations() {
        for bad in [
            "", "-1", "abc", "1D", "1x", "inf", "nan", "1.2.3s", "s", "ms", "--1",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_bytes("0"), Ok(0));
        assert_eq!(parse_bytes("16384"), Ok(16384));
        assert_eq!(parse_bytes("16K"), Ok(16384));
        assert_eq!(parse_bytes("1MiB"), Ok(1 << 20));
        assert_eq!(parse_bytes("2G"), Ok(2 << 30));
        for bad in [
            "",
            "-1",
            "1.5K",
            "K",
            "12Q",
            "99999999999999999999",
            "18446744073709551615G",
        ] {
            assert!(parse_bytes(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(parse_capture_bytes("2G").is_err());
        assert_eq!(parse_capture_bytes("1G"), Ok(1 << 30));
    }
}
