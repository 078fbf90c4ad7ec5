//! The one error type, and the exit code each error maps to.

use std::fmt;

#[derive(Debug)]
pub enum Error {
    /// Bad usage or an invalid value: nothing was started. Exit 125.
    Usage(String),
    /// mcp-bound could not set itself up (a record path unusable before
    /// dispatch, a failing system call): nothing was started. Exit 125.
    Setup(String),
    /// The helper was not found. Exit 127.
    NotFound(String),
    /// The helper was found but could not be run. Exit 126.
    NotExecutable(String),
    /// `verify` could not check the journal (usage, I/O, key). Exit 2.
    VerifyUsage(String),
}

/// GNU timeout's codes, which our users already know.
pub mod code {
    pub const TIMED_OUT: i32 = 124;
    pub const OWN_FAILURE: i32 = 125;
    pub const NOT_EXECUTABLE: i32 = 126;
    pub const NOT_FOUND: i32 = 127;
    /// Denied by the approver, or approval expired (sysexits' EX_NOPERM).
    pub const DENIED: i32 = 77;
    /// 128 + SIGPIPE: our stdout's reader went away.
    pub const CLIENT_DISCONNECTED: i32 = 141;
    /// `verify`: the journal is intact (warnings allowed).
    pub const VERIFY_OK: i32 = 0;
    /// `verify`: an integrity failure was found.
    pub const VERIFY_BROKEN: i32 = 1;
    /// `verify`: usage, I/O or key error; nothing was checked.
    pub const VERIFY_UNUSABLE: i32 = 2;
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::Setup(_) => code::OWN_FAILURE,
            Error::NotFound(_) => code::NOT_FOUND,
            Error::NotExecutable(_) => code::NOT_EXECUTABLE,
            Error::VerifyUsage(_) => code::VERIFY_UNUSABLE,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(text)
            | Error::Setup(text)
            | Error::NotFound(text)
            | Error::NotExecutable(text)
            | Error::VerifyUsage(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for Error {}
