//! The helper's pipes on Windows, and readiness made from completions.
//!
//! Each pipe is a named pipe whose end is ours, opened for overlapped
//! I/O and associated with the loop's one port (`port.rs`); the helper
//! gets the other end, plain, as its stdin, stdout or stderr (anonymous
//! pipes cannot be overlapped). A `Reader` keeps one read in flight into
//! a buffer of its own; when the port says it finished, the pipe is
//! readable, and `read` hands out what arrived, then starts the next
//! read. The parts above read from it as they read a non-blocking
//! descriptor on Unix: bytes, `WouldBlock`, or 0 at the end. Its memory
//! is the one buffer, whatever the helper writes.

use std::io;
use std::os::windows::io::{AsHandle, AsRawHandle, OwnedHandle};
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};

use windows_sys::Win32::Foundation::{
    ERROR_ACCESS_DENIED, ERROR_BROKEN_PIPE, ERROR_FILE_EXISTS, ERROR_IO_PENDING, ERROR_NO_DATA,
    GENERIC_READ, GENERIC_WRITE, STATUS_PIPE_BROKEN,
};
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, FILE_FLAG_FIRST_PIPE_INSTANCE, FILE_FLAG_OVERLAPPED, OPEN_EXISTING,
    PIPE_ACCESS_INBOUND, PIPE_ACCESS_OUTBOUND, ReadFile, WriteFile,
};
use windows_sys::Win32::System::IO::{CancelIoEx, GetOverlappedResult, OVERLAPPED};
use windows_sys::Win32::System::Pipes::{
    CreateNamedPipeW, PIPE_READMODE_BYTE, PIPE_REJECT_REMOTE_CLIENTS, PIPE_TYPE_BYTE, PIPE_WAIT,
};

use super::handle::owned;
use super::port::{Completion, Port};

/// What one read may bring, and the pipe's own buffer in the system.
pub(super) const READ_BYTES: usize = 64 * 1024;

/// A pipe the helper writes (its stdout or stderr): our end, to read
/// with overlapped I/O, and the helper's, to pass to `Job::start`.
pub(super) fn inbound() -> io::Result<(OwnedHandle, OwnedHandle)> {
    named_pair(PIPE_ACCESS_INBOUND, GENERIC_WRITE)
}

/// A pipe the helper reads (its stdin): our end, to write with
/// overlapped I/O, and the helper's.
pub(super) fn outbound() -> io::Result<(OwnedHandle, OwnedHandle)> {
    named_pair(PIPE_ACCESS_OUTBOUND, GENERIC_READ)
}

fn named_pair(ours_way: u32, theirs_access: u32) -> io::Result<(OwnedHandle, OwnedHandle)> {
    static COUNT: AtomicU32 = AtomicU32::new(0);
    // A name no one else made: our pid, a count, and a refusal to join a
    // pipe of that name that already exists (another process's squat).
    for _ in 0..8 {
        let name = format!(
            r"\\.\pipe\mcp-bound-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        );
        let wide: Vec<u16> = name.encode_utf16().chain([0]).collect();
        // SAFETY: a NUL-terminated name; one instance; default security.
        let ours = owned(unsafe {
            CreateNamedPipeW(
                wide.as_ptr(),
                ours_way | FILE_FLAG_OVERLAPPED | FILE_FLAG_FIRST_PIPE_INSTANCE,
                PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT | PIPE_REJECT_REMOTE_CLIENTS,
                1,
                READ_BYTES as u32,
                READ_BYTES as u32,
                0,
                ptr::null(),
            )
        });
        let ours = match ours {
            Err(err) if taken(&err) => continue,
            other => other?,
        };
        // SAFETY: the name just made; one way only; not inherited
        // (`Job::start` passes it on, and nothing else does).
        let theirs = owned(unsafe {
            CreateFileW(
                wide.as_ptr(),
                theirs_access,
                0,
                ptr::null(),
                OPEN_EXISTING,
                0,
                ptr::null_mut(),
            )
        })?;
        return Ok((ours, theirs));
    }
    Err(io::Error::other("no free pipe name after 8 tries"))
}

fn taken(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error().map(|code| code as u32),
        Some(ERROR_ACCESS_DENIED | ERROR_FILE_EXISTS)
    )
}

/// Where a reader is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// No read in flight, nothing held: the next turn starts one.
    Idle,
    /// A read is in flight; its completion will come to the port.
    Pending,
    /// Bytes `from..to` of the buffer are ours to hand out.
    Holding { from: usize, to: usize },
    /// The helper's end is closed, everything was handed out.
    Ended,
}

/// Our end of a pipe the helper writes, read by completions.
pub(super) struct Reader {
    handle: OwnedHandle,
    /// The read in flight and where it writes: at fixed addresses until
    /// it finished (boxed, and never freed while pending).
    overlapped: Box<OVERLAPPED>,
    buf: Box<[u8]>,
    state: State,
    key: usize,
}

impl Reader {
    /// Read `handle` (our end, from `inbound`) through `port`; its
    /// completions come under `key`, which no other handle uses.
    pub(super) fn new(handle: OwnedHandle, port: &Port, key: usize) -> io::Result<Reader> {
        port.associate(handle.as_handle(), key)?;
        Ok(Reader {
            handle,
            overlapped: Box::default(),
            buf: vec![0; READ_BYTES].into_boxed_slice(),
            state: State::Idle,
            key,
        })
    }

    /// Start a read if none is in flight and nothing is held: the loop
    /// calls this before it waits, as it would register an interest. A
    /// read that fails at once (the helper's end is closed) leaves the
    /// reader readable, at its end, with no completion to come: the loop
    /// looks at `is_readable` after arming, before it waits.
    pub(super) fn arm(&mut self) -> io::Result<()> {
        if self.state != State::Idle {
            return Ok(());
        }
        *self.overlapped = OVERLAPPED::default();
        // SAFETY: our open handle; the buffer and OVERLAPPED stay where
        // they are until the completion comes (Drop waits for it).
        let ok = unsafe {
            ReadFile(
                self.handle.as_raw_handle(),
                self.buf.as_mut_ptr(),
                READ_BYTES as u32,
                ptr::null_mut(),
                &mut *self.overlapped,
            )
        };
        if ok != 0 {
            // Done at once; the port still gets its completion.
            self.state = State::Pending;
            return Ok(());
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error().map(|code| code as u32) {
            Some(ERROR_IO_PENDING) => self.state = State::Pending,
            // No completion comes for a read that failed at once.
            Some(ERROR_BROKEN_PIPE) => self.state = State::Ended,
            _ => return Err(err),
        }
        Ok(())
    }

    /// The port says our read finished.
    pub(super) fn complete(&mut self, completion: &Completion) -> io::Result<()> {
        debug_assert_eq!(completion.key, self.key);
        if self.state != State::Pending {
            return Ok(());
        }
        let status = self.overlapped.Internal as i32;
        self.state = match (status, completion.bytes) {
            (STATUS_PIPE_BROKEN, _) | (0, 0) => State::Ended,
            (0, bytes) => State::Holding {
                from: 0,
                to: bytes as usize,
            },
            (status, _) => {
                self.state = State::Idle;
                return Err(io::Error::other(format!(
                    "a read of the helper's pipe failed: NTSTATUS {status:#010x}"
                )));
            }
        };
        Ok(())
    }

    /// Whether `read` has something to say (bytes, or the end).
    pub(super) fn is_readable(&self) -> bool {
        matches!(self.state, State::Holding { .. } | State::Ended)
    }

    /// What arrived: bytes, `WouldBlock` while a read is in flight (or
    /// not yet started), 0 at the end.
    pub(super) fn read(&mut self, into: &mut [u8]) -> io::Result<usize> {
        match self.state {
            State::Ended => Ok(0),
            State::Idle | State::Pending => Err(io::ErrorKind::WouldBlock.into()),
            State::Holding { from, to } => {
                let n = into.len().min(to - from);
                into[..n].copy_from_slice(&self.buf[from..from + n]);
                self.state = if from + n == to {
                    State::Idle
                } else {
                    State::Holding { from: from + n, to }
                };
                Ok(n)
            }
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        if self.state == State::Pending {
            cancel_and_wait(&self.handle, &self.overlapped);
        }
    }
}

/// Cancel the operation in flight on `handle` and wait for it to end (at
/// once, cancelled), so that its buffer and `OVERLAPPED` outlive it. Its
/// completion still comes to the port, under a key no one owns.
fn cancel_and_wait(handle: &OwnedHandle, overlapped: &OVERLAPPED) {
    let mut moved = 0u32;
    // SAFETY: our handle and our own operation's OVERLAPPED.
    unsafe {
        CancelIoEx(handle.as_raw_handle(), overlapped);
        GetOverlappedResult(handle.as_raw_handle(), overlapped, &mut moved, 1);
    }
}

/// Our end of a pipe the helper reads (its stdin), written by
/// completions: one write in flight from a buffer of its own, so the
/// loop hands over bytes and goes on; the next waits for the port.
pub(super) struct Writer {
    handle: OwnedHandle,
    overlapped: Box<OVERLAPPED>,
    buf: Box<[u8]>,
    /// A write is in flight.
    pending: bool,
    /// The helper's end is closed: every write fails from now on.
    broken: bool,
    key: usize,
}

impl Writer {
    /// Write `handle` (our end, from `outbound`) through `port` under
    /// `key`, which no other handle uses.
    pub(super) fn new(handle: OwnedHandle, port: &Port, key: usize) -> io::Result<Writer> {
        port.associate(handle.as_handle(), key)?;
        Ok(Writer {
            handle,
            overlapped: Box::default(),
            buf: vec![0; READ_BYTES].into_boxed_slice(),
            pending: false,
            broken: false,
            key,
        })
    }

    /// Whether `write` takes bytes now (or says the pipe is broken).
    pub(super) fn is_writable(&self) -> bool {
        !self.pending
    }

    /// Hand over up to a buffer of `bytes`: taken, `WouldBlock` while the
    /// last write is in flight, `BrokenPipe` once the helper's end closed.
    pub(super) fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.broken {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        if self.pending {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = bytes.len().min(self.buf.len());
        self.buf[..n].copy_from_slice(&bytes[..n]);
        *self.overlapped = OVERLAPPED::default();
        // SAFETY: our open handle; the buffer and OVERLAPPED stay where
        // they are until the completion comes (Drop waits for it).
        let ok = unsafe {
            WriteFile(
                self.handle.as_raw_handle(),
                self.buf.as_ptr(),
                n as u32,
                ptr::null_mut(),
                &mut *self.overlapped,
            )
        };
        let err = io::Error::last_os_error();
        match err.raw_os_error().map(|code| code as u32) {
            _ if ok != 0 => self.pending = true,
            Some(ERROR_IO_PENDING) => self.pending = true,
            Some(ERROR_BROKEN_PIPE | ERROR_NO_DATA) => {
                self.broken = true;
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            _ => return Err(err),
        }
        Ok(n)
    }

    /// The port says our write finished.
    pub(super) fn complete(&mut self, completion: &Completion) {
        debug_assert_eq!(completion.key, self.key);
        if !self.pending {
            return;
        }
        self.pending = false;
        if self.overlapped.Internal as i32 != 0 {
            self.broken = true;
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if self.pending {
            cancel_and_wait(&self.handle, &self.overlapped);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::windows::cmdline::program_line;
    use crate::sys::windows::job::{Job, JobNews, Stdio};
    use std::time::{Duration, Instant};
    use windows_sys::Win32::System::Threading::CREATE_NO_WINDOW;

    const JOB: usize = 1;
    const OUT: usize = 2;
    const ERR: usize = 3;

    fn wide(text: &str) -> Vec<u16> {
        text.encode_utf16().collect()
    }

    /// What the helper wrote to each stream, read through one port, with
    /// the job's news beside the pipes', until both ended and the helper
    /// exited.
    fn drain(script: &str) -> (Vec<u8>, Vec<u8>) {
        let port = Port::new().unwrap();
        let job = Job::new(&port, JOB).unwrap();
        let (out_ours, out_theirs) = inbound().unwrap();
        let (err_ours, err_theirs) = inbound().unwrap();
        let null = std::fs::File::open("NUL").unwrap();
        let line = program_line(&wide("cmd.exe"), &[&wide("/c"), &wide(script)]).unwrap();
        let stdio = Stdio {
            input: null.as_handle(),
            output: out_theirs.as_handle(),
            error: err_theirs.as_handle(),
        };
        let helper = job
            .start(&[], &line, CREATE_NO_WINDOW, None, &stdio)
            .unwrap();
        drop((out_theirs, err_theirs));
        let mut readers = [
            Reader::new(out_ours, &port, OUT).unwrap(),
            Reader::new(err_ours, &port, ERR).unwrap(),
        ];
        let mut seen: [Vec<u8>; 2] = Default::default();
        let mut exited = false;
        let mut completions = Vec::new();
        let mut chunk = [0u8; 4096];
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            // A read that ends at once (the helper's end already closed)
            // makes the reader readable with no completion to come: look
            // after arming, before waiting.
            for (reader, seen) in readers.iter_mut().zip(&mut seen) {
                reader.arm().unwrap();
                while reader.is_readable() {
                    match reader.read(&mut chunk).unwrap() {
                        0 => break,
                        n => seen.extend_from_slice(&chunk[..n]),
                    }
                    // Drained: the next read starts before the wait.
                    reader.arm().unwrap();
                }
            }
            if exited && readers.iter().all(|r| r.state == State::Ended) {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            port.wait(&mut completions, Some(left)).unwrap();
            assert!(
                !completions.is_empty(),
                "the helper's streams ended within 60 s: exited {exited}, readers {:?}, seen {} and {} bytes",
                readers.iter().map(|r| r.state).collect::<Vec<_>>(),
                seen[0].len(),
                seen[1].len(),
            );
            for completion in &completions {
                match completion.key {
                    JOB => exited |= JobNews::from(completion) == JobNews::Exited(helper.pid),
                    key => readers[key - OUT].complete(completion).unwrap(),
                }
            }
        }
        let [out, err] = seen;
        (out, err)
    }

    fn numbered(prefix: &str, count: u32) -> Vec<u8> {
        (1..=count)
            .flat_map(|i| format!("{prefix} {i}\r\n").into_bytes())
            .collect()
    }

    #[test]
    fn both_streams_arrive_whole_and_in_order_through_one_port() {
        let (out, err) = drain("for /L %i in (1,1,1000) do (echo out %i& echo err %i>&2)");
        assert_eq!(out, numbered("out", 1000), "stdout, every byte in order");
        assert_eq!(err, numbered("err", 1000), "stderr, every byte in order");
    }

    #[test]
    fn a_flood_larger_than_the_buffer_is_read_in_turns() {
        let (out, err) = drain("for /L %i in (1,1,6000) do @echo flood line %i>&2");
        assert!(out.is_empty(), "nothing on stdout");
        let expected = numbered("flood line", 6000);
        assert!(expected.len() > READ_BYTES, "more than the buffer holds");
        assert_eq!(err.len(), expected.len(), "every byte counted");
        assert_eq!(err, expected, "and in order");
    }

    #[test]
    fn a_reader_says_would_block_until_its_read_finishes() {
        let port = Port::new().unwrap();
        let (ours, theirs) = inbound().unwrap();
        let mut reader = Reader::new(ours, &port, OUT).unwrap();
        let mut chunk = [0u8; 16];
        let idle = reader.read(&mut chunk).unwrap_err();
        assert_eq!(idle.kind(), io::ErrorKind::WouldBlock, "nothing asked yet");
        reader.arm().unwrap();
        let pending = reader.read(&mut chunk).unwrap_err();
        assert_eq!(pending.kind(), io::ErrorKind::WouldBlock, "in flight");
        drop(theirs);
        let mut completions = Vec::new();
        port.wait(&mut completions, Some(Duration::from_secs(10)))
            .unwrap();
        assert_eq!(
            completions.len(),
            1,
            "the read finished: the writer is gone"
        );
        reader.complete(&completions[0]).unwrap();
        assert_eq!(reader.read(&mut chunk).unwrap(), 0, "the end");
    }
}
