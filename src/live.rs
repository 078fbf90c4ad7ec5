//! Live stderr: the helper's stderr forwarded to ours as it arrives, under
//! a token-bucket budget. Pure: the caller passes `Instant`s, offers
//! chunks, and drains the queue when our stderr can take bytes.
//!
//! Hosts keep server stderr in log files; users have seen MCP logs grow to
//! hundreds of GB. Over budget, bytes are dropped (they are still in the
//! capture and counted) and announced by a marker line as soon as the
//! budget allows, at most one marker a second (a flood's drops are
//! coalesced, so the budget shows the helper's lines, not our markers;
//! nothing after a drop is shown before its marker). The queue is bounded by the burst size (plus one held
//! partial line). What passes is masked line by line (see `redact`); after
//! a drop, output resumes at the next line so no half secret slips out.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::redact::{LineRedactor, Redactor};

/// The live stderr budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LiveBudget {
    /// Bytes per second.
    pub rate: u64,
    /// Most bytes at once, and the bound on what waits to be written.
    pub burst: u64,
    /// How long a debug window (SIGUSR1) stays open; zero refuses it.
    pub window: std::time::Duration,
    /// Most bytes one debug window lets through.
    pub window_bytes: u64,
}

/// Counts are in the helper's bytes (what was offered), never in what is
/// written: masking changes lengths and markers are ours. At every moment
/// `bytes_seen == bytes_forwarded + bytes_dropped + unsent()`.
#[derive(Debug, Clone)]
pub(crate) struct Live {
    rate: u64,
    burst: u64,
    tokens: f64,
    refilled_at: Instant,
    queue: VecDeque<u8>,
    /// The queue in pieces: (output bytes still to write, helper bytes
    /// they stand for). A piece is forwarded once all of it is written.
    pieces: VecDeque<(usize, u64)>,
    redactor: LineRedactor,
    scratch: Vec<u8>,
    /// Dropped since the last marker.
    unannounced: u64,
    /// When the last marker was queued: the next waits [`MARKER_INTERVAL`].
    announced_at: Option<Instant>,
    /// A debug window is open: (bytes it may still let through, bytes it
    /// let through). No rate limit meanwhile; the queue's bound stays.
    window: Option<(u64, u64)>,
    pub bytes_seen: u64,
    pub bytes_forwarded: u64,
    pub bytes_dropped: u64,
    /// Our stderr's reader went away: nothing more can be shown.
    gone: bool,
    /// The last queued byte was a newline (or nothing was queued yet), so a
    /// marker can start on a line of its own.
    at_line_start: bool,
}

/// The least time between two drop markers.
pub(crate) const MARKER_INTERVAL: Duration = Duration::from_secs(1);

fn marker(dropped: u64) -> String {
    format!("[mcp-bound: dropped {dropped} bytes of stderr]\n")
}

impl Live {
    /// `rate` bytes per second, `burst` bytes at most at once.
    pub(crate) fn new(rate: u64, burst: u64, now: Instant, redactor: Redactor) -> Live {
        Live {
            rate,
            burst,
            tokens: burst as f64,
            refilled_at: now,
            queue: VecDeque::new(),
            pieces: VecDeque::new(),
            redactor: LineRedactor::new(redactor),
            scratch: Vec::new(),
            unannounced: 0,
            announced_at: None,
            window: None,
            bytes_seen: 0,
            bytes_forwarded: 0,
            bytes_dropped: 0,
            gone: false,
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

    fn try_announce(&mut self, now: Instant) {
        let unlimited = self.window.is_some();
        if self.unannounced == 0
            || (!unlimited
                && self
                    .announced_at
                    .is_some_and(|at| now.saturating_duration_since(at) < MARKER_INTERVAL))
        {
            return;
        }
        let mut text = marker(self.unannounced);
        if !self.at_line_start {
            text.insert(0, '\n');
        }
        let cost = text.len();
        if !self.gone && (unlimited || self.tokens >= cost as f64) && self.room() >= cost {
            if !unlimited {
                self.tokens -= cost as f64;
            }
            self.queue.extend(text.as_bytes());
            self.pieces.push_back((cost, 0));
            self.unannounced = 0;
            self.announced_at = Some(now);
            self.at_line_start = true;
        }
    }

    /// A line of mcp-bound's own (a restart): queued on a line of its own,
    /// outside the budget (it is rare and short) but within the queue's
    /// bound; it stands for none of the helper's bytes. Not shown if it
    /// does not fit: the record and the stderr log have the fact.
    pub(crate) fn notice(&mut self, line: &str) {
        let mut text = line.to_string();
        if !self.at_line_start {
            text.insert(0, '\n');
        }
        if self.gone || self.room() < text.len() {
            return;
        }
        self.queue.extend(text.as_bytes());
        self.pieces.push_back((text.len(), 0));
        self.at_line_start = text.ends_with('\n');
    }

    /// Open a debug window: up to `bytes` of the helper's stderr pass
    /// without the rate limit (a pending drop is announced first).
    pub(crate) fn open_window(&mut self, now: Instant, bytes: u64) {
        self.window = Some((bytes, 0));
        self.try_announce(now);
    }

    /// Close the window: the budget applies again at once, with the tokens
    /// it has (nothing held back is replayed). Returns the bytes it let
    /// through.
    pub(crate) fn close_window(&mut self) -> Option<u64> {
        self.window.take().map(|(_, through)| through)
    }

    /// The window let through all it may.
    pub(crate) fn window_spent(&self) -> bool {
        self.window.is_some_and(|(left, _)| left == 0)
    }

    /// The helper wrote `chunk` to stderr: queue what the budget allows.
    pub(crate) fn offer(&mut self, now: Instant, chunk: &[u8]) {
        self.bytes_seen += chunk.len() as u64;
        if self.gone {
            self.bytes_dropped += chunk.len() as u64;
            return;
        }
        self.refill(now);
        self.try_announce(now);
        let allowed = if self.unannounced > 0 {
            // Announce a drop before anything after it is shown.
            0
        } else if let Some((left, _)) = self.window {
            (usize::try_from(left).unwrap_or(usize::MAX))
                .min(self.room())
                .min(chunk.len())
        } else {
            (self.tokens as usize).min(self.room()).min(chunk.len())
        };
        let mut lost = 0;
        if let Some((left, through)) = self.window.as_mut() {
            *left -= allowed as u64;
            *through += allowed as u64;
        } else if allowed > 0 {
            self.tokens -= allowed as f64;
        }
        if allowed > 0 {
            self.scratch.clear();
            let held_before = self.redactor.held();
            let skipped = self.redactor.feed(&chunk[..allowed], &mut self.scratch);
            // What came out stands for what was held plus what went in,
            // less what is held now.
            let represented = held_before + (allowed - skipped) - self.redactor.held();
            self.enqueue_scratch(represented as u64);
            lost += skipped;
        }
        let dropped = chunk.len() - allowed;
        if dropped > 0 {
            // A held partial line is cut by the drop: it goes too.
            lost += dropped + self.redactor.dropped(chunk.last() == Some(&b'\n'));
        }
        self.unannounced += lost as u64;
        self.bytes_dropped += lost as u64;
    }

    /// Queue the masked output in `scratch`, standing for `input` helper
    /// bytes (output may be empty: a private key block masked away).
    fn enqueue_scratch(&mut self, input: u64) {
        if let Some(last) = self.scratch.last() {
            self.at_line_start = *last == b'\n';
            self.queue.extend(&self.scratch);
        }
        if self.scratch.is_empty() && self.pieces.is_empty() {
            // Masked to nothing (a private key block) with nothing ahead
            // of it: it is done now, or no write would ever settle it.
            self.bytes_forwarded += input;
        } else if input > 0 || !self.scratch.is_empty() {
            self.pieces.push_back((self.scratch.len(), input));
        }
    }

    /// The stream ended: let a held partial line through (masked).
    pub(crate) fn finish(&mut self) {
        if self.gone {
            return;
        }
        self.scratch.clear();
        let held = self.redactor.held();
        self.redactor.flush(&mut self.scratch);
        self.enqueue_scratch(held as u64);
    }

    /// Our stderr's reader went away: what waits can never be shown, and
    /// neither can anything after it. All of it is counted as dropped.
    pub(crate) fn reader_gone(&mut self) {
        if self.gone {
            return;
        }
        self.gone = true;
        self.bytes_dropped += self.unsent();
        self.redactor.dropped(true);
        self.queue.clear();
        self.pieces.clear();
        self.unannounced = 0;
    }

    /// Helper bytes taken in but not yet written: queued, or held as a
    /// partial line. At exit these are the ones never shown.
    pub(crate) fn unsent(&self) -> u64 {
        self.pieces.iter().map(|(_, input)| input).sum::<u64>() + self.redactor.held() as u64
    }

    /// Time passed: a pending marker may now fit.
    pub(crate) fn tick(&mut self, now: Instant) {
        self.refill(now);
        self.try_announce(now);
    }

    /// When the pending marker will fit, if one is pending.
    pub(crate) fn wake_at(&self) -> Option<Instant> {
        if self.unannounced == 0 || self.rate == 0 || self.window.is_some() {
            return None;
        }
        let need = marker(self.unannounced).len() as f64 + 1.0;
        let missing = (need - self.tokens).max(0.0);
        let tokens_at = self.refilled_at + Duration::from_secs_f64(missing / self.rate as f64);
        Some(match self.announced_at {
            Some(at) => tokens_at.max(at + MARKER_INTERVAL),
            None => tokens_at,
        })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The next bytes to write (the front of the queue).
    pub(crate) fn front(&self) -> &[u8] {
        self.queue.as_slices().0
    }

    /// `n` bytes of the front were written.
    pub(crate) fn consume(&mut self, n: usize) {
        self.queue.drain(..n);
        let mut left = n;
        while let Some(front) = self.pieces.front_mut() {
            if front.0 > left {
                front.0 -= left;
                break;
            }
            left -= front.0;
            self.bytes_forwarded += front.1;
            self.pieces.pop_front();
        }
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
    fn a_notice_of_ours_starts_a_line_and_counts_none_of_the_helpers_bytes() {
        let t0 = Instant::now();
        let mut live = Live::new(1000, 100, t0, Redactor::default());
        live.offer(t0, b"partial");
        live.finish();
        live.notice("[mcp-bound: restarting]\n");
        assert_eq!(drain(&mut live), b"partial\n[mcp-bound: restarting]\n");
        assert_eq!(live.bytes_forwarded, 7);
        assert_eq!(
            live.bytes_seen,
            live.bytes_forwarded + live.bytes_dropped + live.unsent()
        );
    }

    /// In a debug window every byte passes (within the queue's bound and
    /// the window's own); when it closes the budget is back at once.
    #[test]
    fn a_debug_window_lifts_the_rate_not_the_bounds() {
        let t0 = Instant::now();
        let mut live = Live::new(10, 400, t0, Redactor::default());
        let mut first = vec![b'a'; 399];
        first.push(b'\n');
        live.offer(t0, &first);
        live.offer(t0, &[b'x'; 50]);
        drain(&mut live);
        assert_eq!(live.bytes_dropped, 50);
        live.open_window(t0, 1000);
        // The pending drop is said first; the cut line's end goes too (no
        // half line), then all passes.
        live.offer(t0, b"rest of the cut line\nb\n");
        let shown = String::from_utf8(drain(&mut live)).unwrap();
        assert_eq!(shown, "[mcp-bound: dropped 50 bytes of stderr]\nb\n");
        for _ in 0..9 {
            live.offer(t0, &[b'c'; 99]);
            live.offer(t0, b"\n");
            drain(&mut live);
        }
        assert_eq!(live.bytes_dropped, 71, "nothing dropped in the window");
        live.offer(t0, &[b'd'; 100]);
        assert!(live.window_spent());
        assert_eq!(live.close_window(), Some(1000));
        let before = live.bytes_dropped;
        live.offer(t0, &[b'e'; 100]);
        assert!(live.bytes_dropped > before, "the budget is back");
        assert_eq!(
            live.bytes_seen,
            live.bytes_forwarded + live.bytes_dropped + live.unsent()
        );
    }

    /// Under a flood, drops are announced at most once a second, however
    /// many tokens there are: the budget goes to the helper's lines.
    #[test]
    fn a_flood_gets_one_marker_a_second() {
        let t0 = Instant::now();
        let mut live = Live::new(1000, 4000, t0, Redactor::default());
        let line = [b'x'; 99].iter().chain(b"\n").copied().collect::<Vec<u8>>();
        let (mut markers, mut lines) = (0, 0);
        // 2 s of a line every millisecond, read at once.
        for ms in 0..2000 {
            let now = t0 + Duration::from_millis(ms);
            live.tick(now);
            live.offer(now, &line);
            let shown = String::from_utf8(drain(&mut live)).unwrap();
            markers += shown.matches("[mcp-bound: dropped").count();
            lines += shown.matches(&"x".repeat(99)).count();
        }
        assert!(markers <= 3, "{markers} markers");
        // The first burst, then a second's worth of tokens after each
        // marker (not one marker per line that does not fit).
        assert!(lines >= 40 + 9, "{lines} lines shown");
        let seen = live.bytes_seen;
        assert_eq!(
            seen,
            live.bytes_forwarded + live.bytes_dropped + live.unsent()
        );
        // The next marker waits its second even with tokens to spare.
        let pending = live.wake_at().expect("a drop is pending");
        assert!(pending > t0 + Duration::from_millis(1999), "{pending:?}");
    }

    #[test]
    fn secrets_are_masked_before_they_are_shown() {
        let t0 = Instant::now();
        let mut live = Live::new(1_000_000, 4096, t0, Redactor::default());
        live.offer(t0, b"token=abc123\npartial");
        live.finish();
        assert_eq!(drain(&mut live), b"token=[REDACTED]\npartial");
    }

    /// One step of a run: the helper writes, or our reader takes some
    /// bytes, or time passes, or our reader goes away.
    #[derive(Debug, Clone)]
    enum Step {
        Write(Vec<u8>),
        Read(usize),
        Wait(u64),
        ReaderGone,
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        let text = prop::collection::vec(
            prop_oneof![Just(b'a'), Just(b'\n'), Just(b' '), Just(b'='), Just(b'k'),],
            0..300,
        );
        let secret = Just(b"\ntoken=abcdef123456\n".to_vec());
        let key =
            Just(b"-----BEGIN RSA PRIVATE KEY-----\nxyz\n-----END RSA PRIVATE KEY-----\n".to_vec());
        prop_oneof![
            6 => prop_oneof![text, secret, key].prop_map(Step::Write),
            4 => (0usize..200).prop_map(Step::Read),
            2 => (0u64..50).prop_map(Step::Wait),
            1 => Just(Step::ReaderGone),
        ]
    }

    proptest::proptest! {
        /// Every byte offered is forwarded, dropped or still queued: none
        /// vanishes, whatever the reader's speed, the budget or the end.
        #[test]
        fn every_byte_is_forwarded_dropped_or_unsent(
            steps in proptest::collection::vec(step(), 0..80),
            rate in 1u64..2000,
            burst in 64u64..600,
        ) {
            let t0 = Instant::now();
            let mut now = t0;
            let mut live = Live::new(rate, burst, t0, Redactor::default());
            let mut seen = 0u64;
            let mut gone = false;
            let mut written = Vec::new();
            for step in steps {
                match step {
                    Step::Write(bytes) => {
                        seen += bytes.len() as u64;
                        live.offer(now, &bytes);
                    }
                    Step::Read(n) if !gone => {
                        let front = live.front();
                        let n = n.min(front.len());
                        written.extend_from_slice(&front[..n]);
                        live.consume(n);
                    }
                    Step::Read(_) => {}
                    Step::Wait(ms) => {
                        now += Duration::from_millis(ms);
                        live.tick(now);
                    }
                    Step::ReaderGone => {
                        gone = true;
                        live.reader_gone();
                    }
                }
                proptest::prop_assert_eq!(
                    live.bytes_seen, seen,
                    "every offered byte is seen"
                );
                proptest::prop_assert_eq!(
                    live.bytes_forwarded + live.bytes_dropped + live.unsent(),
                    seen,
                    "forwarded {} + dropped {} + unsent {}",
                    live.bytes_forwarded, live.bytes_dropped, live.unsent()
                );
            }
            live.finish();
            if !gone {
                // The reader takes everything left at the end.
                while !live.is_empty() {
                    let n = live.front().len();
                    written.extend_from_slice(live.front());
                    live.consume(n);
                }
                proptest::prop_assert_eq!(live.unsent(), 0);
            }
            proptest::prop_assert_eq!(
                live.bytes_forwarded + live.bytes_dropped + live.unsent(),
                seen
            );
            let text = String::from_utf8_lossy(&written);
            proptest::prop_assert!(!text.contains("abcdef123456"), "secrets stay masked");
        }
    }

    #[test]
    fn the_reader_going_away_keeps_what_was_forwarded() {
        let t0 = Instant::now();
        let mut live = Live::new(1_000_000, 4096, t0, Redactor::default());
        live.offer(t0, b"one\ntwo\n");
        let n = live.front().len();
        live.consume(n);
        live.offer(t0, b"three\npartial");
        live.reader_gone();
        live.offer(t0, b"after\n");
        assert_eq!(live.bytes_seen, 27);
        assert_eq!(live.bytes_forwarded, 8);
        assert_eq!(live.bytes_dropped, 19);
        assert_eq!(live.unsent(), 0);
        assert!(live.is_empty());
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
