//! Fuzz the stderr capture: any stream, any split, any limits. The
//! retained bytes and counts must not depend on the split, nor on bytes
//! skipped unread by the flood path, and the limits must hold.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcp_bound::capture::Capture;
use mcp_bound::Redactor;

static REDACTOR: OnceLock<Redactor> = OnceLock::new();

fuzz_target!(|input: &[u8]| {
    if input.len() < 3 {
        return;
    }
    let (head, tail, split) = (input[0] as usize % 64, input[1] as usize % 64, input[2] as usize);
    let data = &input[3..];
    let mut whole = Capture::new(head, tail);
    whole.push(data);
    let mut pieces = Capture::new(head, tail);
    let step = split.max(1);
    for chunk in data.chunks(step) {
        pieces.push(chunk);
    }
    assert_eq!(whole.head(), pieces.head());
    assert_eq!(whole.tail(), pieces.tail());
    assert_eq!(whole.bytes_seen(), data.len() as u64);
    assert!(whole.bytes_retained() <= (head + tail) as u64);
    // The flood path discards bytes unread once the head is closed and at
    // least `tail` newer bytes follow: the result must be the same.
    let skip_from = (head + split % 16).min(data.len());
    let newest_from = data.len().saturating_sub(tail + split % 7).max(skip_from);
    let mut skipping = Capture::new(head, tail);
    skipping.push(&data[..skip_from]);
    if skipping.head_closed() && data.len() - newest_from >= tail {
        skipping.skip_superseded((newest_from - skip_from) as u64);
        skipping.push(&data[newest_from..]);
        assert_eq!(whole.head(), skipping.head());
        assert_eq!(whole.tail(), skipping.tail());
        assert_eq!(whole.bytes_seen(), skipping.bytes_seen());
        assert_eq!(whole.bytes_retained(), skipping.bytes_retained());
    }
    let redactor = REDACTOR.get_or_init(Redactor::default);
    let excerpt = whole.excerpt(split, redactor);
    assert!(excerpt.head_shown + excerpt.tail_shown <= split);
});
