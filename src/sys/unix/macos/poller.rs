//! The loop's wait on macOS: poll(2), and select(2) once poll(2) refuses
//! a descriptor it cannot watch (macOS's poll(2) answers POLLNVAL for a
//! device: a terminal on our stdin, `--approve tty`'s /dev/tty, a
//! /dev/null). Built portable on Linux, a terminal is refused here as
//! macOS refuses it, so the fallback runs in CI too.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use nix::libc;

use super::super::{Interest, Ready, is_open, poll_noting_refused};

/// poll(2) until it refuses a descriptor that is open; from then on, while
/// that descriptor is among the interests, select(2). `ready[i]` answers
/// `interests[i]` either way.
#[derive(Default)]
pub struct Poller {
    /// Descriptors poll(2) refused though open: waited on with select(2).
    devices: Vec<RawFd>,
    refused: Vec<usize>,
}

impl Poller {
    pub fn new() -> Poller {
        Poller::default()
    }

    pub fn wait(
        &mut self,
        interests: &[Interest],
        ready: &mut Vec<Ready>,
        timeout: Option<Duration>,
    ) -> io::Result<()> {
        if interests.iter().any(|i| self.devices.contains(&i.fd)) {
            return select(interests, ready, timeout);
        }
        poll_noting_refused(interests, ready, timeout, &mut self.refused, REFUSED_HERE)?;
        let before = self.devices.len();
        for &i in &self.refused {
            let fd = interests[i].fd;
            if is_open(fd) && !self.devices.contains(&fd) {
                self.devices.push(fd);
            }
        }
        if self.devices.len() == before {
            return Ok(());
        }
        // poll(2) answered at once: the wait is still to be done.
        select(interests, ready, timeout)
    }

    /// Descriptors were closed and others opened under the same numbers:
    /// ask poll(2) again.
    pub fn forget(&mut self) {
        self.devices.clear();
    }
}

/// What poll(2) is made to refuse here without asking: on macOS nothing
/// (its poll(2) says so itself).
#[cfg(target_os = "macos")]
const REFUSED_HERE: Option<fn(RawFd) -> bool> = None;

/// Built portable on Linux, whose poll(2) watches a terminal: refuse one
/// as macOS does, so that what follows is what runs there.
#[cfg(not(target_os = "macos"))]
const REFUSED_HERE: Option<fn(RawFd) -> bool> = Some(is_terminal);

#[cfg(not(target_os = "macos"))]
fn is_terminal(fd: RawFd) -> bool {
    // SAFETY: isatty on any number is harmless.
    unsafe { libc::isatty(fd) == 1 }
}

/// select(2) for the same interests. A descriptor not open is answered as
/// poll(2) answers it (an error, at once) rather than failing the whole
/// call. select(2) has no hang-up: an end of file is readable, and a
/// descriptor watched for hang-up only is not watched (a terminal that
/// goes away sends SIGHUP, which the signal pipe hears).
fn select(
    interests: &[Interest],
    ready: &mut Vec<Ready>,
    timeout: Option<Duration>,
) -> io::Result<()> {
    // SAFETY: fd_set is plain data; FD_ZERO initializes it.
    let (mut reads, mut writes) = unsafe {
        let mut sets: (libc::fd_set, libc::fd_set) = std::mem::zeroed();
        libc::FD_ZERO(&mut sets.0);
        libc::FD_ZERO(&mut sets.1);
        sets
    };
    let mut closed = false;
    let mut highest = -1;
    for interest in interests {
        if !is_open(interest.fd) {
            closed = true;
            continue;
        }
        if interest.fd >= libc::FD_SETSIZE as RawFd {
            return Err(io::Error::other(format!(
                "descriptor {} is past select(2)'s {}",
                interest.fd,
                libc::FD_SETSIZE
            )));
        }
        // SAFETY: a descriptor below FD_SETSIZE, an initialized set.
        unsafe {
            if interest.read {
                libc::FD_SET(interest.fd, &mut reads);
            }
            if interest.write {
                libc::FD_SET(interest.fd, &mut writes);
            }
        }
        highest = highest.max(interest.fd);
    }
    let wait = if closed {
        Some(Duration::ZERO)
    } else {
        timeout
    };
    let mut time = wait.map(|t| {
        // Rounded up to the microsecond: never wake just before a deadline.
        let micros = t.as_nanos().div_ceil(1000);
        libc::timeval {
            tv_sec: (micros / 1_000_000).min(i32::MAX as u128) as libc::time_t,
            tv_usec: (micros % 1_000_000) as libc::suseconds_t,
        }
    });
    let time_ptr = time
        .as_mut()
        .map_or(std::ptr::null_mut(), |t| t as *mut libc::timeval);
    // SAFETY: initialized sets and an optional timeval, all ours.
    let rc = unsafe {
        libc::select(
            highest + 1,
            &mut reads,
            &mut writes,
            std::ptr::null_mut(),
            time_ptr,
        )
    };
    let answered = rc >= 0;
    if !answered && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
        return Err(io::Error::last_os_error());
    }
    ready.clear();
    ready.extend(interests.iter().map(|interest| {
        if !is_open(interest.fd) {
            return Ready {
                error: true,
                ..Ready::default()
            };
        }
        // SAFETY: a descriptor below FD_SETSIZE (checked above).
        let (readable, writable) = unsafe {
            (
                answered && interest.read && libc::FD_ISSET(interest.fd, &reads),
                answered && interest.write && libc::FD_ISSET(interest.fd, &writes),
            )
        };
        Ready {
            readable,
            writable,
            ..Ready::default()
        }
    }));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    /// A terminal pair: (the side a program reads, the side that types).
    fn terminal() -> (std::fs::File, std::fs::File) {
        let pty = nix::pty::openpty(None, None).unwrap();
        (pty.slave.into(), pty.master.into())
    }

    /// A terminal among the interests: poll(2) refuses it (on macOS by
    /// itself, here as the portable build makes it), and the wait goes on
    /// with select(2), which hears the terminal and the pipes alike.
    #[test]
    fn a_terminal_poll_refuses_is_waited_on_with_select() {
        let (tty, mut typing) = terminal();
        let (pipe, mut pipe_writer) = std::io::pipe().unwrap();
        let ask = [
            Interest::new(tty.as_raw_fd(), true, false),
            Interest::new(pipe.as_raw_fd(), true, false),
        ];
        let mut poller = Poller::new();
        let mut ready = Vec::new();
        poller.wait(&ask, &mut ready, Some(Duration::ZERO)).unwrap();
        assert_eq!(poller.devices, [tty.as_raw_fd()], "the refusal is noted");
        assert_eq!(ready, [Ready::default(); 2], "nothing to read yet");
        typing.write_all(b"yes\n").unwrap();
        pipe_writer.write_all(b"x").unwrap();
        // A terminal hands over a line once it is complete: wait for it.
        poller
            .wait(&ask, &mut ready, Some(Duration::from_secs(10)))
            .unwrap();
        assert!(ready[0].readable || ready[1].readable);
        poller
            .wait(&ask, &mut ready, Some(Duration::from_secs(10)))
            .unwrap();
        assert!(ready[1].readable, "{ready:?}");
        poller.forget();
        assert!(poller.devices.is_empty());
    }

    /// A descriptor not open fails neither wait: it is an error, at once,
    /// as poll(2) says it.
    #[test]
    fn select_answers_a_closed_descriptor_as_poll_does() {
        let (tty, _typing) = terminal();
        // A number no test's thread can open meanwhile: never open.
        let closed: RawFd = 1 << 30;
        let ask = [
            Interest::new(tty.as_raw_fd(), true, false),
            Interest::new(closed, true, false),
        ];
        let mut poller = Poller::new();
        let mut ready = Vec::new();
        poller.wait(&ask, &mut ready, None).unwrap();
        assert!(ready[1].error);
        assert!(!ready[0].readable);
    }
}
