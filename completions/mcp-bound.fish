# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_mcp_bound_global_optspecs
    string join \n timeout= s/signal= k/grace= wait-delay= preserve-status rlimit= contain= memory-max= pids-max= cpu-max= limits= head-bytes= tail-bytes= excerpt-bytes= echo= flood-path= redact= stderr-log= stderr-log-size= stderr-log-keep= stderr-log-timestamps stderr-log-optional record= record-keep= record-fd= call-id= session-id= mcp stdout-guard= max-message-bytes= live= live-rate= live-burst= stdin-close-grace= session= request-timeout= request-timeout-resets-on-progress agent-excerpt-bytes= max-in-flight= restart= max-restarts= restart-window= restart-backoff= debug-window= debug-window-bytes= approve-cmd= approve= approval-timeout= tool-allow= tool-deny= tool-approve-cmd= tool-approve-via= tool-approve= tool-approval-timeout= max-pending-approvals= tool-pin= tool-pin-key= journal= journal-excerpt-bytes= journal-key= journal-requests= otel= otel-flush-timeout= otel-propagate generate= h/help V/version
end

function __fish_mcp_bound_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_mcp_bound_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_mcp_bound_using_subcommand
    set -l cmd (__fish_mcp_bound_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l timeout -d 'Deadline for the helper, from its start; 0 or inf means none. GNU syntax: 10, 1.5, 1e-3, 0x1p-3, 500ms, 30s, 5m, 1h, 1d [default: off]' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -s s -l signal -d 'Signal sent to the helper\'s group at the deadline: a name (any case, SIG optional; RTMIN+N, RTMAX-N where the system has real-time signals: not macOS) or a number. CLOSE instead closes the server\'s stdin, the MCP shutdown (needs the session layer: --mcp). On Windows: BREAK (Ctrl-Break, to a helper that shares our console), CLOSE or KILL [default: TERM; on Windows CLOSE with --mcp, else BREAK with a console, else KILL]' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -s k -l grace -l kill-after -d 'Time between the first signal and SIGKILL to the whole tree; 0 kills at once. Also spelled --kill-after, as GNU timeout names it [default: 5s; 1s with --mcp]' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l wait-delay -d 'After the helper exits, how long to wait for descendants to release its pipes before terminating them; also the wait for EOF after the final KILL [default: 1s; 500ms with --mcp]' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l rlimit -d 'A resource limit for the helper, set before it starts, as prlimit takes it (repeatable): NAME=SOFT[:HARD] with NAME one of as, core, cpu, data, fsize, nofile, nproc, stack; sizes take units (64MiB), cpu is seconds; unlimited for none. One that cannot be set (a hard limit raised without CAP_SYS_RESOURCE, whatever the uid) is exit 125, and nothing runs' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l contain -d 'How the helper\'s tree is contained, so that nothing outlives mcp-bound, even when it is SIGKILLed: cgroup (Linux: a cgroup v2 of its own, which everything it forks stays in), group (its process group, and what leaves it found by the environment mark the tree inherits), job (Windows: a Job Object, the only choice there), or auto (cgroup when one can be made; macOS has none; job on Windows). A watchdog ends the tree if mcp-bound dies (on Windows, the job itself, and with --record or --journal a watchdog that then writes supervisor_killed)' -r -f -a "auto\t''
cgroup\t''
group\t''
job\t'Windows: a Job Object'"
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l memory-max -d 'Most memory the whole tree may use (cgroup memory.max); the kernel\'s OOM killer acts inside the cgroup, and the record counts its kills. Needs --contain cgroup and the memory controller on Linux; on Windows the job\'s JobMemoryLimit' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l pids-max -d 'Most processes (and threads) the whole tree may have (cgroup pids.max): a fork bomb stops there. Needs --contain cgroup and the pids controller on Linux; on Windows the job\'s ActiveProcessLimit (processes only)' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l cpu-max -d 'Most CPU the whole tree may use, in CPUs (0.5: half of one; cgroup cpu.max). Needs --contain cgroup and the cpu controller on Linux; on Windows the job\'s CpuRate, a hard cap' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l limits -d 'What to do when a cgroup limit cannot be applied (no cgroup, or no such controller): strict refuses the call (125, nothing runs); best-effort goes on and the record lists what was not applied' -r -f -a "strict\t''
best-effort\t''"
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l head-bytes -d 'Bytes of the start of stderr to keep' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l tail-bytes -d 'Bytes of the end of stderr to keep (a ring: memory stays constant)' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l excerpt-bytes -d 'Most bytes of captured stderr that mcp-bound prints to its own stderr at exit' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l echo -d 'When to print the stderr excerpt to mcp-bound\'s stderr at exit: on-failure is a non-zero exit, except 141 for a stdout reader that stopped reading (a pipeline into head)' -r -f -a "never\t''
on-failure\t''
always\t''"
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l flood-path -d 'How a stderr flood is drained: auto times reads and moves the flood inside the kernel (splice, Linux only: elsewhere a flood is read) while copying it is slow and moving proves faster; read always copies; splice always moves. Speed only: what is kept and counted is the same' -r -f -a "auto\t'Time reads; move the flood inside the kernel while copying is slow and moving proves faster'
read\t'Always copy (what --live uses)'
splice\t'Always move a flood inside the kernel'"
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l redact -d 'Also mask matches of REGEX (repeatable) in everything written out of the capture; built-in patterns cover Authorization headers, Bearer tokens, private keys, common API token shapes and password=/token=/secret= pairs' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l stderr-log -d 'Write the helper\'s stderr (every drained byte, masked) to PATH as it arrives, rotated by size: PATH.1 … PATH.N are the older files. Mode 0600; a symlink is refused. If another mcp-bound holds PATH, this one writes PATH.<pid>' -r -F
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l stderr-log-size -d 'Rotate the stderr log when the next line would take it past this size (a longer line is split at it)' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l stderr-log-keep -d 'Older stderr log files kept (PATH.1 … PATH.N): the disk used stays under size × (N + 1)' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l record -d 'Write the record to PATH: "dispatched" before the helper starts, replaced atomically at the end (mode 0600; a symlink is refused). In the file name, {call_id} is the call\'s id and {pid} mcp-bound\'s pid ({{ and }} are braces), so that each run writes its own (a host that starts the same command again, a client\'s probe sibling)' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l record-keep -d 'With a --record template: after each run, keep the newest N final records it made and remove the others (a record still in flight is never removed)' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l record-fd -d 'Write the record as one line to descriptor N at the end (not 0 or 1: stdout belongs to the helper)' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l call-id -d 'The call\'s id in the record (default: a random id). It may name a --record file, so it names no directory, here or on Windows: not . or .., and none of / \\ : * ? " < > |' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l session-id -d 'The session\'s id in the record' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l stdout-guard -d 'Let through only complete stdout lines that are one JSON object; divert everything else into the stderr capture [default: off; jsonrpc with --mcp]' -r -f -a "off\t''
jsonrpc\t''"
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l max-message-bytes -d 'With the guard, a longer stdout line is diverted, never held (at least 1)' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l live -d 'Forward the helper\'s stderr to ours as it arrives, within --live-rate and --live-burst; drops are counted and announced [default: off; on with --mcp]' -r -f -a "true\t''
false\t''"
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l live-rate -d 'Live stderr budget: bytes per second (at least 1; --live=false turns live output off)' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l live-burst -d 'Live stderr budget: most bytes at once (also the bound on what waits to be written)' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l stdin-close-grace -d 'After our stdin closes (the MCP shutdown), give the helper this long to exit before terminating it [default: off; 2s with --mcp]' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l session -d 'The session layer: relay our stdin to the server line by line, track each request, answer for the server when it cannot (timeouts, a crash); off: the helper inherits our stdin [default: off; jsonrpc with --mcp unless --stdout-guard off]' -r -f -a "off\t''
jsonrpc\t''"
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l request-timeout -d 'Answer a request with no response in time with error -32001, and send the server notifications/cancelled; its late response is dropped. METHOD=DURATION sets one method\'s (repeatable); 0 or inf: none. The default times calls: not a subscriptions/listen stream nor a 2025 tasks/result, which wait by design, nor initialize and server/discover, which wait on the server\'s start and which the host times (a method\'s own value still applies to them)' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l agent-excerpt-bytes -d 'Most bytes of the server\'s last stderr lines (masked) in the message of an error mcp-bound answers for it (the server gone, a request timed out: then what it wrote while the request ran), whole lines where possible; some hosts show the model only error.message. data.mcp_bound.stderr_tail is kept whole. 0: none; at most 2K' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l max-in-flight -d 'Most client requests waiting for the server at once; past it, a request is answered with an error at once (at least 1)' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l restart -d 'Start the server again when it exits on its own: never, on-failure (non-zero exit or a signal) or always. Requests in flight are answered (-32000), never re-sent; a legacy client\'s initialize is replayed (a 2026-07-28 session has none). Never after stdin EOF, a signal from the host or --timeout' -r -f -a "never\t''
on-failure\t'After an exit with a non-zero code or by a signal'
always\t'After any exit'"
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l max-restarts -d 'Most restarts within --restart-window; past it the session ends with the server' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l restart-window -d 'The window --max-restarts counts in' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l restart-backoff -d 'The wait before the first restart in the window; each further one doubles it, up to 10s' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l debug-window -d 'SIGUSR1 to mcp-bound opens a debug window this long: live stderr is not rate-limited (still masked, within --debug-window-bytes); a second SIGUSR1 closes it. 0: SIGUSR1 is refused. The record lists each window' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l debug-window-bytes -d 'Most bytes of the helper\'s stderr one debug window lets through; past it the budget returns' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l approve-cmd -d 'Before the helper starts, run COMMAND (split into words like a shell does; no shell is run) with the call as one JSON object on its stdin; exit 0 approves, anything else denies. It runs in its own process group, bounded, and is terminated at the deadline' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l approve -d 'Before the helper starts, ask on the controlling terminal (/dev/tty, never stdin or stdout); the default answer is no' -r -f -a "tty\t''"
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l approval-timeout -d 'Wall-clock deadline for the approval, from the request; nothing extends it. When it passes, the call is denied as expired (exit 77)' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l tool-allow -d 'Let through only the tools/call whose tool (params.name, as the server knows it) matches one of these globs (* and ?; comma-separated, repeatable); the others are denied and removed from tools/list' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l tool-deny -d 'Deny the tools/call whose tool matches one of these globs, and remove those tools from tools/list; deny wins over --tool-allow. A denied call never reaches the server: the client gets error -32000 (reason tool_denied)' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l tool-approve-cmd -d 'Before each tools/call the policy allows and --tool-approve matches reaches the server, run COMMAND (split like a shell; no shell) with the call as one JSON object on its stdin (tool, arguments, params_sha256, request_id, call_id, session_id, argv); exit 0 approves, anything else denies, its first output line saying why. Other requests keep flowing while it decides' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l tool-approve-via -d 'Who decides the calls --tool-approve matches: command (--tool-approve-cmd) or host (the person, asked through the client with an MCP elicitation, or in 2026-07-28 an input_required answer with a sealed requestState; when the client cannot be asked, --tool-approve-cmd decides if given, else the call is denied) [default: command]' -r -f -a "command\t'`--tool-approve-cmd`'
host\t'The person, through the client (MCP elicitation)'"
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l tool-approve -d 'Which tools are asked about (--tool-approve-cmd or --tool-approve-via host; globs, comma-separated, repeatable) [default: *]' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l tool-approval-timeout -d 'Wall-clock deadline for one call\'s approval, from the call\'s arrival; nothing extends it. At it the approver\'s tree gets TERM and KILL together, and the call is answered -32000 (reason tool_approval_expired), never sent' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l max-pending-approvals -d 'Most calls waiting for approval at once; past it a call is answered -32000 at once (reason too_many_pending_approvals)' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l tool-pin -d 'Hold the server to the tools first trusted: the first complete tools/list (every page) is pinned in FILE (per tool, a digest of its whole object but name); later, a tool that differs from its pin, or has none, is hidden from tools/list, its calls answered -32000 (reason tool_changed), and journaled (mcp_tool_drift), until `mcp-bound pin FILE --accept NAME@SHA256`' -r -F
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l tool-pin-key -d 'The server\'s key in the --tool-pin file [default: its command, each word masked]' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l journal -d 'Append an intent (before dispatch, synced) and a terminal entry to this hash-chained journal. If the intent cannot be written, the helper is not started' -r -F
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l journal-excerpt-bytes -d 'Most bytes of stderr excerpt in the journal\'s terminal entry; 0 for none' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l journal-key -d 'Key the journal: h becomes HMAC-SHA256 with the key in FILE (at least 16 bytes; ours or root\'s, private: mode 0600 or stricter), so an append forged without the key fails verification' -r -F
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l journal-requests -d 'Under the session layer, which client requests get an mcp_request entry (synced before the request reaches the server) and an mcp_response entry: tools (tools/call, resources/read, prompts/get), all, or none' -r -f -a "tools\t'tools/call, resources/read and prompts/get: the calls that act or read'
all\t''
none\t''"
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l otel -d 'Send OpenTelemetry spans (OTLP/HTTP protobuf, `http://` only): one per call, and one per MCP request under the session layer. Set up by the OTel SDK variables (OTEL_EXPORTER_OTLP_ENDPOINT and the rest; see OPENTELEMETRY in the man page) [default: on when an endpoint is set; off when OTEL_SDK_DISABLED=true]' -r -f -a "off\t''
on\t''"
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l otel-flush-timeout -d 'Most time the exit waits for the last spans to reach the collector, after the record and the journal are written [default: OTEL_BSP_EXPORT_TIMEOUT, else 1s]' -r
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l generate -d 'Print a document to stdout and exit: the man page, a completion script, or the record\'s or a journal line\'s JSON Schema (nothing is run)' -r -f -a "man\t'The man page (roff), as man/mcp-bound.1'
complete-bash\t'The bash completion script'
complete-zsh\t'The zsh completion script'
complete-fish\t'The fish completion script'
schema-record\t'The record\'s JSON Schema, as schema/record.schema.json'
schema-journal\t'The JSON Schema of one journal line, as schema/journal.schema.json'"
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l preserve-status -d 'On timeout, exit with the helper\'s own status instead of 124'
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l stderr-log-timestamps -d 'Prefix each stderr log line with an RFC 3339 UTC time, taken when the line was read'
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l stderr-log-optional -d 'A stderr log that cannot be opened does not stop the call (the record says why); otherwise it is exit 125 and nothing runs'
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l mcp -d 'MCP stdio server mode: --stdout-guard jsonrpc, --live, --stdin-close-grace 2s, --grace 1s, --wait-delay 500ms (each can still be set on its own)'
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l request-timeout-resets-on-progress -d 'A notifications/progress for a request starts its --request-timeout again'
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -l otel-propagate -d 'Rewrite each request\'s `params._meta.traceparent` to mcp-bound\'s request span, so that an instrumented server\'s spans are its children (the bytes forwarded change: off by default; the journal\'s params_sha256 stays the client\'s)'
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -s V -l version -d 'Print version'
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -a "verify" -d 'Check a journal offline: hashes, chain, order, pairing. Exit 0 intact (warnings allowed), 1 integrity failure, 2 usage or I/O error'
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -a "log" -d 'Read a journal as it is verified: one line per call (time, call, session, state, exit, duration, stderr seen/kept, approval, its MCP requests, the command), or per session. Exit 0, 1 the chain is broken (the rows after the break are marked !), 2 usage or I/O error'
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -a "check" -d 'Check a journal against the run expected of it: tools called or not, durations, end states, approvals, and a lifecycle in order (--expect FILE). Exit 0 every expectation holds, 1 one does not (or the chain is broken), 2 usage or I/O error'
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -a "report" -d 'Write one self-contained HTML file of a journal: a timeline per session, the calls and tool calls in sortable tables, p50/p95/p99 per tool, stderr seen against kept, and the verify result. Exit 0, 1 the chain is broken (the report says where), 2 usage or I/O error'
complete -c mcp-bound -n "__fish_mcp_bound_needs_command" -a "pin" -d 'List a --tool-pin file\'s pins and what drifted from them; --accept NAME@SHA256 trusts the definition seen for NAME whose sha256 that is. Exit 0 nothing waits to be accepted, 1 something does, 2 usage or I/O error'
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand verify" -l anchor -d 'A head h recorded earlier (from "OK: ... h=<hex>"): it must still be in the journal' -r
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand verify" -l key -d 'The key of a keyed journal (private: ours or root\'s, mode 0600 or stricter)' -r -F
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand verify" -l json -d 'Print the report as one JSON object'
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand verify" -s h -l help -d 'Print help'
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand log" -l anchor -d 'A head h recorded earlier (from "OK: ... h=<hex>"): it must still be in the journal' -r
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand log" -l key -d 'The key of a keyed journal (private: ours or root\'s, mode 0600 or stricter)' -r -F
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand log" -l call -d 'One call\'s whole lifecycle, an entry a line (with --json, the entries themselves)' -r
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand log" -l since -d 'Only calls whose intent is at or after TIME: RFC 3339, or a duration ago (1h)' -r
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand log" -l until -d 'Only calls whose intent is at or before TIME: RFC 3339, or a duration ago' -r
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand log" -l session -d 'Only the calls of this session id' -r
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand log" -l state -d 'Only calls that ended in this state (unfinished: no terminal entry)' -r
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand log" -l tool -d 'Only calls in which a tool matching this glob was called (reached the server)' -r
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand log" -l sessions -d 'One line per session: its calls, first and last time, ends by state, restarts, tool calls'
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand log" -l json -d 'JSON Lines of the same rows (schema/log.schema.json)'
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand log" -l wide -d 'Do not cut lines at the terminal\'s width'
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand log" -l requests -d 'One line per MCP request journaled instead of per call: its call, id, method, the gate\'s decision, outcome, duration and tool (--since, --until, --session and --tool apply to it)'
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand log" -s f -l follow -d 'Follow: show the calls as they end, as tail -f does; a replaced or truncated journal is noticed and read from its start'
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand log" -s h -l help -d 'Print help'
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand check" -l anchor -d 'A head h recorded earlier (from "OK: ... h=<hex>"): it must still be in the journal' -r
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand check" -l key -d 'The key of a keyed journal (private: ours or root\'s, mode 0600 or stricter)' -r -F
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand check" -l expect-tool -d 'A tool matching this glob was called: a call to it reached the server (a denial is not a call). Repeatable' -r
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand check" -l forbid-tool -d 'No tool matching this glob was called (a denial is not a call). Repeatable' -r
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand check" -l max-duration -d 'No call took longer than DUR (with --requests, no MCP request); the worst offender is named' -r
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand check" -l expect-state -d 'Every call ended in this state (completed, timed_out, shut_down, ...)' -r
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand check" -l expect -d 'A JSON file of the lifecycle one call should produce, matched in order (see the man page)' -r -F
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand check" -l since -d 'Only calls whose intent is at or after TIME: RFC 3339, or a duration ago (1h)' -r
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand check" -l until -d 'Only calls whose intent is at or before TIME: RFC 3339, or a duration ago' -r
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand check" -l format -d 'text (a line per expectation) or junit (one testcase per expectation, for CI)' -r -f -a "text\t''
junit\t''"
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand check" -l requests -d '--max-duration applies to each MCP request rather than to each call'
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand check" -l no-unfinished -d 'Every call has its terminal entry'
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand check" -l no-unapproved -d 'Every tool call that reached the server was approved by the gate (an mcp_decision), and none was left waiting for a decision'
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand check" -s h -l help -d 'Print help'
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand report" -l anchor -d 'A head h recorded earlier (from "OK: ... h=<hex>"): it must still be in the journal' -r
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand report" -l key -d 'The key of a keyed journal (private: ours or root\'s, mode 0600 or stricter)' -r -F
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand report" -s o -l output -d 'Where the HTML goes (replaced atomically); - for stdout' -r -F
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand report" -s h -l help -d 'Print help'
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand pin" -l accept -d 'Trust the latest definition seen for this tool, bound to the sha256 shown for it: at least its first 8 hex digits, split from NAME at the last @ (repeatable)' -r
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand pin" -l key -d 'The server\'s key, when a tool of that name waits under several' -r
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand pin" -l json -d 'Print the file\'s pins as one JSON object'
complete -c mcp-bound -n "__fish_mcp_bound_using_subcommand pin" -s h -l help -d 'Print help'
