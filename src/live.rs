//! Live stderr: the helper's stderr forwarded to ours as it arrives, under
//! a token-bucket budget. Pure: the caller passes `Instant`s, offers
//! chunks, and drains the queue when our stderr can take bytes.
//!
//! Hosts keep server stderr in log files; users have seen MCP logs grow to
//! hundreds of GB. Over budget, bytes are dropped (they are still in the
//! capture and counted) and announced by a marker line as soon as the
//! budget allows. The queue is bounded by the burst size (plus one held
//! partial line). What passes is masked line by line (see `redact`); after
//! a drop, output resumes at the next line so no half secret slips out.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::redact::{LineRedactor, Redactor};

#[derive(Debug, Clone)]
pub struct Live {
    rate: u64,
    burst: u64,
    tokens: f64,
    refilled_at: Instant,
    queue: VecDeque<u8>,
    redactor: LineRedactor,
    scratch: Vec<u8>,
    /// Dropped since the last marker.
    unannounced: u64,
    pub bytes_forwarded: u64,
    pub bytes_dropped: u64,
    /// The last queued byte was a newline (or nothing was queued yet), so a
    /// marker can start on a line of its own.
    at_line_start: bool,
}

fn marker(dropped: u64) -> String {
    format!("[mcp-bound: dropped {dropped} bytes of stderr]\n")
}

impl Live {
    /// `rate` bytes per second, `burst` bytes at most at once.
    pub fn new(rate: u64, burst: u64, now: Instant, redactor: Redactor) -> Live {
        Live {
            rate,
            burst,
            tokens: burst as f64,
            refilled_at: now,
            queue: VecDeque::new(),
            redactor: LineRedactor::new(redactor),
            scratch: Vec::new(),
            unannounced: 0,
            bytes_forwarded: 0,
            bytes_dropped: 0,
            at_line_start: true,
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now
            .saturating_duration_since(self.refilled_at)
            .as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate as f64).min(self.burst as f64);
        self.refilled_at = now;
    }

    fn room(&self) -> usize {
        (self.burst as usize).saturating_sub(self.queue.len())
    }

    fn try_announce(&mut self) {
        if self.unannounced == 0 {
            return;
        }
        let mut text = marker(self.unannounced);
        if !self.at_line_start {
            text.insert(0, '\n');
        }
        let cost = text.len();
        if self.tokens >= cost as f64 && self.room() >= cost {
            self.tokens -= cost as f64;
            self.queue.extend(text.as_bytes());
            self.unannounced = 0;
            self.at_line_start = true;
        }
    }

    /// The helper wrote `chunk` to stderr: queue what the budget allows.
    pub fn offer(&mut self, now: Instant, chunk: &[u8]) {
        self.refill(now);
        self.try_announce();
        let allowed = if self.unannounced > 0 {
            // Announce a drop before anything after it is shown.
            0
        } else {
            (self.tokens as usize).min(self.room()).min(chunk.len())
        };
        let mut skipped = 0;
        if allowed > 0 {
            self.tokens -= allowed as f64;
            self.scratch.clear();
            skipped = self.redactor.feed(&chunk[..allowed], &mut self.scratch);
            self.enqueue_scratch();
        }
        let dropped = (chunk.len() - allowed) as u64;
        if dropped > 0 {
            self.redactor.dropped(chunk.last() == Some(&b'\n'));
        }
        self.unannounced += dropped + skipped as u64;
        self.bytes_dropped += dropped + skipped as u64;
    }

    fn enqueue_scratch(&mut self) {
        if let Some(last) = self.scratch.last() {
            self.at_line_start = *last == b'\n';
            self.queue.extend(&self.scratch);
        }
    }

    /// The stream ended: let a held partial line through (masked).
    pub fn finish(&mut self) {
        self.scratch.clear();
        self.redactor.flush(&mut self.scratch);
        self.enqueue_scratch();
    }

    /// Time passed: a pending marker may now fit.
    pub fn tick(&mut self, now: Instant) {
        self.refill(now);
        self.try_announce();
    }

    /// When the pending marker will fit, if one is pending.
    pub fn wake_at(&self) -> Option<Instant> {
        if self.unannounced == 0 || self.rate == 0 {
            return None;
        }
        let need = marker(self.unannounced).len() as f64 + 1.0;
        let missing = (need - self.tokens).max(0.0);
        Some(self.refilled_at + Duration::from_secs_f64(missing / self.rate as f64))
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The next bytes to write (the front of the queue).
    pub fn front(&self) -> &[u8] {
        self.queue.as_slices().0
    }

    /// `n` bytes of the front were written.
    pub fn consume(&mut self, n: usize) {
        self.queue.drain(..n);
        self.bytes_forwarded += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(live: &mut Live) -> Vec<u8> {
        let mut out = Vec::new();
        while !live.is_empty() {
            let front = live.front().to_vec();
            live.consume(front.len());
            out.extend(front);
        }
        out
    }

    #[test]
    fn within_budget_everything_passes() {
        let t0 = Instant::now();
        let mut live = Live::new(1000, 100, t0, Redactor::default());
        live.offer(t0, b"hello\n");
        assert_eq!(drain(&mut live), b"hello\n");
        assert_eq!(live.bytes_dropped, 0);
    }

    #[test]
    fn over_budget_drops_and_announces_when_tokens_return() {
        let t0 = Instant::now();
        let mut live = Live::new(100, 50, t0, Redactor::default());
        let mut burst = vec![b'a'; 49];
        burst.push(b'\n');
        burst.extend([b'a'; 30]);
        live.offer(t0, &burst);
        assert_eq!(drain(&mut live), burst[..50].to_vec());
        assert_eq!(live.bytes_dropped, 30);
        // Nothing more is shown before the drop is announced.
        let wake = live.wake_at().expect("a marker is pending");
        live.offer(t0 + Duration::from_millis(1), b"b\n");
        assert!(drain(&mut live).is_empty());
        live.tick(wake);
        let shown = String::from_utf8(drain(&mut live)).unwrap();
        assert_eq!(shown, "[mcp-bound: dropped 32 bytes of stderr]\n");
        assert_eq!(live.wake_at(), None);
        live.offer(wake + Duration::from_secs(1), b"after\n");
        assert_eq!(drain(&mut live), b"after\n");
    }

    #[test]
    fn secrets_are_masked_before_they_are_shown() {
        let t0 = Instant::now();
        let mut live = Live::new(1_000_000, 4096, t0, Redactor::default());
        live.offer(t0, b"token=abc123\npartial");
        live.finish();
        assert_eq!(drain(&mut live), b"token=[REDACTED]\npartial");
    }

    #[test]
    fn queue_is_bounded_by_the_burst() {
        let t0 = Instant::now();
        let mut live = Live::new(1_000_000, 64, t0, Redactor::default());
        let mut line = vec![b'x'; 63];
        line.push(b'\n');
        for i in 0..100 {
            live.offer(t0 + Duration::from_secs(i), &line);
            assert!(live.queue.len() <= 64);
        }
    }
}
