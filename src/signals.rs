//! Signal names, as GNU timeout reads and writes them, the polite stop
//! (`Stop`: a signal, or CLOSE), and the signals mcp-bound acts on. A
//! signal is a `sys::Signal`: its number is the system's, and only `sys`
//! makes one from a number. How signals arrive (the self-pipe into the
//! poll set) is `sys::SignalPipe`.

use crate::sys;

#[cfg(test)]
pub(crate) use crate::sys::INSTALLED;
pub(crate) use crate::sys::{CONTINUE, SIGKILL, SIGTERM, Signal, SignalPipe};

/// `TERM` for 15; real-time signals as GNU names them (`RTMIN`, `RTMIN+1`,
/// …, `RTMAX-1`, `RTMAX`: the nearer end); the number for anything else.
pub(crate) fn name(signal: Signal) -> String {
    if let Some(name) = sys::signal_name(signal) {
        return name.trim_start_matches("SIG").to_string();
    }
    let signo = signal.number();
    let range = sys::real_time_signals();
    let (min, max) = (*range.start(), *range.end());
    match signo {
        _ if !range.contains(&signo) => signo.to_string(),
        _ if signo == min => "RTMIN".into(),
        _ if signo == max => "RTMAX".into(),
        _ if signo <= min + (max - min) / 2 => format!("RTMIN+{}", signo - min),
        _ => format!("RTMAX-{}", max - signo),
    }
}

/// The polite stop, sent first when a call is ended (`--signal`): a
/// signal to the tree, or CLOSE, the helper's stdin closed (the MCP
/// shutdown, which means the same on every platform). KILL follows after
/// the grace either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Signal(Signal),
    /// Close the helper's stdin (mcp-bound holds it under the session
    /// layer only).
    Close,
}

impl Stop {
    /// As the record says it: `TERM`, `RTMIN+1`, `CLOSE`.
    pub(crate) fn name(self) -> String {
        match self {
            Stop::Signal(signal) => name(signal),
            Stop::Close => "CLOSE".into(),
        }
    }
}

/// Parse `--signal`: CLOSE in any case, or a signal as [`parse`] reads it.
pub(crate) fn parse_stop(text: &str) -> Result<Stop, String> {
    if text.trim().eq_ignore_ascii_case("CLOSE") {
        return Ok(Stop::Close);
    }
    parse(text).map(Stop::Signal)
}

/// Parse a signal as GNU timeout does: a name in any case with or without
/// `SIG` (`RTMIN+N` and `RTMAX-N` included), or a number.
pub(crate) fn parse(text: &str) -> Result<Signal, String> {
    let trimmed = text.trim();
    let invalid = || format!("'{text}' is not a signal (use e.g. TERM, SIGINT, 9, RTMIN+1)");
    if let Ok(number) = trimmed.parse::<i32>() {
        return sys::signal_of(number).ok_or_else(invalid);
    }
    let upper = trimmed.to_ascii_uppercase();
    let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
    if let Some(signo) = parse_real_time(bare) {
        if !sys::BACKEND.real_time_signals {
            return Err(format!(
                "'{text}': {} has no real-time signals",
                sys::BACKEND.os
            ));
        }
        return signo.and_then(sys::signal_of).ok_or_else(invalid);
    }
    sys::signal_number(&format!("SIG{bare}")).ok_or_else(invalid)
}

/// `RTMIN`, `RTMIN+N`, `RTMAX`, `RTMAX-N`: None if not of that shape,
/// Some(None) if of that shape but out of range.
fn parse_real_time(bare: &str) -> Option<Option<i32>> {
    let range = sys::real_time_signals();
    let (base, rest, sign) = if let Some(rest) = bare.strip_prefix("RTMIN") {
        (*range.start(), rest, 1)
    } else if let Some(rest) = bare.strip_prefix("RTMAX") {
        (*range.end(), rest, -1)
    } else {
        return None;
    };
    let offset = match rest {
        "" => 0,
        _ => {
            let digits = rest.strip_prefix(if sign > 0 { '+' } else { '-' });
            match digits.filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())) {
                Some(d) => match d.parse::<i32>() {
                    Ok(n) => n,
                    Err(_) => return Some(None),
                },
                None => return Some(None),
            }
        }
    };
    let signo = base.checked_add(sign * offset)?;
    Some(range.contains(&signo).then_some(signo))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A signal's number, as parsed.
    fn number(text: &str) -> Result<i32, String> {
        parse(text).map(Signal::number)
    }

    /// The signal of a number this system has.
    fn sig(number: i32) -> Signal {
        sys::signal_of(number).unwrap()
    }

    #[test]
    fn names_and_numbers() {
        assert_eq!(number("TERM"), Ok(15));
        assert_eq!(number("sigint"), Ok(2));
        assert_eq!(number("Kill"), Ok(9));
        assert_eq!(number("9"), Ok(9));
        assert_eq!(
            number("SIGUSR1"),
            Ok(sys::signal_number("SIGUSR1").unwrap().number())
        );
        for bad in ["", "0", "-1", "999", "TERMX", "SIG", "1.5"] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(name(sig(15)), "TERM");
        assert_eq!(name(sig(9)), "KILL");
    }

    /// Where the system has none, no real-time name is taken, and the
    /// error says why.
    #[cfg(any(target_os = "macos", mcp_bound_portable))]
    #[test]
    fn without_real_time_signals_none_is_taken() {
        assert!(sys::real_time_signals().is_empty());
        for name in ["RTMIN", "SIGRTMIN+1", "RTMAX", "rtmax-2"] {
            let why = parse(name).unwrap_err();
            assert!(why.ends_with("has no real-time signals"), "{why}");
        }
    }

    #[cfg(all(target_os = "linux", not(mcp_bound_portable)))]
    #[test]
    fn real_time_signals_as_gnu_names_them() {
        let range = sys::real_time_signals();
        let (min, max) = (*range.start(), *range.end());
        assert_eq!(number("RTMIN"), Ok(min));
        assert_eq!(number("sigrtmin+1"), Ok(min + 1));
        assert_eq!(number("SIGRTMAX-2"), Ok(max - 2));
        assert_eq!(number("rtmax"), Ok(max));
        assert_eq!(number(&min.to_string()), Ok(min));
        assert_eq!(number(&max.to_string()), Ok(max));
        for bad in [
            "RTMIN-1", "RTMAX+1", "RTMIN+", "RTMIN+x", "RTMIN+99", "RTMAX-99", "RTMINX",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert!(parse(&(max + 1).to_string()).is_err());
        assert_eq!(name(sig(min)), "RTMIN");
        assert_eq!(name(sig(min + 1)), "RTMIN+1");
        assert_eq!(name(sig(max - 2)), "RTMAX-2");
        assert_eq!(name(sig(max)), "RTMAX");
        // Every name reads back as its number.
        for signo in min..=max {
            assert_eq!(number(&name(sig(signo))), Ok(signo), "{signo}");
        }
    }
}
