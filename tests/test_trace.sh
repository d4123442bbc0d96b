#!/bin/sh
# SPDX-License-Identifier: MIT
# test_trace.sh VMSTACK CC TRACE_FRAMES_C
#
# 'vmstack trace' against the truth.  tests/trace_frames.c is built with CC
# and -fstack-usage (-O0 and -O2); under the tracer, the deepest chain of
# its thread 'frames' and of its main thread must list
# frames_recurse... frames_f3 frames_f2 frames_f1 in call order, with
# every frame's size within 16 bytes of gcc's figure, Depth(i) = Size(i) +
# Depth(i+1) as in the kernel's table, and a depth within one page of the
# one the program measured itself.  Then --warn-frame, --warn-depth, both
# guard modes, a real program (python3, when installed), exit statuses and
# usage errors.
set -u

VMSTACK=$1 CC=$2 SRC=$3
. "$(dirname "$0")/lib.sh"
PAGE=$(getconf PAGESIZE)
SLACK=64
DEPTH=40

# rows HEADER < REPORT: the table rows of the chain whose header line starts with HEADER; a
# folded recursion ("... N more entries of the same S-byte frame") as a line "FOLD N".
rows() {
    awk -v head="$1" 'index($0, head) == 1 { on = 1; next }
                      on && /^$/ { exit }
                      on && /^ *[0-9]+\)/ { print }
                      on && /^ *\.\.\. [0-9]+ more entries of the same/ { print "FOLD", $2 }'
}

# entries < ROWS: the number of entries the rows stand for, folded ones included.
entries() {
    awk '$1 == "FOLD" { n += $2; next } { n++ } END { print n + 0 }'
}

# su_size FUNCTION: the function's frame in gcc's .su files of the current build.
su_size() {
    awk -F '\t' -v fn="$1" '{ n = split($1, p, ":"); if (p[n] == fn) print $2 }' "$dir"/*.su
}

# check_chain HEADER WHO MIN_RECURSE: one chain of the report against .su and the program's truth.
check_chain() {
    rows "$1" < "$dir/report.txt" > "$dir/rows.txt"
    [ -s "$dir/rows.txt" ] || { fail "[$flags] no chain for $1"; return; }
    # Depth(i) = Size(i) + Depth(i+1), the kernel's relation (a folded run: its frames' sizes).
    awk '$1 == "FOLD" { fold = $2; next }
         seen && prev_depth != prev_size * (fold + 1) + $2 { bad = 1 }
         { seen = 1; prev_depth = $2; prev_size = $3; fold = 0 }
         END { exit bad }' "$dir/rows.txt" || fail "[$flags] $2: Depth(i) != Size(i) + Depth(i+1)"
    grep -q '^FOLD' "$dir/rows.txt" || fail "[$flags] $2: the recursion is not folded"
    # Call order, innermost first, repeats folded.
    order=$(awk '$1 == "FOLD" { next } { sub(/\+.*/, "", $4); if ($4 != last) printf "%s ", $4; last = $4 }' "$dir/rows.txt")
    case $order in
    "frames_recurse frames_f3 frames_f2 frames_f1 run_chain "*) ;;
    # Not inlined at -O0: the deepest function is the one measuring the stack pointer.
    "stack_pointer frames_recurse frames_f3 frames_f2 frames_f1 run_chain "*) ;;
    *) fail "[$flags] $2: chain order: $order" ;;
    esac
    n=$(awk '$1 == "FOLD" { if (last) n += $2; next } { last = index($4, "frames_recurse+") == 1; n += last }
             END { print n + 0 }' "$dir/rows.txt")
    [ "$n" -ge "$3" ] || fail "[$flags] $2: $n frames_recurse entries, want >= $3"
    # Sizes against -fstack-usage; entry 0 may have faulted mid-prologue.
    for fn in frames_recurse frames_f3 frames_f2 frames_f1; do
        want=$(su_size $fn)
        awk -v fn="$fn+" -v want="$want" 'NR > 1 && index($4, fn) == 1 {
                d = $3 - want; if (d < -16 || d > 16) { print $3; exit 1 } }' "$dir/rows.txt" > "$dir/bad" ||
            fail "[$flags] $2: $fn frame $(cat "$dir/bad"), -fstack-usage $want"
    done
    # Depth within one page of what the program measured at its deepest point (the tripwire
    # sees accesses: SLACK for a push's 8 bytes and bytes the deepest frame leaves untouched).
    depth=$(awk 'NR == 1 { print $2 }' "$dir/rows.txt")
    truth=$(awk -v who="$2" '$1 == "truth" && $2 == who { print $3 }' "$dir/truth.txt")
    diff=$((truth - depth))
    [ "$diff" -ge -"$SLACK" ] && [ "$diff" -le $((PAGE + SLACK)) ] ||
        fail "[$flags] $2: traced depth $depth, true depth $truth"
    echo "ok: [$flags${GUARD:+ $GUARD}] $2: $order(x$n), depth $depth, truth $truth"
}

# trace_build FLAGS: build trace_frames, trace it, check both chains.
trace_build() {
    flags=$1
    dir="$TMP/build$(echo "$flags" | tr -d ' -')"
    mkdir -p "$dir"
    (cd "$dir" && "$CC" $flags -g -fstack-usage -pthread -o trace_frames "$SRC") ||
        { fail "$CC $flags did not compile $SRC"; return; }
    "$VMSTACK" trace --output "$dir/report.txt" -- "$dir/trace_frames" $DEPTH > "$dir/truth.txt" ||
        { fail "[$flags] trace_frames failed under vmstack trace"; return; }
    check_chain "thread 'frames'" frames $((DEPTH + 1 - PAGE / 512))
    check_chain "main thread" main $((DEPTH / 2 + 1 - PAGE / 512))
    grep -q "^thread 'frames' .*frames_thread: [0-9]* of 8388608 stack bytes deep" "$dir/report.txt" ||
        fail "[$flags] header of the thread's chain"
    grep -q '^overall deepest: thread .frames.' "$dir/report.txt" || fail "[$flags] overall deepest is not 'frames'"
    # vmstack's own frames (the preload's thread entry, its pthread_create) are not in the chains.
    grep -q '^ *[0-9]*) .*\[libvmstack-preload\.so\]' "$dir/report.txt" && fail "[$flags] a frame of libvmstack-preload.so in a chain"
}

trace_build "-O0"
trace_build "-O2"
GUARD=mprotect
export VMSTACK_GUARD=mprotect
trace_build "-O2"
unset VMSTACK_GUARD GUARD
dir="$TMP/buildO2"

# --warn-frame: frames_f2 (3000 bytes) once, with the chain that reached it; frames_f1 (1000) not.
"$VMSTACK" trace --warn-frame 2048 --output "$TMP/warn.txt" -- "$dir/trace_frames" $DEPTH > /dev/null ||
    fail "--warn-frame run failed"
warned=$(grep -c '^vmstack trace: WARNING: frame of 30[0-9][0-9] bytes (--warn-frame 2048) in frames_f2+' "$TMP/warn.txt")
[ "$warned" = 1 ] ||
    fail "--warn-frame: frames_f2 not reported once: $(grep WARNING "$TMP/warn.txt")"
grep -q 'WARNING: frame of .* in frames_f1+' "$TMP/warn.txt" && fail "--warn-frame: frames_f1 (1000 bytes) reported"
awk '/WARNING: frame of .* in frames_f2\+/ { on = 1 } on && /^  1\)/ { print; exit }' "$TMP/warn.txt" |
    grep -q ' frames_f1+' || fail "--warn-frame: the chain under frames_f2 does not go on with frames_f1"

# --warn-depth: the thread on a 64 KiB stack passes 30% of it.
"$VMSTACK" trace --stack-size 64K --warn-depth 30 --output "$TMP/depth.txt" -- "$dir/trace_frames" $DEPTH \
    > /dev/null 2> "$TMP/depth.err" || fail "--warn-depth run failed"
grep -q "^vmstack trace: WARNING: thread 'frames' (tid [0-9]*) passed 30% of its stack" "$TMP/depth.err" ||
    fail "--warn-depth: no warning for 'frames': $(cat "$TMP/depth.err")"
grep -q 'WARNING: passed --warn-depth 30% of its stack' "$TMP/depth.txt" || fail "--warn-depth: not in the report"

# A real program: python3 recursing through C (map, max), symbols from its libraries.
if command -v python3 > /dev/null 2>&1; then
    "$VMSTACK" trace --output "$TMP/py.txt" -- python3 -c '
def f(n):
    return 0 if n == 0 else 1 + max(map(f, [n - 1]))
print(f(100))' > "$TMP/py.out" || fail "python3 under vmstack trace failed"
    grep -qx 100 "$TMP/py.out" || fail "python3 printed $(cat "$TMP/py.out")"
    rows "main thread" < "$TMP/py.txt" > "$TMP/py.rows"
    grep -q ' _PyEval_EvalFrameDefault+0x[0-9a-f]*/0x[0-9a-f]* \[' "$TMP/py.rows" ||
        fail "python3: no _PyEval_EvalFrameDefault in the chain"
    grep -q ' \[libc\.so\.6\]' "$TMP/py.rows" || fail "python3: no frame of libc in the chain"
    [ "$(entries < "$TMP/py.rows")" -ge 300 ] || fail "python3: chain of $(entries < "$TMP/py.rows") entries for 100 levels"
    echo "ok: python3: $(entries < "$TMP/py.rows") entries, $(awk 'NR == 1 { print $2 }' "$TMP/py.rows") bytes deep"
fi

# --json: the usage table's object with the chains under "trace", from the shared JSON writer;
# the same facts as the text (exact depth, Depth(i) = Size(i) + Depth(i+1), call order).
"$VMSTACK" trace --json --output "$TMP/trace.json" -- "$dir/trace_frames" $DEPTH > "$TMP/json.truth" ||
    fail "--json run failed"
python3 - "$TMP/trace.json" "$TMP/json.truth" <<'PY' || fail "--json: $(head -c 300 "$TMP/trace.json")"
import json, sys
d = json.load(open(sys.argv[1]))
truth = dict((l.split()[1], int(l.split()[2])) for l in open(sys.argv[2]) if l.startswith("truth "))
chains = dict(("main" if c["kind"] == "main thread" else c["name"], c) for c in d["trace"]["chains"])
for who in ("frames", "main"):
    c = chains[who]
    fr = c["frames"]
    assert c["exact"] and not c["partial"] and c["depth"] == fr[0]["depth"], c
    assert c["depth"] == truth[who], (who, c["depth"], truth[who])
    assert all(fr[i]["depth"] == fr[i]["size"] + fr[i + 1]["depth"] for i in range(len(fr) - 1)), who
    names = [f["function"] for f in fr]
    assert names[0] == "frames_recurse" and names.index("frames_f3") < names.index("frames_f2") < names.index("frames_f1"), names
    assert all(f["return_address"] for f in fr[1:]) and fr[0]["file"] == "trace_frames.c", fr[0]
assert any(t["name"] == "frames" for t in d["threads"])
PY

# The program's exit status, and its death by signal, are trace's.
"$VMSTACK" trace -- sh -c 'exit 3' 2> /dev/null
[ $? = 3 ] || fail "exit status not passed on"
"$VMSTACK" trace -- sh -c 'kill -TERM $$' 2> /dev/null
[ $? = 143 ] || fail "death by SIGTERM not passed on"

# Usage.
"$VMSTACK" trace --help | grep -q '^usage: vmstack trace' || fail "--help"
for args in "" "--warn-depth 0 -- true" "--warn-depth 101 -- true" "--warn-frame abc -- true" \
    "--warn-frame -- true" "--frobnicate -- true" "--warn-depth"; do
    err=$("$VMSTACK" trace $args 2>&1 > /dev/null)
    rc=$?
    [ $rc = 125 ] || fail "'trace $args': exit $rc, not 125"
    [ "$(echo "$err" | wc -l)" = 1 ] || fail "'trace $args': not one line: $err"
done

passed "all trace tests passed"
