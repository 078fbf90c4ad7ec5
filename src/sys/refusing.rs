//! What the backends that refuse to run share (any other Unix, and
//! Windows until its backend lands): the error that says why, and no
//! process table (nothing is found). `lib::main` refuses before anything
//! would ask (`BACKEND.unsupported`).

use std::io;

use super::{Descendants, ProcInfo};

/// `Unsupported`, with the backend's reason.
pub(in crate::sys) fn unsupported() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        super::BACKEND.unsupported.unwrap_or_default(),
    )
}

pub fn proc_info(_pid: i32) -> Option<ProcInfo> {
    None
}

pub fn children_of_self() -> Vec<i32> {
    Vec::new()
}

pub fn pids_with_env(_entry: &[u8]) -> Vec<i32> {
    Vec::new()
}

pub fn descendants(
    _root: i32,
    _mark: Option<&[u8]>,
    _skip: &dyn Fn(&ProcInfo) -> bool,
) -> Descendants {
    Descendants::default()
}
