#!/bin/sh
# SPDX-License-Identifier: MIT
# Code without call-frame information inside a module (trace_nocfi.c:
# assembly that calls itself, as V8's builtins do inside node's binary):
# the tripwires' chain ends at it, with a line saying its callers are
# unknown and no size for it, "callers_unknown" true in JSON; the frames
# below it are all there, and the program runs as it does plain.
set -u

VMSTACK=$1 CC=$2 SRC=$3
. "$(dirname "$0")/lib.sh"

compile nocfi -O1 -g -pthread
traced_as_plain nocfi
sed -n "/^thread 'nocfi' .*start routine thread (running)/,/^\$/p" "$TMP/report.txt" > "$TMP/chain.txt"
[ -s "$TMP/chain.txt" ] || fail "no chain for the running thread: $(cat "$TMP/report.txt")"
grep -qx "     ... (callers unknown: this code has no call-frame information, as JIT-compiled code and a runtime's hand-written builtins have none)" "$TMP/chain.txt" ||
    fail "no line saying the callers are unknown: $(cat "$TMP/chain.txt")"
last=$(grep -E '^ *[0-9]+\) ' "$TMP/chain.txt" | tail -n 1)
echo "$last" | grep -Eq '^ *[0-9]+\) +[0-9]+ +\? +nocfi_enter\+' ||
    fail "the last frame is not nocfi_enter without a size: $last"
grep -Eq '^ +\.\.\. (9[0-9]|1[0-9][0-9]) more entries of the same [0-9]+-byte frame$' "$TMP/chain.txt" ||
    fail "the recursion below nocfi_enter is not whole: $(cat "$TMP/chain.txt")"
grep -Eq '^ *[0-9]+\) +[0-9]+ +[0-9]+ +deep\+' "$TMP/chain.txt" ||
    fail "deep, nocfi_enter's callee, is not in the chain: $(cat "$TMP/chain.txt")"

"$VMSTACK" trace --json --output "$TMP/report.json" -- "$TMP/nocfi" > /dev/null || fail "--json: exit $?"
python3 - "$TMP/report.json" <<'PY' || fail "--json: $(head -c 400 "$TMP/report.json")"
import json, sys
d = json.load(open(sys.argv[1]))
chains = d["trace"]["chains"]
t = [c for c in chains if c["kind"] == "thread"]
assert len(t) == 1 and t[0]["callers_unknown"] is True, t
assert t[0]["frames"][-1]["function"] == "nocfi_enter" and t[0]["frames"][-1]["size"] is None, t[0]["frames"][-1]
assert all(f["size"] is not None for f in t[0]["frames"][:-1])
# The main thread's chain is there when it reached a tripwire: it ends at _start.
assert all(c["callers_unknown"] is False for c in chains if c["kind"] == "main thread")
PY
# Ended threads, their chains read from the dead stack: through the
# loader's lazy-binding resolver (the first call to sem_post or pause),
# whose CFA is kept in rbx, and up to nocfi_enter, whole.  "ended": the
# tripwires saw the recursion; "skip": a 64 KiB frame went past every
# tripwire, so only the dead stack holds the chain.
for mode in ended skip; do
    "$TMP/nocfi" "$mode" > "$TMP/plain.out" || fail "$mode: the program fails plain"
    env -u LD_BIND_NOW "$VMSTACK" trace --output "$TMP/report.txt" -- "$TMP/nocfi" "$mode" > "$TMP/trace.out" ||
        fail "$mode: exit $?"
    cmp -s "$TMP/plain.out" "$TMP/trace.out" || fail "$mode: printed $(cat "$TMP/trace.out"), plain $(cat "$TMP/plain.out")"
    sed -n "/^thread 'nocfi' .*start routine thread: /,/^\$/p" "$TMP/report.txt" > "$TMP/chain.txt"
    if [ "$mode" = skip ]; then want=skip; else want=nocfi_deep; fi
    last=$(grep -E '^ *[0-9]+\) ' "$TMP/chain.txt" | tail -n 1)
    ! grep -q '(partial' "$TMP/chain.txt" && grep -Eq "^ *[0-9]+\) +[0-9]+ +[0-9]+ +$want\+" "$TMP/chain.txt" &&
        echo "$last" | grep -Eq '^ *[0-9]+\) +[0-9]+ +\? +nocfi_enter\+' &&
        grep -q '^     \.\.\. (callers unknown: ' "$TMP/chain.txt" ||
        fail "$mode: not a whole chain from the deepest frame through $want to nocfi_enter: $(cat "$TMP/report.txt")"
done

passed "ok: the chain ends at code without call-frame information, callers unknown"
