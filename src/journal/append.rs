//! The writer: append one entry under an exclusive flock (never held while
//! a helper runs), chained onto the last line, recovering a torn tail.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::entry::{Appended, Entry, Genesis, Recover, format_line};
use super::key::{Key, KeyMismatch, check_genesis_key};
use super::line::parse_line;
use super::{MAX_LINE, ZERO_HASH};
use crate::ids::hex;
use crate::sys;

const READ_BACK_CHUNK: u64 = 64 * 1024;

/// How long an append waits for the lock.
#[derive(Clone, Copy)]
enum Wait {
    /// Not at all: `WouldBlock` when another holds it.
    Now,
    Within(Duration),
    /// Within the first, and within the second once a terminating
    /// signal has come (already, when the flag says so).
    Hurried(Duration, Duration, bool),
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

    /// Open (or create, mode 0600) the journal and judge whose it is: Err
    /// when it is not ours to write (another user's, writable by others,
    /// not a regular file); Ok(Some(warning)) when others can read it.
    /// Each append judges the file it opens again.
    pub fn check_owner(&self) -> io::Result<Option<String>> {
        let (file, created) = sys::open_append_private(&self.path)?;
        if created {
            sys::fsync_dir(sys::parent_dir(&self.path))?;
        }
        sys::judged(&file, crate::trust::Role::Journal)
    }

    /// Append one entry (and a genesis or recover entry first when needed).
    pub fn append(&self, entry: Entry<'_>) -> io::Result<Appended> {
        self.append_all(&[entry])
    }

    /// Whether a terminal entry of `call_id` stands at or past `offset`
    /// (read without the lock: a line being written is not one yet).
    pub fn has_terminal_after(&self, call_id: &str, offset: u64) -> io::Result<bool> {
        #[derive(serde::Deserialize)]
        struct Probe<'a> {
            #[serde(borrow)]
            kind: std::borrow::Cow<'a, str>,
            #[serde(default, borrow)]
            call_id: Option<std::borrow::Cow<'a, str>>,
        }
        let mut file = File::open(&self.path)?;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(offset))?;
        for line in io::BufRead::split(io::BufReader::new(file), b'\n') {
            let line = line?;
            if let Ok(probe) = serde_json::from_slice::<Probe>(&line)
                && probe.kind == "terminal"
                && probe.call_id.as_deref() == Some(call_id)
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Append entries in order with one write and one sync (a group
    /// commit): all are durable when this returns. Returns the last.
    pub fn append_all(&self, entries: &[Entry<'_>]) -> io::Result<Appended> {
        self.append_all_waiting(entries, Wait::Within(self.lock_wait))
    }

    /// As [`Journal::append`], for an entry owed at the end (the terminal
    /// entry): the lock is waited for at most `lock_wait`, and at most
    /// `grace` once a terminating signal has come (`signalled`: it ended
    /// the call; else one that comes during the wait), so another
    /// appender's lock never holds up the host's stop past its grace.
    pub fn append_at_the_end(
        &self,
        entry: Entry<'_>,
        grace: Duration,
        signalled: bool,
    ) -> io::Result<Appended> {
        self.append_all_waiting(&[entry], Wait::Hurried(self.lock_wait, grace, signalled))
    }

    /// As [`Journal::append_all`], only if the lock is free now: an error
    /// of kind `WouldBlock` when another holds it (the loop waits for it
    /// on a timer of its own, never asleep).
    pub fn try_append_all(&self, entries: &[Entry<'_>]) -> io::Result<Appended> {
        self.append_all_waiting(entries, Wait::Now)
    }

    fn append_all_waiting(&self, entries: &[Entry<'_>], wait: Wait) -> io::Result<Appended> {
        let (file, created) = sys::open_append_private(&self.path)?;
        sys::judged(&file, crate::trust::Role::Journal)?;
        if created {
            sys::fsync_dir(sys::parent_dir(&self.path))?;
        }
        if self.lock {
            match wait {
                Wait::Now if !sys::try_lock_exclusive(&file)? => {
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                Wait::Now => {}
                Wait::Within(limit) => sys::lock_exclusive(&file, limit)?,
                Wait::Hurried(limit, grace, signalled) => {
                    sys::lock_exclusive_hurried(&file, limit, grace, signalled)?
                }
            }
        }
        let result = self.append_locked(&file, entries);
        if self.lock {
            sys::unlock(&file);
        }
        result
    }

    fn append_locked(&self, file: &File, entries: &[Entry<'_>]) -> io::Result<Appended> {
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
                let first = read_first_line(file)?;
                let mismatch = match check_genesis_key(&first, &self.key) {
                    None => return Err(damaged("its genesis entry")),
                    Some(Ok(())) => None,
                    Some(Err(KeyMismatch::KeyNeeded(_))) => {
                        Some("it is keyed; pass its --journal-key")
                    }
                    Some(Err(KeyMismatch::NotKeyed)) => Some("it is not keyed; drop --journal-key"),
                    Some(Err(KeyMismatch::OtherKey(_))) => {
                        Some("its key differs from --journal-key")
                    }
                };
                if let Some(text) = mismatch {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, text));
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
        let mut last = None;
        for entry in entries {
            let (line, h) = entry.format(&self.key, seq, &prev, &ts);
            out.extend_from_slice(&line);
            last = Some(Appended { seq, h: h.clone() });
            seq += 1;
            prev = h;
        }
        // One write: with O_APPEND the lines land whole at the end.
        (&*file).write_all(&out)?;
        if self.sync {
            crate::sys::sync_durable(file)?;
        }
        last.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no entry to append"))
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
        crate::sys::read_exact_at(file, &mut bytes, torn.torn_offset)?;
        let follows = parse_line(&self.key, &bytes).is_ok_and(|entry| match &tail.last {
            Some(line) => parse_line(&self.key, line)
                .is_ok_and(|last| entry.seq == last.seq + 1 && entry.prev == last.h),
            None => entry.seq == 0 && entry.kind() == "genesis" && entry.prev == ZERO_HASH,
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
            crate::sys::read_exact_at(file, &mut buf[..want], offset)?;
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
            crate::sys::read_exact_at(file, &mut line, start)?;
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
        crate::sys::read_exact_at(file, part, start)?;
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
        let n = crate::sys::read_at(self.file, buf, self.offset)?;
        self.offset += n as u64;
        Ok(n)
    }
}
