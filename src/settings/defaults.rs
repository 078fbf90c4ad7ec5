//! What `--mcp` changes, in one table: each option's default without it
//! and with it. `Settings::resolve` takes its defaults from here, and the
//! help text (so the man page) says them from here, so the two cannot
//! disagree.

use std::time::Duration;

use crate::cli::{GuardMode, SessionMode};

/// The defaults of one mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ModeDefaults {
    pub(crate) stdout_guard: GuardMode,
    pub(crate) live: bool,
    pub(crate) stdin_close_grace: Option<Duration>,
    pub(crate) grace: Duration,
    pub(crate) wait_delay: Duration,
    /// The session layer, where the guard is on (it reads the server's
    /// answers through the guard).
    pub(crate) session: SessionMode,
}

/// The defaults without `--mcp`, and with it.
pub(crate) struct McpDefaults {
    pub(crate) plain: ModeDefaults,
    pub(crate) mcp: ModeDefaults,
}

/// The one table.
pub(crate) const MCP_DEFAULTS: McpDefaults = McpDefaults {
    plain: ModeDefaults {
        stdout_guard: GuardMode::Off,
        live: false,
        stdin_close_grace: None,
        grace: Duration::from_secs(5),
        wait_delay: Duration::from_secs(1),
        session: SessionMode::Off,
    },
    mcp: ModeDefaults {
        stdout_guard: GuardMode::Jsonrpc,
        live: true,
        stdin_close_grace: Some(Duration::from_secs(2)),
        grace: Duration::from_secs(1),
        wait_delay: Duration::from_millis(500),
        session: SessionMode::Jsonrpc,
    },
};

/// One option's row, as the help text says it.
pub(crate) struct Shown {
    /// The clap id.
    pub(crate) option: &'static str,
    pub(crate) plain: String,
    pub(crate) mcp: String,
    /// What `--mcp` turns it to, as the `--mcp` help lists it (none: it
    /// follows another option).
    pub(crate) summary: Option<String>,
    /// A condition on the `--mcp` default.
    pub(crate) unless: Option<&'static str>,
}

impl McpDefaults {
    /// The defaults of the mode `--mcp` says.
    pub(crate) fn of(&self, mcp: bool) -> &ModeDefaults {
        match mcp {
            true => &self.mcp,
            false => &self.plain,
        }
    }

    /// Every row, in the order the `--mcp` help lists them.
    pub(crate) fn shown(&self) -> [Shown; 6] {
        let (plain, mcp) = (&self.plain, &self.mcp);
        let guard = |mode: GuardMode| match mode {
            GuardMode::Off => "off",
            GuardMode::Jsonrpc => "jsonrpc",
        };
        let session = |mode: SessionMode| match mode {
            SessionMode::Off => "off",
            SessionMode::Jsonrpc => "jsonrpc",
        };
        let on = |on: bool| if on { "on" } else { "off" };
        let time = |d: Duration| humantime::format_duration(d).to_string();
        let maybe = |d: Option<Duration>| d.map_or("off".to_string(), time);
        [
            Shown {
                option: "stdout_guard",
                plain: guard(plain.stdout_guard).into(),
                mcp: guard(mcp.stdout_guard).into(),
                summary: Some(format!("--stdout-guard {}", guard(mcp.stdout_guard))),
                unless: None,
            },
            Shown {
                option: "live",
                plain: on(plain.live).into(),
                mcp: on(mcp.live).into(),
                summary: Some(match mcp.live {
                    true => "--live".into(),
                    false => "--live=false".into(),
                }),
                unless: None,
            },
            Shown {
                option: "stdin_close_grace",
                plain: maybe(plain.stdin_close_grace),
                mcp: maybe(mcp.stdin_close_grace),
                summary: Some(format!(
                    "--stdin-close-grace {}",
                    maybe(mcp.stdin_close_grace)
                )),
                unless: None,
            },
            Shown {
                option: "grace",
                plain: time(plain.grace),
                mcp: time(mcp.grace),
                summary: Some(format!("--grace {}", time(mcp.grace))),
                unless: None,
            },
            Shown {
                option: "wait_delay",
                plain: time(plain.wait_delay),
                mcp: time(mcp.wait_delay),
                summary: Some(format!("--wait-delay {}", time(mcp.wait_delay))),
                unless: None,
            },
            Shown {
                option: "session",
                plain: session(plain.session).into(),
                mcp: session(mcp.session).into(),
                summary: None,
                unless: Some("unless --stdout-guard off"),
            },
        ]
    }
}

impl Shown {
    /// The help's `[default: …]`.
    pub(crate) fn default_text(&self) -> String {
        let unless = self.unless.map(|u| format!(" {u}")).unwrap_or_default();
        format!("[default: {}; {} with --mcp{unless}]", self.plain, self.mcp)
    }
}

/// The `--mcp` help: what it turns on, from the table.
pub(crate) fn mcp_help() -> String {
    let turned: Vec<String> = MCP_DEFAULTS
        .shown()
        .into_iter()
        .filter_map(|row| row.summary)
        .collect();
    format!(
        "MCP stdio server mode: {} (each can still be set on its own)",
        turned.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_says_the_defaults_the_table_holds() {
        assert_eq!(
            mcp_help(),
            "MCP stdio server mode: --stdout-guard jsonrpc, --live, --stdin-close-grace 2s, \
             --grace 1s, --wait-delay 500ms (each can still be set on its own)"
        );
        let rows = MCP_DEFAULTS.shown();
        assert_eq!(rows[3].default_text(), "[default: 5s; 1s with --mcp]");
        assert_eq!(rows[2].default_text(), "[default: off; 2s with --mcp]");
        assert_eq!(
            rows[5].default_text(),
            "[default: off; jsonrpc with --mcp unless --stdout-guard off]"
        );
    }
}
