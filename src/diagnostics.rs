//! The stderr capture, fed in stream order whichever way bytes arrive, and
//! the flood path that keeps a flood out of user space when copying it
//! costs more than moving it.
//!
//! Ordinarily the supervisor reads stderr and pushes every chunk into the
//! [`Capture`]. Once a stream has outgrown the capture, reading is mostly
//! copying bytes only to evict them. The flood path keeps the newest bytes
//! in the kernel instead: they are spliced from the helper's pipe into a
//! pipe of our own (the holding pipe; the capture's own tail is the ring),
//! and whatever the tail can no longer keep is spliced from the holding
//! pipe's front into /dev/null, counted. Pipe pages change hands; nothing
//! is copied. The last `tail_bytes` are read once, when the holding pipe
//! is settled into the capture.
//!
//! Which path is cheaper depends on the machine, and can change while a
//! flood runs. Reading copies pages the helper just wrote: from a cache we
//! share, that copy is nearly free, and a moved page would cost the helper
//! a fresh one. When the pages come from a far cache (the two CPUs of a VM
//! on distant cores), the copy is the expensive part. So reads during a
//! flood are timed in windows (two clock reads per read; after a fast
//! window the next [`REST_AFTER_FAST`] bytes go untimed). Once reading
//! runs below [`SPLICE_BELOW`], the holding pipe is put on trial: it stays only if
//! the flood then moves [`TRIAL_GAIN`] times faster in wall time than it
//! did while read, since a slow copy does not always mean moving pages is
//! cheaper. Every [`REPROBE_AFTER`] bytes, reads are measured again. The
//! choice changes speed, never what is kept: both paths feed the same
//! capture.
//!
//! One rule keeps the order: the holding pipe holds the newest bytes, so it is
//! settled before any other byte enters the capture (a diverted stdout
//! line, say), and at the end.
//!
//! A pipe counts pages, not bytes. A helper that writes a few bytes at a
//! time can fill the holding pipe's slots long before it holds `tail_bytes`; the
//! helper's pipe then cannot be drained into it. That is detected (poll
//! said readable, yet nothing moved) and answered by settling the holding pipe,
//! which empties it, so stderr never stops draining. Anything unexpected
//! from splice turns the flood path off for good and reads resume.
//!
//! A helper could vmsplice pages into its stderr and change them after we
//! moved them. It can only change its own diagnostics, which it could have
//! written differently to begin with.

use crate::sys::fd::{AsFd, BorrowedFd, OwnedFd};
use std::fs::File;
use std::io::{self, Read};
use std::time::{Duration, Instant};

use crate::capture::Capture;
use crate::sys;

/// The holding pipe asks for this much; an unprivileged process may get less.
const RING_PIPE_BYTES: i32 = 1 << 20;
/// Most bytes moved by one splice; a helper's pipe holds at most 1 MiB.
pub(crate) const MOVE_MAX: usize = 1 << 20;
/// A flood is a stream that exceeds what the capture keeps by this much:
/// below it nothing is timed and no descriptor is added.
const FLOOD_AFTER: u64 = 256 * 1024;
/// Reads are judged over windows of this many bytes...
const PROBE_BYTES: u64 = 8 << 20;
/// ...counting only reads this large, whose time is mostly the copy...
const MIN_TIMED_READ: usize = 4096;
/// ...and the holding pipe is tried after this many slow windows in a row, so
/// that one window disturbed by the scheduler does not decide.
const SLOW_WINDOWS: u8 = 2;
/// Reading slower than this (bytes per second inside read(2), system-call
/// overhead included) means the pages come from a far cache: moving them
/// is cheaper. The threshold sits between the read speeds measured from a
/// shared cache and from a far one (bench/results.md, "Flood path
/// thresholds"); slow windows that come in phases where the holding pipe
/// does not pay are sent back to reads by the trial.
pub(crate) const SPLICE_BELOW: f64 = 8.5e9;
/// On the flood path, measure reading again after this many bytes.
pub(crate) const REPROBE_AFTER: u64 = 256 << 20;
/// The holding pipe is on trial for this many bytes...
pub(crate) const TRIAL_BYTES: u64 = 32 << 20;
/// ...and stays only if the flood then moves at least this much faster
/// (wall time) than it did while read; otherwise reads come back for
/// [`REPROBE_AFTER`] bytes. Slow reads say the copy is expensive, not
/// that moving pages is cheaper: with three processes on two CPUs they
/// were as fast.
pub(crate) const TRIAL_GAIN: f64 = 1.1;
/// After a fast window, read this many bytes untimed before the next one:
/// measuring costs two clock reads per read.
pub(crate) const REST_AFTER_FAST: u64 = 56 << 20;

/// How a flood is to be drained (also the values of --flood-path).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum FloodPath {
    /// Time reads; move the flood inside the kernel while copying is slow and moving proves faster
    Auto,
    /// Always copy (what --live uses)
    Read,
    /// Always move a flood inside the kernel
    Splice,
}

impl FloodPath {
    /// As this system can take it: without splice (macOS, Windows) a
    /// flood is read.
    pub(crate) fn here(self) -> FloodPath {
        match crate::sys::MOVER {
            Some(_) => self,
            None => FloodPath::Read,
        }
    }
}

/// What one move from the helper's pipe did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Took {
    Bytes(usize),
    /// The helper's pipe is empty for now.
    Nothing,
    /// The helper's pipe is closed and empty.
    Eof,
    /// Not on the flood path (now); read instead.
    Off,
}

/// How a flood is drained. Pure: fed byte counts, read durations and
/// instants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Path {
    /// Not a flood (yet), or the flood path is unavailable: plain reads.
    Reading,
    /// A flood, read, with the reads of this window timed, after `slow`
    /// slow windows in a row. `since`: the window's first timed read.
    Probing {
        bytes: u64,
        busy: Duration,
        slow: u8,
        since: Option<Instant>,
    },
    /// A flood, read untimed until `bytes` reaches `until`.
    Resting { bytes: u64, until: u64 },
    /// A flood, moved through the holding pipe since `since`. On `trial`,
    /// the holding pipe must beat `baseline` (bytes per second of wall time while
    /// reading) or reads come back.
    Splicing {
        bytes: u64,
        since: Instant,
        baseline: f64,
        trial: bool,
    },
}

impl Path {
    /// A read of `bytes` at `now`, timed (`busy`) while probing. True when
    /// the flood should move through the holding pipe from now on.
    pub(crate) fn on_read(&mut self, bytes: usize, busy: Option<Duration>, now: Instant) -> bool {
        if let Path::Resting {
            bytes: rested,
            until,
        } = self
        {
            *rested += bytes as u64;
            if *rested >= *until {
                *self = Path::probe(0);
            }
            return false;
        }
        let (
            Path::Probing {
                bytes: seen,
                busy: spent,
                slow,
                since,
            },
            Some(busy),
        ) = (&mut *self, busy)
        else {
            return false;
        };
        if bytes < MIN_TIMED_READ {
            return false;
        }
        let started = *since.get_or_insert(now);
        *seen += bytes as u64;
        *spent += busy;
        if *seen < PROBE_BYTES {
            return false;
        }
        let rate = *seen as f64 / spent.as_secs_f64().max(1e-9);
        let throughput = *seen as f64 / now.duration_since(started).as_secs_f64().max(1e-9);
        *self = if rate >= SPLICE_BELOW {
            Path::Resting {
                bytes: 0,
                until: REST_AFTER_FAST,
            }
        } else if *slow + 1 >= SLOW_WINDOWS {
            Path::Splicing {
                bytes: 0,
                since: now,
                baseline: throughput,
                trial: true,
            }
        } else {
            Path::probe(*slow + 1)
        };
        matches!(self, Path::Splicing { .. })
    }

    /// Bytes moved through the holding pipe, at `now`. True when reads come back:
    /// the holding pipe did not pay on trial, or it is time to measure again.
    pub(crate) fn on_spliced(&mut self, bytes: usize, now: Instant) -> bool {
        let Path::Splicing {
            bytes: moved,
            since,
            baseline,
            trial,
        } = self
        else {
            return false;
        };
        *moved += bytes as u64;
        if *trial && *moved >= TRIAL_BYTES {
            let throughput = *moved as f64 / now.duration_since(*since).as_secs_f64().max(1e-9);
            if throughput < *baseline * TRIAL_GAIN {
                *self = Path::Resting {
                    bytes: 0,
                    until: REPROBE_AFTER,
                };
                return true;
            }
            *trial = false;
        }
        if *moved < REPROBE_AFTER {
            return false;
        }
        *self = Path::probe(0);
        true
    }

    fn probe(slow: u8) -> Path {
        Path::Probing {
            bytes: 0,
            busy: Duration::ZERO,
            slow,
            since: None,
        }
    }
}

/// Stderr bytes newer than everything in the capture, held in a pipe.
struct HoldingPipe {
    /// How bytes move inside the kernel here.
    mover: sys::Mover,
    read: File,
    write: OwnedFd,
    devnull: File,
    held: usize,
    keep: usize,
    /// Trimming waits until the holding pipe holds this much, so that small moves
    /// do not each cost a second splice.
    trim_above: usize,
}

pub(crate) struct Diagnostics {
    capture: Capture,
    path: Path,
    holding: Option<HoldingPipe>,
    /// Read once a holding pipe could not be had or splice misbehaved.
    flood_path: FloodPath,
}

impl Diagnostics {
    pub(crate) fn new(capture: Capture, flood_path: FloodPath) -> Self {
        Diagnostics {
            capture,
            path: Path::Reading,
            holding: None,
            flood_path,
        }
    }

    /// Whether stderr is to be moved with [`Diagnostics::take_from`].
    pub(crate) fn splicing(&self) -> bool {
        matches!(self.path, Path::Splicing { .. })
    }

    /// Whether the caller should time its reads for [`Diagnostics::on_read`].
    pub(crate) fn probing(&self) -> bool {
        matches!(self.path, Path::Probing { .. })
    }

    /// Feed bytes read from a stream; held bytes go first.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.settle();
        self.capture.push(bytes);
        if self.path == Path::Reading && self.flood_path != FloodPath::Read {
            let capture = &self.capture;
            let kept = (capture.head_limit() + capture.tail_limit()) as u64;
            if capture.head_closed() && capture.bytes_seen() >= kept + FLOOD_AFTER {
                if self.flood_path == FloodPath::Splice {
                    // Forced: no trial, so the instant is never read.
                    self.path = Path::Splicing {
                        bytes: 0,
                        since: Instant::now(),
                        baseline: 0.0,
                        trial: false,
                    };
                    self.open_holding();
                } else {
                    self.path = Path::probe(0);
                }
            }
        }
    }

    fn open_holding(&mut self) {
        if self.holding.is_none() {
            self.holding = HoldingPipe::new(self.capture.tail_limit());
            if self.holding.is_none() {
                self.stop_flood_path();
            }
        }
    }

    /// A read of `bytes` (already pushed) at `now`, which took `busy` if
    /// it was timed: maybe switch to the holding.
    pub(crate) fn on_read(&mut self, bytes: usize, busy: Option<Duration>, now: Instant) {
        if self.path.on_read(bytes, busy, now) {
            self.open_holding();
        }
    }

    /// Move what the helper's pipe holds into the holding pipe, inside the kernel.
    /// `expect_data`: poll said the pipe is readable, so a move of nothing
    /// means the holding pipe's slots are full.
    pub(crate) fn take_from(
        &mut self,
        source: BorrowedFd<'_>,
        expect_data: bool,
        now: Instant,
    ) -> Took {
        let (true, Some(holding)) = (self.splicing(), self.holding.as_mut()) else {
            return Took::Off;
        };
        let splice = holding.mover.splice;
        let moved = match splice(source, holding.write.as_fd(), MOVE_MAX) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && expect_data && holding.held > 0 => {
                self.settle();
                let Some(holding) = self.holding.as_mut() else {
                    return Took::Off;
                };
                splice(source, holding.write.as_fd(), MOVE_MAX)
            }
            other => other,
        };
        match moved {
            Ok(0) => Took::Eof,
            Ok(n) => {
                let Some(holding) = self.holding.as_mut() else {
                    return Took::Off;
                };
                holding.held += n;
                if holding.held > holding.trim_above && holding.trim(&mut self.capture).is_err() {
                    self.stop_flood_path();
                } else if self.flood_path == FloodPath::Auto && self.path.on_spliced(n, now) {
                    self.settle();
                }
                Took::Bytes(n)
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Took::Nothing,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Took::Nothing,
            Err(_) => {
                self.stop_flood_path();
                Took::Off
            }
        }
    }

    /// Hand the held bytes to the capture: the excess to /dev/null
    /// (counted), then the rest read. The holding pipe stays for more. Should our
    /// own pipe fail to give them back, the holding pipe is dropped and reads
    /// resume; the bytes it still held were seen, so they count, as dropped.
    fn settle(&mut self) {
        let Some(holding) = self.holding.as_mut() else {
            return;
        };
        if holding.held > 0 && holding.hand_over(&mut self.capture).is_err() {
            self.capture.skip_superseded(holding.held as u64);
            self.holding = None;
            self.stop_flood_path();
        }
    }

    /// Bytes that entered so far (held ones included).
    pub(crate) fn bytes_seen(&self) -> u64 {
        self.capture.bytes_seen()
    }

    /// The last `n` bytes seen so far (held bytes first handed over), and
    /// whether bytes were lost right before them.
    pub(crate) fn last(&mut self, n: usize) -> (Vec<u8>, bool) {
        self.settle();
        self.capture.last(n)
    }

    /// Plain reads from now on, the holding pipe settled and closed: the stream
    /// ended, no holding pipe can be had, or splice misbehaved.
    pub(crate) fn stop_flood_path(&mut self) {
        self.settle();
        self.holding = None;
        self.path = Path::Reading;
        self.flood_path = FloodPath::Read;
    }

    /// The capture, complete: the holding pipe settled.
    pub(crate) fn finish(mut self) -> Capture {
        self.settle();
        self.capture
    }
}

impl HoldingPipe {
    /// None when no holding pipe can be had, or one too small to hold the tail
    /// with room to spare (its slots would fill before a trim).
    fn new(keep: usize) -> Option<HoldingPipe> {
        let mover = sys::MOVER?;
        let (read, write, capacity) = (mover.private_pipe)(RING_PIPE_BYTES).ok()?;
        if keep > capacity / 4 {
            return None;
        }
        let devnull = (mover.null)().ok()?;
        Some(HoldingPipe {
            mover,
            read: File::from(read),
            write,
            devnull,
            held: 0,
            keep,
            trim_above: keep + capacity / 4,
        })
    }

    /// Splice everything older than the last `keep` bytes into /dev/null.
    fn trim(&mut self, capture: &mut Capture) -> io::Result<()> {
        while self.held > self.keep {
            match (self.mover.splice)(
                self.read.as_fd(),
                self.devnull.as_fd(),
                self.held - self.keep,
            ) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    self.held -= n;
                    capture.skip_superseded(n as u64);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Everything held, into the capture: the excess counted, the tail read.
    fn hand_over(&mut self, capture: &mut Capture) -> io::Result<()> {
        self.trim(capture)?;
        self.read_into(capture)
    }

    fn read_into(&mut self, capture: &mut Capture) -> io::Result<()> {
        let mut chunk = [0u8; 16 * 1024];
        while self.held > 0 {
            let want = self.held.min(chunk.len());
            match self.read.read(&mut chunk[..want]) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    self.held -= n;
                    capture.push(&chunk[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Windows of slow reads, spread over a long (future) stretch of wall
    /// time: the holding pipe's trial then compares against a trickle and passes.
    fn slow_windows(diag: &mut Diagnostics) {
        let mut at = Instant::now();
        let half = PROBE_BYTES as usize / 2;
        for _ in 0..SLOW_WINDOWS * 2 {
            diag.on_read(half, Some(Duration::from_secs(1)), at);
            at += Duration::from_secs(10);
        }
    }

    fn stream(len: usize) -> Vec<u8> {
        let mut bytes = b"abc\xC3\xA9\n".repeat(len / 6 + 1);
        bytes.truncate(len);
        bytes
    }

    #[test]
    fn small_streams_live_output_and_big_tails_stay_on_reads() {
        let mut diag = Diagnostics::new(Capture::new(0, 16 * 1024), FloodPath::Auto);
        diag.push(&stream(200 * 1024));
        assert!(!diag.probing());
        // --live needs every byte read.
        let mut diag = Diagnostics::new(Capture::new(0, 16 * 1024), FloodPath::Read);
        diag.push(&stream(400 * 1024));
        assert!(!diag.probing());
        // A head still filling wants every byte.
        let mut diag = Diagnostics::new(Capture::new(1 << 20, 0), FloodPath::Auto);
        diag.push(&stream(300 * 1024));
        assert!(!diag.probing());
        // A tail the holding pipe cannot hold with room to spare stays in user
        // space, for good.
        let mut diag = Diagnostics::new(Capture::new(0, 4 << 20), FloodPath::Auto);
        diag.push(&stream(5 << 20));
        slow_windows(&mut diag);
        assert!(!diag.splicing() && !diag.probing());
    }

    #[test]
    fn reads_from_a_shared_cache_stay_reads_slow_ones_move_to_the_ring() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let busy = |rate: f64| Some(Duration::from_secs_f64(PROBE_BYTES as f64 / rate));
        let window = PROBE_BYTES as usize;
        let probing = Path::probe(0);
        let mut path = probing;
        assert!(!path.on_read(window, busy(SPLICE_BELOW * 2.0), at(0)));
        let rest = Path::Resting {
            bytes: 0,
            until: REST_AFTER_FAST,
        };
        assert_eq!(path, rest, "fast: rest, untimed");
        assert!(!path.on_read(REST_AFTER_FAST as usize - 1, None, at(1)));
        assert!(!path.on_read(1, None, at(2)));
        assert_eq!(path, probing, "then measure again");
        // Small reads are mostly system-call overhead: not evidence.
        assert!(!path.on_read(100, Some(Duration::from_secs(1)), at(3)));
        assert_eq!(path, probing);
        // One slow window alone decides nothing.
        assert!(!path.on_read(window, busy(SPLICE_BELOW / 2.0), at(4)));
        assert!(matches!(path, Path::Probing { slow: 1, .. }));
        assert!(!path.on_read(window, busy(SPLICE_BELOW * 2.0), at(5)));
        assert_eq!(path, rest);
        // Two slow windows in a row take the holding pipe, on trial against the
        // wall-time throughput of the last window: 8 MiB in 100 ms.
        let mut path = probing;
        let half = window / 2;
        assert!(!path.on_read(window, busy(SPLICE_BELOW / 2.0), at(0)));
        assert!(!path.on_read(half, busy(SPLICE_BELOW / 2.0).map(|d| d / 2), at(100)));
        assert!(path.on_read(half, busy(SPLICE_BELOW / 2.0).map(|d| d / 2), at(200)));
        let Path::Splicing {
            baseline, trial, ..
        } = path
        else {
            panic!("not splicing: {path:?}");
        };
        assert!(trial);
        assert!(
            (baseline - PROBE_BYTES as f64 / 0.1).abs() < 1.0,
            "{baseline}"
        );
        let on_trial = path;
        // The holding pipe pays (32 MiB in 100 ms: 4x): it stays, and reading is
        // measured again after a while.
        assert!(!path.on_spliced(TRIAL_BYTES as usize, at(300)));
        assert!(matches!(path, Path::Splicing { trial: false, .. }));
        assert!(!path.on_spliced((REPROBE_AFTER - TRIAL_BYTES) as usize - 1, at(400)));
        assert!(path.on_spliced(1, at(500)));
        assert_eq!(path, probing);
        // The holding pipe does not pay (32 MiB in 400 ms: as fast as reads): reads
        // come back, untimed, for as long as the holding pipe would have run.
        let mut path = on_trial;
        assert!(path.on_spliced(TRIAL_BYTES as usize, at(600)));
        assert_eq!(
            path,
            Path::Resting {
                bytes: 0,
                until: REPROBE_AFTER
            }
        );
        // Outside a flood nothing changes.
        let mut reading = Path::Reading;
        assert!(!reading.on_read(window, Some(Duration::from_secs(1)), at(0)));
        assert!(!reading.on_spliced(1 << 30, at(1)));
        assert_eq!(reading, Path::Reading);
    }

    /// The flood path itself: moves inside the kernel (splice), where
    /// the backend has them.
    #[cfg(all(target_os = "linux", not(mcp_bound_portable)))]
    mod kernel_moves {
        use super::*;
        use std::io::Write;

        /// A helper's stderr: a non-blocking pipe we write into.
        fn source() -> (File, File) {
            let (read, write, _) = (sys::MOVER.unwrap().private_pipe)(1 << 20).unwrap();
            (File::from(read), File::from(write))
        }

        /// Diagnostics on the flood path: a flood whose reads were slow.
        fn flooded(head: usize, tail: usize, prefix: &[u8]) -> Diagnostics {
            let mut diag = Diagnostics::new(Capture::new(head, tail), FloodPath::Auto);
            diag.push(prefix);
            assert!(diag.probing(), "not judged a flood");
            slow_windows(&mut diag);
            assert!(diag.splicing(), "the flood path did not start");
            diag
        }

        fn same_capture(a: &Capture, b: &Capture) {
            assert_eq!(a.head(), b.head());
            assert_eq!(a.tail(), b.tail());
            assert_eq!(a.bytes_seen(), b.bytes_seen());
            assert_eq!(a.bytes_retained(), b.bytes_retained());
        }

        #[test]
        fn a_flood_moved_in_the_kernel_keeps_what_reading_keeps() {
            let data = stream(3 << 20);
            let prefix = &data[..300 * 1024];
            let (read, mut write) = source();
            let mut diag = flooded(100, 16 * 1024, prefix);
            for chunk in data[prefix.len()..].chunks(200_000) {
                write.write_all(chunk).unwrap();
                let mut moved = 0;
                while moved < chunk.len() {
                    match diag.take_from(read.as_fd(), moved == 0, Instant::now()) {
                        Took::Bytes(n) => moved += n,
                        other => panic!("unexpected {other:?}"),
                    }
                }
            }
            drop(write);
            assert_eq!(
                diag.take_from(read.as_fd(), true, Instant::now()),
                Took::Eof
            );
            let mut whole = Capture::new(100, 16 * 1024);
            whole.push(&data);
            same_capture(&diag.finish(), &whole);
        }

        #[test]
        fn tiny_writes_that_fill_the_holding_pipes_slots_never_stall_the_stream() {
            // One byte per move: every move takes a holding pipe slot of its own, so
            // the holding pipe fills (a few hundred slots) long before it holds the
            // tail. Each move must still succeed.
            let data = stream(400 * 1024);
            let prefix = &data[..300 * 1024];
            let (read, mut write) = source();
            let mut diag = flooded(0, 16 * 1024, prefix);
            for byte in &data[prefix.len()..] {
                write.write_all(std::slice::from_ref(byte)).unwrap();
                assert_eq!(
                    diag.take_from(read.as_fd(), true, Instant::now()),
                    Took::Bytes(1)
                );
            }
            assert!(diag.splicing());
            let mut whole = Capture::new(0, 16 * 1024);
            whole.push(&data);
            same_capture(&diag.finish(), &whole);
        }

        #[test]
        fn bytes_from_elsewhere_land_after_the_held_ones() {
            let data = stream(600 * 1024);
            let (read, mut write) = source();
            let mut diag = flooded(0, 64, &data[..300 * 1024]);
            write.write_all(&data[300 * 1024..]).unwrap();
            while let Took::Bytes(_) = diag.take_from(read.as_fd(), false, Instant::now()) {}
            diag.push(b"[diverted]");
            write.write_all(b"after").unwrap();
            assert_eq!(
                diag.take_from(read.as_fd(), true, Instant::now()),
                Took::Bytes(5)
            );
            let capture = diag.finish();
            let tail = capture.tail();
            assert!(
                tail.ends_with(b"\n[diverted]after"),
                "{:?}",
                String::from_utf8_lossy(&tail)
            );
            assert_eq!(capture.bytes_seen(), data.len() as u64 + 15);
        }

        #[test]
        fn measuring_again_settles_the_ring_and_keeps_the_order() {
            let data = stream(REPROBE_AFTER as usize + (1 << 20));
            let prefix = &data[..300 * 1024];
            let (read, mut write) = source();
            let mut diag = flooded(0, 1000, prefix);
            let mut rest = &data[prefix.len()..];
            while diag.splicing() {
                let chunk = &rest[..rest.len().min(512 * 1024)];
                write.write_all(chunk).unwrap();
                rest = &rest[chunk.len()..];
                while let Took::Bytes(_) = diag.take_from(read.as_fd(), false, Instant::now()) {}
            }
            assert!(diag.probing(), "measuring reads again");
            assert_eq!(
                diag.take_from(read.as_fd(), true, Instant::now()),
                Took::Off
            );
            // The rest arrives by reads, after what the holding pipe held.
            let mut buf = vec![0; 1 << 20];
            while let Ok(n) = read.try_clone().unwrap().read(&mut buf) {
                diag.push(&buf[..n]);
            }
            diag.push(rest);
            let mut whole = Capture::new(0, 1000);
            whole.push(&data);
            same_capture(&diag.finish(), &whole);
        }
    }
}
