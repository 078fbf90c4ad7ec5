//! The ids mcp-bound answered itself (a request that timed out): the
//! server's late response for one of them is dropped, so a client never
//! gets two responses for one id. Bounded: past `cap` ids the oldest is
//! forgotten (its late response, if it ever comes, passes as unmatched).

use std::collections::{HashSet, VecDeque};

pub(crate) struct Answered {
    order: VecDeque<String>,
    keys: HashSet<String>,
    cap: usize,
}

impl Answered {
    pub(super) fn new(cap: usize) -> Answered {
        Answered {
            order: VecDeque::new(),
            keys: HashSet::new(),
            cap: cap.max(1),
        }
    }

    pub(super) fn insert(&mut self, key: String) {
        if self.order.len() >= self.cap
            && let Some(old) = self.order.pop_front()
        {
            self.keys.remove(&old);
        }
        if self.keys.insert(key.clone()) {
            self.order.push_back(key);
        }
    }

    /// True (once) if `key` was answered here.
    pub(super) fn take(&mut self, key: &str) -> bool {
        if !self.keys.remove(key) {
            return false;
        }
        self.order.retain(|k| k != key);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_id_is_taken_once_and_the_oldest_are_forgotten_past_the_cap() {
        let mut answered = Answered::new(2);
        for key in ["a", "b", "c"] {
            answered.insert(key.into());
        }
        assert!(!answered.take("a"), "forgotten past the cap");
        assert!(answered.take("b"));
        assert!(!answered.take("b"), "once");
        assert!(answered.take("c"));
    }
}
