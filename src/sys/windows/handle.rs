//! What every Windows call here shares: a `BOOL` result as an
//! `io::Result`, and a returned handle as an owned one (or the error
//! that made it null).

use std::io;
use std::os::windows::io::{FromRawHandle, OwnedHandle};

use windows_sys::Win32::Foundation::{HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::core::BOOL;

/// A call's `BOOL`: `Ok`, or the error it left.
pub(super) fn check(ok: BOOL) -> io::Result<()> {
    if ok != 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A handle the system returned, owned; an error for a null one.
pub(super) fn owned(handle: HANDLE) -> io::Result<OwnedHandle> {
    if handle.is_null() || handle == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a handle the system just gave us, owned by nothing else.
    Ok(unsafe { OwnedHandle::from_raw_handle(handle) })
}
