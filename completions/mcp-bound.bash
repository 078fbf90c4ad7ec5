_mcp__bound() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="mcp__bound"
                ;;
            mcp__bound,check)
                cmd="mcp__bound__subcmd__check"
                ;;
            mcp__bound,log)
                cmd="mcp__bound__subcmd__log"
                ;;
            mcp__bound,pin)
                cmd="mcp__bound__subcmd__pin"
                ;;
            mcp__bound,report)
                cmd="mcp__bound__subcmd__report"
                ;;
            mcp__bound,verify)
                cmd="mcp__bound__subcmd__verify"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        mcp__bound)
            opts="-s -k -h -V --timeout --signal --kill-after --grace --wait-delay --preserve-status --rlimit --contain --memory-max --pids-max --cpu-max --limits --head-bytes --tail-bytes --excerpt-bytes --echo --flood-path --redact --stderr-log --stderr-log-size --stderr-log-keep --stderr-log-timestamps --stderr-log-optional --record --record-keep --record-fd --call-id --session-id --mcp --stdout-guard --max-message-bytes --live --live-rate --live-burst --stdin-close-grace --session --request-timeout --request-timeout-resets-on-progress --agent-excerpt-bytes --max-in-flight --restart --max-restarts --restart-window --restart-backoff --debug-window --debug-window-bytes --approve-cmd --approve --approval-timeout --tool-allow --tool-deny --tool-approve-cmd --tool-approve-via --tool-approve --tool-approval-timeout --max-pending-approvals --tool-pin --tool-pin-key --journal --journal-excerpt-bytes --journal-key --journal-requests --otel --otel-flush-timeout --otel-propagate --generate --help --version verify log check report pin"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --signal)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --grace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kill-after)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -k)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --wait-delay)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rlimit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --contain)
                    COMPREPLY=($(compgen -W "auto cgroup group job" -- "${cur}"))
                    return 0
                    ;;
                --memory-max)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pids-max)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cpu-max)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --limits)
                    COMPREPLY=($(compgen -W "strict best-effort" -- "${cur}"))
                    return 0
                    ;;
                --head-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tail-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --excerpt-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --echo)
                    COMPREPLY=($(compgen -W "never on-failure always" -- "${cur}"))
                    return 0
                    ;;
                --flood-path)
                    COMPREPLY=($(compgen -W "auto read splice" -- "${cur}"))
                    return 0
                    ;;
                --redact)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stderr-log)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stderr-log-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stderr-log-keep)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --record)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --record-keep)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --record-fd)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --call-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stdout-guard)
                    COMPREPLY=($(compgen -W "off jsonrpc" -- "${cur}"))
                    return 0
                    ;;
                --max-message-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --live)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --live-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --live-burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stdin-close-grace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session)
                    COMPREPLY=($(compgen -W "off jsonrpc" -- "${cur}"))
                    return 0
                    ;;
                --request-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --agent-excerpt-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-in-flight)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --restart)
                    COMPREPLY=($(compgen -W "never on-failure always" -- "${cur}"))
                    return 0
                    ;;
                --max-restarts)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --restart-window)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --restart-backoff)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --debug-window)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --debug-window-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --approve-cmd)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --approve)
                    COMPREPLY=($(compgen -W "tty" -- "${cur}"))
                    return 0
                    ;;
                --approval-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tool-allow)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tool-deny)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tool-approve-cmd)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tool-approve-via)
                    COMPREPLY=($(compgen -W "command host" -- "${cur}"))
                    return 0
                    ;;
                --tool-approve)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tool-approval-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-pending-approvals)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tool-pin)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tool-pin-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --journal)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --journal-excerpt-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --journal-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --journal-requests)
                    COMPREPLY=($(compgen -W "tools all none" -- "${cur}"))
                    return 0
                    ;;
                --otel)
                    COMPREPLY=($(compgen -W "off on" -- "${cur}"))
                    return 0
                    ;;
                --otel-flush-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --generate)
                    COMPREPLY=($(compgen -W "man complete-bash complete-zsh complete-fish schema-record schema-journal" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        mcp__bound__subcmd__check)
            opts="-h --anchor --key --expect-tool --forbid-tool --max-duration --requests --expect-state --no-unfinished --no-unapproved --expect --since --until --format --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --anchor)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --expect-tool)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --forbid-tool)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --expect-state)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --expect)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --since)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --until)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "text junit" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        mcp__bound__subcmd__log)
            opts="-f -h --anchor --key --sessions --call --json --wide --since --until --session --state --tool --requests --follow --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --anchor)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --call)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --since)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --until)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tool)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        mcp__bound__subcmd__pin)
            opts="-h --accept --key --json --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --accept)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        mcp__bound__subcmd__report)
            opts="-o -h --anchor --key --output --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --anchor)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        mcp__bound__subcmd__verify)
            opts="-h --anchor --key --json --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --anchor)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _mcp__bound_or_helper -o nosort -o bashdefault -o default mcp-bound
else
    complete -F _mcp__bound_or_helper -o bashdefault -o default mcp-bound
fi

_mcp__bound_or_helper() {
    local i
    for (( i = 1; i < COMP_CWORD; i++ )); do
        if [[ ${COMP_WORDS[i]} == -- ]]; then
            if declare -F _comp_command_offset >/dev/null; then
                _comp_command_offset $(( i + 1 ))
            elif declare -F _command_offset >/dev/null; then
                _command_offset $(( i + 1 ))
            elif (( i + 1 == COMP_CWORD )); then
                COMPREPLY=( $(compgen -c -- "${COMP_WORDS[COMP_CWORD]}") )
            else
                COMPREPLY=( $(compgen -f -- "${COMP_WORDS[COMP_CWORD]}") )
            fi
            return 0
        fi
    done
    _mcp__bound "$@"
}
