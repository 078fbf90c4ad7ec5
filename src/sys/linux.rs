//! The Linux-only calls: clone3 into a cgroup, the waiter (a watchdog
//! that shares our memory), the subreaper, the parent-death signal, pipe
//! sizes, splice and the private pipe of the flood path, FIFO re-open, and
//! the null device check. What /proc says is in `procfs.rs`.

use super::*;

/// Close every descriptor from 3 on but `keep`: two close_range calls
/// (Linux 5.9), not one close per possible descriptor.
pub fn close_all_from_3_but(keep: RawFd) {
    // SAFETY: closing descriptors of this (forked, single-threaded) process.
    unsafe {
        if keep > 3 {
            libc::close_range(3, (keep - 1) as libc::c_uint, 0);
        }
        libc::close_range((keep + 1).max(3) as libc::c_uint, libc::c_uint::MAX, 0);
    }
}

/// clone3(2)'s arguments (linux/sched.h), as far as CLONE_INTO_CGROUP.
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// fork(2), but born in the cgroup whose directory is `dir` (Linux 5.7):
/// `Ok(None)` in the child. Err where clone3 is missing or refused (a
/// seccomp filter, an older kernel): the caller forks and moves instead.
pub fn clone_into_cgroup(dir: BorrowedFd<'_>) -> io::Result<Option<i32>> {
    let args = CloneArgs {
        flags: CLONE_INTO_CGROUP,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: dir.as_raw_fd() as u64,
        ..CloneArgs::default()
    };
    // SAFETY: a fork-like clone (no CLONE_VM, no new stack) of a process
    // without threads: the child continues on a copy of this stack, as
    // after fork(2), and only makes system calls before exec.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    match rc {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(None),
        pid => Ok(Some(pid as i32)),
    }
}

/// Whether `dir` is where a cgroup v2 hierarchy is mounted: one statfs,
/// where reading /proc/self/mountinfo costs the kernel a walk of every
/// mount.
pub fn is_cgroup2_mount(dir: &Path) -> bool {
    const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
    let Ok(path) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs fills the zeroed structure it is given.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and a writable statfs.
    unsafe { libc::statfs(path.as_ptr(), &mut fs) == 0 && fs.f_type as i64 == CGROUP2_SUPER_MAGIC }
}

/// What a waiter does once mcp-bound is gone, made before it starts and
/// never changed after (it shares mcp-bound's memory): a first strike at
/// the tree, then an exec of `exe` with `argv0 mode target pgid mark`, a fresh
/// process that ends the rest and removes the cgroup.
pub struct Orphaned {
    /// cgroup.kill of the tree's cgroup.
    pub kill: Option<CString>,
    pub exe: CString,
    pub argv0: CString,
    pub mode: CString,
    pub target: CString,
    /// The call's mark, last (the approvers carry it).
    pub mark: CString,
}

/// What the waiter holds: the plan and the read end of the pipe only
/// mcp-bound writes to.
struct Plan {
    orphaned: Orphaned,
    read: RawFd,
}

/// A watchdog that costs almost nothing to start and to end: a process
/// that shares mcp-bound's memory (clone with CLONE_VM: no copy of the
/// address space, no copy-on-write faults after it), runs on a stack of
/// its own with every signal blocked, and only reads a pipe. It touches
/// nothing of mcp-bound's but what [`Orphaned`] holds, and only after
/// mcp-bound is gone, when nothing else runs in that memory. For a
/// watchdog that also writes last words (which needs a heap of its own),
/// fork.
pub struct Waiter {
    pub pid: i32,
    writer: File,
    plan: *mut Plan,
    stack: *mut libc::c_void,
}

const WAITER_STACK: usize = 64 << 10;
const GUARD: usize = 4096;

impl Waiter {
    pub fn start(orphaned: Orphaned) -> io::Result<Waiter> {
        let (reader, writer) = pipe_cloexec()?;
        let plan = Plan {
            orphaned,
            read: reader.as_raw_fd(),
        };
        // SAFETY: a fresh private mapping; its lowest page becomes a guard.
        let stack = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                WAITER_STACK + GUARD,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if stack == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let plan = Box::into_raw(Box::new(plan));
        // SAFETY: the guard page is inside the mapping just made; the
        // stack's top is its end (16-byte aligned). Every signal is
        // blocked across the clone so the waiter starts with all of them
        // blocked (none of our handlers may run in it), and ours are
        // restored at once. `plan` and the stack live until `finish`
        // has reaped the waiter.
        let pid = unsafe {
            libc::mprotect(stack, GUARD, libc::PROT_NONE);
            let top = stack
                .cast::<u8>()
                .add(WAITER_STACK + GUARD)
                .cast::<libc::c_void>();
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::sigprocmask(libc::SIG_SETMASK, &all, &mut old);
            let pid = libc::clone(
                waiter_main,
                top,
                libc::CLONE_VM | libc::SIGCHLD,
                plan.cast(),
            );
            let err = io::Error::last_os_error();
            libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            if pid < 0 {
                drop(Box::from_raw(plan));
                libc::munmap(stack, WAITER_STACK + GUARD);
                return Err(err);
            }
            pid
        };
        drop(reader);
        Ok(Waiter {
            pid,
            writer,
            plan,
            stack,
        })
    }

    /// The pipe's write end (the watchdog's protocol: the waiter reads
    /// `P<pgid>` and `D`).
    pub fn writer(&self) -> &File {
        &self.writer
    }

    /// mcp-bound is done: tell it so (`done`, the protocol's `D` line),
    /// reap it, free what it used.
    pub fn finish(mut self, done: &[u8]) {
        use std::io::Write;
        let _ = self.writer.write_all(done);
        wait_child(self.pid);
        // SAFETY: the waiter is reaped: nothing uses the plan or the
        // stack any more.
        unsafe {
            drop(Box::from_raw(self.plan));
            libc::munmap(self.stack, WAITER_STACK + GUARD);
        }
    }
}

/// What the waiter hears in the watchdog's protocol: the helper's group
/// (`P<pgid>`) and "done" (`D`); every other line is passed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaiterHeard {
    Group(i32),
    Done,
}

/// The waiter's reading of the protocol, a byte at a time, with no
/// allocation (it may run after mcp-bound died in malloc). A test holds it
/// to the protocol's decoder (`contain::said`) on every message.
#[derive(Debug, Default)]
pub struct WaiterReading {
    kind: u8,
    value: i32,
    in_line: bool,
}

impl WaiterReading {
    /// One byte; what a line that ends with it said, if it was `P` or `D`.
    pub fn feed(&mut self, b: u8) -> Option<WaiterHeard> {
        if !self.in_line {
            (self.kind, self.value, self.in_line) = (b, 0, b != b'\n');
            return None;
        }
        if b == b'\n' {
            self.in_line = false;
            return match self.kind {
                b'D' => Some(WaiterHeard::Done),
                b'P' => Some(WaiterHeard::Group(self.value)),
                _ => None,
            };
        }
        if b.is_ascii_digit() {
            self.value = self
                .value
                .saturating_mul(10)
                .saturating_add(i32::from(b - b'0'));
        }
        None
    }
}

/// The waiter itself. Only system calls, on its own stack and on `plan`;
/// it never allocates, never panics and never touches thread-locals but
/// errno, which a call here sets only on failure, and the calls before
/// mcp-bound's death (setsid in a fresh process, close_range, a read with
/// every signal blocked) do not fail.
extern "C" fn waiter_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the plan `Waiter::start` keeps alive.
    let plan = unsafe { &*arg.cast::<Plan>() };
    // SAFETY: this process's own session and descriptors (its table is
    // a copy: CLONE_FILES is not set).
    unsafe {
        libc::setsid();
        if plan.read > 0 {
            libc::close_range(0, (plan.read - 1) as libc::c_uint, 0);
        }
        libc::close_range((plan.read + 1) as libc::c_uint, libc::c_uint::MAX, 0);
    }
    let mut pgid = 0i32;
    let mut reading = WaiterReading::default();
    let mut buf = [0u8; 64];
    loop {
        // SAFETY: a read into a stack buffer of its length.
        let n = unsafe { libc::read(plan.read, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        for &b in buf.iter().take(n as usize) {
            match reading.feed(b) {
                // SAFETY: leaving; mcp-bound reaps us.
                Some(WaiterHeard::Done) => unsafe { libc::_exit(0) },
                Some(WaiterHeard::Group(group)) => pgid = group,
                None => {}
            }
        }
    }
    // mcp-bound is gone. The first strike, then a fresh process for the
    // rest: this one may not allocate (mcp-bound may have died in malloc).
    let mut digits = [0u8; 12];
    let mut at = digits.len() - 1;
    let mut rest = pgid.max(0);
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 || at == 0 {
            break;
        }
    }
    // SAFETY: C strings from the plan and the stack, a null-terminated
    // argv; execve returns only on failure.
    unsafe {
        let orphaned = &plan.orphaned;
        if let Some(kill) = &orphaned.kill {
            let fd = libc::open(kill.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd >= 0 {
                libc::write(fd, c"1".as_ptr().cast(), 1);
                libc::close(fd);
            }
        }
        if pgid > 1 {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let argv = [
            orphaned.argv0.as_ptr(),
            orphaned.mode.as_ptr(),
            orphaned.target.as_ptr(),
            digits[at..].as_ptr().cast(),
            orphaned.mark.as_ptr(),
            std::ptr::null(),
        ];
        libc::execve(
            orphaned.exe.as_ptr(),
            argv.as_ptr(),
            super::process::environment(),
        );
        libc::_exit(1)
    }
}

/// Orphaned descendants re-parent to us instead of init, so a helper
/// that double-forks or calls setsid stays reachable.
pub fn become_subreaper() -> io::Result<()> {
    nix::sys::prctl::set_child_subreaper(true)?;
    Ok(())
}

/// In the forked child, before exec: die with the supervisor.
/// Async-signal-safe: prctl, getppid and kill only.
pub fn die_with_parent(parent: i32) -> io::Result<()> {
    // SAFETY: plain system calls without memory arguments.
    unsafe {
        if libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        // The parent may have died before prctl took effect.
        if libc::getppid() != parent {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
    Ok(())
}

/// A second, non-blocking open file description of the FIFO on `fd`,
/// through /proc. O_NONBLOCK on it affects no one else, so we can write
/// large chunks without ever blocking. None if the re-open fails.
pub fn reopen_fifo_nonblocking(fd: RawFd) -> Option<OwnedFd> {
    let path = CString::new(format!("/proc/self/fd/{fd}")).ok()?;
    // SAFETY: valid C string.
    let new = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_WRONLY | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    // SAFETY: a fresh descriptor we own.
    (new >= 0).then(|| unsafe { OwnedFd::from_raw_fd(new) })
}

/// Larger pipe buffers mean fewer wake-ups per megabyte. Best effort:
/// an unprivileged process is capped by /proc/sys/fs/pipe-max-size.
pub fn grow_pipe(fd: BorrowedFd<'_>, bytes: i32) {
    let _ = fcntl(fd, FcntlArg::F_SETPIPE_SZ(bytes));
}

/// The null device's number here: (1, 3).
pub fn null_device() -> Option<u64> {
    Some(libc::makedev(1, 3))
}

/// A pipe of our own, both ends non-blocking and close-on-exec, grown
/// towards `bytes` (best effort). Returns (read end, write end, the
/// capacity granted).
pub fn private_pipe(bytes: i32) -> io::Result<(OwnedFd, OwnedFd, usize)> {
    let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)?;
    grow_pipe(write.as_fd(), bytes);
    let capacity = fcntl(write.as_fd(), FcntlArg::F_GETPIPE_SZ)?;
    Ok((read, write, capacity as usize))
}

/// Move up to `len` bytes from one pipe to another (or a pipe to
/// /dev/null) inside the kernel: pipe pages change hands, nothing is
/// copied. Never blocks: an empty source or a full destination is
/// `WouldBlock`.
pub fn splice(from: BorrowedFd<'_>, to: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
    // SAFETY: two descriptors we hold; no offsets (both are pipes or
    // /dev/null).
    let moved = unsafe {
        libc::splice(
            from.as_raw_fd(),
            std::ptr::null_mut(),
            to.as_raw_fd(),
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
        )
    };
    if moved < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(moved as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_null_device_is_dev_null() {
        let null = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .unwrap();
        assert!(is_dev_null(&null));
        let zero = File::open("/dev/zero").unwrap();
        assert!(!is_dev_null(&zero), "a character device, but not (1,3)");
        let plain = tempfile::tempfile().unwrap();
        assert!(!is_dev_null(&plain), "a regular file");
    }

    #[test]
    fn small_files_are_read_whole_at_and_past_the_buffer() {
        let dir = tempfile::tempdir().unwrap();
        for size in [0, 1, 4095, 4096, 4097, 8192, 20_000] {
            let text: String = (0..size).map(|i| (b'a' + (i % 26) as u8) as char).collect();
            let path = dir.path().join(format!("f{size}"));
            std::fs::write(&path, &text).unwrap();
            assert_eq!(read_small(&path).unwrap(), text, "{size} bytes");
        }
        let missing = read_small(Path::new("/nonexistent/file")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }
}
