#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The vmstack command's contract: --help, exit codes, one-line usage errors,
# the demo's figures, and bench alloc's JSON keys.
set -u
VMSTACK=$1
. "$(dirname "$0")/lib.sh"

out=$("$VMSTACK" --help); rc=$?
check "--help exits 0" test $rc -eq 0
check "--help lists demo and bench" grep -q "demo" <<<"$out"

err=$("$VMSTACK" frobnicate 2>&1 >/dev/null); rc=$?
check "unknown command exits 2" test $rc -eq 2
check "unknown command: one line naming it" test "$err" = "vmstack: unknown command 'frobnicate' (see 'vmstack --help')"

for sub in run trace bench checkstack demo; do
  check "help $sub is $sub --help" test "$("$VMSTACK" help $sub)" = "$("$VMSTACK" $sub --help)"
done
err=$("$VMSTACK" help frobnicate 2>&1 >/dev/null); rc=$?
check "help of an unknown command exits 2, one line" test $rc -eq 2 -a "$err" = "vmstack help: unknown command 'frobnicate' (see 'vmstack --help')"
check "-V is --version" test "$("$VMSTACK" -V)" = "$("$VMSTACK" --version)"

err=$("$VMSTACK" demo extra 2>&1 >/dev/null); rc=$?
check "demo with an argument exits 2" test $rc -eq 2
check "demo usage error text" test "$err" = "vmstack demo: unexpected argument 'extra' (see 'vmstack demo --help')"

err=$("$VMSTACK" bench nosuch 2>&1 >/dev/null); rc=$?
check "bench of an unknown benchmark exits 2" test $rc -eq 2
check "bench usage error text" test "$err" = "vmstack bench: no benchmark named 'nosuch' (see 'vmstack bench --help')"

for sub in demo bench; do
  "$VMSTACK" $sub --help >/dev/null; rc=$?
  check "$sub --help exits 0" test $rc -eq 0
done

errfile=$(mktemp)
out=$("$VMSTACK" demo 2>"$errfile"); rc=$?
err=$(cat "$errfile"); rm -f "$errfile"
check "demo exits 0" test $rc -eq 0
check "demo's last line counts the fibers" test "$(tail -n 1 <<<"$out")" = "demo: 99999 fibers finished, 1 killed by stack overflow"
check "demo reports the overflow like an oops" grep -Eq "^vmstack: BUG: stack guard page was hit at 0x[0-9a-f]+ \(stack is 0x[0-9a-f]+\.\.0x[0-9a-f]+\)$" <<<"$err"
check "demo names the overflowing fiber" grep -Eq "^vmstack: fiber 'runaway-50007' \(id [0-9]+\) on thread" <<<"$err"
check "demo kills only that fiber" test "$(tail -n 1 <<<"$err")" = "vmstack: killed fiber 'runaway-50007'"
check "demo states the guard mode" grep -Eq "^guard mode: (madvise|mprotect)" <<<"$out"
check "demo catches the guard hit below a stack" grep -q "write to the byte below stack .*: child Segmentation fault" <<<"$out"
check "demo catches the guard hit above a stack" grep -q "write to the byte above its top .*: child Segmentation fault" <<<"$out"
check "demo rejects a double free" grep -q "double free of the first stack: .*was already freed" <<<"$out"

json=$("$VMSTACK" bench alloc --json 2>/dev/null); rc=$?
check "bench alloc --json exits 0" test $rc -eq 0
check "bench alloc --json has alloc_free_ns.{malloc,mmap_guard,vmstack} as numbers" python3 -c '
import json, sys
d = json.loads(sys.argv[1])
v = d["alloc_free_ns"]
assert all(isinstance(v[k], (int, float)) and v[k] > 0 for k in ("malloc", "mmap_guard", "vmstack")), v
' "$json"

passed "all CLI checks passed"
