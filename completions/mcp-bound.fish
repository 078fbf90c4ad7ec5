complete -c mcp-bound -l timeout -d 'Deadline for the helper, from its start; 0 means none. GNU syntax: 10, 1.5, 1e-3, 500ms, 30s, 5m, 1h, 1d' -r
complete -c mcp-bound -s s -l signal -d 'Signal sent to the helper\'s group at the deadline: a name (any case, SIG optional) or a number' -r
complete -c mcp-bound -s k -l grace -l kill-after -d 'Time between the first signal and SIGKILL to the whole tree; 0 kills at once' -r
complete -c mcp-bound -l wait-delay -d 'After the helper exits, how long to wait for descendants to release its pipes before terminating them; also the wait for EOF after the final KILL' -r
complete -c mcp-bound -l head-bytes -d 'Bytes of the start of stderr to keep' -r
complete -c mcp-bound -l tail-bytes -d 'Bytes of the end of stderr to keep (a ring: memory stays constant)' -r
complete -c mcp-bound -l excerpt-bytes -d 'Most bytes of captured stderr that mcp-bound prints to its own stderr at exit' -r
complete -c mcp-bound -l echo -d 'When to print the stderr excerpt to mcp-bound\'s stderr at exit' -r -f -a "never\t''
on-failure\t''
always\t''"
complete -c mcp-bound -l record -d 'Write the record to PATH: "dispatched" before the helper starts, replaced atomically at the end (mode 0600; a symlink is refused)' -r -F
complete -c mcp-bound -l record-fd -d 'Write the record as one line to descriptor N at the end (not 0 or 1: stdout belongs to the helper)' -r
complete -c mcp-bound -l call-id -d 'The call\'s id in the record (default: a random id)' -r
complete -c mcp-bound -l session-id -d 'The session\'s id in the record' -r
complete -c mcp-bound -l preserve-status -d 'On timeout, exit with the helper\'s own status instead of 124'
complete -c mcp-bound -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcp-bound -s V -l version -d 'Print version'
