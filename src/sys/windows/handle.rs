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

/// A pipe's read and write ends, not inherited (tests only).
#[cfg(test)]
pub(super) fn anonymous_pipe() -> (std::fs::File, std::fs::File) {
    let (mut read, mut write): (HANDLE, HANDLE) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: both outputs are written; default security, not inherited.
    check(unsafe {
        windows_sys::Win32::System::Pipes::CreatePipe(&mut read, &mut write, std::ptr::null(), 0)
    })
    .unwrap();
    // SAFETY: fresh handles, owned by nothing else.
    unsafe {
        (
            std::fs::File::from_raw_handle(read),
            std::fs::File::from_raw_handle(write),
        )
    }
}
