//! The words of the help and the man page that are not option help: exit
//! status, the record, the examples and the after-help texts (the man
//! page's own sections are `man_sections.rs`). `--help`, the man page and
//! the completions share them.

/// The exit status table, as (status, meaning).
pub const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0-255",
        "the helper's own exit code, whatever it is: a helper's own 77, 124-127 or 141 look like mcp-bound's below, so the record's state is the unambiguous answer (completed: the helper's own)",
    ),
    (
        "124",
        "the deadline passed (with --preserve-status: the helper's own status instead)",
    ),
    (
        "125",
        "mcp-bound itself failed: bad usage or value, or a record that could not be written before dispatch (nothing was started); or, after dispatch, mcp-bound could not go on supervising (state failed_after_dispatch: the helper's tree was killed)",
    ),
    ("126", "the helper was found but could not be run"),
    ("127", "the helper was not found"),
    (
        "128+N",
        "the helper died of signal N that mcp-bound did not send; or mcp-bound received signal N (INT, TERM, HUP, QUIT) and cancelled the helper; or, under --mcp, the host ended the session by closing our stdin and the server, still running after --stdin-close-grace, was stopped with N (143 for TERM): the MCP shutdown, done for the host, whose status passes through as GNU timeout passes a cancelled command's. The summary line then says the host ended the session, and the record's state is shut_down (cancelled_after_dispatch when requests were cut off)",
    ),
    (
        "77",
        "the approver denied the call, or the approval expired; the helper never ran",
    ),
    (
        "141",
        "mcp-bound's stdout reader went away (EPIPE, as in a pipeline into head) and the helper was cancelled: what a shell reports for a command SIGPIPE ended; nothing is printed unless --echo always, and the record says cancelled_after_dispatch, cancel_reason client_disconnected",
    ),
];

pub(crate) const RECORD: &str = "\
One JSON object (schema mcp-bound/record/v1, published as schema/record.schema.json). \
With --record PATH it is written before the helper starts (state awaiting_approval while an approval \
is asked, then dispatched, with exit null), then replaced atomically (temporary file and rename, \
mode 0600) at the end; with --record-fd N one line is written at the end. \
Lifecycle facts come first. state: awaiting_approval, dispatched (in flight; stays if mcp-bound is \
SIGKILLed), completed, timed_out, cancelled_before_dispatch, cancelled_after_dispatch (also a cancel \
during clean-up after the helper exited), failed_before_dispatch (nothing started: 125, 126 or 127, \
with error), failed_after_dispatch (mcp-bound itself failed after the start: the helper's tree was \
killed, exit 125, with error; the helper may have acted), denied (approval denied or expired, exit 77), \
supervisor_killed (mcp-bound was SIGKILLed mid-call; its watchdog ended the tree and wrote this, exit null), \
shut_down (session layer only: the host closed our stdin or sent a signal while no request was in \
flight, the normal end of an MCP session; a shutdown that cuts requests off stays \
cancelled_after_dispatch and lists them in mcp.interrupted). \
cancel_reason: timeout, signal, client_disconnected, stdin_closed. \
exit ({\"code\": N}, {\"signal\": \"TERM\", \"core_dumped\": false}, or null when no exit was observed; never 0 unless 0 was seen; on Windows N is 32 bits, unsigned, and a crash's \
NTSTATUS is also named: {\"code\": 3221225477, \"ntstatus\": \"STATUS_ACCESS_VIOLATION\"}), \
exit_code (mcp-bound's own), stream_end (eof, eof_after_descendants_killed, closed_while_held), \
descendants_signalled. Then argv, cwd, pid, started_at, ended_at (RFC 3339), duration_ms, \
approval {required, method (command, tty), decision (approved, denied, expired, error), requested_at, \
decided_at, waited_ms, timeout_ms, approver_exit, excerpt}, \
stdout {bytes_seen, bytes_forwarded, bytes_discarded, guard (off, jsonrpc), lines_forwarded, \
lines_diverted, bytes_diverted, first_diverted, lines_salvaged}, \
stderr {bytes_seen, bytes_retained, truncated, head_bytes, tail_bytes, excerpt, live_bytes_forwarded, \
live_bytes_dropped, live_bytes_unsent: with --live every byte seen is one of the three; repeats [{line, count, \
count_error}]: the most frequent lines, counted at least twice, masked, digit runs folded to #, count over by at \
most count_error (Space-Saving, 64 entries); repeats_counted {lines, bytes}: the first 256 KiB is counted line by line, \
then at most one byte in 1024, so bytes below bytes_seen means a sample; the exit echo says the top three after \
the truncation marker, [not kept: SIZE, mostly \"LINE\" ×N]; debug_windows [{opened_at, closed_at, by, \
closed_by, bytes_forwarded}], debug_windows_not_listed, debug_windows_open_ms: see DEBUG WINDOW}, \
contain (method cgroup, group, or group+mark where there is no subreaper (macOS): what left the group \
is found by the tree's mark, so unreadable counts this user's processes a scan could not read; the cgroup's \
path, why auto fell back, the watchdog's pid), \
usage (what the helper's whole tree used, null until it ended: user_ms, sys_ms, max_rss_kib, the largest \
resident set of any one process mcp-bound reaped, with what it reaped, null when none was (never \
getrusage's RUSAGE_CHILDREN peak, which survives exec and may be a parent's child's); with a cgroup, cgroup_cpu_ms from its cpu.stat and memory_peak_bytes from its \
memory.peak, null where there is none; also in the summary line and the journal's terminal entry), \
stderr_log (null without --stderr-log: path, bytes_written, bytes_dropped, rotations, error), \
mcp (null unless the session layer ran: limits, client and server {requests, notifications, responses, \
non_jsonrpc_lines}, client_bytes {read, to_server, discarded}, synthesized {request_timeout, server_exited, too_many_in_flight, invalid_request}, refused, cancelled_by_client, \
late_responses_dropped, unmatched_responses, cancellations_sent, in_flight_at_exit, peak_in_flight, \
restarts, restart_stopped {reason: limit, clean_exit, protocol_changed, spawn_failed or never; detail}, \
incarnations [{pid, dispatched_t_ms, exited_t_ms, exit, stderr_bytes_seen, in_flight_at_exit, \
interrupted: what its end cut off, era: legacy (initialize) or modern (2026-07-28 _meta) or null, \
protocol_version: as the client asked}], interrupted [{id, method, name}]: what the end of the session cut \
off, not what an earlier crash did), the limits in force, \
and events: dispatched (again for each restarted server), restart_scheduled (attempt, backoff_ms), \
cancel_requested, signal_sent (signal, target group, descendants, cgroup (KILL through cgroup.kill), job (KILL through TerminateJobObject, Windows) or stdin (CLOSE), count, \
reason: timeout, signal, client_disconnected, stdin_closed, pipes_held, leftovers, supervisor_failure, \
restart_refused), \
helper_exited, stdout_closed, stderr_closed, stdin_closed, streams_abandoned, each with t_ms, \
milliseconds on the monotonic clock since mcp-bound started. Last, mcp_bound {version, pid, os (linux, macos, windows), \
warnings: what was worth saying of its own files and did not stop the call, such as a journal or \
stderr log others can read}. \
A cancellation after dispatch is never reported as a failure: the helper may already have acted.";

/// The man page's EXAMPLES, as (what it shows, the example). Each is
/// checked: the host config is parsed as mcp-bound's own command line,
/// the flood repro is run (`tests/it/usage.rs`).
pub const EXAMPLES: &[(&str, &str)] = &[
    (
        "In a shell script: a deadline, a record, and the record's state when the helper did not succeed \
(124 is the deadline, but a helper's own 124 is possible: the state tells them apart).",
        "if ! mcp-bound --timeout 30s --record /tmp/check.json -- make check >check.log; then
    jq -r '.state, .stderr.excerpt' /tmp/check.json >&2
fi",
    ),
    (
        "An MCP host config (Claude Desktop's claude_desktop_config.json; other hosts take the same \
command and args): the server under the session layer, a request timeout below the host's own, and a \
record per run.",
        r#"{
  "mcpServers": {
    "files": {
      "command": "mcp-bound",
      "args": ["--mcp", "--request-timeout", "50s",
               "--record", "/home/me/.local/state/mcp-bound/files-{call_id}.json",
               "--record-keep", "20",
               "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me/projects"]
    }
  }
}"#,
    ),
    (
        "A flood repro: gigabytes of stderr for 2 seconds, drained; the last KiB kept, echoed with its \
marker and the summary line; exit 124.",
        "mcp-bound --timeout 2s --tail-bytes 1K --echo always -- sh -c 'yes helper-diagnostic >&2'",
    ),
];

pub(crate) const AFTER_HELP: &str = "\
Every option also reads an environment variable, named in brackets. An option that
only tunes a feature that is off (--stderr-log-keep without --stderr-log) is refused
on the command line, and ignored from its variable; a tool policy (--tool-allow,
--tool-deny, --tool-approve-cmd, --tool-approve-via, --tool-approve) that cannot be
applied is refused from its variable too.

A DURATION is GNU timeout's: a number of seconds (10, 1.5, 1e-3, 0x1p-3) or one with a
unit ms, s, m, h or d; it is never negative. A size (BYTES) is {sizes}.
{exit}

Examples:
  mcp-bound --timeout 30s --record call.json -- ssh host uptime
  mcp-bound --timeout 2s -- sh -c 'yes helper-diagnostic 1>&2'";

pub(crate) const VERIFY_AFTER_HELP: &str = "\
What a pass proves: every line is intact, in order and linked to the one before, and every \
terminal entry has its intent. What it cannot prove alone: a cut tail, a rollback or a whole \
rewritten file pass unless checked with --anchor (a head h kept elsewhere); a correctly chained \
forged append passes unless the journal is keyed (--journal-key) and the forger lacks the key.";
