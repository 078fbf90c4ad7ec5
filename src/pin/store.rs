//! The pin file on disk: read when mcp-bound starts (a file that is not
//! ours, or that others may write, is refused, as a journal is), read
//! again when it changes (`mcp-bound pin --accept` in another terminal),
//! and changed under an exclusive lock on `FILE.lock`: read again, the
//! change applied, then replaced atomically (a private temporary file,
//! synced, renamed over), so several mcp-bound processes can share one.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{FORMAT, PinFile, ServerPins};
use crate::sys;
use crate::trust::Role;

/// How long a change waits for another process's lock.
const LOCK_WAIT: Duration = Duration::from_secs(10);
/// A pin file larger than this is not one mcp-bound wrote.
const MAX_BYTES: u64 = 64 << 20;

/// What identifies one version of the file: its length and mtime.
type Stamp = Option<(u64, Option<SystemTime>)>;

/// The pin file, as last read.
pub(crate) struct Store {
    path: PathBuf,
    file: PinFile,
    stamp: Stamp,
}

impl Store {
    /// Read the file (absent: no pins yet). Err: why it cannot be used,
    /// in words (the caller names the option). Ok carries a warning
    /// when others can read the file.
    pub(crate) fn open(path: &Path) -> Result<(Store, Option<String>), String> {
        let mut store = Store {
            path: path.to_path_buf(),
            file: PinFile::default(),
            stamp: None,
        };
        let warning = store.read().map_err(|e| e.to_string())?;
        // Checked now, not at the first listing: the lock file's place.
        store.lock().map_err(|e| e.to_string())?;
        Ok((store, warning))
    }

    pub(crate) fn file(&self) -> &PinFile {
        &self.file
    }

    pub(crate) fn pins(&self, key: &str) -> Option<&ServerPins> {
        self.file.servers.get(key)
    }

    /// Read the file again if it changed since it was read: true then.
    pub(crate) fn refresh(&mut self) -> io::Result<bool> {
        if stamp_of(&self.path) == self.stamp {
            return Ok(false);
        }
        self.read()?;
        Ok(true)
    }

    /// Change one server's pins under the lock, on the file as it is
    /// now: `change` says whether it changed anything (then the file is
    /// written).
    pub(crate) fn update(
        &mut self,
        key: &str,
        change: impl FnOnce(&mut ServerPins) -> bool,
    ) -> io::Result<()> {
        self.update_file(|file| change(file.servers.entry(key.to_string()).or_default()))
    }

    /// As [`Store::update`], for the whole file.
    pub(crate) fn update_file(
        &mut self,
        change: impl FnOnce(&mut PinFile) -> bool,
    ) -> io::Result<()> {
        let lock = self.lock()?;
        sys::lock_exclusive(&lock, LOCK_WAIT)?;
        let result = (|| {
            self.read()?;
            if !change(&mut self.file) {
                return Ok(());
            }
            let mut text = serde_json::to_string_pretty(&self.file).expect("pins serialize");
            text.push('\n');
            crate::replace::replace_atomically(&self.path, &text)?;
            self.stamp = stamp_of(&self.path);
            Ok(())
        })();
        sys::unlock(&lock);
        result
    }

    fn lock(&self) -> io::Result<File> {
        let mut name = self.path.clone().into_os_string();
        name.push(".lock");
        let (lock, _) = sys::open_append_private(Path::new(&name))?;
        sys::judged(&lock, Role::Lock)?;
        Ok(lock)
    }

    /// Read the file as it is (absent: empty).
    fn read(&mut self) -> io::Result<Option<String>> {
        let stamp = stamp_of(&self.path);
        // Never a wait in the loop: a FIFO swapped in opens at once,
        // and is refused by the judgement below.
        let mut file = match sys::open_to_read(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.file = PinFile::default();
                self.stamp = None;
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let warning = sys::judged(&file, Role::Journal)?;
        let mut text = String::new();
        file.by_ref()
            .take(MAX_BYTES + 1)
            .read_to_string(&mut text)?;
        if text.len() as u64 > MAX_BYTES {
            return Err(invalid(format!("is over {MAX_BYTES} bytes")));
        }
        let read: PinFile = serde_json::from_str(&text)
            .map_err(|e| invalid(format!("is not a pin file mcp-bound wrote: {e}")))?;
        if read.mcp_bound_pins != FORMAT {
            return Err(invalid(format!(
                "is pin file format {}, this mcp-bound reads {FORMAT}",
                read.mcp_bound_pins
            )));
        }
        self.file = read;
        self.stamp = stamp;
        Ok(warning)
    }
}

fn invalid(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

fn stamp_of(path: &Path) -> Stamp {
    std::fs::metadata(path)
        .ok()
        .map(|meta| (meta.len(), meta.modified().ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> super::super::Definition {
        let raw = serde_json::json!({"name": name, "description": description}).to_string();
        super::super::read_tool(&raw).unwrap()
    }

    #[test]
    fn a_change_is_written_and_another_store_sees_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pins.json");
        let (mut one, warning) = Store::open(&path).unwrap();
        assert_eq!(warning, None);
        assert!(one.pins("k").is_none());
        let (mut two, _) = Store::open(&path).unwrap();
        one.update("k", |pins| {
            pins.pin_all(&[tool("search", "Find")], "t0");
            true
        })
        .unwrap();
        assert!(two.refresh().unwrap(), "the file changed");
        assert!(two.pins("k").unwrap().trusts("search"));
        assert!(!two.refresh().unwrap(), "and did not change again");
        // A change made on the file as it is now, not as first read.
        two.update("other", |pins| {
            pins.pin_all(&[tool("x", "X")], "t1");
            true
        })
        .unwrap();
        one.refresh().unwrap();
        assert_eq!(one.file().servers.len(), 2);
    }

    #[test]
    fn a_file_that_is_not_a_pin_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pins.json");
        std::fs::write(&path, "{\"tools\":[]}").unwrap();
        let err = Store::open(&path).err().unwrap();
        assert!(err.contains("is not a pin file"), "{err}");
        std::fs::write(&path, "{\"mcp_bound_pins\":9,\"servers\":{}}").unwrap();
        let err = Store::open(&path).err().unwrap();
        assert!(err.contains("format 9"), "{err}");
    }
}
