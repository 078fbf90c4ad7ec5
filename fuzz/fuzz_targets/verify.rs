//! Fuzz journal verification: any bytes give a report or a clean error,
//! never a panic, and a report that says OK has a head.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_bound::journal;

fuzz_target!(|input: &[u8]| {
    if let Ok(report) = journal::verify_reader(input, None, None) {
        assert_eq!(report.ok, report.broken.is_none());
        if report.ok {
            assert!(report.head.is_some());
        }
    }
});
