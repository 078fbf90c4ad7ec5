//! Waiting for readiness: poll(2), and the loop's `Poller`, which is
//! epoll on Linux and poll(2) elsewhere (or for what epoll cannot watch).
//! Signals arrive as readiness too, through `SignalPipe` (`mod.rs`).

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use nix::libc;

/// What the caller wants to hear about one descriptor. A descriptor with
/// neither flag set still reports hang-up and error, which is how a closed
/// reader of our stdout is noticed without writing to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interest {
    pub fd: RawFd,
    pub read: bool,
    pub write: bool,
    /// Also report the peer's end of writing as a hang-up: a socket shut
    /// down with SHUT_WR never reports POLLHUP, only POLLRDHUP (Linux).
    pub peer_closed: bool,
}

impl Interest {
    pub fn new(fd: RawFd, read: bool, write: bool) -> Interest {
        Interest {
            fd,
            read,
            write,
            peer_closed: false,
        }
    }
}

#[cfg(target_os = "linux")]
const PEER_CLOSED: libc::c_short = libc::POLLRDHUP;
#[cfg(not(target_os = "linux"))]
const PEER_CLOSED: libc::c_short = 0;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ready {
    pub readable: bool,
    pub writable: bool,
    pub hangup: bool,
    pub error: bool,
}

/// Wait for readiness or the timeout. The timeout is rounded *up* to whole
/// milliseconds so the loop never wakes just before a deadline and spins.
/// EINTR is not an error: the caller re-reads the clock and loops.
pub fn poll(
    interests: &[Interest],
    ready: &mut Vec<Ready>,
    timeout: Option<Duration>,
) -> io::Result<()> {
    // The loop watches at most a handful: no allocation per turn.
    const ON_STACK: usize = 16;
    let empty = libc::pollfd {
        fd: -1,
        events: 0,
        revents: 0,
    };
    let mut stack = [empty; ON_STACK];
    let mut heap = Vec::new();
    let fds: &mut [libc::pollfd] = if interests.len() <= ON_STACK {
        &mut stack[..interests.len()]
    } else {
        heap.resize(interests.len(), empty);
        &mut heap
    };
    for (fd, interest) in fds.iter_mut().zip(interests) {
        *fd = libc::pollfd {
            fd: interest.fd,
            events: (if interest.read { libc::POLLIN } else { 0 })
                | (if interest.write { libc::POLLOUT } else { 0 })
                | (if interest.peer_closed { PEER_CLOSED } else { 0 }),
            revents: 0,
        };
    }
    let timeout_ms = timeout_ms(timeout);
    ready.clear();
    // SAFETY: `fds` is a valid, exclusively borrowed array of pollfd.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
        fds.iter_mut().for_each(|fd| fd.revents = 0);
    }
    ready.extend(fds.iter().map(|fd| Ready {
        readable: fd.revents & libc::POLLIN != 0,
        writable: fd.revents & libc::POLLOUT != 0,
        hangup: fd.revents & (libc::POLLHUP | PEER_CLOSED) != 0,
        error: fd.revents & (libc::POLLERR | libc::POLLNVAL) != 0,
    }));
    Ok(())
}

/// A timeout in whole milliseconds, rounded up; -1 for none.
fn timeout_ms(timeout: Option<Duration>) -> libc::c_int {
    match timeout {
        None => -1,
        Some(t) => {
            let ms = t.as_nanos().div_ceil(1_000_000);
            libc::c_int::try_from(ms).unwrap_or(libc::c_int::MAX)
        }
    }
}

/// The main loop's wait: epoll on Linux (see `linux.rs`: its cost does
/// not grow with the descriptors watched), poll(2) elsewhere, and poll(2)
/// from the first descriptor epoll cannot watch (our stdin a regular file
/// or /dev/null) on. Either way `ready[i]` answers `interests[i]`, as
/// `poll` does.
pub struct Poller {
    #[cfg(target_os = "linux")]
    epoll: Option<epoll::Epoll>,
}

impl Poller {
    pub fn new() -> Poller {
        Poller {
            #[cfg(target_os = "linux")]
            epoll: epoll::Epoll::new().ok(),
        }
    }

    pub fn wait(
        &mut self,
        interests: &[Interest],
        ready: &mut Vec<Ready>,
        timeout: Option<Duration>,
    ) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        if let Some(epoll) = self.epoll.as_mut() {
            if epoll.watch(interests).is_ok() {
                return epoll.wait(interests, ready, timeout_ms(timeout));
            }
            self.epoll = None;
        }
        poll(interests, ready, timeout)
    }

    /// Descriptors were closed and others opened under the same numbers
    /// (a restarted server's pipes): what was registered is forgotten.
    pub fn forget(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(epoll) = self.epoll.as_mut() {
            epoll.forget();
        }
    }
}

impl Default for Poller {
    fn default() -> Poller {
        Poller::new()
    }
}

/// The one bounded wait outside the main loop: poll `interests` until
/// `deadline`. TimedOut (without polling) once the deadline has passed, so
/// a caller's loop needs no clock arithmetic of its own.
pub fn poll_until(
    interests: &[Interest],
    ready: &mut Vec<Ready>,
    deadline: std::time::Instant,
) -> io::Result<()> {
    let now = std::time::Instant::now();
    if now >= deadline {
        return Err(io::Error::from(io::ErrorKind::TimedOut));
    }
    poll(interests, ready, Some(deadline - now))
}

#[cfg(target_os = "linux")]
mod epoll {
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

    use nix::libc;

    use super::{Interest, Ready};

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
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::io::Write;
    use std::os::fd::{AsRawFd, OwnedFd};
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
}
