#!/bin/sh
# SPDX-License-Identifier: MIT
# 'vmstack trace --folded FILE' and 'vmstack run --plot FILE.png' on
# run_recurse (a thread 300 levels of 1 KiB frames deep):
#   folded  every line is "frames SPACE integer", frames joined by ';', root
#           first; the recursion's thread is there, its weights add up to
#           the chain's depth; the report still reaches stderr; --json and
#           'run --folded' are refused with one line
#   plot    a PNG of the expected size (RUN_PLOT_WIDTH x RUN_PLOT_HEIGHT);
#           --plot with no gnuplot on PATH is refused with one line
# Both keep the program's exit status.
# Usage: test_flamegraph.sh VMSTACK RUN_RECURSE
set -u
vmstack=$1 prog=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$vmstack" trace --folded "$tmp/f.folded" -- "$prog" 300 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] || fail "trace --folded: exit status $rc"
grep -q "deepest call chains" "$tmp/err" || fail "trace --folded: no report on stderr"
[ -s "$tmp/f.folded" ] || fail "trace --folded wrote nothing"
bad=$(grep -Ev '^[^; ][^;]*(;[^;]+)* [0-9]+$' "$tmp/f.folded" | head -3)
[ -z "$bad" ] || fail "lines that are not 'frames SPACE integer': $bad"
grep -q ';deep_thread;recurse[^;]*;recurse[^;]*;recurse[^;]* [0-9]*$' "$tmp/f.folded" || fail "no chain of recurse frames"
# The recursion's chain: the weights of its lines (the root's, the thread's
# own, and the recursion's) add up to the depth the report gives.
depth=$(awk '/start routine/ && /[0-9]+ of [0-9]+ stack bytes deep/ { for (i = 1; i <= NF; i++) if ($i == "of") print $(i - 1) }' "$tmp/err" | sort -n | tail -1)
root=$(awk -v t=deep_thread '{ r = $0; sub(/;.*/, "", r); sub(/ [0-9]+$/, "", r) } index($0, ";start_thread;" t) { print r; exit }' "$tmp/f.folded")
sum=$(awk -v r="$root" '{ k = $0; sub(/;.*/, "", k); sub(/ [0-9]+$/, "", k) } k == r && (index($0, ";" "deep_thread") || !index($0, ";start_thread;")) { s += $NF } END { print s + 0 }' "$tmp/f.folded")
[ -n "$depth" ] && [ "$sum" -eq "$depth" ] || fail "folded weights of the deepest root add up to $sum, the deepest chain is $depth bytes"

out=$("$vmstack" trace --json --folded "$tmp/x" -- "$prog" 2>&1); rc=$?
[ "$rc" -eq 125 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "trace --json --folded: status $rc, '$out'"
out=$("$vmstack" run --folded "$tmp/x" -- "$prog" 2>&1); rc=$?
[ "$rc" -eq 125 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "run --folded: status $rc, '$out'"

if command -v gnuplot >/dev/null; then
  "$vmstack" run --plot "$tmp/p.png" -- "$prog" 100 >/dev/null 2>"$tmp/err"
  rc=$?
  [ "$rc" -eq 0 ] || fail "run --plot: exit status $rc"
  grep -q "stack usage of" "$tmp/err" || fail "run --plot: no table on stderr"
  sig=$(head -c 8 "$tmp/p.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')
  [ "$sig" = 89504e470d0a1a0a ] || fail "run --plot wrote no PNG"
  size=$(od -An -tu1 -j16 -N8 "$tmp/p.png" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 "x" $5 * 16777216 + $6 * 65536 + $7 * 256 + $8 }')
  [ "$size" = 900x560 ] || fail "the plot is $size pixels, not 900x560"
else
  echo "gnuplot not on PATH: the plot's PNG is not checked"
fi
out=$(PATH=/nonexistent "$vmstack" run --plot "$tmp/q.png" -- "$prog" 2>&1); rc=$?
[ "$rc" -eq 125 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "--plot without gnuplot: status $rc, '$out'"

[ "$fails" -eq 0 ] || exit 1
echo "ok: trace --folded and run --plot"
