//! The fuzz targets' way in (feature `fuzzing` only): one client line
//! through a fresh session.

use std::time::{Duration, Instant};

use super::{Audit, AuditRequests, RestartPolicy, Session, SessionPolicy};

/// For the fuzz targets (feature `fuzzing`): one client line through a
/// fresh session that audits tools/call. What is passed on to the server,
/// and the (method, name) of each request entry made. `last`: the line
/// came with no newline before EOF.
pub fn fuzz_client_line(
    line: &[u8],
    last: bool,
) -> (Vec<u8>, Vec<(Option<String>, Option<String>)>) {
    let policy = SessionPolicy {
        default_timeout: None,
        method_timeouts: Vec::new(),
        resets_on_progress: false,
        max_in_flight: 4096,
        audit: AuditRequests::Tools,
        journal: true,
        agent_excerpt_bytes: 1024,
        tools: None,
        restart: RestartPolicy {
            mode: crate::record::mcp::RestartMode::Never,
            max_restarts: 0,
            window: Duration::ZERO,
            backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
        },
    };
    let mut session = Session::new(policy, "fuzz".into());
    let mut out = Vec::new();
    if last {
        session.on_client_last_line(Instant::now(), line, &mut out, 0);
    } else {
        session.on_client_line(Instant::now(), line, &mut out, 0);
    }
    let requests = session
        .take_audit()
        .into_iter()
        .filter_map(|audit| match audit {
            Audit::Request(request) => Some((request.method, request.name)),
            Audit::Response(_)
            | Audit::Task(_)
            | Audit::Decision(_)
            | Audit::ToolDrift(_)
            | Audit::Restart(_) => None,
        })
        .collect();
    (out, requests)
}
