//! The readers' commands (`verify`, `log`, `check`, `report`, `pin`),
//! each from its clap arguments: the journal they read is one
//! `verify::JournalSource`, from one flattened `cli::JournalArgs`.

use crate::cli::JournalArgs;
use crate::verify::{JournalSource, VerifyCommand};

impl From<JournalArgs> for JournalSource {
    fn from(args: JournalArgs) -> JournalSource {
        JournalSource {
            path: args.journal,
            key: args.key,
            anchor: args.anchor,
        }
    }
}

impl From<crate::cli::VerifyArgs> for VerifyCommand {
    fn from(args: crate::cli::VerifyArgs) -> VerifyCommand {
        VerifyCommand {
            source: args.source.into(),
            json: args.json,
        }
    }
}

impl From<crate::cli::LogArgs> for crate::log::LogCommand {
    fn from(args: crate::cli::LogArgs) -> crate::log::LogCommand {
        crate::log::LogCommand {
            source: args.source.into(),
            sessions: args.sessions,
            call: args.call,
            json: args.json,
            wide: args.wide,
            since: args.since,
            until: args.until,
            session: args.session,
            state: args.state,
            tool: args.tool,
            requests: args.requests,
            follow: args.follow,
        }
    }
}

impl From<crate::cli::CheckArgs> for crate::check::CheckCommand {
    fn from(args: crate::cli::CheckArgs) -> crate::check::CheckCommand {
        crate::check::CheckCommand {
            source: args.source.into(),
            expect_tools: args.expect_tool,
            forbid_tools: args.forbid_tool,
            max_duration: args.max_duration,
            requests: args.requests,
            expect_state: args.expect_state,
            no_unfinished: args.no_unfinished,
            no_unapproved: args.no_unapproved,
            expect: args.expect,
            since: args.since,
            until: args.until,
            junit: args.format == crate::cli::CheckFormat::Junit,
        }
    }
}

impl From<crate::cli::ReportArgs> for crate::report::ReportCommand {
    fn from(args: crate::cli::ReportArgs) -> crate::report::ReportCommand {
        crate::report::ReportCommand {
            source: args.source.into(),
            output: args.output,
        }
    }
}

impl From<crate::cli::PinArgs> for crate::pin::PinCommand {
    fn from(args: crate::cli::PinArgs) -> crate::pin::PinCommand {
        crate::pin::PinCommand {
            file: args.file,
            accept: args.accept,
            key: args.key,
            json: args.json,
        }
    }
}
