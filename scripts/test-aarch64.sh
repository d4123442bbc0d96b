#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The aarch64 build, cross-compiled and run under qemu-user: the fiber,
# scheduler, geometry and size-class tests with -cpu max (PAC, BTI, SVE)
# and once with -cpu cortex-a57; geometry and fibers at 16 and 64 KiB
# pages (-p); an overflow report and kill checked line by line; the
# preload of 'vmstack run' and 'vmstack trace' on a threaded program; a
# second build with branch protection forced on (BTI, pac-ret): its
# property notes, test_pac_switch and the fiber tests; checkstack on
# aarch64 builds of cs_frames.c and of vmstack's own sources against
# -fstack-usage.  VMSTACK_RESERVE is small: qemu
# tracks every reserved page, and 256 GiB would cost it 1.6 GB.
#
# Left out, each for its reason (printed below): tests that fork (under
# qemu-user 7.2 the child of any dynamically linked aarch64 program hangs
# in fork(), even a five-line one; _Fork and a raw clone do not), that
# need ptrace (gdb, the tracer's ptrace paths) or a sanitizer runtime, and
# the shell tests, which run programs directly (no binfmt_misc for qemu
# here).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps-aarch64.sh
dir=build-aarch64
cmake -S . -B "$dir" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DVMS_WERROR=ON >/dev/null
cmake --build "$dir" -j"$(nproc)" >/dev/null
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu VMSTACK_RESERVE=4G

echo "skipped under qemu: test_guards, test_hammer, test_errors, test_overflow_* (qemu-user 7.2 hangs in the" \
     "child of fork() of a dynamically linked program); the launcher of vmstack run/trace (it forks: its preload" \
     "runs directly); test_gdb*, trace ptrace paths (ptrace); *_asan/*_tsan (sanitizers); *.sh tests (no binfmt_misc)"
# test_pac_switch: built without pac-ret (libunwind < 1.7), the overwritten
# return address of a suspended fiber is jumped to.
tests='^(test_sizeclass|test_usage|test_json|test_fiber_sched|test_fiber_join|test_fiber_join_noguard|test_pagesize|test_pac_switch)$'
echo "=== aarch64 under qemu -cpu max"
(cd "$dir" && QEMU_CPU=max ctest --output-on-failure -j"$(nproc)" -R "$tests")
echo "=== aarch64 under qemu -cpu cortex-a57"
(cd "$dir" && QEMU_CPU=cortex-a57 ctest --output-on-failure -j"$(nproc)" -R '^(test_fiber_sched|test_pagesize)$')

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# arm64 kernels also run 16 KiB and 64 KiB pages: geometry, guards on both
# sides of every class, a 4 KiB guard refused by name, and fibers joined
# and killed, size classes, usage and the scheduler's colouring, at each.
# qemu 7.2 keeps 4 KiB page flags under -p and answers mincore in 4 KiB
# pages; the preloaded scripts/qemu-pageflags.c marks valid the loader's
# page tails it leaves out and gives mincore's answer per guest page (see
# there).  Not run at larger pages: test_guards, test_fiber_threads,
# test_fiber_sync and test_fiber_wait outlast their time limit there under
# qemu (not yet understood).
aarch64-linux-gnu-gcc -O2 -shared -fPIC -o "$tmp/pageflags.so" scripts/qemu-pageflags.c
for pg in 16384 65536; do
    echo "=== aarch64 under qemu -cpu max -p $pg"
    (cd "$dir" && QEMU_CPU=max QEMU_PAGESIZE=$pg QEMU_SET_ENV=LD_PRELOAD="$tmp/pageflags.so" \
        ctest --output-on-failure -j"$(nproc)" -R '^(test_pagesize|test_fiber_join|test_fiber_join_noguard|test_sizeclass|test_usage|test_fiber_sched)$')
done

echo "=== aarch64 overflow report and kill"
cat > "$tmp/ov.c" <<'C'
#include <vmstack.h>
#include <stdio.h>
static int deep(int n) { volatile char b[1024]; b[0] = (char)n; return n ? deep(n - 1) + b[0] : 0; }
static void *fib(void *a) { (void)a; return (void *)(long)deep(1000000); }
int main(void)
{
    vms_fiber f;
    vms_fiber_status st;
    if (vms_fiber_spawn(&f, fib, NULL, &(vms_fiber_opts){.name = "deep"}) || vms_run() || vms_fiber_join(f, &st))
        return 3;
    printf("end %d\n", (int)st.end);
    return 0;
}
C
aarch64-linux-gnu-gcc -O1 -g -fno-inline -o "$tmp/ov" "$tmp/ov.c" -Iinclude -L"$dir" -lvmstack -Wl,-rpath,"$PWD/$dir"
# The same with a frame small enough that its first instruction, stp x29, x30, [sp, #-N]!, is
# the one that faults: there sp is still the caller's (bl moves none), and the chain goes on.
# Its stack is small: the frames are 80 bytes, and under qemu each one unwound costs milliseconds.
sed 's/b\[1024\]/b[64]/; s/\.name = "deep"/.name = "deep", .stack_size = 16 << 10/' "$tmp/ov.c" > "$tmp/ov_first.c"
aarch64-linux-gnu-gcc -O1 -g -fno-inline -o "$tmp/ov_first" "$tmp/ov_first.c" -Iinclude -L"$dir" -lvmstack \
    -Wl,-rpath,"$PWD/$dir"
fails=0
expect() { grep -Eq "$1" "$tmp/err" || { echo "FAIL: no line matching: $1"; fails=$((fails + 1)); }; }
aarch64-linux-gnu-objdump -d "$tmp/ov_first" | grep -A1 '<deep>:$' | grep -Eq 'stp[[:space:]]+x29, x30, \[sp, #-[0-9]+\]!' ||
    { echo "FAIL: ov_first's deep does not begin with stp x29, x30, [sp, #-N]!"; fails=$((fails + 1)); }
for prog in ov ov_first; do
    for pg in 4096 16384 65536; do
        echo "--- $prog, page $pg"
        QEMU_CPU=max QEMU_PAGESIZE=$pg QEMU_SET_ENV=LD_PRELOAD="$tmp/pageflags.so" qemu-aarch64 "$tmp/$prog" > "$tmp/out" 2> "$tmp/err"
        cat "$tmp/err"
        expect '^vmstack: BUG: stack guard page was hit at 0x[0-9a-f]+ \(stack is 0x[0-9a-f]+\.\.0x[0-9a-f]+\)$'
        expect "^vmstack: fiber 'deep' \(id 1\) on thread '.*' \(tid [0-9]+\), start routine fib\+0x0/0x[0-9a-f]+ \[$prog\]$"
        expect '^vmstack: stack [0-9]+ KiB, guard [0-9]+ KiB at 0x[0-9a-f]+\.\.0x[0-9a-f]+; sp is [0-9]+ bytes below the top$'
        expect '^vmstack: ip 0x[0-9a-f]+ sp 0x[0-9a-f]+ bp 0x[0-9a-f]+$'
        expect '^vmstack: Call Trace:$'
        expect "^vmstack:  \\[<0x[0-9a-f]+>\\] deep\\+0x[0-9a-f]+/0x[0-9a-f]+ \\[$prog\\]( [^ ]+:[0-9]+)?$"
        expect "^vmstack:  \\[<0x[0-9a-f]+>\\] fib\\+0x[0-9a-f]+/0x[0-9a-f]+ \\[$prog\\]( [^ ]+:[0-9]+)?$"
        [ "$prog" = ov ] || expect "^vmstack:  \\[<0x[0-9a-f]+>\\] deep\\+0x0/0x[0-9a-f]+ \\[$prog\\]( [^ ]+:[0-9]+)?$"
        expect "^vmstack: killed fiber 'deep'$"
        grep -qx 'end 2' "$tmp/out" || { echo "FAIL: the fiber did not end killed: $(cat "$tmp/out")"; fails=$((fails + 1)); }
    done
done
[ "$fails" = 0 ] || exit 1

# 'vmstack run' and 'trace' fork the program, which qemu-user cannot do;
# their preload runs without the launcher, as a program that inherited
# LD_PRELOAD would: the table and the reports go to the program's stderr
# (there is no launcher's memory to keep them in, and no keeper).
echo "=== aarch64 preload of vmstack run and trace"
cat > "$tmp/thr.c" <<'C'
#include <pthread.h>
#include <stdio.h>
static int deep(int n) { volatile char b[1024]; b[0] = (char)n; return n ? deep(n - 1) + b[0] : 0; }
static void *run(void *a) { return (void *)(long)deep((int)(long)a); }
int main(int argc, char **argv)
{
    pthread_t t[4];
    pthread_attr_t at;
    int n = argc > 1 ? 1 : 4;
    (void)argv;
    /* PTHREAD_STACK_MIN on arm64: a small stack, so that the overflow's report walks ~120 frames, not 8,000. */
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 128 << 10);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], &at, run, (void *)(long)(argc > 1 ? 1000000 : 20)))
            return 3;
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    printf("joined %d\n", n);
    return 0;
}
C
aarch64-linux-gnu-gcc -O1 -g -fno-inline -pthread -o "$tmp/thr" "$tmp/thr.c"
preload=(-cpu max -E LD_PRELOAD="$PWD/$dir/libvmstack-preload.so")
qemu-aarch64 "${preload[@]}" "$tmp/thr" > "$tmp/out" 2> "$tmp/err" || { echo "FAIL: status $? under the preload"; fails=$((fails + 1)); }
cat "$tmp/err"
grep -qx 'joined 4' "$tmp/out" || { echo "FAIL: the threads did not run: $(cat "$tmp/out")"; fails=$((fails + 1)); }
expect '^vmstack run: stack usage of thr \(pid [0-9]+\) at exit$'
[ "$(grep -Ec '^ +[0-9]+ +.* run +128K +64K +[0-9]+ +[0-9.]+%$' "$tmp/err")" = 4 ] ||
    { echo "FAIL: not 4 rows of threads started by run"; fails=$((fails + 1)); }
echo "--- a thread overflows"
st=0
(ulimit -c 0; qemu-aarch64 "${preload[@]}" "$tmp/thr" overflow) > "$tmp/out" 2> "$tmp/err" || st=$?
cat "$tmp/err"
[ "$st" = 139 ] || { echo "FAIL: status $st, want 139 (SIGSEGV)"; fails=$((fails + 1)); }
expect '^vmstack: BUG: stack guard page was hit at 0x[0-9a-f]+ \(stack is 0x[0-9a-f]+\.\.0x[0-9a-f]+\)$'
expect "^vmstack: thread '.*' \(tid [0-9]+\), start routine run\+0x0/0x[0-9a-f]+ \[thr\]$"
expect '^vmstack: stack 128 KiB, guard 64 KiB at 0x[0-9a-f]+\.\.0x[0-9a-f]+; sp is [0-9]+ bytes below the top$'
expect '^vmstack: ip 0x[0-9a-f]+ sp 0x[0-9a-f]+ bp 0x[0-9a-f]+$'
expect '^vmstack: Call Trace:$'
expect '^vmstack:  \[<0x[0-9a-f]+>\] deep\+0x[0-9a-f]+/0x[0-9a-f]+ \[thr\]( [^ ]+:[0-9]+)?$'
expect '^vmstack:  \.\.\. [0-9]+ more frames of deep\+0x[0-9a-f]+/0x[0-9a-f]+ \[thr\]( [^ ]+:[0-9]+)?$'
expect '^vmstack:  \[<0x[0-9a-f]+>\] run\+0x[0-9a-f]+/0x[0-9a-f]+ \[thr\]( [^ ]+:[0-9]+)?$'
# The start routine's caller is glibc's start_thread, as without vmstack:
# the preload's entry tail-calls it, leaving no frame of its own.
grep -A1 -E '^vmstack:  \[<0x[0-9a-f]+>\] run\+0x[0-9a-f]+/0x[0-9a-f]+ \[thr\]( [^ ]+:[0-9]+)?$' "$tmp/err" | tail -n 1 |
    grep -Eq '^vmstack:  \[<0x[0-9a-f]+>\] \?\? \[libc\.so\.6\+0x[0-9a-f]+\]$' ||
    { echo "FAIL: the frame above run is not libc's"; fails=$((fails + 1)); }
expect '^vmstack: aborting: a thread cannot be killed alone without risking the rest of the process; vmstack run --stack-size sizes the stacks of threads that ask for no size$'
# Under trace (VMSTACK_RUN_TRACE=1, as 'vmstack trace' sets it): the depth
# of tests/trace_exact.c's cases exact to 8 bytes, as test_trace_exact.sh
# checks on x86-64, and the deepest function first (leafret: its caller,
# for an aarch64 leaf saves no return address the dead stack could show,
# and a leaf with no frame leaves no trace of its own; comeback: the leaf
# with a frame, its caller's one call that reaches that deep; overwrite:
# flagged partial).
aarch64-linux-gnu-gcc -O2 -g -pthread -o "$tmp/trace_exact" tests/trace_exact.c
for c in comeback:comeback_b_leaf bigframe:big_frame leafret:leafret_caller overwrite:partial; do
    name=${c%%:*} first=${c#*:}
    qemu-aarch64 "${preload[@]}" -E VMSTACK_RUN_TRACE=1 -E LD_BIND_NOW=1 "$tmp/trace_exact" "$name" \
        > "$tmp/out" 2> "$tmp/err" || { echo "FAIL: trace $name: status $?"; fails=$((fails + 1)); }
    truth=$(awk -v n="$name" '$1 == "truth" && $2 == n { print $3 }' "$tmp/out")
    depth=$(sed -n "s/^thread '$name' .*: \([0-9]*\) of [0-9]* stack bytes deep.*/\1/p" "$tmp/err")
    got=$(awk -v h="thread '$name' " 'index($0, h) == 1 { on = 1 } on && /^ *0\)/ { print $4; exit }' "$tmp/err")
    echo "trace $name: depth ${depth:-none}, truth ${truth:-none}, first ${got:-none}"
    [ -n "$depth" ] && [ -n "$truth" ] && [ $((depth - truth)) -ge -8 ] && [ $((depth - truth)) -le 8 ] ||
        { echo "FAIL: trace $name: depth '$depth', truth '$truth'"; fails=$((fails + 1)); }
    if [ "$first" = partial ]; then
        grep -A1 "^thread '$name' " "$tmp/err" | grep -q '^  (partial: ' || { echo "FAIL: trace $name: not partial"; fails=$((fails + 1)); }
    else
        case $got in "$first"+*) ;; *) echo "FAIL: trace $name: first entry '$got', want $first"; fails=$((fails + 1)) ;; esac
    fi
done
# Code without call-frame information (tests/trace_nocfi.c): the chain of
# the running thread ends at it, callers unknown, as test_trace_nocfi.sh
# checks on x86-64; libunwind's aarch64 answers such code otherwise.
aarch64-linux-gnu-gcc -O1 -g -pthread -o "$tmp/trace_nocfi" tests/trace_nocfi.c
qemu-aarch64 "${preload[@]}" -E VMSTACK_RUN_TRACE=1 -E LD_BIND_NOW=1 "$tmp/trace_nocfi" > "$tmp/out" 2> "$tmp/err" ||
    { echo "FAIL: trace nocfi: status $?"; fails=$((fails + 1)); }
sed -n "/^thread '.*' .*start routine thread (running)/,/^\$/p" "$tmp/err" > "$tmp/chain"
last=$(grep -E '^ *[0-9]+\) ' "$tmp/chain" | tail -n 1)
echo "trace nocfi: last entry: $last"
echo "$last" | grep -Eq '^ *[0-9]+\) +[0-9]+ +\? +nocfi_enter\+' &&
    grep -q '^     \.\.\. (callers unknown: ' "$tmp/chain" &&
    grep -Eq '^ +\.\.\. [0-9]+ more entries of the same [0-9]+-byte frame$' "$tmp/chain" ||
    { echo "FAIL: trace nocfi: $(cat "$tmp/err")"; fails=$((fails + 1)); }

# The gdb extension on a live aarch64 process, through qemu's gdb stub
# (gdb-multiarch): test_gdb.sh's live checks of the fibers, their frames
# and groups.  The stub cannot read thread-local storage, so no fiber is
# matched to its thread there (the Thread column says '?', the running one
# reads as runnable); gdb on arm64 itself reads it through libthread_db.
if command -v gdb-multiarch > /dev/null; then
    port=$((20000 + $$ % 20000))
    timeout 300 qemu-aarch64 -g "$port" "$dir/tests/gdb_fibers" live > "$tmp/gdb.out" 2>&1 &
    qpid=$!
    sleep 1
    timeout 300 gdb-multiarch -batch -nx -iex 'set debuginfod enabled off' -iex "set sysroot $QEMU_LD_PREFIX" \
        -iex "source gdb/vmstack-gdb.py" -ex "target remote :$port" -ex 'break gdb_fibers_stop' -ex continue \
        -ex 'info vmstack-fibers' -ex 'vmstack-fiber 2' -ex 'info vmstack-fibers --group' -ex continue \
        "$dir/tests/gdb_fibers" > "$tmp/gdb.log" 2>&1 || true
    wait "$qpid" || true
    bad=$(awk '$2 ~ /^waiter-/ { i = substr($2, 8); want = "wait_" substr("abc", i % 3 + 1, 1)
                if (($3 != "parked" || $0 !~ (" " want " at ")) && n++ < 3) print }' "$tmp/gdb.log")
    echo "gdb extension: $(grep -c '^  [0-9]* *waiter-' "$tmp/gdb.log") waiters listed; $(grep '^1001 fibers in' "$tmp/gdb.log")"
    grep -q '^1001 fibers$' "$tmp/gdb.log" && [ "$(grep -c '^  [0-9]* *waiter-' "$tmp/gdb.log")" = 1000 ] &&
        [ -z "$bad" ] && grep -q '^1001 fibers in 4 groups$' "$tmp/gdb.log" &&
        awk '/^fiber 2 .waiter-1/ { on = 1; next } on && /^#/ { print } on && !/^#/ { on = 0 }' "$tmp/gdb.log" |
            grep ' wait_b (' > /dev/null &&
        grep -q '^gdb_fibers: all fibers ended$' "$tmp/gdb.out" ||
        { echo "FAIL: gdb extension: ${bad:-}"; head -40 "$tmp/gdb.log"; fails=$((fails + 1)); }
else
    echo "skipped: the gdb extension under qemu's gdb stub (no gdb-multiarch)"
fi
[ "$fails" = 0 ] || exit 1

# Branch protection forced on (BTI, pac-ret; AUTO leaves it off with
# Debian 12's libunwind 1.6.2): the library and the tests that need it
# only.  Every object of the library carries BTI and PAC in its property
# note (vmstack-all.o, all of them linked together, has the AND of
# theirs); libvmstack.so has it only where the toolchain's start files
# (crti.o, crtbeginS.o) have it too, which Debian 12's do not.
echo "=== aarch64 with -DVMS_BRANCH_PROTECTION=ON"
pacdir=build-aarch64-pac
cmake -S . -B "$pacdir" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DVMS_WERROR=ON \
    -DVMS_BRANCH_PROTECTION=ON > "$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; exit 1; }
grep -q 'aarch64 branch protection (BTI, pac-ret): ON' "$tmp/cmake.log" || { echo "FAIL: branch protection not on"; exit 1; }
cmake --build "$pacdir" -j"$(nproc)" --target vmstack test_pac_switch test_fiber_sched test_fiber_join >/dev/null
note() { aarch64-linux-gnu-readelf -n "$1" | sed -n 's/^ *Properties: AArch64 feature: //p'; }
echo "property notes: vmstack-all.o '$(note "$pacdir/vmstack-all.o")', libvmstack.so '$(note "$pacdir/libvmstack.so")'," \
     "crti.o '$(note "$(aarch64-linux-gnu-gcc -print-file-name=crti.o)")'"
[ "$(note "$pacdir/vmstack-all.o")" = "BTI, PAC" ] || { echo "FAIL: the library's objects are not all BTI, PAC"; exit 1; }
if [ "$(note "$(aarch64-linux-gnu-gcc -print-file-name=crti.o)")" = "BTI, PAC" ]; then
    [ "$(note "$pacdir/libvmstack.so")" = "BTI, PAC" ] || { echo "FAIL: libvmstack.so is not BTI, PAC"; exit 1; }
fi
(cd "$pacdir" && QEMU_CPU=max ctest --output-on-failure -j"$(nproc)" -R '^(test_fiber_sched|test_fiber_join|test_fiber_join_noguard)$')
# qemu 7.2's -cpu max has no FEAT_FPAC: the failed autiasp corrupts the
# address, and the ret to it faults (SIGSEGV); cortex-a57 has no PAC at all.
echo "--- test_pac_switch, -cpu max: the tampered resume dies of SIGSEGV"
QEMU_CPU=max qemu-aarch64 "$pacdir/tests/test_pac_switch" SIGSEGV
echo "--- test_pac_switch, -cpu cortex-a57: the hijack goes through"
QEMU_CPU=cortex-a57 qemu-aarch64 "$pacdir/tests/test_pac_switch"

echo "=== checkstack on aarch64 code against -fstack-usage"
host=build-test
[ -x "$host/vmstack" ] || { cmake -S . -B "$host" -DVMS_WERROR=ON >/dev/null && cmake --build "$host" -j"$(nproc)" >/dev/null; }
VMS_CROSS_LIBC=1 sh tests/test_checkstack.sh "$PWD/$host/vmstack" aarch64-linux-gnu-gcc "$PWD/tests/cs_frames.c" \
    "$PWD/$dir/libvmstack.so"
echo "aarch64: all passed"
