//! The one I/O completion port the Windows loop waits on: the helper's
//! pipes report their finished reads and writes to it, and the Job Object
//! reports its news (a process joined, one exited, none is left), each
//! under a key of its own. A completion is not readiness: the pipe that
//! owns a key (`pipe::Reader`) turns its completion into "readable", so
//! the parts above read as they do on Unix (see ARCHITECTURE.md).

use std::io;
use std::os::windows::io::{AsRawHandle, BorrowedHandle, OwnedHandle};
use std::ptr;
use std::sync::Arc;
use std::time::Duration;

use windows_sys::Win32::Foundation::{HANDLE, INVALID_HANDLE_VALUE, WAIT_TIMEOUT};
use windows_sys::Win32::System::IO::{
    CreateIoCompletionPort, GetQueuedCompletionStatusEx, OVERLAPPED, OVERLAPPED_ENTRY,
    PostQueuedCompletionStatus,
};

use super::handle::owned;

/// At most this many completions are taken per wait; the rest wait for
/// the next turn (the loop's memory stays constant).
const BATCH: usize = 16;

/// One finished operation, as the port gave it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Completion {
    /// Whose it is: the key the handle was associated with.
    pub key: usize,
    /// Bytes moved (for a job: the message number).
    pub bytes: u32,
    /// The operation's `OVERLAPPED` (for a job: the process id). Compared,
    /// never read here: its owner may be gone, and only the owner reads
    /// its status from it.
    pub overlapped: *mut OVERLAPPED,
}

pub(super) struct Port {
    /// Shared with the relays' threads (`Poster`), which post to it.
    handle: Arc<OwnedHandle>,
}

/// What a thread holds to tell the loop something: a completion it posts
/// under a key, as the system posts a finished read.
#[derive(Clone)]
pub(super) struct Poster {
    handle: Arc<OwnedHandle>,
}

impl Poster {
    /// Wake the loop with a completion under `key`, carrying `bytes`.
    pub(super) fn post(&self, key: usize, bytes: u32) -> io::Result<()> {
        // SAFETY: the port is open while this Arc holds it; no OVERLAPPED.
        super::handle::check(unsafe {
            PostQueuedCompletionStatus(self.handle.as_raw_handle(), bytes, key, ptr::null())
        })
    }
}

impl Port {
    pub(super) fn new() -> io::Result<Port> {
        // SAFETY: a new port, not tied to any file; one thread waits.
        let handle =
            owned(unsafe { CreateIoCompletionPort(INVALID_HANDLE_VALUE, ptr::null_mut(), 0, 1) })?;
        Ok(Port {
            handle: Arc::new(handle),
        })
    }

    /// A handle a thread can post with.
    pub(super) fn poster(&self) -> Poster {
        Poster {
            handle: Arc::clone(&self.handle),
        }
    }

    /// Report `handle`'s overlapped operations here, under `key`.
    pub(super) fn associate(&self, handle: BorrowedHandle<'_>, key: usize) -> io::Result<()> {
        // SAFETY: both handles are open; the port is ours.
        let port = unsafe {
            CreateIoCompletionPort(handle.as_raw_handle(), self.handle.as_raw_handle(), key, 0)
        };
        if port.is_null() {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The port itself, for a Job Object's association.
    pub(super) fn raw(&self) -> HANDLE {
        self.handle.as_raw_handle()
    }

    /// Wait for completions, at most `timeout` (None: until one comes),
    /// and put them in `out` (cleared first). Empty when the time ran out.
    pub(super) fn wait(
        &self,
        out: &mut Vec<Completion>,
        timeout: Option<Duration>,
    ) -> io::Result<()> {
        out.clear();
        let millis = match timeout {
            None => u32::MAX,
            Some(limit) => u32::try_from(limit.as_millis()).unwrap_or(u32::MAX - 1),
        };
        let mut entries = [OVERLAPPED_ENTRY::default(); BATCH];
        let mut taken = 0u32;
        // SAFETY: the port is ours; `entries` holds BATCH entries and
        // `taken` is written; not alertable.
        let ok = unsafe {
            GetQueuedCompletionStatusEx(
                self.handle.as_raw_handle(),
                entries.as_mut_ptr(),
                BATCH as u32,
                &mut taken,
                millis,
                0,
            )
        };
        if ok == 0 {
            let err = io::Error::last_os_error();
            return match err.raw_os_error() {
                Some(code) if code as u32 == WAIT_TIMEOUT => Ok(()),
                _ => Err(err),
            };
        }
        out.extend(entries[..taken as usize].iter().map(|entry| Completion {
            key: entry.lpCompletionKey,
            bytes: entry.dwNumberOfBytesTransferred,
            overlapped: entry.lpOverlapped,
        }));
        Ok(())
    }
}
