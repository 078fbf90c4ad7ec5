//! The approval gate before dispatch: an approver command, or a question on
//! the controlling terminal, on a wall-clock deadline that nothing extends.
//!
//! Its rules: an approval describes one concrete action at one
//! moment; it is requested as soon as the call is known (nothing any
//! process prints can delay it); output never resets the deadline; a denied
//! or expired action never runs.
//!
//! An approver runs through the same supervisor loop as any helper: its own
//! process group, both pipes drained and bounded (its stdout is captured,
//! not forwarded), and at the deadline its whole tree is terminated. It
//! reads the request, one JSON object, from a file on its stdin, so a
//! large request can never block mcp-bound.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use crate::child::{self, ChildExit};
use crate::record::{ApprovalMethod, Decision, Limits};
use crate::redact::Redactor;
use crate::signals::{Signal, SignalPipe};
use crate::sink::Sink;
use crate::supervise;
use crate::sys;
use crate::termination::{Cancellation, Policy};

/// Bytes of the approver's output kept for the record.
const APPROVER_TAIL: usize = 4096;
/// Longest tty answer read; anything longer is not "y".
const MAX_ANSWER: usize = 64;

/// What the approver is asked about: the action exactly as it will run.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Request<'a> {
    pub call_id: &'a str,
    pub session_id: Option<&'a str>,
    /// Exact, unmasked: the approver must see what will run.
    pub argv: Vec<String>,
    pub cwd: Option<&'a str>,
    pub timeout_ms: Option<u64>,
    pub limits: &'a Limits,
}

pub(crate) enum Method {
    Command(Vec<OsString>),
    Tty,
}

impl Method {
    pub(crate) fn record(&self) -> ApprovalMethod {
        match self {
            Method::Command(_) => ApprovalMethod::Command,
            Method::Tty => ApprovalMethod::Tty,
        }
    }
}

/// How the gate ended.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// None when a signal to mcp-bound cancelled the call first.
    pub decision: Option<Decision>,
    pub requested_at: SystemTime,
    pub decided_at: SystemTime,
    pub waited: Duration,
    pub approver_exit: Option<ChildExit>,
    pub excerpt: Option<String>,
    /// The signal that cancelled the call while it waited.
    pub cancelled_by: Option<Signal>,
    /// Why the approval could not be asked, with `Decision::Error`.
    pub error: Option<String>,
}

/// Settings the gate borrows from the call.
pub(crate) struct Gate<'a> {
    pub timeout: Duration,
    pub wait_delay: Duration,
    pub redactor: &'a Redactor,
    pub signals: &'a SignalPipe,
    pub origin: Instant,
    /// The call's mark: the approver's tree carries it (as
    /// `MCP_BOUND_APPROVER`), so the watchdog ends that tree too if
    /// mcp-bound dies, with or without a parent-death signal.
    pub mark: Option<String>,
}

/// Ask, and wait at most `gate.timeout` for the answer.
pub(crate) fn ask(method: &Method, request: &Request<'_>, gate: &Gate<'_>) -> Outcome {
    let requested_at = SystemTime::now();
    let started = Instant::now();
    let verdict = match method {
        Method::Command(argv) => by_command(argv, request, gate, started),
        Method::Tty => by_tty(request, gate, started),
    };
    let waited = started.elapsed();
    Outcome {
        decision: verdict.decision,
        requested_at,
        decided_at: requested_at + waited,
        waited,
        approver_exit: verdict.approver_exit,
        excerpt: verdict.excerpt,
        cancelled_by: verdict.cancelled_by,
        error: verdict.error,
    }
}

/// What a way of asking found out; `ask` adds the times.
#[derive(Default)]
struct Verdict {
    decision: Option<Decision>,
    approver_exit: Option<ChildExit>,
    excerpt: Option<String>,
    cancelled_by: Option<Signal>,
    error: Option<String>,
}

fn decided(decision: Option<Decision>) -> Verdict {
    Verdict {
        decision,
        ..Verdict::default()
    }
}

fn error(text: String) -> Verdict {
    Verdict {
        error: Some(text),
        ..decided(Some(Decision::Error))
    }
}

fn by_command(
    argv: &[OsString],
    request: &Request<'_>,
    gate: &Gate<'_>,
    started: Instant,
) -> Verdict {
    let mut json = serde_json::to_vec(request).expect("a request serializes");
    json.push(b'\n');
    let stdin = match sys::file_with(&json) {
        Ok(fd) => fd,
        Err(e) => return error(format!("cannot prepare the approval request: {e}")),
    };
    let program = argv[0].to_string_lossy().into_owned();
    let confine = child::Confine::approver(gate.mark.as_deref());
    let approver = match child::spawn(argv, child::StdinFrom::Fd(stdin), &confine) {
        Ok(approver) => approver,
        Err(child::SpawnError::NotFound(e) | child::SpawnError::NotExecutable(e)) => {
            return error(format!("approver {program}: cannot run: {e}"));
        }
    };
    let config = supervise::Config {
        watchdog: None,
        session: None,
        stderr_log: None,
        policy: Policy {
            timeout: Some(gate.timeout),
            signal: crate::signals::Stop::Signal(crate::signals::SIGTERM),
            // The approval's deadline is wall-clock and nothing extends
            // it: at the deadline TERM and KILL go out together, so an
            // approver that ignores TERM cannot stretch it by --grace.
            grace: Duration::ZERO,
            wait_delay: gate.wait_delay,
            stdin_close_grace: None,
        },
        head_bytes: 0,
        tail_bytes: APPROVER_TAIL,
        flood_path: crate::diagnostics::FloodPath::Auto.here(),
        stdout: supervise::StdoutMode::Capture,
        live: None,
        redactor: gate.redactor.clone(),
    };
    let mut nowhere = Sink::absent();
    let run = supervise::supervise(
        approver,
        started,
        gate.origin,
        gate.signals,
        &mut nowhere,
        config,
    );
    if let Some(failure) = run.failure {
        return error(format!("approver {program}: {failure}"));
    }
    let excerpt = Some(run.capture.excerpt(APPROVER_TAIL, gate.redactor).text);
    let (decision, cancelled_by) = match run.cancelled_while_running {
        Some(Cancellation::Timeout) => (Some(Decision::Expired), None),
        Some(Cancellation::Signal(signal)) => (None, Some(signal)),
        // The approver has no stdout reader and no stdin watch of ours.
        Some(Cancellation::ClientDisconnected | Cancellation::StdinClosed) => {
            (Some(Decision::Denied), None)
        }
        None => match run.exit {
            Some(ChildExit::Code(0)) => (Some(Decision::Approved), None),
            _ => (Some(Decision::Denied), None),
        },
    };
    Verdict {
        approver_exit: run.exit,
        excerpt,
        cancelled_by,
        ..decided(decision)
    }
}

/// The question on /dev/tty, never on stdin or stdout: those belong to
/// the helper and the protocol. The default answer is no.
fn by_tty(request: &Request<'_>, gate: &Gate<'_>, started: Instant) -> Verdict {
    let mut tty = match sys::open_tty() {
        Ok(tty) => tty,
        Err(e) => return error(format!("--approve tty: no terminal to ask on: {e}")),
    };
    let argv = serde_json::to_string(&request.argv).expect("strings serialize");
    let shown = crate::shown::untrusted;
    let question = format!(
        "\nmcp-bound: approve this call?\n  argv: {}\n  cwd:  {}\n  call: {}\n\
         Run it? [y/N] (expires in {}s) ",
        shown(&argv),
        shown(request.cwd.unwrap_or("?")),
        shown(request.call_id),
        gate.timeout.as_secs_f64()
    );
    if let Err(e) = tty.write_all(question.as_bytes()) {
        return error(format!("--approve tty: cannot ask: {e}"));
    }
    let deadline = started + gate.timeout;
    let mut answer = Vec::new();
    let mut ready = Vec::with_capacity(2);
    use crate::sys::fd::AsRawFd;
    let interests = [
        sys::Interest::new(gate.signals.fd().as_raw_fd(), true, false),
        sys::Interest::new(tty.as_raw_fd(), true, false),
    ];
    loop {
        match sys::poll_until(&interests, &mut ready, deadline) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                let _ = tty.write_all(b"\nmcp-bound: approval expired; not running it.\n");
                return decided(Some(Decision::Expired));
            }
            Err(e) => return error(format!("--approve tty: {e}")),
        }
        if ready[0].readable
            && let Some(&(signal, _)) = gate.signals.take().terminating.first()
        {
            let _ = tty.write_all(b"\nmcp-bound: cancelled; not running it.\n");
            return Verdict {
                cancelled_by: Some(signal),
                ..decided(None)
            };
        }
        if ready[1].readable || ready[1].hangup || ready[1].error {
            let mut buf = [0u8; MAX_ANSWER];
            let n = match tty.read(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => 0,
            };
            answer.extend_from_slice(&buf[..n]);
            if n == 0 || answer.contains(&b'\n') || answer.len() >= MAX_ANSWER {
                let text = String::from_utf8_lossy(&answer).trim().to_ascii_lowercase();
                let approved = text == "y" || text == "yes";
                let reply: &[u8] = if approved {
                    b"mcp-bound: approved.\n"
                } else {
                    b"mcp-bound: denied.\n"
                };
                let _ = tty.write_all(reply);
                return decided(Some(if approved {
                    Decision::Approved
                } else {
                    Decision::Denied
                }));
            }
        }
    }
}
