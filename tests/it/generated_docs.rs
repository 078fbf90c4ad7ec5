//! The test that fails when the committed `man/mcp-bound.1`,
//! `completions/*` and `schema/record.schema.json` drift from what the
//! binary generates (`mcp-bound --generate ...`, from the clap
//! definition), and the checks on the texts themselves.
//!
//! Regenerate with: `MCP_BOUND_REGENERATE=1 cargo test --test it generated_docs`

use std::path::PathBuf;
use std::process::Command;

use clap_complete::Shell;
use mcp_bound::docs::{completion, man_page};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn generated() -> Vec<(PathBuf, String)> {
    vec![
        (root().join("man/mcp-bound.1"), man_page()),
        (
            root().join("completions/mcp-bound.bash"),
            completion(Shell::Bash),
        ),
        (
            root().join("completions/_mcp-bound"),
            completion(Shell::Zsh),
        ),
        (
            root().join("completions/mcp-bound.fish"),
            completion(Shell::Fish),
        ),
    ]
}

#[test]
fn man_page_and_completions_match_the_clap_definition() {
    let regenerate = std::env::var_os("MCP_BOUND_REGENERATE").is_some();
    let mut drifted = Vec::new();
    for (path, content) in generated() {
        if regenerate {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &content).unwrap();
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != content {
            drifted.push(path.display().to_string());
        }
    }
    assert!(
        drifted.is_empty(),
        "generated files drifted from src/cli.rs: {drifted:?}\n\
         regenerate with: MCP_BOUND_REGENERATE=1 cargo test --test it generated_docs"
    );
}

/// The binary hands out the same bytes as the checked-in files.
#[test]
fn the_binary_generates_what_is_checked_in() {
    for (what, path) in [
        ("man", "man/mcp-bound.1"),
        ("complete-bash", "completions/mcp-bound.bash"),
        ("complete-zsh", "completions/_mcp-bound"),
        ("complete-fish", "completions/mcp-bound.fish"),
        ("schema-record", "schema/record.schema.json"),
        ("schema-journal", "schema/journal.schema.json"),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_mcp-bound"))
            .args(["--generate", what])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "--generate {what}");
        assert!(output.stderr.is_empty(), "--generate {what} is quiet");
        let committed = std::fs::read(root().join(path)).unwrap();
        assert!(
            output.stdout == committed,
            "mcp-bound --generate {what} differs from {path}"
        );
    }
    // Nothing is run, and it goes with no other argument.
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-bound"))
        .args(["--generate", "man", "--", "touch", "/nonexistent/never"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(125));
}

#[test]
fn man_page_has_exit_status_and_record_sections() {
    let page = man_page();
    for section in ["EXIT STATUS", "RECORD", "OPTIONS", "MCP_BOUND_TIMEOUT"] {
        assert!(page.contains(section), "man page lacks {section}");
    }
}

/// Every value of every closed vocabulary in the published schema: the
/// drift test cannot catch a word missing from both sides.
fn schema_enums() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(root().join("schema/record.schema.json")).unwrap();
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut found = Vec::new();
    fn walk(path: &str, value: &serde_json::Value, found: &mut Vec<(String, Vec<String>)>) {
        match value {
            serde_json::Value::Object(map) => {
                if let Some(serde_json::Value::Array(values)) = map.get("enum") {
                    let words = values
                        .iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect();
                    found.push((path.to_string(), words));
                }
                for (key, child) in map {
                    walk(&format!("{path}/{key}"), child, found);
                }
            }
            serde_json::Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    walk(&format!("{path}/{i}"), child, found);
                }
            }
            _ => {}
        }
    }
    walk("", &schema, &mut found);
    found
}

#[test]
fn man_page_names_every_state_reason_and_option() {
    // roff escapes hyphens; read the page as a person would.
    let page = man_page()
        .replace("\\-", "-")
        .replace("\\fB", "")
        .replace("\\fR", "");
    let mut missing = Vec::new();
    for (path, words) in schema_enums() {
        for word in words {
            if !page.contains(&word) {
                missing.push(format!("{word} ({path})"));
            }
        }
    }
    for option in ["--kill-after", "verify", "--json", "--key", "--anchor"] {
        if !page.contains(option) {
            missing.push(option.to_string());
        }
    }
    assert!(missing.is_empty(), "the man page lacks: {missing:?}");
}

/// The docs' host snippets are copied into real configs: each JSON block
/// must parse (`tests/it/usage.rs` checks each against the schemas and the
/// command line), and the VS Code one must have the shape VS Code requires: top-level "servers", and
/// "type": "stdio" on each server.
#[test]
fn readme_host_configs_are_valid_for_their_hosts() {
    let mut blocks = Vec::new();
    for (page, text) in crate::util::prose_docs() {
        let mut rest = text.as_str();
        while let Some(start) = rest.find("```json\n") {
            let body = &rest[start + 8..];
            let end = body.find("```").unwrap();
            // The paragraph before the block names the host.
            let before = rest[..start].trim_end();
            let context = before[before.rfind("\n\n").map_or(0, |i| i + 2)..].to_string();
            blocks.push((format!("{page}: {context}"), body[..end].to_string()));
            rest = &body[end..];
        }
    }
    let mut vscode = 0;
    for (context, body) in &blocks {
        let value: serde_json::Value = serde_json::from_str(body)
            .unwrap_or_else(|e| panic!("JSON after {context:?} does not parse: {e}"));
        if context.contains("VS Code") {
            vscode += 1;
            let servers = value["servers"]
                .as_object()
                .expect("VS Code: top-level servers");
            for (name, server) in servers {
                assert_eq!(
                    server["type"], "stdio",
                    "VS Code server {name} needs type stdio"
                );
                assert_eq!(server["command"], "mcp-bound");
            }
        }
    }
    let contexts: Vec<&String> = blocks.iter().map(|(context, _)| context).collect();
    assert_eq!(vscode, 1, "one VS Code snippet, among: {contexts:?}");
}

/// What bash offers for `words`, the last being the one completed, with
/// the generated script (bash-completion not loaded).
fn bash_offers(words: &[&str]) -> Vec<String> {
    let script = completion(Shell::Bash);
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "{script}\nCOMP_WORDS=({}); COMP_CWORD={}; _mcp__bound_or_helper mcp-bound '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        quoted.join(" "),
        words.len() - 1,
        words[words.len() - 1],
        words[words.len() - 2],
    );
    let output = Command::new("bash")
        .arg("-c")
        .arg(program)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Before `--` bash completes our options; after it, the helper's command
/// line: a command name, never one of our options.
#[test]
fn bash_completes_the_helper_after_the_double_dash() {
    assert!(bash_offers(&["mcp-bound", "--ti"]).contains(&"--timeout".to_string()));
    let helper = bash_offers(&["mcp-bound", "--timeout", "1s", "--", "ech"]);
    assert!(helper.contains(&"echo".to_string()), "{helper:?}");
    let after = bash_offers(&["mcp-bound", "--", "ls", "--ti"]);
    assert!(!after.contains(&"--timeout".to_string()), "{after:?}");
}

/// A subcommand's options complete after its name, as the top level's do
/// (the generator's case label once spelled the hyphenated name another
/// way than the one it set, so `verify --<TAB>` offered nothing).
#[test]
fn bash_completes_a_subcommand_s_options() {
    let offered = bash_offers(&["mcp-bound", "verify", "--an"]);
    assert_eq!(offered, ["--anchor"], "verify's own option");
    let all = bash_offers(&["mcp-bound", "verify", "--"]);
    for option in ["--anchor", "--json", "--key", "--help"] {
        assert!(all.contains(&option.to_string()), "{option} in {all:?}");
    }
    assert!(
        !all.contains(&"--timeout".to_string()),
        "not the top level's: {all:?}"
    );
}

/// A heading's anchor as GitHub makes it: lower case, spaces to `-`,
/// punctuation but `-` and `_` dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a markdown page's headings (not inside code blocks).
fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

/// Every link between the README, the guide's pages and the repository's
/// files lands: the file exists, and so does the heading it names.
#[test]
fn every_link_in_the_docs_lands() {
    let pages = crate::util::prose_docs();
    let mut checked = 0;
    let mut broken = Vec::new();
    for (page, text) in &pages {
        let here = root().join(page);
        let dir = here.parent().unwrap();
        for link in text.split("](").skip(1) {
            let Some(target) = link.split(')').next() else {
                continue;
            };
            if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
                continue;
            }
            checked += 1;
            let (file, heading) = target.split_once('#').unwrap_or((target, ""));
            let file = if file.is_empty() {
                here.clone()
            } else {
                dir.join(file)
            };
            if !file.exists() {
                broken.push(format!("{page}: {target} (no such file)"));
                continue;
            }
            if !heading.is_empty() {
                let text = std::fs::read_to_string(&file).unwrap();
                if !anchors(&text).iter().any(|a| a == heading) {
                    broken.push(format!("{page}: {target} (no such heading)"));
                }
            }
        }
    }
    assert!(checked > 30, "the reader found only {checked} links");
    assert!(broken.is_empty(), "links that do not land: {broken:#?}");
}
