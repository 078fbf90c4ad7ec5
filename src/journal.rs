//! The hash-chained audit journal: append-only JSON Lines shared by many
//! mcp-bound processes, and its offline verification.
//!
//! Line format, fields in this order: `v`, `seq`, `prev`, `kind`, `ts`, the
//! kind's own fields, and last `h`. `h` is the lowercase hex SHA-256 (or,
//! with a key, HMAC-SHA256) of the exact bytes of the line before the suffix
//! `,"h":"<64 hex>"}`; nothing is ever re-serialised to be hashed. `prev` is
//! the previous line's `h`; the first line is a `genesis` entry whose `prev`
//! is 64 zeros.
//!
//! Appending takes an exclusive flock for one append only (never while a
//! helper runs), reads the last line for `seq` and `prev`, writes the new
//! line with one write, and unlocks. A torn last line (a crash mid-write) is
//! kept and accounted for by a `recover` entry; nothing is deleted.
//!
//! What verification proves: every line is intact, in order and linked, and
//! intents and terminals pair up. What it cannot prove without more: a cut
//! tail, a rollback or a whole rewritten file pass unless checked against
//! an anchor (a head `h` kept elsewhere); a correctly chained forged append
//! passes unless the journal is keyed and the forger lacks the key.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::record::{CancelReason, EventKind, Exit, Limits, Record, State, StreamEnd};
use crate::sys;

pub const VERSION: u64 = 1;
pub const ZERO_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";
const HASH_KEY: &[u8] = b",\"h\":\"";
/// A longer line is not an entry mcp-bound writes: verification stops
/// there instead of holding it in memory.
pub const MAX_LINE: usize = 16 << 20;
const READ_BACK_CHUNK: u64 = 64 * 1024;

/// How `h` is computed.
#[derive(Clone)]
pub enum Key {
    Plain,
    Hmac { secret: Vec<u8>, id: String },
}

impl Key {
    /// Read a key file; its id (a hash of the key, not the key) goes into
    /// the genesis entry so a verifier can tell a wrong key from tampering.
    pub fn load(path: &Path) -> io::Result<Key> {
        let mut secret = std::fs::read(path)?;
        while secret.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            secret.pop();
        }
        if secret.len() < 16 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a journal key must be at least 16 bytes",
            ));
        }
        let mut hasher = Sha256::new();
        hasher.update(b"mcp-bound journal key id\0");
        hasher.update(&secret);
        let id = hex(&hasher.finalize()[..8]);
        Ok(Key::Hmac { secret, id })
    }

    pub fn id(&self) -> Option<&str> {
        match self {
            Key::Plain => None,
            Key::Hmac { id, .. } => Some(id),
        }
    }

    pub fn digest(&self, bytes: &[u8]) -> String {
        match self {
            Key::Plain => hex(&Sha256::digest(bytes)),
            Key::Hmac { secret, .. } => {
                let mut mac =
                    Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
                mac.update(bytes);
                hex(&mac.finalize().into_bytes())
            }
        }
    }
}

pub use crate::ids::hex;

/// Before dispatch: what is about to run, where, by whom, under which limits.
#[derive(Debug, Clone, Serialize)]
pub struct Intent {
    pub call_id: String,
    pub session_id: Option<String>,
    pub argv: Vec<String>,
    pub cwd: Option<String>,
    pub uid: u32,
    pub host: Option<String>,
    pub pid: u32,
    pub limits: Limits,
}

/// One signal mcp-bound sent, as the terminal entry lists them.
#[derive(Debug, Clone, Serialize)]
pub struct SignalFact {
    pub t_ms: u64,
    pub signal: String,
    pub target: crate::record::Target,
    pub count: u32,
    pub reason: crate::record::SignalReason,
}

#[derive(Debug, Clone, Serialize)]
pub struct StreamFacts {
    pub stdout_bytes: u64,
    pub stderr_bytes_seen: u64,
    pub stderr_bytes_retained: u64,
    pub stderr_truncated: bool,
}

/// After the call: the record's lifecycle facts and a short excerpt.
#[derive(Debug, Clone, Serialize)]
pub struct Terminal {
    pub call_id: String,
    pub state: State,
    pub exit: Option<Exit>,
    pub exit_code: Option<i32>,
    pub cancel_reason: Option<CancelReason>,
    pub cancel_signal: Option<String>,
    pub signals: Vec<SignalFact>,
    pub stream_end: Option<StreamEnd>,
    pub descendants_signalled: u32,
    pub duration_ms: Option<u64>,
    pub streams: StreamFacts,
    /// Bounded on its own by --journal-excerpt-bytes; null when 0.
    pub excerpt: Option<String>,
}

impl Terminal {
    pub fn from_record(record: &Record, excerpt: Option<String>) -> Terminal {
        let signals = record
            .events
            .iter()
            .filter_map(|event| match &event.kind {
                EventKind::SignalSent {
                    signal,
                    target,
                    count,
                    reason,
                } => Some(SignalFact {
                    t_ms: event.t_ms,
                    signal: signal.clone(),
                    target: *target,
                    count: *count,
                    reason: *reason,
                }),
                _ => None,
            })
            .collect();
        Terminal {
            call_id: record.call_id.clone(),
            state: record.state,
            exit: record.exit.clone(),
            exit_code: record.exit_code,
            cancel_reason: record.cancel_reason,
            cancel_signal: record.cancel_signal.clone(),
            signals,
            stream_end: record.stream_end,
            descendants_signalled: record.descendants_signalled,
            duration_ms: record.duration_ms,
            streams: StreamFacts {
                stdout_bytes: record.stdout.bytes_seen,
                stderr_bytes_seen: record.stderr.bytes_seen,
                stderr_bytes_retained: record.stderr.bytes_retained,
                stderr_truncated: record.stderr.truncated,
            },
            excerpt,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
struct Genesis<'a> {
    journal_id: &'a str,
    key_id: Option<&'a str>,
}

#[derive(Debug, Clone, Serialize)]
struct Recover {
    torn_offset: u64,
    torn_length: u64,
    torn_sha256: String,
}

/// The approval decision, between intent and dispatch.
#[derive(Debug, Clone, Serialize)]
pub struct DecisionEntry {
    pub call_id: String,
    pub decision: Option<crate::record::Decision>,
    pub method: crate::record::ApprovalMethod,
    pub requested_at: String,
    pub decided_at: String,
    pub waited_ms: u64,
    pub approver_exit: Option<Exit>,
}

/// What a caller appends.
pub enum Entry<'a> {
    Intent(&'a Intent),
    Decision(&'a DecisionEntry),
    Terminal(&'a Terminal),
}

/// Where an append landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    pub seq: u64,
    pub h: String,
}

/// Format one line: header, body, then `h` over the exact bytes before it.
fn format_line<B: Serialize>(
    key: &Key,
    seq: u64,
    prev: &str,
    kind: &str,
    ts: &str,
    body: &B,
) -> (Vec<u8>, String) {
    #[derive(Serialize)]
    struct Header<'a, B> {
        v: u64,
        seq: u64,
        prev: &'a str,
        kind: &'a str,
        ts: &'a str,
        #[serde(flatten)]
        body: &'a B,
    }
    let header = Header {
        v: VERSION,
        seq,
        prev,
        kind,
        ts,
        body,
    };
    let mut line = serde_json::to_vec(&header).expect("entries always serialize");
    debug_assert_eq!(line.last(), Some(&b'}'));
    line.pop();
    let h = key.digest(&line);
    line.extend_from_slice(HASH_KEY);
    line.extend_from_slice(h.as_bytes());
    line.extend_from_slice(b"\"}\n");
    (line, h)
}

/// The writer side.
pub struct Journal {
    pub path: PathBuf,
    pub key: Key,
    pub lock_wait: Duration,
    /// Only tests turn this off, to show that O_APPEND alone forks the chain.
    pub lock: bool,
    pub sync: bool,
}

impl Journal {
    pub fn new(path: PathBuf, key: Key) -> Journal {
        Journal {
            path,
            key,
            lock_wait: Duration::from_secs(10),
            lock: true,
            sync: true,
        }
    }

    /// Append one entry (and a genesis or recover entry first when needed).
    pub fn append(&self, entry: Entry<'_>) -> io::Result<Appended> {
        let (file, created) = sys::open_append_private(&self.path)?;
        if created {
            sys::fsync_dir(sys::parent_dir(&self.path))?;
        }
        if self.lock {
            sys::lock_exclusive(&file, self.lock_wait)?;
        }
        let result = self.append_locked(&file, entry);
        if self.lock {
            sys::unlock(&file);
        }
        result
    }

    fn append_locked(&self, file: &File, entry: Entry<'_>) -> io::Result<Appended> {
        let len = file.metadata()?.len();
        let mut tail = read_tail(file, len)?;
        let ts = crate::ids::now_rfc3339();
        let mut out = Vec::new();
        // A whole entry that lacks only its newline, chained onto the line
        // before it: finish the line and chain onto it (verify accepts it
        // as it stands, with a warning). Anything else torn is kept and
        // accounted for by a recover entry below.
        if let Some(whole) = self.unterminated_entry(file, &tail)? {
            out.push(b'\n');
            tail = Tail {
                last: Some(whole),
                torn: None,
            };
        }
        let (mut seq, mut prev) = match &tail.last {
            Some(line) => {
                // The key id is compared before any hash is checked, so a
                // wrong key reads as a wrong key, not as damage.
                #[derive(Deserialize)]
                struct GenesisKey {
                    kind: String,
                    key_id: Option<String>,
                }
                let first = read_first_line(file)?;
                let genesis: GenesisKey =
                    serde_json::from_slice(&first).map_err(|_| damaged("its genesis entry"))?;
                let key_id = genesis.key_id.as_deref();
                if genesis.kind != "genesis" {
                    return Err(damaged("its genesis entry"));
                }
                if key_id != self.key.id() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        match (key_id, self.key.id()) {
                            (Some(_), None) => "it is keyed; pass its --journal-key".to_string(),
                            (None, Some(_)) => "it is not keyed; drop --journal-key".to_string(),
                            _ => "its key differs from --journal-key".to_string(),
                        },
                    ));
                }
                let last = parse_line(&self.key, line).map_err(|_| damaged("its last entry"))?;
                (last.seq + 1, last.h.into_owned())
            }
            None => {
                if tail.torn.is_some() {
                    out.push(b'\n');
                }
                let journal_id = crate::ids::journal_id();
                let genesis = Genesis {
                    journal_id: &journal_id,
                    key_id: self.key.id(),
                };
                let (line, h) = format_line(&self.key, 0, ZERO_HASH, "genesis", &ts, &genesis);
                out.extend_from_slice(&line);
                (1, h)
            }
        };
        if let Some(torn) = &tail.torn {
            if tail.last.is_some() {
                out.push(b'\n');
            }
            let (line, h) = format_line(&self.key, seq, &prev, "recover", &ts, torn);
            out.extend_from_slice(&line);
            seq += 1;
            prev = h;
        }
        let (line, h) = match entry {
            Entry::Intent(intent) => format_line(&self.key, seq, &prev, "intent", &ts, intent),
            Entry::Decision(decision) => {
                format_line(&self.key, seq, &prev, "decision", &ts, decision)
            }
            Entry::Terminal(terminal) => {
                format_line(&self.key, seq, &prev, "terminal", &ts, terminal)
            }
        };
        out.extend_from_slice(&line);
        // One write: with O_APPEND the line lands whole at the end.
        (&*file).write_all(&out)?;
        if self.sync {
            file.sync_data()?;
        }
        Ok(Appended { seq, h })
    }
}

impl Journal {
    /// The torn bytes after the last newline, if they are one whole entry
    /// that follows the last complete line (or a first genesis entry).
    fn unterminated_entry(&self, file: &File, tail: &Tail) -> io::Result<Option<Vec<u8>>> {
        let Some(torn) = &tail.torn else {
            return Ok(None);
        };
        if torn.torn_length > MAX_LINE as u64 {
            return Ok(None);
        }
        let mut bytes = vec![0u8; torn.torn_length as usize];
        file.read_exact_at(&mut bytes, torn.torn_offset)?;
        let follows = parse_line(&self.key, &bytes).is_ok_and(|entry| match &tail.last {
            Some(line) => parse_line(&self.key, line)
                .is_ok_and(|last| entry.seq == last.seq + 1 && entry.prev == last.h),
            None => entry.seq == 0 && entry.kind == "genesis" && entry.prev == ZERO_HASH,
        });
        Ok(follows.then_some(bytes))
    }
}

fn damaged(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{what} is damaged; run 'mcp-bound verify' on it"),
    )
}

struct Tail {
    /// The last complete line, without its newline.
    last: Option<Vec<u8>>,
    torn: Option<Recover>,
}

/// Find the last complete line and any torn bytes after it, reading
/// backwards from the end in chunks.
fn read_tail(file: &File, len: u64) -> io::Result<Tail> {
    if len == 0 {
        return Ok(Tail {
            last: None,
            torn: None,
        });
    }
    let last_newline = find_newline_before(file, len)?;
    let complete_end = match last_newline {
        Some(pos) => pos + 1,
        None => 0,
    };
    let torn = if complete_end < len {
        let mut hasher = Sha256::new();
        let mut offset = complete_end;
        let mut buf = vec![0u8; READ_BACK_CHUNK as usize];
        while offset < len {
            let want = (len - offset).min(READ_BACK_CHUNK) as usize;
            file.read_exact_at(&mut buf[..want], offset)?;
            hasher.update(&buf[..want]);
            offset += want as u64;
        }
        Some(Recover {
            torn_offset: complete_end,
            torn_length: len - complete_end,
            torn_sha256: hex(&hasher.finalize()),
        })
    } else {
        None
    };
    let last = match last_newline {
        None => None,
        Some(newline) => {
            let start = find_newline_before(file, newline)?.map_or(0, |p| p + 1);
            let mut line = vec![0u8; (newline - start) as usize];
            file.read_exact_at(&mut line, start)?;
            Some(line)
        }
    };
    Ok(Tail { last, torn })
}

/// Position of the last '\n' strictly before `end`.
fn find_newline_before(file: &File, end: u64) -> io::Result<Option<u64>> {
    let mut chunk_end = end;
    let mut buf = vec![0u8; READ_BACK_CHUNK as usize];
    while chunk_end > 0 {
        let start = chunk_end.saturating_sub(READ_BACK_CHUNK);
        let part = &mut buf[..(chunk_end - start) as usize];
        file.read_exact_at(part, start)?;
        if let Some(i) = memchr::memrchr(b'\n', part) {
            return Ok(Some(start + i as u64));
        }
        chunk_end = start;
    }
    Ok(None)
}

fn read_first_line(file: &File) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    let mut reader = BufReader::new(ReadAt { file, offset: 0 });
    reader.read_until(b'\n', &mut line)?;
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    Ok(line)
}

/// A `Read` over a shared file at an offset of its own (pread), so the
/// appender's O_APPEND position is never disturbed.
struct ReadAt<'a> {
    file: &'a File,
    offset: u64,
}

impl Read for ReadAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.offset)?;
        self.offset += n as u64;
        Ok(n)
    }
}

/// The fields of any entry, borrowed from the line where possible. Unknown
/// fields are refused; each kind's required fields are checked in `shape`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
// Fields only listed so that deny_unknown_fields accepts them are not read.
#[allow(dead_code)]
struct Parsed<'a> {
    v: u64,
    seq: u64,
    #[serde(borrow)]
    prev: Cow<'a, str>,
    #[serde(borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    ts: Cow<'a, str>,
    #[serde(borrow)]
    h: Cow<'a, str>,
    // genesis
    #[serde(default, borrow)]
    journal_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    key_id: Option<Cow<'a, str>>,
    // intent and terminal
    #[serde(default, borrow)]
    call_id: Option<Cow<'a, str>>,
    #[serde(default)]
    session_id: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    argv: Option<Vec<serde::de::IgnoredAny>>,
    #[serde(default)]
    cwd: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    uid: Option<u32>,
    #[serde(default)]
    host: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pid: Option<u32>,
    #[serde(default)]
    limits: Option<serde::de::IgnoredAny>,
    // terminal
    #[serde(default, borrow)]
    state: Option<Cow<'a, str>>,
    #[serde(default)]
    exit: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    exit_code: Option<i32>,
    #[serde(default)]
    cancel_reason: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    cancel_signal: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    signals: Option<Vec<serde::de::IgnoredAny>>,
    #[serde(default)]
    stream_end: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    descendants_signalled: Option<u32>,
    #[serde(default)]
    duration_ms: Option<u64>,
    #[serde(default)]
    streams: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    excerpt: Option<serde::de::IgnoredAny>,
    // decision
    #[serde(default)]
    decision: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    method: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    requested_at: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    decided_at: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    waited_ms: Option<u64>,
    #[serde(default)]
    approver_exit: Option<serde::de::IgnoredAny>,
    // recover
    #[serde(default)]
    torn_offset: Option<u64>,
    #[serde(default)]
    torn_length: Option<u64>,
    #[serde(default, borrow)]
    torn_sha256: Option<Cow<'a, str>>,
}

impl Parsed<'_> {
    /// The kind's required fields are present and no other kind's are.
    fn shape(&self) -> Result<(), String> {
        // Fields that belong to one kind only: none of another kind's may
        // appear. call_id is shared by intent, decision and terminal.
        let markers = [
            ("genesis", self.journal_id.is_some()),
            (
                "intent",
                self.argv.is_some() || self.uid.is_some() || self.limits.is_some(),
            ),
            (
                "terminal",
                self.state.is_some() || self.signals.is_some() || self.streams.is_some(),
            ),
            (
                "recover",
                self.torn_offset.is_some() || self.torn_sha256.is_some(),
            ),
            (
                "decision",
                self.method.is_some() || self.waited_ms.is_some() || self.decided_at.is_some(),
            ),
        ];
        let foreign = markers
            .iter()
            .any(|(kind, present)| *present && *kind != self.kind);
        let call = self.call_id.is_some();
        let complete = match self.kind.as_ref() {
            "genesis" => self.journal_id.is_some() && !call,
            "intent" => {
                call && self.argv.is_some()
                    && self.uid.is_some()
                    && self.pid.is_some()
                    && self.limits.is_some()
            }
            "decision" => {
                call && self.method.is_some()
                    && self.waited_ms.is_some()
                    && self.decided_at.is_some()
            }
            "terminal" => {
                call && self.state.is_some() && self.signals.is_some() && self.streams.is_some()
            }
            "recover" => {
                !call
                    && self.torn_offset.is_some()
                    && self.torn_length.is_some()
                    && self.torn_sha256.is_some()
            }
            other => return Err(format!("unknown kind '{other}'")),
        };
        let ok = complete && !foreign;
        if !ok {
            return Err(format!("fields do not fit the '{}' shape", self.kind));
        }
        if self.v != VERSION {
            return Err(format!("unknown version {}", self.v));
        }
        if self.prev.len() != 64 || !self.prev.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("prev is not 64 hex digits".into());
        }
        if humantime::parse_rfc3339_weak(&self.ts).is_err() {
            return Err("ts is not an RFC 3339 time".into());
        }
        Ok(())
    }
}

/// Why one line is not a good entry.
enum LineError {
    Malformed(String),
    HashMismatch,
}

/// Check the hash over the exact bytes, then parse strictly.
fn parse_line<'a>(key: &Key, content: &'a [u8]) -> Result<Parsed<'a>, LineError> {
    const SUFFIX_LEN: usize = 6 + 64 + 2; // ,"h":" + hex + "}
    if content.len() < SUFFIX_LEN + 2 || !content.ends_with(b"\"}") {
        return Err(LineError::Malformed("not an entry line".into()));
    }
    let split = content.len() - SUFFIX_LEN;
    let (prefix, suffix) = content.split_at(split);
    let given = &suffix[HASH_KEY.len()..HASH_KEY.len() + 64];
    if !suffix.starts_with(HASH_KEY)
        || !given.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(LineError::Malformed(
            "the line does not end with its hash".into(),
        ));
    }
    if key.digest(prefix).as_bytes() != given {
        return Err(LineError::HashMismatch);
    }
    let parsed: Parsed = serde_json::from_slice(content)
        .map_err(|e| LineError::Malformed(format!("not strict JSON of a known shape: {e}")))?;
    parsed.shape().map_err(LineError::Malformed)?;
    Ok(parsed)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BreakKind {
    HashMismatch,
    ChainBreak,
    SeqGap,
    SeqOrder,
    TornTail,
    OrphanTerminal,
    DuplicateCall,
    Malformed,
    /// The anchor's `h` is not in the journal: cut, rolled back or rewritten.
    AnchorMissing,
}

impl BreakKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BreakKind::HashMismatch => "HASH_MISMATCH",
            BreakKind::ChainBreak => "CHAIN_BREAK",
            BreakKind::SeqGap => "SEQ_GAP",
            BreakKind::SeqOrder => "SEQ_ORDER",
            BreakKind::TornTail => "TORN_TAIL",
            BreakKind::OrphanTerminal => "ORPHAN_TERMINAL",
            BreakKind::DuplicateCall => "DUPLICATE_CALL",
            BreakKind::Malformed => "MALFORMED",
            BreakKind::AnchorMissing => "ANCHOR_MISSING",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Break {
    /// 1-based line number.
    pub line: u64,
    pub kind: BreakKind,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unfinished {
    pub line: u64,
    pub call_id: String,
    pub pid: Option<u32>,
    pub ts: String,
    /// A decision entry was written (the call was approved, or not).
    pub decided: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Head {
    pub seq: u64,
    pub h: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    pub ok: bool,
    pub entries: u64,
    pub journal_id: Option<String>,
    pub keyed: bool,
    pub head: Option<Head>,
    /// Lines checked and found intact before the first break.
    pub validated_lines: u64,
    #[serde(rename = "break")]
    pub broken: Option<Break>,
    pub anchor: Option<String>,
    pub anchor_found: Option<bool>,
    pub unfinished: Vec<Unfinished>,
    /// The last entry is whole but lacks its final newline (a warning).
    pub final_newline_missing: bool,
}

/// A torn fragment waiting for the `recover` entry that accounts for it.
struct PendingTorn {
    line: u64,
    offset: u64,
    length: u64,
    sha256: String,
    error: Break,
}

/// Why verification could not run at all (exit 2), as opposed to a break.
#[derive(Debug)]
pub enum VerifyError {
    Io(io::Error),
    Key(String),
}

/// Verify a journal file in one streaming pass.
pub fn verify(path: &Path, key: Option<&Key>, anchor: Option<&str>) -> Result<Report, VerifyError> {
    let file = File::open(path).map_err(VerifyError::Io)?;
    verify_reader(file, key, anchor)
}

/// Verify a journal read from any source, in one streaming pass.
pub fn verify_reader(
    source: impl Read,
    key: Option<&Key>,
    anchor: Option<&str>,
) -> Result<Report, VerifyError> {
    let mut reader = BufReader::with_capacity(256 * 1024, source);
    let plain = Key::Plain;
    let key = key.unwrap_or(&plain);
    let mut state = Verifier {
        key,
        anchor,
        report: Report {
            ok: false,
            entries: 0,
            journal_id: None,
            keyed: false,
            head: None,
            validated_lines: 0,
            broken: None,
            anchor: anchor.map(str::to_string),
            anchor_found: anchor.map(|_| false),
            unfinished: Vec::new(),
            final_newline_missing: false,
        },
        open: HashMap::new(),
        last_seq: None,
        last_h: ZERO_HASH.to_string(),
        pending_torn: None,
    };
    let mut current = Vec::new();
    let mut next = Vec::new();
    let mut offset = 0u64;
    let mut line_no = 0u64;
    let mut have_current = read_line(&mut reader, &mut current).map_err(VerifyError::Io)?;
    while have_current {
        let have_next = read_line(&mut reader, &mut next).map_err(VerifyError::Io)?;
        line_no += 1;
        let peek = have_next.then_some(next.as_slice());
        if let Err(broken) = state.line(line_no, offset, &current, peek)? {
            state.report.broken = Some(broken);
            break;
        }
        offset += current.len() as u64;
        std::mem::swap(&mut current, &mut next);
        have_current = have_next;
    }
    state.finish();
    Ok(state.report)
}

/// Read one line (with its newline, if any); false at EOF. A line over
/// [`MAX_LINE`] is cut there: it fails as malformed without being held.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<bool> {
    line.clear();
    let n = reader.take(MAX_LINE as u64 + 1).read_until(b'\n', line)?;
    Ok(n > 0)
}

struct Verifier<'k> {
    key: &'k Key,
    anchor: Option<&'k str>,
    report: Report,
    /// Calls with an intent and no terminal yet: the only per-call state,
    /// so memory follows the calls in flight, not the journal's length. A
    /// call id may repeat once its call has ended (hosts reuse
    /// --call-id); two calls with one id in flight at once are a break.
    open: HashMap<String, Unfinished>,
    last_seq: Option<u64>,
    last_h: String,
    pending_torn: Option<PendingTorn>,
}

fn peek_seq(line: &[u8]) -> Option<u64> {
    #[derive(Deserialize)]
    struct SeqOnly {
        seq: u64,
    }
    let content = line.strip_suffix(b"\n").unwrap_or(line);
    serde_json::from_slice::<SeqOnly>(content)
        .ok()
        .map(|s| s.seq)
}

impl Verifier<'_> {
    fn line(
        &mut self,
        line_no: u64,
        offset: u64,
        bytes: &[u8],
        next: Option<&[u8]>,
    ) -> Result<Result<(), Break>, VerifyError> {
        let fail = |kind, detail: String| {
            Ok(Err(Break {
                line: line_no,
                kind,
                detail,
            }))
        };
        let content = match bytes.strip_suffix(b"\n") {
            Some(content) => content,
            // The last line lacks its newline. A whole entry that lacks
            // only that is still an entry (the write stopped after it): a
            // warning, and the next append finishes the line.
            None if self.pending_torn.is_none() && parse_line(self.key, bytes).is_ok() => {
                self.report.final_newline_missing = true;
                bytes
            }
            None => {
                if let Some(pending) = self.pending_torn.take() {
                    return Ok(Err(pending.error));
                }
                return fail(
                    BreakKind::TornTail,
                    format!(
                        "the last line ({} bytes) has no newline: a write was cut short",
                        bytes.len()
                    ),
                );
            }
        };
        if self.last_seq.is_none() && self.pending_torn.is_none() {
            self.check_key(content)?;
        }
        let parsed = match parse_line(self.key, content) {
            Ok(parsed) => parsed,
            Err(error) => {
                let error = match error {
                    LineError::HashMismatch => Break {
                        line: line_no,
                        kind: BreakKind::HashMismatch,
                        detail: "h does not match the line's bytes".into(),
                    },
                    LineError::Malformed(detail) => Break {
                        line: line_no,
                        kind: BreakKind::Malformed,
                        detail,
                    },
                };
                // Possibly a torn fragment that a `recover` entry accounts for.
                if let Some(pending) = self.pending_torn.take() {
                    return Ok(Err(pending.error));
                }
                self.pending_torn = Some(PendingTorn {
                    line: line_no,
                    offset,
                    length: content.len() as u64,
                    sha256: hex(&Sha256::digest(content)),
                    error,
                });
                return Ok(Ok(()));
            }
        };

        // A bad line is forgiven only when the very next entry is the
        // recover entry that accounts for it (or the genesis written after
        // a torn first line); anything else reports the bad line itself.
        if self.pending_torn.is_some() && !matches!(parsed.kind.as_ref(), "recover" | "genesis") {
            return Ok(Err(self.pending_torn.take().expect("checked").error));
        }
        if parsed.kind == "genesis" {
            if self.last_seq.is_some() {
                return fail(BreakKind::Malformed, "a second genesis entry".into());
            }
            self.report.journal_id = parsed.journal_id.as_deref().map(str::to_string);
            self.report.keyed = parsed.key_id.is_some();
        } else if self.last_seq.is_none() {
            return fail(
                BreakKind::Malformed,
                "the first entry is not a genesis entry".into(),
            );
        }

        let expected = self.last_seq.map_or(0, |seq| seq + 1);
        if parsed.seq > expected {
            let swapped = next.and_then(peek_seq) == Some(expected);
            return if swapped {
                fail(
                    BreakKind::SeqOrder,
                    format!(
                        "seq {} comes before seq {expected}: lines out of order",
                        parsed.seq
                    ),
                )
            } else {
                fail(
                    BreakKind::SeqGap,
                    format!(
                        "seq {} follows seq {}: entries missing",
                        parsed.seq,
                        expected.saturating_sub(1)
                    ),
                )
            };
        }
        if parsed.seq < expected {
            return fail(
                BreakKind::SeqOrder,
                format!(
                    "seq {} after seq {}: repeated or out of order",
                    parsed.seq,
                    expected - 1
                ),
            );
        }
        if parsed.prev != self.last_h {
            return fail(
                BreakKind::ChainBreak,
                format!(
                    "prev does not match the h of the entry before (seq {})",
                    expected.saturating_sub(1)
                ),
            );
        }

        match parsed.kind.as_ref() {
            "recover" => {
                let Some(pending) = self.pending_torn.take() else {
                    return fail(
                        BreakKind::Malformed,
                        "a recover entry with no torn line before it".into(),
                    );
                };
                let matches = parsed.torn_offset == Some(pending.offset)
                    && parsed.torn_length == Some(pending.length)
                    && parsed.torn_sha256.as_deref() == Some(pending.sha256.as_str());
                if !matches {
                    return Ok(Err(pending.error));
                }
                let _ = pending.line;
            }
            "genesis" => {}
            kind => {
                if let Some(pending) = self.pending_torn.take() {
                    return Ok(Err(pending.error));
                }
                let call_id = parsed.call_id.as_deref().unwrap_or_default();
                if kind == "intent" {
                    if self.open.contains_key(call_id) {
                        return fail(
                            BreakKind::DuplicateCall,
                            format!("a second intent for call {call_id} while it is open"),
                        );
                    }
                    self.open.insert(
                        call_id.to_string(),
                        Unfinished {
                            line: line_no,
                            call_id: call_id.to_string(),
                            pid: parsed.pid,
                            ts: parsed.ts.to_string(),
                            decided: false,
                        },
                    );
                } else if kind == "decision" {
                    match self.open.get_mut(call_id) {
                        Some(open) if !open.decided => open.decided = true,
                        Some(_) => {
                            return fail(
                                BreakKind::DuplicateCall,
                                format!("a second decision for call {call_id}"),
                            );
                        }
                        None => {
                            return fail(
                                BreakKind::OrphanTerminal,
                                format!("a decision for call {call_id} with no open intent"),
                            );
                        }
                    }
                } else if self.open.remove(call_id).is_none() {
                    // Also a second terminal for a call that already ended.
                    return fail(
                        BreakKind::OrphanTerminal,
                        format!("a terminal for call {call_id} with no open intent"),
                    );
                }
            }
        }

        if self.pending_torn.is_none() {
            self.report.validated_lines = line_no;
        }
        if self.anchor == Some(parsed.h.as_ref()) {
            self.report.anchor_found = Some(true);
        }
        self.report.entries += 1;
        self.last_seq = Some(parsed.seq);
        self.last_h.clear();
        self.last_h.push_str(&parsed.h);
        self.report.head = Some(Head {
            seq: parsed.seq,
            h: parsed.h.into_owned(),
        });
        Ok(Ok(()))
    }

    /// Compare the genesis entry's key id with ours before any hash is
    /// checked: a wrong or missing key is a usage error, not tampering.
    fn check_key(&self, content: &[u8]) -> Result<(), VerifyError> {
        #[derive(Deserialize)]
        struct GenesisKey {
            kind: String,
            key_id: Option<String>,
        }
        let Ok(genesis) = serde_json::from_slice::<GenesisKey>(content) else {
            return Ok(());
        };
        let key_id = genesis.key_id.as_deref();
        if genesis.kind != "genesis" || key_id == self.key.id() {
            return Ok(());
        }
        Err(VerifyError::Key(match (key_id, self.key.id()) {
            (Some(id), None) => format!("the journal is keyed (key id {id}); pass --key"),
            (None, Some(_)) => "the journal is not keyed; drop --key".into(),
            _ => format!(
                "--key is not this journal's key (key id {})",
                key_id.unwrap_or_default()
            ),
        }))
    }

    fn finish(&mut self) {
        if self.report.broken.is_none()
            && let Some(pending) = self.pending_torn.take()
        {
            self.report.broken = Some(pending.error);
        }
        if self.report.broken.is_none() && self.report.anchor_found == Some(false) {
            self.report.broken = Some(Break {
                line: self.report.validated_lines + 1,
                kind: BreakKind::AnchorMissing,
                detail:
                    "no entry has the anchor's h: the journal was cut, rolled back or rewritten"
                        .into(),
            });
        }
        if self.report.broken.is_none() && self.report.entries == 0 {
            self.report.broken = Some(Break {
                line: 1,
                kind: BreakKind::Malformed,
                detail: "the journal is empty".into(),
            });
        }
        let mut unfinished: Vec<Unfinished> = self.open.drain().map(|(_, u)| u).collect();
        unfinished.sort_by_key(|u| u.line);
        self.report.unfinished = unfinished;
        self.report.ok = self.report.broken.is_none();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_hash_covers_exact_bytes_before_suffix() {
        let (line, h) = format_line(
            &Key::Plain,
            0,
            ZERO_HASH,
            "genesis",
            "2026-01-01T00:00:00.000Z",
            &Genesis {
                journal_id: "j_1",
                key_id: None,
            },
        );
        let text = String::from_utf8(line.clone()).unwrap();
        assert!(text.starts_with(r#"{"v":1,"seq":0,"prev":"0000"#), "{text}");
        assert!(text.ends_with(&format!(",\"h\":\"{h}\"}}\n")));
        let prefix = &line[..line.len() - (6 + 64 + 2 + 1)];
        assert_eq!(hex(&Sha256::digest(prefix)), h);
        let parsed = parse_line(&Key::Plain, &line[..line.len() - 1])
            .ok()
            .unwrap();
        assert_eq!(parsed.kind, "genesis");
    }

    #[test]
    fn each_kind_has_its_shape_and_no_other_kinds_fields() {
        let line = |kind: &str, body: serde_json::Value| {
            let (line, _) = format_line(
                &Key::Plain,
                1,
                ZERO_HASH,
                kind,
                "2026-01-01T00:00:00.000Z",
                &body,
            );
            match parse_line(&Key::Plain, &line[..line.len() - 1]) {
                Ok(_) => Ok(()),
                Err(LineError::Malformed(why)) => Err(why),
                Err(LineError::HashMismatch) => Err("hash".into()),
            }
        };
        let intent =
            serde_json::json!({"call_id": "c", "argv": ["x"], "uid": 0, "pid": 1, "limits": {}});
        assert!(line("intent", intent.clone()).is_ok());
        let mut with_state = intent.clone();
        with_state["state"] = "completed".into();
        assert!(
            line("intent", with_state).is_err(),
            "a terminal field in an intent"
        );
        let mut no_pid = intent;
        no_pid.as_object_mut().unwrap().remove("pid");
        assert!(line("intent", no_pid).is_err(), "a required field missing");
        let recover = serde_json::json!({"torn_offset": 1, "torn_length": 2, "torn_sha256": "ab"});
        assert!(line("recover", recover.clone()).is_ok());
        let mut with_call = recover;
        with_call["call_id"] = "c".into();
        assert!(line("recover", with_call).is_err(), "recover has no call");
        assert!(
            line(
                "genesis",
                serde_json::json!({"journal_id": "j", "key_id": null})
            )
            .is_ok()
        );
        assert!(line("mystery", serde_json::json!({})).is_err());
        let decision = serde_json::json!({"call_id": "c", "decision": "approved", "method": "tty",
            "requested_at": "t", "decided_at": "t", "waited_ms": 1, "approver_exit": null});
        assert!(line("decision", decision).is_ok());
    }

    #[test]
    fn hmac_differs_from_plain_and_needs_the_key() {
        let key = Key::Hmac {
            secret: b"0123456789abcdef".to_vec(),
            id: "k".into(),
        };
        assert_ne!(key.digest(b"x"), Key::Plain.digest(b"x"));
        assert_eq!(key.digest(b"x").len(), 64);
    }
}
