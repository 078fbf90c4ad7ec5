//! Parsing of the units users type: durations (GNU timeout's syntax, plus
//! `ms`) and byte sizes (whole bytes, with binary suffixes); and a
//! duration as the journal's readers show it (`short_duration`). Pure.

use std::time::Duration;

/// The longest duration we keep; larger values are clamped, as GNU timeout
/// does, rather than rejected. About 136 years: no deadline in practice.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(u32::MAX as u64);

/// Largest head or tail limit accepted: 1 GiB. A bound on memory is the
/// point of these limits; a larger one is almost surely a typo.
pub(crate) const MAX_CAPTURE_BYTES: u64 = 1 << 30;

/// Parse `10`, `10.34`, `1e-3`, `.1`, `500ms`, `30s`, `5m`, `1h`, `1d`,
/// `2.34e+5d`, and as strtod(3) reads them for GNU timeout, hex floats
/// (`0x10`, `0x1p-3`) and `inf`/`infinity`. A bare number is seconds. Tiny
/// values round up to 1 ns, so a deadline is never shorter than asked; huge
/// and infinite values clamp to [`MAX_DURATION`] (see [`parse_timeout`]).
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let (value, unit_seconds) = parse_number_and_unit(text)?;
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

/// A deadline: as [`parse_duration`], but an infinite one (`inf`,
/// `infinity`) is no deadline at all, like `0`: both return zero.
pub(crate) fn parse_timeout(text: &str) -> Result<Duration, String> {
    match parse_number_and_unit(text)? {
        (value, _) if value.is_infinite() => Ok(Duration::ZERO),
        _ => parse_duration(text),
    }
}

fn not_a_duration(text: &str) -> String {
    format!("'{text}' is not a duration (use e.g. 10, 1.5, 500ms, 30s, 5m, 1h, 1d, inf)")
}

/// The number (never negative, never NaN) and the seconds its unit is worth.
fn parse_number_and_unit(text: &str) -> Result<(f64, f64), String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("empty duration".into());
    }
    let (negative, unsigned) = match trimmed.as_bytes()[0] {
        b'-' => (true, &trimmed[1..]),
        b'+' => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let (value, rest) = if let Some(rest) = strip_infinity(unsigned) {
        (f64::INFINITY, rest)
    } else if let Some(hex) = unsigned
        .strip_prefix("0x")
        .or_else(|| unsigned.strip_prefix("0X"))
    {
        parse_hex_float(hex).ok_or_else(|| not_a_duration(text))?
    } else {
        let (number, unit_seconds) = split_unit(unsigned);
        // One sign at most, and it was taken off above.
        let value: f64 = number
            .parse()
            .ok()
            .filter(|_| is_plain_number(number) && !number.starts_with(['+', '-']))
            .ok_or_else(|| not_a_duration(text))?;
        return sign_checked(text, negative, value).map(|v| (v, unit_seconds));
    };
    let unit_seconds = unit_of(rest).ok_or_else(|| not_a_duration(text))?;
    sign_checked(text, negative, value).map(|v| (v, unit_seconds))
}

fn sign_checked(text: &str, negative: bool, value: f64) -> Result<f64, String> {
    if negative && value != 0.0 {
        return Err(format!("'{text}': a duration cannot be negative"));
    }
    Ok(value)
}

/// `inf` or `infinity`, any case, and what follows it.
fn strip_infinity(text: &str) -> Option<&str> {
    let lower = text.to_ascii_lowercase();
    if lower.starts_with("infinity") {
        Some(&text["infinity".len()..])
    } else if lower.starts_with("inf") {
        Some(&text["inf".len()..])
    } else {
        None
    }
}

/// The hex float after `0x`, as strtod reads it: hex digits with an
/// optional point, then an optional binary exponent `p[+-]N`. Returns the
/// value and what follows (a unit, or nothing).
fn parse_hex_float(text: &str) -> Option<(f64, &str)> {
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut value = 0f64;
    let mut digits = 0;
    let mut scale = 0i32;
    let mut seen_point = false;
    while i < bytes.len() {
        match bytes[i] {
            b'.' if !seen_point => seen_point = true,
            b => match (b as char).to_digit(16) {
                Some(d) => {
                    value = value * 16.0 + d as f64;
                    digits += 1;
                    if seen_point {
                        scale -= 4;
                    }
                }
                None => break,
            },
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    let mut exponent = 0i32;
    if i < bytes.len() && matches!(bytes[i], b'p' | b'P') {
        let mut j = i + 1;
        let negative = match bytes.get(j) {
            Some(b'-') => {
                j += 1;
                true
            }
            Some(b'+') => {
                j += 1;
                false
            }
            _ => false,
        };
        let start = j;
        while j < bytes.len() && bytes[j].is_ascii_digit() {
            exponent = exponent
                .saturating_mul(10)
                .saturating_add((bytes[j] - b'0') as i32);
            j += 1;
        }
        // strtod needs digits after p; without them the p is not consumed.
        if j > start {
            if negative {
                exponent = -exponent;
            }
            i = j;
        }
    }
    let value = value * 2f64.powi(exponent.saturating_add(scale));
    Some((value, &text[i..]))
}

const UNITS: [(&str, f64); 5] = [
    ("ms", 1e-3),
    ("s", 1.0),
    ("m", 60.0),
    ("h", 3600.0),
    ("d", 86400.0),
];

/// The seconds a whole suffix is worth; `""` is seconds.
fn unit_of(suffix: &str) -> Option<f64> {
    if suffix.is_empty() {
        return Some(1.0);
    }
    UNITS
        .iter()
        .find(|(name, _)| *name == suffix)
        .map(|(_, seconds)| *seconds)
}

fn split_unit(text: &str) -> (&str, f64) {
    for (suffix, seconds) in UNITS {
        if let Some(number) = text.strip_suffix(suffix) {
            return (number, seconds);
        }
    }
    (text, 1.0)
}

/// A decimal number as strtod reads one. Rust's float parser would also
/// take `nan`, which GNU refuses (no duration is NaN); `inf` and hex are
/// read before this, as strtod does.
fn is_plain_number(number: &str) -> bool {
    !number.is_empty()
        && number
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        && number.bytes().any(|b| b.is_ascii_digit())
}

/// The size suffixes, any case: all binary (K, KB and KiB are 1024), as
/// limits on memory usually are, and as `1KB` has always meant here.
const SIZE_SUFFIXES: [(&str, u32); 5] = [("", 0), ("k", 10), ("m", 20), ("g", 30), ("t", 40)];

/// What `--help` and the man page say a size accepts.
pub(crate) const SIZE_SYNTAX: &str = "a whole number of bytes, or a number (1.5, 1e3, 0x10) with a suffix K, M, G or T, \
any case, with B or iB optional; every suffix is binary: 1K, 1KB and 1KiB are 1024";

/// Parse a byte count: `16384`, `16K`, `16KiB`, `1.5M`, `1e3`, `0x10`,
/// `4 mb`. See [`SIZE_SYNTAX`]. The result is a whole number of bytes:
/// `0.1K` is refused, never rounded.
pub(crate) fn parse_bytes(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    if trimmed.starts_with('-') {
        return Err(format!("'{text}': a size cannot be negative"));
    }
    let unsigned = trimmed.strip_prefix('+').unwrap_or(trimmed);
    let bad = || format!("'{text}' is not a size (use e.g. 4096, 16K, 1.5MiB, 2G)");
    let (number, shift) = split_size_suffix(unsigned).ok_or_else(bad)?;
    let multiplier = 1u64 << shift;
    let too_large = || format!("'{text}' is too large");
    if let Some(hex) = number
        .strip_prefix("0x")
        .or_else(|| number.strip_prefix("0X"))
    {
        let value = u64::from_str_radix(hex, 16).map_err(|_| bad())?;
        return value.checked_mul(multiplier).ok_or_else(too_large);
    }
    if !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) {
        return match number.parse::<u64>() {
            Ok(value) => value.checked_mul(multiplier).ok_or_else(too_large),
            Err(_) => Err(too_large()),
        };
    }
    if !is_plain_number(number) || number.starts_with(['+', '-']) {
        return Err(bad());
    }
    let value: f64 = number.parse().map_err(|_| bad())?;
    let bytes = value * multiplier as f64;
    // Exact below 2^53; past it a float cannot say which byte was meant.
    if bytes >= (1u64 << 53) as f64 {
        return Err(too_large());
    }
    if bytes.fract() != 0.0 {
        return Err(format!("'{text}' is not a whole number of bytes ({bytes})"));
    }
    Ok(bytes as u64)
}

/// The number and the power of two its suffix is worth.
fn split_size_suffix(text: &str) -> Option<(&str, u32)> {
    let lower = text.to_ascii_lowercase();
    // A hex number's digits include b: 0x1b is 27, not 1 byte.
    let hex = lower.starts_with("0x");
    let end = lower
        .find(|c: char| {
            !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-' || c == 'x' || c == 'e')
                && !(hex && c.is_ascii_hexdigit())
        })
        .unwrap_or(lower.len());
    // An e that ends the number is no exponent (1e is nothing).
    let (number, suffix) = (text[..end].trim_end(), lower[end..].trim());
    let suffix = suffix
        .strip_suffix("ib")
        .or_else(|| suffix.strip_suffix('b'))
        .filter(|unit| !unit.is_empty())
        .unwrap_or(suffix);
    let suffix = if suffix == "b" { "" } else { suffix };
    SIZE_SUFFIXES
        .iter()
        .find(|(name, _)| *name == suffix)
        .map(|(_, shift)| (number, *shift))
}

/// A capture limit: a byte count no larger than [`MAX_CAPTURE_BYTES`].
pub(crate) fn parse_capture_bytes(text: &str) -> Result<usize, String> {
    let bytes = parse_bytes(text)?;
    if bytes > MAX_CAPTURE_BYTES {
        return Err(format!("'{text}' exceeds the largest capture limit, 1GiB"));
    }
    Ok(bytes as usize)
}

/// Milliseconds as a person reads them in a column: `85ms`, `1.5s`,
/// `1m01s`, `2h03m` (`log`, `check`, `report`).
pub(crate) fn short_duration(ms: u64) -> String {
    match ms {
        ms if ms < 1000 => format!("{ms}ms"),
        ms if ms < 60_000 => format!("{:.1}s", ms as f64 / 1000.0),
        ms if ms < 3_600_000 => format!("{}m{:02}s", ms / 60_000, ms / 1000 % 60),
        ms => format!("{}h{:02}m", ms / 3_600_000, ms / 60_000 % 60),
    }
}

/// Milliseconds for the record, saturating.
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A limit in whole milliseconds, rounded up: a limit of 0.4 ms is
/// recorded as 1 ms, never as 0 (which would read as "none").
pub(crate) fn limit_millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
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
            "", "-1", "abc", "1D", "1x", "nan", "1.2.3s", "s", "ms", "--1", "+-1", "-inf", "0x",
            "0xg", "0x1q", "infx", "in", "-0x1",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn strtod_forms_gnu_timeout_accepts() {
        assert_eq!(parse_duration("0x10"), Ok(Duration::from_secs(16)));
        assert_eq!(parse_duration("0x1p-3"), Ok(Duration::from_millis(125)));
        assert_eq!(parse_duration("0X1.8p1"), Ok(Duration::from_secs(3)));
        // strtod reads the d as a hex digit: 0x1d is 29 seconds, not a day.
        assert_eq!(parse_duration("0x1d"), Ok(Duration::from_secs(29)));
        assert_eq!(parse_duration("0x1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("0x2m"), Ok(Duration::from_secs(120)));
        // A p without digits is not an exponent, and then not a unit.
        assert!(parse_duration("0x1p").is_err());
        assert_eq!(parse_duration("+5"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("-0"), Ok(Duration::ZERO));
        for infinite in ["inf", "INF", "infinity", "Infinity", "+inf", "infs", "infd"] {
            assert_eq!(parse_duration(infinite), Ok(MAX_DURATION), "{infinite}");
            assert_eq!(parse_timeout(infinite), Ok(Duration::ZERO), "{infinite}");
        }
        assert_eq!(parse_timeout("2s"), Ok(Duration::from_secs(2)));
    }

    #[test]
    fn limits_round_up_to_whole_milliseconds() {
        assert_eq!(limit_millis(Duration::ZERO), 0);
        assert_eq!(limit_millis(Duration::from_nanos(1)), 1);
        assert_eq!(limit_millis(Duration::from_micros(400)), 1);
        assert_eq!(limit_millis(Duration::from_micros(1001)), 2);
        assert_eq!(limit_millis(Duration::from_secs(2)), 2000);
        assert_eq!(millis(Duration::from_micros(1999)), 1);
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_bytes("0"), Ok(0));
        assert_eq!(parse_bytes("16384"), Ok(16384));
        assert_eq!(parse_bytes("16K"), Ok(16384));
        assert_eq!(parse_bytes("1MiB"), Ok(1 << 20));
        assert_eq!(parse_bytes("2G"), Ok(2 << 30));
        // What was accepted before means what it meant: binary, KB too.
        for (text, bytes) in [
            ("1KB", 1024),
            ("1k", 1024),
            ("1MB", 1 << 20),
            ("1GB", 1 << 30),
            ("7B", 7),
        ] {
            assert_eq!(parse_bytes(text), Ok(bytes), "{text}");
        }
        // The spellings users type.
        for (text, bytes) in [
            ("1T", 1u64 << 40),
            ("1TiB", 1 << 40),
            ("2tb", 2 << 40),
            ("1.5K", 1536),
            ("1.5MiB", 3 << 19),
            ("1e3", 1000),
            ("2e1K", 20 << 10),
            ("0x10", 16),
            ("0x1b", 27),
            ("0x10K", 16 << 10),
            ("4 mb", 4 << 20),
            ("16kib", 16 << 10),
            ("+3", 3),
            ("18446744073709551615", u64::MAX),
        ] {
            assert_eq!(parse_bytes(text), Ok(bytes), "{text}");
        }
        for bad in [
            "",
            "-1",
            "0.1K",
            "1.5",
            "K",
            "12Q",
            "1KK",
            "1iB",
            "1e",
            "0x",
            "0xg",
            "1.2.3K",
            "99999999999999999999",
            "18446744073709551615G",
            "1e30",
            "nan",
            "inf",
        ] {
            assert!(parse_bytes(bad).is_err(), "{bad:?} should be rejected");
        }
        assert_eq!(
            parse_bytes("-5"),
            Err("'-5': a size cannot be negative".to_string())
        );
        assert!(parse_capture_bytes("2G").is_err());
        assert_eq!(parse_capture_bytes("1G"), Ok(1 << 30));
    }
}
