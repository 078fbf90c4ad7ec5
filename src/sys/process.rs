//! Process calls: rlimits, usage, fork and the watchdog's detach, the
//! helper's cgroup entry, signals to processes, and waiting for children.

use std::io;
use std::os::fd::RawFd;

use nix::libc;

use super::os;

fn rlimit_resource(resource: crate::rlimit::Resource) -> libc::c_int {
    use crate::rlimit::Resource;
    (match resource {
        Resource::As => libc::RLIMIT_AS,
        Resource::Core => libc::RLIMIT_CORE,
        Resource::Cpu => libc::RLIMIT_CPU,
        Resource::Data => libc::RLIMIT_DATA,
        Resource::Fsize => libc::RLIMIT_FSIZE,
        Resource::Nofile => libc::RLIMIT_NOFILE,
        Resource::Nproc => libc::RLIMIT_NPROC,
        Resource::Stack => libc::RLIMIT_STACK,
    }) as libc::c_int
}

fn rlim(value: Option<u64>) -> libc::rlim_t {
    value.map_or(libc::RLIM_INFINITY, |v| v as libc::rlim_t)
}

/// In the forked child, before exec: set one limit. Async-signal-safe
/// (one system call, no allocation).
pub fn set_rlimit(limit: &crate::rlimit::Rlimit) -> io::Result<()> {
    let value = libc::rlimit {
        rlim_cur: rlim(limit.soft),
        rlim_max: rlim(limit.hard),
    };
    // SAFETY: a valid rlimit structure.
    #[allow(clippy::useless_conversion)]
    let rc = unsafe { libc::setrlimit(rlimit_resource(limit.resource) as _, &value) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Our own hard limit for `resource` (None: unlimited).
pub fn hard_rlimit(resource: crate::rlimit::Resource) -> Option<u64> {
    let mut value = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid, writable rlimit structure.
    #[allow(clippy::useless_conversion)]
    let rc = unsafe { libc::getrlimit(rlimit_resource(resource) as _, &mut value) };
    (rc == 0 && value.rlim_max != libc::RLIM_INFINITY).then_some(value.rlim_max)
}

/// Whether limits may be raised (root; CAP_SYS_RESOURCE is not asked).
pub fn privileged() -> bool {
    nix::unistd::geteuid().is_root()
}

/// CPU and peak memory of every child reaped so far (the helper's whole
/// tree, since mcp-bound reaps every descendant as subreaper).
pub fn children_usage() -> Option<(std::time::Duration, std::time::Duration, u64)> {
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
    // Linux reports ru_maxrss in KiB.
    Some((
        time(usage.ru_utime),
        time(usage.ru_stime),
        usage.ru_maxrss as u64,
    ))
}

/// fork(2): `Ok(None)` in the child, `Ok(Some(pid))` in the parent.
/// mcp-bound has no threads, so the child may run ordinary code.
pub fn fork_process() -> io::Result<Option<i32>> {
    // SAFETY: a single-threaded process; the child only runs our code and
    // exits with `exit_now`.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(None),
        pid => Ok(Some(pid)),
    }
}

/// In a forked watchdog: a session of its own (no terminal's signals),
/// the signals that end a session ignored, every descriptor but `keep`
/// closed, and 0, 1, 2 on /dev/null (so it never holds the host's pipes).
pub fn detach(keep: RawFd) {
    // SAFETY: plain system calls on descriptors this process owns.
    unsafe {
        libc::setsid();
        for signo in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGPIPE,
        ] {
            libc::signal(signo, libc::SIG_IGN);
        }
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        for fd in 0..3 {
            if null >= 0 && null != fd {
                libc::dup2(null, fd);
            }
        }
        if null > 2 {
            libc::close(null);
        }
    }
    os::close_all_from_3_but(keep);
}

/// In the forked helper, before exec: move itself into the cgroup whose
/// `cgroup.procs` is `procs`. Async-signal-safe: open, write, close.
pub fn join_cgroup(procs: &std::ffi::CStr) -> io::Result<()> {
    // SAFETY: a valid C string and buffer.
    unsafe {
        let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, c"0".as_ptr().cast(), 1);
        let err = io::Error::last_os_error();
        libc::close(fd);
        if written != 1 {
            return Err(err);
        }
    }
    Ok(())
}

/// Wait for a child of ours (the watchdog) to exit.
pub fn wait_child(pid: i32) {
    let mut status = 0;
    // SAFETY: waitpid on our own child.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
        && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
    {}
}

pub fn current_uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

pub fn hostname() -> Option<String> {
    nix::unistd::gethostname()
        .ok()
        .map(|name| name.to_string_lossy().into_owned())
}

/// Send `signo` to `target` (a negative target is a process group), by
/// number: nix's `Signal` has no real-time signals, and `-s RTMIN+1` must
/// go out as GNU timeout sends it. False if nothing was signalled.
pub fn send_signal(target: i32, signo: i32) -> bool {
    // SAFETY: kill(2) with plain integers.
    signo > 0 && unsafe { libc::kill(target, signo) } == 0
}

/// How a child ended, as waitid(2) reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildExit {
    Code(i32),
    Signal { signo: i32, core_dumped: bool },
}

/// Has child `pid` exited? It stays a zombie (WNOWAIT), so its pid (and
/// its process group id) cannot be reused while we still signal it.
/// `block`: wait for it. Read through libc: nix's `WaitStatus` cannot hold
/// a death by a real-time signal.
pub fn wait_exit(pid: i32, block: bool) -> Option<ChildExit> {
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
        libc::CLD_EXITED => Some(ChildExit::Code(status)),
        libc::CLD_KILLED => Some(ChildExit::Signal {
            signo: status,
            core_dumped: false,
        }),
        libc::CLD_DUMPED => Some(ChildExit::Signal {
            signo: status,
            core_dumped: true,
        }),
        _ => None,
    }
}

/// Reap child `pid` if it has exited; never waits.
pub fn reap(pid: i32) {
    let _ = nix::sys::wait::waitpid(
        nix::unistd::Pid::from_raw(pid),
        Some(nix::sys::wait::WaitPidFlag::WNOHANG),
    );
}
