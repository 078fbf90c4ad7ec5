//! The helper's process tree as the loop signals it: every sweep goes to
//! the helper's group and to each live descendant outside it (`child`),
//! and what was signalled is remembered for the record.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::contain::Family;
use crate::record::{EventKind, SignalReason};
use crate::signals::{self, Signal};

pub(crate) struct Tree {
    pub family: Family,
    /// Every descendant any sweep found (their count is recorded).
    descendants: HashSet<i32>,
    /// Descendants were signalled while they held the helper's pipes.
    pub signalled_holders: bool,
    /// Descendants earlier incarnations signalled (a restarted server).
    pub earlier: u32,
    /// KILL went through the cgroup's cgroup.kill (this incarnation or an
    /// earlier one). Linux 6.18 then kills at birth every process cloned
    /// into that cgroup (CLONE_INTO_CGROUP; a kill_seq mismatch), while
    /// one that writes itself into cgroup.procs lives: a restart must join
    /// it that way.
    pub cgroup_killed: bool,
    /// The most of this user's processes one sweep's scan for the tree's
    /// mark could not read (this incarnation or an earlier one); None
    /// where no sweep scanned for the mark.
    pub unreadable: Option<u32>,
    /// When to look for leftovers again (no subreaper).
    pub recheck: Recheck,
}

/// Without a subreaper an escape's death wakes nobody here (its SIGCHLD
/// goes to init or launchd): while the loop waits for leftovers to end,
/// it looks again after 10 ms, the wait doubling up to a quarter second.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Recheck {
    at: Option<Instant>,
    step: Duration,
}

impl Recheck {
    const FIRST: Duration = Duration::from_millis(10);
    const MOST: Duration = Duration::from_millis(250);

    /// Leftovers were still there at `now`: look again later.
    pub(super) fn after(&mut self, now: Instant) {
        self.step = match self.step.is_zero() {
            true => Self::FIRST,
            false => (self.step * 2).min(Self::MOST),
        };
        self.at = Some(now + self.step);
    }

    pub(super) fn at(&self) -> Option<Instant> {
        self.at
    }
}

impl Tree {
    pub(super) fn new(family: Family) -> Tree {
        Tree {
            family,
            descendants: HashSet::new(),
            signalled_holders: false,
            earlier: 0,
            cgroup_killed: false,
            unreadable: None,
            recheck: Recheck::default(),
        }
    }

    /// Send `signal` to the group and every descendant, for `reason`; the
    /// events to record. `holders` when the helper has exited and a pipe is
    /// still open: whoever is signalled then is holding it.
    pub(super) fn signal(
        &mut self,
        signal: Signal,
        reason: SignalReason,
        holders: bool,
    ) -> Vec<EventKind> {
        let before = self.descendants.len();
        let sweep = self.family.sweep(signal, &mut self.descendants);
        self.cgroup_killed |= sweep.cgroup_killed();
        self.unreadable = self.unreadable.max(sweep.unreadable);
        let name = signals::name(signal);
        // Each target reached, with how many signals went to it.
        let events: Vec<EventKind> = sweep
            .sent
            .into_iter()
            .filter(|(_, count)| *count > 0)
            .map(|(reached, count)| EventKind::SignalSent {
                signal: name.clone(),
                target: reached.into(),
                count,
                reason,
            })
            .collect();
        if holders && (!events.is_empty() || self.descendants.len() > before) {
            self.signalled_holders = true;
        }
        events
    }

    /// Something forked that no sweep has seen yet.
    pub(super) fn has_new_descendants(&self) -> bool {
        self.family
            .live_descendants()
            .processes
            .iter()
            .any(|p| !self.descendants.contains(&p.pid))
    }

    pub(super) fn descendants_signalled(&self) -> u32 {
        self.earlier + self.descendants.len() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftovers_are_looked_at_again_sooner_first_then_at_most_four_times_a_second() {
        let t0 = Instant::now();
        let mut recheck = Recheck::default();
        assert_eq!(recheck.at(), None);
        let waits: Vec<u128> = (0..8)
            .map(|_| {
                recheck.after(t0);
                (recheck.at().unwrap() - t0).as_millis()
            })
            .collect();
        assert_eq!(waits, [10, 20, 40, 80, 160, 250, 250, 250]);
    }
}
