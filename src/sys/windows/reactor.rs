//! The Windows loop's one completion port and what reports to it: the
//! helper's pipes (`pipe::Reader`), the host's handles (`relay::Relay`),
//! the jobs (a process of a tree exited) and our console's events. The
//! poller (`wait`) turns what the port said into readiness of the handles
//! the loop names, so the parts above poll and read as they do on Unix.
//!
//! The loop holds the handles as descriptors (a `File` whose raw value it
//! polls); the reader or relay behind one is found here by that value.
//! A reader holds a duplicate of the loop's handle, so the two never
//! close each other's, and its completions come under a key no other
//! reader ever gets (a stale completion of a dropped reader goes
//! nowhere). A reader leaves when its pipe ended and said so, when the
//! loop closes it (`sys::close_pipe`), or when a pipe of the same value
//! is made, which replaces it.
//!
//! Everything here is the loop's: one thread takes the lock. The threads
//! that only wake the loop (the relays, the console handler) post to the
//! port through their own `Poster` and never take it.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::windows::io::{AsRawHandle, BorrowedHandle, OwnedHandle};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::job::JobNews;
use super::pipe::{Reader, Writer};
use super::port::{Completion, Port, Poster};
use super::relay::{Relay, Way};
use crate::sys::fd::RawFd;
use crate::sys::{Interest, Ready};

/// The jobs' key: any of their news may be a helper's exit.
pub(super) const JOB_KEY: usize = 1;
/// The console handler's key: a cancellation arrived.
pub(super) const WAKE_KEY: usize = 2;
const FIRST_STREAM_KEY: usize = 16;

/// A job said a process exited, or none is left: the loop looks at its
/// helpers (on Unix, SIGCHLD).
pub(super) static CHILD_CHANGED: AtomicBool = AtomicBool::new(false);
/// The console handler counted a cancellation the loop has not taken.
pub(super) static CANCEL_ARRIVED: AtomicBool = AtomicBool::new(false);
/// The handle that stands for our cancellations in the loop's interests
/// (`SignalPipe::fd`): readable when one arrived or a child changed.
pub(super) static SIGNAL_TOKEN: AtomicIsize = AtomicIsize::new(0);

enum Stream {
    Reader(Reader),
    Writer(Writer),
    Relay(Relay, Way),
}

pub(super) struct Reactor {
    port: Port,
    next_key: usize,
    streams: HashMap<RawFd, (usize, Stream)>,
    completions: Vec<Completion>,
}

// SAFETY: the raw pointers inside are `OVERLAPPED` addresses: the
// readers' own boxes, and those the port handed back, compared and never
// read. The reactor is used by one thread at a time, under its lock.
unsafe impl Send for Reactor {}

static REACTOR: Mutex<Option<Reactor>> = Mutex::new(None);

/// The reactor, made on first use.
pub(super) fn reactor() -> io::Result<ReactorGuard> {
    let mut guard = REACTOR.lock().unwrap_or_else(PoisonError::into_inner);
    if guard.is_none() {
        *guard = Some(Reactor {
            port: Port::new()?,
            next_key: FIRST_STREAM_KEY,
            streams: HashMap::new(),
            completions: Vec::with_capacity(16),
        });
    }
    Ok(ReactorGuard(guard))
}

pub(super) struct ReactorGuard(MutexGuard<'static, Option<Reactor>>);

impl std::ops::Deref for ReactorGuard {
    type Target = Reactor;
    fn deref(&self) -> &Reactor {
        self.0.as_ref().expect("made in reactor()")
    }
}

impl std::ops::DerefMut for ReactorGuard {
    fn deref_mut(&mut self) -> &mut Reactor {
        self.0.as_mut().expect("made in reactor()")
    }
}

/// A duplicate of `handle`, ours alone, not inherited.
pub(super) fn duplicate(handle: BorrowedHandle<'_>) -> io::Result<OwnedHandle> {
    handle.try_clone_to_owned()
}

impl Reactor {
    pub(super) fn port(&self) -> &Port {
        &self.port
    }

    pub(super) fn poster(&self) -> Poster {
        self.port.poster()
    }

    fn key(&mut self) -> usize {
        self.next_key += 1;
        self.next_key
    }

    /// Read the pipe `ours` (the loop's end of a helper's output) by
    /// completions, under its raw value.
    pub(super) fn add_reader(&mut self, ours: BorrowedHandle<'_>) -> io::Result<()> {
        let key = self.key();
        let reader = Reader::new(duplicate(ours)?, &self.port, key)?;
        let fd = ours.as_raw_handle() as RawFd;
        self.streams.insert(fd, (key, Stream::Reader(reader)));
        Ok(())
    }

    /// Write the pipe `ours` (the loop's end of a helper's stdin) by
    /// completions, under its raw value.
    pub(super) fn add_writer(&mut self, ours: BorrowedHandle<'_>) -> io::Result<()> {
        let key = self.key();
        let writer = Writer::new(duplicate(ours)?, &self.port, key)?;
        let fd = ours.as_raw_handle() as RawFd;
        self.streams.insert(fd, (key, Stream::Writer(writer)));
        Ok(())
    }

    /// The loop closes the pipe behind `fd`: its reader or writer goes
    /// too (a writer's duplicate would keep the helper's stdin open).
    pub(super) fn remove(&mut self, fd: RawFd) {
        if let Some((_, Stream::Reader(_) | Stream::Writer(_))) = self.streams.get(&fd) {
            self.streams.remove(&fd);
        }
    }

    /// Relay the host's handle `fd` one way, by a thread.
    pub(super) fn add_relay(
        &mut self,
        fd: RawFd,
        handle: BorrowedHandle<'_>,
        way: Way,
    ) -> io::Result<()> {
        if self.streams.contains_key(&fd) {
            return Ok(());
        }
        let key = self.key();
        let relay = Relay::new(duplicate(handle)?, way, &self.port, key)?;
        self.streams.insert(fd, (key, Stream::Relay(relay, way)));
        Ok(())
    }

    /// Read what the stream behind `file` holds: bytes, `WouldBlock`, or
    /// 0 at its end; a file that is no stream is read as it is.
    pub(super) fn read(&mut self, file: &mut File, into: &mut [u8]) -> io::Result<usize> {
        let fd = file.as_raw_handle() as RawFd;
        let read = match self.streams.get_mut(&fd) {
            Some((_, Stream::Reader(reader))) => reader.read(into),
            Some((_, Stream::Relay(relay, _))) => relay.read(into),
            Some((_, Stream::Writer(_))) => return Err(io::ErrorKind::Unsupported.into()),
            None => return file.read(into),
        };
        if matches!(read, Ok(0)) {
            if let Some((_, Stream::Reader(_))) = self.streams.get(&fd) {
                self.streams.remove(&fd);
                // The helper's end closed: its exit may be near.
                CHILD_CHANGED.store(true, Ordering::SeqCst);
            }
        }
        read
    }

    /// Write to the relay behind `file`, or to the file itself.
    pub(super) fn write(&mut self, file: &mut File, bytes: &[u8]) -> io::Result<usize> {
        let fd = file.as_raw_handle() as RawFd;
        match self.streams.get_mut(&fd) {
            Some((_, Stream::Relay(relay, Way::Out))) => relay.write(bytes),
            Some((_, Stream::Writer(writer))) => writer.write(bytes),
            _ => file.write(bytes),
        }
    }

    /// Whether every write handed to the relays is done (or can no longer
    /// be).
    pub(super) fn relays_written(&self) -> bool {
        self.streams.values().all(|(_, stream)| match stream {
            Stream::Relay(relay, Way::Out) => relay.is_writable(),
            _ => true,
        })
    }

    /// The poller: `ready[i]` answers `interests[i]`, after at most
    /// `timeout` (None: until something happens).
    pub(super) fn wait(
        &mut self,
        interests: &[Interest],
        ready: &mut Vec<Ready>,
        timeout: Option<Duration>,
    ) -> io::Result<()> {
        self.take(Some(Duration::ZERO))?;
        self.arm(interests)?;
        self.answer(interests, ready);
        if timeout == Some(Duration::ZERO) || ready.iter().any(|r| *r != Ready::default()) {
            return Ok(());
        }
        self.take(timeout)?;
        self.answer(interests, ready);
        Ok(())
    }

    /// Start the reads the interests ask for.
    fn arm(&mut self, interests: &[Interest]) -> io::Result<()> {
        for interest in interests.iter().filter(|i| i.read) {
            match self.streams.get_mut(&interest.fd) {
                Some((_, Stream::Reader(reader))) => reader.arm()?,
                Some((_, Stream::Relay(relay, Way::In))) => relay.arm(),
                _ => {}
            }
        }
        Ok(())
    }

    /// Take what the port says, waiting at most `timeout`.
    fn take(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        let mut completions = std::mem::take(&mut self.completions);
        let waited = self.port.wait(&mut completions, timeout);
        for completion in &completions {
            match completion.key {
                JOB_KEY => {
                    if matches!(
                        JobNews::from(completion),
                        JobNews::Exited(_) | JobNews::Empty
                    ) {
                        CHILD_CHANGED.store(true, Ordering::SeqCst);
                    }
                }
                WAKE_KEY => {}
                key => self.complete(key, completion)?,
            }
        }
        self.completions = completions;
        waited
    }

    fn complete(&mut self, key: usize, completion: &Completion) -> io::Result<()> {
        match self.streams.values_mut().find(|(k, _)| *k == key) {
            Some((_, Stream::Reader(reader))) => reader.complete(completion)?,
            Some((_, Stream::Writer(writer))) => writer.complete(completion),
            _ => {}
        }
        Ok(())
    }

    fn answer(&self, interests: &[Interest], ready: &mut Vec<Ready>) {
        ready.clear();
        let token = SIGNAL_TOKEN.load(Ordering::SeqCst);
        ready.extend(interests.iter().map(|interest| {
            if interest.fd == token && token != 0 {
                return Ready {
                    readable: interest.read
                        && (CHILD_CHANGED.load(Ordering::SeqCst)
                            || CANCEL_ARRIVED.load(Ordering::SeqCst)),
                    ..Ready::default()
                };
            }
            match self.streams.get(&interest.fd) {
                Some((_, Stream::Reader(reader))) => Ready {
                    readable: interest.read && reader.is_readable(),
                    ..Ready::default()
                },
                Some((_, Stream::Relay(relay, Way::In))) => Ready {
                    readable: interest.read && relay.is_readable(),
                    ..Ready::default()
                },
                Some((_, Stream::Writer(writer))) => Ready {
                    writable: interest.write && writer.is_writable(),
                    ..Ready::default()
                },
                Some((_, Stream::Relay(relay, Way::Out))) => Ready {
                    writable: interest.write && relay.is_writable(),
                    ..Ready::default()
                },
                // A file: always ready, as poll(2) says of one.
                None => Ready {
                    readable: interest.read,
                    writable: interest.write,
                    ..Ready::default()
                },
            }
        }));
    }
}

/// A borrowed view of a handle the loop names by value.
///
/// # Safety
/// `fd` is open while the result is used.
pub(super) unsafe fn borrowed(fd: RawFd) -> BorrowedHandle<'static> {
    // SAFETY: the caller's promise.
    unsafe { BorrowedHandle::borrow_raw(fd as std::os::windows::io::RawHandle) }
}
