#!/bin/sh
# SPDX-License-Identifier: MIT
# A ptraced program under 'vmstack trace' gets no tripwires, which would stop
# it at every one (gdb stopped in the loader with SIGSEGV, before main):
# gdb -batch runs its inferior to its end, strace -f sees no SIGSEGV, and a
# traced program's report says where its depths come from.  Untraced, the
# same program takes tripwire faults.
set -u

VMSTACK=$1 CC=$2 SRC=$3
. "$(dirname "$0")/lib.sh"

compile prog -O1 -g
OUT='232 hello, world 1 3.500000'

# Not ptraced: tripwires, and no word of ptrace.
"$VMSTACK" trace --output "$TMP/plain.txt" -- "$TMP/prog" > "$TMP/plain.out" || fail "plain: exit $?"
grep -q "^main thread 'prog' (pid [0-9]*): [0-9]* of [0-9]* stack bytes deep, [1-9][0-9]* tripwire faults" \
    "$TMP/plain.txt" || fail "plain: no tripwire fault: $(cat "$TMP/plain.txt")"
grep -q 'ptraced' "$TMP/plain.txt" && fail "plain: says ptraced"

# The program itself ptraced (strace -f of vmstack run follows the program it becomes).
if command -v strace > /dev/null 2>&1; then
    strace -f -o "$TMP/strace.log" "$VMSTACK" trace --output "$TMP/st.txt" -- "$TMP/prog" > "$TMP/st.out" ||
        fail "strace -f vmstack trace: exit $?"
    grep -qx "$OUT" "$TMP/st.out" || fail "strace -f vmstack trace: printed $(cat "$TMP/st.out")"
    grep -q -- '--- SIGSEGV' "$TMP/strace.log" && fail "strace -f vmstack trace: SIGSEGV: $(grep -- '--- SIGSEGV' "$TMP/strace.log" | head -3)"
    grep -q '^no tripwires: the process is ptraced (by pid [0-9]*), where each would stop it; depths and chains come from the dead stacks of ended tasks alone$' \
        "$TMP/st.txt" || fail "strace -f vmstack trace: the report does not say it was ptraced: $(cat "$TMP/st.txt")"
    grep -q "^main thread 'prog' (pid [0-9]*): [1-9][0-9]* of [0-9]* stack bytes deep, 0 tripwire faults" "$TMP/st.txt" ||
        fail "strace -f vmstack trace: no exact depth without tripwires: $(cat "$TMP/st.txt")"
    grep -q '^  0) *[0-9]* *[0-9]* *leaf+' "$TMP/st.txt" || fail "strace -f vmstack trace: the chain does not start at leaf"

    # strace under trace: its child is the ptraced one.
    "$VMSTACK" trace --output "$TMP/ts.txt" -- strace -f -o "$TMP/strace2.log" "$TMP/prog" > "$TMP/ts.out" ||
        fail "vmstack trace strace -f: exit $?"
    grep -qx "$OUT" "$TMP/ts.out" || fail "vmstack trace strace -f: printed $(cat "$TMP/ts.out")"
    grep -q -- '--- SIGSEGV' "$TMP/strace2.log" && fail "vmstack trace strace -f: SIGSEGV in the child"
else
    echo "skipped: strace is not installed"
fi

# gdb under trace: its inferior is ptraced, runs to its end without a stop.
if command -v gdb > /dev/null 2>&1; then
    "$VMSTACK" trace --output "$TMP/gdb.txt" -- gdb -q -nx -batch -ex run "$TMP/prog" > "$TMP/gdb.out" 2>&1 ||
        fail "vmstack trace gdb: exit $?"
    grep -q 'SIGSEGV' "$TMP/gdb.out" && fail "vmstack trace gdb: the inferior stopped: $(cat "$TMP/gdb.out")"
    grep -q '^\[Inferior 1 (process [0-9]*) exited normally\]$' "$TMP/gdb.out" ||
        fail "vmstack trace gdb: the inferior did not run to its end: $(cat "$TMP/gdb.out")"
    grep -qx "$OUT" "$TMP/gdb.out" || fail "vmstack trace gdb: the inferior did not print"
else
    echo "skipped: gdb is not installed"
fi
passed "ok: no tripwires under ptrace"
