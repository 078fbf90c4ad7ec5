//! Where each option's value came from, by clap id: the command line, or
//! its `MCP_BOUND_*` variable (not a default). The rules of `settings`
//! read it: an option that only tunes a feature left off is refused from
//! the command line and ignored from its variable, but a tool policy.

/// The options given, by clap id: on the command line itself, and from
/// their `MCP_BOUND_*` variable (not a default).
#[derive(Debug, Default)]
pub(crate) struct Given {
    command_line: Vec<String>,
    environment: Vec<String>,
}

impl From<&clap::ArgMatches> for Given {
    fn from(matches: &clap::ArgMatches) -> Given {
        use clap::parser::ValueSource;
        let from = |source: ValueSource| {
            matches
                .ids()
                .filter(|id| matches.value_source(id.as_str()) == Some(source))
                .map(|id| id.as_str().to_string())
                .collect()
        };
        Given {
            command_line: from(ValueSource::CommandLine),
            environment: from(ValueSource::EnvVariable),
        }
    }
}

impl Given {
    /// Given on the command line.
    pub(crate) fn has(&self, id: &str) -> bool {
        self.command_line.iter().any(|given| given == id)
    }

    /// Given from its variable.
    pub(crate) fn in_environment(&self, id: &str) -> bool {
        self.environment.iter().any(|given| given == id)
    }
}
