//! `check --format junit`: one testcase per expectation, for CI (the
//! JUnit XML that Jenkins, GitLab and GitHub's test reporters read). The
//! verify result is a testcase too; every text is escaped.

use std::fmt::Write as _;

use super::Outcome;
use crate::markup::escape;

/// The whole document: one suite, named after the journal.
pub(super) fn document(journal: &str, outcomes: &[Outcome]) -> String {
    let failures = outcomes.iter().filter(|o| !o.passed).count();
    let tests = outcomes.len();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"mcp-bound check\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">"
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\">",
        escape(journal)
    );
    for outcome in outcomes {
        let name = escape(&outcome.name);
        let detail = escape(&outcome.detail);
        if outcome.passed {
            let _ = writeln!(
                out,
                "    <testcase classname=\"mcp-bound.check\" name=\"{name}\"><system-out>{detail}</system-out></testcase>"
            );
        } else {
            let _ = writeln!(
                out,
                "    <testcase classname=\"mcp-bound.check\" name=\"{name}\"><failure message=\"{detail}\">{detail}</failure></testcase>"
            );
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suite_counts_its_failures_and_escapes_every_text() {
        let outcomes = [
            Outcome {
                name: "verify".into(),
                passed: true,
                detail: "OK".into(),
            },
            Outcome {
                name: "forbid-tool <rm*>".into(),
                passed: false,
                detail: "called once, first: \"rm\" & co".into(),
            },
        ];
        let xml = document("a&b.jsonl", &outcomes);
        assert!(xml.contains("tests=\"2\" failures=\"1\""), "{xml}");
        assert!(xml.contains("name=\"a&amp;b.jsonl\""), "{xml}");
        assert!(xml.contains("name=\"forbid-tool &lt;rm*&gt;\""), "{xml}");
        assert!(
            xml.contains("message=\"called once, first: &quot;rm&quot; &amp; co\""),
            "{xml}"
        );
    }
}
