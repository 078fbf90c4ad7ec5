//! Process calls: starting the helper (fork or clone3, exec), rlimits,
//! fork and the watchdog's detach, the helper's cgroup entry, and signals
//! to processes. Waiting for children and what they used is `wait.rs`.

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, RawFd};

use crate::sys::{Setup, Signal};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

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
pub(super) fn set_rlimit(limit: &crate::rlimit::Rlimit) -> io::Result<()> {
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
pub(super) fn hard_rlimit(resource: crate::rlimit::Resource) -> Option<u64> {
    let mut value = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid, writable rlimit structure.
    #[allow(clippy::useless_conversion)]
    let rc = unsafe { libc::getrlimit(rlimit_resource(resource) as _, &mut value) };
    (rc == 0 && value.rlim_max != libc::RLIM_INFINITY).then_some(value.rlim_max)
}

/// Whether this process may set `limit`. Raising a hard limit takes
/// CAP_SYS_RESOURCE (in the user namespace that owns the machine), which
/// neither the uid nor a container's root says: so it is tried, in a child
/// that exits at once (only asked when a hard limit would be raised).
pub(super) fn may_set_rlimit(limit: &crate::rlimit::Rlimit) -> bool {
    match fork_process() {
        Ok(None) => super::exit_now(if set_rlimit(limit).is_ok() { 0 } else { 1 }),
        Ok(Some(pid)) => {
            let mut status = 0;
            // SAFETY: waitpid on our own child.
            while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
                && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
            {}
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
        }
        Err(_) => nix::unistd::geteuid().is_root(),
    }
}

/// fork(2): `Ok(None)` in the child, `Ok(Some(pid))` in the parent.
/// mcp-bound has no threads, so the child may run ordinary code.
pub(super) fn fork_process() -> io::Result<Option<i32>> {
    // SAFETY: a single-threaded process; the child only runs our code and
    // exits with `exit_now`.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(None),
        pid => Ok(Some(pid)),
    }
}

/// Ignore the signals that end a session (INT, TERM, HUP, QUIT) and
/// PIPE: a watchdog outlives the terminal and the host.
pub fn ignore_session_ends() {
    for signo in [
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGPIPE,
    ] {
        // SAFETY: SIG_IGN installs no code.
        unsafe { libc::signal(signo, libc::SIG_IGN) };
    }
}

/// In a forked watchdog: a session of its own (no terminal's signals),
/// the signals that end a session ignored, every descriptor but `keep`
/// closed, and 0, 1, 2 on /dev/null (so it never holds the host's pipes).
pub(super) fn detach(keep: RawFd) {
    // SAFETY: plain system calls on descriptors this process owns.
    ignore_session_ends();
    unsafe {
        libc::setsid();
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

unsafe extern "C" {
    /// The C library's environment, which execvp hands to the program.
    static mut environ: *const *const libc::c_char;
}

/// Our environment as the C library holds it (for the waiter's execve).
#[cfg(all(target_os = "linux", not(mcp_bound_portable)))]
pub(super) fn environment() -> *const *const libc::c_char {
    // SAFETY: reading the pointer; mcp-bound never changes its environment.
    unsafe { environ }
}

/// Unblock every signal (a process started with all of them blocked).
pub fn unblock_all_signals() {
    // SAFETY: an initialized, empty signal set.
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    }
}

/// A program, its arguments and its environment as C strings, made
/// before the fork: between fork and exec the child only makes system
/// calls on them and allocates nothing.
pub struct Exec {
    _strings: Vec<CString>,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
}

fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "an argument or variable holds a NUL byte",
        )
    })
}

impl Exec {
    /// `argv[0]` is looked up in PATH as execvp does. The environment is
    /// ours, with `extra` (`NAME`, value) set.
    pub fn new(argv: &[OsString], extra: Option<(&str, &str)>) -> io::Result<Exec> {
        let mut strings = Vec::new();
        for arg in argv {
            strings.push(c_string(arg.as_bytes())?);
        }
        let args = strings.len();
        for (name, value) in std::env::vars_os() {
            if extra.is_some_and(|(extra, _)| name.as_bytes() == extra.as_bytes()) {
                continue;
            }
            let mut entry = name.into_vec();
            entry.push(b'=');
            entry.extend_from_slice(value.as_bytes());
            strings.push(c_string(&entry)?);
        }
        if let Some((name, value)) = extra {
            strings.push(c_string(format!("{name}={value}").as_bytes())?);
        }
        let pointers = |range: &[CString]| {
            range
                .iter()
                .map(|s| s.as_ptr())
                .chain([std::ptr::null()])
                .collect::<Vec<_>>()
        };
        Ok(Exec {
            argv: pointers(&strings[..args]),
            envp: pointers(&strings[args..]),
            _strings: strings,
        })
    }
}

/// How the helper got into its cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// No cgroup asked for.
    None,
    /// Born there: clone3 with CLONE_INTO_CGROUP (Linux 5.7). No
    /// migration, so none of the RCU grace period a write to
    /// `cgroup.procs` waits for (several milliseconds on an idle system).
    Born,
    /// Forked, then wrote itself into `cgroup.procs` before exec (clone3
    /// refused, as a seccomp filter may do).
    Moved,
}

/// Start a program: fork (or clone3 into its cgroup), set the child up,
/// exec. Returns its pid once the exec succeeded; the errno of the step
/// that failed otherwise, with the child reaped.
pub fn spawn(exec: &Exec, setup: &Setup<'_>) -> io::Result<(i32, Entry)> {
    if setup.job_limits != Default::default() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "a Job Object's limits: Unix holds them in a cgroup",
        ));
    }
    let (report_read, report_write) = super::pipe_cloexec()?;
    let forked = match setup.cgroup {
        Some(_) if setup.move_into_cgroup => fork_process().map(|forked| (forked, Entry::Moved)),
        Some((dir, _)) => match os::BORN_IN_CGROUP.map(|clone| clone(dir)) {
            Some(Ok(forked)) => Ok((forked, Entry::Born)),
            _ => fork_process().map(|forked| (forked, Entry::Moved)),
        },
        None => fork_process().map(|forked| (forked, Entry::None)),
    };
    let (pid, entry) = match forked? {
        (None, entry) => {
            let err = child_steps(exec, setup, entry == Entry::Moved);
            let errno = err.raw_os_error().unwrap_or(libc::EINVAL).to_ne_bytes();
            // SAFETY: writing a stack buffer to our pipe, then leaving.
            unsafe {
                libc::write(report_write.as_raw_fd(), errno.as_ptr().cast(), errno.len());
                libc::_exit(127)
            }
        }
        (Some(pid), entry) => (pid, entry),
    };
    drop(report_write);
    let mut errno = [0u8; 4];
    let mut got = 0;
    while got < errno.len() {
        match super::read_blocking(report_read.as_raw_fd(), &mut errno[got..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    if got == 0 {
        return Ok((pid, entry));
    }
    super::wait::wait_child(pid);
    Err(io::Error::from_raw_os_error(i32::from_ne_bytes(errno)))
}

/// In the child: every step before exec, then exec. Returns only on
/// failure, with the error of the step that failed. Async-signal-safe:
/// system calls on what `Exec` and `Setup` hold, no allocation.
fn child_steps(exec: &Exec, setup: &Setup<'_>, join: bool) -> io::Error {
    let step = |rc: libc::c_int| {
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    };
    let steps = || -> io::Result<()> {
        if let (true, Some((_, procs))) = (join, setup.cgroup) {
            join_cgroup(procs)?;
        }
        for (target, fd) in setup.stdio.iter().enumerate() {
            if let Some(fd) = fd {
                // SAFETY: dup2 onto 0, 1 or 2; the copy is not close-on-exec.
                step(unsafe { libc::dup2(fd.as_raw_fd(), target as libc::c_int) })?;
            }
        }
        // SAFETY: plain system calls on this process; the signal set is
        // a valid, initialized local.
        unsafe {
            step(libc::setpgid(0, 0))?;
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            step(libc::sigprocmask(
                libc::SIG_SETMASK,
                &none,
                std::ptr::null_mut(),
            ))?;
            // We ignore SIGPIPE; the program starts with it as the default.
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
        if let Some(parent) = setup.die_with {
            let die_with = os::PARENT_DEATH.ok_or(io::ErrorKind::Unsupported)?;
            die_with(parent)?;
        }
        for limit in setup.rlimits {
            set_rlimit(limit)?;
        }
        // SAFETY: both arrays end with a null pointer and live in `exec`,
        // which outlives this call; execvp returns only on failure.
        unsafe {
            environ = exec.envp.as_ptr();
            libc::execvp(exec.argv[0], exec.argv.as_ptr());
        }
        Err(io::Error::last_os_error())
    };
    match steps() {
        Ok(()) => io::Error::from_raw_os_error(libc::EINVAL),
        Err(err) => err,
    }
}

/// In the forked helper, before exec: move itself into the cgroup whose
/// `cgroup.procs` is `procs`. Async-signal-safe: open, write, close.
fn join_cgroup(procs: &std::ffi::CStr) -> io::Result<()> {
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

pub fn current_uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

pub fn hostname() -> Option<String> {
    nix::unistd::gethostname()
        .ok()
        .map(|name| name.to_string_lossy().into_owned())
}

/// Signals that ask mcp-bound to stop; they cancel the helper.
pub const TERMINATING: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];
pub const SIGKILL: Signal = Signal(libc::SIGKILL);
pub const SIGTERM: Signal = Signal(libc::SIGTERM);
/// What continues a stopped process, sent after a polite stop.
pub const CONTINUE: Option<Signal> = Some(Signal(libc::SIGCONT));

/// The name (`SIGTERM`) of a signal this system has by that number,
/// real-time ones aside.
pub fn signal_name(signal: Signal) -> Option<&'static str> {
    nix::sys::signal::Signal::try_from(signal.0)
        .ok()
        .map(|s| s.as_str())
}

/// A signal by its name (`SIGTERM`), real-time ones aside.
pub fn signal_number(name: &str) -> Option<Signal> {
    name.parse::<nix::sys::signal::Signal>()
        .ok()
        .map(|s| Signal(s as i32))
}

/// The signal of this number, if this system has one: a named one, or a
/// real-time one.
pub fn signal_of(number: i32) -> Option<Signal> {
    let named = nix::sys::signal::Signal::try_from(number).is_ok();
    (named || super::real_time_signals().contains(&number)).then_some(Signal(number))
}

/// Send `signal` to `target` (a negative target is a process group), by
/// number: nix's `Signal` has no real-time signals, and `-s RTMIN+1` must
/// go out as GNU timeout sends it. False if nothing was signalled.
pub fn send_signal(target: i32, signal: Signal) -> bool {
    // SAFETY: kill(2) with plain integers.
    signal.0 > 0 && unsafe { libc::kill(target, signal.0) } == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::AsFd;

    fn exec(argv: &[&str]) -> Exec {
        let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
        Exec::new(&argv, Some(("MCP_BOUND_SPAWN_TEST", "yes"))).unwrap()
    }

    fn setup() -> Setup<'static> {
        Setup {
            stdio: [None, None, None],
            die_with: super::super::BACKEND
                .parent_death_signal
                .then(|| std::process::id() as i32),
            rlimits: &[],
            cgroup: None,
            move_into_cgroup: false,
            job_limits: Default::default(),
        }
    }

    #[test]
    fn the_error_of_the_failed_step_comes_back() {
        let err = spawn(&exec(&["/nonexistent/program"]), &setup()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        let plain = std::env::temp_dir().join(format!("mcp-bound-plain-{}", std::process::id()));
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        let err = spawn(&exec(&[plain.to_str().unwrap()]), &setup()).unwrap_err();
        std::fs::remove_file(&plain).unwrap();
        assert_eq!(err.raw_os_error(), Some(libc::EACCES));
    }

    #[test]
    fn stdout_is_the_given_pipe_and_the_extra_variable_is_set() {
        let (mut ours, theirs) = crate::sys::pipe_cloexec().unwrap();
        let mut setup = setup();
        setup.stdio[1] = Some(theirs.as_fd());
        let exec = exec(&["sh", "-c", "printf %s \"$MCP_BOUND_SPAWN_TEST\""]);
        let (pid, entry) = spawn(&exec, &setup).unwrap();
        drop(theirs);
        let mut out = String::new();
        ours.read_to_string(&mut out).unwrap();
        super::super::wait::wait_child(pid);
        assert_eq!((out.as_str(), entry), ("yes", Entry::None));
    }

    /// Where clone3 refuses the directory (here: not a cgroup at all), the
    /// child is forked and writes itself into `cgroup.procs` before exec.
    #[test]
    fn a_refused_clone3_falls_back_to_moving_through_cgroup_procs() {
        let dir = std::env::temp_dir().join(format!("mcp-bound-spawn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let procs_path = dir.join("cgroup.procs");
        std::fs::write(&procs_path, "").unwrap();
        let dir_fd = std::fs::File::open(&dir).unwrap();
        let procs = CString::new(procs_path.to_str().unwrap()).unwrap();
        let mut setup = setup();
        setup.cgroup = Some((dir_fd.as_fd(), procs.as_c_str()));
        let (pid, entry) = spawn(&exec(&["true"]), &setup).unwrap();
        super::super::wait::wait_child(pid);
        let written = std::fs::read_to_string(&procs_path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!((entry, written.as_str()), (Entry::Moved, "0"));
    }
}
