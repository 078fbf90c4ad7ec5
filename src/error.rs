//! The one error type, and the exit code each error maps to.

use std::fmt;

#[derive(Debug)]
pub(crate) enum Error {
    /// Bad usage or an invalid value, as clap or a rule of `settings/`
    /// says it: nothing was started. Exit 125.
    Usage(String),
    /// Refused while mcp-bound set itself up (a record path unusable
    /// before dispatch, a key that cannot be read, a failing system
    /// call). Exit 125.
    NotStarted(NotStarted),
    /// The helper was not found. Exit 127.
    NotFound(String),
    /// The helper was found but could not be run. Exit 126.
    NotExecutable(String),
    /// `verify` could not check the journal (usage, I/O, key). Exit 2.
    VerifyUsage(String),
}

/// GNU timeout's codes, which our users already know.
pub(crate) mod code {
    pub(crate) const TIMED_OUT: i32 = 124;
    pub(crate) const OWN_FAILURE: i32 = 125;
    pub(crate) const NOT_EXECUTABLE: i32 = 126;
    pub(crate) const NOT_FOUND: i32 = 127;
    /// Denied by the approver, or approval expired (sysexits' EX_NOPERM).
    pub(crate) const DENIED: i32 = 77;
    /// 128 + SIGPIPE: our stdout's reader went away.
    pub(crate) const CLIENT_DISCONNECTED: i32 = 141;
    /// `verify`: the journal is intact (warnings allowed).
    pub(crate) const VERIFY_OK: i32 = 0;
    /// `verify`: an integrity failure was found.
    pub(crate) const VERIFY_BROKEN: i32 = 1;
    /// `verify`: usage, I/O or key error; nothing was checked.
    pub(crate) const VERIFY_UNUSABLE: i32 = 2;
}

impl Error {
    pub(crate) fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::NotStarted(_) => code::OWN_FAILURE,
            Error::NotFound(_) => code::NOT_FOUND,
            Error::NotExecutable(_) => code::NOT_EXECUTABLE,
            Error::VerifyUsage(_) => code::VERIFY_UNUSABLE,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotStarted(refusal) => refusal.fmt(f),
            Error::Usage(text)
            | Error::NotFound(text)
            | Error::NotExecutable(text)
            | Error::VerifyUsage(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for Error {}

impl From<NotStarted> for Error {
    fn from(refusal: NotStarted) -> Error {
        Error::NotStarted(refusal)
    }
}

/// A refusal before the helper ran: what is wrong, that nothing ran, and
/// what would run instead. The one place that says "nothing was started".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotStarted {
    /// What is wrong, in the option's words (`--record PATH: no directory`).
    why: String,
    /// Before the record exists nothing ran at all; from the record on,
    /// the record says the call was refused, and the line names the helper.
    after_record: bool,
    /// What would run instead, when something would (`--limits best-effort
    /// goes on without it`).
    hint: Option<String>,
}

impl NotStarted {
    /// Refused while setting up: nothing was started.
    pub(crate) fn nothing(why: impl Into<String>) -> NotStarted {
        NotStarted {
            why: why.into(),
            after_record: false,
            hint: None,
        }
    }

    /// Refused once the record exists: the helper was not started.
    pub(crate) fn helper(why: impl Into<String>) -> NotStarted {
        NotStarted {
            after_record: true,
            ..NotStarted::nothing(why)
        }
    }

    /// What would run instead.
    pub(crate) fn hint(self, hint: impl Into<String>) -> NotStarted {
        NotStarted {
            hint: Some(hint.into()),
            ..self
        }
    }
}

impl fmt::Display for NotStarted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let said = match self.after_record {
            false => "nothing was started",
            true => "the helper was not started",
        };
        write!(f, "{}; {said}", self.why)?;
        match &self.hint {
            Some(hint) => write!(f, " ({hint})"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_says_once_that_nothing_ran_and_what_would() {
        assert_eq!(
            NotStarted::nothing("--record r: no directory d").to_string(),
            "--record r: no directory d; nothing was started"
        );
        assert_eq!(
            NotStarted::nothing("--contain cgroup: none")
                .hint("--contain group or auto runs")
                .to_string(),
            "--contain cgroup: none; nothing was started (--contain group or auto runs)"
        );
        assert_eq!(
            NotStarted::helper("denied").to_string(),
            "denied; the helper was not started"
        );
    }
}
