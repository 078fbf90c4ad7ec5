//! What one turn of the loop waits for: the interest set, with where
//! each part's descriptor sits in it (`Slots`), and the next instant
//! anything is due (`next_wake`), which bounds the wait.

use crate::sys::fd::{AsRawFd, RawFd};
use std::time::Instant;

use super::Loop;
use super::live_out::LiveOutput;
use crate::sys::Interest;

/// The interest set of one turn, and where each part's slot is.
#[derive(Default)]
pub(super) struct Slots {
    pub(super) stderr: Option<usize>,
    pub(super) signals: usize,
    pub(super) stdout: Option<usize>,
    pub(super) sink: Option<usize>,
    pub(super) live: Option<usize>,
    pub(super) stdin: Option<usize>,
    /// The session layer: our stdin read, the server's stdin written.
    pub(super) client: Option<usize>,
    pub(super) server_in: Option<usize>,
    /// Per-call approvers' pipes: (slot, approver, pipe).
    pub(super) approvers: Vec<(usize, usize, usize)>,
}

fn push(interests: &mut Vec<Interest>, interest: Interest) -> usize {
    interests.push(interest);
    interests.len() - 1
}

impl Loop<'_> {
    pub(super) fn next_wake(&self) -> Option<Instant> {
        let live = self.intake.live.as_ref().and_then(LiveOutput::wake_at);
        let request = self.session.as_ref().and_then(|s| s.table.deadline());
        let restart = self
            .session
            .as_ref()
            .and_then(|s| s.restarter.as_ref())
            .and_then(|r| r.wake_at());
        // Lines wait for the stderr log: write more before sleeping.
        let log = self.intake.log_pending().then(Instant::now);
        let journal = self
            .session
            .as_ref()
            .and_then(|s| s.held.as_ref())
            .map(|held| held.retry_at);
        // Only while after_exit runs each turn, which sets it again.
        let leftovers = (self.term.helper_exited() && !self.streams_open())
            .then(|| self.tree.recheck.at())
            .flatten();
        [
            self.term.deadline(),
            live,
            request,
            restart,
            log,
            journal,
            leftovers,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// What to wait for this turn. Streams before the signal pipe: where
    /// the wait is poll(2) (not Linux, or a descriptor epoll refuses),
    /// once it meets a ready descriptor it stops putting wait-queue
    /// entries on the ones after it, so during a flood one call costs one
    /// look at each (less CPU for a stderr flood: bench/results.md).
    pub(super) fn interests(&self, interests: &mut Vec<Interest>) -> Slots {
        interests.clear();
        let read = |fd: RawFd| Interest::new(fd, true, false);
        Slots {
            stderr: self
                .stderr
                .read_interest()
                .map(|fd| push(interests, read(fd))),
            signals: push(interests, read(self.signals.fd().as_raw_fd())),
            stdout: self
                .stdout
                .read_interest()
                .map(|fd| push(interests, read(fd))),
            sink: self
                .stdout
                .sink_interest()
                .map(|(fd, write)| push(interests, Interest::new(fd, false, write))),
            live: self
                .intake
                .live
                .as_ref()
                .and_then(LiveOutput::write_interest)
                .map(|fd| push(interests, Interest::new(fd, false, true))),
            // Our stdin is watched for hang-up without being read (the
            // helper reads it). A socket the host shut down for writing
            // reports only POLLRDHUP: that is a hang-up too.
            stdin: self.watch_stdin.then(|| {
                push(
                    interests,
                    Interest {
                        peer_closed: true,
                        ..Interest::new(crate::sys::std_fd(0), false, false)
                    },
                )
            }),
            client: self
                .client_interest()
                .map(|interest| push(interests, interest)),
            server_in: self
                .session
                .as_ref()
                .and_then(|s| s.stdin.write_interest())
                .map(|fd| push(interests, Interest::new(fd, false, true))),
            approvers: self
                .session
                .as_ref()
                .and_then(|s| s.approvers.as_ref())
                .map(|a| {
                    a.interests()
                        .into_iter()
                        .map(|(fd, i, p)| (push(interests, read(fd)), i, p))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}
