#!/bin/sh
# SPDX-License-Identifier: MIT
# The bash completion (tools/completion/vmstack.bash) against the command it
# completes: commands, each command's options from its own --help (trace's
# --flamegraph, run's --quiet), benchmark names, files after --output, and
# after 'run --' the program's name from PATH.
# Usage: test_completion.sh VMSTACK COMPLETION_FILE
set -u
command -v bash > /dev/null || { echo "no bash"; exit 77; }
exec bash -c '
vmstack=$1
. "$2"
fails=0
# complete WORDS...: COMPREPLY for the last word, one a line.
complete_words() {
    COMP_WORDS=("$vmstack" "$@"); COMP_CWORD=$#
    _vmstack
    printf "%s\n" "${COMPREPLY[@]}"
}
expect() { # expect WANT WORDS...
    want=$1; shift
    complete_words "$@" | grep -qx -- "$want" || { echo "FAIL: vmstack $* gives no $want: $(complete_words "$@" | tr "\n" " ")"; fails=$((fails + 1)); }
}
expect run r
expect trace tr
expect checkstack c
expect --flamegraph trace --fl
expect --folded trace --fo
expect --quiet run --q
expect --stack-size run --guard 64K --st
expect --json bench --j
expect tlb bench t
expect trace help tr
tmp=$(mktemp -d); trap "rm -rf $tmp" EXIT; : > "$tmp/table.json"
expect "$tmp/table.json" run --output "$tmp/tab"
expect printf run --quiet -- printf
expect printf trace printf
[ -z "$(complete_words run --quiet -- printf --qu)" ] || { echo "FAIL: run options offered to the program"; fails=$((fails + 1)); }
[ "$fails" -eq 0 ] && echo "ok: bash completion"
[ "$fails" -eq 0 ]
' sh "$@"
