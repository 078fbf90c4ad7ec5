//! Redaction of secrets in everything mcp-bound writes out of what it
//! captured: the stderr excerpt (record, echo, journal), diverted stdout,
//! argv, and live stderr. Pure.
//!
//! A safety net, not a guarantee: a helper must not print credentials in
//! the first place. Masking after capture cannot undo a secret that already
//! reached a terminal, and a pattern can only mask what it recognises.
//!
//! The capture keeps raw bytes and redaction runs when text is built, so a
//! secret split across two reads is whole again when it is masked. Where a
//! truncation cut a token in two, the fragment at the cut is masked too,
//! because no pattern can recognise half a token.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::Regex;

/// What a masked secret becomes.
pub(crate) const MASK: &str = "[REDACTED]";
/// A token-like fragment at a truncation cut becomes this.
pub(crate) const CUT_MASK: &str = "[cut]";
/// Shorter fragments at a cut are left alone: too short to be a secret.
const CUT_FRAGMENT_MIN: usize = 8;
/// At most this much of a token at a cut is masked. Half a secret sits
/// right at the cut; a long run (a 10 MB line, a base64 blob, minified
/// JSON) must not vanish whole behind one `[cut]`.
const CUT_FRAGMENT_MAX: usize = 64;

/// Built-in patterns, each with the replacement for its match and the
/// lowercase words without which it cannot match. Capture groups keep the
/// harmless part (a header name, a key name) readable.
const BUILTIN: &[(&str, &str, &[&str])] = &[
    // PEM private keys, also when the END line was cut off.
    (
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
        "[REDACTED PRIVATE KEY]",
        &["private key"],
    ),
    // Authorization and Proxy-Authorization headers: keep name and scheme.
    (
        r"(?i)\b((?:proxy-)?authorization\s*[:=]\s*)(?:(basic|bearer|digest|token|negotiate)\s+)?[^\s'\x22,;]+",
        "${1}${2} [REDACTED]",
        &["authorization"],
    ),
    (
        r"(?i)\b(bearer\s+)[A-Za-z0-9\-._~+/]{8,}=*",
        "${1}[REDACTED]",
        &["bearer"],
    ),
    // AWS access key ids.
    (
        r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b",
        MASK,
        &["akia", "asia", "agpa", "aida", "aroa", "anpa"],
    ),
    // GitHub tokens.
    (
        r"\bgh[opsur]_[A-Za-z0-9]{36,}\b",
        MASK,
        &["ghp_", "gho_", "ghs_", "ghu_", "ghr_"],
    ),
    (r"\bgithub_pat_[A-Za-z0-9_]{22,}\b", MASK, &["github_pat_"]),
    // GitLab personal access tokens.
    (r"\bglpat-[A-Za-z0-9_\-]{20,}", MASK, &["glpat-"]),
    // Slack tokens.
    (r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", MASK, &["xox"]),
    // sk- style API keys (OpenAI, Anthropic, Stripe, ...).
    (r"\bsk-[A-Za-z0-9_\-]{20,}", MASK, &["sk-"]),
    // password=, token=, secret= pairs (also in JSON and URLs).
    (
        r#"(?i)\b((?:password|passwd|pwd|token|secret|api[_-]?key|access[_-]?key|client[_-]?secret)["']?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s&'",;]+)"#,
        "${1}[REDACTED]",
        &["pass", "pwd", "token", "secret", "key"],
    ),
];

/// The index in [`BUILTIN`] of the `password=`-style pairs, whose value
/// is told from prose ([`is_prose`]).
const PAIRS: usize = BUILTIN.len() - 1;

/// Words that make a sentence of what follows a label: `secret: the
/// config key is missing`, `passwd: cannot open /etc/shadow`.
const FUNCTION_WORDS: &[&str] = &[
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "not", "no", "cannot", "can't",
    "could", "does", "doesn't", "did", "didn't", "has", "have", "had", "must", "should", "will",
    "would", "may", "for", "of", "to", "in", "on", "at", "from", "with", "by", "and", "or", "if",
    "unable", "failed", "missing", "invalid", "expired", "required", "denied", "unknown", "empty",
    "such", "file", "found",
];

/// Whether the unquoted `value` after a label, with `rest` after it, is
/// the start of a sentence rather than a secret: the value is a plain
/// word, another plain word follows it on the line, and one of the two is
/// a function word. A value alone to the end of the line or a separator
/// (`password: hunter2`), or with a digit or a symbol in it, is a secret.
fn is_prose(rest: &str, value: &str) -> bool {
    let plain = |word: &str| {
        !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphabetic() || b == b'\'')
    };
    let Some(after) = rest.strip_prefix([' ', '\t']) else {
        return false;
    };
    let next = after
        .split([' ', '\t', '\n'])
        .next()
        .unwrap_or_default()
        .trim_end_matches([',', '.', ':', ';', '!', '?', ')']);
    let function = |word: &str| FUNCTION_WORDS.contains(&word.to_ascii_lowercase().as_str());
    plain(value) && plain(next) && (function(value) || function(next))
}

/// Whether the quote that begins `value` closes the quoted text its
/// `label` sits in, rather than opening a value: `printf "password: "`
/// prompts for one. The label then follows that same quote (`before`
/// ends with it) and is not closed by it (`"password": "x"` is a JSON
/// key, and its value is one).
fn closes_its_label(before: &str, label: &str, value: &str) -> bool {
    let Some(quote) = value.chars().next().filter(|c| matches!(c, '"' | '\'')) else {
        return false;
    };
    before.ends_with(quote) && !label.contains(quote)
}

#[derive(Debug, Clone)]
pub struct Redactor {
    extra: Vec<String>,
    /// Compiled on first need: most text holds no trigger word, and
    /// compiling every pattern costs more than a whole short run.
    compiled: OnceLock<Vec<(Regex, String)>>,
    /// Whether a block may hold anything to mask: every built-in trigger
    /// (any case), a key block's start, and the extra patterns themselves.
    prefilter: OnceLock<Vec<regex::bytes::Regex>>,
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor::new(&[]).expect("built-in patterns compile")
    }
}

impl Redactor {
    /// The built-in patterns plus `extra` ones (from --redact), whose whole
    /// match is masked. Extra patterns are checked here, built-ins by tests.
    pub fn new(extra: &[String]) -> Result<Redactor, String> {
        for pattern in extra {
            Regex::new(pattern).map_err(|e| format!("'{pattern}': {e}"))?;
        }
        Ok(Redactor {
            extra: extra.to_vec(),
            compiled: OnceLock::new(),
            prefilter: OnceLock::new(),
        })
    }

    /// True unless `block` certainly holds nothing to mask: one scan with a
    /// literal search for all the built-in triggers, then the extra
    /// patterns, instead of the per-line work of [`Redactor::redact`].
    pub fn might_mask(&self, block: &[u8]) -> bool {
        let filters = self.prefilter.get_or_init(|| {
            let triggers: Vec<String> = BUILTIN
                .iter()
                .flat_map(|(_, _, triggers)| triggers.iter())
                .chain(["-----begin "].iter())
                .map(|t| regex::escape(t))
                .collect();
            // Lowercase literals, searched in a lowercased copy: a plain
            // multi-literal search (SIMD), where a case-insensitive one
            // would walk every byte through an automaton.
            let builtin = triggers.join("|");
            std::iter::once(builtin.as_str())
                .chain(self.extra.iter().map(String::as_str))
                .map(|p| regex::bytes::Regex::new(p).expect("checked patterns compile"))
                .collect()
        });
        let lower = block.to_ascii_lowercase();
        filters[0].is_match(&lower) || filters[1..].iter().any(|filter| filter.is_match(block))
    }

    fn compiled(&self) -> &[(Regex, String)] {
        self.compiled.get_or_init(|| {
            BUILTIN
                .iter()
                .map(|(pattern, replacement, _)| (*pattern, replacement.to_string()))
                .chain(self.extra.iter().map(|p| (p.as_str(), MASK.to_string())))
                .map(|(pattern, replacement)| {
                    (
                        Regex::new(pattern).expect("checked patterns compile"),
                        replacement,
                    )
                })
                .collect()
        })
    }

    /// How many patterns came from --redact (recorded as a count only: a
    /// pattern may itself contain a secret).
    pub fn extra_patterns(&self) -> usize {
        self.extra.len()
    }

    /// Mask every secret in `text`.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let lower = text.to_ascii_lowercase();
        let triggered = |triggers: &[&str]| {
            triggers
                .iter()
                .any(|t| memchr::memmem::find(lower.as_bytes(), t.as_bytes()).is_some())
        };
        let needed: Vec<bool> = BUILTIN
            .iter()
            .map(|(_, _, triggers)| triggered(triggers))
            .chain(self.extra.iter().map(|_| true))
            .collect();
        if !needed.contains(&true) {
            return Cow::Borrowed(text);
        }
        let mut out = Cow::Borrowed(text);
        for (index, ((regex, replacement), needed)) in
            self.compiled().iter().zip(needed).enumerate()
        {
            if !needed {
                continue;
            }
            let changed = if index == PAIRS {
                let haystack = out.as_ref();
                match regex.replace_all(haystack, |caps: &regex::Captures| {
                    let whole = caps.get(0).expect("a match");
                    let before = &haystack[..whole.start()];
                    if is_prose(&haystack[whole.end()..], &caps[2])
                        || closes_its_label(before, &caps[1], &caps[2])
                    {
                        caps[0].to_string()
                    } else {
                        format!("{}{MASK}", &caps[1])
                    }
                }) {
                    Cow::Owned(changed) => Some(changed),
                    Cow::Borrowed(_) => None,
                }
            } else {
                match regex.replace_all(&out, replacement.as_str()) {
                    Cow::Owned(changed) => Some(changed),
                    Cow::Borrowed(_) => None,
                }
            };
            if let Some(changed) = changed {
                out = Cow::Owned(changed);
            }
        }
        out
    }

    /// Mask a piece of text cut out of a longer stream: `cut_before` and
    /// `cut_after` say whether bytes were dropped right before or after
    /// it. Half a secret matches no pattern, and a cut inside a label
    /// (`…orization: Basic c3Vw…`) leaves a value none knows: so what sits
    /// between the cut and the nearest line break is masked, at most
    /// [`CUT_FRAGMENT_MAX`] bytes of it (a 10 MB one-line stderr still
    /// shows the rest), and none when it is too short to be a secret.
    pub fn redact_piece(&self, text: &str, cut_before: bool, cut_after: bool) -> String {
        let mut piece = text;
        let mut prefix = "";
        let mut suffix = "";
        if cut_before {
            let line_end = piece.find('\n').unwrap_or(piece.len());
            let end = if piece[..line_end].ends_with('\r') {
                line_end - 1
            } else {
                line_end
            };
            if end >= CUT_FRAGMENT_MIN {
                piece = &piece[floor_boundary(piece, end.min(CUT_FRAGMENT_MAX))..];
                prefix = CUT_MASK;
            }
        }
        if cut_after {
            let start = piece.rfind('\n').map_or(0, |i| i + 1);
            if piece.len() - start >= CUT_FRAGMENT_MIN {
                let start = start.max(piece.len().saturating_sub(CUT_FRAGMENT_MAX));
                piece = &piece[..ceil_boundary(piece, start)];
                suffix = CUT_MASK;
            }
        }
        format!("{prefix}{}{suffix}", self.redact(piece))
    }
}

/// The char boundary at or before `i` (token runs are ASCII, so this only
/// matters when the cap lands past one).
fn floor_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Streaming redaction for live stderr: whole lines are masked; a partial
/// line waits for its newline (up to `MAX_CARRY` bytes, then it is masked
/// and let through). A private key block is masked across its lines.
#[derive(Debug, Clone)]
pub(crate) struct LineRedactor {
    redactor: Redactor,
    carry: Vec<u8>,
    in_private_key: bool,
    /// After bytes were dropped, skip to the next line start: the rest of a
    /// cut line could be half a secret.
    skip_to_newline: bool,
    /// The carry continues a line whose start was let through (the carry
    /// filled): its start is masked as at a cut.
    continued: bool,
}

/// Longest partial line held back before it is let through.
pub(crate) const MAX_CARRY: usize = 4096;

impl LineRedactor {
    pub(crate) fn new(redactor: Redactor) -> LineRedactor {
        LineRedactor {
            redactor,
            carry: Vec::new(),
            in_private_key: false,
            skip_to_newline: false,
            continued: false,
        }
    }

    /// Bytes before this point were dropped; `at_line_end` when they ended
    /// with a newline, so what follows starts a line of its own. The held
    /// partial line is cut by the drop and discarded: returns its length.
    pub(crate) fn dropped(&mut self, at_line_end: bool) -> usize {
        let discarded = self.carry.len();
        self.carry.clear();
        self.skip_to_newline = !at_line_end;
        self.continued = false;
        discarded
    }

    /// Bytes of a partial line held back, waiting for its newline.
    pub(crate) fn held(&self) -> usize {
        self.carry.len()
    }

    /// Feed bytes; masked complete lines are appended to `out`. Returns
    /// how many input bytes were skipped (after a drop).
    pub(crate) fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<u8>) -> usize {
        let mut skipped = 0;
        if self.skip_to_newline {
            match memchr::memchr(b'\n', chunk) {
                Some(i) => {
                    skipped = i + 1;
                    chunk = &chunk[i + 1..];
                    self.skip_to_newline = false;
                }
                None => return chunk.len(),
            }
        }
        // A held partial line is finished first, on its own.
        if !self.carry.is_empty()
            && let Some(i) = memchr::memchr(b'\n', chunk)
        {
            self.carry.extend_from_slice(&chunk[..=i]);
            chunk = &chunk[i + 1..];
            self.emit_carry(out, false);
        }
        // The whole lines after it in one piece, when nothing in them can
        // need masking (the common case, and a flood's): as they are. Not
        // the rest of a line let through in part: its start is a cut.
        if let Some(last) = memchr::memrchr(b'\n', chunk)
            && !self.in_private_key
            && !self.continued
            && std::str::from_utf8(&chunk[..=last]).is_ok()
            && !self.redactor.might_mask(&chunk[..=last])
        {
            out.extend_from_slice(&chunk[..=last]);
            chunk = &chunk[last + 1..];
        }
        while let Some(i) = memchr::memchr(b'\n', chunk) {
            self.carry.extend_from_slice(&chunk[..=i]);
            chunk = &chunk[i + 1..];
            self.emit_carry(out, false);
        }
        self.carry.extend_from_slice(chunk);
        if self.carry.len() > MAX_CARRY {
            // Let the line's start through; where it stops is a cut, on
            // both sides (a secret may sit across it).
            self.emit_carry(out, true);
        }
        skipped
    }

    /// The stream ended: let the last partial line through, masked.
    pub(crate) fn flush(&mut self, out: &mut Vec<u8>) {
        if !self.carry.is_empty() {
            self.emit_carry(out, false);
        }
    }

    /// `cut`: the line goes on past the carry (it filled).
    fn emit_carry(&mut self, out: &mut Vec<u8>, cut: bool) {
        let line = String::from_utf8_lossy(&self.carry).into_owned();
        self.carry.clear();
        let continued = std::mem::replace(&mut self.continued, cut);
        let begins = line.contains("-----BEGIN ") && line.contains("PRIVATE KEY-----");
        let ends = line.contains("-----END ") && line.contains("PRIVATE KEY-----");
        if self.in_private_key || begins {
            self.in_private_key = !ends;
            if begins {
                out.extend_from_slice(b"[REDACTED PRIVATE KEY]\n");
            }
            return;
        }
        if continued || cut {
            let masked = self.redactor.redact_piece(&line, continued, cut);
            out.extend_from_slice(masked.as_bytes());
        } else {
            out.extend_from_slice(self.redactor.redact(&line).as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(text: &str) -> String {
        Redactor::default().redact(text).into_owned()
    }

    #[test]
    fn known_secret_shapes_are_masked() {
        let cases = [
            (
                "Authorization: Bearer abc.def-ghi_jkl",
                "Authorization: Bearer [REDACTED]",
            ),
            (
                "proxy-authorization: Basic dXNlcjpwYXNz",
                "proxy-authorization: Basic [REDACTED]",
            ),
            (
                "curl -H 'Authorization: token12345678'",
                "curl -H 'Authorization:  [REDACTED]'",
            ),
            (
                "using bearer eyJhbGciOiJIUzI1NiJ9.payload.sig",
                "using bearer [REDACTED]",
            ),
            ("key AKIAIOSFODNN7EXAMPLE end", "key [REDACTED] end"),
            ("ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "[REDACTED]"),
            ("github_pat_11ABCDEFG0123456789_abcdefghijkl", "[REDACTED]"),
            ("glpat-abcdefghij0123456789", "[REDACTED]"),
            ("xoxb-1234567890-abcdefghij", "[REDACTED]"),
            (
                "OPENAI sk-proj-abcdefghijklmnopqrstuvwxyz",
                "OPENAI [REDACTED]",
            ),
            ("password=hunter2&user=me", "password=[REDACTED]&user=me"),
            ("{\"token\": \"abc def\"}", "{\"token\": [REDACTED]}"),
            ("SECRET: s3cr3t", "SECRET: [REDACTED]"),
            ("api_key=xyz", "api_key=[REDACTED]"),
        ];
        for (input, expected) in cases {
            assert_eq!(masked(input), expected, "{input}");
        }
    }

    /// A label that opens a sentence is prose, not a secret: masking it
    /// would hide the diagnosis. A value (one token to the end of the line
    /// or a separator) is still masked.
    #[test]
    fn a_label_that_opens_a_sentence_is_prose() {
        for prose in [
            "/etc/passwd: cannot run: Permission denied (os error 13)",
            "passwd: cannot open /etc/shadow",
            "secret: the config key is missing",
            "token: not found in the environment",
            "password: No such file or directory",
            "error: token is expired",
        ] {
            assert_eq!(masked(prose), prose);
        }
        for (secret, shown) in [
            ("password: hunter2", "password: [REDACTED]"),
            ("password: hunter2\nnext", "password: [REDACTED]\nnext"),
            ("password=hunter2, user=me", "password=[REDACTED], user=me"),
            (
                "user=me password=hunter2 host=db",
                "user=me password=[REDACTED] host=db",
            ),
            ("secret: letmein", "secret: [REDACTED]"),
            ("secret: letmein again", "secret: [REDACTED] again"),
            (
                "password: correct horse battery staple",
                "password: [REDACTED] horse battery staple",
            ),
            ("token: the", "token: [REDACTED]"),
            ("passwd: s3cret is wrong", "passwd: [REDACTED] is wrong"),
        ] {
            assert_eq!(masked(secret), shown, "{secret}");
        }
    }

    /// A prompt's label inside quotes is no value: the quote after it
    /// closes the prompt, and what follows is the command, kept.
    #[test]
    fn a_quote_that_closes_a_prompt_opens_no_value() {
        for prompt in [
            r#"printf "password: "; read x < /dev/tty; echo "got:$x""#,
            "printf 'Password: '; read -r p; echo 'done'",
            r#"echo "token=" "$T""#,
        ] {
            assert_eq!(masked(prompt), prompt);
        }
        for (secret, shown) in [
            (r#"{"password": "hunter2"}"#, r#"{"password": [REDACTED]}"#),
            (r#"password: "hunter2""#, "password: [REDACTED]"),
            (
                r#"echo "password: 'hunter2'""#,
                r#"echo "password: [REDACTED]""#,
            ),
            (r#"'token': 'abc'"#, "'token': [REDACTED]"),
        ] {
            assert_eq!(masked(secret), shown, "{secret}");
        }
    }

    #[test]
    fn private_key_blocks_are_masked_even_when_cut() {
        let text = "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\nafter";
        assert_eq!(masked(text), "before\n[REDACTED PRIVATE KEY]\nafter");
        let cut = "x\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXkt";
        assert_eq!(masked(cut), "x\n[REDACTED PRIVATE KEY]");
    }

    #[test]
    fn every_builtin_pattern_compiles_and_nothing_compiles_for_plain_text() {
        let redactor = Redactor::default();
        assert_eq!(redactor.redact("plain words only"), "plain words only");
        assert!(redactor.compiled.get().is_none(), "no trigger, no compile");
        assert_eq!(redactor.compiled().len(), BUILTIN.len());
        assert!(
            BUILTIN[PAIRS].0.contains("password"),
            "PAIRS names the pairs"
        );
    }

    #[test]
    fn harmless_text_is_untouched() {
        let text = "connection retry 18 failed: remote side closed the channel\nsk-short";
        assert_eq!(masked(text), text);
    }

    #[test]
    fn extra_patterns_mask_the_whole_match() {
        let redactor = Redactor::new(&["internal-[0-9]+".into()]).unwrap();
        assert_eq!(redactor.redact("id internal-4242 ok"), "id [REDACTED] ok");
        assert_eq!(redactor.extra_patterns(), 1);
        assert!(Redactor::new(&["(".into()]).is_err());
    }

    #[test]
    fn fragments_at_cut_edges_are_masked() {
        let redactor = Redactor::default();
        assert_eq!(
            redactor.redact_piece("aaaaaaaaaaaaaaa1234 rest\nnext", true, false),
            "[cut]\nnext"
        );
        assert_eq!(
            redactor.redact_piece("before\nhead ghp_aaaaaaaaaa", false, true),
            "before\n[cut]"
        );
        assert_eq!(redactor.redact_piece("ab cd", true, true), "ab cd");
    }

    #[test]
    fn a_long_token_at_a_cut_loses_only_a_bounded_fragment() {
        let redactor = Redactor::default();
        let long = "a".repeat(1000);
        let cut = redactor.redact_piece(&long, true, true);
        assert_eq!(cut, format!("[cut]{}[cut]", "a".repeat(1000 - 2 * 64)));
        // Only the head end cut: the tail end is whole and stays.
        let cut = redactor.redact_piece(&format!("{long} end"), true, false);
        assert_eq!(cut, format!("[cut]{} end", "a".repeat(1000 - 64)));
        // A secret split by the cut (its second half) is still masked.
        assert_eq!(
            redactor.redact_piece("SECRETHALF0123456789 visible", true, false),
            "[cut]"
        );
    }

    /// A cut inside a credential's label leaves a value no pattern knows:
    /// everything from the cut to the line break is masked (within the
    /// bound), not only the first run of token characters.
    #[test]
    fn a_cut_inside_a_label_masks_the_value_after_it() {
        let redactor = Redactor::default();
        for (piece, expected) in [
            (
                "orization: Basic c3VwZXJzZWNyZXQ=\nnext line",
                "[cut]\nnext line",
            ),
            ("ization:   Bearer abc.def-ghi\n", "[cut]\n"),
            ("word=hunter2 more\r\nok", "[cut]\r\nok"),
        ] {
            assert_eq!(
                redactor.redact_piece(piece, true, false),
                expected,
                "{piece}"
            );
        }
        // At the other end: from the line's start to the cut.
        assert_eq!(
            redactor.redact_piece("ok\nProxy-Authorization: Basic dXNlcjpw", false, true),
            "ok\n[cut]"
        );
        // The bound holds: a long line shows past its first 64 bytes.
        let long = format!("rization: Basic {}\n", "x".repeat(200));
        let cut = redactor.redact_piece(&long, true, false);
        assert_eq!(cut, format!("[cut]{}\n", "x".repeat(200 + 16 - 64)));
    }

    /// Live output lets a long line through once the carry fills: a
    /// secret split at that point is masked on both sides of it.
    #[test]
    fn a_secret_split_where_a_long_line_is_let_through_is_masked() {
        for label in ["Authorization: Basic ", "password=", "Bearer "] {
            let mut live = LineRedactor::new(Redactor::default());
            let mut out = Vec::new();
            let mut line = "x ".repeat(MAX_CARRY);
            line.truncate(MAX_CARRY - label.len() - 3);
            line.push_str(label);
            line.push_str("c3VwZXJzZWNyZXQxMjM0NTY3ODkw secret-tail rest\n");
            // As reads deliver it: the carry fills in the secret's middle.
            let (first, rest) = line.as_bytes().split_at(MAX_CARRY + 10);
            live.feed(first, &mut out);
            live.feed(rest, &mut out);
            let out = String::from_utf8(out).unwrap();
            assert!(!out.contains("c3VwZXJ"), "{label}: the secret's head leaks");
            assert!(!out.contains("NTY3ODkw"), "{label}: its tail leaks: {out}");
            assert!(out.ends_with('\n'), "the line still ends");
        }
    }

    #[test]
    fn live_lines_are_masked_and_resume_at_a_line_after_a_drop() {
        let mut live = LineRedactor::new(Redactor::default());
        let mut out = Vec::new();
        live.feed(b"ok line\nAuthorization: Bear", &mut out);
        live.feed(b"er abcdefghijkl\n", &mut out);
        assert_eq!(out, b"ok line\nAuthorization: Bearer [REDACTED]\n");
        out.clear();
        live.dropped(false);
        let skipped = live.feed(b"fghijklmnop-secret-tail\nnext\n", &mut out);
        assert_eq!(skipped, 24);
        assert_eq!(out, b"next\n");
        out.clear();
        live.feed(
            b"-----BEGIN PRIVATE KEY-----\nAAAA\nBBBB\n-----END PRIVATE KEY-----\nafter\n",
            &mut out,
        );
        assert_eq!(out, b"[REDACTED PRIVATE KEY]\nafter\n");
    }

    #[test]
    fn whole_blocks_pass_as_lines_would_at_every_split() {
        // Innocent lines around secrets of every kind: passing a block of
        // lines with no trigger in one piece must give what masking each
        // line gives, however the stream is cut into reads.
        let mut text = String::new();
        for i in 0..40 {
            text.push_str(&format!("plain diagnostic line {i} ünïcode\n"));
            if i % 7 == 3 {
                text.push_str("Authorization: Bearer abcdefgh12345678\n");
            }
            if i % 11 == 5 {
                text.push_str(
                    "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n",
                );
            }
        }
        let expected: String = text
            .replace(
                "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n",
                "[REDACTED PRIVATE KEY]\n",
            )
            .split_inclusive('\n')
            .map(|line| Redactor::default().redact(line).into_owned())
            .collect();
        assert!(!expected.contains("abcdefgh12345678"));
        for step in [1, 7, 64, 300, text.len()] {
            let mut lines = LineRedactor::new(Redactor::default());
            let mut out = Vec::new();
            for chunk in text.as_bytes().chunks(step) {
                lines.feed(chunk, &mut out);
            }
            lines.flush(&mut out);
            assert_eq!(String::from_utf8(out).unwrap(), expected, "reads of {step}");
        }
    }
}
