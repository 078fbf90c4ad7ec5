//! Windows command lines, pure: how a program name is found through PATH
//! and PATHEXT as the shell finds it (`npx` is `npx.cmd`), and how argv
//! becomes the one string `CreateProcessW` takes. A program reads that
//! string back with the C runtime's rules (`CommandLineToArgvW`); a batch
//! file (`.cmd`, `.bat`) runs through `cmd.exe`, whose rules differ, and
//! the gap between the two is how an argument turns into a command (the
//! "BatBadBut" class, CVE-2024-24576). Rust's std closed it in 1.77.2;
//! the rules here are the same ones: an argument that cannot be passed
//! to a batch file safely is refused (125, nothing run), never passed.
//!
//! Strings are UTF-16, as Windows holds them; tests build them from text.

use std::iter::repeat_n;

/// Why no command line can be built safely: the call is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unsafe {
    /// An argument or the program holds a NUL, which ends a C string.
    Nul,
    /// A batch file's argument holds a CR or LF: cmd.exe would end the
    /// command there and run what follows as another.
    BatchLineBreak,
    /// The program's path holds `"` (no Windows file name does), or a
    /// batch file's path ends with `\`.
    ProgramName,
}

impl Unsafe {
    /// Why, as the one-line refusal says it.
    pub(super) fn why(self) -> &'static str {
        match self {
            Unsafe::Nul => "an argument holds a NUL character",
            Unsafe::BatchLineBreak => {
                "a batch file's argument holds a line break, which cmd.exe would run as a second command"
            }
            Unsafe::ProgramName => "the program's path cannot be quoted",
        }
    }
}

const fn unit(c: u8) -> u16 {
    c as u16
}

const QUOTE: u16 = unit(b'"');
const BACKSLASH: u16 = unit(b'\\');

/// PATHEXT when the environment has none.
pub(super) const DEFAULT_PATHEXT: &str = ".COM;.EXE;.BAT;.CMD";

/// Where `name` is, as the shell finds it: a name with a directory part
/// as given, a bare name in each directory of `path` (`;`-separated) in
/// order, never the current directory (as Go's `exec.LookPath` since
/// 1.19). A name whose last part has an extension is tried as is first;
/// then each of `pathext`'s extensions is appended in order. The first
/// candidate that `exists` wins; None if none does.
pub(super) fn find_program(
    name: &str,
    path: &str,
    pathext: &str,
    exists: &dyn Fn(&str) -> bool,
) -> Option<String> {
    let base = name.rsplit(['\\', '/']).next().unwrap_or(name);
    let has_extension = base.contains('.');
    let extensions: Vec<&str> = pathext
        .split(';')
        .filter(|ext| ext.starts_with('.') && ext.len() > 1)
        .collect();
    let candidates = |stem: &str| -> Vec<String> {
        let exact = has_extension.then(|| stem.to_string());
        exact
            .into_iter()
            .chain(extensions.iter().map(|ext| format!("{stem}{ext}")))
            .collect()
    };
    if base.len() != name.len() || name.contains(':') {
        return candidates(name).into_iter().find(|c| exists(c));
    }
    path.split(';')
        .filter(|dir| !dir.is_empty())
        .map(|dir| dir.trim_matches('"').trim_end_matches(['\\', '/']))
        .flat_map(|dir| candidates(&format!("{dir}\\{name}")))
        .find(|c| exists(c))
}

/// Whether `program` runs through cmd.exe (`.bat` or `.cmd`, any case).
pub(super) fn is_batch(program: &str) -> bool {
    let lower = program.to_ascii_lowercase();
    lower.ends_with(".bat") || lower.ends_with(".cmd")
}

/// The command line for a program (not a batch file): its path quoted,
/// then each argument as the C runtime reads it back.
pub(super) fn program_line(program: &[u16], args: &[&[u16]]) -> Result<Vec<u16>, Unsafe> {
    if program.contains(&0) || args.iter().any(|arg| arg.contains(&0)) {
        return Err(Unsafe::Nul);
    }
    if program.contains(&QUOTE) {
        return Err(Unsafe::ProgramName);
    }
    // argv[0] is read up to its closing quote, with no escapes.
    let mut line = vec![QUOTE];
    line.extend_from_slice(program);
    line.push(QUOTE);
    for arg in args {
        line.push(unit(b' '));
        append_arg(&mut line, arg);
    }
    Ok(line)
}

/// Who reads an argument back, which decides how it is escaped.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reader {
    /// The C runtime: a quote after n backslashes is written as 2n+1 of
    /// them and the quote (n literal, one escape).
    Runtime,
    /// cmd.exe passing it to a batch file: 2n backslashes and the quote
    /// doubled; `%` written `%%cd:~,%`.
    Cmd,
}

/// One argument, as the C runtime reads it back: quoted when it is
/// empty or holds a space, a tab, a line break or a quote.
fn append_arg(line: &mut Vec<u16>, arg: &[u16]) {
    let special = [unit(b' '), unit(b'\t'), unit(b'\n'), QUOTE];
    let quote = arg.is_empty() || arg.iter().any(|c| special.contains(c));
    append_escaped(line, arg, quote, Reader::Runtime);
}

/// `arg`, between quotes when `quote`, escaped for `reader`. Before the
/// closing quote, n backslashes are written as 2n (n literal).
fn append_escaped(line: &mut Vec<u16>, arg: &[u16], quote: bool, reader: Reader) {
    if quote {
        line.push(QUOTE);
    }
    let mut backslashes = 0;
    for &c in arg {
        if c == BACKSLASH {
            backslashes += 1;
        } else {
            if c == QUOTE && reader == Reader::Runtime {
                line.extend(repeat_n(BACKSLASH, backslashes + 1));
            } else if c == QUOTE {
                line.extend(repeat_n(BACKSLASH, backslashes));
                line.push(QUOTE);
            } else if c == unit(b'%') && reader == Reader::Cmd {
                line.extend("%%cd:~,".encode_utf16());
            }
            backslashes = 0;
        }
        line.push(c);
    }
    if quote {
        line.extend(repeat_n(BACKSLASH, backslashes));
        line.push(QUOTE);
    }
}

/// The command line for a batch file: `cmd.exe /e:ON /v:OFF /d /c` and,
/// in one more pair of quotes, the script's path and each argument as
/// cmd.exe passes it on unexpanded. Delayed expansion is off (`!` stays
/// itself); `%` is written `%%cd:~,%`, which cmd.exe expands to `%`
/// itself (an empty substring of `cd`, then the `%`), so no `%VAR%` is
/// ever expanded; `"` is doubled; an argument with anything but letters,
/// digits and `#$*+-./:?@\_` is quoted.
pub(super) fn batch_line(script: &[u16], args: &[&[u16]]) -> Result<Vec<u16>, Unsafe> {
    if script.contains(&0) || args.iter().any(|arg| arg.contains(&0)) {
        return Err(Unsafe::Nul);
    }
    if script.contains(&QUOTE) || script.last() == Some(&BACKSLASH) {
        return Err(Unsafe::ProgramName);
    }
    let line_break = |c: &u16| *c == unit(b'\r') || *c == unit(b'\n');
    if args.iter().any(|arg| arg.iter().any(line_break)) {
        return Err(Unsafe::BatchLineBreak);
    }
    let mut line: Vec<u16> = "cmd.exe /e:ON /v:OFF /d /c \"".encode_utf16().collect();
    line.push(QUOTE);
    line.extend_from_slice(script);
    line.push(QUOTE);
    for arg in args {
        line.push(unit(b' '));
        append_batch_arg(&mut line, arg);
    }
    line.push(QUOTE);
    Ok(line)
}

fn append_batch_arg(line: &mut Vec<u16>, arg: &[u16]) {
    const PLAIN: &[u8] = b"#$*+-./:?@\\_";
    let plain = |c: u16| {
        u8::try_from(c).is_ok_and(|b| b.is_ascii_alphanumeric() || PLAIN.contains(&b))
            || (c > 0x7f && char::from_u32(u32::from(c)).is_some_and(|ch| !ch.is_control()))
            || (0xd800..0xe000).contains(&c)
    };
    // A trailing backslash would escape the closing quote of `"%~1"`.
    let quote = arg.is_empty() || arg.last() == Some(&BACKSLASH) || !arg.iter().all(|&c| plain(c));
    append_escaped(line, arg, quote, Reader::Cmd);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn wide(text: &str) -> Vec<u16> {
        text.encode_utf16().collect()
    }

    fn text(line: &[u16]) -> String {
        String::from_utf16(line).unwrap()
    }

    /// The C runtime's reading of a command line's arguments after
    /// argv[0] (the rules `CommandLineToArgvW` documents, with the
    /// 2008 runtime's `""` inside quotes), written from the documentation.
    fn read_back(line: &str) -> Vec<String> {
        let after_program = line.strip_prefix('"').and_then(|rest| rest.split_once('"'));
        let mut chars = after_program
            .map_or("", |(_, rest)| rest)
            .chars()
            .peekable();
        let mut args = Vec::new();
        loop {
            while chars.next_if(|c| *c == ' ' || *c == '\t').is_some() {}
            if chars.peek().is_none() {
                return args;
            }
            let (mut arg, mut quoted) = (String::new(), false);
            while let Some(&c) = chars.peek() {
                if !quoted && (c == ' ' || c == '\t') {
                    break;
                }
                chars.next();
                match c {
                    '\\' => {
                        let mut n = 1;
                        while chars.next_if_eq(&'\\').is_some() {
                            n += 1;
                        }
                        if chars.peek() == Some(&'"') {
                            arg.extend(repeat_n('\\', n / 2));
                            if n % 2 == 1 {
                                chars.next();
                                arg.push('"');
                            }
                        } else {
                            arg.extend(repeat_n('\\', n));
                        }
                    }
                    '"' if quoted && chars.peek() == Some(&'"') => {
                        chars.next();
                        arg.push('"');
                    }
                    '"' => quoted = !quoted,
                    c => arg.push(c),
                }
            }
            args.push(arg);
        }
    }

    #[test]
    fn a_bare_name_is_found_through_path_and_pathext_in_order_never_in_the_current_directory() {
        let files = [
            "C:\\b\\npx.cmd",
            "C:\\c\\npx.exe",
            "C:\\a\\node.exe",
            "npx.exe",
        ];
        let exists = |p: &str| files.iter().any(|f| f.eq_ignore_ascii_case(p));
        let path = "C:\\a;;\"C:\\b\\\";C:\\c";
        assert_eq!(
            find_program("npx", path, DEFAULT_PATHEXT, &exists).as_deref(),
            Some("C:\\b\\npx.CMD"),
            "the first directory that has one, whatever its extension"
        );
        assert_eq!(
            find_program("node.exe", path, DEFAULT_PATHEXT, &exists).as_deref(),
            Some("C:\\a\\node.exe")
        );
        assert_eq!(find_program("git", path, DEFAULT_PATHEXT, &exists), None);
        assert_eq!(
            find_program("npx", "", DEFAULT_PATHEXT, &exists),
            None,
            "npx.exe in the current directory is never taken"
        );
        assert_eq!(
            find_program("C:\\b\\npx", path, ".EXE;.CMD", &exists).as_deref(),
            Some("C:\\b\\npx.CMD"),
            "a name with a directory part is tried where it says"
        );
        assert!(is_batch("C:\\b\\npx.CMD") && is_batch("x.bat") && !is_batch("x.exe"));
    }

    #[test]
    fn hostile_arguments_reach_a_program_as_they_were() {
        let args = [
            "",
            "a b",
            "tab\there",
            "quote\"inside",
            "ends with backslash\\",
            "\\\\server\\share\\",
            "\\\"",
            "a\\\\\"b",
            "& calc.exe",
            "%PATH%",
        ];
        let wide_args: Vec<Vec<u16>> = args.iter().map(|a| wide(a)).collect();
        let refs: Vec<&[u16]> = wide_args.iter().map(Vec::as_slice).collect();
        let line = program_line(&wide("C:\\Program Files\\x.exe"), &refs).unwrap();
        assert_eq!(read_back(&text(&line)), args);
    }

    proptest! {
        #[test]
        fn every_argument_list_reads_back_whole(args in proptest::collection::vec("[ -~\t\\\\\"é]{0,12}", 0..6)) {
            let wide_args: Vec<Vec<u16>> = args.iter().map(|a| wide(a)).collect();
            let refs: Vec<&[u16]> = wide_args.iter().map(Vec::as_slice).collect();
            let line = program_line(&wide("p.exe"), &refs).unwrap();
            prop_assert_eq!(read_back(&text(&line)), args);
        }
    }

    #[test]
    fn a_batch_file_gets_each_argument_quoted_and_nothing_expanded() {
        let hostile = ["\" & calc.exe", "%PATH%", "a\\", "plain", "", "!x!"];
        let wide_args: Vec<Vec<u16>> = hostile.iter().map(|a| wide(a)).collect();
        let refs: Vec<&[u16]> = wide_args.iter().map(Vec::as_slice).collect();
        let line = text(&batch_line(&wide("C:\\n\\npx.cmd"), &refs).unwrap());
        assert_eq!(
            line,
            "cmd.exe /e:ON /v:OFF /d /c \"\"C:\\n\\npx.cmd\" \
             \"\"\" & calc.exe\" \"%%cd:~,%PATH%%cd:~,%\" \"a\\\\\" plain \"\" \"!x!\"\""
        );
    }

    #[test]
    fn what_cannot_be_passed_to_a_batch_file_is_refused() {
        let script = wide("run.cmd");
        for bad in ["two\nlines", "carriage\rreturn"] {
            let arg = wide(bad);
            assert_eq!(batch_line(&script, &[&arg]), Err(Unsafe::BatchLineBreak));
        }
        let nul = [unit(b'a'), 0];
        assert_eq!(batch_line(&script, &[&nul]), Err(Unsafe::Nul));
        assert_eq!(program_line(&wide("x.exe"), &[&nul]), Err(Unsafe::Nul));
        assert_eq!(batch_line(&wide("dir\\"), &[]), Err(Unsafe::ProgramName));
        assert_eq!(
            program_line(&wide("a\"b.exe"), &[]),
            Err(Unsafe::ProgramName)
        );
        assert!(Unsafe::BatchLineBreak.why().contains("second command"));
    }
}
