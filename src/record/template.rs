//! A `--record` path with placeholders, so that each run writes a record
//! of its own: the TypeScript v2 client's throwaway probe sibling, and a
//! host that respawns a crashed server, start the same command again, and
//! a fixed path would be overwritten by the next run.
//!
//! `{call_id}` is the call's id, `{pid}` mcp-bound's pid; `{{` and `}}` are
//! literal braces. Placeholders go in the file name only, so that the
//! records one template makes share a directory (`--record-keep` removes
//! the oldest of them there).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(Vec<u8>),
    CallId,
    Pid,
}

/// A `--record` path, as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordTemplate {
    dir: PathBuf,
    name: Vec<Piece>,
}

impl RecordTemplate {
    /// Parse `--record`'s value; an unknown placeholder, an unclosed brace
    /// or a placeholder outside the file name is refused.
    pub fn parse(text: &OsStr) -> Result<RecordTemplate, String> {
        let path = Path::new(text);
        let name = path
            .file_name()
            .ok_or_else(|| format!("{}: has no file name", path.display()))?;
        let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        if pieces(crate::sys::os_bytes(dir.as_os_str()))?
            .iter()
            .any(|p| !matches!(p, Piece::Text(_)))
        {
            return Err(format!(
                "{}: placeholders go in the file name, not in a directory",
                path.display()
            ));
        }
        Ok(RecordTemplate {
            dir: unescaped_dir(&dir)?,
            name: pieces(crate::sys::os_bytes(name))?,
        })
    }

    /// Whether it has a placeholder (each run then has a file of its own).
    pub fn has_placeholder(&self) -> bool {
        self.name.iter().any(|p| !matches!(p, Piece::Text(_)))
    }

    /// The path for this run.
    pub fn fill(&self, call_id: &str, pid: u32) -> PathBuf {
        let mut name = Vec::new();
        for piece in &self.name {
            match piece {
                Piece::Text(text) => name.extend_from_slice(text),
                Piece::CallId => name.extend_from_slice(call_id.as_bytes()),
                Piece::Pid => name.extend_from_slice(pid.to_string().as_bytes()),
            }
        }
        self.dir.join(crate::sys::os_string(name))
    }

    /// The directory its records go to.
    pub fn dir(&self) -> &Path {
        if self.dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.dir
        }
    }

    /// Whether `name` (a file name in [`Self::dir`]) is one this template
    /// makes: each placeholder stands for a run of one or more bytes. A
    /// hidden file (a record being written) never is.
    pub fn makes(&self, name: &OsStr) -> bool {
        let name = crate::sys::os_bytes(name);
        !name.starts_with(b".") && matches(&self.name, name)
    }
}

fn matches(pieces: &[Piece], name: &[u8]) -> bool {
    match pieces.split_first() {
        None => name.is_empty(),
        Some((Piece::Text(text), rest)) => name
            .strip_prefix(text.as_slice())
            .is_some_and(|name| matches(rest, name)),
        Some((_, rest)) => (1..=name.len()).any(|taken| matches(rest, &name[taken..])),
    }
}

/// The pieces of a name: text, `{call_id}`, `{pid}`; `{{` and `}}` are braces.
fn pieces(bytes: &[u8]) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut text = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match (bytes[at], bytes.get(at + 1)) {
            (b'{', Some(b'{')) | (b'}', Some(b'}')) => {
                text.push(bytes[at]);
                at += 2;
            }
            (b'{', _) => {
                let end = bytes[at..]
                    .iter()
                    .position(|b| *b == b'}')
                    .ok_or("an unclosed '{' (write '{{' for a brace)")?;
                let piece = match &bytes[at + 1..at + end] {
                    b"call_id" => Piece::CallId,
                    b"pid" => Piece::Pid,
                    other => {
                        return Err(format!(
                            "unknown placeholder {{{}}} (known: {{call_id}}, {{pid}}; '{{{{' is a brace)",
                            String::from_utf8_lossy(other)
                        ));
                    }
                };
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                pieces.push(piece);
                at += end + 1;
            }
            (b'}', _) => return Err("a lone '}' (write '}}' for a brace)".into()),
            (byte, _) => {
                text.push(byte);
                at += 1;
            }
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

/// A directory part holds only text: its escaped braces undone.
fn unescaped_dir(dir: &Path) -> Result<PathBuf, String> {
    let text: Vec<u8> = pieces(crate::sys::os_bytes(dir.as_os_str()))?
        .into_iter()
        .flat_map(|piece| match piece {
            Piece::Text(text) => text,
            Piece::CallId | Piece::Pid => Vec::new(),
        })
        .collect();
    Ok(PathBuf::from(crate::sys::os_string(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RecordTemplate, String> {
        RecordTemplate::parse(OsStr::new(text))
    }

    #[test]
    fn placeholders_fill_the_file_name() {
        let template = parse("/var/log/mcp/gh-{call_id}-{pid}.json").unwrap();
        assert!(template.has_placeholder());
        assert_eq!(
            template.fill("c_1", 42),
            PathBuf::from("/var/log/mcp/gh-c_1-42.json")
        );
        let plain = parse("out/rec.json").unwrap();
        assert!(!plain.has_placeholder());
        assert_eq!(plain.fill("c_1", 42), PathBuf::from("out/rec.json"));
        assert_eq!(plain.dir(), Path::new("out"));
        assert_eq!(parse("rec.json").unwrap().dir(), Path::new("."));
        // Braces, escaped.
        assert_eq!(
            parse("a{{b}}{call_id}.json").unwrap().fill("x", 1),
            PathBuf::from("a{b}x.json")
        );
        assert_eq!(
            parse("d{{1}}/r.json").unwrap().fill("x", 1),
            PathBuf::from("d{1}/r.json")
        );
    }

    #[test]
    fn what_cannot_be_a_template_is_refused() {
        for (text, why) in [
            ("r-{nope}.json", "unknown placeholder {nope}"),
            ("r-{call_id.json", "unclosed"),
            ("r-}.json", "lone"),
            ("dir-{pid}/r.json", "not in a directory"),
            ("/", "no file name"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }

    #[test]
    fn a_template_knows_the_files_it_makes() {
        let template = parse("/tmp/gh-{call_id}.json").unwrap();
        for made in ["gh-c_0123.json", "gh-x.json", "gh-a-b.json"] {
            assert!(template.makes(OsStr::new(made)), "{made}");
        }
        for other in [
            "gh-.json",
            "gh-c_1.json.tmp",
            "x-gh-c.json",
            ".gh-c_1.json.7.ab.tmp",
            "gh-c.jso",
        ] {
            assert!(!template.makes(OsStr::new(other)), "{other}");
        }
        let two = parse("{call_id}-{pid}").unwrap();
        assert!(two.makes(OsStr::new("c-1-77")));
        assert!(!two.makes(OsStr::new("c-")));
    }
}
