//! Waiting for children: an exit observed without reaping (waitid with
//! WNOWAIT), reaping with what the child used (wait4), and the CPU of
//! every child reaped so far.

use std::io;

use nix::libc;

use super::ChildExit;
use crate::sys::Signal;

/// Has child `pid` exited? It stays a zombie (WNOWAIT), so its pid (and
/// its process group id) cannot be reused while we still signal it.
/// `block`: wait for it. Read through libc: nix's `WaitStatus` cannot hold
/// a death by a real-time signal.
pub fn wait_exit(pid: i32, block: bool) -> Option<ChildExit> {
    // macOS's waitid returns for a stop too, WEXITED or not (Go's os
    // package stopped using it there for that): wait for the exit itself
    // (kqueue's NOTE_EXIT, which reaps nothing), then ask without waiting.
    #[cfg(target_os = "macos")]
    if block {
        super::os::await_exit_event(pid);
        return waitid_nowait(pid, false);
    }
    waitid_nowait(pid, block)
}

fn waitid_nowait(pid: i32, block: bool) -> Option<ChildExit> {
    // SAFETY: siginfo_t is plain data; waitid fills it or leaves it zeroed.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOWAIT | if block { 0 } else { libc::WNOHANG };
    let rc = loop {
        // SAFETY: a valid pointer to our own siginfo_t.
        let rc = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
        if rc != 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        break rc;
    };
    // SAFETY: si_pid and si_status are valid for SIGCHLD-style siginfo.
    let (from, status) = unsafe { (info.si_pid(), info.si_status()) };
    if rc != 0 || from == 0 {
        return None;
    }
    match info.si_code {
        libc::CLD_EXITED => Some(ChildExit::Code(status as u32)),
        libc::CLD_KILLED => Some(ChildExit::Signal {
            signal: Signal(status),
            core_dumped: false,
        }),
        libc::CLD_DUMPED => Some(ChildExit::Signal {
            signal: Signal(status),
            core_dumped: true,
        }),
        _ => None,
    }
}

/// Reap child `pid` if it has exited, with the CPU (user, system) it
/// and its reaped descendants used; never waits. None: not reaped.
pub fn reap_with_usage(pid: i32) -> Option<(std::time::Duration, std::time::Duration)> {
    // SAFETY: rusage is plain data that wait4 fills.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut status = 0;
    // SAFETY: our own child, valid pointers.
    let rc = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
    let time = |t: libc::timeval| {
        std::time::Duration::new(t.tv_sec as u64, (t.tv_usec as u32).saturating_mul(1000))
    };
    (rc == pid).then(|| (time(usage.ru_utime), time(usage.ru_stime)))
}

/// Reap child `pid` if it has exited, its peak memory (and that of what
/// it reaped) counted into [`reaped_peak_kib`]; never waits.
pub fn reap(pid: i32) {
    use std::sync::atomic::Ordering::Relaxed;
    // SAFETY: rusage is plain data that wait4 fills.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut status = 0;
    // SAFETY: our own child, valid pointers.
    if unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) } == pid {
        REAPED_PEAK_KIB.fetch_max(maxrss_kib(&usage), Relaxed);
        REAPED_ANY.store(true, Relaxed);
    }
}

/// Wait for a child of ours (the watchdog) to exit.
pub fn wait_child(pid: i32) {
    let mut status = 0;
    // SAFETY: waitpid on our own child.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
        && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
    {}
}

/// CPU of every child reaped so far (the helper's whole tree, since
/// mcp-bound reaps every descendant as subreaper). Its peak memory is not
/// read here: getrusage(RUSAGE_CHILDREN)'s survives exec, so a process
/// that reaped a large child and then exec'd mcp-bound would hand that
/// peak to the helper; [`reaped_peak_kib`] is the tree's own.
pub fn children_cpu() -> Option<(std::time::Duration, std::time::Duration)> {
    // SAFETY: getrusage fills the structure it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid, writable rusage structure.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
        return None;
    }
    let time = |t: libc::timeval| {
        std::time::Duration::from_secs(t.tv_sec as u64)
            + std::time::Duration::from_micros(t.tv_usec as u64)
    };
    Some((time(usage.ru_utime), time(usage.ru_stime)))
}

/// The largest resident set, in KiB, of any process [`reap`] reaped,
/// with what each had reaped itself (wait4's rusage): the helper's tree,
/// approvers apart. A fact of this process, kept where its reaping is.
static REAPED_PEAK_KIB: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static REAPED_ANY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The peak of what [`reap`] reaped, KiB; None when it reaped nothing.
pub fn reaped_peak_kib() -> Option<u64> {
    use std::sync::atomic::Ordering::Relaxed;
    REAPED_ANY
        .load(Relaxed)
        .then(|| REAPED_PEAK_KIB.load(Relaxed))
}

/// `ru_maxrss` in KiB: Linux reports KiB, macOS bytes.
fn maxrss_kib(usage: &libc::rusage) -> u64 {
    let raw = usage.ru_maxrss.max(0) as u64;
    if cfg!(target_os = "macos") {
        raw / 1024
    } else {
        raw
    }
}
