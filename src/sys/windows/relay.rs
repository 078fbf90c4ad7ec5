//! mcp-bound's own stdin and stdout on Windows: the one place a thread
//! does I/O for the loop.
//!
//! They come from the host, often as anonymous pipes, which cannot be
//! read or written overlapped, so no completion port can wait on them. A
//! `Relay` gives each such handle a thread of its own that does the one
//! blocking call the loop asked for, into or out of one buffer, then
//! posts a completion to the loop's port; the loop reads or writes the
//! relay as it does a pipe (`pipe::Reader`): bytes, `WouldBlock`, or 0 at
//! the end. The thread reads only when the loop asked (so a client the
//! loop is not reading waits in the pipe, as on Unix), and holds at most
//! one buffer. This is the exception the principles allow to "one loop
//! owns the pipes": the loop still decides every read and write; the
//! thread only waits where the loop cannot (ARCHITECTURE.md).
//!
//! At the end, a thread blocked on the host's handle (a read the host
//! never answers) is asked to stop (`CancelSynchronousIo`) and not
//! waited for: it ends with the process.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::windows::io::{AsRawHandle, OwnedHandle};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use windows_sys::Win32::System::IO::CancelSynchronousIo;

use super::port::{Port, Poster};

/// One buffer per relay: what one read may bring, or one write carry.
pub(super) const RELAY_BYTES: usize = 64 * 1024;

/// Which way the bytes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Way {
    /// The host's handle is read (our stdin).
    In,
    /// The host's handle is written (our stdout).
    Out,
}

/// Whose turn it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The loop's: nothing asked (in) or the buffer free (out).
    Idle,
    /// The loop asked; the thread's turn.
    Asked,
    /// The thread is in its blocking call.
    Busy,
    /// In: bytes `from..` of the buffer wait for the loop.
    Filled,
    /// The handle ended (in), or could not be written (out); no more.
    Ended,
    /// The relay is being dropped.
    Closing,
}

struct Slot {
    phase: Phase,
    buf: Vec<u8>,
    from: usize,
    /// Why the handle ended, when an error did it.
    error: Option<io::ErrorKind>,
}

struct Shared {
    slot: Mutex<Slot>,
    turn: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A host's handle that cannot be overlapped, relayed by a thread.
pub(super) struct Relay {
    shared: Arc<Shared>,
    way: Way,
    thread: Option<JoinHandle<()>>,
}

impl Relay {
    /// Relay `handle` one way; the thread tells `port` under `key`.
    pub(super) fn new(handle: OwnedHandle, way: Way, port: &Port, key: usize) -> io::Result<Relay> {
        let shared = Arc::new(Shared {
            slot: Mutex::new(Slot {
                phase: Phase::Idle,
                buf: Vec::with_capacity(RELAY_BYTES),
                from: 0,
                error: None,
            }),
            turn: Condvar::new(),
        });
        let poster = port.poster();
        let theirs = Arc::clone(&shared);
        let file = File::from(handle);
        let thread = std::thread::Builder::new()
            .name(format!("mcp-bound relay {way:?}"))
            .spawn(move || relay(&theirs, file, way, &poster, key))?;
        Ok(Relay {
            shared,
            way,
            thread: Some(thread),
        })
    }

    /// In: ask for the next read, if none is asked and nothing is held
    /// (the loop calls this where it would register a read interest).
    pub(super) fn arm(&self) {
        let mut slot = self.shared.lock();
        if self.way == Way::In && slot.phase == Phase::Idle {
            slot.phase = Phase::Asked;
            self.shared.turn.notify_all();
        }
    }

    /// In: whether `read` has something to say (bytes, or the end).
    pub(super) fn is_readable(&self) -> bool {
        matches!(self.shared.lock().phase, Phase::Filled | Phase::Ended)
    }

    /// In: what arrived, `WouldBlock` while a read is asked or under way,
    /// 0 at the end (an error that ended it, once, before).
    pub(super) fn read(&self, into: &mut [u8]) -> io::Result<usize> {
        let mut slot = self.shared.lock();
        match slot.phase {
            Phase::Filled => {
                let n = into.len().min(slot.buf.len() - slot.from);
                into[..n].copy_from_slice(&slot.buf[slot.from..slot.from + n]);
                slot.from += n;
                if slot.from == slot.buf.len() {
                    slot.phase = Phase::Idle;
                }
                Ok(n)
            }
            Phase::Ended => match slot.error.take() {
                Some(kind) => Err(kind.into()),
                None => Ok(0),
            },
            _ => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// Out: whether `write` takes bytes now (the last write is done).
    pub(super) fn is_writable(&self) -> bool {
        matches!(self.shared.lock().phase, Phase::Idle | Phase::Ended)
    }

    /// Out: hand the thread up to `RELAY_BYTES` of `bytes` to write;
    /// `WouldBlock` while the last write is under way, and the error that
    /// ended the handle (a host gone: `BrokenPipe`) after.
    pub(super) fn write(&self, bytes: &[u8]) -> io::Result<usize> {
        let mut slot = self.shared.lock();
        match slot.phase {
            Phase::Idle => {
                let n = bytes.len().min(RELAY_BYTES);
                slot.buf.clear();
                slot.buf.extend_from_slice(&bytes[..n]);
                slot.phase = Phase::Asked;
                self.shared.turn.notify_all();
                Ok(n)
            }
            Phase::Ended => Err(slot.error.unwrap_or(io::ErrorKind::BrokenPipe).into()),
            _ => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let busy = {
            let mut slot = self.shared.lock();
            let busy = slot.phase == Phase::Busy;
            slot.phase = Phase::Closing;
            self.shared.turn.notify_all();
            busy
        };
        if let Some(thread) = self.thread.take()
            && busy
        {
            // SAFETY: the thread's own handle, open while `thread` lives.
            unsafe { CancelSynchronousIo(thread.as_raw_handle()) };
        }
    }
}

/// The thread: wait for the loop's ask, do the one blocking call outside
/// the lock, hand the result back, wake the loop; until the end.
fn relay(shared: &Shared, mut file: File, way: Way, poster: &Poster, key: usize) {
    loop {
        let mut buf = {
            let mut slot = shared.lock();
            while slot.phase != Phase::Asked && slot.phase != Phase::Closing {
                slot = shared
                    .turn
                    .wait(slot)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if slot.phase == Phase::Closing {
                return;
            }
            slot.phase = Phase::Busy;
            std::mem::take(&mut slot.buf)
        };
        let done = match way {
            Way::In => {
                buf.resize(RELAY_BYTES, 0);
                let read = file.read(&mut buf);
                buf.truncate(*read.as_ref().unwrap_or(&0));
                read.map(|n| n > 0)
            }
            Way::Out => file.write_all(&buf).map(|()| true),
        };
        let mut slot = shared.lock();
        if slot.phase == Phase::Closing {
            return;
        }
        let (phase, error) = match (done, way) {
            (Ok(true), Way::In) => (Phase::Filled, None),
            (Ok(true), Way::Out) => (Phase::Idle, None),
            // The end of the host's handle: a broken pipe is its EOF.
            (Ok(false), _) => (Phase::Ended, None),
            (Err(err), Way::In) if err.kind() == io::ErrorKind::BrokenPipe => (Phase::Ended, None),
            (Err(err), _) => (Phase::Ended, Some(err.kind())),
        };
        if way == Way::Out {
            buf.clear();
        }
        slot.buf = buf;
        slot.from = 0;
        slot.phase = phase;
        slot.error = error;
        let ended = phase == Phase::Ended;
        drop(slot);
        if poster.post(key, 0).is_err() || ended {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::windows::handle::anonymous_pipe;
    use std::time::Duration;
    use windows_sys::Win32::System::Pipes::PeekNamedPipe;

    const KEY: usize = 9;

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8).collect()
    }

    /// Wait for the relay's completion (each ask or hand-over gets one).
    fn woken(port: &Port) {
        let mut completions = Vec::new();
        port.wait(&mut completions, Some(Duration::from_secs(30)))
            .unwrap();
        assert!(
            !completions.is_empty(),
            "the relay woke the loop within 30 s"
        );
        assert!(completions.iter().all(|c| c.key == KEY));
    }

    fn waiting_in(read: &File) -> u32 {
        let mut available = 0u32;
        // SAFETY: an open pipe handle; only the count is written.
        let ok = unsafe {
            PeekNamedPipe(
                read.as_raw_handle(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                &mut available,
                std::ptr::null_mut(),
            )
        };
        assert_ne!(ok, 0, "{}", io::Error::last_os_error());
        available
    }

    #[test]
    fn the_host_s_input_is_read_only_when_asked_and_arrives_whole() {
        let port = Port::new().unwrap();
        let (ours, mut host) = anonymous_pipe();
        host.write_all(b"first").unwrap();
        let peek = ours.try_clone().unwrap();
        let relay = Relay::new(OwnedHandle::from(ours), Way::In, &port, KEY).unwrap();
        let mut chunk = [0u8; 4096];
        let unasked = relay.read(&mut chunk).unwrap_err();
        assert_eq!(unasked.kind(), io::ErrorKind::WouldBlock);
        assert_eq!(waiting_in(&peek), 5, "not read until the loop asks");
        drop(peek);
        let sent = pattern(5 * RELAY_BYTES / 2);
        let expected = [b"first".as_slice(), &sent].concat();
        let writer = std::thread::spawn(move || {
            host.write_all(&sent).unwrap();
        });
        let mut got = Vec::new();
        let mut ended = false;
        while !ended {
            relay.arm();
            woken(&port);
            while !ended && relay.is_readable() {
                match relay.read(&mut chunk).unwrap() {
                    0 => ended = true,
                    n => got.extend_from_slice(&chunk[..n]),
                }
            }
        }
        writer.join().unwrap();
        assert_eq!(got.len(), expected.len(), "every byte");
        assert_eq!(got, expected, "in order");
    }

    #[test]
    fn output_is_written_in_turns_and_a_gone_reader_is_said() {
        let port = Port::new().unwrap();
        let (mut host, ours) = anonymous_pipe();
        let relay = Relay::new(OwnedHandle::from(ours), Way::Out, &port, KEY).unwrap();
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            host.read_to_end(&mut got).unwrap();
            got
        });
        let sent = pattern(3 * RELAY_BYTES + 17);
        let mut at = 0;
        while at < sent.len() {
            match relay.write(&sent[at..]) {
                Ok(n) => at += n,
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => woken(&port),
                Err(err) => panic!("{err}"),
            }
        }
        while !relay.is_writable() {
            woken(&port);
        }
        drop(relay);
        assert_eq!(reader.join().unwrap(), sent, "every byte, in order");

        let (host, ours) = anonymous_pipe();
        let relay = Relay::new(OwnedHandle::from(ours), Way::Out, &port, KEY).unwrap();
        drop(host);
        assert_eq!(relay.write(b"anyone?").unwrap(), 7, "taken");
        woken(&port);
        let gone = relay.write(b"again").unwrap_err();
        assert_eq!(gone.kind(), io::ErrorKind::BrokenPipe, "{gone}");
    }
}
