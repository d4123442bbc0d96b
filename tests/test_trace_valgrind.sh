#!/bin/sh
# SPDX-License-Identifier: MIT
# 'vmstack trace -- valgrind' on a clean threaded program: the tracer sets no
# tripwires under valgrind and tells memcheck to ignore its reads and writes
# of dead stack, so no memcheck error comes from the tracer's code, and the
# report says where its depths come from.
set -u

VMSTACK=$1 CC=$2 SRC=$3
. "$(dirname "$0")/lib.sh"

command -v valgrind > /dev/null 2>&1 || { echo "skipped: valgrind is not installed"; exit 0; }
compile clean -O1 -g -pthread
"$VMSTACK" trace --output "$TMP/report.txt" -- valgrind -q --error-exitcode=9 "$TMP/clean" > "$TMP/out" 2> "$TMP/err"
echo "valgrind exit $?, $(grep -c '^==[0-9]*== [A-Z]' "$TMP/err") memcheck errors in all"
grep -qx clean "$TMP/out" || fail "printed $(cat "$TMP/out")"
grep -E '(trace|deadstack|tracetable)\.c:' "$TMP/err" > "$TMP/ours" && fail "memcheck errors in the tracer: $(head -20 "$TMP/ours")"
grep -qx 'no tripwires: the process runs under valgrind; depths and chains come from the dead stacks of ended tasks alone' \
    "$TMP/report.txt" || fail "the report does not say it ran under valgrind: $(cat "$TMP/report.txt")"
grep -q "start routine work, [1-9][0-9]* bytes" "$TMP/report.txt" || fail "no exact depth for the threads: $(cat "$TMP/report.txt")"
passed "ok: no memcheck error from the tracer"
