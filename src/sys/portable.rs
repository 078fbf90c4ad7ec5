//! What std gives every system alike, shared by the backends.

use std::fs::File;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// The directory that holds `path` (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Whether a file mcp-bound opened by name is its own to write (or to
/// read as its own): what the descriptor's owner and mode say
/// (`seen`), judged by `trust` for the file's role. Ok(Some(warning))
/// when others can read it; Err (PermissionDenied) when refused.
pub fn judged(file: &File, role: crate::trust::Role) -> io::Result<Option<String>> {
    let seen = super::seen(file)?;
    crate::trust::judge(&seen, super::effective_uid(), role)
        .map_err(|why| io::Error::new(io::ErrorKind::PermissionDenied, why))
}

/// At most `max` bytes from the start of `path`, if it is a regular file
/// of ours (owned by our user): opened as `open_to_read` opens (never
/// through a link, never waiting, so a FIFO swapped in cannot hold us),
/// then checked on what was opened. None for anything else.
pub fn read_own_head(path: &Path, max: usize) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = super::open_to_read(path).ok()?;
    let seen = super::seen(&file).ok()?;
    if seen.kind != crate::trust::Kind::Regular || seen.uid != super::effective_uid() {
        return None;
    }
    let mut head = Vec::new();
    file.take(max as u64).read_to_end(&mut head).ok()?;
    Some(head)
}

/// Read a small file whole (a /proc or cgroup file): open, reads into
/// a 4 KiB buffer that grows only if it must, close. No size query (those
/// files report 0) and no probing reads: std's read_to_string spends six
/// system calls on a 300-byte /proc/PID/stat, this spends three.
pub fn read_small(path: &Path) -> io::Result<String> {
    use std::io::Read;
    let mut file = File::open(path)?;
    let mut buf = vec![0u8; 4096];
    let mut len = 0;
    loop {
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        }
        if len == buf.len() {
            buf.resize(len * 2, 0);
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))
}

/// Take a lock with `try_lock` (Ok(false): another holds it), waiting at
/// most `limit`. The wait backs off from 1 ms to 20 ms: a lock cannot be
/// waited for together with a deadline (a blocking flock or LockFileEx
/// could only be bounded by a timer racing our own handlers). It is the
/// one wait that sleeps, a short one on other appenders, and it never
/// runs inside the supervisor's loop (an append happens before dispatch
/// and after the end). Each backend's `lock_exclusive` is this, over its
/// own `try_lock_exclusive`.
pub(in crate::sys) fn lock_within(
    limit: Duration,
    try_lock: impl FnMut() -> io::Result<bool>,
) -> io::Result<()> {
    lock_hurried(limit, None, try_lock)
}

/// As `lock_exclusive`, and once a terminating signal has arrived
/// (`signalled`: it came before the wait; else one that comes during
/// it, left pending for the caller) the wait ends within `grace` of
/// then: the host's stop is never held up by another appender's lock for
/// longer than the grace it gave.
pub fn lock_exclusive_hurried(
    file: &File,
    limit: Duration,
    grace: Duration,
    signalled: bool,
) -> io::Result<()> {
    let hurry = Hurry { grace, signalled };
    lock_hurried(limit, Some(hurry), || super::try_lock_exclusive(file))
}

/// A wait cut to `grace` once a terminating signal has come.
#[derive(Clone, Copy)]
struct Hurry {
    grace: Duration,
    signalled: bool,
}

fn lock_hurried(
    limit: Duration,
    hurry: Option<Hurry>,
    mut try_lock: impl FnMut() -> io::Result<bool>,
) -> io::Result<()> {
    let started = Instant::now();
    let mut deadline = started + limit;
    let mut hurried = false;
    let mut pause = Duration::from_millis(1);
    while !try_lock()? {
        let now = Instant::now();
        if let Some(Hurry { grace, signalled }) = hurry
            && !hurried
            && (signalled || super::SignalPipe::terminating_arrived())
        {
            hurried = true;
            deadline = deadline.min(now + grace);
        }
        if now >= deadline {
            let waited = now.saturating_duration_since(started).as_millis();
            let why = match hurried {
                true => format!(
                    "could not lock it within the grace after a terminating signal ({waited} ms waited)"
                ),
                false => format!("could not lock it within {} ms", limit.as_millis()),
            };
            return Err(io::Error::new(io::ErrorKind::TimedOut, why));
        }
        std::thread::sleep(pause.min(deadline.saturating_duration_since(now)));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_files_are_read_whole_at_and_past_the_buffer() {
        let dir = tempfile::tempdir().unwrap();
        for size in [0, 1, 4095, 4096, 4097, 8192, 20_000] {
            let text: String = (0..size).map(|i| (b'a' + (i % 26) as u8) as char).collect();
            let path = dir.path().join(format!("f{size}"));
            std::fs::write(&path, &text).unwrap();
            assert_eq!(read_small(&path).unwrap(), text, "{size} bytes");
        }
        let missing =
            read_small(&std::env::temp_dir().join("mcp-bound-nonexistent/file")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }
}
