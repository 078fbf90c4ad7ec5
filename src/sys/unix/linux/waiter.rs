//! The waiter: a watchdog that costs almost nothing to start and to end
//! (Linux only: clone with CLONE_VM). What it reads of the watchdog's
//! protocol, it reads with [`WaiterReading`], which allocates nothing.

use super::super::*;
use crate::sys::Orphaned;

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
pub(super) struct Waiter {
    pid: i32,
    writer: File,
    plan: *mut Plan,
    stack: *mut libc::c_void,
}

const WAITER_STACK: usize = 64 << 10;
const GUARD: usize = 4096;

impl Waiter {
    /// Start it: it execs `orphaned` once we are gone.
    pub(super) fn start(orphaned: Orphaned) -> io::Result<Box<dyn crate::sys::Watcher>> {
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
        Ok(Box::new(Waiter {
            pid,
            writer,
            plan,
            stack,
        }))
    }
}

impl crate::sys::Watcher for Waiter {
    fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// The pipe's write end (the watchdog's protocol: the waiter reads
    /// `P<pgid>` and `D`).
    fn writer(&self) -> &File {
        &self.writer
    }

    /// It only ends the tree.
    fn speaks(&self) -> bool {
        false
    }

    /// It is told each group's number.
    fn hand(&self) -> Option<io::Result<Box<dyn crate::sys::Hand>>> {
        None
    }

    /// mcp-bound is done: tell it so (`done`, the protocol's `D` line),
    /// reap it, free what it used.
    fn finish(mut self: Box<Self>, done: &[u8]) {
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
pub(crate) enum WaiterHeard {
    Group(i32),
    Done,
}

/// The waiter's reading of the protocol, a byte at a time, with no
/// allocation (it may run after mcp-bound died in malloc). A test holds it
/// to the protocol's decoder (`contain::said`) on every message.
#[derive(Debug, Default)]
pub(crate) struct WaiterReading {
    kind: u8,
    value: i32,
    in_line: bool,
}

impl WaiterReading {
    /// One byte; what a line that ends with it said, if it was `P` or `D`.
    pub(crate) fn feed(&mut self, b: u8) -> Option<WaiterHeard> {
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
            super::super::process::environment(),
        );
        libc::_exit(1)
    }
}
