//! Files: created private (0600, never through a symlink), opened for
//! appending, locked, synced, read small, the terminal, and what `fstat`
//! says of one opened (for `trust::judge`).

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

use nix::libc;

/// Create a new file with mode 0600 for writing, refusing to follow a
/// symlink and refusing to reuse an existing file.
pub fn create_private(path: &Path) -> io::Result<File> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: a valid C string; the flags create a fresh file.
    let fd = unsafe {
        libc::open(
            c_path.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: open returned a new descriptor that we now own.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Open (or create, mode 0600) a file for appending, never through a
/// symlink. Returns the file and whether this call created it.
pub fn open_append_private(path: &Path) -> io::Result<(File, bool)> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    let base = libc::O_RDWR | libc::O_APPEND | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: valid C string; O_EXCL tells us whether we created it.
    let fd = unsafe {
        libc::open(
            c_path.as_ptr(),
            base | libc::O_CREAT | libc::O_EXCL,
            0o600 as libc::c_uint,
        )
    };
    let (fd, created) = if fd >= 0 {
        (fd, true)
    } else if io::Error::last_os_error().raw_os_error() == Some(libc::EEXIST) {
        // SAFETY: as above.
        (unsafe { libc::open(c_path.as_ptr(), base) }, false)
    } else {
        (fd, false)
    };
    if fd < 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::ELOOP) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a symlink; refusing to follow it",
            ));
        }
        return Err(err);
    }
    // SAFETY: a fresh descriptor we own.
    Ok((File::from(unsafe { OwnedFd::from_raw_fd(fd) }), created))
}

/// Make a new directory entry durable.
pub fn fsync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Exclusive flock(2), waiting at most `limit` (`lock_within`). flock
/// (not fcntl locks, which vanish when any descriptor to the file is
/// closed) and per open file description, so two appenders in one process
/// exclude each other too.
pub fn lock_exclusive(file: &File, limit: Duration) -> io::Result<()> {
    crate::sys::portable::lock_within(limit, || try_lock_exclusive(file))
}

/// Take an exclusive flock if it is free: Ok(false) when another holds it.
pub fn try_lock_exclusive(file: &File) -> io::Result<bool> {
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            return Ok(false);
        }
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

pub fn unlock(file: &File) {
    // SAFETY: flock on a descriptor we own.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
}

/// A read-only view of `bytes` as a file positioned at its start, to hand
/// to a child as stdin: unlike a pipe it never blocks the writer, however
/// large the request and whether or not the child reads it.
pub fn file_with(bytes: &[u8]) -> io::Result<OwnedFd> {
    use std::io::{Seek, SeekFrom, Write};
    #[cfg(target_os = "linux")]
    let fd = nix::sys::memfd::memfd_create(
        c"mcp-bound-request",
        nix::sys::memfd::MFdFlags::MFD_CLOEXEC,
    )?;
    #[cfg(not(target_os = "linux"))]
    let fd = {
        let path = std::env::temp_dir().join(format!("mcp-bound-request-{}", std::process::id()));
        let file = create_private(&path)?;
        std::fs::remove_file(&path)?;
        OwnedFd::from(file)
    };
    let mut file = File::from(fd);
    file.write_all(bytes)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(OwnedFd::from(file))
}

/// Open the controlling terminal for a question, discarding typeahead so
/// that keys pressed before the question cannot answer it.
pub fn open_tty() -> io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC)
        .open("/dev/tty")?;
    nix::sys::termios::tcflush(&file, nix::sys::termios::FlushArg::TCIFLUSH)?;
    Ok(file)
}

/// Open `path` to read it, never through a link and never waiting: a
/// FIFO (or a device) opens at once instead of blocking until a writer
/// comes, so the caller's judgement of the descriptor (`seen`) refuses
/// it. Any file mcp-bound opens by name to read goes through here.
pub fn open_to_read(path: &Path) -> io::Result<File> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))?;
    // SAFETY: a valid C string; the flags only read.
    let fd = unsafe {
        libc::open(
            c_path.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor we own.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// What `fstat` says of an open file, for `trust::judge`.
pub fn seen(file: &File) -> io::Result<crate::trust::Seen> {
    use crate::trust::Kind;
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let meta = file.metadata()?;
    let kind = meta.file_type();
    Ok(crate::trust::Seen {
        make_private: super::MAKE_PRIVATE,
        uid: meta.uid(),
        mode: meta.mode() & 0o7777,
        kind: if kind.is_file() {
            Kind::Regular
        } else if kind.is_fifo() {
            Kind::Fifo
        } else if kind.is_char_device() {
            Kind::CharDevice
        } else {
            Kind::Other
        },
    })
}

/// Which file an open file is (device, inode): a path now naming
/// another (a journal replaced or rotated) says so.
pub fn file_id(file: &File) -> io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata()?;
    Ok((meta.dev(), meta.ino()))
}

/// Our effective uid.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

/// Whether `meta` is the null device itself, not whatever a container put
/// at /dev/null (a regular file there would fill up).
pub(super) fn is_null_device(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    meta.file_type().is_char_device() && Some(meta.rdev()) == super::null_device()
}

/// What the inherited output descriptor `fd` (`file`, not ours to close)
/// is, for how the sink writes it.
pub fn output_kind(fd: RawFd, file: &File) -> crate::sys::OutputKind {
    use crate::sys::OutputKind;
    use std::os::unix::fs::FileTypeExt;
    if !super::is_open_for_writing(fd) {
        return OutputKind::Absent;
    }
    let Ok(meta) = file.metadata() else {
        return OutputKind::Absent;
    };
    let kind = meta.file_type();
    if super::is_nonblocking(file.as_fd()).unwrap_or(false) {
        OutputKind::AlreadyNonblocking
    } else if kind.is_fifo() {
        match super::os::REOPEN_FIFO.and_then(|reopen| reopen(fd)) {
            Some(fd) => OutputKind::Reopened(File::from(fd)),
            None => OutputKind::AfterPollout,
        }
    } else if kind.is_socket() {
        OutputKind::Socket(super::send_nowait)
    } else if kind.is_file() || is_null_device(&meta) {
        OutputKind::NeverWaits
    } else {
        OutputKind::AfterPollout
    }
}

/// Read at `offset` of a shared file (pread), leaving its position alone.
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    file.read_at(buf, offset)
}

/// Fill `buf` from `offset` of a shared file, leaving its position alone.
pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
}

/// A path's bytes, as the system holds them.
pub fn os_bytes(text: &std::ffi::OsStr) -> &[u8] {
    use std::os::unix::ffi::OsStrExt;
    text.as_bytes()
}

/// A path from bytes (any bytes are one on Unix).
pub fn os_string(bytes: Vec<u8>) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStringExt;
    std::ffi::OsString::from_vec(bytes)
}

/// Put `from` in `to`'s place, replacing it in one step (rename(2)): a
/// reader that holds `to` open keeps the old file, so nothing waits.
pub fn replace_file(from: &Path, to: &Path, _patience: Duration) -> io::Result<()> {
    std::fs::rename(from, to)
}
