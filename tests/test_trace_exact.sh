#!/bin/sh
# SPDX-License-Identifier: MIT
# test_trace_exact.sh VMSTACK CC TRACE_EXACT_C INCLUDE_DIR LIBVMSTACK_SO
#
# The tracer's depth and chain against the truth, in the cases that a
# page-granular tripwire gets wrong.  tests/trace_exact.c is built with CC
# -O2 and -fstack-usage; every case prints the depth of its deepest stack
# pointer as it measured it ("truth NAME BYTES").
#   - All 256 16-byte alignments of the stack on threads (under 'vmstack
#     trace', both guard modes) and on fibers (vms_trace_enable): the depth
#     equals the truth within 8 bytes, sweep_leaf is the chain's first entry
#     with its .su size within 16 bytes, and on threads the depth is the
#     usage table's PEAK within 128 bytes (PEAK counts the leaf's red zone).
#   - A leaf that writes only its return address, a deeper call after the
#     stack came back up, a 64 KiB frame that never probes: exact, with the
#     deepest function first.  A chain no tripwire saw and that later calls
#     overwrote: exact depth, flagged partial.
#   - A call that is its function's last instruction is named after that
#     function, not the next one (return addresses looked up at ip - 1).
#   - read() of 64 KiB from /dev/zero into a stack buffer returns 65536.
#   - python3 -c pass: the deepest depth is PEAK within 128 bytes.
# LD_BIND_NOW=1: libc's lazy symbol binding runs the dynamic linker's
# resolver (kilobytes of saved vector state) wherever a libc function is
# first called, which would make the depths depend on call order.
set -u

VMSTACK=$1 CC=$2 SRC=$3
. "$(dirname "$0")/lib.sh"
INC=$4
LIB=$5
export LD_BIND_NOW=1

(cd "$TMP" && "$CC" -O2 -g -fstack-usage -pthread -o trace_exact "$SRC") || { echo "FAIL: $CC did not build $SRC"; exit 1; }
LEAF_SU=$(awk -F '\t' '{ n = split($1, p, ":"); if (p[n] == "sweep_leaf") print $2 }' "$TMP"/*.su)

# check_sweep KIND REPORT TRUTH: the 256 chains of one sweep.
check_sweep() {
    awk -v kind="$1" -v su="$LEAF_SU" '
        FILENAME == ARGV[1] && $1 == "truth" { truth[$2] = $3; next }
        FILENAME == ARGV[1] { next }
        # The usage table: TID NAME START STACK GUARD PEAK USED%
        $2 ~ /^sweep-[0-9]+$/ && NF == 7 && $6 ~ /^[0-9]+$/ { peak[$2] = $6; next }
        match($0, "^" kind " .sweep-[0-9]+. ") {
            name = $2; gsub(/\047/, "", name)
            for (i = 1; i <= NF; i++) if ($i == "of") depth[name] = $(i - 1)
            row = 1; next
        }
        row && /^ *0\)/ { first[name] = $4; size[name] = $3; row = 0 }
        END {
            for (k = 0; k < 256; k++) {
                n = "sweep-" k
                if (!(n in depth)) { print "no chain for " n; bad++; continue }
                d = depth[n] - truth[n]
                if (d < -8 || d > 8) { print n ": depth " depth[n] ", truth " truth[n]; bad++ }
                if (first[n] !~ /^sweep_leaf\+/) { print n ": first entry " first[n]; bad++ }
                s = size[n] - su
                if (s < -16 || s > 16) { print n ": sweep_leaf " size[n] " bytes, .su " su; bad++ }
                if (kind == "thread") {
                    p = peak[n] - depth[n]
                    if (!(n in peak) || p < -128 || p > 128) { print n ": depth " depth[n] ", PEAK " peak[n]; bad++ }
                }
            }
            exit bad > 0
        }' "$3" "$2" > "$TMP/sweep.bad" || fail "$1 sweep: $(head -5 "$TMP/sweep.bad")"
}

for guard in "" mprotect; do
    VMSTACK_GUARD=$guard "$VMSTACK" trace --output "$TMP/sweep.txt" -- "$TMP/trace_exact" sweep > "$TMP/truth.txt" ||
        fail "[$guard] sweep under vmstack trace failed"
    check_sweep thread "$TMP/sweep.txt" "$TMP/truth.txt"
    echo "ok: [${guard:-default}] 256 alignments on threads"
done

# Fibers, linked with the library (not when it is built for a sanitizer: a plain program cannot load it).
if nm -D "$LIB" 2>/dev/null | grep -q '__asan_init\|__tsan_init'; then
    echo "skip: fiber sweep ($LIB is built for a sanitizer)"
elif (cd "$TMP" && "$CC" -O2 -g -DWITH_VMSTACK -I"$INC" -pthread -o trace_exact_fibers "$SRC" "$LIB" \
        -Wl,-rpath,"$(dirname "$LIB")"); then
    "$TMP/trace_exact_fibers" fibers "$TMP/fibers.txt" > "$TMP/ftruth.txt" || fail "fiber sweep failed"
    check_sweep fiber "$TMP/fibers.txt" "$TMP/ftruth.txt"
    echo "ok: 256 alignments on fibers"
else
    fail "$CC did not link $SRC with $LIB"
fi

# case NAME FIRST: one special case; the depth exact, FIRST the first entry (or "partial").
case_check() {
    "$VMSTACK" trace --output "$TMP/$1.txt" -- "$TMP/trace_exact" "$1" > "$TMP/$1.truth" || fail "$1: run failed"
    truth=$(awk -v n="$1" '$1 == "truth" && $2 == n { print $3 }' "$TMP/$1.truth")
    header=$(grep "^thread '$1' " "$TMP/$1.txt")
    depth=$(echo "$header" | sed -n 's/.*: \([0-9]*\) of [0-9]* stack bytes deep.*/\1/p')
    first=$(awk -v h="thread '$1' " 'index($0, h) == 1 { on = 1 } on && /^ *0\)/ { print $4; exit }' "$TMP/$1.txt")
    [ -n "$depth" ] && [ -n "$truth" ] && [ $((depth - truth)) -ge -8 ] && [ $((depth - truth)) -le 8 ] ||
        fail "$1: depth '$depth', truth '$truth'"
    case $2 in
    partial) grep -A1 "^thread '$1' " "$TMP/$1.txt" | grep -q '^  (partial: ' || fail "$1: not flagged partial" ;;
    *) case $first in "$2"+*) ;; *) fail "$1: first entry '$first', want $2" ;; esac ;;
    esac
    echo "ok: $1: depth $depth, truth $truth, first $first"
}

case_check leafret leaf_nothing
# --warn-frame also sees frames only the dead stack knows (leafret_caller's, below the tripwires).
"$VMSTACK" trace --warn-frame 1500 --output "$TMP/warn.txt" -- "$TMP/trace_exact" leafret > /dev/null ||
    fail "leafret --warn-frame: run failed"
grep -q '^vmstack trace: WARNING: frame of 20[0-9][0-9] bytes (--warn-frame 1500) in leafret_caller+' "$TMP/warn.txt" ||
    fail "--warn-frame missed leafret_caller: $(grep WARNING "$TMP/warn.txt")"
case_check comeback comeback_b_leaf
case_check bigframe big_frame
case_check overwrite partial

# Return addresses are looked up at ip - 1: a call that ends its function is not named after the next one.
"$VMSTACK" trace --output "$TMP/noreturn.txt" -- "$TMP/trace_exact" noreturn || fail "noreturn: run failed"
sed -n "/^thread 'noreturn'/,/^\$/p" "$TMP/noreturn.txt" | grep -q '^ *[0-9]*) .*  ends_with_call+0x[0-9a-f]*/0x[0-9a-f]* ' ||
    fail "noreturn: ends_with_call not in the chain: $(sed -n "/^thread 'noreturn'/,/^\$/p" "$TMP/noreturn.txt")"
echo "ok: noreturn: a call that ends its function is named after it"

# Tracing changes nothing the program sees: a 64 KiB read() into a fresh stack buffer, thread and main.
"$VMSTACK" trace --output "$TMP/read.txt" -- "$TMP/trace_exact" read > "$TMP/read.out" || fail "read: run failed"
[ "$(cat "$TMP/read.out")" = "$(printf 'read 65536\nread 65536')" ] || fail "read under trace: $(cat "$TMP/read.out")"

# C++ names demangled (g++ from scripts/deps.sh).
printf '%s\n' 'namespace deep { template <int N> struct R { static __attribute__((noinline)) int go(int n) {' \
    '    volatile char b[600]; b[0] = (char)n; b[599] = 1; return n ? go(n - 1) + b[599] : b[0]; } }; }' \
    'int main() { return deep::R<3>::go(30); }' > "$TMP/cxx.cpp"
if g++ -O2 -o "$TMP/cxx" "$TMP/cxx.cpp"; then
    "$VMSTACK" trace --output "$TMP/cxx.txt" -- "$TMP/cxx"
    grep -q '^  0) .*  deep::R<3>::go(int)+0x' "$TMP/cxx.txt" || fail "C++: not demangled: $(grep -m3 ' 0) ' "$TMP/cxx.txt")"
    echo "ok: C++ names demangled"
else
    fail "g++ did not build the C++ case"
fi

# A real program: python3's deepest point is a 64 KiB frame that does not probe.
if command -v python3 > /dev/null 2>&1; then
    "$VMSTACK" trace --output "$TMP/py.txt" -- python3 -c pass || fail "python3 -c pass under trace"
    peak=$(awk '$2 == "python3" && $3 == "main" { print $6 }' "$TMP/py.txt")
    depth=$(sed -n "s/^main thread 'python3' .*: \([0-9]*\) of .*/\1/p" "$TMP/py.txt")
    [ -n "$peak" ] && [ -n "$depth" ] && [ $((peak - depth)) -ge -128 ] && [ $((peak - depth)) -le 128 ] ||
        fail "python3 -c pass: depth '$depth', PEAK '$peak'"
    echo "ok: python3 -c pass: depth $depth, PEAK $peak"
fi

passed "all exact trace tests passed"
