//! W3C Trace Context, pure: a span's place in a trace, read from and
//! written as `traceparent`, and the ids new spans get. Shared by span
//! export (`otel/`) and the session layer (a client's `params._meta`,
//! and `--otel-propagate`).

/// A span's place in a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SpanContext {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    /// W3C trace flags (bit 0: sampled).
    pub flags: u8,
    /// The `tracestate` that came with it, when it was remote.
    pub tracestate: Option<String>,
    /// Read from a peer (a `traceparent`), not made here.
    pub remote: bool,
}

impl SpanContext {
    /// A `traceparent` header value, as W3C Trace Context reads it:
    /// version 00, or a later version's first four fields. None for
    /// anything else (an all-zero id, upper-case hex, a bad length).
    pub(crate) fn from_traceparent(text: &str, tracestate: Option<&str>) -> Option<SpanContext> {
        let bytes = text.as_bytes();
        let version = hex_bytes::<1>(bytes.get(0..2)?)?[0];
        let later = version != 0 && bytes.len() > 55 && bytes[55] == b'-';
        if version == 0xff || !(bytes.len() == 55 || later) {
            return None;
        }
        if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
            return None;
        }
        let trace_id = hex_bytes::<16>(&bytes[3..35])?;
        let span_id = hex_bytes::<8>(&bytes[36..52])?;
        let flags = hex_bytes::<1>(&bytes[53..55])?[0];
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(SpanContext {
            trace_id,
            span_id,
            flags,
            tracestate: tracestate
                .filter(|s| s.len() <= 512 && s.bytes().all(|b| (b' '..=b'~').contains(&b)))
                .map(str::to_string),
            remote: true,
        })
    }

    pub(crate) fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            crate::ids::hex(&self.trace_id),
            crate::ids::hex(&self.span_id),
            self.flags
        )
    }
}

/// Lowercase hex only, as W3C asks.
fn hex_bytes<const N: usize>(text: &[u8]) -> Option<[u8; N]> {
    if text.len() != 2 * N {
        return None;
    }
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (i, pair) in text.chunks(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// New ids: SplitMix64 seeded once from /dev/urandom. Ids need to be
/// unique, not secret, and this costs no system call per span.
pub(crate) struct Ids(u64);

impl Ids {
    /// A placeholder while the real one is taken out of its `Cell`.
    pub(crate) fn empty() -> Ids {
        Ids(0)
    }

    pub(crate) fn seeded() -> Ids {
        let seed = u64::from_str_radix(&crate::ids::random_hex(8), 16).unwrap_or(0x9e37_79b9);
        Ids(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(crate) fn span_id(&mut self) -> [u8; 8] {
        loop {
            let id = self.next().to_be_bytes();
            if id != [0; 8] {
                return id;
            }
        }
    }

    pub(crate) fn trace_id(&mut self) -> [u8; 16] {
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&self.next().to_be_bytes());
        id[8..].copy_from_slice(&self.span_id());
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_as_w3c_reads_it() {
        let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let ctx = SpanContext::from_traceparent(text, Some("rojo=00f067aa0ba902b7")).unwrap();
        assert_eq!(ctx.traceparent(), text);
        assert_eq!(ctx.flags, 1);
        assert_eq!(ctx.tracestate.as_deref(), Some("rojo=00f067aa0ba902b7"));
        // A later version: the first four fields, and more after a dash.
        assert!(SpanContext::from_traceparent(&format!("01{}-extra", &text[2..]), None).is_some());
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "",
        ] {
            assert_eq!(SpanContext::from_traceparent(bad, None), None, "{bad}");
        }
    }

    #[test]
    fn ids_are_never_zero_and_differ() {
        let mut ids = Ids(0);
        let a = ids.trace_id();
        let b = ids.trace_id();
        assert_ne!(a, b);
        assert_ne!(ids.span_id(), [0; 8]);
    }
}
