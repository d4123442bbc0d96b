#!/bin/sh
# SPDX-License-Identifier: MIT
# 'vmstack run' changes nothing a program can observe, never hangs it and
# never leaves it silently unprotected: one case per argument.
# usage: test_harden.sh CASE VMSTACK BINDIR   (BINDIR holds the run_* programs)
# Exit 0 pass, 1 fail, 77 skip (a tool the case needs is not installed).
set -u
case_=$1 vmstack=$2 bin=$3
. "$(dirname "$0")/lib.sh"
tmp=$TMP

case $case_ in
nofork)
    # Start-up makes no child: the guard probe asks a system call, not a crash.  vmstack run
    # becomes the program (exec, no fork); the one task made is the middle one that makes the
    # keeper and ends at once: sharing the program's memory, no exit signal, never traced, so
    # that strace does not see what it makes (keeper.c).
    command -v strace > /dev/null || skip "strace not installed"
    strace -f -qq -e trace=fork,vfork,clone,clone3 -o "$tmp/trace" "$vmstack" run -- true 2> "$tmp/err" ||
        fail "vmstack run -- true under strace: $(cat "$tmp/err")"
    [ "$(grep -c . "$tmp/trace")" = 1 ] && grep -q 'flags=CLONE_VM|CLONE_UNTRACED) = [0-9]' "$tmp/trace" ||
        fail "start-up made a process or thread besides the program and its keeper: $(cat "$tmp/trace")"
    ;;
forkstress)
    # fork() while other threads create, join and detach: no child may hang on a lock.
    "$vmstack" run -- "$bin/run_forkstress" > "$tmp/out" 2> "$tmp/err" || fail "$(cat "$tmp/out" "$tmp/err")"
    grep -qx 'hung 0 failed 0' "$tmp/out" || fail "$(cat "$tmp/out")"
    ;;
forkstress_trace)
    # The same under 'vmstack trace', every thread deep enough that its end takes the tracer's locks.
    "$vmstack" trace -- "$bin/run_forkstress" deep > "$tmp/out" 2> "$tmp/err" || fail "$(cat "$tmp/out" "$tmp/err")"
    grep -qx 'hung 0 failed 0' "$tmp/out" || fail "$(cat "$tmp/out")"
    grep -q "^vmstack trace: deepest call chains of run_forkstress" "$tmp/err" || fail "no trace: $(cat "$tmp/err")"
    ;;
neighbour)
    # A thread's one large frame jumps its guard and the stack of the thread below, into that
    # one's guard: the runner is blamed, the neighbour named, in both guard modes.  With the
    # per-CPU caches off, fresh thread stacks come in ascending order: good's right below.
    for mode in auto mprotect; do
        VMSTACK_CACHE=0 VMSTACK_GUARD=$mode "$vmstack" run --stack-size 64K -- "$bin/run_overflow" jump \
            > /dev/null 2> "$tmp/err"; rc=$?
        [ "$rc" = 139 ] || fail "$mode: exit $rc, expected death by SIGSEGV: $(cat "$tmp/err")"
        grep -q "^vmstack: thread 'jumper' (tid [0-9]*), start routine jump_thread+0x0/0x[0-9a-f]* \[run_overflow\]\$" \
            "$tmp/err" || fail "$mode: the runner not blamed: $(cat "$tmp/err")"
        grep -q "^vmstack: one frame jumped the guard: the access landed in the guard of thread 'good' (tid unknown), start routine good_thread+0x0/0x[0-9a-f]* \[run_overflow\] (stack is 0x[0-9a-f]*\.\.0x[0-9a-f]*), whose stack may be corrupted\$" \
            "$tmp/err" || fail "$mode: the neighbour not named: $(cat "$tmp/err")"
        grep -qx "vmstack: aborting: a thread cannot be killed alone without risking the rest of the process; vmstack run --stack-size sizes the stacks of threads that ask for no size" "$tmp/err" || fail "$mode: last line: $(cat "$tmp/err")"
    done
    ;;
fds)
    command -v bash > /dev/null && command -v flock > /dev/null || skip "bash or flock not installed"
    # A program that opens fd 200 (the cron idiom) gets its own file there, and the table is not in it.
    "$vmstack" run -- bash -c "exec 200>'$tmp/data'; echo mine >&200; ls -l /proc/\$\$/fd/200 >&2" \
        > /dev/null 2> "$tmp/err" || fail "exec 200>: $(cat "$tmp/err")"
    [ "$(cat "$tmp/data")" = mine ] || fail "fd 200: the program's file holds: $(cat "$tmp/data")"
    grep -q "stack usage of bash" "$tmp/err" || fail "fd 200: no table on stderr: $(cat "$tmp/err")"
    # The flock idiom keeps mutual exclusion: the second holder is refused.
    "$vmstack" run -- bash -c "exec 200>'$tmp/lock'; flock -n 200 || exit 9; touch '$tmp/held'; sleep 2" \
        2> /dev/null &
    i=0; while [ ! -e "$tmp/held" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
    "$vmstack" run -- bash -c "exec 200>'$tmp/lock'; flock -n 200 || exit 9; exit 0" 2> /dev/null; rc=$?
    wait
    [ "$rc" = 9 ] || fail "flock -n 200 succeeded twice under vmstack run (exit $rc)"
    # fd 2 reopened to a data file receives nothing of ours: the table goes to the stderr of the start.
    "$vmstack" run -- bash -c "exec 2>'$tmp/data2'; echo mine >&2" 2> "$tmp/err" || fail "exec 2>"
    [ "$(cat "$tmp/data2")" = mine ] || fail "fd 2 reopened: the program's file holds: $(cat "$tmp/data2")"
    grep -q "stack usage of bash" "$tmp/err" || fail "fd 2 reopened: no table: $(cat "$tmp/err")"
    # Nor does an overflow report go there.
    "$vmstack" run --stack-size 64K -- "$bin/run_overflow" reopen "$tmp/data3" > /dev/null 2> "$tmp/err"; rc=$?
    [ "$rc" = 139 ] || fail "overflow after reopening fd 2: exit $rc: $(cat "$tmp/err")"
    [ "$(cat "$tmp/data3")" = "the program's own" ] || fail "overflow: the program's file holds: $(cat "$tmp/data3")"
    grep -q 'vmstack: BUG: stack guard page was hit' "$tmp/err" || fail "overflow: no report: $(cat "$tmp/err")"
    # The program's first open() gets fd 3, as without vmstack, and the report's unwinding
    # (libunwind checks addresses through a pipe of its own) writes nothing into fds 3 to 5.
    for sub in run trace; do
        "$vmstack" $sub --stack-size 64K -- "$bin/run_overflow" low "$tmp/data4" > /dev/null 2> "$tmp/err"; rc=$?
        [ "$rc" = 139 ] || fail "$sub: overflow after opening fd 3: exit $rc: $(cat "$tmp/err")"
        [ "$(cat "$tmp/data4")" = "the program's own" ] || fail "$sub: fds 3-5 hold: $(cat "$tmp/data4")"
        grep -q '^vmstack:  \[<0x[0-9a-f]*>\] bottomless+' "$tmp/err" || fail "$sub: no call trace: $(cat "$tmp/err")"
    done
    ;;
env)
    # Every bad VMSTACK_* value: exit 125 before the program runs, one line naming the variable.
    for e in VMSTACK_GUARD=foo VMSTACK_GUARD_SIZE=12Q VMSTACK_GUARD_SIZE=-1 VMSTACK_GUARD_SIZE=1000 \
             VMSTACK_STACK_SIZE=8K VMSTACK_STACK_SIZE=abc VMSTACK_RESERVE=4K VMSTACK_RESERVE=x \
             VMSTACK_CACHE=65 VMSTACK_CACHE=-1 VMSTACK_POOL=x VMSTACK_SCRUB=2 VMSTACK_SCRUB=yes; do
        for sub in run trace; do
            env "$e" "$vmstack" $sub -- touch "$tmp/ran" > /dev/null 2> "$tmp/err"; rc=$?
            [ "$rc" = 125 ] || fail "$e vmstack $sub: exit $rc, expected 125"
            [ ! -e "$tmp/ran" ] || fail "$e vmstack $sub: the program ran"
            [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "^vmstack $sub: ${e%%=*}=" "$tmp/err" ||
                fail "$e vmstack $sub: $(cat "$tmp/err")"
        done
    done
    grep -q 'expected a whole number from 0 to 1' "$tmp/err" || fail "accepted values not named: $(cat "$tmp/err")"
    # The preload library, given a bad value by hand, says so and leaves the program alone.
    env VMSTACK_RUN_REPORT_SIGNAL=11 LD_PRELOAD="$(dirname "$vmstack")/libvmstack-preload.so" true 2> "$tmp/err" ||
        fail "preload with a bad value: the program failed"
    grep -q '^vmstack run: VMSTACK_RUN_REPORT_SIGNAL=11: expected .*runs without vmstack$' "$tmp/err" ||
        fail "preload with a bad value: $(cat "$tmp/err")"
    # The same under trace names trace (VMSTACK_RUN_TRACE=1 is what 'vmstack trace' gives the program).
    env VMSTACK_RUN_TRACE=1 VMSTACK_RUN_REPORT_SIGNAL=11 LD_PRELOAD="$(dirname "$vmstack")/libvmstack-preload.so" \
        true 2> "$tmp/err" || fail "preload under trace with a bad value: the program failed"
    grep -qx 'vmstack trace: VMSTACK_RUN_REPORT_SIGNAL=11: expected a signal number that can be caught and is not SIGSEGV or SIGBUS, or 0 for none; true (pid [0-9]*) runs without vmstack' "$tmp/err" ||
        fail "preload under trace with a bad value: $(cat "$tmp/err")"
    # Protection that cannot be set up at run time is one line, not silence.  (A sanitized vmstack
    # command cannot itself run under the limit: its shadow memory needs more.)
    if (ulimit -v 4000000; "$vmstack" --help) > /dev/null 2>&1; then
        for sub in run trace; do
            (ulimit -v 4000000; VMSTACK_RESERVE=8G "$vmstack" $sub -- true) 2> "$tmp/err" ||
                fail "ulimit -v, $sub: exit status"
            grep -q "^vmstack $sub: true (pid [0-9]*) runs without guarded stacks: .*RLIMIT_AS (ulimit -v).*VMSTACK_RESERVE\$" "$tmp/err" &&
                [ "$(wc -l < "$tmp/err")" = 1 ] || fail "ulimit -v, $sub: $(cat "$tmp/err")"
        done
    fi
    # A setuid program would drop the preload: refused unless --allow-unprotected.
    if [ "$(id -u)" = 0 ]; then
        cp /bin/true "$tmp/suid"; chown nobody "$tmp/suid"; chmod 4755 "$tmp/suid"
        "$vmstack" run -- "$tmp/suid" 2> "$tmp/err"; rc=$?
        [ "$rc" = 126 ] && grep -q 'is set-user-ID: it runs in secure-execution mode' "$tmp/err" || fail "setuid: exit $rc: $(cat "$tmp/err")"
        "$vmstack" run --allow-unprotected -- "$tmp/suid" 2> "$tmp/err" || fail "setuid allowed: exit status"
        grep -q 'runs without vmstack' "$tmp/err" || fail "setuid allowed: $(cat "$tmp/err")"
        # A script runs its interpreter: a set-user-ID one is refused the same way, with the reason.
        cp /bin/sh "$tmp/suidsh"; chown nobody "$tmp/suidsh"; chmod 4755 "$tmp/suidsh"
        printf '#!%s\necho hi\n' "$tmp/suidsh" > "$tmp/script"; chmod +x "$tmp/script"
        "$vmstack" run -- "$tmp/script" > "$tmp/out" 2> "$tmp/err"; rc=$?
        [ "$rc" = 126 ] && [ ! -s "$tmp/out" ] && [ "$(cat "$tmp/err")" = "vmstack run: $tmp/script is a script whose interpreter $tmp/suidsh is set-user-ID: it runs in secure-execution mode, where the dynamic loader ignores vmstack; --allow-unprotected runs it without vmstack (see 'vmstack run --help')" ] ||
            fail "setuid interpreter: exit $rc: $(cat "$tmp/err")"
    fi
    ;;
setuid_env)
    # A set-user-ID program linked with libvmstack.so reads no VMSTACK_* (its caller could
    # turn its guards off) and says nothing of them, run by another user.  Nor does the
    # preload library, linked to such a program: it stays out, as the loader keeps it out.
    [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null || skip "needs root and setpriv"
    env="VMSTACK_GUARD=none VMSTACK_STACK_SIZE=128K VMSTACK_CACHE=x VMSTACK_RUN_REPORT_SIGNAL=11"
    chmod 755 "$tmp"
    for p in run_secure run_secure_preload; do
        env VMSTACK_GUARD=none VMSTACK_STACK_SIZE=128K "$bin/$p" > "$tmp/out" 2>&1
        grep -qx 'guard none' "$tmp/out" && grep -q '^config stack 131072 ' "$tmp/out" ||
            fail "$p, not set-user-ID: the environment was not read: $(cat "$tmp/out")"
        cp "$bin/$p" "$tmp/suid"; chown nobody "$tmp/suid"; chmod 4755 "$tmp/suid"
        setpriv --reuid=daemon --regid=daemon --clear-groups env $env "$tmp/suid" > "$tmp/out" 2> "$tmp/err" ||
            fail "$p: exit $?: $(cat "$tmp/out" "$tmp/err")"
        [ ! -s "$tmp/err" ] || fail "$p said something: $(cat "$tmp/err")"
        grep -qx 'secure 1' "$tmp/out" || fail "$p: not in secure-execution mode: $(cat "$tmp/out")"
        grep -qx 'alloc 0' "$tmp/out" && grep -qx 'config stack 65536 guard 65536' "$tmp/out" &&
            ! grep -qx 'guard none' "$tmp/out" || fail "$p: the environment was read: $(cat "$tmp/out")"
    done
    ;;
reportsignal)
    # --report-signal is the program's: its children keep the default action (death: 128 + 10).
    "$vmstack" run --report-signal USR1 -- sh -c 'sleep 5 & c=$!; sleep 0.3; kill -USR1 $c; wait $c; echo $?' \
        > "$tmp/out" 2> /dev/null || fail "exit status"
    [ "$(cat "$tmp/out")" = 138 ] || fail "the child survived SIGUSR1: $(cat "$tmp/out")"
    "$vmstack" run --report-signal USR1 -- "$bin/run_forkstress" usr1 > "$tmp/out" 2> /dev/null ||
        fail "forked child: $(cat "$tmp/out")"
    ;;
frames)
    # No vmstack function that runs on a fiber or in the overflow handler has a frame over 4 KiB:
    # the handler must fit a program's own small alternate stack until it moves to ours, and an
    # overflow inside vmstack cannot be killed.  The stack tracer's tripwire handler runs first,
    # on whatever stack the fault came in on, and its fiber hooks on the fiber's own stack.
    # FRAME from checkstack (call-frame information); gcc's clones (.isra.0, .constprop.0) count
    # as their function.
    lib=$(dirname "$vmstack")/libvmstack.so
    "$vmstack" checkstack --json --min 0 "$lib" > "$tmp/frames.json" || fail "checkstack $lib"
    python3 - "$tmp/frames.json" <<'EOF2' || fail "frames over 4 KiB on the fiber and fault paths"
import json, sys
d = json.load(open(sys.argv[1]))
fns = {}
for f in (d if isinstance(d, dict) else d[0])["functions"]:
    n = f["name"].split(".")[0]
    if n not in fns or f["frame"] > fns[n]["frame"]:
        fns[n] = f
paths = ["on_fault", "handle", "handle_switched", "handle_on_own_stack", "classify", "pass_on", "call_prev",
         "decide", "vms__kill_check", "walk", "put_trace", "vms__report_body", "vms__report_outcome",
         "vms__report_begin", "vms__report_end", "vms__report_emit", "vms__symbols_lookup", "vms__registry_find",
         "vms__locate", "vms_fiber_spawn", "vms_stack_alloc", "vms_stack_free", "vms__region_grow",
         "vms__os_count_vmas", "vms__fiber_kill_current", "vms_yield", "vms__switch",
         # the tracer: the tripwire handler, and its hooks at a fiber's start and end
         "vms__trace_fault", "own_fault", "record", "record_all", "walk_next", "check_frames", "warn_frame",
         "warn_claim", "check_depth", "warn_line", "wire_move", "wire_install", "wire_owner",
         "signal_blocked_by_wire", "vms__trace_fiber_start", "vms__trace_fiber_end", "vms__trace_on_altstack",
         "task_open", "task_start", "end_on_altstack", "task_close", "dead_result", "vms__dead_chain",
         "vms__dead_lowest", "vms__dead_zero"]
bad = [(n, fns[n]["frame"]) for n in paths if n in fns and (fns[n]["frame"] > 4096 or fns[n]["dynamic"] and n not in ("vms__switch", "vms__trace_on_altstack"))]
missing = [n for n in ("on_fault", "handle", "vms__os_count_vmas", "vms_fiber_spawn", "vms__trace_fault", "record") if n not in fns]
print("over 4 KiB:", bad, "not found:", missing)
sys.exit(1 if bad or missing else 0)
EOF2
    ;;
m4)
    # GNU m4 catches its own stack overflow (libsigsegv) and exits 1: so it does under vmstack run.
    command -v m4 > /dev/null || skip "m4 not installed"
    printf 'define(`f'"'"',`f(f($1))'"'"')f(1)\n' > "$tmp/rec.m4"
    (ulimit -s 1024; m4 "$tmp/rec.m4") > /dev/null 2> "$tmp/plain"; rc_plain=$?
    (ulimit -s 1024; "$vmstack" run -- m4 "$tmp/rec.m4") > /dev/null 2> "$tmp/err"; rc=$?
    [ "$rc_plain" = 1 ] && grep -qx 'm4: stack overflow' "$tmp/plain" || skip "this m4 does not catch its overflow"
    [ "$rc" = 1 ] || fail "m4 under vmstack run: exit $rc, expected 1: $(cat "$tmp/err")"
    grep -qx 'm4: stack overflow' "$tmp/err" || fail "m4's own message: $(cat "$tmp/err")"
    grep -q '^vmstack: BUG: stack guard page was hit' "$tmp/err" || fail "no report: $(cat "$tmp/err")"
    grep -qx "vmstack: passing SIGSEGV to the program's own handler" "$tmp/err" || fail "last line: $(cat "$tmp/err")"
    ;;
python_faulthandler)
    # Python's faulthandler (-X faulthandler) on a real C-stack overflow (repr of a list nested
    # 300,000 deep, 2 MiB stacks): vmstack's report comes first, then faulthandler's own
    # traceback, and the exit status is the one without vmstack.  On the main thread, and on a
    # threading.Thread, where plain Python has no alternate stack for its handler and dies
    # without a word.
    command -v python3 > /dev/null || skip "python3 not installed"
    cat > "$tmp/deep.py" <<'EOF2'
import sys, threading
sys.setrecursionlimit(10**6)
def deep():
    l = []
    for _ in range(3 * 10**5):
        l = [l]
    repr(l)
if sys.argv[1] == "thread":
    t = threading.Thread(target=deep)
    t.start()
    t.join()
else:
    deep()
EOF2
    bug='^vmstack: BUG: stack guard page was hit at 0x[0-9a-f]* (stack is 0x[0-9a-f]*\.\.0x[0-9a-f]*)$'
    for where in main thread; do
        (ulimit -s 2048; python3 -X faulthandler "$tmp/deep.py" $where) > /dev/null 2> "$tmp/plain"; rc_plain=$?
        [ "$rc_plain" = 139 ] || skip "python3 $where: exit $rc_plain without vmstack, not a SIGSEGV: $(cat "$tmp/plain")"
        echo "python3 $where without vmstack: exit $rc_plain, $(grep -c . "$tmp/plain") lines on stderr"
        (ulimit -s 2048; "$vmstack" run -- python3 -X faulthandler "$tmp/deep.py" $where) > /dev/null 2> "$tmp/err"
        rc=$?
        [ "$rc" = "$rc_plain" ] || fail "$where: exit $rc under vmstack run, $rc_plain without: $(head -c 2000 "$tmp/err")"
        [ "$(grep -c "$bug" "$tmp/err")" = 1 ] || fail "$where: no report: $(head -c 2000 "$tmp/err")"
        task="^vmstack: thread 'python3' (tid [0-9]*)$" outer="^  File \"$tmp/deep.py\", line 13 in <module>$"
        if [ $where = thread ]; then
            task="^vmstack: thread 'python3' (tid [0-9]*), start routine .*$"
            outer="^  File \".*threading.py\", line [0-9]* in _bootstrap$"
        fi
        # The report's lines, then faulthandler's, in this order.
        grep -v '^vmstack:  ' "$tmp/err" | grep -A 100 "$bug" > "$tmp/seq"
        sed -n 2p "$tmp/seq" | grep -q "$task" || fail "$where: task line: $(cat "$tmp/seq")"
        sed -n 5p "$tmp/seq" | grep -qx 'vmstack: Call Trace:' || fail "$where: no trace: $(cat "$tmp/seq")"
        sed -n 6p "$tmp/seq" | grep -qx "vmstack: passing SIGSEGV to the program's own handler" ||
            fail "$where: last line of the report: $(cat "$tmp/seq")"
        sed -n 7p "$tmp/seq" | grep -qx 'Fatal Python error: Segmentation fault' ||
            fail "$where: faulthandler's first line: $(cat "$tmp/seq")"
        sed -n 9p "$tmp/seq" | grep -q '^Current thread 0x[0-9a-f]* (most recent call first):$' ||
            fail "$where: faulthandler's traceback: $(cat "$tmp/seq")"
        sed -n '10,/^$/p' "$tmp/seq" > "$tmp/frames"
        grep -q "^  File \"$tmp/deep.py\", line 7 in deep$" "$tmp/frames" && grep -q "$outer" "$tmp/frames" ||
            fail "$where: the Python frames: $(cat "$tmp/seq")"
    done
    ;;
output)
    # --output FILE: a planted symlink at the old predictable temporary name changes nothing ...
    echo victim > "$tmp/victim"
    sh -c "ln -s '$tmp/victim' '$tmp/x.tmp.'\$\$; exec '$vmstack' run --output '$tmp/x' -- true" ||
        fail "run with a planted symlink"
    [ "$(cat "$tmp/victim")" = victim ] || fail "the symlink's target was overwritten"
    grep -q 'stack usage of true' "$tmp/x" || fail "no table in FILE: $(cat "$tmp/x")"
    [ -z "$(ls -A "$tmp" | grep vmstack-)" ] || fail "temporary file left: $(ls -A "$tmp")"
    # ... a write error is exit 1 with a message, when the program succeeded; its own status else ...
    "$vmstack" run --output /dev/full -- true 2> "$tmp/err"; rc=$?
    [ "$rc" = 1 ] && grep -q '^vmstack run: cannot write /dev/full: ' "$tmp/err" || fail "/dev/full: exit $rc: $(cat "$tmp/err")"
    "$vmstack" trace --output /dev/full -- true 2> "$tmp/err"; rc=$?
    [ "$rc" = 1 ] && [ "$(tail -1 "$tmp/err")" = "vmstack trace: cannot write /dev/full: No space left on device" ] ||
        fail "trace, /dev/full: exit $rc: $(cat "$tmp/err")"
    "$vmstack" run --output /dev/full -- sh -c 'exit 3' 2> /dev/null; rc=$?
    [ "$rc" = 3 ] || fail "/dev/full, program exit 3: exit $rc"
    # ... and a FIFO nobody reads is an error, not a hang.
    mkfifo "$tmp/fifo"
    timeout 20 "$vmstack" run --output "$tmp/fifo" -- true 2> "$tmp/err"; rc=$?
    [ "$rc" = 1 ] && grep -q 'a FIFO that nobody reads' "$tmp/err" || fail "FIFO without reader: exit $rc: $(cat "$tmp/err")"
    ;;
stalled)
    # A stderr that is a full pipe nobody reads holds neither the program's end nor its keeper
    # for ever: the table waits 10 s for it, an overflow report 2 s, then what did not go out is
    # dropped and the program ends as it would have.  timeout's 124 is a hang.  The shell that
    # waits is not the one whose stderr is the pipe (it would hang telling of SIGSEGV).
    mkfifo "$tmp/fifo"
    exec 3<> "$tmp/fifo" # the reader that never reads
    dd if=/dev/zero of="$tmp/fifo" oflag=nonblock bs=4096 count=4096 2> /dev/null
    dd if=/dev/zero of="$tmp/fifo" oflag=nonblock bs=1 count=1 2> /dev/null && fail "the pipe is not full"
    t0=$(date +%s)
    timeout 60 sh -c 'exec "$@" 2> "$0"' "$tmp/fifo" "$vmstack" run -- sh -c 'exit 7'; rc=$?
    [ "$rc" = 7 ] || fail "table to a full stderr: exit $rc after $(($(date +%s) - t0)) s, expected 7"
    timeout 60 sh -c 'exec "$@" 2> "$0"' "$tmp/fifo" "$vmstack" run --stack-size 64K -- "$bin/run_overflow" 2> /dev/null
    rc=$?
    [ "$rc" = 139 ] || fail "overflow report to a full stderr: exit $rc, expected death by SIGSEGV"
    # The same through the keeper: fd 2 reopened, the report and the table wait for the start's stderr.
    timeout 60 sh -c 'exec "$@" 2> "$0"' "$tmp/fifo" "$vmstack" run --stack-size 64K -- "$bin/run_overflow" \
        reopen "$tmp/data" 2> /dev/null; rc=$?
    [ "$rc" = 139 ] || fail "overflow report through the keeper to a full stderr: exit $rc, expected SIGSEGV"
    # The keepers (whose stderr is the pipe's too) make their tables, wait no longer and end.
    i=0
    while for p in /proc/[0-9]*; do readlink "$p/fd/2"; done 2> /dev/null | grep -qxF "$tmp/fifo"; do
        [ $i -lt 300 ] || fail "a process still writes to the full stderr 30 s after the program ended"
        sleep 0.1; i=$((i + 1))
    done
    # With --output, the table says how much stderr did not take.
    timeout 60 sh -c 'exec "$@" 2> "$0"' "$tmp/fifo" "$vmstack" run --output "$tmp/table" --stack-size 64K -- \
        "$bin/run_overflow"; rc=$?
    [ "$rc" = 139 ] || fail "overflow with stderr full and --output: exit $rc, expected SIGSEGV"
    # After a death by a signal the keeper makes the table, once the program has ended.
    i=0
    while [ ! -s "$tmp/table" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    grep -q '^vmstack run: [0-9]* bytes of reports and notices were dropped: stderr took none of them for 2 s$' \
        "$tmp/table" || fail "the table does not say what was dropped: $(cat "$tmp/table")"
    echo "all ended in $(($(date +%s) - t0)) s"
    ;;
checkstack_inputs)
    # A FIFO is refused at once (it would block open()), a 32-bit ELF is named for what it is.
    mkfifo "$tmp/fifo"
    timeout 20 "$vmstack" checkstack "$tmp/fifo" 2> "$tmp/err"; rc=$?
    [ "$rc" = 1 ] && grep -q 'fifo: not a regular file' "$tmp/err" || fail "FIFO: exit $rc: $(cat "$tmp/err")"
    { printf '\177ELF\001\001\001\000\000\000\000\000\000\000\000\000\002\000\003\000'; head -c 52 /dev/zero; } > "$tmp/elf32"
    "$vmstack" checkstack "$tmp/elf32" 2> "$tmp/err"; rc=$?
    [ "$rc" = 1 ] && grep -q 'elf32: not an x86-64 or aarch64 ELF file' "$tmp/err" || fail "32-bit ELF: exit $rc: $(cat "$tmp/err")"
    ;;
*)
    fail "unknown case"
    ;;
esac
exit 0
