//! A file replaced atomically (the record, the pin file): a reader sees
//! the old file or the new one, never a part of either.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use crate::sys;

/// Replace the file at `path` with `text` atomically: a private temporary
/// file in the same directory, synced, then renamed over. A symlink at
/// `path` is refused rather than followed or replaced, and so is a device
/// or a FIFO.
pub(crate) fn replace_atomically(path: &Path, text: &str) -> io::Result<()> {
    if let Ok(meta) = fs::symlink_metadata(path) {
        if meta.file_type().is_symlink() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a symlink; refusing to follow it",
            ));
        }
        if !meta.is_file() {
            // Renaming over a device or a FIFO would replace it.
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is not a regular file; refusing to replace it",
            ));
        }
    }
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "has no file name"))?;
    let temp = sys::parent_dir(path).join(format!(
        ".{}.{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        crate::ids::random_hex(4)
    ));
    let result = (|| {
        let mut file = sys::create_private(&temp)?;
        file.write_all(text.as_bytes())?;
        sys::sync_durable(&file)?;
        sys::replace_file(&temp, path, REPLACE_PATIENCE)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// How long a replacement waits for a reader on Windows that holds the old one
/// open without sharing its deletion (`sys::replace_file`); on Unix the
/// rename never waits.
const REPLACE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);
