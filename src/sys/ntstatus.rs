//! The names of Windows's crash codes. A process that dies of an
//! exception exits with the exception's NTSTATUS (0xC0000005 for an
//! access violation), which a reader of the record cannot be expected to
//! know by number. Pure: tested on every platform; used where
//! `BACKEND.wide_exit_codes` says exit codes carry them.

/// The codes a helper's crash or its runtime's fail-fast leaves, from
/// Microsoft's ntstatus.h: the ones a process ends with, not every status.
const NAMES: [(u32, &str); 24] = [
    (0x4001_0004, "DBG_TERMINATE_PROCESS"),
    (0x8000_0003, "STATUS_BREAKPOINT"),
    (0xC000_0005, "STATUS_ACCESS_VIOLATION"),
    (0xC000_0006, "STATUS_IN_PAGE_ERROR"),
    (0xC000_0017, "STATUS_NO_MEMORY"),
    (0xC000_001D, "STATUS_ILLEGAL_INSTRUCTION"),
    (0xC000_0025, "STATUS_NONCONTINUABLE_EXCEPTION"),
    (0xC000_007B, "STATUS_INVALID_IMAGE_FORMAT"),
    (0xC000_008C, "STATUS_ARRAY_BOUNDS_EXCEEDED"),
    (0xC000_008E, "STATUS_FLOAT_DIVIDE_BY_ZERO"),
    (0xC000_0094, "STATUS_INTEGER_DIVIDE_BY_ZERO"),
    (0xC000_0095, "STATUS_INTEGER_OVERFLOW"),
    (0xC000_0096, "STATUS_PRIVILEGED_INSTRUCTION"),
    (0xC000_00FD, "STATUS_STACK_OVERFLOW"),
    (0xC000_0135, "STATUS_DLL_NOT_FOUND"),
    (0xC000_0139, "STATUS_ENTRYPOINT_NOT_FOUND"),
    (0xC000_013A, "STATUS_CONTROL_C_EXIT"),
    (0xC000_0142, "STATUS_DLL_INIT_FAILED"),
    (0xC000_0374, "STATUS_HEAP_CORRUPTION"),
    (0xC000_0409, "STATUS_STACK_BUFFER_OVERRUN"),
    (0xC000_0417, "STATUS_INVALID_CRUNTIME_PARAMETER"),
    (0xC000_0420, "STATUS_ASSERTION_FAILURE"),
    (0xC000_0602, "STATUS_FAIL_FAST_EXCEPTION"),
    (0xC000_070A, "STATUS_THREADPOOL_HANDLE_EXCEPTION"),
];

/// The name of `code` when it is one of the statuses a process ends with;
/// `None` for any other code (a program's own exit code, or a status
/// mcp-bound does not know).
pub fn name(code: u32) -> Option<&'static str> {
    NAMES
        .binary_search_by_key(&code, |(number, _)| *number)
        .ok()
        .map(|at| NAMES[at].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_code_is_named() {
        assert_eq!(name(0xC000_0005), Some("STATUS_ACCESS_VIOLATION"));
        assert_eq!(name(3_221_225_477), Some("STATUS_ACCESS_VIOLATION"));
        assert_eq!(name(0xC000_0409), Some("STATUS_STACK_BUFFER_OVERRUN"));
        assert_eq!(name(0xC000_013A), Some("STATUS_CONTROL_C_EXIT"));
    }

    #[test]
    fn a_program_code_is_not() {
        for code in [0, 1, 2, 124, 125, 255, 0xC000_0004, u32::MAX] {
            assert_eq!(name(code), None, "{code:#x}");
        }
    }

    #[test]
    fn the_table_is_sorted_so_every_entry_is_found() {
        assert!(NAMES.windows(2).all(|pair| pair[0].0 < pair[1].0));
        for (code, label) in NAMES {
            assert_eq!(name(code), Some(label));
        }
    }
}
