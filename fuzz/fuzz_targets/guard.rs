//! Fuzz the stdout guard: forwarded lines are always one JSON object or batch,
//! nothing is lost or invented, and the split does not matter.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_bound::guard::{Guard, is_json_message};

fn run(max: usize, chunks: &[&[u8]]) -> (Vec<u8>, u64) {
    let mut guard = Guard::new(max);
    let mut out = Vec::new();
    let mut diverted = 0u64;
    for chunk in chunks {
        guard.feed(chunk, &mut out, &mut |bytes, _| diverted += bytes.len() as u64);
    }
    guard.finish(&mut |bytes, _| diverted += bytes.len() as u64);
    (out, diverted)
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 2 {
        return;
    }
    let (max, step) = (input[0] as usize + 1, input[1] as usize + 1);
    let data = &input[2..];
    let (whole, diverted) = run(max, &[data]);
    let chunks: Vec<&[u8]> = data.chunks(step).collect();
    let (split, _) = run(max, &chunks);
    assert_eq!(whole, split);
    assert_eq!(whole.len() as u64 + diverted, data.len() as u64);
    for line in whole.split_inclusive(|b| *b == b'\n') {
        assert!(is_json_message(line));
    }
});
