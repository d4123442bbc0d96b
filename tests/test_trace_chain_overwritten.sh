#!/bin/sh
# SPDX-License-Identifier: MIT
# A chain whose outer frames a later call overwrote (trace_overwritten.c:
# main -> recurse x21 -> middle -> leaf, then printf): the tracer's deepest
# chain holds only frames that were there.  It starts leaf, middle,
# recurse; it reaches main in every run, with nothing but recurse before
# it, where frames printf overwrote are marked lost ("frames lost here");
# no frame of printf or of the loader anywhere.  Whether printf's frames
# reach below the tripwires' last chain depends on where the stack starts
# (about 1 run in 10), so the program runs RUNS times, and on until one
# chain had such a cut, at most MAX_RUNS times: at least one must have.
set -u

VMSTACK=$1 CC=$2 SRC=$3
. "$(dirname "$0")/lib.sh"
RUNS=50
MAX_RUNS=100

# Lazy binding would put the loader's frames at printf's depth: bind at start.
compile prog -O1 -g -fno-optimize-sibling-calls -Wl,-z,now

cut=0
i=0
while [ $i -lt $RUNS ] || { [ $cut -eq 0 ] && [ $i -lt $MAX_RUNS ]; }; do
    i=$((i + 1))
    "$VMSTACK" trace --output "$TMP/report.txt" -- "$TMP/prog" > "$TMP/out.txt" || fail "run $i: exit $?"
    grep -q '^232 hello, world 1 3.500000$' "$TMP/out.txt" || fail "run $i: printed $(cat "$TMP/out.txt")"
    # The main thread's rows: "FN" per frame (function name), "CUT" for a cut, "FOLD" for folded recursion.
    awk '/^main thread/ { on = 1; next }
         on && /^$/ { exit }
         on && /frames lost here|the rest was overwritten/ { print "CUT"; next }
         on && /more entries of the same/ { print "FOLD"; next }
         on && /^ *[0-9]+\)/ { loc = $4; sub(/\+.*/, "", loc); print loc }' "$TMP/report.txt" > "$TMP/rows.txt"
    [ -s "$TMP/rows.txt" ] || { fail "run $i: no chain for the main thread: $(cat "$TMP/report.txt")"; continue; }
    grep -qx CUT "$TMP/rows.txt" && cut=$((cut + 1))
    grep -qx main "$TMP/rows.txt" || fail "run $i: the chain does not reach main: $(tr '\n' ' ' < "$TMP/rows.txt")"
    [ "$(head -3 "$TMP/rows.txt" | tr '\n' ' ')" = "leaf middle recurse " ] ||
        fail "run $i: the chain does not start leaf, middle, recurse: $(tr '\n' ' ' < "$TMP/rows.txt")"
    # Up to main, only the program's chain and the cut; after main, only the start frames.
    awk '$0 == "main" { main = 1; next }
         !main && $0 !~ /^(leaf|middle|recurse|CUT|FOLD)$/ { bad = 1 }
         main && $0 !~ /^(__libc_start_call_main|__libc_start_main(@@GLIBC_[0-9.]+)?|_start)$/ { bad = 1 }
         END { exit bad }' "$TMP/rows.txt" ||
        fail "run $i: a frame that was not in the chain: $(tr '\n' ' ' < "$TMP/rows.txt")"
    grep -Eq 'printf|_IO_|_dl_' "$TMP/rows.txt" && fail "run $i: a frame of printf or the loader: $(tr '\n' ' ' < "$TMP/rows.txt")"
done
[ $cut -gt 0 ] || fail "no run of $i had its chain cut: printf did not overwrite it, nothing was tested"
passed "ok: $i runs, all reaching main, $cut with frames lost where printf overwrote them"
