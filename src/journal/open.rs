//! The requests open in a journal being read, for its readers (`log`,
//! `check`, `report`), pure. A client may reuse an id while a request
//! with it is in flight, and the journal then holds both: each request
//! journaled is kept until an answer or its call's end pairs with it, so
//! none is hidden by another that came after it.
//!
//! mcp-bound writes an answer it makes itself (the outcomes of
//! [`NOT_SENT`]: a refusal, a denial, an ask) right after its request, so
//! such an answer pairs with the latest request of its id; the server's
//! answer pairs with the earliest, the one mcp-bound's table tracked, and
//! so does a decision.

use std::borrow::Borrow;
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

use super::NOT_SENT;

/// Requests open, by key (a request id, or a call and a request id).
pub struct OpenRequests<K, T> {
    open: HashMap<K, VecDeque<T>>,
    len: usize,
}

impl<K, T> Default for OpenRequests<K, T> {
    fn default() -> OpenRequests<K, T> {
        OpenRequests {
            open: HashMap::new(),
            len: 0,
        }
    }
}

impl<K: Hash + Eq, T> OpenRequests<K, T> {
    /// How many are open.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A request journaled under `key`, after any open with it.
    pub fn insert(&mut self, key: K, value: T) {
        self.open.entry(key).or_default().push_back(value);
        self.len += 1;
    }

    /// The request a decision under `key` is about: the earliest open.
    pub fn first_mut<Q: Hash + Eq + ?Sized>(&mut self, key: &Q) -> Option<&mut T>
    where
        K: Borrow<Q>,
    {
        self.open.get_mut(key)?.front_mut()
    }

    /// The request an answer under `key` with `outcome` ends: the latest
    /// for an answer mcp-bound made at once, else the earliest.
    pub fn answered<Q: Hash + Eq + ?Sized>(&mut self, key: &Q, outcome: &str) -> Option<T>
    where
        K: Borrow<Q>,
    {
        let queue = self.open.get_mut(key)?;
        let value = match NOT_SENT.contains(&outcome) {
            true => queue.pop_back(),
            false => queue.pop_front(),
        }?;
        if queue.is_empty() {
            self.open.remove(key);
        }
        self.len -= 1;
        Some(value)
    }

    /// Every request open whose key `ends` says, taken out.
    pub fn take_where(&mut self, mut ends: impl FnMut(&K) -> bool) -> Vec<T> {
        let mut taken = Vec::new();
        self.open.retain(|key, queue| {
            let keep = !ends(key);
            if !keep {
                taken.extend(queue.drain(..));
            }
            keep
        });
        self.len -= taken.len();
        taken
    }

    /// Every request still open.
    pub fn into_values(self) -> impl Iterator<Item = T> {
        self.open.into_values().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_id_keeps_both_and_each_answer_finds_its_own() {
        let mut open: OpenRequests<&str, &str> = OpenRequests::default();
        open.insert("1", "rm");
        open.insert("1", "read_file");
        assert_eq!(open.len(), 2);
        assert_eq!(open.first_mut(&"1").map(|t| *t), Some("rm"));
        // The server's answer: the one the table tracked, the first.
        assert_eq!(open.answered(&"1", "result"), Some("rm"));
        assert_eq!(open.into_values().collect::<Vec<_>>(), ["read_file"]);

        let mut open: OpenRequests<&str, &str> = OpenRequests::default();
        open.insert("1", "held");
        open.insert("1", "again");
        // Refused at once: the latest.
        assert_eq!(open.answered(&"1", "refused"), Some("again"));
        assert_eq!(open.answered(&"1", "expired"), Some("held"));
        assert_eq!(open.answered(&"1", "result"), None);
        assert!(open.is_empty());
    }

    #[test]
    fn a_calls_end_takes_its_own_requests_only() {
        let mut open: OpenRequests<(&str, &str), u8> = OpenRequests::default();
        open.insert(("a", "1"), 1);
        open.insert(("a", "1"), 2);
        open.insert(("b", "1"), 3);
        let mut taken = open.take_where(|(call, _)| *call == "a");
        taken.sort();
        assert_eq!(taken, [1, 2]);
        assert_eq!(open.len(), 1);
    }
}
