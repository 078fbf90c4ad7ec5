//! The watchdog on Windows, here called the heir: Windows has no fork, so
//! mcp-bound starts itself again, as `mcp-bound-watchdog heir HANDLE`.
//! HANDLE is the read end of a pipe whose write end only mcp-bound holds,
//! and the one handle the heir inherits: EOF without "done" means
//! mcp-bound died. The heir is started
//! - with no console (`DETACHED_PROCESS`), so no console event that ends
//!   mcp-bound reaches it;
//! - with no standard handles, so it holds none of the host's pipes open
//!   (the host sees mcp-bound's stdout end when mcp-bound does);
//! - outside the job mcp-bound may itself be in, where that job allows
//!   breakaway (a host's job that forbids it ends the heir with us).
//!
//! mcp-bound hands it each helper's job as a handle in the heir's own
//! table (`Hand::group`, `DuplicateHandle` pushed from our side, so no
//! handle value of ours is ever taken by the heir after we may have
//! closed it). Once mcp-bound is gone the heir ends that job and waits
//! until none of its processes is left (`end_handed_group`), then writes
//! the last words. While the heir holds a job, the job's kill-on-close
//! waits for the heir's handle too: the heir closes it when told the
//! helper was reaped, and on its own exit, whichever way it ends.

use std::fs::File;
use std::io::{self, Write};
use std::os::windows::ffi::OsStrExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::ptr;
use std::time::{Duration, Instant};

use windows_sys::Win32::Foundation::{
    DUPLICATE_SAME_ACCESS, DuplicateHandle, ERROR_ACCESS_DENIED, HANDLE, HANDLE_FLAG_INHERIT,
    SetHandleInformation,
};
use windows_sys::Win32::System::Pipes::CreatePipe;
use windows_sys::Win32::System::Threading::{
    CREATE_BREAKAWAY_FROM_JOB, CREATE_NEW_PROCESS_GROUP, DETACHED_PROCESS, GetCurrentProcess,
    INFINITE, WaitForSingleObject,
};

use super::create::{Start, create_process};
use super::handle::check;
use super::job::Job;

/// The pipe's buffer: the brief (a record before dispatch) and each
/// milestone fit, so a write blocks only while the heir is starting.
const LINE_BYTES: u32 = 64 << 10;

/// The heir, as mcp-bound holds it.
pub(super) struct Heir {
    pid: i32,
    process: OwnedHandle,
    writer: File,
}

impl Heir {
    /// Start this program again as `argv0 heir HANDLE`.
    pub(super) fn start(argv0: &str) -> io::Result<Box<dyn crate::sys::Watcher>> {
        let exe = std::env::current_exe()?;
        let (reader, writer) = line_pipe()?;
        let raw = reader.as_raw_handle();
        // SAFETY: our open handle; the list below still limits this one
        // start to it.
        check(unsafe { SetHandleInformation(raw, HANDLE_FLAG_INHERIT, HANDLE_FLAG_INHERIT) })?;
        let line: Vec<u16> = format!("{argv0} heir {}", raw as usize)
            .encode_utf16()
            .collect();
        let application: Vec<u16> = exe.as_os_str().encode_wide().chain([0]).collect();
        let start = |flags: u32| Start {
            application: &application,
            line: &line,
            flags: flags | DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP,
            environment: None,
            standard: [ptr::null_mut(); 3],
        };
        let info = match create_process(&start(CREATE_BREAKAWAY_FROM_JOB), &[raw]) {
            // Our job forbids breakaway: the heir shares its fate.
            Err(err) if err.raw_os_error() == Some(ERROR_ACCESS_DENIED as i32) => {
                create_process(&start(0), &[raw])?
            }
            other => other?,
        };
        drop(reader);
        // SAFETY: the handles CreateProcessW gave us, owned by nothing else.
        let process = unsafe { OwnedHandle::from_raw_handle(info.hProcess) };
        // SAFETY: as above; the thread's handle is not needed.
        drop(unsafe { OwnedHandle::from_raw_handle(info.hThread) });
        Ok(Box::new(Heir {
            pid: info.dwProcessId as i32,
            process,
            writer,
        }))
    }
}

impl crate::sys::Watcher for Heir {
    fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// Our end of the line.
    fn writer(&self) -> &File {
        &self.writer
    }

    /// It writes the last words of a killed mcp-bound.
    fn speaks(&self) -> bool {
        true
    }

    /// What lets the loop hand the heir each helper's job.
    fn hand(&self) -> Option<io::Result<Box<dyn crate::sys::Hand>>> {
        Some(
            self.process
                .try_clone()
                .map(|heir| Box::new(Hand { heir }) as Box<dyn crate::sys::Hand>),
        )
    }

    /// Say `done`, close the line, and wait for the heir to exit.
    fn finish(self: Box<Self>, done: &[u8]) {
        let _ = (&self.writer).write_all(done);
        drop(self.writer);
        // SAFETY: our child's handle, open.
        unsafe { WaitForSingleObject(self.process.as_raw_handle(), INFINITE) };
    }
}

/// A handle to the heir, to put handles into its table.
struct Hand {
    heir: OwnedHandle,
}

impl crate::sys::Hand for Hand {
    /// Put a handle to helper `pid`'s job into the heir's table: its value
    /// there, for the line's `P`.
    fn group(&self, pid: i32) -> io::Result<i32> {
        let duplicated = super::process::with_job(pid, |job| {
            let mut theirs: HANDLE = ptr::null_mut();
            // SAFETY: our job's handle and our handle to the heir, both
            // open; `theirs` is written, a value in the heir's table.
            check(unsafe {
                DuplicateHandle(
                    GetCurrentProcess(),
                    job.raw(),
                    self.heir.as_raw_handle(),
                    &mut theirs,
                    0,
                    0,
                    DUPLICATE_SAME_ACCESS,
                )
            })
            .map(|()| theirs as usize as i32)
        });
        duplicated.unwrap_or_else(|| Err(io::Error::from(io::ErrorKind::NotFound)))
    }
}

/// In the heir: the line, from the handle value on its command line.
pub(super) fn heir_line(value: &str) -> io::Result<File> {
    let raw: usize = value
        .parse()
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    if raw == 0 {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: the handle mcp-bound made us inherit, ours alone.
    Ok(unsafe { File::from_raw_handle(raw as HANDLE) })
}

/// In the heir, once mcp-bound is gone: end the job `value` names (a
/// handle mcp-bound put in our table; 0: none), then wait until none of
/// its processes is left, looking every few milliseconds for at most
/// `patience`. Whether the job is known empty.
pub(super) fn end_handed_group(value: i32, patience: Duration) -> bool {
    if value == 0 {
        return false;
    }
    // SAFETY: a handle mcp-bound put in our table for us alone.
    let job = Job::from_handle(unsafe { OwnedHandle::from_raw_handle(value as usize as HANDLE) });
    let _ = job.kill(1);
    let deadline = Instant::now() + patience;
    loop {
        match job.active_processes() {
            Ok(0) => return true,
            Err(_) => return false,
            Ok(_) if Instant::now() >= deadline => return false,
            Ok(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// In the heir: let go of the job `value` names, once its helper was
/// reaped (the job's kill-on-close then ends whatever is left of it).
pub(super) fn release_handed_group(value: i32) {
    if value != 0 {
        // SAFETY: a handle mcp-bound put in our table for us alone,
        // closed once.
        drop(unsafe { OwnedHandle::from_raw_handle(value as usize as HANDLE) });
    }
}

/// An anonymous pipe, neither end inherited.
fn line_pipe() -> io::Result<(File, File)> {
    let (mut read, mut write): (HANDLE, HANDLE) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: both outputs are written; default security, not inherited.
    check(unsafe { CreatePipe(&mut read, &mut write, ptr::null(), LINE_BYTES) })?;
    // SAFETY: fresh handles, owned by nothing else.
    Ok(unsafe { (File::from_raw_handle(read), File::from_raw_handle(write)) })
}
