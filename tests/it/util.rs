//! Test harness: runs the real mcp-bound binary on tiny shell helpers.
//!
//! Every run gets a unique tag in its environment (inherited by the helper
//! and everything it starts), a temporary directory and a `--record` path.
//! When a run ends, the harness validates the record against the published
//! JSON Schema and checks that no process carrying the tag is left running.
//! Any failed check prints the command, the exit status, both streams and
//! the record.

#![allow(dead_code)]

use std::ffi::OsString;
use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Say that a test skipped part or all of itself, and why, where `cargo
/// test` shows it: libtest captures what a passing test prints through
/// `eprintln!`, but not a write to the stderr handle itself.
#[macro_export]
macro_rules! skipped {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), "SKIPPED: {}", format_args!($($arg)*));
    }};
}

pub const BIN: &str = env!("CARGO_BIN_EXE_mcp-bound");
pub const TAG_VAR: &str = "MCP_BOUND_TEST_TAG";
/// A run that takes this long is hung: fail rather than block the suite.
const WATCHDOG: Duration = Duration::from_secs(120);

fn journal_schema() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/schema/journal.schema.json"
        ))
        .expect("journal schema file");
        let schema: Value = serde_json::from_str(&text).expect("journal schema is JSON");
        jsonschema::validator_for(&schema).expect("journal schema is a valid JSON Schema")
    })
}

/// Validate every line of the journal at `path` against
/// schema/journal.schema.json. A line that does not parse fails, unless
/// it is a torn fragment that the next line, a `recover` entry, accounts
/// for (a test tore it on purpose).
#[track_caller]
pub fn check_journal_schema(path: &Path) {
    check_journal_lines(path, 0);
}

/// As [`check_journal_schema`], for the bytes from `start` on: what one
/// run of mcp-bound appended (a test may have written or torn what came
/// before). A lone newline there finished a torn line before `start`.
#[track_caller]
pub fn check_journal_lines(path: &Path, start: u64) {
    // Only a regular file is a journal (a test may point --journal at
    // /dev/full or a directory to see it refused).
    if !std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_file()) {
        return;
    }
    let Ok(all) = std::fs::read(path) else {
        return;
    };
    // Other writers may append at the same time: begin at a line start,
    // and leave out a last line still being written.
    let mut start = start as usize;
    if start > 0 && all.get(start - 1) != Some(&b'\n') {
        match all[start.min(all.len())..].iter().position(|b| *b == b'\n') {
            Some(i) => start += i + 1,
            None => return,
        }
    }
    let Some(bytes) = all.get(start..) else {
        return;
    };
    let bytes = bytes.strip_prefix(b"\n").unwrap_or(bytes);
    let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let bytes = &bytes[..complete];
    let mut offset = all.len() as u64 - bytes.len() as u64;
    let lines: Vec<&[u8]> = bytes.split_inclusive(|b| *b == b'\n').collect();
    for (i, line) in lines.iter().enumerate() {
        let here = offset;
        offset += line.len() as u64;
        let text = String::from_utf8_lossy(line);
        let entry: Value = match parse_json(line) {
            Ok(entry) => entry,
            Err(err) => {
                let recovered = lines
                    .get(i + 1)
                    .and_then(|next| parse_json(next).ok())
                    .is_some_and(|next| next["kind"] == "recover" && next["torn_offset"] == here);
                if recovered {
                    continue;
                }
                panic!(
                    "journal {} line {}: not JSON ({err}): {text:?}",
                    path.display(),
                    i + 1
                );
            }
        };
        let errors: Vec<String> = journal_schema()
            .iter_errors(&entry)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "journal {} line {} does not match schema/journal.schema.json: {errors:?}\n{text}",
            path.display(),
            i + 1
        );
    }
}

/// One JSON text as a `Value`. serde_json (without arbitrary_precision,
/// which would change the crate under test too) cannot hold a number past
/// f64's range, such as a client's id `1e400`, although the grammar allows
/// it: such a number is checked against the grammar and then held as the
/// string of its digits. Anything else that serde_json refuses fails.
pub fn parse_json(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    match serde_json::from_slice(bytes) {
        Ok(value) => Ok(value),
        Err(err) => {
            let text = std::str::from_utf8(bytes).map_err(|_| err)?;
            let quoted = quote_huge_numbers(text);
            if quoted == text {
                return serde_json::from_slice(bytes);
            }
            serde_json::from_str(&quoted)
        }
    }
}

/// `text` with each number token that f64 cannot hold put in quotes.
fn quote_huge_numbers(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut at, mut copied, mut in_string) = (0, 0, false);
    while at < bytes.len() {
        let b = bytes[at];
        if in_string {
            match b {
                b'\\' => at += 1,
                b'"' => in_string = false,
                _ => {}
            }
            at += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
            at += 1;
            continue;
        }
        if b == b'-' || b.is_ascii_digit() {
            let start = at;
            while at < bytes.len()
                && matches!(bytes[at], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
            {
                at += 1;
            }
            let token = &text[start..at];
            if token.parse::<f64>().is_ok_and(|f| f.is_infinite()) {
                out.push_str(&text[copied..start]);
                out.push('"');
                out.push_str(token);
                out.push('"');
                copied = at;
            }
            continue;
        }
        at += 1;
    }
    out.push_str(&text[copied..]);
    out
}

fn schema() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/schema/record.schema.json"
        ))
        .expect("schema file");
        let schema: Value = serde_json::from_str(&text).expect("schema is JSON");
        jsonschema::validator_for(&schema).expect("schema is a valid JSON Schema")
    })
}

pub fn unique_tag() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "t{}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        nanos % 1_000_000_007
    )
}

pub struct Call {
    /// The journal's length when this call started: what comes after it
    /// is what this call appended, and is validated against the schema.
    journal_start: u64,
    /// A command that runs mcp-bound (e.g. setpriv to drop privileges).
    prefix: Vec<OsString>,
    options: Vec<OsString>,
    helper: Vec<OsString>,
    env: Vec<(String, String)>,
    dir: tempfile::TempDir,
    tag: String,
    record: bool,
    stdin: Option<Stdio>,
    /// The test SIGKILLed mcp-bound's watchdog: nobody is left to remove
    /// the call's cgroup, so the harness does.
    killed_watchdog: bool,
}

impl Call {
    pub fn new(helper: &[&str]) -> Call {
        Call {
            journal_start: 0,
            prefix: Vec::new(),
            options: Vec::new(),
            helper: helper.iter().map(OsString::from).collect(),
            env: Vec::new(),
            dir: tempfile::tempdir().expect("temp dir"),
            tag: unique_tag(),
            record: true,
            stdin: None,
            killed_watchdog: false,
        }
    }

    /// A helper written as a `sh -c` one-liner.
    pub fn sh(script: &str) -> Call {
        Call::new(&["sh", "-c", script])
    }

    pub fn opt(mut self, options: &[&str]) -> Call {
        self.options.extend(options.iter().map(OsString::from));
        self
    }

    /// Run mcp-bound through `prefix` (its argv comes after it).
    pub fn via(mut self, prefix: &[&str]) -> Call {
        self.prefix = prefix.iter().map(OsString::from).collect();
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Call {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    pub fn without_record(mut self) -> Call {
        self.record = false;
        self
    }

    pub fn stdin(mut self, stdin: Stdio) -> Call {
        self.stdin = Some(stdin);
        self
    }

    /// A path inside this run's temporary directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn record_path(&self) -> PathBuf {
        self.path("record.json")
    }

    /// The --journal this call writes, if any.
    fn journal_path(&self) -> Option<PathBuf> {
        self.options
            .iter()
            .position(|option| option == "--journal")
            .and_then(|i| self.options.get(i + 1))
            .map(PathBuf::from)
    }

    fn argv(&self) -> Vec<OsString> {
        let mut argv = Vec::new();
        if self.record {
            argv.push(OsString::from("--record"));
            argv.push(self.record_path().into_os_string());
        }
        argv.extend(self.options.iter().cloned());
        if !self.helper.is_empty() {
            argv.push(OsString::from("--"));
            argv.extend(self.helper.iter().cloned());
        }
        argv
    }

    fn describe(&self) -> String {
        let mut text = String::from("mcp-bound");
        for arg in self.argv() {
            text.push(' ');
            let arg = arg.to_string_lossy();
            if arg.contains([' ', '\'', '"', '$', ';', '&', '|', '>', '<']) {
                text.push_str(&format!("'{}'", arg.replace('\'', "'\\''")));
            } else {
                text.push_str(&arg);
            }
        }
        text
    }

    fn command(&mut self) -> Command {
        self.journal_start = self
            .journal_path()
            .and_then(|path| std::fs::metadata(path).ok())
            .map_or(0, |meta| meta.len());
        let mut command = match self.prefix.split_first() {
            Some((program, args)) => {
                let mut command = Command::new(program);
                command.args(args).arg(BIN);
                command
            }
            None => Command::new(BIN),
        };
        with_default_signals(&mut command);
        command
            .args(self.argv())
            .env(TAG_VAR, &self.tag)
            .stdin(self.stdin.take().unwrap_or_else(Stdio::null))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for name in [
            "MCP_BOUND_TIMEOUT",
            "MCP_BOUND_SIGNAL",
            "MCP_BOUND_GRACE",
            "MCP_BOUND_RECORD",
            "MCP_BOUND_RECORD_FD",
        ] {
            command.env_remove(name);
        }
        for (key, value) in &self.env {
            command.env(key, value);
        }
        command
    }

    /// Run to the end, collecting both streams.
    pub fn run(mut self) -> Done {
        let child = self.command().spawn().expect("spawn mcp-bound");
        Started::new(self, child).finish()
    }

    /// Start, for tests that talk to the run while it goes on.
    pub fn start(mut self) -> Started {
        let child = self.command().spawn().expect("spawn mcp-bound");
        Started::new(self, child)
    }
}

pub struct Started {
    call: Call,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Option<BufReader<ChildStdout>>,
    stdout_seen: Vec<u8>,
    stderr: mpsc::Receiver<Vec<u8>>,
    started: Instant,
}

fn read_all_in_thread<R: Read + Send + 'static>(mut reader: R) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = reader.read_to_end(&mut bytes);
        let _ = tx.send(bytes);
    });
    rx
}

impl Started {
    fn new(call: Call, mut child: Child) -> Started {
        let stderr = read_all_in_thread(child.stderr.take().unwrap());
        let stdout = child.stdout.take().map(BufReader::new);
        let stdin = child.stdin.take();
        Started {
            call,
            child,
            stdin,
            stdout,
            stdout_seen: Vec::new(),
            stderr,
            started: Instant::now(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn call(&self) -> &Call {
        &self.call
    }

    /// Read stdout lines until one contains `needle` (a readiness handshake).
    pub fn wait_for_line(&mut self, needle: &str) {
        let reader = self.stdout.as_mut().expect("stdout already taken");
        loop {
            let mut line = Vec::new();
            let n = reader.read_until(b'\n', &mut line).expect("read stdout");
            self.stdout_seen.extend_from_slice(&line);
            if n == 0 {
                panic!(
                    "stdout ended before a line containing {needle:?}; command: {}\nstdout so far: {}",
                    self.call.describe(),
                    String::from_utf8_lossy(&self.stdout_seen)
                );
            }
            if String::from_utf8_lossy(&line).contains(needle) {
                return;
            }
        }
    }

    /// Write one line to mcp-bound's stdin (the helper reads it).
    pub fn send(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is piped and open");
        stdin.write_all(line).expect("write to stdin");
        stdin.flush().unwrap();
    }

    /// Close mcp-bound's stdin, as a host does to ask for shutdown.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next line of mcp-bound's stdout, with its newline (without, at
    /// EOF). A line that does not come within the harness's watchdog fails
    /// the test with what was seen, rather than hang it.
    pub fn read_line(&mut self) -> Vec<u8> {
        let deadline = Instant::now() + WATCHDOG;
        let reader = self.stdout.as_mut().expect("stdout already taken");
        let mut line = Vec::new();
        loop {
            let buffered = reader.buffer();
            if let Some(i) = buffered.iter().position(|b| *b == b'\n') {
                line.extend_from_slice(&buffered[..=i]);
                reader.consume(i + 1);
                break;
            }
            line.extend_from_slice(buffered);
            let n = buffered.len();
            reader.consume(n);
            let left = deadline.saturating_duration_since(Instant::now());
            if !wait_readable(reader.get_ref(), left) {
                self.stdout_seen.extend_from_slice(&line);
                panic!(
                    "no line on stdout within {WATCHDOG:?}; command: {}\nstdout so far: {}",
                    self.call.describe(),
                    String::from_utf8_lossy(&self.stdout_seen)
                );
            }
            if reader.fill_buf().expect("read stdout").is_empty() {
                break;
            }
        }
        self.stdout_seen.extend_from_slice(&line);
        line
    }

    /// Take mcp-bound's stdin, for tests that write it themselves.
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().expect("stdin is piped and open")
    }

    /// Take mcp-bound's stdout, for tests that read it themselves.
    pub fn take_stdout(&mut self) -> BufReader<ChildStdout> {
        self.stdout.take().expect("stdout already taken")
    }

    /// Block until mcp-bound has a child that has exited and not been
    /// reaped: the helper, which mcp-bound keeps a zombie until the end
    /// (a handshake on observed state, not a sleep).
    pub fn wait_for_exited_child(&self) {
        let pid = self.child.id();
        let deadline = Instant::now() + WATCHDOG;
        loop {
            let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
                .unwrap_or_default();
            let zombie = children.split_whitespace().any(|child| {
                std::fs::read_to_string(format!("/proc/{child}/stat"))
                    .ok()
                    .and_then(|stat| {
                        let rest = &stat[stat.rfind(')')? + 2..];
                        Some(rest.starts_with('Z'))
                    })
                    .unwrap_or(false)
            });
            if zombie {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "no child of mcp-bound exited: {}",
                self.call.describe()
            );
            thread::yield_now();
        }
    }

    /// Block until at least `n` processes of this call's tree run (a
    /// handshake: the helper has forked what it forks).
    pub fn wait_for_tree(&self, n: usize) {
        let deadline = Instant::now() + WATCHDOG;
        while tagged_processes(&self.call.tag).len() < n {
            assert!(
                Instant::now() < deadline,
                "the tree never reached {n} processes"
            );
            thread::yield_now();
        }
    }

    /// Send a signal to mcp-bound (by name, as `kill -s` takes it).
    pub fn signal(&self, name: &str) {
        send_signal(self.child.id(), name);
    }

    /// End the session as a host does, and run to the end: `"close"`
    /// closes our stdin (the SDKs' shutdown); a signal's name sends it
    /// with stdin kept open to the end (Claude Code's SIGINT).
    pub fn finish_by(mut self, end: &str) -> Done {
        if end == "close" {
            self.close_stdin();
            return self.finish();
        }
        let stdin = self.stdin.take();
        self.signal(end);
        let done = self.finish();
        drop(stdin);
        done
    }

    pub fn finish(mut self) -> Done {
        self.stdin = None;
        let stdout_rx = self.stdout.take().map(read_all_in_thread);
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break status;
            }
            if self.started.elapsed() > WATCHDOG {
                let _ = self.child.kill();
                let _ = self.child.wait();
                kill_tagged(&self.call.tag);
                panic!("hung: {} ran over {:?}", self.call.describe(), WATCHDOG);
            }
            thread::sleep(Duration::from_millis(5));
        };
        // Once mcp-bound has exited, nothing may hold its streams open.
        let limit = Duration::from_secs(10);
        let mut stdout = std::mem::take(&mut self.stdout_seen);
        if let Some(rx) = stdout_rx {
            stdout.extend(
                rx.recv_timeout(limit)
                    .expect("stdout still held open after exit"),
            );
        }
        let stderr = self
            .stderr
            .recv_timeout(limit)
            .expect("stderr still held open after exit");
        let record_text = std::fs::read_to_string(self.call.record_path()).ok();
        let done = Done {
            command: self.call.describe(),
            status,
            stdout,
            stderr,
            record: record_text
                .as_deref()
                .and_then(|t| parse_json(t.as_bytes()).ok()),
            record_text,
            tag: self.call.tag.clone(),
            expects_record: self.call.record,
            call: self.call,
        };
        if done.call.killed_watchdog && PORTABLE {
            // Both killed: without a parent-death signal (macOS) nothing
            // is left to end the tree. The platform table says so.
            skipped!(
                "(nothing left running) mcp-bound and its watchdog SIGKILLed: no parent-death signal in the portable build (macOS has none) ends the tree"
            );
            kill_tagged(&done.tag);
        }
        done.check_nothing_left();
        done.check_record_schema();
        if let Some(journal) = done.call.journal_path() {
            check_journal_lines(&journal, done.call.journal_start);
        }
        done
    }
}

/// Start `command` with the terminating signals at their defaults. The
/// caller of the suite may ignore some (`nohup cargo test` ignores SIGHUP),
/// and an ignored signal is inherited through exec: every program a test
/// starts on its own (mcp-bound, or a direct start to compare with) starts
/// as a test expects. A test that wants one ignored sets it up itself.
pub fn with_default_signals(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec, only signal(2), which is
    // async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            use nix::sys::signal::{SigHandler, Signal, signal};
            for signo in [
                Signal::SIGHUP,
                Signal::SIGINT,
                Signal::SIGQUIT,
                Signal::SIGTERM,
                Signal::SIGUSR1,
                Signal::SIGUSR2,
                Signal::SIGALRM,
            ] {
                let _ = signal(signo, SigHandler::SigDfl);
            }
            Ok(())
        });
    }
}

pub fn send_signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args(["-s", name, &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -s {name} {pid} failed");
}

/// Processes whose environment carries `tag`, with their command lines.
pub fn tagged_processes(tag: &str) -> Vec<(u32, String)> {
    let needle = format!("{TAG_VAR}={tag}\0");
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if environ
            .windows(needle.len())
            .any(|window| window == needle.as_bytes())
        {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .unwrap_or_default();
            found.push((pid, cmdline));
        }
    }
    found
}

/// For tests that start mcp-bound themselves (with `TAG_VAR` set to
/// `tag` in its environment): once it has exited, nothing carrying the tag
/// may still run. Waits a little for processes already dying.
#[track_caller]
pub fn assert_nothing_left(tag: &str) {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left = tagged_processes(tag);
        if left.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            kill_tagged(tag);
            panic!("processes left running after mcp-bound exited: {left:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
}

fn kill_tagged(tag: &str) {
    for (pid, _) in tagged_processes(tag) {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
}

pub struct Done {
    pub command: String,
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub record: Option<Value>,
    pub record_text: Option<String>,
    pub tag: String,
    expects_record: bool,
    call: Call,
}

fn clip(bytes: &[u8]) -> String {
    const MAX: usize = 3000;
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= MAX {
        text.into_owned()
    } else {
        let mut cut = text.len() - MAX;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        format!("[... {} bytes not shown ...]{}", cut, &text[cut..])
    }
}

impl fmt::Display for Done {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "\n--- command\n{}", self.command)?;
        writeln!(f, "--- status\n{:?}", self.status)?;
        writeln!(f, "--- stdout\n{}", clip(&self.stdout))?;
        writeln!(f, "--- stderr\n{}", clip(&self.stderr))?;
        let record = match &self.record {
            Some(value) => {
                let mut value = value.clone();
                if let Some(excerpt) = value.pointer_mut("/stderr/excerpt") {
                    let text = excerpt.as_str().unwrap_or_default().to_string();
                    *excerpt = Value::String(clip(text.as_bytes()));
                }
                serde_json::to_string_pretty(&value).unwrap()
            }
            None => format!("(none) {:?}", self.record_text),
        };
        writeln!(f, "--- record\n{record}")
    }
}

impl Done {
    /// Fail with the whole context.
    #[track_caller]
    pub fn check(&self, ok: bool, what: &str) {
        if !ok {
            panic!("check failed: {what}{self}");
        }
    }

    #[track_caller]
    pub fn code(&self) -> i32 {
        match self.status.code() {
            Some(code) => code,
            None => panic!("mcp-bound died of a signal{self}"),
        }
    }

    #[track_caller]
    pub fn expect_code(&self, expected: i32) -> &Self {
        self.check(
            self.status.code() == Some(expected),
            &format!("exit code {expected}"),
        );
        self
    }

    #[track_caller]
    pub fn record(&self) -> &Value {
        match &self.record {
            Some(record) => record,
            None => panic!("no record{self}"),
        }
    }

    #[track_caller]
    pub fn field(&self, pointer: &str) -> &Value {
        match self.record().pointer(pointer) {
            Some(value) => value,
            None => panic!("record has no {pointer}{self}"),
        }
    }

    #[track_caller]
    pub fn expect(&self, pointer: &str, expected: Value) -> &Self {
        let actual = self.field(pointer);
        self.check(
            *actual == expected,
            &format!("record {pointer} = {expected}, found {actual}"),
        );
        self
    }

    /// The record's own exit code matches the process's.
    #[track_caller]
    pub fn expect_state(&self, state: &str, code: i32) -> &Self {
        self.expect_code(code);
        self.expect("/state", Value::from(state));
        self.expect("/exit_code", Value::from(code));
        self
    }

    pub fn events(&self, kind: &str) -> Vec<&Value> {
        self.record()["events"]
            .as_array()
            .map(|events| events.iter().filter(|e| e["event"] == kind).collect())
            .unwrap_or_default()
    }

    pub fn signals_sent(&self) -> Vec<(String, String, String)> {
        self.events("signal_sent")
            .into_iter()
            .map(|e| {
                (
                    e["signal"].as_str().unwrap_or_default().to_string(),
                    e["target"].as_str().unwrap_or_default().to_string(),
                    e["reason"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.call.path(name)
    }

    fn check_nothing_left(&self) {
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            let left = tagged_processes(&self.tag);
            if left.is_empty() {
                break;
            }
            if Instant::now() > deadline {
                kill_tagged(&self.tag);
                panic!("processes left running after mcp-bound exited: {left:?}{self}");
            }
            thread::sleep(Duration::from_millis(20));
        }
        // The call's cgroup is removed too: by mcp-bound or its watchdog,
        // or, when a test killed both, by the test that did.
        let Some(cgroup) = self
            .record
            .as_ref()
            .and_then(|r| r.pointer("/contain/cgroup"))
            .and_then(Value::as_str)
            .map(PathBuf::from)
        else {
            return;
        };
        if self.call.killed_watchdog {
            let _ = std::fs::remove_dir(&cgroup);
        }
        while exists(&cgroup) {
            if Instant::now() > deadline {
                panic!(
                    "the call's cgroup {} is left behind{self}",
                    cgroup.display()
                );
            }
            thread::sleep(Duration::from_millis(20));
            if self.call.killed_watchdog {
                let _ = std::fs::remove_dir(&cgroup);
            }
        }
    }

    fn check_record_schema(&self) {
        if !self.expects_record {
            return;
        }
        let Some(record) = &self.record else {
            // Usage errors stop before any record: the caller checks that.
            // But a record file that exists and does not parse is a failure.
            if let Some(text) = &self.record_text {
                panic!("the record file is not one JSON object: {text:?}{self}");
            }
            return;
        };
        if let Err(errors) = schema_errors(record) {
            panic!("record does not match schema/record.schema.json: {errors:?}{self}");
        }
    }
}

/// The record's errors against schema/record.schema.json, if any.
pub fn schema_errors(record: &Value) -> Result<(), Vec<String>> {
    let errors: Vec<String> = schema()
        .iter_errors(record)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Validate a record that a test produced outside the harness.
#[track_caller]
pub fn check_schema(record: &Value) {
    if let Err(errors) = schema_errors(record) {
        panic!("record does not match schema/record.schema.json: {errors:?}\n{record}");
    }
}

/// Run a Python script (for pseudo-terminals and signal masks, which std
/// does not offer) and collect its output.
pub fn python(script: &str) -> std::process::Output {
    Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::null())
        .output()
        .expect("python3 runs")
}

/// `python3 -c script`, with `input` on its stdin.
pub fn python_reading(script: &str, input: &[u8]) -> std::process::Output {
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().expect("python3 runs")
}

pub fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// Make a FIFO at `path` (a readiness handshake between a test and its
/// helper, or a pipe a test feeds by name).
pub fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Make our end of a pipe non-blocking (it is ours alone).
pub fn set_nonblocking(fd: &impl std::os::fd::AsFd) {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL).expect("F_GETFL"));
    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK)).expect("F_SETFL");
}

/// Whether `fd` becomes readable (or hangs up) within `limit`.
pub fn wait_readable(fd: &impl std::os::fd::AsFd, limit: Duration) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
    let ms = PollTimeout::try_from(limit.as_millis().min(i32::MAX as u128) as i32)
        .unwrap_or(PollTimeout::MAX);
    loop {
        match poll(&mut fds, ms) {
            Ok(n) => return n > 0,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => panic!("poll: {e}"),
        }
    }
}

/// Whether `fd` becomes writable within `limit`.
pub fn wait_writable(fd: &impl std::os::fd::AsFd, limit: Duration) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLOUT)];
    let ms = PollTimeout::try_from(limit.as_millis() as i32).expect("a short limit");
    poll(&mut fds, ms).expect("poll") > 0
}

/// A process's peak resident set (VmHWM), in KiB.
pub fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// One JSON value as a line, with its newline.
pub fn json_line(value: Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(&value).unwrap();
    line.push(b'\n');
    line
}

/// A JSON-RPC request line.
pub fn rpc_request(id: impl Into<Value>, method: &str, params: Value) -> Vec<u8> {
    json_line(serde_json::json!({
        "jsonrpc": "2.0", "id": id.into(), "method": method, "params": params
    }))
}

/// One line of mcp-bound's stdout as a JSON message, or a failure that
/// shows the line.
#[track_caller]
pub fn parse_message(line: &[u8]) -> Value {
    serde_json::from_slice(line).unwrap_or_else(|e| {
        panic!(
            "not one JSON message ({e}): {:?}",
            String::from_utf8_lossy(line)
        )
    })
}

/// Our JSON-RPC fixture server (tests/fixtures/jsonrpc_server.py).
pub const SERVER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/jsonrpc_server.py"
);

/// A call of the fixture server with `flags`, its stdin piped.
pub fn server(flags: &[&str]) -> Call {
    let mut argv = vec!["python3", SERVER];
    argv.extend_from_slice(flags);
    Call::new(&argv).stdin(Stdio::piped())
}

/// Block until process `pid` is gone (a handshake on observed state).
pub fn wait_gone(pid: u64) {
    let deadline = Instant::now() + WATCHDOG;
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        // A zombie whose parent will not reap it counts as gone.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat
            .rfind(')')
            .is_some_and(|i| stat[i + 2..].starts_with('Z'))
        {
            return;
        }
        assert!(Instant::now() < deadline, "process {pid} never went away");
        thread::yield_now();
    }
}

/// The in-flight record at `path`, once it names the watchdog.
pub fn watchdog_of(path: &Path) -> u64 {
    let deadline = Instant::now() + WATCHDOG;
    loop {
        let record: Option<Value> = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        if let Some(pid) = record
            .as_ref()
            .and_then(|r| r["contain"]["watchdog_pid"].as_u64())
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "no watchdog in {}",
            path.display()
        );
        thread::yield_now();
    }
}

/// `mcp-bound SUBCOMMAND ARGS...`: its exit status, stdout and stderr.
pub fn subcommand(name: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).arg(name).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `mcp-bound verify --json` on a journal: whether it passed, and the report.
pub fn verify_report(journal: &Path) -> (bool, Value) {
    let output = Command::new(BIN)
        .args(["verify", "--json"])
        .arg(journal)
        .output()
        .expect("run mcp-bound verify");
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "verify --json printed no report ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    (output.status.success(), report)
}

impl Started {
    /// SIGKILL mcp-bound's watchdog first, then mcp-bound: a crash that
    /// takes both (the machine, an OOM kill of both), so nothing writes
    /// the call's last words.
    pub fn kill_with_watchdog(&mut self) {
        self.call.killed_watchdog = true;
        let watchdog = watchdog_of(&self.call.record_path());
        send_signal(watchdog as u32, "KILL");
        wait_gone(watchdog);
        self.signal("KILL");
    }

    /// SIGKILL mcp-bound alone, and wait for its watchdog to finish.
    pub fn kill_and_wait_for_watchdog(&self) {
        let watchdog = watchdog_of(&self.call.record_path());
        self.signal("KILL");
        wait_gone(watchdog);
    }
}

/// Built with `--cfg mcp_bound_portable`: the binary runs the backend
/// macOS uses (no subreaper, no cgroup, no splice, poll(2)), on Linux.
pub const PORTABLE: bool = cfg!(mcp_bound_portable);

/// What the record names `--contain group`: with a subreaper the group
/// and the sweep; without (macOS, the portable build) the group and the
/// tree's mark.
pub fn group_method() -> &'static str {
    if PORTABLE { "group+mark" } else { "group" }
}

/// The record's `contain.method` for `--contain MODE` in this build.
pub fn method_of(mode: &str) -> &str {
    if mode == "group" {
        group_method()
    } else {
        mode
    }
}

/// Why this build has no cgroup (the portable build runs macOS's
/// backend, which has none), or None.
pub fn no_cgroup_here() -> Option<&'static str> {
    PORTABLE.then_some("no cgroup in the portable build (macOS has none)")
}

/// Why this build has no kernel flood path (splice), or None.
pub fn no_splice_here() -> Option<&'static str> {
    PORTABLE.then_some("no splice in the portable build (macOS has none): the flood path reads")
}

/// The tests' effective uid.
pub fn effective_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map_or(u32::MAX, |m| m.uid())
}

/// Run mcp-bound as nobody (root ignores permissions and is not held to
/// some limits; CI runs as root).
pub const AS_NOBODY: &[&str] = &[
    "setpriv",
    "--reuid=65534",
    "--regid=65534",
    "--clear-groups",
    "--",
];

impl Call {
    /// This call run as nobody: its directory becomes nobody's to write.
    pub fn via_nobody(self) -> Call {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(self.path(""), std::fs::Permissions::from_mode(0o777))
            .expect("open the call's directory to nobody");
        self.via(AS_NOBODY)
    }
}

/// Run mcp-bound with `options` and a helper that would leave a mark:
/// it must exit 125 with one line on stderr, and start nothing. The line
/// is returned.
pub fn refused(options: &[&str]) -> String {
    refused_by(|call| call.opt(options), &format!("{options:?}"))
}

/// As [`refused`], with the call set up by `setup` (its options, its
/// environment); `what` names the set-up in a failure.
pub fn refused_by(setup: impl FnOnce(Call) -> Call, what: &str) -> String {
    let marker = tempfile::tempdir().unwrap();
    let ran = marker.path().join("ran");
    let done = setup(Call::sh(&format!("touch {}", ran.display())).without_record()).run();
    done.expect_code(125);
    let stderr = done.stderr_text();
    done.check(stderr.lines().count() == 1, &format!("{what}: one line"));
    done.check(!ran.exists(), &format!("{what}: nothing ran"));
    stderr
}

/// What `mcp-bound --help` prints.
pub fn help() -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-bound"))
        .arg("--help")
        .output()
        .unwrap();
    String::from_utf8(output.stdout).unwrap()
}

/// Lowercase hex of the SHA-256 of `bytes`, as the journal writes digests.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The prose docs, as (path, text): the README, then the guide's pages
/// under docs/ in name order. What the docs show is checked wherever it
/// now lives.
pub fn prose_docs() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<std::path::PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.sort();
    std::iter::once(root.join("README.md"))
        .chain(pages)
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.strip_prefix(root).unwrap().display().to_string();
            (name, text)
        })
        .collect()
}
