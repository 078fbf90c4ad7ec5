//! Windows, not built yet: mcp-bound compiles here and refuses to run,
//! saying why (`BACKEND.unsupported`), before anything is started, as on a
//! Unix without a backend. CI type-checks this for both MSVC targets, so
//! the rest of mcp-bound stays free of anything Unix-only; each function
//! below becomes the real one as the Windows backend lands (a Job Object
//! for the tree, one completion port for the pipes). None pretends: what
//! would have to promise something says `Unsupported`.

mod cmdline;
mod files;
mod handle;
mod job;
mod pipe;
mod port;
mod relay;

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::Path;
use std::time::Duration;

pub use files::*;

use super::fd::{BorrowedFd, OwnedFd, RawFd};
use super::{ChildExit, Interest, Orphaned, Ready, Setup};

/// Nothing yet: mcp-bound refuses to run here.
pub const BACKEND: super::Backend = super::Backend {
    os: "windows",
    unsupported: Some(
        "no Windows backend yet: mcp-bound contains a tree on Linux and macOS only (a Job Object backend is planned)",
    ),
    subreaper: false,
    parent_death_signal: false,
    cgroup: false,
    waiter: false,
    splice: false,
    real_time_signals: false,
};

/// The C runtime's numbers (signal.h), and KILL as mcp-bound's own name
/// for the end that cannot be refused.
pub const SIGTERM: i32 = 15;
pub const SIGKILL: i32 = 9;
pub const SIGCONT: i32 = 0;
const NAMES: [(&str, i32); 5] = [
    ("SIGINT", 2),
    ("SIGTERM", SIGTERM),
    ("SIGKILL", SIGKILL),
    ("SIGBREAK", 21),
    ("SIGABRT", 22),
];

pub fn signal_name(signo: i32) -> Option<&'static str> {
    NAMES
        .iter()
        .find(|(_, n)| *n == signo)
        .map(|(name, _)| *name)
}

pub fn signal_number(name: &str) -> Option<i32> {
    NAMES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, signo)| *signo)
}

#[allow(clippy::reversed_empty_ranges)]
pub fn real_time_signals() -> std::ops::RangeInclusive<i32> {
    1..=0
}

pub fn send_signal(_target: i32, _signo: i32) -> bool {
    false
}

/// The loop's wait: not built.
#[derive(Default)]
pub struct Poller;

impl Poller {
    pub fn new() -> Poller {
        Poller
    }

    pub fn wait(
        &mut self,
        _interests: &[Interest],
        _ready: &mut Vec<Ready>,
        _timeout: Option<Duration>,
    ) -> io::Result<()> {
        Err(unsupported())
    }

    pub fn forget(&mut self) {}
}

pub fn ready_now(_interests: &[Interest], _ready: &mut Vec<Ready>) -> io::Result<()> {
    Err(unsupported())
}

pub fn poll_until(
    _interests: &[Interest],
    _ready: &mut Vec<Ready>,
    _deadline: std::time::Instant,
) -> io::Result<()> {
    Err(unsupported())
}

/// What arrived since the last look (console events, once built).
pub struct Pending {
    pub child_changed: bool,
    pub terminating: Vec<(i32, u32)>,
    pub debug_toggles: u32,
}

/// The source of our own cancellations: not built.
pub struct SignalPipe {
    never: std::convert::Infallible,
}

impl SignalPipe {
    pub fn install() -> io::Result<SignalPipe> {
        Err(unsupported())
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        match self.never {}
    }

    pub fn disarm_in_child() {}

    pub fn take(&self) -> Pending {
        match self.never {}
    }
}

#[cfg(test)]
pub(crate) static INSTALLED: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A program and its environment, ready to start: not built.
pub struct Exec {
    never: std::convert::Infallible,
}

impl Exec {
    pub fn new(_argv: &[OsString], _extra: Option<(&str, &str)>) -> io::Result<Exec> {
        Err(unsupported())
    }
}

/// How the helper got into its container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    None,
}

pub fn spawn(exec: &Exec, _setup: &Setup<'_>) -> io::Result<(i32, Entry)> {
    match exec.never {}
}

pub fn fork_process() -> io::Result<Option<i32>> {
    Err(unsupported())
}

pub fn detach(_keep: RawFd) {}

pub fn ignore_session_ends() {}

pub fn unblock_all_signals() {}

pub fn exit_now(code: i32) -> ! {
    std::process::exit(code)
}

pub fn become_subreaper() -> io::Result<()> {
    Err(unsupported())
}

pub fn set_rlimit(_limit: &crate::rlimit::Rlimit) -> io::Result<()> {
    Err(unsupported())
}

pub fn hard_rlimit(_resource: crate::rlimit::Resource) -> Option<u64> {
    None
}

pub fn may_set_rlimit(_limit: &crate::rlimit::Rlimit) -> bool {
    false
}

pub fn wait_exit(_pid: i32, _block: bool) -> Option<ChildExit> {
    None
}

pub fn reap(_pid: i32) {}

pub fn reap_with_usage(_pid: i32) -> Option<(Duration, Duration)> {
    None
}

pub fn wait_child(_pid: i32) {}

pub fn children_cpu() -> Option<(Duration, Duration)> {
    None
}

pub fn reaped_peak_kib() -> Option<u64> {
    None
}

use crate::sys::refusing::unsupported;
pub use crate::sys::refusing::{children_of_self, descendants, pids_with_env, proc_info};

/// The watchdog that shares our memory: Linux's only.
pub struct Waiter {
    pub pid: i32,
    never: std::convert::Infallible,
}

impl Waiter {
    pub fn start(_plan: Orphaned) -> io::Result<Waiter> {
        Err(unsupported())
    }

    pub fn writer(&self) -> &File {
        match self.never {}
    }

    pub fn finish(self, _done: &[u8]) {
        match self.never {}
    }
}

pub fn current_uid() -> u32 {
    0
}

pub fn effective_uid() -> u32 {
    0
}

pub fn hostname() -> Option<String> {
    std::env::var("COMPUTERNAME").ok()
}

pub fn set_nonblocking(_fd: BorrowedFd<'_>) -> io::Result<()> {
    Err(unsupported())
}

pub fn is_nonblocking(_fd: BorrowedFd<'_>) -> io::Result<bool> {
    Err(unsupported())
}

pub fn set_cloexec(_fd: BorrowedFd<'_>) -> io::Result<()> {
    Err(unsupported())
}

pub fn is_open(_fd: RawFd) -> bool {
    false
}

pub fn is_open_for_writing(_fd: RawFd) -> bool {
    false
}

/// # Safety
/// `fd` must stay open for as long as the result is used.
pub unsafe fn borrow_raw(fd: RawFd) -> BorrowedFd<'static> {
    // SAFETY: the caller's promise.
    unsafe { BorrowedFd::borrow_raw(fd as std::os::windows::io::RawHandle) }
}

pub fn send_nowait(_fd: BorrowedFd<'_>, _bytes: &[u8]) -> io::Result<usize> {
    Err(unsupported())
}

pub fn read_blocking(_fd: RawFd, _buf: &mut [u8]) -> io::Result<usize> {
    Err(unsupported())
}

pub fn pipe_cloexec() -> io::Result<(File, File)> {
    Err(unsupported())
}

pub fn grow_pipe(_fd: BorrowedFd<'_>, _bytes: i32) {}

pub fn private_pipe(_bytes: i32) -> io::Result<(OwnedFd, OwnedFd, usize)> {
    Err(unsupported())
}

pub fn splice(_from: BorrowedFd<'_>, _to: BorrowedFd<'_>, _len: usize) -> io::Result<usize> {
    Err(unsupported())
}

pub fn reopen_fifo_nonblocking(_fd: RawFd) -> Option<OwnedFd> {
    None
}

pub fn is_cgroup2_mount(_dir: &Path) -> bool {
    false
}

pub fn file_with(_bytes: &[u8]) -> io::Result<OwnedFd> {
    Err(unsupported())
}

pub fn open_tty() -> io::Result<File> {
    Err(unsupported())
}

pub fn read_own_head(_path: &Path, _max: usize) -> Option<Vec<u8>> {
    None
}

pub fn seen(_file: &File) -> io::Result<crate::trust::Seen> {
    Err(unsupported())
}

pub fn may_write(_path: &Path) -> io::Result<()> {
    Err(unsupported())
}

pub fn is_null_device(_meta: &std::fs::Metadata) -> bool {
    false
}

pub fn is_dev_null(_file: &File) -> bool {
    false
}

pub fn is_fifo(_kind: &std::fs::FileType) -> bool {
    false
}

pub fn is_socket(_kind: &std::fs::FileType) -> bool {
    false
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
