//! Our own cancellations on Windows, and our standard handles.
//!
//! Windows has no signals to catch: Ctrl-C, Ctrl-Break and the console's
//! close (or the user's logoff, the system's shutdown) come to a handler
//! the system runs on a thread of its own (`SetConsoleCtrlHandler`). The
//! handler only counts the event, under the C runtime's number for it
//! (INT, BREAK, TERM for the rest), and wakes the loop through the port;
//! the loop takes the counts as it takes signals on Unix (`Pending`), so
//! the cancellation is the same code from there on. The record's
//! `cancel_signal` names the event so.
//!
//! The loop names this source by a handle of its own (an event that is
//! never set): its interest is readable when a count is waiting or a job
//! said a process exited.

use std::io;
use std::os::windows::io::{AsRawHandle, BorrowedHandle, OwnedHandle};
use std::ptr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::System::Console::{
    CTRL_BREAK_EVENT, CTRL_C_EVENT, GetConsoleWindow, GetStdHandle, STD_ERROR_HANDLE,
    STD_INPUT_HANDLE, STD_OUTPUT_HANDLE, SetConsoleCtrlHandler,
};
use windows_sys::Win32::System::Threading::CreateEventW;
use windows_sys::core::BOOL;

use super::handle::owned;
use super::port::Poster;
use super::reactor::{CANCEL_ARRIVED, CHILD_CHANGED, SIGNAL_TOKEN, WAKE_KEY, reactor};
use super::{SIGBREAK, SIGINT, SIGTERM};
use crate::sys::Pending;
use crate::sys::fd::RawFd;

/// The events that end a call, by the number each is counted under.
pub const TERMINATING: [super::Signal; 3] = [SIGINT, SIGBREAK, SIGTERM];
static COUNTS: [AtomicU32; 3] = [const { AtomicU32::new(0) }; 3];
static POSTER: OnceLock<Poster> = OnceLock::new();

unsafe extern "system" fn on_event(event: u32) -> BOOL {
    let slot = match event {
        CTRL_C_EVENT => 0,
        CTRL_BREAK_EVENT => 1,
        // The console closes, the user logs off, the system shuts down.
        _ => 2,
    };
    COUNTS[slot].fetch_add(1, Ordering::SeqCst);
    CANCEL_ARRIVED.store(true, Ordering::SeqCst);
    if let Some(poster) = POSTER.get() {
        let _ = poster.post(WAKE_KEY, 0);
    }
    1
}

/// The source of our own cancellations.
pub struct SignalPipe {
    token: OwnedHandle,
}

impl SignalPipe {
    pub fn install() -> io::Result<SignalPipe> {
        let poster = reactor()?.poster();
        let _ = POSTER.set(poster);
        // SAFETY: an unnamed manual-reset event, never set: a token only.
        let token = owned(unsafe { CreateEventW(ptr::null(), 1, 0, ptr::null()) })?;
        SIGNAL_TOKEN.store(token.as_raw_handle() as isize, Ordering::SeqCst);
        // SAFETY: the handler only touches atomics and posts to a port.
        super::handle::check(unsafe { SetConsoleCtrlHandler(Some(on_event), 1) })?;
        Ok(SignalPipe { token })
    }

    pub fn fd(&self) -> BorrowedHandle<'_> {
        use std::os::windows::io::AsHandle;
        self.token.as_handle()
    }

    pub fn disarm_in_child() {}

    /// Whether a terminating event arrived and was not yet taken.
    pub fn terminating_arrived() -> bool {
        COUNTS.iter().any(|count| count.load(Ordering::SeqCst) > 0)
    }

    pub fn take(&self) -> Pending {
        CANCEL_ARRIVED.store(false, Ordering::SeqCst);
        let mut pending = Pending {
            child_changed: CHILD_CHANGED.swap(false, Ordering::SeqCst),
            ..Pending::default()
        };
        for (slot, signo) in TERMINATING.iter().enumerate() {
            let count = COUNTS[slot].swap(0, Ordering::SeqCst);
            if count > 0 {
                pending.terminating.push((*signo, count));
            }
        }
        pending
    }
}

impl Drop for SignalPipe {
    fn drop(&mut self) {
        let _ = SIGNAL_TOKEN.compare_exchange(
            self.token.as_raw_handle() as isize,
            0,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
    }
}

/// Our standard handle `n` (0, 1, 2) as the loop names it; 0 where we
/// have none.
pub fn std_fd(n: i32) -> RawFd {
    let which = match n {
        0 => STD_INPUT_HANDLE,
        1 => STD_OUTPUT_HANDLE,
        _ => STD_ERROR_HANDLE,
    };
    // SAFETY: reads the process's standard handle; no ownership taken.
    let handle: HANDLE = unsafe { GetStdHandle(which) };
    if handle == windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE {
        return 0;
    }
    handle as RawFd
}

/// Whether mcp-bound has a console a helper can share (then it is
/// started without `CREATE_NO_WINDOW`, and can be sent Ctrl-Break).
pub fn has_console() -> bool {
    // SAFETY: no arguments; a window handle or null.
    !unsafe { GetConsoleWindow() }.is_null()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{Interest, Poller};

    /// A console event as the system delivers it (its handler run on a
    /// thread of the system's, here one of ours: Wine gives these tests no
    /// console to press Ctrl-Break in) wakes the loop, which waits on its
    /// port with no deadline, with the signal source readable, and is
    /// taken once under its name.
    #[test]
    fn a_console_event_wakes_the_waiting_loop_as_its_signal() {
        let _installed = super::super::INSTALLED
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let source = SignalPipe::install().unwrap();
        let _ = source.take();
        let interests = [Interest {
            fd: source.fd().as_raw_handle() as RawFd,
            read: true,
            write: false,
            peer_closed: false,
        }];
        // SAFETY: the handler the system would run, run as it would be.
        let system = std::thread::spawn(|| unsafe { on_event(CTRL_BREAK_EVENT) });
        let mut ready = Vec::new();
        let mut poller = Poller::new();
        while !ready
            .first()
            .is_some_and(|r: &crate::sys::Ready| r.readable)
        {
            poller.wait(&interests, &mut ready, None).unwrap();
        }
        assert_eq!(
            system.join().unwrap(),
            1,
            "the event is handled: not passed on"
        );
        assert_eq!(source.take().terminating, vec![(SIGBREAK, 1)]);
        assert!(source.take().terminating.is_empty(), "taken once");
    }
}
