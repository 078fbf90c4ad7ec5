//! The man page's own sections (containment, the MCP session, the
//! journal, tool pinning, ...), in the order the man page shows them.

/// Further man page sections, as (title, text).
pub const MAN_SECTIONS: &[(&str, &str)] = &[
    (
        "CONTAINMENT",
        "Nothing of the helper's tree outlives mcp-bound, even a SIGKILLed one. With --contain cgroup \
(the choice of auto where one can be made) the helper is born in a fresh cgroup v2 under mcp-bound's \
own (clone3 with CLONE_INTO_CGROUP, or, where clone3 is refused, by writing itself into cgroup.procs \
before it execs; the cgroup2 mount at /sys/fs/cgroup, …/unified on hybrid systems, else from /proc/self/mountinfo), \
so whatever it forks stays inside, setsid and double forks included; the cgroup is removed at the \
end. With --contain group (auto's fallback, with the reason in contain.fallback; macOS has no cgroup) \
the tree is the process group, and every process of it carries MCP_BOUND_TREE in its environment: on \
Linux a subreaper keeps every escape mcp-bound's child; on macOS (method group+mark) an escape \
re-parented to launchd is found by that mark (libproc and KERN_PROCARGS2), which reads only this user's \
processes: one whose environment cannot be read (a setuid program) is not found, and is counted in \
contain.unreadable. A watchdog, started \
before dispatch in a session of its own and holding only a pipe from mcp-bound, sees mcp-bound die: \
it kills the cgroup (cgroup.kill, or each pid of cgroup.procs) or the group and every process with \
the mark, writes the journal's terminal entry and the record with state supervisor_killed (exit \
null), and exits. It hears the final words before mcp-bound writes them: if mcp-bound dies while \
writing them, the watchdog completes them as they were (the true state; no second terminal, no \
final record overwritten). It is told each server's process group, a restart's too, and before \
each reap that the number is no longer the call's: a reaped group's number is never signalled. \
The record it writes for a killed call carries what mcp-bound last knew, told at milestones (the \
dispatch, each restart, the host's signal or hang-up): pid, events, cancel_reason, stdout, \
stderr.bytes_seen, and mcp with the requests then in flight as interrupted and the server then running listed last in incarnations (exited_t_ms and exit null); a supervisor_killed \
event gives facts_t_ms, when that was known. \
With --journal or --record it is a fork of mcp-bound; without, a waiter that shares \
mcp-bound's memory and costs next to nothing, and which on mcp-bound's death strikes once and execs \
mcp-bound as mcp-bound-watchdog to end the rest (on Linux; elsewhere always a fork). --contain cgroup where no cgroup can be made \
(on macOS: never) is exit 125, and nothing runs. --memory-max, --pids-max and \
--cpu-max write the cgroup's memory.max, pids.max and cpu.max (enabling the controller in the parent); \
one the machine cannot apply refuses the call (125) unless --limits best-effort, and the record's \
contain lists applied and not_applied, and oom_kills from memory.events. On Windows they are \
the Job Object's JobMemoryLimit, ActiveProcessLimit and CpuRate (a hard cap, per 10,000 of the \
machine), each asked of the system before anything runs, with the same refusal and best effort.",
    ),
    (
        "STDERR LOG",
        "With --stderr-log PATH, every byte drained from the helper's stderr (and every stdout line the \
guard diverted, behind its marker) is written to PATH as it arrives, masked line by line like live \
output (a secret split across reads is still masked). Before the next line would take PATH past \
--stderr-log-size, PATH is renamed to PATH.1 (PATH.1 to PATH.2, and so on; the oldest past \
--stderr-log-keep is removed) and a new PATH is opened: never truncated in place, so tail -F loses \
no line, and a line is split across files only if it is longer than a file. The disk used stays \
under size × (keep + 1). mcp-bound writes its own lines in the log: a start line (call id, pid, \
masked argv), a line per restart, an end line (state, exit), and a line counting bytes that could not \
be written. Writing never stalls the drain: lines wait in a bounded queue (4 MiB) and are written \
between polls; what does not fit is dropped and counted. A write error (ENOSPC, \
EIO) ends the log, not the call: record stderr_log.error, and one line on mcp-bound's stderr. The log \
is opened before dispatch, mode 0600, a symlink refused; if it cannot be opened the call fails (125) \
and nothing runs, unless --stderr-log-optional. One writer per PATH: mcp-bound holds an exclusive \
lock on PATH.lock; a second mcp-bound on the same PATH writes PATH.<pid>.<random> instead and says \
so. The log and its lock are checked once opened: another user's file, or one others may write, is \
refused (125); a device or FIFO must be ours or root's; a log others can read gets one warning (the \
record's mcp_bound.warnings). With \
--stderr-log-timestamps each line starts with an RFC 3339 UTC time, taken when it was read.",
    ),
    (
        "MCP SESSION",
        "With --session jsonrpc (the default under --mcp) the unit of supervision is the request. \
mcp-bound reads its stdin (the client) and writes each complete line to the server's stdin, \
byte-exact and in order; while the server does not read, neither does mcp-bound (back-pressure), \
so memory stays flat. Lines are parsed only for id, method and, for tools/call, params.name; lines \
that are not JSON-RPC pass unchanged, counted. Batches (arrays) pass in both directions and each \
element is tracked. Ids belong to one direction: a server request never matches a client request. \
Ids are matched as JSON values, as the SDKs match them: a string after unescaping, a number by its \
exact decimal value (1, 1.0 and 1e0 are one id; never through f64), and they are journaled and \
recorded exactly as the client wrote them. \
Client EOF closes the server's stdin, then --stdin-close-grace applies. \
With --request-timeout, a request with no response in time gets error -32001 from mcp-bound, the \
server gets notifications/cancelled, and the server's late response is dropped: a client never gets \
two responses for one id. A client's own notifications/cancelled takes the request out of the table, \
and a late answer for it is dropped too (late_responses_dropped). The default --request-timeout times \
calls, not a subscriptions/listen stream nor a 2025 tasks/result, which wait by design, nor the \
opening (initialize, server/discover), which waits on the server's start and which the host times; \
METHOD=DURATION still times any of them. A stream ends \
by the client's cancel, a result, the server's exit (answered -32000), or the server's \
notifications/cancelled naming it (nothing more is said for it; journal outcome ended); open when \
the host ends the session, it ends unanswered and is not counted as cut off (outcome shut_down). \
The message of an error mcp-bound answers carries the server's last stderr lines, masked, at most \
--agent-excerpt-bytes (some hosts show the model only error.message; a -32001 carries what the \
server wrote while the request ran); mcp.agent_excerpts counts them. \
If the server exits with requests in flight, each gets error -32000 with the exit, the last 2 KiB \
of its stderr (masked) and written_to_server (false: the server's stdin pipe never had the whole \
request, so it cannot have acted on it). Without --restart (or once --max-restarts is spent) the session \
then ends with the server: mcp-bound ends the tree, writes the record and exits with the server's status, \
so the host sees its server gone as it would without mcp-bound; a request read while that end is under way \
is answered at once (written_to_server false). With --restart, what the client sends meanwhile waits for the \
new server (below). A request is never re-sent: it may have acted. Past --max-in-flight waiting requests, a new one is answered with -32000 \
at once. Every error mcp-bound writes carries data.mcp_bound.reason (request_timeout, server_exited, \
too_many_in_flight, invalid_request), so it cannot be taken for the server's. Its codes are -32001 and \
-32000 (the legacy implementation-defined range, which MCP 2026-07-28 allocates nothing in) and \
JSON-RPC's -32600; never one of -32020..-32099, which the spec reserves. The server's own errors \
(-32022 and the rest) pass through untouched. The stdout guard also salvages a JSON-RPC message glued to a stray print on one \
line, and every message of a line that holds several: the junk is diverted, each message forwarded \
on a line of its own. With --journal, each request named by \
--journal-requests gets an mcp_request entry, synced before the request reaches the server (requests \
read together share one sync), and an mcp_response entry (outcome result, error, timed_out, cancelled \
or server_exited; a result's result_type complete, input_required for an MRTR round, or task); \
verify pairs them. A task an audited call created (a 2025 CreateTaskResult or resultType task) is \
linked to the call; its end (tasks/result, a terminal tasks/get, notifications/tasks/status) is an \
mcp_task entry against that call (status completed, failed, cancelled, or lost when the server \
went away), which verify pairs too. The audit is never weaker than the server's parser: where the \
strict fast path is not sure, a client line is read as the most permissive server parsers read it \
(Node's JSON.parse and Python's json.loads: the last of duplicate keys, NaN, Infinity, lone \
surrogates, any depth; bad UTF-8 as U+FFFD; a lone CR ending a line; the last line with no newline; \
Go's encoding/json and .NET's case-insensitive readers: keys matched without regard to case, \
with the long s read as s and the Kelvin sign as k). Refused with -32600 (data.mcp_bound.reason \
invalid_request and refusal naming why, nothing sent, mcp.refused): a key the audit reads (jsonrpc, \
id, method, params; name and arguments in a call's params) given twice (duplicate_key) or spelled \
in another case or folding (case_variant_key), a line a CR would split into several messages \
(carriage_return), a batch that is not UTF-8 (batch_not_utf8); under a tool gate or an audit with \
--journal also a line that is not exactly one JSON object or batch (not_one_value: split over \
lines, pretty-printed, or two on a line, which a stream decoder reads) and one that opens with a \
byte order mark (byte_order_mark). Each refusal is journaled: an mcp_request marked refused, with \
line_sha256, and next its mcp_response with outcome refused and the reason; verify pairs them. \
Journaled with line_sha256 (the SHA-256 of the line as sent) and irregular \
(invalid_utf8, not_strict_json, unterminated, over_max_message_bytes, duplicate_id, untracked_id, \
refused): such lines, a line over --max-message-bytes (hashed as it streams, its entry written \
before its newline reaches the server), a request whose id is still in flight, and an id that \
cannot be tracked (a null id or none, for a method the audit covers). \
With --restart on-failure (a non-zero exit or a signal) or always (any exit), a server that went away \
on its own is started again after --restart-backoff, doubled for each restart within --restart-window, \
at most --max-restarts times in the window (never is the default); live stderr says so on a line of \
its own, [mcp-bound: restarting the server (attempt N, after exit 3) in 250ms]. Never after our stdin closed, a \
signal from the host, our stdout's reader going away, or --timeout. From the moment the server is \
gone until the restart is under way, the client's messages wait in our stdin; if the client hangs up while a restart waits, none follows, and what it \
sent is read and answered (no server runs); a hang-up during the replay means no restart after it. A \
session in the 2026-07-28 era (each request's _meta names its protocol version) has no handshake: the \
new server gets the client's next request, and no notification. In a legacy session the \
new server first gets the client's initialize again under mcp-bound's \
own id, and its answer is consumed: the same protocolVersion and capabilities, and \
notifications/initialized follows (and a list_changed notification to the client for each list the \
first server said may change); anything else, or no answer within 10s, and the restart is refused: \
the new server is ended (signal reason restart_refused) and mcp.restart_stopped says why.",
    ),
    (
        "SIGNALS",
        "INT, TERM, HUP and QUIT received by mcp-bound cancel the helper: the received signal is \
forwarded to the helper's process group (as GNU timeout does), then CONT, then KILL after --grace. \
A second such signal sends KILL at once. mcp-bound exits 128+N after writing the record. \
At a deadline, --signal is sent first; --signal CLOSE (with the session layer) instead closes the \
server's stdin, the MCP shutdown, which means the same on every platform: signal_sent names CLOSE \
with target stdin, and KILL follows after --grace if the server did not exit. \
A terminating signal that was ignored when mcp-bound started stays ignored. SIGUSR1 is mcp-bound's \
own: it is caught, never forwarded to the helper, and never ends the call; it opens a debug window \
(DEBUG WINDOW), and a second one closes it. SIGPIPE is ignored; \
EPIPE on stdout cancels the helper with reason client_disconnected: exit 141, \
as a shell reports a command SIGPIPE ended, and, as a shell does, nothing printed (unless --echo always). Signals reach the poll loop \
through a self-pipe: no thread handles them.",
    ),
    (
        "PROCESS TREE",
        "The helper runs in its own process group. On Linux mcp-bound is a child subreaper, so \
descendants that leave the group (setsid, double fork) re-parent to it and are still found: \
every termination step signals the group with killpg and every other live descendant one by one, \
never the same process twice in one step. Only the helper's tree is signalled: children mcp-bound \
already had before dispatch (a shell that exec'd it hands over its background jobs and process \
substitutions) and processes older than the helper are never signalled or waited for, only reaped \
if they exit. The helper is observed with waitid(WNOWAIT) and reaped \
last, so its process group id cannot be reused while it is signalled. When the helper exits but \
descendants hold its stdout or stderr open, mcp-bound waits --wait-delay, then terminates them \
(signal, --grace, KILL); the helper's real exit status is kept and stream_end says what happened. \
Descendants still running after the helper exited and its pipes closed are terminated the same way. \
On Linux the helper also gets PR_SET_PDEATHSIG=SIGKILL, so it dies with mcp-bound even before the \
watchdog acts; its descendants are ended by the containment (CONTAINMENT): the watchdog kills the \
cgroup, or the group and every marked process. macOS has neither a subreaper nor a parent-death \
signal: escapes are found by the tree's mark (looked for again on a backoff while leftovers are \
ended, since their exits wake nobody), and only the watchdog ends the tree once mcp-bound is gone.",
    ),
    (
        "PLATFORMS",
        "Linux has every guarantee described here. macOS: the loop waits with poll(2), and with \
select(2) for a terminal, which poll(2) refuses; the tree is contained as group+mark (see \
CONTAINMENT and PROCESS TREE); no cgroup, so --contain cgroup, --memory-max, --pids-max and \
--cpu-max are exit 125 naming the platform (--limits best-effort goes on and lists them in \
contain.not_applied); no splice, so a flood is read and --flood-path splice is refused; no \
real-time signals; the journal is made durable with fcntl(F_FULLFSYNC), since fsync does not reach \
the disk there; usage.max_rss_kib is converted from the bytes macOS reports. If mcp-bound and its \
watchdog are both SIGKILLed, nothing ends the tree on macOS (no parent-death signal); on Linux the \
helper dies with mcp-bound. Any other Unix builds and refuses to run (125). Windows: the tree is \
held by a Job Object (contain.method job; --contain group and cgroup are 125) that ends it when \
mcp-bound ends, however; the loop is one I/O completion port, with a thread for each of the \
host's handles that cannot be overlapped; --signal takes BREAK (Ctrl-Break, only with a shared \
console), CLOSE (the server's stdin, the default under --mcp) and KILL (TerminateJobObject); \
exit.code is 32 bits, unsigned, and a crash's NTSTATUS is named in exit.ntstatus; --rlimit, \
--record-fd, --approve tty and --debug-window (no SIGUSR1) are 125; --stdin-close-grace needs --mcp; \
with --record or --journal the watchdog is mcp-bound started again (no fork there), handed each \
helper's job: when mcp-bound dies it ends the job, then writes supervisor_killed. \
The record's mcp_bound.os names the system.",
    ),
    (
        "MCP SERVER MODE",
        "With --mcp: the stdout guard lets through only complete lines that are one JSON object (UTF-8 \
throughout) and diverts the rest (banners, BOMs, bytes that are not UTF-8, partial lines, over-long lines) into the stderr capture, counted; \
stderr is forwarded live within a token bucket, drops counted and announced (at most one marker a second, \
nothing after a drop shown before it), and the exit echo is then \
the summary line only (no line twice in the host's log). The session layer (MCP SESSION) reads stdin and \
relays it to the server, and its EOF is the host's hang-up; with --session off the server inherits stdin, \
which mcp-bound only watches for hang-up without reading it (a socket shut down for writing counts). \
Either way the server then gets --stdin-close-grace (2s) to exit before its tree is terminated. Hosts close stdin, SIGTERM 2s later and SIGKILL 2s after that; with --grace 1s \
and --wait-delay 500ms the worst case ends, record written, by about 3.5s: keep \
stdin-close-grace + grace + wait-delay below the host's total.",
    ),
    (
        "DEBUG WINDOW",
        "With live stderr (--live, on under --mcp), SIGUSR1 to mcp-bound opens a debug window for \
--debug-window (5m): every line of the helper's stderr is forwarded, masked as always, without the \
rate limit; a reader of our stderr too slow for it still causes drops, counted as always, and the \
window lets through at most --debug-window-bytes (64 MiB), past which the budget returns. A second \
SIGUSR1 closes it early. When it closes the budget applies at once, and nothing held back is replayed. \
Live stderr and the stderr log mark where it opens and closes. The record lists each window in \
stderr.debug_windows (opened_at, closed_at, by signal, closed_by signal, time, bytes or exit, \
bytes_forwarded; the first 16, later ones counted in debug_windows_not_listed, and all of them in \
debug_windows_open_ms); the journal's terminal entry has their count and time open, and the summary \
line says debug window open N s. --debug-window 0 refuses the signal, said once on our stderr; \
without live stderr there is no window to open, said once too. A window changes neither the capture \
nor the counts: bytes_seen = live_bytes_forwarded + live_bytes_dropped + live_bytes_unsent.",
    ),
    (
        "APPROVAL",
        "--approve-cmd runs an approver before the helper starts, with the call as one JSON object on \
its stdin (argv exact); exit 0 approves. --approve tty asks on /dev/tty, default no. \
--approval-timeout is a wall-clock deadline nothing extends: at the deadline the approver's tree \
gets TERM and KILL together (--grace does not apply). Denied or expired: the helper is \
never started, state denied, exit 77, and one line says why, with the approver's first line of \
output (masked, at most 512 bytes). With --journal, the decision is its own entry between intent \
and terminal.",
    ),
    (
        "TOOL GATE",
        "Under the session layer, --tool-deny and --tool-allow decide each tools/call by its name (deny \
wins; with any allow, a tool matching none is denied), and --tool-approve-cmd asks an approver about \
the calls --tool-approve matches, on a --tool-approval-timeout clock nothing extends. A denied call \
never reaches the server, and denied tools are cut out of tools/list results. The gate reads a call \
as every server may: what it cannot decide as sent is refused with -32600 and journaled (reason \
untracked_id for a call or, under a policy, a tools/list whose id cannot be tracked; null_id; \
notification; params_not_object; name_not_string, never decided as the empty name; not_strict_json, \
arguments for an approver that strict JSON cannot carry; over_max_message_bytes). The approver gets \
the arguments the server runs; it carries the call's mark as MCP_BOUND_APPROVER, so what it leaves \
behind (a setsid grandchild, outside the server's cgroup) is killed when the approvers stop, and by \
the watchdog if mcp-bound dies. With --tool-approve-via host the person is asked instead, through \
the client: an elicitation/create of mcp-bound's own (ids mcp-bound-approval-NONCE-N, never the \
server's), a form with one boolean field, approve, whose message names the server, the tool, the \
masked arguments and params_sha256; accept with approve true sends the call's exact bytes, any \
other answer denies it, and at the deadline the request is withdrawn with notifications/cancelled. \
A 2026-07-28 client is answered input_required with the card and a requestState sealed with a \
per-run HMAC key (tool, params_sha256, request id, deadline); its retry's answer decides, an \
approved retry sends the original params under the retry's id, and a state changed, used twice \
or late is refused (request_state_invalid, request_state_replayed, tool_approval_expired). A \
client that declares no form elicitation cannot be asked: --tool-approve-cmd decides if given, \
else the call is denied (tool_approval_unavailable). An answer \
through a host is a user interface, not proof that a person saw it. A tool policy that cannot be \
applied (no session layer, --tool-approve without a way to ask, or --tool-approve-via command \
without --tool-approve-cmd) is exit 125 from any source, its variable named.",
    ),
    (
        "JOURNAL",
        "--journal appends an intent (synced, before dispatch; if it cannot be written the helper is \
not started) and a terminal entry, hash-chained. Each time it is opened it is checked on the \
descriptor: another user's file, one others may write, or one that is not a regular file is refused \
(125, nothing run); one others can read gets one warning (the record's mcp_bound.warnings). Entries are \
hash-chained: h is SHA-256 (HMAC-SHA256 with --journal-key) of \
the exact bytes of the line before its h field, prev links to the previous h. Appends take an \
exclusive flock, waited for up to 10 s (the terminal entry, and the watchdog's, at most --grace \
once a terminating signal came; one not written is said, and the record's \
mcp_bound.journal.terminal_written is false with the error); a torn tail is kept and accounted for by a recover entry (a whole last entry that \
lacks only its newline is finished and chained onto, and verify warns about it). mcp-bound verify checks \
every line's hash, strict shape, seq continuity, prev linkage and intent/decision/terminal pairing, \
reports the first break (HASH_MISMATCH, CHAIN_BREAK, SEQ_GAP, SEQ_ORDER, TORN_TAIL, \
ORPHAN_TERMINAL, DUPLICATE_CALL for a second intent while the call is open, MALFORMED, ANCHOR_MISSING, \
UNAPPROVED for a tools/call under a tool gate that reached the server without an approved mcp_decision for its exact params, \
UNKEYED when --key is given and the journal is not keyed: rewritten without the key) \
with its line, lists unfinished calls, uses memory for the calls in flight only, \
and exits 0 intact, 1 broken, 2 unusable. What it cannot prove alone: a cut tail, a rollback or a \
whole rewritten file pass unless checked with --anchor (a head h kept elsewhere); a correctly \
chained forged append passes unless the journal is keyed and the forger lacks the key. \
One line's shape is published as schema/journal.schema.json (mcp-bound --generate schema-journal), \
for each kind: genesis, intent, decision, terminal, recover, and under the session layer mcp_request, \
mcp_response, mcp_task, mcp_decision, mcp_tool_drift and mcp_restart. An mcp_restart is a new \
incarnation under --restart: its attempt, its pid, and how the one before it ended.",
    ),
    (
        "VERIFY",
        "mcp-bound verify [--anchor HEX] [--json] [--key FILE] JOURNAL. --anchor HEX: a head h \
recorded earlier (from \"OK: ... h=<hex>\"), which must still be in the journal; this catches a cut \
tail, a rollback or a rewrite. --json: print the report as one JSON object (ok, entries, journal_id, \
keyed, head, validated_lines, break, anchor, anchor_found, unfinished, final_newline_missing) \
instead of text. --key FILE: the key of a keyed journal (the one given to --journal-key). Exit 0 \
intact (warnings allowed), 1 integrity failure, 2 usage or I/O error. For verify and every \
subcommand after it, and --generate: a reader that goes away (| head, | grep -q) ends what is \
printed without a word, and the exit status is still the one the command would have had (log reads \
on to the journal's end to give it); another failure to write stdout (a full disk) is one line on \
stderr and exit 2 (125 for --generate and --help).",
    ),
    (
        "LOG",
        "mcp-bound log [--sessions | --requests | --call ID] [-f] [--json] [--wide] [--since TIME] \
[--until TIME] [--session ID] [--state STATE] [--tool GLOB] [--anchor HEX] [--key FILE] JOURNAL reads the journal as verify checks \
it, in one streaming pass, and prints one line per call: the intent's time, call and session ids, \
end state, exit, duration, stderr seen and kept, the approval before the launch, its MCP requests \
by outcome and the server's restarts, and the command; --sessions prints one line per session \
instead (calls, first and last time, ends by state, restarts, tool calls), and --call ID one \
call's whole lifecycle, an entry a line (with --json, its entries as journaled). --since and --until \
take RFC 3339 or a DURATION ago (1h, 90) and apply to the intent's time; --state unfinished names calls \
with no terminal entry; --tool GLOB keeps calls in which a matching tool reached the server. --json \
writes JSON Lines (schema/log.schema.json). --requests prints one line per MCP request instead (its \
call, id, method, the gate's decision and wait, outcome, duration, tool), at its response or its \
call's end; the time filters then apply to the request's time and --tool to its tool. -f follows \
the journal as it grows, as tail -f: each call's line as it ends; a path that names another file, \
or a file cut shorter, is read again from its start, said on stderr; when its reader goes, it ends \
(at once on Linux and macOS, at its next row on Windows). A break is reported on stderr \
and the rows after it are marked ! (verified false); a torn last line is a warning. Exit 0, 1 the \
chain is broken, 2 usage or I/O error.",
    ),
    (
        "CHECK",
        "mcp-bound check [--expect-tool GLOB]... [--forbid-tool GLOB]... [--max-duration DUR \
[--requests]] [--expect-state STATE] [--no-unfinished] [--no-unapproved] [--expect FILE] \
[--since TIME] [--until TIME] [--format text|junit] [--anchor HEX] [--key FILE] JOURNAL holds a \
journal to the run expected of it, in the same streaming pass as verify; the verify result is the \
first expectation, so a journal that fails verification fails the check (a torn last line is a \
warning). A tool counts as called when a call to it reached the server: a gate's denial is \
reported but is no call, so --forbid-tool passes and --expect-tool fails on it. --max-duration \
applies to each call (with --requests, to each MCP request) and names the worst offender. \
--expect-state: every call ended so (an unfinished one did not); --state and --expect-state take \
the record's states, and another word is a usage error that lists them. --no-unfinished: every call has \
its terminal entry. --no-unapproved: every tool call that reached the server had an approved \
mcp_decision (a call with no tool gate has none), and none was left waiting for one. --expect \
FILE: a JSON file {\"lifecycle\": [{\"kind\": \"intent\"}, {\"kind\": \"mcp_response\", \
\"outcome\": \"result\"}, ...]}, each step an entry's kind and any of its fields, compared for \
equality; it holds when one call's entries match the steps in order (others between them \
allowed). --since and --until apply to a call's intent time. Text prints PASS or FAIL and the \
reason, a line per expectation; --format junit writes one JUnit testcase per expectation. Exit 0 \
every expectation held, 1 one did not, 2 usage or I/O error.",
    ),
    (
        "REPORT",
        "mcp-bound report -o FILE [--anchor HEX] [--key FILE] JOURNAL writes one self-contained HTML \
file (- for stdout; a file is replaced atomically): the verify result and head hash, a timeline per \
session drawn as SVG (calls and their MCP requests as bars coloured by end state, approval waits, \
restarts and debug windows marked), the calls and tool calls in tables sorted by a click on a heading, \
stderr seen against kept, and p50/p95/p99 per tool (from a sketch, within 2%). Nothing is fetched: \
its style and one script are inline, and its Content-Security-Policy lets only that script run. \
Everything shown is masked as the journal is, and escaped. Memory is bounded by what is shown \
(200 sessions drawn, 300 calls a session, 200 requests a call, 5000 rows, 256 tools, each \
stderr excerpt's first and last 2 KiB; the rest counted). Each \
restart (mcp_restart) is drawn at its time; debug windows are flagged by their count. Exit 0, 1 the chain is broken (the \
page says where and marks the rows after it), 2 usage or I/O error.",
    ),
    (
        "TOOL PINNING",
        "--tool-pin FILE holds a server to the tools first trusted. A server with no pins in FILE \
gets its first complete tools/list (every page, until no nextCursor) pinned: per tool, the SHA-256 \
of its whole object but name (and of each field) as canonical JSON; a pin an earlier mcp-bound \
wrote holds title, description, inputSchema, outputSchema and annotations, compared as before \
until an accept rewrites it. Later, a \
tool whose definition differs from its pin, or that has none, is removed from tools/list results, \
a tools/call to it is answered -32000 (reason tool_changed, by pin) without reaching the server, \
and the journal gets an mcp_tool_drift entry (the tool, changed or new, the fields that differ); \
the file keeps the latest definition seen. The file is keyed by the server's command, each word \
masked, or --tool-pin-key NAME, never by the name the server gives itself: a run under another \
serverInfo.name is a drift (change server_renamed), its tools still judged by the pins; keys an \
earlier mcp-bound wrote (NAME (CMD), CMD) are folded into it, the latest accept winning. It is \
changed under a lock on FILE.lock and replaced atomically, \
refused when it is not ours or others can write it, and read again when it changes. \
mcp-bound pin [--accept NAME@SHA256]... [--key KEY] [--json] FILE lists the pins and what waits \
to be accepted, with the first 12 hex digits of each definition's SHA-256; --accept trusts the \
definition waiting for NAME only when its SHA-256 begins with the hex given (8 digits at least, \
split at the last @), so a definition listed after it was read is refused (--key when NAME waits \
under several servers). Exit 0 nothing waits, 1 something does, 2 usage or I/O error. mcp-bound never invents a \
list_changed notification.",
    ),
    (
        "OPENTELEMETRY",
        "Spans go to an OTLP/HTTP collector (protobuf, http:// only: for TLS, send to a local \
OpenTelemetry Collector, which forwards). Export is on when OTEL_EXPORTER_OTLP_ENDPOINT (the path \
v1/traces is appended) or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as given) is set, unless \
OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none; --otel on or off wins over all of them (on with \
no endpoint: http://localhost:4318/v1/traces). Also read: OTEL_EXPORTER_OTLP_HEADERS and \
OTEL_EXPORTER_OTLP_TRACES_HEADERS (key=value,... percent-decoded; sent with each export, never printed \
or recorded), OTEL_EXPORTER_OTLP_PROTOCOL and OTEL_EXPORTER_OTLP_TRACES_PROTOCOL (http/protobuf only), \
OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_TIMEOUT (one export, 10s), \
OTEL_BSP_EXPORT_TIMEOUT (the flush bound when --otel-flush-timeout is not given; else 1s), \
OTEL_BSP_MAX_QUEUE_SIZE (2048), OTEL_BSP_MAX_EXPORT_BATCH_SIZE (512), OTEL_BSP_SCHEDULE_DELAY (5000 ms), \
and TRACEPARENT and TRACESTATE (the environment carrier: the call's span is their child). \
A setting that cannot be used (https://, grpc, a header without =) turns export off with one line \
on stderr and the reason in the record's otel.error; with --otel on given on the command line it is a \
usage error (exit 125). The helper keeps every OTEL_* variable. Spans: one per call (kind internal, \
named mcp-bound PROGRAM: state, exit, cancel reason, stderr counts, usage, containment, call_id and \
session_id; the record's events as span events), and under the session layer one per client request \
(kind client, named METHOD or tools/call TOOL, after the MCP semantic conventions: mcp.method.name, \
jsonrpc.request.id, gen_ai.tool.name, gen_ai.operation.name, mcp.protocol.version, network.transport \
pipe, error.type request_timeout, server_exited, tool_denied or the JSON-RPC code; the gate's decision \
as an event; a request cut off by the host's end of the session says mcp_bound.interrupted and is no \
error: it may have acted). A request span is the child of the call's span, or, when the request carries a valid \
traceparent (and tracestate) in params._meta, of the client's span, with a link to the call's span. \
The bytes forwarded do not change, unless --otel-propagate (under the session layer): then each \
request's params._meta.traceparent names mcp-bound's span for it (the value replaced, or the key or \
_meta inserted; a batch, a line held for approval or read leniently, or an ambiguous _meta goes as it \
came), its span says mcp_bound.propagated, and the journal's params_sha256 is still of what the \
client sent. \
One metric, mcp.client.operation.duration (a cumulative histogram in seconds by mcp.method.name, \
gen_ai.tool.name, error.type and mcp.protocol.version, from the request spans that reached the \
exporter; at most 256 attribute sets, then otel.metric.overflow), goes to OTEL_EXPORTER_OTLP_METRICS_ENDPOINT \
or the general endpoint's v1/metrics (never with only a traces endpoint; off with \
OTEL_METRICS_EXPORTER=none) every OTEL_METRIC_EXPORT_INTERVAL (60000 ms) with news, and at the end. \
Never exported: arguments, results, stderr text; every string is masked. Off, nothing of this runs: \
no thread, no socket. On, one exporter thread takes finished spans from a bounded queue and never \
touches the helper's pipes, signals or clock; a full queue, a slow or refusing collector drop spans, \
counted, and never fail or slow the call. The endpoint's name is resolved before dispatch (waiting at \
most 250ms). The record and the journal are written first; then the exit waits at most the flush \
bound for the last export, and stops waiting at a terminating signal. The record's otel says endpoint, propagate, spans_queued, spans_exported, \
spans_pending (queued, neither exported nor failed yet), spans_dropped and error as known when it was written; \
with --record the file is written again, atomically, after the flush, with what it sent.",
    ),
    (
        "REDACTION",
        "A safety net, not a guarantee: helpers must not print credentials. Captured text is masked \
when it is written out (record, echo, journal, live stderr, argv): Authorization headers, Bearer \
tokens, private key blocks, AWS/GitHub/GitLab/Slack/sk- tokens, password=/token=/secret= pairs \
(with = or :; a label that opens a sentence, such as secret: the config key is missing, is prose and is \
left alone: the value is a plain word followed by another, one of them a function word such as the, is, \
not, cannot), and --redact patterns. At a truncation cut, what sits between the cut and the nearest line break is \
masked as [cut] (at most 64 bytes at the cut), so half a token, or the value after a cut label, never \
shows; live stderr and the stderr log treat the point where a line over 4 KiB is let through as such \
a cut on both sides. --help names environment variables, never their values. \
Error text and every line mcp-bound prints about a call are masked too. Masking cannot undo a \
secret that already reached a terminal or another log. The environment is never recorded.",
    ),
    (
        "CAVEATS",
        "The helper is not in the terminal's foreground process group: an interactive helper that \
reads from a terminal is stopped by SIGTTIN. mcp-bound is made for pipes (MCP hosts, scripts). \
Unlike GNU timeout, a timed-out call exits 124 even when KILL was needed; use --preserve-status \
for the helper's own status (137 after KILL).",
    ),
];
