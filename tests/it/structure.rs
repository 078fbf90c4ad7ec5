//! The house's rules, checked on the source tree, so that
//! `cargo test` keeps them and nobody has to remember a script:
//! - no file over 500 lines of non-test code (a `#[cfg(test)]` item and a
//!   `tests.rs` do not count);
//! - no struct over 16 fields;
//! - no function over 100 lines, but the byte scanners that are one
//!   state machine each (`guard.rs`, `session/scan.rs`, `session/lenient.rs`);
//! - no issue number in code: the feature's name instead;
//! - no import cycle between top-level modules, nor between the files of
//!   one folder (a child using its `mod.rs`, and the reverse, is the
//!   module's own business);
//! - at most six `pub mod` in `lib.rs`;
//! - nix and libc only under `sys/` (the OS layer's contract);
//! - containment as layers: `BACKEND.job` is read only in `contain/mod.rs`
//!   (and `sys/`), and each mechanism is one file under `contain/` with one
//!   `impl Layer`;
//! - a signal is a `sys::Signal`: `signo: i32` only under `sys/`;
//! - options resolved once: a usage error is made only in `cli/` and
//!   `settings/`, so nothing past `Settings::resolve` can refuse an
//!   option, and "nothing was started" is said only by `error.rs`;
//! - every file opens with a `//!` doc and is named in ARCHITECTURE.md,
//!   and every path ARCHITECTURE.md names exists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 500;
const MAX_FIELDS: usize = 16;
/// The structs the rule is wrong for (ARCHITECTURE.md says why): the
/// session layer's request table, whose fields are its tables and their
/// positions, each read on its own; splitting them would only pass the
/// count.
const WIDE_BY_NATURE: &[&str] = &["session/mod.rs: Session"];
const MAX_PUB_MODS: usize = 6;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under src/, as (path relative to src/, text).
fn files() -> Vec<(String, String)> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("read src/")
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|x| x == "rs") {
                let name = path.strip_prefix(root).unwrap().display().to_string();
                out.push((name, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(&src(), &src(), &mut out);
    out
}

/// The text without `#[cfg(test)]` items (and without the `tests.rs`
/// files, which are all test), line by line.
/// The braces of a line's code: not those in a string or char literal
/// (a test's `"{\"id\":1}"` would end its module early and count the rest
/// as non-test code).
fn braces(line: &str) -> (i64, i64) {
    let (mut opens, mut closes) = (0, 0);
    let mut chars = line.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' if in_string => {
                chars.next();
            }
            '"' => in_string = !in_string,
            '\'' if !in_string => {
                // A char literal ('{', '\'') or a lifetime ('a).
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with("\\") {
                    chars.nth(2);
                } else if rest.chars().nth(1) == Some('\'') {
                    chars.nth(1);
                }
            }
            '/' if !in_string && chars.peek() == Some(&'/') => break,
            '{' if !in_string => opens += 1,
            '}' if !in_string => closes += 1,
            _ => {}
        }
    }
    (opens, closes)
}

#[test]
fn braces_in_literals_do_not_end_a_test_module() {
    let text = "fn a() {}\n#[cfg(test)]\nmod tests {\n    let s = \"}}\";\n    let c = '}';\n    let l: &'static str = \"{\";\n}\nfn b() {}\n";
    assert_eq!(non_test("x.rs", text), vec!["fn a() {}", "fn b() {}"]);
}

fn non_test(name: &str, text: &str) -> Vec<String> {
    if name.ends_with("tests.rs") {
        return Vec::new();
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_start().starts_with("#[cfg(test)]") {
            // Skip the item that follows: to its `;`, or its braces' end.
            let mut depth = 0i64;
            let mut opened = false;
            let mut j = i + 1;
            while j < lines.len() {
                let (opens, closes) = braces(lines[j]);
                depth += opens - closes;
                opened |= opens > 0;
                if (opened && depth <= 0) || (!opened && lines[j].trim_end().ends_with(';')) {
                    break;
                }
                j += 1;
            }
            i = j + 1;
            continue;
        }
        out.push(lines[i].to_string());
        i += 1;
    }
    out
}

#[test]
fn no_file_is_over_500_lines_of_non_test_code() {
    let over: Vec<(String, usize)> = files()
        .iter()
        .map(|(name, text)| (name.clone(), non_test(name, text).len()))
        .filter(|(_, n)| *n > MAX_LINES)
        .collect();
    assert!(
        over.is_empty(),
        "over {MAX_LINES} lines of non-test code: {over:?}"
    );
}

/// The field count of each struct with named fields, by `file: Name`.
fn struct_widths() -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (name, text) in files() {
        let code = non_test(&name, &text).join("\n");
        let mut rest = code.as_str();
        while let Some(at) = find_struct(rest) {
            let after = &rest[at..];
            let ident: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            // A tuple or unit struct ends before any brace.
            let open = after.find('{');
            let stop = after.find([';', '(']);
            let Some(open) = open.filter(|o| stop.is_none_or(|s| *o < s)) else {
                rest = &after[ident.len()..];
                continue;
            };
            let body = &after[open + 1..];
            let (mut depth, mut fields, mut end) = (0i64, 0, body.len());
            for (i, line) in body.lines().scan(0, |at, l| {
                let start = *at;
                *at += l.len() + 1;
                Some((start, l))
            }) {
                let trimmed = line.trim();
                if depth == 0 && trimmed.starts_with('}') {
                    end = i;
                    break;
                }
                if depth == 0 && is_field(trimmed) {
                    fields += 1;
                }
                for c in line.chars() {
                    match c {
                        '{' | '(' | '[' => depth += 1,
                        '}' | ')' | ']' => depth -= 1,
                        _ => {}
                    }
                }
                if depth < 0 {
                    end = i;
                    break;
                }
            }
            out.push((format!("{name}: {ident}"), fields));
            rest = &body[end.min(body.len())..];
        }
    }
    out
}

/// Where the name after the next `struct ` keyword starts.
fn find_struct(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find("struct ") {
        let start = from + at;
        let before = text[..start].chars().last();
        if before.is_none_or(|c| c.is_whitespace()) {
            return Some(start + "struct ".len());
        }
        from = start + 1;
    }
    None
}

fn is_field(line: &str) -> bool {
    if line.starts_with("//") || line.starts_with('#') {
        return false;
    }
    let line = line
        .strip_prefix("pub(crate) ")
        .or_else(|| line.strip_prefix("pub(super) "))
        .or_else(|| line.strip_prefix("pub "))
        .unwrap_or(line);
    let ident: String = line
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    !ident.is_empty() && line[ident.len()..].trim_start().starts_with(':')
}

#[test]
fn no_struct_has_over_16_fields() {
    let widths = struct_widths();
    assert!(
        widths.iter().any(|(_, n)| *n > 3),
        "the struct reader found no structs: {widths:?}"
    );
    let wide: Vec<&(String, usize)> = widths
        .iter()
        .filter(|(name, n)| *n > MAX_FIELDS && !WIDE_BY_NATURE.contains(&name.as_str()))
        .collect();
    assert!(
        wide.is_empty(),
        "structs over {MAX_FIELDS} fields: {wide:?}"
    );
}

/// A file's module path: `session/mod.rs` is `session`, `session/kind.rs`
/// is `session::kind`, `lib.rs` is the crate root.
fn module_of(name: &str) -> Vec<String> {
    let name = name.trim_end_matches(".rs");
    let mut parts: Vec<String> = name.split('/').map(str::to_string).collect();
    if parts
        .last()
        .is_some_and(|p| p == "mod" || p == "lib" || p == "main")
    {
        parts.pop();
    }
    parts
}

/// The module paths a file names: `crate::a::b`, `super::x`, and
/// `self::x` (through `use`, or inline), resolved against the modules
/// that exist.
fn references(name: &str, text: &str, modules: &BTreeSet<Vec<String>>) -> BTreeSet<Vec<String>> {
    let here = module_of(name);
    let parent = here[..here.len().saturating_sub(1)].to_vec();
    let mut found = BTreeSet::new();
    let code = non_test(name, text).join("\n");
    for (prefix, base) in [
        ("crate::", Vec::new()),
        ("super::", parent),
        ("self::", here.clone()),
    ] {
        for (at, _) in code.match_indices(prefix) {
            let before = code[..at].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: Vec<String> = code[at + prefix.len()..]
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .next()
                .unwrap_or_default()
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            // The deepest existing module along the path.
            let mut target = base.clone();
            let mut deepest = base.clone();
            for part in path {
                target.push(part);
                if modules.contains(&target) {
                    deepest = target.clone();
                } else {
                    break;
                }
            }
            if deepest != here {
                found.insert(deepest);
            }
        }
    }
    found
}

/// Cycles in a graph, as the nodes of each strongly connected component
/// with more than one node.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Tarjan's algorithm, recursive: the graphs are small.
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[w].min(s.low[v]);
                s.low.insert(v, low);
            } else if s.on.contains(w) {
                let low = s.index[w].min(s.low[v]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    state.out
}

#[test]
fn no_import_cycles_between_modules_or_between_a_folders_files() {
    let files = files();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(n, _)| module_of(n)).collect();
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut siblings: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut edges = 0;
    for (name, text) in &files {
        let here = module_of(name);
        for target in references(name, text, &modules) {
            edges += 1;
            // Between top-level modules.
            if let (Some(a), Some(b)) = (here.first(), target.first())
                && a != b
            {
                top.entry(a.clone()).or_default().insert(b.clone());
            }
            // Between two files of one folder (not its mod.rs).
            if here.len() >= 2
                && target.len() == here.len()
                && here[..here.len() - 1] == target[..target.len() - 1]
            {
                siblings
                    .entry(here.join("::"))
                    .or_default()
                    .insert(target.join("::"));
            }
        }
    }
    assert!(edges > 50, "the reference reader found only {edges} edges");
    let mut found = cycles(&top);
    found.extend(cycles(&siblings));
    assert!(found.is_empty(), "import cycles: {found:?}");
}

#[test]
fn lib_rs_has_at_most_six_pub_mods() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let public: Vec<&str> = lib.lines().filter(|l| l.starts_with("pub mod ")).collect();
    assert!(
        public.len() <= MAX_PUB_MODS,
        "{} pub mod in lib.rs: {public:?}",
        public.len()
    );
}

#[test]
fn nix_and_libc_live_only_under_sys() {
    let os: Vec<String> = files()
        .into_iter()
        .filter(|(name, text)| {
            let code = non_test(name, text).join("\n");
            ["nix::", "libc::"].iter().any(|k| {
                code.match_indices(k).any(|(at, _)| {
                    !code[..at]
                        .chars()
                        .last()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
                })
            })
        })
        .map(|(name, _)| name)
        .collect();
    assert!(!os.is_empty(), "the reader found no OS layer at all");
    let outside: Vec<&String> = os.iter().filter(|name| !name.starts_with("sys/")).collect();
    assert!(outside.is_empty(), "nix or libc outside sys/: {outside:?}");
}

/// The files whose non-test code holds `needle`.
fn holding(needle: &str) -> Vec<String> {
    files()
        .into_iter()
        .filter(|(name, text)| non_test(name, text).join("\n").contains(needle))
        .map(|(name, _)| name)
        .collect()
}

#[test]
fn containment_is_chosen_in_one_place_and_each_layer_is_a_file() {
    let job: Vec<String> = holding("BACKEND.job")
        .into_iter()
        .filter(|name| name != "contain/mod.rs" && !name.starts_with("sys/"))
        .collect();
    assert!(
        job.is_empty(),
        "BACKEND.job read outside contain/mod.rs: {job:?}"
    );
    let mut layers = 0;
    for (name, text) in files() {
        let impls = non_test(&name, &text)
            .iter()
            .filter(|line| line.starts_with("impl Layer for "))
            .count();
        layers += impls;
        assert!(
            impls == 0 || (name.starts_with("contain/") && impls == 1),
            "{name}: {impls} impl Layer (one file under contain/ each)"
        );
    }
    assert!(layers >= 2, "the reader found {layers} layers");
}

#[test]
fn a_signal_is_a_signal_outside_sys() {
    let numbered: Vec<String> = holding("signo: i32")
        .into_iter()
        .filter(|name| !name.starts_with("sys/"))
        .collect();
    assert!(
        numbered.is_empty(),
        "a signal as a number outside sys/: {numbered:?}"
    );
}

#[test]
fn options_are_refused_only_where_they_are_resolved() {
    let usage = holding("Error::Usage(");
    assert!(!usage.is_empty(), "the reader found no usage error at all");
    let late: Vec<&String> = usage
        .iter()
        .filter(|name| !name.starts_with("cli/") && !name.starts_with("settings/"))
        .filter(|name| name.as_str() != "error.rs")
        .collect();
    assert!(
        late.is_empty(),
        "a usage error after Settings::resolve: {late:?}"
    );
    let said: Vec<String> = holding("; nothing was started")
        .into_iter()
        .filter(|name| name != "error.rs")
        .collect();
    assert!(
        said.is_empty(),
        "\"nothing was started\" spelled outside error.rs: {said:?}"
    );
}

#[test]
fn every_file_opens_with_a_doc_and_is_named_in_architecture_md() {
    let architecture =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
            .unwrap();
    let mut undocumented = Vec::new();
    let mut unnamed = Vec::new();
    for (name, text) in files() {
        if !text.trim_start().starts_with("//!") {
            undocumented.push(name.clone());
        }
        // A file is named by its path (`session/kind.rs`), or, inside its
        // folder's row, by its file name (`kind.rs`).
        let file = name.rsplit('/').next().unwrap();
        let stem = file.trim_end_matches(".rs");
        let folder_row = name.split('/').next().map(|f| format!("| `{f}/`"));
        let named = architecture.contains(&format!("`{name}`"))
            || architecture.contains(&format!("`src/{name}`"))
            || folder_row.is_some_and(|row| {
                architecture.lines().any(|l| {
                    l.starts_with(&row)
                        && (l.contains(&format!("`{file}`")) || l.contains(&format!("`{stem}`")))
                })
            })
            || (name.matches('/').count() == 0
                && architecture.contains(&format!("`{}`", name.trim_end_matches(".rs"))));
        if !named && !name.ends_with("mod.rs") && !name.ends_with("tests.rs") {
            unnamed.push(name);
        }
    }
    assert!(undocumented.is_empty(), "no //! doc: {undocumented:?}");
    assert!(unnamed.is_empty(), "not in ARCHITECTURE.md: {unnamed:?}");
}

/// The most lines a function's body may take, past which it reads as more
/// than one thing.
const MAX_FUNCTION_LINES: usize = 100;

/// The byte scanners that are one state machine each, and may be longer.
const ONE_STATE_MACHINE: &[&str] = &["guard.rs", "session/scan.rs", "session/lenient.rs"];

/// Each function of the non-test code, as (`file: name`, lines from its
/// `fn` line to its closing brace).
fn function_lengths() -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (name, text) in files() {
        let lines = non_test(&name, &text);
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i].trim_start();
            let is_fn = [
                "fn ",
                "pub fn ",
                "pub(crate) fn ",
                "pub(super) fn ",
                "const fn ",
                "unsafe fn ",
                "pub unsafe fn ",
                "async fn ",
            ]
            .iter()
            .any(|p| {
                line.starts_with(p)
                    || line
                        .strip_prefix("pub(in crate::session) ")
                        .is_some_and(|l| l.starts_with("fn "))
            });
            if !is_fn {
                i += 1;
                continue;
            }
            let fn_name: String = line[line.find("fn ").unwrap() + 3..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            // From the fn line, to where its braces close (a declaration
            // ending in `;` has no body).
            let (mut depth, mut opened, mut j) = (0i64, false, i);
            while j < lines.len() {
                let (opens, closes) = braces(&lines[j]);
                depth += opens - closes;
                opened |= opens > 0;
                if (opened && depth <= 0) || (!opened && lines[j].trim_end().ends_with(';')) {
                    break;
                }
                j += 1;
            }
            out.push((format!("{name}: {fn_name}"), j + 1 - i));
            i += 1;
        }
    }
    out
}

#[test]
fn no_function_is_over_100_lines_but_the_byte_scanners() {
    let lengths = function_lengths();
    assert!(
        lengths.iter().any(|(_, n)| *n > 20),
        "the function reader found no functions: {lengths:?}"
    );
    let long: Vec<&(String, usize)> = lengths
        .iter()
        .filter(|(name, n)| {
            *n > MAX_FUNCTION_LINES
                && !ONE_STATE_MACHINE
                    .iter()
                    .any(|f| name.starts_with(&format!("{f}:")))
        })
        .collect();
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines: {long:?}"
    );
}

/// Code names a feature, not a tracker's number: there is no tracker to
/// follow such a number to from a clone.
#[test]
fn no_source_file_names_an_issue_number() {
    let roots = ["src", "tests", "bench", "fuzz/fuzz_targets"];
    let mut found = Vec::new();
    for root in roots {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(root);
        let mut stack = vec![dir];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for path in entries.flatten().map(|e| e.path()) {
                if path.is_dir() {
                    if !path.ends_with("node_modules") && !path.ends_with(".venv") {
                        stack.push(path);
                    }
                } else if path.extension().is_some_and(|x| x == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    for (n, line) in text.lines().enumerate() {
                        let lower = line.to_ascii_lowercase();
                        // Spelled in two halves, so this line does not name one.
                        let word = ["iss", "ue"].concat();
                        let numbered = lower.match_indices(&word).any(|(at, _)| {
                            let rest = lower[at + word.len()..].trim_start_matches(['s', ' ', '#']);
                            rest.starts_with(|c: char| c.is_ascii_digit())
                        }) || lower
                            .split("(#")
                            .skip(1)
                            .any(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
                        if numbered {
                            found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                        }
                    }
                }
            }
        }
    }
    assert!(found.is_empty(), "issue numbers in code: {found:#?}");
}

/// Every file and folder of the repository, as paths from its root
/// (folders with a trailing `/`), but what builds and tools leave.
fn repository_paths() -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy();
            if ["target", ".git", "node_modules", ".venv", "__pycache__"].contains(&&*name) {
                continue;
            }
            let relative = path.strip_prefix(root).unwrap().display().to_string();
            if path.is_dir() {
                out.push(format!("{relative}/"));
                walk(&path, root, out);
            } else {
                out.push(relative);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out
}

/// The paths ARCHITECTURE.md names in backquotes: a file (`run/call.rs`,
/// `.ci/run`) or a folder (`contain/`). Each is named from the root, or
/// beside the folder it is in (`unix/` under `sys/`, `group.rs` under
/// `contain/`), so it must be the end of some path of the repository.
#[test]
fn every_path_architecture_md_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let paths = repository_paths();
    let looks_like_a_path = |word: &str| {
        let file = [".rs", ".md", ".json", ".toml", ".py", ".go", ".css", ".js"]
            .iter()
            .any(|ext| word.ends_with(ext));
        let folder = word.ends_with('/') && word.len() > 1;
        (file || folder || word.starts_with(".ci/"))
            && word
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c))
    };
    let mut checked = 0;
    let mut missing = Vec::new();
    for (at, quoted) in architecture.split('`').enumerate() {
        if at % 2 == 0 || !looks_like_a_path(quoted) {
            continue;
        }
        checked += 1;
        let exists = paths
            .iter()
            .any(|path| path == quoted || path.ends_with(&format!("/{quoted}")));
        if !exists {
            missing.push(quoted.to_string());
        }
    }
    assert!(checked > 50, "the reader found only {checked} paths");
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names what does not exist: {missing:?}"
    );
}

/// The first code span of each row of the ARCHITECTURE.md table whose
/// header starts with `header`.
fn architecture_table(header: &str) -> BTreeSet<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let table = &architecture[architecture.find(header).expect(header)..];
    table
        .lines()
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .filter_map(|line| line.split('`').nth(1))
        .map(str::to_string)
        .collect()
}

/// The `Backend` table in ARCHITECTURE.md is the struct's: a row for
/// every field `sys/mod.rs` declares (but `os`, its name), and no other.
#[test]
fn the_backend_table_is_the_backend_struct() {
    let sys = std::fs::read_to_string(src().join("sys/mod.rs")).unwrap();
    let body = &sys[sys.find("pub struct Backend {").expect("struct Backend")..];
    let body = &body[..body.find("\n}").unwrap()];
    let fields: BTreeSet<String> = body
        .lines()
        .skip(1)
        .filter_map(|line| line.trim().strip_prefix("pub "))
        .filter_map(|rest| rest.split_once(':').map(|(field, _)| field.to_string()))
        .filter(|field| field != "os")
        .collect();
    let rows = architecture_table("| `Backend` field |");
    assert!(fields.len() >= 10, "the reader found {fields:?}");
    assert_eq!(
        rows, fields,
        "ARCHITECTURE.md's Backend table against sys::Backend"
    );
}

/// The names of the parameters of each `fn` in `code`, with its name
/// (`self` left out): a signature may span lines.
fn parameters(code: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("fn ") {
        let before = rest[..at].chars().last();
        rest = &rest[at + 3..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let Some(open) = rest.find('(') else { break };
        if rest[..open].contains(['{', ';']) {
            continue;
        }
        let mut depth = 0;
        let mut end = open;
        for (i, c) in rest[open..].char_indices() {
            match c {
                '(' | '<' | '[' => depth += 1,
                ')' | '>' | ']' if depth > 0 => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                end = open + i;
                break;
            }
        }
        let mut names = Vec::new();
        let (mut depth, mut start) = (0, open + 1);
        let list = &rest[..end];
        for (i, c) in list.char_indices().skip(open + 1) {
            match c {
                '(' | '<' | '[' => depth += 1,
                ')' | '>' | ']' => depth -= 1,
                ',' if depth == 0 => {
                    names.push(list[start..i].to_string());
                    start = i + 1;
                }
                _ => {}
            }
        }
        names.push(list[start..].to_string());
        let names: Vec<String> = names
            .iter()
            .filter_map(|p| p.split(':').next())
            .map(|p| p.trim().trim_start_matches("mut ").to_string())
            .filter(|p| !p.is_empty() && !p.ends_with("self"))
            .collect();
        out.push((name, names));
    }
    out
}

#[test]
fn the_parameters_reader_reads_a_signature() {
    let code = "pub fn a(_x: i32, _y: &[u8]) {}\nfn b(&self, y: Vec<(u8, u8)>) {}\nfn c() {}\nfn d(\n    _f: fn(i32) -> i32,\n) {}";
    assert_eq!(
        parameters(code),
        vec![
            ("a".into(), vec!["_x".to_string(), "_y".into()]),
            ("b".into(), vec!["y".into()]),
            ("c".into(), vec![]),
            ("d".into(), vec!["_f".into()]),
        ]
    );
}

/// What a system lacks is a capability it has not, never a function that
/// ignores what it is asked.
#[test]
fn no_backend_function_takes_only_unused_parameters() {
    let mut stubs = Vec::new();
    for (name, text) in files() {
        if !(name.starts_with("sys/unix/") || name.starts_with("sys/windows/")) {
            continue;
        }
        for (function, names) in parameters(&non_test(&name, &text).join("\n")) {
            if !names.is_empty() && names.iter().all(|n| n.starts_with('_')) {
                stubs.push(format!("{name}: {function}"));
            }
        }
    }
    assert!(stubs.is_empty(), "{} stubs: {stubs:#?}", stubs.len());
}

/// Each capability a backend has or has not is a row of ARCHITECTURE.md's
/// capability table, and each row one a backend sets.
#[test]
fn the_capability_table_is_the_backends_constants() {
    let mut constants = BTreeSet::new();
    for (name, text) in files() {
        if !(name.starts_with("sys/unix/") || name.starts_with("sys/windows/")) {
            continue;
        }
        for line in non_test(&name, &text) {
            if let Some(rest) = line.strip_prefix("pub const ") {
                if let Some((constant, kind)) = rest.split_once(':') {
                    if kind.trim_start().starts_with("Option<") {
                        constants.insert(constant.to_string());
                    }
                }
            }
        }
    }
    let rows = architecture_table("| capability |");
    assert!(constants.len() >= 8, "the reader found {constants:?}");
    assert_eq!(
        rows, constants,
        "ARCHITECTURE.md's capability table against the backends"
    );
}
