//! When the stderr log rotates, pure: by size, as multilog and s6-log do.
//! A line goes whole into the current file unless it does not fit and the
//! file is not empty: then the file rotates first. A line longer than the
//! cap itself is split at the cap (the only split). The disk used never
//! exceeds size × (keep + 1).

/// What to do with the next `len` bytes of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Rotate, then ask again.
    Rotate,
    /// Write this many bytes of it to the current file.
    Write(usize),
}

#[derive(Debug, Clone)]
pub(crate) struct Rotation {
    cap: u64,
    /// Bytes in the current file.
    size: u64,
}

impl Rotation {
    pub(super) fn new(cap: u64, size: u64) -> Rotation {
        Rotation {
            cap: cap.max(1),
            size,
        }
    }

    /// The next step for a line with `len` bytes still to write.
    pub(super) fn step(&self, len: usize) -> Step {
        let room = self.cap.saturating_sub(self.size);
        if len as u64 <= room {
            Step::Write(len)
        } else if self.size > 0 {
            Step::Rotate
        } else {
            // Longer than a whole file: split at the cap.
            Step::Write(room.min(len as u64) as usize)
        }
    }

    /// Bytes the current file can still take.
    pub(super) fn room(&self) -> usize {
        self.cap.saturating_sub(self.size) as usize
    }

    pub(super) fn wrote(&mut self, n: usize) {
        self.size += n as u64;
    }

    pub(super) fn rotated(&mut self) {
        self.size = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines into files: what each file holds.
    fn files(cap: u64, lines: &[usize]) -> Vec<u64> {
        let mut rotation = Rotation::new(cap, 0);
        let mut files = vec![0u64];
        for &line in lines {
            let mut left = line;
            while left > 0 {
                match rotation.step(left) {
                    Step::Rotate => {
                        rotation.rotated();
                        files.push(0);
                    }
                    Step::Write(n) => {
                        rotation.wrote(n);
                        *files.last_mut().unwrap() += n as u64;
                        left -= n;
                    }
                }
            }
        }
        files
    }

    #[test]
    fn lines_stay_whole_and_files_stay_under_the_cap() {
        assert_eq!(
            files(10, &[4, 4, 4]),
            [8, 4],
            "the third line moves on whole"
        );
        assert_eq!(files(10, &[10, 1]), [10, 1], "exactly full");
        // Only a line longer than a file is split, at the cap.
        assert_eq!(files(10, &[3, 25, 2]), [3, 10, 10, 7]);
    }
}
