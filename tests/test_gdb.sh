#!/bin/sh
# SPDX-License-Identifier: MIT
# The gdb extension on gdb_fibers (1,000 waiting fibers and one running),
#   core  the running fiber overflows under the abort policy; gdb in batch
#         mode on the core file: bt shows the overflowing chain, and
#         info vmstack-fibers / vmstack-fiber / --group show every fiber
#   live  the same commands on the live process stopped at a breakpoint;
#         then it goes on and ends normally, its frames untouched
# The cores: the kernel's when core_pattern names a file we can find (ulimit
# -c raised here), and always one that the extension's vmstack-gcore writes
# at the moment the kernel would have, both in the default guard mode: each
# is checked the same way (each of the 1,000 waiting fibers' frames).  The
# overflow under gdb stops at the guard hit, where the extension says which
# fiber hit which guard and what `continue` does.  vmstack-gcore's core is
# sparse: with 101 fibers, on disk at most 4 times the kernel's core.
# Frames: the Frame column's "#N function" is the first frame outside
# vmstack's own code (a receive from a channel shows the caller, not the
# library's static wait_on), N is gdb's frame number, which vmstack-fiber's
# backtrace prints and `vmstack-fiber ID frame N` selects, and `info locals`
# (with debug information) shows that function's locals.
# SCRIPT is the extension to `source`, or a build directory: then gdb must
# auto-load the copy beside libvmstack.so there (the program is linked with
# it), once the directory is a safe path.
# With `stripped`, the program and the library it is linked with are copies
# stripped of their debug information (strip --strip-debug): the extension
# reads vms_debug_table instead, lists the same fibers, states and frames,
# and vmstack-fiber gives the backtrace that the debug information gives
# (the same functions, less the inlined ones, which have no symbol).
# Usage: test_gdb.sh core|live GDB_FIBERS_BINARY SCRIPT|BUILD_DIR [stripped]
set -u
mode=$1 prog=$2 script=$3 stripped=${4:-}
if [ -d "$script" ]; then
  load="add-auto-load-safe-path $script"
else
  load="source $script"
fi
tmp=$(mktemp -d)
made=
trap 'rm -rf "$tmp" $made' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The stripped copies; $orig keeps the program with its debug information.
orig=$prog
if [ "$stripped" = stripped ]; then
  cp "$orig" "$tmp/prog" && strip --strip-debug "$tmp/prog" || exit 1
  prog=$tmp/prog
  lib=$(ldd "$orig" | awk '$1 ~ /^libvmstack\.so/ { print $3 }')
  if [ -n "$lib" ]; then
    mkdir "$tmp/lib" && cp "$lib" "$tmp/lib/" && strip --strip-debug "$tmp/lib/$(basename "$lib")" || exit 1
    export LD_LIBRARY_PATH=$tmp/lib
    # Auto-loaded: the extension beside the copy, as beside the original.
    if [ -d "$script" ]; then
      cp "$(readlink -f "$lib")-gdb.py" "$tmp/lib/$(basename "$lib")-gdb.py" || exit 1
      load="add-auto-load-safe-path $tmp/lib:$script"
    fi
  fi
  for f in "$prog" ${lib:+"$tmp/lib/$(basename "$lib")"}; do
    if readelf -S "$f" | grep -q '\.debug_info'; then echo "FAIL: $f still has debug information"; exit 1; fi
  done
fi

gdb_batch() { # OUTPUT gdb-args...
  out=$1; shift
  # The program with its debug information runs with the library that has it.
  run=
  case " $* " in *" $orig "*) run="env -u LD_LIBRARY_PATH" ;; esac
  timeout 300 $run gdb -batch -nx -iex 'set debuginfod enabled off' -iex "$load" "$@" >"$out" 2>&1
}

# The kernel's core of the program (process PID), or nothing.
kernel_core() { # PID
  pattern=$(cat /proc/sys/kernel/core_pattern)
  case $pattern in '|'*) return ;; esac
  case $pattern in /*) ;; *) pattern=$tmp/run/$pattern ;; esac
  # A name made of the pid alone: the file of that process.
  name=$(printf '%s' "$pattern" | sed "s/%p/$1/g")
  case $name in *%*) ;; *) [ -f "$name" ] && echo "$name"; [ -f "$name.$1" ] && echo "$name.$1"; return ;; esac
  dir=$(dirname "$pattern")
  stem=$(basename "$pattern"); stem=${stem%%%*}
  # The guard probe's child dies by SIGSEGV too: the program's core is the largest.
  find "$dir" -maxdepth 1 -type f -name "${stem}*" -newer "$tmp/start" -printf '%s %p\n' 2>/dev/null |
    sort -n | tail -1 | cut -d' ' -f2-
}

# The cores to check, in $cores: the kernel's, when core_pattern names a
# file (else the output says it was skipped), and vmstack-gcore's, both
# taken in the guard mode of the environment (the default: MADV_GUARD_INSTALL
# where the kernel has it).
make_cores() {
  mkdir -p "$tmp/run"; touch "$tmp/start"
  (cd "$tmp/run" && ulimit -c unlimited 2>/dev/null; exec "$prog" overflow "$@") >"$tmp/stdout" 2>"$tmp/stderr" &
  pid=$!
  wait $pid
  status=$?
  [ "$status" -eq 139 ] || fail "gdb_fibers overflow: exit status $status, not death by SIGSEGV (139)"
  grep -q "^vmstack: fiber 'overflow' (id [0-9]*) on thread" "$tmp/stderr" || fail "no overflow report"
  grep -qx "vmstack: aborting: the overflow policy for fibers is abort (vms_set_overflow_policy); vms_fiber_opts.stack_size sizes a fiber's stack" "$tmp/stderr" ||
    fail "the report does not end in why it aborts: $(cat "$tmp/stderr")"
  cores=$(kernel_core $pid)
  if [ -n "$cores" ]; then
    echo "core file from the kernel: $cores"
    # Named by the pid: ours, removed at the end.
    case $cores in *$pid*) made="$made $cores" ;; esac
  else
    echo "kernel's core skipped: core_pattern '$(cat /proc/sys/kernel/core_pattern)' names no file here, or ulimit -c is 0"
  fi
  # First stop: the guard hit, passed to vmstack's handler, which reports and
  # restores the default action; second stop: the same fault, now fatal.
  # Plain gcore would lose every fiber stack beside a guard marker.
  rm -f "$tmp/gcore"
  timeout 300 gdb -batch -nx -iex "$load" -ex run -ex continue -ex 'info proc status' \
    -ex "vmstack-gcore $tmp/gcore" -ex kill --args "$prog" overflow "$@" >"$tmp/gcore.log" 2>&1
  if [ -s "$tmp/gcore" ] && grep -q "^vmstack-gcore: $tmp/gcore written" "$tmp/gcore.log"; then
    grep "^vmstack-gcore:" "$tmp/gcore.log"
    cores="$cores $tmp/gcore"
  else
    cat "$tmp/gcore.log"; fail "vmstack-gcore wrote no core"
  fi
}

# At each of the two stops of the overflow under gdb ($tmp/gcore.log), the
# extension names the fiber, the stack and the guard of vmstack's own report,
# and says what `continue` does: first vmstack reports, then the process ends.
check_guard_stop() {
  log=$tmp/gcore.log
  id=$(sed -n "s/^vmstack: fiber 'overflow' (id \([0-9]*\)) on thread.*/\1/p" "$log")
  at=$(sed -n 's/^vmstack: BUG: stack guard page was hit at \(0x[0-9a-f]*\) (stack is \(0x[0-9a-f]*\)\.\.\(0x[0-9a-f]*\))$/\1 \2 \3/p' "$log")
  guard=$(sed -n 's/^vmstack: stack .*, guard .* at \(0x[0-9a-f]*\)\.\.0x[0-9a-f]*; .*/\1/p' "$log")
  set -- $at
  if [ -z "$id" ] || [ $# -ne 3 ] || [ -z "$guard" ]; then fail "no overflow report under gdb"; cat "$log"; return; fi
  what="its guard pages $guard-$2"
  [ "$stripped" = stripped ] && what="the guard pages below it"
  hit="vmstack: fiber $id 'overflow' on thread 1 [(][^)]*[)] overflowed its stack $2-$3: the access at $1, $(($2 - $1)) bytes below it, hit $what"
  awk -v hit="^$hit\$" '
    $0 ~ hit { hits++; next }
    /^vmstack: `continue` passes the SIGSEGV to vmstack, which reports the overflow and kills the fiber/ { if (hits == 1 && !report) first = 1; next }
    /^vmstack: BUG: stack guard page was hit/ { report = 1; next }
    /^vmstack: vmstack.s handler has reported it already and gave SIGSEGV its default action: `continue` ends the process/ { if (hits == 2 && report) second = 1 }
    END { exit !(hits == 2 && first && second) }' "$log" ||
    { fail "the guard hit under gdb is not explained at both stops (want: $hit)"; grep "^vmstack" "$log"; }
}

# vmstack-gcore's core of gdb_fibers with 101 fibers is sparse: on disk at
# most 4 times the kernel's core of the same program, or without one, 4
# times the resident memory of the process it was taken of.
check_gcore_size() {
  make_cores 100
  set -- $cores
  [ $# -ge 1 ] || return
  mine=$(du -k "$tmp/gcore" | cut -f1)
  if [ $# -eq 2 ]; then
    kernel=$(du -k "$1" | cut -f1) against="the kernel's core ($1)"
  else
    kernel=$(awk '$1 == "VmRSS:" { print $2 }' "$tmp/gcore.log") against="the resident memory"
  fi
  echo "vmstack-gcore of 101 fibers: $mine KiB on disk; $against: $kernel KiB"
  [ -n "$kernel" ] && [ "$mine" -le $((4 * kernel)) ] || fail "vmstack-gcore takes $mine KiB on disk, more than 4 times $kernel KiB"
}

# The checks on one gdb session's output, OUT; RUNNING is the last fiber's name.
check_listing() {
  out=$1 running=$2
  n=$(grep -c "^[ *] [0-9]" "$out")
  [ "$n" -eq 1001 ] || fail "info vmstack-fibers listed $n fibers, not 1001"
  grep -q "^1001 fibers$" "$out" || fail "no '1001 fibers' line"
  # waiter-i is parked in wait_a, wait_b or wait_c by i % 3, gdb's frame N.
  bad=$(awk '{ sub(/^\*/, " ") } $2 ~ /^waiter-/ { i = substr($2, 8); want = "wait_" substr("abc", i % 3 + 1, 1)
               if ($3 != "parked" || $0 !~ (" #[0-9]+ " want "( at | from |$)")) print }' "$out" | head -3)
  [ -z "$bad" ] || fail "waiters with a wrong state or frame: $bad"
  w=$(awk '$2 ~ /^waiter-/' "$out" | wc -l)
  [ "$w" -eq 1000 ] || fail "$w waiters listed, not 1000"
  # Its frame: gdb's #0, where it stopped (in the guard, overflowing, or at the breakpoint).
  grep -Eq "^\* [0-9]+ +$running +running +1 \(.* #0 (overflow_here|gdb_fibers_stop)( |$)" "$out" ||
    fail "fiber '$running' is not listed as running on thread 1 in frame #0"
}

check_fiber_bt() { # OUT FUNCTION
  awk '/^fiber [0-9]+ .waiter-/ { on = 1; next } on && /^#/ { print } on && !/^#/ { on = 0 }' "$1" |
    grep -q " $2 (" || fail "vmstack-fiber shows no frame in $2"
}

# The Frame column of fiber ID in the listing LIST: "N FUNCTION" of its "#N FUNCTION".
frame_of() { # LIST ID
  awk -v id="$2" '{ sub(/^\*/, " ") } $1 == id { for (i = 2; i < NF; i++) if ($i ~ /^#[0-9]+$/) { print substr($i, 2), $(i + 1); exit } }' "$1"
}

# OUT holds `vmstack-fiber ID`, `vmstack-fiber ID frame N` and `vmstack-fiber
# ID info locals`, N from the listing: the backtrace prints FUNCTION as #N,
# says commands run there, `frame N` selects it and `info locals` shows its
# local (not without debug information).
check_frame() { # OUT ID N FUNCTION
  grep -Eq "^#$3 +$4 \(" "$1" || fail "vmstack-fiber $2 does not print $4 as #$3: $(grep -m1 " $4 (" "$1")"
  grep -qxF "(vmstack-fiber $2 COMMAND runs COMMAND in frame #$3, $4)" "$1" || fail "vmstack-fiber $2: no frame #$3 for commands"
  [ "$(grep -Ec "^#$3 +(0x[0-9a-f]+ in )?$4 \(" "$1")" -eq 2 ] || fail "vmstack-fiber $2 frame $3 does not select $4"
  [ "$stripped" = stripped ] || grep -Eqx "rounds = [0-9]+" "$1" || fail "vmstack-fiber $2 info locals shows no locals of $4"
}

ids_of() { # OUT NAME: the id the listing gives the fiber NAME
  awk -v n="$2" '{ sub(/^\*/, " ") } $2 == n { print $1 }' "$1" | head -1
}

# The functions of vmstack-fiber's backtrace in OUT, one a line; with
# SYMBOLS, only those that have a symbol there (not inlined ones).
bt_functions() { # OUT [SYMBOLS]
  awk '/^fiber [0-9]+ / { on = 1; next } on && /^#/ { print $2 } on && !/^#/ { on = 0 }' "$1" |
    if [ -n "${2:-}" ]; then grep -Fxf "$2"; else cat; fi
}

# In the stripped mode: the backtrace of vmstack-fiber in OUT is the one
# the debug information gives in DWARF_OUT.
same_bt() { # OUT DWARF_OUT
  [ "$stripped" = stripped ] || return 0
  if grep -q " at [^ ]*:[0-9]" "$1"; then fail "file:line without debug information: $(grep -m1 " at " "$1")"; fi
  nm "$orig" ${lib:+"$lib"} 2>/dev/null | awk '$2 ~ /^[tTwW]$/ { print $3 }' | sort -u >"$tmp/syms"
  bt_functions "$1" >"$tmp/bt.stripped"
  bt_functions "$2" "$tmp/syms" >"$tmp/bt.dwarf"
  [ -s "$tmp/bt.stripped" ] && cmp -s "$tmp/bt.stripped" "$tmp/bt.dwarf" ||
    fail "vmstack-fiber without debug information: $(tr '\n' ' ' <"$tmp/bt.stripped"), with: $(tr '\n' ' ' <"$tmp/bt.dwarf")"
}

case $mode in
core)
  make_cores
  for core in $cores; do
  echo "checking $core"
  gdb_batch "$tmp/list" -ex 'bt 3' -ex 'info vmstack-fibers' "$prog" "$core"
  grep -q "^#0 .* in overflow_here (" "$tmp/list" || fail "bt on the core does not start in overflow_here"
  # gdb prints frame #0 when it loads the core, then bt 3 its three frames.
  [ "$(grep -c "^#[0-9].* overflow_here (" "$tmp/list")" -eq 4 ] || fail "bt 3 on the core is not the overflowing chain"
  check_listing "$tmp/list" overflow
  a=$(ids_of "$tmp/list" waiter-0) b=$(ids_of "$tmp/list" waiter-500) c=$(ids_of "$tmp/list" waiter-997)
  gdb_batch "$tmp/a" -ex "vmstack-fiber $a" "$prog" "$core"; check_fiber_bt "$tmp/a" wait_a
  if [ "$stripped" = stripped ]; then
    gdb_batch "$tmp/a.dwarf" -ex "vmstack-fiber $a" "$orig" "$core"; same_bt "$tmp/a" "$tmp/a.dwarf"
    o=$(ids_of "$tmp/list" overflow)
    gdb_batch "$tmp/o" -ex "vmstack-fiber $o" "$prog" "$core"
    gdb_batch "$tmp/o.dwarf" -ex "vmstack-fiber $o" "$orig" "$core"; same_bt "$tmp/o" "$tmp/o.dwarf"
  fi
  set -- $(frame_of "$tmp/list" "$b")
  gdb_batch "$tmp/b" -ex "vmstack-fiber $b" -ex "vmstack-fiber $b frame ${1:-0}" -ex "vmstack-fiber $b info locals" \
    "$prog" "$core"
  check_fiber_bt "$tmp/b" wait_c; check_frame "$tmp/b" "$b" "${1:-0}" "${2:-?}"
  gdb_batch "$tmp/c" -ex "vmstack-fiber $c" "$prog" "$core"; check_fiber_bt "$tmp/c" wait_b
  gdb_batch "$tmp/g" -ex 'info vmstack-fibers --group' "$prog" "$core"
  grep -q "^1001 fibers in 4 groups$" "$tmp/g" || fail "--group did not find the 4 distinct backtraces"
  grep -q "^334 fibers (parked)" "$tmp/g" || fail "--group: no group of 334 parked fibers"
  done
  check_guard_stop
  check_gcore_size
  ;;
live)
  # After the fiber commands, the thread's own frames must be back: bt 1
  # shows the breakpoint's function, and the program ends normally.
  gdb_batch "$tmp/list" -ex 'break gdb_fibers_stop' -ex run -ex 'info vmstack-fibers' \
    -ex 'vmstack-fiber 2' -ex 'vmstack-fiber 3 info frame' -ex 'bt 1' -ex 'info vmstack-fibers --group' \
    -ex continue --args "$prog" live
  check_listing "$tmp/list" live
  check_fiber_bt "$tmp/list" wait_b
  grep -q "^#0  gdb_fibers_stop () at\|^#0  0x[0-9a-f]* in gdb_fibers_stop ()$" "$tmp/list" ||
    fail "the thread's own frames are not back after vmstack-fiber"
  c=$(ids_of "$tmp/list" waiter-500)
  set -- $(frame_of "$tmp/list" "$c")
  gdb_batch "$tmp/frame" -ex 'break gdb_fibers_stop' -ex run -ex "vmstack-fiber $c" -ex "vmstack-fiber $c frame ${1:-0}" \
    -ex "vmstack-fiber $c info locals" -ex kill --args "$prog" live
  check_frame "$tmp/frame" "$c" "${1:-0}" "${2:-?}"
  if [ "$stripped" = stripped ]; then
    for p in "$prog" "$orig"; do
      gdb_batch "$tmp/bt.$(basename "$p")" -ex 'break gdb_fibers_stop' -ex run -ex 'vmstack-fiber 2' \
        -ex 'vmstack-fiber 1001' -ex kill --args "$p" live
    done
    for id in 2 1001; do
      for p in "$prog" "$orig"; do
        awk -v id="$id" '/^fiber / { on = $2 == id } on' "$tmp/bt.$(basename "$p")" >"$tmp/bt$id.$(basename "$p")"
      done
      same_bt "$tmp/bt$id.$(basename "$prog")" "$tmp/bt$id.$(basename "$orig")"
    done
  fi
  grep -q "^1001 fibers in 4 groups$" "$tmp/list" || fail "--group did not find the 4 distinct backtraces"
  grep -q "^gdb_fibers: all fibers ended$" "$tmp/list" || fail "the program did not go on to its end"
  grep -q "exited normally" "$tmp/list" || fail "the program did not exit normally"
  ;;
*) echo "usage: test_gdb.sh core|live PROGRAM SCRIPT [stripped]"; exit 2 ;;
esac
if [ "$fails" -ne 0 ]; then
  echo "--- gdb output:"; head -40 "$tmp/list"
  exit 1
fi
echo "ok: gdb extension on a $mode process, 1001 fibers${stripped:+, without debug information}"
