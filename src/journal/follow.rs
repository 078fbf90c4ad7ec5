//! A journal followed as it grows (`log -f`, as `tail -f`): a reader
//! that, at the end of what is written, says so once (`WouldBlock`: the
//! verifying pass then checks the last line without waiting for the
//! next), then waits for more, looking again every `INTERVAL`. A path
//! that now names another file (replaced, rotated) or a file shorter
//! than what was read (truncated) ends this reading (`Ok(0)`), and
//! `replaced` says why, so that the reader starts again on the new one.
//! Waiting is a sleep between looks, never a busy loop.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::sys;

/// How long between two looks at a file that has not grown.
const INTERVAL: Duration = Duration::from_millis(200);

/// Waits up to the interval; false ends the following.
pub(super) type Wait = Box<dyn FnMut(Duration) -> bool>;

pub struct Follow {
    path: PathBuf,
    wait: Wait,
    file: File,
    id: (u64, u64),
    read: u64,
    /// The end was said (WouldBlock) since the last bytes read.
    said_end: bool,
    replaced: bool,
}

impl Follow {
    pub fn open(path: &Path, wait: Wait) -> io::Result<Follow> {
        let file = File::open(path)?;
        Ok(Follow {
            path: path.to_path_buf(),
            wait,
            id: sys::file_id(&file)?,
            file,
            read: 0,
            said_end: false,
            replaced: false,
        })
    }

    /// Whether the reading ended because the path names another file, or
    /// the file was cut shorter than what was read.
    pub fn replaced(&self) -> bool {
        self.replaced
    }

    fn moved_on(&self) -> bool {
        // A path missing for a moment (a rotation between its rename and
        // its new file) is waited for.
        let Ok(now) = File::open(&self.path) else {
            return false;
        };
        let other = sys::file_id(&now).is_ok_and(|id| id != self.id);
        let shorter = now.metadata().is_ok_and(|meta| meta.len() < self.read);
        other || shorter
    }
}

impl Read for Follow {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.file.read(buf)?;
            if n > 0 {
                self.read += n as u64;
                self.said_end = false;
                return Ok(n);
            }
            if !self.said_end {
                self.said_end = true;
                return Err(io::ErrorKind::WouldBlock.into());
            }
            if self.moved_on() {
                self.replaced = true;
                return Ok(0);
            }
            if !(self.wait)(INTERVAL) {
                return Ok(0);
            }
        }
    }
}
