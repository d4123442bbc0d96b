#!/bin/sh
# SPDX-License-Identifier: MIT
# The report at exit while threads end (trace_exit_race.c), RUNS times: a
# thread's chain is copied while the thread gives its memory back, which
# crashed the report in about 1 run in 10.  Each run exits 0 and writes
# the report.
set -u

VMSTACK=$1 CC=$2 SRC=$3
. "$(dirname "$0")/lib.sh"
RUNS=50

compile race -O1 -pthread
"$TMP/race" || { echo "FAIL: the program fails plain"; exit 1; }
i=0
while [ $i -lt $RUNS ]; do
    i=$((i + 1))
    "$VMSTACK" trace --output "$TMP/report" -- "$TMP/race" > "$TMP/out" 2>&1
    rc=$?
    if [ $rc -ne 0 ] || ! grep -q '^vmstack trace: deepest call chains of race' "$TMP/report"; then
        echo "FAIL: run $i: exit $rc: $(cat "$TMP/out")"
        exit 1
    fi
done
passed "ok: $RUNS exits while threads end, each with its report"
