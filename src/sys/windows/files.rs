//! Files on Windows: created new or opened for appending (never through
//! a symbolic link or junction), locked, made durable, and read at an
//! offset, as the journal, the record and the stderr log use them on
//! Unix.
//!
//! The lock is `LockFileEx` on one byte far past any end of file, not on
//! the file's bytes: Windows locks are mandatory on the range they cover,
//! and a lock on the data would stop `verify` (or a second reader) from
//! reading a journal that an appender holds. One byte nobody reads gives
//! flock(2)'s advisory meaning; like flock's, it belongs to one open
//! handle, so two appenders in one process exclude each other too.
//!
//! Not yet the same as on Unix, and said in the README's platform table: a
//! file is created with the ACL its directory passes on (in the user's
//! profile, the user's own), not with an explicit owner-only one.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::windows::fs::{FileExt, OpenOptionsExt};
use std::os::windows::io::AsRawHandle;
use std::path::Path;
use std::time::Duration;

use windows_sys::Win32::Foundation::{
    ERROR_ACCESS_DENIED, ERROR_FILE_EXISTS, ERROR_LOCK_VIOLATION, ERROR_SHARING_VIOLATION,
};
use windows_sys::Win32::Storage::FileSystem::{
    BY_HANDLE_FILE_INFORMATION, FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT,
    GetFileInformationByHandle, LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY, LockFileEx,
    MOVEFILE_REPLACE_EXISTING, MOVEFILE_WRITE_THROUGH, MoveFileExW, UnlockFileEx,
};
use windows_sys::Win32::System::IO::OVERLAPPED;

use super::handle::check;

/// The locked byte: far past any journal's end, so never read or written.
const LOCK_OFFSET: u64 = u64::MAX - 1;

/// Open through `options`, the link itself if `path` is one, and refuse
/// it then: a journal or record is never written through a link.
fn open_not_through_a_link(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let file = options
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)?;
    if file.metadata()?.file_type().is_symlink() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "is a symbolic link or junction; refusing to follow it",
        ));
    }
    Ok(file)
}

/// Open `path` to read it, never through a link. A named pipe
/// (`\\.\pipe\x`) opens at once or fails (busy), never waiting for a
/// server, and the caller's judgement of the handle (`seen`, from
/// `GetFileType`) refuses it.
pub fn open_to_read(path: &Path) -> io::Result<File> {
    open_not_through_a_link(path, OpenOptions::new().read(true))
}

/// Create a new file for writing, refusing to reuse an existing one (or a
/// link of that name).
pub fn create_private(path: &Path) -> io::Result<File> {
    open_not_through_a_link(path, OpenOptions::new().write(true).create_new(true))
}

/// Open (or create) a file for appending and reading at offsets, never
/// through a link. Returns the file and whether this call created it.
pub fn open_append_private(path: &Path) -> io::Result<(File, bool)> {
    let mut options = OpenOptions::new();
    options.read(true).append(true);
    match open_not_through_a_link(path, options.clone().create_new(true)) {
        Ok(file) => Ok((file, true)),
        Err(err) if err.raw_os_error() == Some(ERROR_FILE_EXISTS as i32) => {
            Ok((open_not_through_a_link(path, &mut options)?, false))
        }
        Err(err) => Err(err),
    }
}

/// Make a new directory entry durable: the directory's handle (backup
/// semantics opens a directory) flushed with `FlushFileBuffers`.
pub fn fsync_dir(dir: &Path) -> io::Result<()> {
    OpenOptions::new()
        .write(true)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
        .open(dir)?
        .sync_all()
}

/// Durable on the disk: `FlushFileBuffers`.
pub fn sync_durable(file: &File) -> io::Result<()> {
    file.sync_all()
}

fn lock_byte() -> OVERLAPPED {
    let mut at = OVERLAPPED::default();
    at.Anonymous.Anonymous.Offset = LOCK_OFFSET as u32;
    at.Anonymous.Anonymous.OffsetHigh = (LOCK_OFFSET >> 32) as u32;
    at
}

/// Take the lock if it is free: Ok(false) when another handle holds it.
pub fn try_lock_exclusive(file: &File) -> io::Result<bool> {
    let mut at = lock_byte();
    // SAFETY: our open handle; a synchronous call that fails at once
    // rather than wait, on one byte at `at`.
    let locked = check(unsafe {
        LockFileEx(
            file.as_raw_handle(),
            LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY,
            0,
            1,
            0,
            &mut at,
        )
    });
    match locked {
        Ok(()) => Ok(true),
        Err(err) if err.raw_os_error() == Some(ERROR_LOCK_VIOLATION as i32) => Ok(false),
        Err(err) => Err(err),
    }
}

/// The lock, waiting at most `limit` (`lock_within`, as on Unix).
pub fn lock_exclusive(file: &File, limit: Duration) -> io::Result<()> {
    crate::sys::portable::lock_within(limit, || try_lock_exclusive(file))
}

pub fn unlock(file: &File) {
    let mut at = lock_byte();
    // SAFETY: our open handle; the byte `try_lock_exclusive` locked.
    unsafe { UnlockFileEx(file.as_raw_handle(), 0, 1, 0, &mut at) };
}

/// Which file an open file is (volume serial, file index), as Unix's
/// (device, inode): a path now naming another says so.
pub fn file_id(file: &File) -> io::Result<(u64, u64)> {
    let mut info = BY_HANDLE_FILE_INFORMATION::default();
    // SAFETY: our open handle, and a structure of the size the call fills.
    check(unsafe { GetFileInformationByHandle(file.as_raw_handle(), &mut info) })?;
    let index = u64::from(info.nFileIndexHigh) << 32 | u64::from(info.nFileIndexLow);
    Ok((u64::from(info.dwVolumeSerialNumber), index))
}

/// Read at `offset` (Windows moves the handle's position as it does;
/// appends go to the end whatever the position).
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    file.seek_read(buf, offset)
}

pub fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match read_at(file, buf, offset)? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

/// `bytes` as a file positioned at its start, to hand to a child as
/// stdin (an approver's request): unlike a pipe it never blocks us,
/// however large the request and whether or not the child reads it. A
/// new file in our temporary directory (the user's own), gone when the
/// last handle to it closes, the child's included.
pub fn file_with(bytes: &[u8]) -> io::Result<std::os::windows::io::OwnedHandle> {
    use std::io::{Seek, SeekFrom, Write};
    use windows_sys::Win32::Storage::FileSystem::{
        FILE_ATTRIBUTE_TEMPORARY, FILE_FLAG_DELETE_ON_CLOSE, FILE_SHARE_DELETE, FILE_SHARE_READ,
    };
    let path = std::env::temp_dir().join(format!(
        "mcp-bound-request-{}-{}",
        std::process::id(),
        crate::ids::random_hex(8)
    ));
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_DELETE)
        .attributes(FILE_ATTRIBUTE_TEMPORARY)
        .custom_flags(FILE_FLAG_DELETE_ON_CLOSE)
        .open(&path)?;
    file.write_all(bytes)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(file.into())
}

/// Put `from` in `to`'s place, replacing it (`MoveFileExW`, replacing
/// and written through). A process that holds `to` open without sharing
/// its deletion (an editor, a reader opened with the default share mode)
/// makes the move fail, access denied or a sharing violation: it is
/// tried again, 1 ms then twice as long each time, for up to `patience`,
/// then said as held open by another process.
pub fn replace_file(from: &Path, to: &Path, patience: Duration) -> io::Result<()> {
    use std::os::windows::ffi::OsStrExt;
    let wide = |path: &Path| -> Vec<u16> { path.as_os_str().encode_wide().chain([0]).collect() };
    let (source, target) = (wide(from), wide(to));
    let started = std::time::Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        // SAFETY: two NUL-terminated wide paths that outlive the call.
        let moved = check(unsafe {
            MoveFileExW(
                source.as_ptr(),
                target.as_ptr(),
                MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH,
            )
        });
        let held = |err: &io::Error| {
            [ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION]
                .iter()
                .any(|code| err.raw_os_error() == Some(*code as i32))
        };
        match moved {
            Err(err) if held(&err) && started.elapsed() + pause <= patience => {
                std::thread::sleep(pause);
                pause *= 2;
            }
            Err(err) if held(&err) => {
                return Err(io::Error::new(
                    err.kind(),
                    format!(
                        "held open by another process, which keeps it from being replaced (tried for {} ms): {err}",
                        started.elapsed().as_millis()
                    ),
                ));
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_lock_excludes_a_second_handle_and_is_free_again_after_unlock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let (first, created) = open_append_private(&path).unwrap();
        assert!(created, "the first open creates it");
        let (second, created) = open_append_private(&path).unwrap();
        assert!(!created, "the second finds it");
        assert!(try_lock_exclusive(&first).unwrap(), "free at first");
        assert!(
            !try_lock_exclusive(&second).unwrap(),
            "held by the other handle"
        );
        let waited = lock_exclusive(&second, Duration::from_millis(30)).unwrap_err();
        assert_eq!(waited.kind(), io::ErrorKind::TimedOut, "{waited}");
        unlock(&first);
        assert!(try_lock_exclusive(&second).unwrap(), "free again");
        unlock(&second);
    }

    #[test]
    fn a_held_lock_leaves_the_bytes_readable_and_appends_go_to_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let (mut appender, _) = open_append_private(&path).unwrap();
        appender.write_all(b"one\n").unwrap();
        assert!(try_lock_exclusive(&appender).unwrap());
        let mut head = [0u8; 3];
        read_exact_at(&appender, &mut head, 0).unwrap();
        assert_eq!(&head, b"one", "read back at an offset");
        appender.write_all(b"two\n").unwrap();
        sync_durable(&appender).unwrap();
        let reader = File::open(&path).unwrap();
        let mut all = [0u8; 8];
        read_exact_at(&reader, &mut all, 0).unwrap();
        assert_eq!(
            &all, b"one\ntwo\n",
            "another handle reads while the lock is held"
        );
        let mut past = [0u8; 1];
        let end = read_exact_at(&reader, &mut past, 8).unwrap_err();
        assert_eq!(end.kind(), io::ErrorKind::UnexpectedEof);
        unlock(&appender);
    }

    #[test]
    fn a_link_is_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere.jsonl");
        std::fs::write(&target, b"theirs\n").unwrap();
        let link = dir.path().join("journal.jsonl");
        std::os::windows::fs::symlink_file(&target, &link).unwrap();
        if !std::fs::symlink_metadata(&link).is_ok_and(|meta| meta.file_type().is_symlink()) {
            // Wine's CreateSymbolicLinkW says yes and makes nothing.
            println!("SKIPPED: this system made no link (Wine); the refusal is Windows's to show");
            return;
        }
        let append = open_append_private(&link).unwrap_err();
        assert_eq!(append.kind(), io::ErrorKind::InvalidInput, "{append}");
        let create = create_private(&link).unwrap_err();
        assert_eq!(create.kind(), io::ErrorKind::AlreadyExists, "{create}");
        assert_eq!(std::fs::read(&target).unwrap(), b"theirs\n", "untouched");
    }

    #[test]
    fn a_new_file_is_never_an_existing_one_and_its_entry_is_made_durable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("record.json");
        create_private(&path).unwrap().write_all(b"{}").unwrap();
        fsync_dir(dir.path()).unwrap();
        let again = create_private(&path).unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists, "{again}");
        assert_eq!(std::fs::read(&path).unwrap(), b"{}", "untouched");
    }
    #[test]
    fn a_file_held_open_is_replaced_once_let_go_and_said_if_never() {
        use windows_sys::Win32::Storage::FileSystem::FILE_SHARE_READ;
        let dir = tempfile::tempdir().unwrap();
        let (to, from) = (dir.path().join("record.json"), dir.path().join("new.tmp"));
        std::fs::write(&to, "old").unwrap();
        std::fs::write(&from, "new").unwrap();
        // A reader that shares reading only, as .NET's and many editors'.
        let reader = || {
            OpenOptions::new()
                .read(true)
                .share_mode(FILE_SHARE_READ)
                .open(&to)
                .unwrap()
        };
        let held = reader();
        match replace_file(&from, &to, Duration::from_millis(50)) {
            Err(err) => {
                let text = err.to_string();
                assert!(text.contains("held open by another process"), "{text}");
                assert_eq!(std::fs::read_to_string(&to).unwrap(), "old");
            }
            Ok(()) => {
                println!("SKIPPED: this system (Wine) replaces a file another handle holds");
                return;
            }
        }
        let replacing = std::thread::spawn({
            let (from, to) = (from.clone(), to.clone());
            move || replace_file(&from, &to, Duration::from_secs(30))
        });
        drop(held);
        replacing.join().unwrap().unwrap();
        assert_eq!(std::fs::read_to_string(&to).unwrap(), "new");
        assert!(!from.exists());
    }
}
