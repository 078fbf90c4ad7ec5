//! When a server that went away is started again, pure: the mode
//! (`--restart never|on-failure|always`), at most `--max-restarts` within
//! `--restart-window`, and a backoff that doubles with each restart in
//! the window. Never after the host ended the session: the loop asks only
//! when the server went away on its own.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::record::mcp::{NoRestart, RestartMode};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RestartPolicy {
    pub mode: RestartMode,
    pub max_restarts: u32,
    pub window: Duration,
    /// The first backoff; each restart in the window doubles it.
    pub backoff: Duration,
    pub max_backoff: Duration,
}

pub(crate) struct Restarts {
    policy: RestartPolicy,
    /// When each restart within the window happened (oldest first).
    recent: VecDeque<Instant>,
}

impl Restarts {
    pub(crate) fn new(policy: RestartPolicy) -> Restarts {
        Restarts {
            policy,
            recent: VecDeque::new(),
        }
    }

    /// The server went away on its own at `now` (`failed`: not exit 0):
    /// how long to wait before starting it again, or why not.
    pub(crate) fn after_exit(&mut self, now: Instant, failed: bool) -> Result<Duration, NoRestart> {
        match self.policy.mode {
            RestartMode::Never => return Err(NoRestart::Never),
            RestartMode::OnFailure if !failed => return Err(NoRestart::CleanExit),
            RestartMode::OnFailure | RestartMode::Always => {}
        }
        while let Some(first) = self.recent.front() {
            if now.saturating_duration_since(*first) >= self.policy.window {
                self.recent.pop_front();
            } else {
                break;
            }
        }
        if self.recent.len() >= self.policy.max_restarts as usize {
            return Err(NoRestart::Limit);
        }
        let doublings = self.recent.len().min(16) as u32;
        let backoff = self
            .policy
            .backoff
            .saturating_mul(1 << doublings)
            .min(self.policy.max_backoff);
        self.recent.push_back(now);
        Ok(backoff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(mode: RestartMode) -> RestartPolicy {
        RestartPolicy {
            mode,
            max_restarts: 3,
            window: Duration::from_secs(60),
            backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(300),
        }
    }

    #[test]
    fn the_mode_decides_which_exits_restart() {
        let t0 = Instant::now();
        let mut never = Restarts::new(policy(RestartMode::Never));
        assert_eq!(never.after_exit(t0, true), Err(NoRestart::Never));
        let mut on_failure = Restarts::new(policy(RestartMode::OnFailure));
        assert_eq!(on_failure.after_exit(t0, false), Err(NoRestart::CleanExit));
        assert!(on_failure.after_exit(t0, true).is_ok());
        let mut always = Restarts::new(policy(RestartMode::Always));
        assert!(always.after_exit(t0, false).is_ok());
    }

    #[test]
    fn backoff_doubles_to_its_cap_and_the_limit_holds_within_the_window() {
        let t0 = Instant::now();
        let mut restarts = Restarts::new(policy(RestartMode::Always));
        let ms = |d: Result<Duration, NoRestart>| d.map(|d| d.as_millis());
        assert_eq!(ms(restarts.after_exit(t0, true)), Ok(100));
        assert_eq!(ms(restarts.after_exit(t0, true)), Ok(200));
        assert_eq!(ms(restarts.after_exit(t0, true)), Ok(300), "capped");
        assert_eq!(restarts.after_exit(t0, true), Err(NoRestart::Limit));
        // The window moves on: the oldest restarts no longer count.
        let later = t0 + Duration::from_secs(60);
        assert_eq!(ms(restarts.after_exit(later, true)), Ok(100));
    }
}
