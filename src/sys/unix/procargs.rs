//! What macOS's `KERN_PROCARGS2` gives of a process, read without a
//! system call so a test can build the buffer by hand: the argument
//! count (a native `int`), the executable's path, NUL padding, the
//! arguments, then the environment, each string NUL-terminated, the
//! environment ending at an empty string or at the buffer's end. The
//! loader's own `key=value` strings (`executable_path=…`) may follow the
//! environment with no empty string between: taken as entries, they can
//! never equal the tree's mark, which is all this is read for.

/// The environment entries (`NAME=value`) of a `KERN_PROCARGS2` buffer;
/// None when the buffer is not one (too short, or fewer arguments than it
/// says).
pub(super) fn environment(buffer: &[u8]) -> Option<Vec<&[u8]>> {
    let count = buffer.get(..4)?;
    let argc = i32::from_ne_bytes(count.try_into().ok()?);
    let argc = usize::try_from(argc).ok()?;
    let mut rest = &buffer[4..];
    // The executable's path, then the padding after it.
    rest = after_string(rest)?;
    let padding = rest.iter().take_while(|b| **b == 0).count();
    rest = &rest[padding..];
    for _ in 0..argc {
        rest = after_string(rest)?;
    }
    let mut entries = Vec::new();
    for entry in rest.split(|b| *b == 0) {
        if entry.is_empty() {
            break;
        }
        entries.push(entry);
    }
    Some(entries)
}

/// What follows the NUL that ends the string at the start of `bytes`.
fn after_string(bytes: &[u8]) -> Option<&[u8]> {
    let end = memchr::memchr(0, bytes)?;
    Some(&bytes[end + 1..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(argc: i32, exec: &str, padding: usize, strings: &[&str]) -> Vec<u8> {
        let mut buffer = argc.to_ne_bytes().to_vec();
        buffer.extend_from_slice(exec.as_bytes());
        buffer.push(0);
        buffer.extend(std::iter::repeat_n(0, padding));
        for string in strings {
            buffer.extend_from_slice(string.as_bytes());
            buffer.push(0);
        }
        buffer
    }

    #[test]
    fn the_environment_follows_the_arguments() {
        let args = ["node", "server.js", "MCP_BOUND_TREE=lookalike-as-argument"];
        let env = ["HOME=/Users/a", "MCP_BOUND_TREE=42-abc"];
        let all: Vec<&str> = args.iter().chain(&env).copied().collect();
        let buf = buffer(3, "/usr/local/bin/node", 5, &all);
        assert_eq!(
            environment(&buf).unwrap(),
            [b"HOME=/Users/a".as_slice(), b"MCP_BOUND_TREE=42-abc"],
            "an argument that looks like an entry is an argument"
        );
    }

    /// What ends the environment: an empty string, or the buffer's end
    /// with or without a last NUL.
    #[test]
    fn the_environment_ends_at_an_empty_string_or_the_end() {
        let mut buf = buffer(
            1,
            "/bin/sh",
            0,
            &["sh", "A=1", "", "executable_path=/bin/sh"],
        );
        assert_eq!(environment(&buf).unwrap(), [b"A=1".as_slice()]);
        buf = buffer(1, "/bin/sh", 2, &["sh", "A=1", "B=2"]);
        assert_eq!(environment(&buf).unwrap(), [b"A=1".as_slice(), b"B=2"]);
        buf.pop();
        assert_eq!(environment(&buf).unwrap(), [b"A=1".as_slice(), b"B=2"]);
        let empty = buffer(1, "/bin/true", 3, &["true"]);
        assert_eq!(environment(&empty).unwrap(), Vec::<&[u8]>::new());
    }

    /// An empty argument is a string of its own; only the padding after
    /// the executable's path is skipped.
    #[test]
    fn empty_arguments_count() {
        let buf = buffer(3, "/bin/echo", 1, &["echo", "", "x", "E=1"]);
        assert_eq!(environment(&buf).unwrap(), [b"E=1".as_slice()]);
    }

    #[test]
    fn a_buffer_that_is_not_one_is_none() {
        assert_eq!(environment(b"\x01\x00"), None, "shorter than the count");
        assert_eq!(
            environment(&(-1i32).to_ne_bytes()),
            None,
            "a negative count"
        );
        let cut = buffer(4, "/bin/sh", 0, &["sh", "-c"]);
        assert_eq!(environment(&cut), None, "fewer arguments than counted");
        let mut no_path = 1i32.to_ne_bytes().to_vec();
        no_path.extend_from_slice(b"/bin/sh");
        assert_eq!(environment(&no_path), None, "a path with no end");
    }
}
