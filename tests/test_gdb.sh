#!/bin/sh
# SPDX-License-Identifier: MIT
# The gdb extension on gdb_fibers (1,000 waiting fibers and one running),
#   core  the running fiber overflows under the abort policy; gdb in batch
#         mode on the core file: bt shows the overflowing chain, and
#         info vmstack-fibers / vmstack-fiber / --group show every fiber
#   live  the same commands on the live process stopped at a breakpoint;
#         then it goes on and ends normally, its frames untouched
# The core comes from the kernel when core_pattern names a file we can find
# (ulimit -c raised here); when it pipes to a program, or no core appears,
# gdb writes it with gcore at the moment the kernel would have (set
# VMS_TEST_GCORE=1 to take that way here).
# SCRIPT is the extension to `source`, or a build directory: then gdb must
# auto-load the copy beside libvmstack.so there (the program is linked with
# it), once the directory is a safe path.
# Usage: test_gdb.sh core|live GDB_FIBERS_BINARY SCRIPT|BUILD_DIR
set -u
mode=$1 prog=$2 script=$3
if [ -d "$script" ]; then
  load="add-auto-load-safe-path $script"
else
  load="source $script"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

gdb_batch() { # OUTPUT gdb-args...
  out=$1; shift
  timeout 300 gdb -batch -nx -iex 'set debuginfod enabled off' -iex "$load" "$@" >"$out" 2>&1
}

# The kernel's core of the program, or nothing.
kernel_core() {
  pattern=$(cat /proc/sys/kernel/core_pattern)
  case $pattern in '|'*) return ;; esac
  case $pattern in /*) dir=$(dirname "$pattern") ;; *) dir=$tmp/run/$(dirname "$pattern") ;; esac
  stem=$(basename "$pattern"); stem=${stem%%%*}
  # The guard probe's child dies by SIGSEGV too: the program's core is the largest.
  find "$dir" -maxdepth 1 -type f -name "${stem}*" -newer "$tmp/start" -printf '%s %p\n' 2>/dev/null |
    sort -n | tail -1 | cut -d' ' -f2-
}

make_core() {
  mkdir "$tmp/run"; touch "$tmp/start"
  (cd "$tmp/run" && ulimit -c unlimited 2>/dev/null; exec "$prog" overflow) >"$tmp/stdout" 2>"$tmp/stderr"
  status=$?
  [ "$status" -eq 139 ] || fail "gdb_fibers overflow: exit status $status, not death by SIGSEGV (139)"
  grep -q "^vmstack: fiber 'overflow' (id [0-9]*) on thread" "$tmp/stderr" || fail "no overflow report"
  grep -qx "vmstack: aborting: the overflow policy for fibers is abort (vms_set_overflow_policy); vms_fiber_opts.stack_size sizes a fiber's stack" "$tmp/stderr" ||
    fail "the report does not end in why it aborts: $(cat "$tmp/stderr")"
  core=$(kernel_core)
  if [ -n "$core" ] && [ -z "${VMS_TEST_GCORE:-}" ]; then
    echo "core file from the kernel: $core"
    return
  fi
  # First stop: the guard hit, passed to vmstack's handler, which reports and
  # restores the default action; second stop: the same fault, now fatal.
  # gcore reads memory in 1 MiB blocks and loses a whole block that holds a
  # guard marker (MADV_GUARD_INSTALL), so this run has mprotect guards.
  core=$tmp/gcore
  VMSTACK_GUARD=mprotect timeout 300 gdb -batch -nx -ex run -ex continue -ex "gcore $core" -ex kill \
    --args "$prog" overflow >"$tmp/gcore.log" 2>&1
  [ -s "$core" ] || { cat "$tmp/gcore.log"; fail "gcore wrote no core"; }
  echo "core file written by gcore (core_pattern: $(cat /proc/sys/kernel/core_pattern))"
}

# The checks on one gdb session's output, OUT; RUNNING is the last fiber's name.
check_listing() {
  out=$1 running=$2
  n=$(grep -c "^[ *] [0-9]" "$out")
  [ "$n" -eq 1001 ] || fail "info vmstack-fibers listed $n fibers, not 1001"
  grep -q "^1001 fibers$" "$out" || fail "no '1001 fibers' line"
  # waiter-i is parked in wait_a, wait_b or wait_c by i % 3.
  bad=$(awk '{ sub(/^\*/, " ") } $2 ~ /^waiter-/ { i = substr($2, 8); want = "wait_" substr("abc", i % 3 + 1, 1)
               if ($3 != "parked" || index($0, " " want " at ") == 0) print }' "$out" | head -3)
  [ -z "$bad" ] || fail "waiters with a wrong state or frame: $bad"
  w=$(awk '$2 ~ /^waiter-/' "$out" | wc -l)
  [ "$w" -eq 1000 ] || fail "$w waiters listed, not 1000"
  grep -Eq "^\* [0-9]+ +$running +running +1 \(" "$out" || fail "fiber '$running' is not listed as running on thread 1"
}

check_fiber_bt() { # OUT FUNCTION
  awk '/^fiber [0-9]+ .waiter-/ { on = 1; next } on && /^#/ { print } on && !/^#/ { on = 0 }' "$1" |
    grep -q " $2 (" || fail "vmstack-fiber shows no frame in $2"
}

ids_of() { # OUT NAME: the id the listing gives the fiber NAME
  awk -v n="$2" '$2 == n { print $1 }' "$1" | head -1
}

case $mode in
core)
  make_core
  gdb_batch "$tmp/list" -ex 'bt 3' -ex 'info vmstack-fibers' "$prog" "$core"
  grep -q "^#0 .* in overflow_here (" "$tmp/list" || fail "bt on the core does not start in overflow_here"
  # gdb prints frame #0 when it loads the core, then bt 3 its three frames.
  [ "$(grep -c "^#[0-9].* overflow_here (" "$tmp/list")" -eq 4 ] || fail "bt 3 on the core is not the overflowing chain"
  check_listing "$tmp/list" overflow
  a=$(ids_of "$tmp/list" waiter-0) b=$(ids_of "$tmp/list" waiter-500) c=$(ids_of "$tmp/list" waiter-997)
  gdb_batch "$tmp/a" -ex "vmstack-fiber $a" "$prog" "$core"; check_fiber_bt "$tmp/a" wait_a
  gdb_batch "$tmp/b" -ex "vmstack-fiber $b" "$prog" "$core"; check_fiber_bt "$tmp/b" wait_c
  gdb_batch "$tmp/c" -ex "vmstack-fiber $c" "$prog" "$core"; check_fiber_bt "$tmp/c" wait_b
  gdb_batch "$tmp/g" -ex 'info vmstack-fibers --group' "$prog" "$core"
  grep -q "^1001 fibers in 4 groups$" "$tmp/g" || fail "--group did not find the 4 distinct backtraces"
  grep -q "^334 fibers (parked)" "$tmp/g" || fail "--group: no group of 334 parked fibers"
  ;;
live)
  # After the fiber commands, the thread's own frames must be back: bt 1
  # shows the breakpoint's function, and the program ends normally.
  gdb_batch "$tmp/list" -ex 'break gdb_fibers_stop' -ex run -ex 'info vmstack-fibers' \
    -ex 'vmstack-fiber 2' -ex 'vmstack-fiber 3 info frame' -ex 'bt 1' -ex 'info vmstack-fibers --group' \
    -ex continue --args "$prog" live
  check_listing "$tmp/list" live
  check_fiber_bt "$tmp/list" wait_b
  grep -q "^#0  gdb_fibers_stop () at" "$tmp/list" || fail "the thread's own frames are not back after vmstack-fiber"
  grep -q "^1001 fibers in 4 groups$" "$tmp/list" || fail "--group did not find the 4 distinct backtraces"
  grep -q "^gdb_fibers: all fibers ended$" "$tmp/list" || fail "the program did not go on to its end"
  grep -q "exited normally" "$tmp/list" || fail "the program did not exit normally"
  ;;
*) echo "usage: test_gdb.sh core|live PROGRAM SCRIPT"; exit 2 ;;
esac
if [ "$fails" -ne 0 ]; then
  echo "--- gdb output:"; head -40 "$tmp/list"
  exit 1
fi
echo "ok: gdb extension on a $mode process, 1001 fibers"
