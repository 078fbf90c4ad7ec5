//! Stand-ins where the system is not Linux: no subreaper, no parent-death
//! signal, no /proc (descendants outside the group cannot be found), no
//! splice (the flood path reads). mcp-bound compiles there and says less.
//! No libc here: what must touch the system goes through `sys`.

use super::*;

pub fn close_all_from_3_but(keep: RawFd) {
    for fd in 3..1024 {
        if fd != keep {
            close_raw(fd);
        }
    }
}
pub fn clone_into_cgroup(_dir: BorrowedFd<'_>) -> io::Result<Option<i32>> {
    Err(io::ErrorKind::Unsupported.into())
}
/// What a waiter would do once mcp-bound is gone (see linux.rs).
pub struct Orphaned {
    pub kill: Option<std::ffi::CString>,
    pub exe: std::ffi::CString,
    pub argv0: std::ffi::CString,
    pub mode: std::ffi::CString,
    pub target: std::ffi::CString,
    pub mark: std::ffi::CString,
}
/// No waiter here: the watchdog is forked (none is ever made).
pub struct Waiter {
    pub pid: i32,
    never: std::convert::Infallible,
}
impl Waiter {
    pub fn start(_plan: Orphaned) -> io::Result<Waiter> {
        Err(io::ErrorKind::Unsupported.into())
    }
    pub fn writer(&self) -> &std::fs::File {
        match self.never {}
    }
    pub fn finish(self, _done: &[u8]) {}
}
pub fn is_cgroup2_mount(_dir: &Path) -> bool {
    false
}
pub fn pids_with_env(_entry: &[u8]) -> Vec<i32> {
    Vec::new()
}
pub fn become_subreaper() -> io::Result<()> {
    Ok(())
}
pub fn die_with_parent(_parent: i32) -> io::Result<()> {
    Ok(())
}
pub fn proc_info(_pid: i32) -> Option<ProcInfo> {
    None
}
pub fn descendants(_root: i32, _skip: &dyn Fn(&ProcInfo) -> bool) -> Vec<ProcInfo> {
    Vec::new()
}
pub fn children_of_self() -> Vec<i32> {
    Vec::new()
}
pub fn reopen_fifo_nonblocking(_fd: RawFd) -> Option<OwnedFd> {
    None
}
pub fn grow_pipe(_fd: BorrowedFd<'_>, _bytes: i32) {}
pub fn private_pipe(_bytes: i32) -> io::Result<(OwnedFd, OwnedFd, usize)> {
    Err(io::ErrorKind::Unsupported.into())
}
/// Not known for sure here: the flood path then reads, and our stdout
/// treats /dev/null like any character device.
pub fn null_device() -> Option<u64> {
    None
}
pub fn splice(_from: BorrowedFd<'_>, _to: BorrowedFd<'_>, _len: usize) -> io::Result<usize> {
    Err(io::ErrorKind::Unsupported.into())
}
