//! What the backends that refuse to run share: the error that says why
//! (also Windows's, for what it does not have), and for any other Unix
//! no process table (nothing is found). `lib::main` refuses before anything
//! would ask (`BACKEND.unsupported`).

use std::io;

#[cfg(unix)]
use super::{Descendants, ProcInfo};

/// `Unsupported`: the backend's reason where it refuses to run, else
/// what this system does not have (`what`).
pub(in crate::sys) fn unsupported(what: &str) -> io::Error {
    let why = match super::BACKEND.unsupported {
        Some(why) => why.to_string(),
        None => format!("{what}: not available on {}", super::BACKEND.os),
    };
    io::Error::new(io::ErrorKind::Unsupported, why)
}

#[cfg(unix)]
pub fn proc_info(_pid: i32) -> Option<ProcInfo> {
    None
}

#[cfg(unix)]
pub fn children_of_self() -> Vec<i32> {
    Vec::new()
}

#[cfg(unix)]
pub fn descendants(
    _root: i32,
    _mark: Option<&[u8]>,
    _skip: &dyn Fn(&ProcInfo) -> bool,
) -> Descendants {
    Descendants::default()
}
