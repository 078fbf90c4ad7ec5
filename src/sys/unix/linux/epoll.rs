//! The loop's wait on Linux: epoll, and poll(2) from the first
//! descriptor epoll cannot watch on.

use std::io;
use std::time::Duration;

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use nix::libc;

use super::super::{Interest, Ready, poll, timeout_ms};

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
pub(crate) struct Epoll {
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
    pub(crate) fn new() -> io::Result<Epoll> {
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
    pub(crate) fn forget(&mut self) {
        self.stale = true;
    }

    /// Wait for `interests`, which `watch` registered: `ready[i]`
    /// answers `interests[i]`. EINTR is not an error (nothing is ready).
    pub(crate) fn wait(
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
    pub(crate) fn watch(&mut self, interests: &[Interest]) -> io::Result<()> {
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

/// The main loop's wait: epoll (its cost does not grow with the
/// descriptors watched), and poll(2)
/// from the first descriptor epoll cannot watch (our stdin a regular file
/// or /dev/null) on. Either way `ready[i]` answers `interests[i]`, as
/// `poll` does.
pub struct Poller {
    pub(in crate::sys) epoll: Option<Epoll>,
}

impl Poller {
    pub fn new() -> Poller {
        Poller {
            epoll: Epoll::new().ok(),
        }
    }

    pub fn wait(
        &mut self,
        interests: &[Interest],
        ready: &mut Vec<Ready>,
        timeout: Option<Duration>,
    ) -> io::Result<()> {
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
