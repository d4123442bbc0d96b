# SPDX-License-Identifier: MIT
# bash completion for vmstack: the commands, each command's options as its
# own --help lists them (so that they never go stale), the benchmarks' names
# for 'vmstack bench', files where an option takes one, and after 'run' or
# 'trace' PROG and its arguments as bash would complete them alone.
# Installed as share/bash-completion/completions/vmstack.

_vmstack_words() {
    # The options of a command (its --help), or the benchmarks' names.
    local sub=$1
    if [ "$sub" = bench-names ]; then
        "${COMP_WORDS[0]}" bench --help 2>/dev/null | sed -n '/^Benchmarks:/,$ s/^  \([a-z]\+\) .*/\1/p'
    else
        "${COMP_WORDS[0]}" "$sub" --help 2>/dev/null | grep -oE -- '(^|[ ,])--?[a-zA-Z][a-zA-Z-]*' | tr -d ' ,' | sort -u
    fi
}

_vmstack() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} sub="" i
    COMPREPLY=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        -*) ;;
        *) sub=${COMP_WORDS[i]}; break ;;
        esac
    done
    if [ -z "$sub" ]; then
        COMPREPLY=($(compgen -W "demo run trace bench checkstack help -V --version --help" -- "$cur"))
        return
    fi
    case $sub in
    help)
        COMPREPLY=($(compgen -W "demo run trace bench checkstack" -- "$cur"))
        return ;;
    run | trace)
        # After '--' or the first operand: the program's own completion.
        local j prog=0
        for ((j = i + 1; j < COMP_CWORD; j++)); do
            case ${COMP_WORDS[j]} in
            --) prog=$((j + 1)); break ;;
            --guard | --stack-size | --output | -o | --report-signal | --plot | --folded | --flamegraph | \
            --warn-frame | --warn-depth | --max-tasks) j=$((j + 1)) ;;
            --*=* | -*) ;;
            *) prog=$j; break ;;
            esac
        done
        if [ "$prog" -gt 0 ] && [ "$prog" -le "$COMP_CWORD" ]; then
            if [ "$prog" -eq "$COMP_CWORD" ]; then
                COMPREPLY=($(compgen -c -- "$cur"))
            elif declare -F _command_offset > /dev/null; then
                _command_offset "$prog"
            else
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
            return
        fi ;;
    esac
    case $prev in
    --output | -o | --plot | --folded | --flamegraph)
        COMPREPLY=($(compgen -f -- "$cur"))
        return ;;
    --report-signal)
        COMPREPLY=($(compgen -W "USR1 USR2 HUP INT QUIT TERM" -- "$cur"))
        return ;;
    --guard | --stack-size | --warn-frame | --warn-depth | --max-tasks)
        return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_vmstack_words "$sub")" -- "$cur"))
    elif [ "$sub" = bench ]; then
        COMPREPLY=($(compgen -W "$(_vmstack_words bench-names)" -- "$cur"))
    elif [ "$sub" = checkstack ] || [ "$sub" = bench ]; then
        COMPREPLY=($(compgen -f -- "$cur"))
    elif [ "$sub" = run ] || [ "$sub" = trace ]; then
        COMPREPLY=($(compgen -c -- "$cur"))
    fi
}
complete -F _vmstack vmstack
