//! The one exporter thread, and the bounded queue that feeds it. It only
//! takes finished spans from the queue, batches them, and POSTs each
//! batch to the collector over plain HTTP/1.1; it never touches the
//! helper's pipes, the signals or the loop's clock. The loop only ever
//! `try_send`s: a full queue drops the span and counts it. A batch the
//! collector refuses, or that fails, is dropped and counted too, never
//! retried behind the caller's back, and never a failure of the call.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::config::{Endpoint, OtelConfig};
use super::span::Span;
use crate::redact::Redactor;

/// How long the start waits for the endpoint's name to resolve before
/// the helper is dispatched anyway (the exporter goes on resolving).
pub(super) const RESOLVE_WAIT: Duration = Duration::from_millis(250);

/// Most bytes of a collector's answer read (its status line and headers).
const MAX_ANSWER: usize = 16 * 1024;

/// What export did, shared with the exporter thread.
#[derive(Default)]
pub(super) struct Counters {
    pub queued: AtomicU64,
    pub exported: AtomicU64,
    pub dropped: AtomicU64,
    /// Queued spans whose batch failed (in `dropped` too).
    pub failed: AtomicU64,
    /// The first thing that went wrong, in words (never a header value).
    pub error: Mutex<Option<String>>,
}

impl Counters {
    /// Something went wrong: kept if it is the first.
    fn said(&self, why: String) {
        let mut error = self.error.lock().unwrap_or_else(|e| e.into_inner());
        error.get_or_insert(why);
    }

    fn failed(&self, spans: usize, why: String) {
        self.dropped.fetch_add(spans as u64, Ordering::Relaxed);
        self.failed.fetch_add(spans as u64, Ordering::Relaxed);
        self.said(why);
    }
}

/// The loop's end of the queue.
pub(super) struct Exporter {
    queue: Option<SyncSender<Span>>,
    pub counters: Arc<Counters>,
    /// The read end of a pipe whose write end the thread holds: it hangs
    /// up when the thread has sent all it will.
    done: std::fs::File,
    flush_timeout: Duration,
}

impl Exporter {
    /// Start the thread; it resolves the endpoint first, and the start
    /// waits up to `RESOLVE_WAIT` for that.
    pub(super) fn start(config: &OtelConfig, redactor: Redactor) -> std::io::Result<Exporter> {
        let (queue, spans) = std::sync::mpsc::sync_channel(config.max_queue);
        let (done, done_tx) = crate::sys::pipe_cloexec()?;
        let (resolved_tx, resolved) = std::sync::mpsc::channel();
        let counters = Arc::new(Counters::default());
        let thread = Worker {
            config: config.clone(),
            masker: super::proto::Masker::new(redactor),
            counters: Arc::clone(&counters),
            durations: Default::default(),
        };
        std::thread::Builder::new()
            .name("otel-export".into())
            .spawn(move || {
                let mut thread = thread;
                let addrs = thread.resolve();
                let _ = resolved_tx.send(());
                thread.run(&spans, &addrs);
                drop(done_tx);
            })?;
        let _ = resolved.recv_timeout(RESOLVE_WAIT);
        Ok(Exporter {
            queue: Some(queue),
            counters,
            done,
            flush_timeout: config.flush_timeout,
        })
    }

    /// A finished span: queued, or dropped and counted. Never waits.
    pub(super) fn submit(&self, span: Span) {
        let Some(queue) = &self.queue else {
            return;
        };
        match queue.try_send(span) {
            Ok(()) => {
                self.counters.queued.fetch_add(1, Ordering::Relaxed);
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The end: no more spans; wait at most the flush bound for the last
    /// batches to go, and not past a terminating signal (the host wants us
    /// gone). Whatever is still queued then is lost with the process: the
    /// record already said what was known.
    pub(super) fn finish(&mut self, signals: &crate::sys::SignalPipe) {
        use crate::sys::fd::AsRawFd;
        drop(self.queue.take());
        let deadline = Instant::now() + self.flush_timeout;
        let interests = [
            crate::sys::Interest::new(self.done.as_raw_fd(), true, false),
            crate::sys::Interest::new(signals.fd().as_raw_fd(), true, false),
        ];
        let mut ready = Vec::new();
        loop {
            if !signals.take().terminating.is_empty() {
                return;
            }
            match crate::sys::poll_until(&interests, &mut ready, deadline) {
                Ok(())
                    if ready
                        .first()
                        .is_some_and(|r| r.readable || r.hangup || r.error) =>
                {
                    return;
                }
                // A signal (the pipe is read above) or EINTR: look again.
                Ok(()) => {}
                Err(_) => return,
            }
        }
    }
}

struct Worker {
    config: OtelConfig,
    masker: super::proto::Masker,
    counters: Arc<Counters>,
    durations: super::metrics::Durations,
}

/// Where each signal goes, once resolved.
struct Addresses {
    traces: Option<Vec<SocketAddr>>,
    metrics: Option<Vec<SocketAddr>>,
}

impl Worker {
    fn resolve_one(&self, endpoint: &Endpoint) -> Option<Vec<SocketAddr>> {
        let name = endpoint.host.trim_start_matches('[').trim_end_matches(']');
        match (name, endpoint.port).to_socket_addrs() {
            Ok(addrs) => Some(addrs.collect::<Vec<_>>()).filter(|a| !a.is_empty()),
            Err(err) => {
                self.counters
                    .said(format!("cannot resolve {}: {err}", endpoint.host));
                None
            }
        }
    }

    fn resolve(&self) -> Addresses {
        let traces = self.resolve_one(&self.config.endpoint);
        let metrics = self.config.metrics.as_ref().and_then(|m| {
            let same = m.endpoint.host == self.config.endpoint.host
                && m.endpoint.port == self.config.endpoint.port;
            if same {
                traces.clone()
            } else {
                self.resolve_one(&m.endpoint)
            }
        });
        Addresses { traces, metrics }
    }

    /// Batches: sent when full, when the oldest span waited the schedule
    /// delay, and at the end; the metric every interval it has news, and
    /// at the end.
    fn run(&mut self, spans: &Receiver<Span>, addrs: &Addresses) {
        let mut batch: Vec<Span> = Vec::new();
        let mut oldest: Option<Instant> = None;
        let interval = self.config.metrics.as_ref().map(|m| m.interval);
        let mut metrics_due = interval.map(|every| Instant::now() + every);
        loop {
            let spans_due = oldest.map(|at| at + self.config.schedule_delay);
            let wake = match (spans_due, metrics_due) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let got = match wake {
                None => spans.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(at) => spans.recv_timeout(at.saturating_duration_since(Instant::now())),
            };
            match got {
                Ok(span) => {
                    oldest.get_or_insert_with(Instant::now);
                    batch.push(span);
                    if batch.len() >= self.config.max_batch {
                        self.send(&mut batch, addrs);
                        oldest = None;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    let now = Instant::now();
                    if spans_due.is_some_and(|at| at <= now) {
                        self.send(&mut batch, addrs);
                        oldest = None;
                    }
                    if let (Some(at), Some(every)) = (metrics_due, interval)
                        && at <= now
                    {
                        self.send_metrics(addrs);
                        metrics_due = Some(now + every);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    // The end: what is queued, in batches, then the metric.
                    while !batch.is_empty() {
                        let rest = batch.split_off(batch.len().min(self.config.max_batch));
                        self.send(&mut batch, addrs);
                        batch = rest;
                    }
                    self.send_metrics(addrs);
                    return;
                }
            }
        }
    }

    fn send(&mut self, batch: &mut Vec<Span>, addrs: &Addresses) {
        if batch.is_empty() {
            return;
        }
        if self.config.metrics.is_some() {
            for span in batch.iter() {
                self.durations.add(span);
            }
        }
        let n = batch.len();
        let Some(traces) = addrs.traces.as_deref() else {
            self.counters
                .failed(n, "the endpoint's name did not resolve".into());
            batch.clear();
            return;
        };
        let body = super::proto::encode(batch, &self.config.resource, &self.masker);
        batch.clear();
        let config = &self.config;
        match post(
            traces,
            &config.endpoint,
            &config.headers,
            config.export_timeout,
            &body,
        ) {
            Ok(()) => {
                self.counters
                    .exported
                    .fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(why) => self.counters.failed(n, why),
        }
    }

    /// The metric's cumulative points, when there is news.
    fn send_metrics(&mut self, addrs: &Addresses) {
        let (Some(metrics), Some(to)) = (&self.config.metrics, addrs.metrics.as_deref()) else {
            return;
        };
        if !self.durations.fresh() {
            return;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let body = self
            .durations
            .encode(&self.config.resource, &self.masker, now);
        if let Err(why) = post(
            to,
            &metrics.endpoint,
            &metrics.headers,
            self.config.export_timeout,
            &body,
        ) {
            self.counters.said(format!("metrics: {why}"));
        }
    }
}

/// One export: a POST of `body`, `Connection: close`, within the export
/// timeout. Ok for any 2xx answer.
fn post(
    addrs: &[SocketAddr],
    endpoint: &Endpoint,
    headers: &[(String, String)],
    timeout: Duration,
    body: &[u8],
) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| format!("{} did not answer within {timeout:?}", endpoint.url()))
    };
    let mut last = String::new();
    let mut stream = None;
    for addr in addrs {
        match TcpStream::connect_timeout(addr, left()?) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(err) => last = format!("cannot connect to {}: {err}", endpoint.url()),
        }
    }
    let mut stream = stream.ok_or(last)?;
    let _ = stream.set_nodelay(true);
    let mut head = format!(
        "POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\nConnection: close\r\nUser-Agent: mcp-bound/{}\r\n",
        endpoint.path,
        endpoint.host,
        endpoint.port,
        body.len(),
        env!("CARGO_PKG_VERSION"),
    );
    for (name, value) in headers {
        head.push_str(name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    let io = |err: std::io::Error| format!("export to {} failed: {err}", endpoint.url());
    for part in [head.as_bytes(), body] {
        let mut part = part;
        while !part.is_empty() {
            stream.set_write_timeout(Some(left()?)).map_err(io)?;
            let n = stream.write(part).map_err(io)?;
            part = &part[n..];
        }
    }
    let mut answer = Vec::with_capacity(512);
    let mut buf = [0u8; 2048];
    while !answer.windows(2).any(|w| w == b"\r\n") && answer.len() < MAX_ANSWER {
        stream.set_read_timeout(Some(left()?)).map_err(io)?;
        match stream.read(&mut buf).map_err(io)? {
            0 => break,
            n => answer.extend_from_slice(&buf[..n]),
        }
    }
    let status = std::str::from_utf8(&answer)
        .ok()
        .and_then(|text| text.lines().next())
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse::<u16>().ok());
    match status {
        Some(code) if (200..300).contains(&code) => Ok(()),
        Some(code) => Err(format!("{} answered HTTP {code}", endpoint.url())),
        None => Err(format!("{} gave no HTTP answer", endpoint.url())),
    }
}
