//! Windows: a Job Object for each helper's tree, one completion port for
//! the loop. What each file holds:
//! - `create.rs`: the one way a process is started (`CreateProcessW`,
//!   passing on only the handles it names);
//! - `job.rs`: the job (started suspended, assigned, resumed; ended on
//!   the close of our handle, whatever ended us), its news and accounting;
//! - `process.rs`: finding, quoting (`cmdline.rs`), starting, waiting
//!   for, ending and counting the helpers, by pid as on Unix;
//! - `port.rs` and `reactor.rs`: the one port and the poller that makes
//!   readiness of what it says; `pipe.rs`: the helper's overlapped pipes;
//!   `relay.rs`: a thread for each of the host's handles that cannot be
//!   overlapped;
//! - `heir.rs`: the watchdog, mcp-bound started again, which holds the
//!   helper's job and writes the last words of a killed mcp-bound;
//! - `console.rs`: our cancellations (console events) and standard
//!   handles; `files.rs`: locks, durable writes, private files;
//!   `owner.rs`: who owns a file and who else may write it.
//!
//! What Windows does not have is a function that says so (`Unsupported`)
//! or a `BACKEND` flag the caller reads, never a no-op that pretends.

mod cmdline;
mod console;
mod create;
mod files;
mod handle;
mod heir;
mod job;
mod owner;
mod pipe;
mod port;
mod process;
mod reactor;
mod relay;

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::time::Duration;

pub use console::{SignalPipe, TERMINATING, has_console, std_fd};
pub use files::*;
pub use owner::{effective_uid, seen};
pub use process::*;

use super::fd::{BorrowedFd, OwnedFd, RawFd};
use super::{Interest, Ready, Signal};

pub const BACKEND: super::Backend = super::Backend {
    os: "windows",
    unsupported: None,
    subreaper: false,
    parent_death_signal: false,
    cgroup: false,
    real_time_signals: false,
    job: JOBS.is_some(),
    wide_exit_codes: true,
    numbered_descriptors: false,
    terminal: false,
    user_signals: false,
};

/// The C runtime's numbers (signal.h), and KILL as mcp-bound's own name
/// for the end that cannot be refused.
pub const SIGTERM: Signal = Signal(15);
pub const SIGKILL: Signal = Signal(9);
pub const SIGINT: Signal = Signal(2);
pub const SIGBREAK: Signal = Signal(21);
/// Nothing continues a stopped process here: no signal follows a stop.
pub const CONTINUE: Option<Signal> = None;
const NAMES: [(&str, Signal); 5] = [
    ("SIGINT", SIGINT),
    ("SIGTERM", SIGTERM),
    ("SIGKILL", SIGKILL),
    ("SIGBREAK", SIGBREAK),
    ("SIGABRT", Signal(22)),
];

pub fn signal_name(signal: Signal) -> Option<&'static str> {
    NAMES
        .iter()
        .find(|(_, n)| *n == signal)
        .map(|(name, _)| *name)
}

pub fn signal_number(name: &str) -> Option<Signal> {
    NAMES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, signal)| *signal)
}

/// The signal of this number, if this system has one by name.
pub fn signal_of(number: i32) -> Option<Signal> {
    NAMES
        .iter()
        .map(|(_, signal)| *signal)
        .find(|signal| signal.0 == number)
}

#[allow(clippy::reversed_empty_ranges)]
pub fn real_time_signals() -> std::ops::RangeInclusive<i32> {
    1..=0
}

/// Whether a write failed because its reader went away: the pipe broken
/// or closing (ERROR_BROKEN_PIPE, ERROR_NO_DATA: std's `BrokenPipe`), or
/// no longer connected (ERROR_PIPE_NOT_CONNECTED: a named pipe's other
/// end gone, and what Wine answers for a Unix pipe whose reader closed).
pub fn reader_gone(failure: &io::Error) -> bool {
    use windows_sys::Win32::Foundation::ERROR_PIPE_NOT_CONNECTED;
    failure.kind() == io::ErrorKind::BrokenPipe
        || failure.raw_os_error() == Some(ERROR_PIPE_NOT_CONNECTED as i32)
}

/// Wait `timeout`; never says standard output's reader went away.
/// Windows tells a pipe's writer that its reader closed only when it
/// writes (ERROR_NO_DATA, read as EPIPE): a `log -f` whose reader went
/// away ends at its next row, as the platform table says.
pub fn wait_for_output_gone(timeout: Duration) -> bool {
    std::thread::sleep(timeout);
    false
}

/// The loop's wait: the reactor's, over the one port.
#[derive(Default)]
pub struct Poller;

impl Poller {
    pub fn new() -> Poller {
        Poller
    }

    pub fn wait(
        &mut self,
        interests: &[Interest],
        ready: &mut Vec<Ready>,
        timeout: Option<Duration>,
    ) -> io::Result<()> {
        reactor::reactor()?.wait(interests, ready, timeout)
    }

    /// A restart made new pipes, perhaps under the values of closed
    /// ones: nothing to do, since each pipe is registered as it is made,
    /// replacing whatever had its value.
    pub fn forget(&mut self) {}
}

pub fn ready_now(interests: &[Interest], ready: &mut Vec<Ready>) -> io::Result<()> {
    reactor::reactor()?.wait(interests, ready, Some(Duration::ZERO))
}

/// The one bounded wait outside the loop, on the same port.
pub fn poll_until(
    interests: &[Interest],
    ready: &mut Vec<Ready>,
    deadline: std::time::Instant,
) -> io::Result<()> {
    let now = std::time::Instant::now();
    if now >= deadline {
        return Err(io::Error::from(io::ErrorKind::TimedOut));
    }
    reactor::reactor()?.wait(interests, ready, Some(deadline - now))
}

/// A pipe between us and a helper: (ours, theirs). Ours never blocks:
/// from the helper, it is read by completions (`reactor.rs`).
pub fn helper_pipe(from_helper: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    use std::os::windows::io::AsHandle;
    if from_helper {
        let (ours, theirs) = pipe::inbound()?;
        reactor::reactor()?.add_reader(ours.as_handle())?;
        Ok((ours, theirs))
    } else {
        let (ours, theirs) = pipe::outbound()?;
        reactor::reactor()?.add_writer(ours.as_handle())?;
        Ok((ours, theirs))
    }
}

/// Close a pipe to or from a helper that the loop holds, and what reads
/// or writes it by completions.
pub fn close_pipe(file: File) {
    use std::os::windows::io::AsRawHandle;
    if let Ok(mut reactor) = reactor::reactor() {
        reactor.remove(file.as_raw_handle() as RawFd);
    }
    drop(file);
}

/// Read a pipe or relay the loop holds (bytes, `WouldBlock`, 0 at its
/// end), or a file.
pub fn read_pipe(file: &mut File, into: &mut [u8]) -> io::Result<usize> {
    reactor::reactor()?.read(file, into)
}

/// Write to a relay (our stdout, when the host gave us a pipe or a
/// console), or a file.
pub fn write_pipe(file: &mut File, bytes: &[u8]) -> io::Result<usize> {
    reactor::reactor()?.write(file, bytes)
}

/// The host's handles, each through a relay.
pub const RELAYS: Option<super::Relays> = Some(super::Relays {
    input: relays_input,
    finish: finish_output,
});

/// The heir: mcp-bound started again as the watchdog.
pub const HEIR: Option<super::Heirs> = Some(super::Heirs {
    start: heir::Heir::start,
    line: heir::heir_line,
    release: heir::release_handed_group,
    end: heir::end_handed_group,
});

/// A Job Object for each helper's tree.
pub const JOBS: Option<super::Jobs> = Some(super::Jobs {
    try_limits: process::try_job_limits,
    end: process::end_job,
});

/// One command line, which the program parses back: what it cannot carry.
pub const COMMAND_LINE: Option<super::RefusedCommand> = Some(process::refused_command);

/// No fork: the watchdog is the heir.
pub const FORK: Option<super::Fork> = None;
/// No watchdog shares our memory here.
pub const WAITER: Option<super::StartWaiter> = None;
/// No per-process resource limits (a job's are the tree's).
pub const RLIMITS: Option<super::Rlimits> = None;
/// No cgroup.
pub const CGROUPS: Option<super::Cgroups> = None;
/// A job holds its tree: no mark is searched for.
pub const MARKS: Option<super::PidsWithEnv> = None;

/// Whether our output `fd` is written through a relay, which this sets
/// up: on Windows, every open one. A pipe's or a console's write can
/// block, and none can be made non-blocking or waited for by the port
/// unless it was opened overlapped, which the host decides; a relay
/// costs one thread and one buffer, whatever the handle is.
fn relays_output(fd: RawFd) -> bool {
    relay_std(fd, relay::Way::Out)
}

/// Whether our input `fd` is read through a relay, which this sets up:
/// on Windows, every open one (the host's pipe cannot be overlapped).
fn relays_input(fd: RawFd) -> bool {
    relay_std(fd, relay::Way::In)
}

fn relay_std(fd: RawFd, way: relay::Way) -> bool {
    if !is_open(fd) {
        return false;
    }
    let Ok(mut reactor) = reactor::reactor() else {
        return false;
    };
    // SAFETY: our standard handle, open for our lifetime.
    let handle = unsafe { reactor::borrowed(fd) };
    reactor.add_relay(fd, handle, way).is_ok()
}

/// Before we exit: give the relays' last writes up to `limit` to finish.
fn finish_output(limit: Duration) {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        match reactor::reactor() {
            Ok(reactor) if !reactor.relays_written() => {}
            _ => return,
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[cfg(test)]
pub(crate) static INSTALLED: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn ignore_session_ends() {}

pub fn unblock_all_signals() {}

pub fn exit_now(code: i32) -> ! {
    std::process::exit(code)
}

pub fn become_subreaper() -> io::Result<()> {
    Err(unsupported("become_subreaper"))
}

use crate::sys::refusing::unsupported;

/// How a user makes a file theirs alone, as `trust`'s lines advise it
/// (the mode there is what Everyone, Authenticated Users and Users may).
pub const MAKE_PRIVATE: &str = "removing Everyone, Authenticated Users and Users from its ACL (icacls FILE /inheritance:r /grant:r %USERNAME%:F)";

/// Our token's user's RID (`owner.rs`): the record's `uid`.
pub fn current_uid() -> u32 {
    effective_uid()
}

pub fn hostname() -> Option<String> {
    std::env::var("COMPUTERNAME").ok()
}

/// Not inherited by what we start (a handle's inherit flag).
pub fn set_cloexec(fd: BorrowedFd<'_>) -> io::Result<()> {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Foundation::{HANDLE_FLAG_INHERIT, SetHandleInformation};
    // SAFETY: a handle the caller holds open.
    handle::check(unsafe { SetHandleInformation(fd.as_raw_handle(), HANDLE_FLAG_INHERIT, 0) })
}

/// Whether `fd` is an open handle of a kind the system knows.
pub fn is_open(fd: RawFd) -> bool {
    use windows_sys::Win32::Foundation::{GetLastError, NO_ERROR};
    use windows_sys::Win32::Storage::FileSystem::{FILE_TYPE_UNKNOWN, GetFileType};
    if fd == 0 || fd == -1 {
        return false;
    }
    // SAFETY: GetFileType only reads the handle's value; a closed one
    // answers FILE_TYPE_UNKNOWN with an error.
    let kind = unsafe { GetFileType(fd as _) };
    kind != FILE_TYPE_UNKNOWN || unsafe { GetLastError() } == NO_ERROR
}

/// Whether `fd` is open; Windows does not say for what, and a write to a
/// handle opened for reading fails, which the writer reports.
pub fn is_open_for_writing(fd: RawFd) -> bool {
    is_open(fd)
}

/// # Safety
/// `fd` must stay open for as long as the result is used.
pub unsafe fn borrow_raw(fd: RawFd) -> BorrowedFd<'static> {
    // SAFETY: the caller's promise.
    unsafe { BorrowedFd::borrow_raw(fd as std::os::windows::io::RawHandle) }
}

pub fn pipe_cloexec() -> io::Result<(File, File)> {
    Err(unsupported("pipe_cloexec"))
}

/// No splice here: the flood path reads.
pub const MOVER: Option<crate::sys::Mover> = None;

pub fn open_tty() -> io::Result<File> {
    Err(unsupported("open_tty"))
}

/// What our output handle is: every open one is written through a relay
/// (a file, which never waits, as well: the relay costs one thread).
pub fn output_kind(fd: RawFd, file: &File) -> super::OutputKind {
    use super::OutputKind;
    if !is_open_for_writing(fd) {
        return OutputKind::Absent;
    }
    if relays_output(fd) {
        return OutputKind::Relayed;
    }
    match file.metadata() {
        Ok(meta) if meta.is_file() => OutputKind::NeverWaits,
        Ok(_) => OutputKind::AfterPollout,
        Err(_) => OutputKind::Absent,
    }
}

/// A path's bytes: WTF-8 on Windows, as std encodes them.
pub fn os_bytes(text: &std::ffi::OsStr) -> &[u8] {
    text.as_encoded_bytes()
}

/// A path from bytes that [`os_bytes`] gave, cut and joined only at ASCII.
pub fn os_string(bytes: Vec<u8>) -> OsString {
    // SAFETY: callers build `bytes` from `os_bytes` output and ASCII,
    // joined at ASCII boundaries, which std allows.
    unsafe { OsString::from_encoded_bytes_unchecked(bytes) }
}
