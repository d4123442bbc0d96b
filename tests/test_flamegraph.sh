#!/bin/sh
# SPDX-License-Identifier: MIT
# 'vmstack trace --folded FILE', 'trace --flamegraph FILE.svg' and 'vmstack
# run --plot FILE.png|FILE.svg' on run_recurse (a thread 300 levels of 1 KiB frames deep):
#   folded  every line is "frames SPACE integer", frames joined by ';', rooted
#           at the thread (name and id), the recursion one frame "f [xN]";
#           the thread's weights add up to its chain's depth; the report
#           still reaches stderr; '-' is stdout, also from the keeper;
#           --json and 'run --folded' are refused with one line
#   flame   well-formed self-contained SVG, a box and tooltip per frame; in
#           chromium (when installed) names are drawn, zoom and search work
#   plot    a PNG of the expected size (RUN_PLOT_WIDTH x RUN_PLOT_HEIGHT), an
#           SVG for FILE.svg, also with --json, each thread's peak as a
#           percentage on a linear axis; other names, unwritable paths and
#           no gnuplot on PATH are refused with one line before the program runs
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
# Every chain is rooted at its task, by name and id; the recursion is one frame, as the report folds it.
bad=$(grep -Ev "^(main thread|thread) 'run_recurse' \((pid|tid) [0-9]+\);" "$tmp/f.folded" | head -3)
[ -z "$bad" ] || fail "lines not rooted at a thread: $bad"
tid=$(sed -n "s/^thread 'run_recurse' (tid \([0-9]*\)), start routine deep_thread: .*/\1/p" "$tmp/err")
more=$(sed -n 's/^ *\.\.\. \([0-9]*\) more entries of the same 1040-byte frame$/\1/p' "$tmp/err" | head -1)
[ -n "$tid" ] && [ -n "$more" ] || fail "no deep_thread chain with folded recursion in the report: $(cat "$tmp/err")"
grep -Eq "^thread 'run_recurse' \(tid $tid\);(.*;)?deep_thread;recurse[^;]* \[x$((more + 1))\] $(((more + 1) * 1040))\$" "$tmp/f.folded" ||
  fail "no folded recursion frame 'recurse [x$((more + 1))]' of $(((more + 1) * 1040)) bytes: $(grep deep_thread "$tmp/f.folded" | head -5)"
! grep -q ';recurse[^;]*;recurse' "$tmp/f.folded" || fail "the recursion is written out, not folded"
# The thread's lines add up to the depth the report gives for it.
depth=$(sed -n "s/^thread 'run_recurse' (tid $tid), start routine deep_thread: \([0-9]*\) of .*/\1/p" "$tmp/err")
sum=$(awk -v r="thread 'run_recurse' (tid $tid);" 'index($0, r) == 1 { s += $NF } END { print s + 0 }' "$tmp/f.folded")
[ -n "$depth" ] && [ "$sum" -eq "$depth" ] || fail "folded weights of thread $tid add up to $sum, its chain is $depth bytes deep"

# '-' is stdout, after the program's own output, also when the keeper writes (exit_group: no exit handlers).
(cd "$tmp" && "$vmstack" trace --folded - -- "$prog" 50 >"$tmp/stdout" 2>"$tmp/err"); rc=$?
[ "$rc" -eq 0 ] && [ ! -e "$tmp/-" ] || fail "trace --folded -: status $rc, a file named '-': $(ls "$tmp")"
head -1 "$tmp/stdout" | grep -qx '[0-9]*' && grep -q "^thread 'run_recurse' (tid [0-9]*);.*;deep_thread;" "$tmp/stdout" ||
  fail "trace --folded -: stdout: $(head -5 "$tmp/stdout")"
# The keeper's: python3 ends by a raw exit_group (as Go does), after a start deep enough for a chain.
if command -v python3 >/dev/null; then
  "$vmstack" trace --folded - -- python3 -c "import ctypes; ctypes.CDLL(None).syscall(231, 3)" 2>/dev/null |
    cat >"$tmp/stdout"
  grep -q "^main thread 'python3' (pid [0-9]*);" "$tmp/stdout" ||
    fail "trace --folded - at exit_group: stdout: $(head -5 "$tmp/stdout")"
fi

# --flamegraph: an SVG of its own; each frame a box with a tooltip (depth, size, file:line).
"$vmstack" trace --flamegraph "$tmp/f.svg" -- "$prog" 60 >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" -eq 0 ] || fail "trace --flamegraph: exit status $rc: $(cat "$tmp/err")"
if command -v xmllint >/dev/null; then
  xmllint --noout "$tmp/f.svg" || fail "--flamegraph: not well-formed XML"
fi
grep -q '^<svg .*xmlns="http://www.w3.org/2000/svg"' "$tmp/f.svg" || fail "--flamegraph: no SVG element"
! grep -Eq '(xlink:)?href=|<image|@import' "$tmp/f.svg" || fail "--flamegraph: refers to another file"
grep -q "<g class=\"f\" [^>]*data-n=\"recurse[^\"]* \[x[0-9]*\]\"><title>recurse[^<]*
depth [0-9]* bytes, size [0-9]* bytes ([0-9]* frames of 1040 bytes: recursion), [0-9]* bytes from here down
run_recurse.c:[0-9]* \[run_recurse\]</title><rect " "$tmp/f.svg" || fail "--flamegraph: no recurse frame with its tooltip"
[ "$(grep -c '<g class="f"' "$tmp/f.svg")" -ge 6 ] || fail "--flamegraph: fewer than 6 frames"

# In a real browser: the script ran (names fitted into their boxes), zoom and search from the address.
if command -v chromium >/dev/null; then
  dom() {
    timeout 120 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$tmp/chromium" \
      --dump-dom "file://$tmp/f.svg$1" 2>/dev/null
  }
  dom "" >"$tmp/dom"
  grep -q 'data-drawn="[0-9]' "$tmp/dom" || fail "chromium: the script did not run: $(head -c 300 "$tmp/dom")"
  grep -q "<text [^>]*>thread 'run_recurse' (tid [0-9]*)</text>" "$tmp/dom" || fail "chromium: no thread name drawn"
  grep -q "<text [^>]*>recurse[^<]* \[x[0-9]*\]</text>" "$tmp/dom" || fail "chromium: no recurse frame drawn"
  grep -q "<text [^>]*>deep_thread</text>" "$tmp/dom" || fail "chromium: no deep_thread frame drawn"
  dom "?zoom=deep_thread&s=^recurse" >"$tmp/dom"
  grep -q '<text id="matched"[^>]*>Matched: [1-9][0-9.]*%</text>' "$tmp/dom" || fail "chromium: search matched nothing"
  grep -q 'data-n="recurse[^"]*"[^>]*><title>[^<]*' "$tmp/dom" && grep -q 'fill="rgb(230,0,230)"' "$tmp/dom" ||
    fail "chromium: search highlighted nothing"
  grep -q "data-n=\"main thread 'run_recurse' (pid [0-9]*)\" style=\"display: none;\"" "$tmp/dom" ||
    fail "chromium: zoom on deep_thread left the main thread shown"
  tr '\n' ' ' <"$tmp/dom" | grep -q 'data-n="deep_thread"[^>]*><title>[^<]*</title><rect x="10.00" [^>]*width="1180.00"' ||
    fail "chromium: the zoomed frame does not span the width"
  # The main thread's column may be too narrow for its name: zoomed on, it is drawn whole.
  main=$(python3 -c "import html, re, sys, urllib.parse
m = re.search(r'data-n=\"(main thread [^\"]*)\"', open(sys.argv[1]).read())
print(urllib.parse.quote(html.unescape(m.group(1))) if m else '')" "$tmp/f.svg")
  dom "?zoom=$main" >"$tmp/dom"
  [ -n "$main" ] && grep -q "<text [^>]*>main thread 'run_recurse' (pid [0-9]*)</text>" "$tmp/dom" ||
    fail "chromium: no main thread drawn ('$main')"
else
  echo "chromium not installed (scripts/test-deps.sh): the flame graph is not opened in a browser"
fi

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
  # SVG by the name, with --json: each thread's bar labelled with its peak as a percentage of its
  # stack (as the JSON gives them), on a linear axis from 0 to 100.
  "$vmstack" run --json --plot "$tmp/p.svg" -- "$prog" 100 >/dev/null 2>"$tmp/json"; rc=$?
  [ "$rc" -eq 0 ] || fail "run --json --plot: exit status $rc: $(cat "$tmp/json")"
  head -c 5 "$tmp/p.svg" | grep -q '^<?xml' && grep -q '<svg' "$tmp/p.svg" || fail "run --plot x.svg wrote no SVG"
  ! command -v xmllint >/dev/null || xmllint --noout "$tmp/p.svg" || fail "--plot x.svg: not well-formed XML"
  texts=$(sed 's/<[^>]*>/\n/g' "$tmp/p.svg" | sed 's/^ *//; /^$/d')
  for t in $(python3 -c "import json, sys
for t in json.load(open(sys.argv[1]))['threads']: print('%.1f%%' % (100 * t['peak_bytes'] / t['stack_size']))" "$tmp/json"); do
    printf '%s\n' "$texts" | grep -qx "$t" || fail "--plot: no bar labelled $t"
  done
  for tic in 0 50 100; do printf '%s\n' "$texts" | grep -qx "$tic" || fail "--plot: no axis tic $tic"; done
  printf '%s\n' "$texts" | grep -qx 'peak use (% of the stack)' || fail "--plot: no percentage axis"
else
  echo "gnuplot not on PATH: the plot's PNG is not checked"
fi
# A name without .png or .svg, or a path that cannot be written: one line, 125, before the program runs.
for p in "$tmp/p.jpg" "$tmp/none/p.png"; do
  out=$("$vmstack" run --plot "$p" -- sh -c ": > '$tmp/ran'" 2>&1); rc=$?
  [ "$rc" -eq 125 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && [ ! -e "$tmp/ran" ] ||
    fail "--plot $p: status $rc, '$out', the program ran: $([ -e "$tmp/ran" ] && echo yes)"
done
out=$(PATH=/nonexistent "$vmstack" run --plot "$tmp/q.png" -- "$prog" 2>&1); rc=$?
[ "$rc" -eq 125 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "--plot without gnuplot: status $rc, '$out'"

[ "$fails" -eq 0 ] || exit 1
echo "ok: trace --folded and run --plot"
