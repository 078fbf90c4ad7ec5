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
/// the tree, then an exec of `exe` with `argv0 mode target pgid`, a fresh
/// process that ends the rest and removes the cgroup.
pub struct Orphaned {
    /// cgroup.kill of the tree's cgroup.
    pub kill: Option<CString>,
    pub exe: CString,
    pub argv0: CString,
    pub mode: CString,
    pub target: CString,
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

    /// The pipe's write end (a line to the waiter: `P<pgid>`, `D`).
    pub fn writer(&self) -> &File {
        &self.writer
    }

    fn tell(&mut self, line: &[u8]) {
        use std::io::Write;
        let _ = self.writer.write_all(line);
    }

    /// mcp-bound is done: tell it, reap it, free what it used.
    pub fn finish(mut self) {
        self.tell(b"D\n");
        wait_child(self.pid);
        // SAFETY: the waiter is reaped: nothing uses the plan or the
        // stack any more.
        unsafe {
            drop(Box::from_raw(self.plan));
            libc::munmap(self.stack, WAITER_STACK + GUARD);
        }
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
    let (mut pgid, mut kind, mut value, mut start) = (0i32, 0u8, 0i32, true);
    let mut buf = [0u8; 64];
    loop {
        // SAFETY: a read into a stack buffer of its length.
        let n = unsafe { libc::read(plan.read, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        for &b in buf.iter().take(n as usize) {
            if start {
                (kind, value, start) = (b, 0, false);
            } else if b == b'\n' {
                match kind {
                    // SAFETY: leaving; mcp-bound reaps us.
                    b'D' => unsafe { libc::_exit(0) },
                    b'P' => pgid = value,
                    _ => {}
                }
                start = true;
            } else if b.is_ascii_digit() {
                value = value.saturating_mul(10).saturating_add(i32::from(b - b'0'));
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

/// The loop's wait on Linux: epoll, whose cost per wait does not grow
/// with the descriptors watched (poll(2) puts an entry on each one's wait
/// queue and takes it off again, every turn). Level-triggered, so each
/// wait answers what poll(2) would for the same interests.
///
/// A registration belongs to an open file, but the loop names descriptors
/// by number, so: a descriptor that leaves the interests is removed, and if
/// that fails (it was closed, perhaps while another process still holds
/// the file) the whole set is rebuilt, never left to report for a number
/// that now names something else. A number closed and opened again within
/// one turn keeps its interest and cannot be seen from here: whoever opens
/// descriptors during the loop (a restart) calls `forget`.
pub struct Epoll {
    fd: OwnedFd,
    /// The interests `registered` was made from: most turns ask the same.
    last: Vec<Interest>,
    /// (descriptor, events) as registered now.
    registered: Vec<(RawFd, u32)>,
    /// This turn's interests, one per descriptor (a descriptor listed
    /// twice is registered once, for both).
    wanted: Vec<(RawFd, u32)>,
    /// Descriptors epoll refused as not open: reported as poll(2) reports
    /// POLLNVAL.
    closed: Vec<RawFd>,
    events: Vec<libc::epoll_event>,
    stale: bool,
}

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        Ok(Epoll {
            fd: epoll_create()?,
            last: Vec::new(),
            registered: Vec::new(),
            wanted: Vec::new(),
            closed: Vec::new(),
            events: Vec::new(),
            stale: false,
        })
    }

    /// Descriptors may have been closed and their numbers reused: start
    /// over at the next wait.
    pub fn forget(&mut self) {
        self.stale = true;
    }

    /// Wait for `interests`, which `watch` registered: `ready[i]`
    /// answers `interests[i]`. EINTR is not an error (nothing is ready).
    pub fn wait(
        &mut self,
        interests: &[Interest],
        ready: &mut Vec<Ready>,
        timeout_ms: libc::c_int,
    ) -> io::Result<()> {
        ready.clear();
        ready.resize(interests.len(), Ready::default());
        if !self.closed.is_empty() {
            for (slot, interest) in ready.iter_mut().zip(interests) {
                slot.error = self.closed.contains(&interest.fd);
            }
        }
        let timeout_ms = if self.closed.is_empty() {
            timeout_ms
        } else {
            0
        };
        self.events.resize(
            self.registered.len().max(1),
            libc::epoll_event { events: 0, u64: 0 },
        );
        // SAFETY: `events` is a valid buffer of as many entries as passed.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                timeout_ms,
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            return match err.kind() {
                io::ErrorKind::Interrupted => Ok(()),
                _ => Err(err),
            };
        }
        for event in &self.events[..n as usize] {
            let (fd, bits) = (event.u64 as RawFd, event.events);
            let on = |flag: libc::c_int| bits & flag as u32 != 0;
            for (slot, interest) in ready.iter_mut().zip(interests) {
                if interest.fd == fd {
                    *slot = Ready {
                        readable: interest.read && on(libc::EPOLLIN),
                        writable: interest.write && on(libc::EPOLLOUT),
                        hangup: on(libc::EPOLLHUP)
                            || (interest.peer_closed && on(libc::EPOLLRDHUP)),
                        error: on(libc::EPOLLERR),
                    };
                }
            }
        }
        Ok(())
    }

    /// Make the registrations match `interests`. Err: a descriptor epoll
    /// cannot watch (a regular file, /dev/null), or no new epoll
    /// descriptor; the caller uses poll(2) instead.
    pub fn watch(&mut self, interests: &[Interest]) -> io::Result<()> {
        if interests == self.last && !self.stale && self.closed.is_empty() {
            return Ok(());
        }
        self.last.clear();
        self.last.extend_from_slice(interests);
        self.wanted.clear();
        self.closed.clear();
        for interest in interests {
            let bits = epoll_bits(interest);
            match self.wanted.iter_mut().find(|(fd, _)| *fd == interest.fd) {
                Some((_, events)) => *events |= bits,
                None => self.wanted.push((interest.fd, bits)),
            }
        }
        if self.wanted == self.registered && !self.stale {
            return Ok(());
        }
        for i in 0..self.registered.len() {
            let fd = self.registered[i].0;
            if !self.wanted.iter().any(|(w, _)| *w == fd)
                && self.ctl(libc::EPOLL_CTL_DEL, fd, 0).is_err()
            {
                self.stale = true;
            }
        }
        if std::mem::take(&mut self.stale) {
            self.fd = epoll_create()?;
            self.registered.clear();
        }
        self.registered
            .retain(|(fd, _)| self.wanted.iter().any(|(w, _)| w == fd));
        for i in 0..self.wanted.len() {
            let (fd, bits) = self.wanted[i];
            let had = self.registered.iter().position(|(r, _)| *r == fd);
            let done = match had {
                Some(at) if self.registered[at].1 == bits => continue,
                Some(_) => self.ctl(libc::EPOLL_CTL_MOD, fd, bits),
                None => match self.ctl(libc::EPOLL_CTL_ADD, fd, bits) {
                    Err(err) if err.raw_os_error() == Some(libc::EEXIST) => {
                        self.ctl(libc::EPOLL_CTL_MOD, fd, bits)
                    }
                    other => other,
                },
            };
            match done {
                Ok(()) => match had {
                    Some(at) => self.registered[at].1 = bits,
                    None => self.registered.push((fd, bits)),
                },
                Err(err) if err.raw_os_error() == Some(libc::EBADF) => {
                    if let Some(at) = had {
                        self.registered.remove(at);
                    }
                    self.closed.push(fd);
                }
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, bits: u32) -> io::Result<()> {
        let mut event = libc::epoll_event {
            events: bits,
            u64: fd as u64,
        };
        // SAFETY: a valid epoll descriptor and event; DEL ignores the event.
        let rc = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut event) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

fn epoll_create() -> io::Result<OwnedFd> {
    // SAFETY: creates a descriptor that only we own.
    let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: just created, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// What poll(2) would be asked for, as epoll events (hang-up and error
/// come unasked in both).
fn epoll_bits(interest: &Interest) -> u32 {
    let mut bits = 0;
    if interest.read {
        bits |= libc::EPOLLIN as u32;
    }
    if interest.write {
        bits |= libc::EPOLLOUT as u32;
    }
    if interest.peer_closed {
        bits |= libc::EPOLLRDHUP as u32;
    }
    bits
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
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    fn read(fd: &impl AsRawFd) -> Interest {
        Interest::new(fd.as_raw_fd(), true, false)
    }

    /// What poll(2) and the Poller say of the same interests.
    fn both(poller: &mut Poller, interests: &[Interest]) -> (Vec<Ready>, Vec<Ready>) {
        let (mut polled, mut waited) = (Vec::new(), Vec::new());
        poll(interests, &mut polled, Some(Duration::ZERO)).unwrap();
        poller
            .wait(interests, &mut waited, Some(Duration::ZERO))
            .unwrap();
        (polled, waited)
    }

    /// Every state the loop meets, turn after turn as the interests
    /// change (descriptors leave, come back, change what is asked, appear
    /// twice): the Poller answers as poll(2) does.
    #[test]
    fn the_poller_answers_as_poll_does() {
        let (with_data, mut data_writer) = std::io::pipe().unwrap();
        data_writer.write_all(b"x").unwrap();
        let (empty, _empty_writer) = std::io::pipe().unwrap();
        let (hung_up, hung_up_writer) = std::io::pipe().unwrap();
        drop(hung_up_writer);
        let (no_reader, no_reader_writer) = std::io::pipe().unwrap();
        drop(no_reader);
        let (_room_reader, room) = std::io::pipe().unwrap();
        let (socket, peer) = UnixStream::pair().unwrap();
        peer.shutdown(std::net::Shutdown::Write).unwrap();
        let mut poller = Poller::new();
        // A number no test's thread can open meanwhile: never open.
        let closed: RawFd = 1 << 30;
        let watch = |fd: &dyn AsRawFd| Interest::new(fd.as_raw_fd(), false, false);
        let turns = [
            vec![
                read(&with_data),
                read(&empty),
                read(&hung_up),
                watch(&no_reader_writer),
                Interest::new(room.as_raw_fd(), false, true),
                Interest {
                    peer_closed: true,
                    ..read(&socket)
                },
            ],
            vec![read(&empty), watch(&room)],
            vec![read(&with_data), watch(&with_data), read(&hung_up)],
            vec![],
            vec![
                Interest::new(closed, true, false),
                read(&with_data),
                read(&socket),
            ],
            vec![read(&empty), read(&with_data)],
        ];
        for (turn, interests) in turns.iter().enumerate() {
            let (polled, waited) = both(&mut poller, interests);
            assert_eq!(waited, polled, "turn {turn}");
        }
        assert!(poller.epoll.is_some(), "pipes and sockets stay on epoll");
    }

    /// A number whose file another holder keeps open, given to another
    /// file: the Poller never answers for the old one, whether the number
    /// left the interests for a turn or was reused within one (then the
    /// loop says `forget`). dup2 moves each file onto the number at once:
    /// no other test's thread can take it in between.
    #[test]
    fn a_number_reused_never_answers_for_its_old_file() {
        let put = |file: &dyn AsRawFd, number: RawFd| {
            // SAFETY: replaces a number that `owner` below owns.
            assert_eq!(unsafe { libc::dup2(file.as_raw_fd(), number) }, number);
        };
        let mut poller = Poller::new();
        let (full, mut full_writer) = std::io::pipe().unwrap();
        full_writer.write_all(b"x").unwrap();
        let kept = full.try_clone().unwrap();
        let owner = OwnedFd::from(full);
        let number = owner.as_raw_fd();
        let ask = [Interest::new(number, true, false)];
        let (polled, waited) = both(&mut poller, &ask);
        assert!(polled[0].readable && waited[0].readable);
        // Given to another file, left out for a turn, given to an empty pipe.
        put(&File::open("/dev/null").unwrap(), number);
        both(&mut poller, &[]);
        let (empty, _empty_writer) = std::io::pipe().unwrap();
        put(&empty, number);
        let (polled, waited) = both(&mut poller, &ask);
        assert!(!polled[0].readable);
        assert_eq!(waited, polled, "the old file's data is not reported");
        // Given to a pipe with data within one turn (a restart's pipes).
        let (refilled, mut refill) = std::io::pipe().unwrap();
        refill.write_all(b"y").unwrap();
        put(&refilled, number);
        poller.forget();
        let (polled, waited) = both(&mut poller, &ask);
        assert!(polled[0].readable);
        assert_eq!(waited, polled, "the new file's data is reported");
        drop((owner, kept));
    }

    /// Regular files and /dev/null cannot be watched by epoll: from then
    /// on the Poller is poll(2), which says they are always ready.
    #[test]
    fn what_epoll_cannot_watch_is_polled() {
        let file = tempfile::tempfile().unwrap();
        let null = File::open("/dev/null").unwrap();
        for ready_always in [&file, &null] {
            let mut poller = Poller::new();
            let (polled, waited) = both(&mut poller, &[read(ready_always)]);
            assert!(polled[0].readable);
            assert_eq!(waited, polled);
            assert!(poller.epoll.is_none());
        }
    }

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
