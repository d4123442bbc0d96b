#!/bin/sh
# SPDX-License-Identifier: MIT
# A thread that ended shallow (trace_shallow.c: idle -> mid -> work, no
# tripwire fault) keeps its chain: the exit code that runs below its start
# routine's frame before the dead-stack scan writes nothing below the
# switch to the alternate stack, so the chain starts work, mid.
set -u

VMSTACK=$1 CC=$2 SRC=$3
. "$(dirname "$0")/lib.sh"

compile shallow -O1 -g -fno-optimize-sibling-calls -pthread
"$VMSTACK" trace --output "$TMP/report" -- "$TMP/shallow" > "$TMP/out" 2>&1 || { echo "FAIL: exit $?: $(cat "$TMP/out")"; exit 1; }
grep -qx done "$TMP/out" || { echo "FAIL: printed $(cat "$TMP/out")"; exit 1; }
# The thread's rows: the function of each entry.
awk '/^thread .* start routine idle/ { on = 1; next }
     on && /^$/ { exit }
     on && /^ *[0-9]+\)/ { loc = $4; sub(/\+.*/, "", loc); print loc }' "$TMP/report" > "$TMP/rows"
if [ "$(head -2 "$TMP/rows" | tr '\n' ' ')" != "work mid " ]; then
    echo "FAIL: the thread's chain does not start work, mid:"
    cat "$TMP/report"
    exit 1
fi
passed "ok: the shallow thread's chain starts $(tr '\n' ' ' < "$TMP/rows")"
