//! Waiting for readiness with poll(2), as every Unix backend can; the
//! loop's `Poller` is the backend's (epoll on Linux, poll(2) with a
//! select(2) fallback for a terminal on macOS), held here to poll(2)'s
//! answers by a test. Signals arrive as readiness too, through
//! `SignalPipe` (`mod.rs`).

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use super::{Interest, Ready};

use nix::libc;

#[cfg(target_os = "linux")]
const PEER_CLOSED: libc::c_short = libc::POLLRDHUP;
#[cfg(not(target_os = "linux"))]
const PEER_CLOSED: libc::c_short = 0;

/// Wait for readiness or the timeout. The timeout is rounded *up* to whole
/// milliseconds so the loop never wakes just before a deadline and spins.
/// EINTR is not an error: the caller re-reads the clock and loops.
pub fn poll(
    interests: &[Interest],
    ready: &mut Vec<Ready>,
    timeout: Option<Duration>,
) -> io::Result<()> {
    poll_noting_refused(interests, ready, timeout, &mut Vec::new(), None)
}

/// As [`poll`], and the indices of the interests poll(2) answered with
/// POLLNVAL in `refused` (a descriptor not open, or one poll(2) cannot
/// watch: a device, on macOS). `refuse` names descriptors to answer so
/// without asking the system: how a portable build on Linux meets what
/// macOS's poll(2) does with a terminal. They are reported at once, as
/// poll(2) reports them.
pub(super) fn poll_noting_refused(
    interests: &[Interest],
    ready: &mut Vec<Ready>,
    timeout: Option<Duration>,
    refused: &mut Vec<usize>,
    refuse: Option<fn(RawFd) -> bool>,
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
    let mut injected = false;
    for (fd, interest) in fds.iter_mut().zip(interests) {
        let refuse = refuse.is_some_and(|refuse| refuse(interest.fd));
        injected |= refuse;
        *fd = libc::pollfd {
            // A negative descriptor is skipped by poll(2).
            fd: if refuse { -1 } else { interest.fd },
            events: (if interest.read { libc::POLLIN } else { 0 })
                | (if interest.write { libc::POLLOUT } else { 0 })
                | (if interest.peer_closed { PEER_CLOSED } else { 0 }),
            revents: 0,
        };
    }
    let timeout_ms = if injected { 0 } else { timeout_ms(timeout) };
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
    if injected {
        for fd in fds.iter_mut().filter(|fd| fd.fd < 0) {
            fd.revents = libc::POLLNVAL;
        }
    }
    refused.clear();
    refused.extend((0..fds.len()).filter(|i| fds[*i].revents & libc::POLLNVAL != 0));
    ready.extend(fds.iter().map(|fd| Ready {
        readable: fd.revents & libc::POLLIN != 0,
        writable: fd.revents & libc::POLLOUT != 0,
        hangup: fd.revents & (libc::POLLHUP | PEER_CLOSED) != 0,
        error: fd.revents & (libc::POLLERR | libc::POLLNVAL) != 0,
    }));
    Ok(())
}

/// A timeout in whole milliseconds, rounded up; -1 for none.
pub(super) fn timeout_ms(timeout: Option<Duration>) -> libc::c_int {
    match timeout {
        None => -1,
        Some(t) => {
            let ms = t.as_nanos().div_ceil(1_000_000);
            libc::c_int::try_from(ms).unwrap_or(libc::c_int::MAX)
        }
    }
}

/// What `interests` are ready for now, without waiting, as the backend
/// asks (on macOS, select(2) for a terminal poll(2) refuses).
pub fn ready_now(interests: &[Interest], ready: &mut Vec<Ready>) -> io::Result<()> {
    super::os::wait_once(interests, ready, Some(Duration::ZERO))
}

/// The one bounded wait outside the main loop: wait for `interests`
/// until `deadline`, as the backend waits (on macOS, select(2) for a
/// terminal poll(2) refuses). TimedOut (without waiting) once the
/// deadline has passed, so a caller's loop needs no clock arithmetic of
/// its own.
pub fn poll_until(
    interests: &[Interest],
    ready: &mut Vec<Ready>,
    deadline: std::time::Instant,
) -> io::Result<()> {
    let now = std::time::Instant::now();
    if now >= deadline {
        return Err(io::Error::from(io::ErrorKind::TimedOut));
    }
    super::os::wait_once(interests, ready, Some(deadline - now))
}

/// Wait up to `timeout` for standard output's reader to go away: true
/// once it has (a pipe whose reader closed, a hung-up terminal or
/// socket). Asked with POLLRDBAND, which an output is never ready for,
/// so that only POLLERR or POLLHUP answer; macOS answers so for a
/// widowed pipe only when some event is asked. An output poll(2) cannot
/// watch (POLLNVAL: a terminal on macOS) is slept beside, and never said
/// gone: its going is then seen at the next write, as EPIPE.
pub fn wait_for_output_gone(timeout: Duration) -> bool {
    let mut fd = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: libc::POLLRDBAND,
        revents: 0,
    };
    let start = std::time::Instant::now();
    // SAFETY: one valid, exclusively borrowed pollfd.
    let rc = unsafe { libc::poll(&mut fd, 1, timeout_ms(Some(timeout))) };
    if rc > 0 && fd.revents & libc::POLLNVAL != 0 {
        std::thread::sleep(timeout.saturating_sub(start.elapsed()));
        return false;
    }
    rc > 0 && fd.revents & (libc::POLLERR | libc::POLLHUP) != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::Poller;
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
        #[cfg(all(target_os = "linux", not(mcp_bound_portable)))]
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
    #[cfg(all(target_os = "linux", not(mcp_bound_portable)))]
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
