#!/bin/sh
# SPDX-License-Identifier: MIT
# 'vmstack run' on small programs of the repo and on real programs.
# usage: test_run.sh CASE VMSTACK BINDIR   (BINDIR holds the run_* programs)
# Exit 0 pass, 1 fail, 77 skip (a real program is not installed).
set -u
case_=$1 vmstack=$2 bin=$3
. "$(dirname "$0")/lib.sh"
tmp=$TMP
. "$(dirname "$0")/keeper.sh"
# wait_ready FILE: until the program in the background wrote its "ready" line there.
wait_ready() {
    wr=0
    until grep -q '^ready' "$1"; do
        wr=$((wr + 1)); [ $wr -lt 400 ] || fail "the program never got ready: $(cat "$1")"; sleep 0.05
    done
}
# in_background SUB ARGS...: 'vmstack SUB --output $tmp/t -- ARGS' in the background, its output in
# $tmp/out and $tmp/err, once the program printed its "ready" line; its pid in pid.
in_background() {
    ib_sub=$1
    shift
    : > "$tmp/out"
    "$vmstack" "$ib_sub" --output "$tmp/t" -- "$@" > "$tmp/out" 2> "$tmp/err" &
    pid=$!
    wait_ready "$tmp/out"
}

# json FILE PYTHON-EXPR: evaluates EXPR with t = the table's threads, r = the table.
# Strict: NaN and Infinity are not JSON, and the file must be valid UTF-8.
json() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
def no_constant(c):
    raise ValueError("not JSON: " + c)
r = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"), parse_constant=no_constant)
t = r["threads"]
v = eval("(" + sys.argv[2] + ")")
print(v)
sys.exit(0 if v else 1)
EOF
}

# plain_vs_run OUTPUT-NAME CMD...: same stdout and exit status with and without vmstack run.
plain_vs_run() {
    name=$1; shift
    "$@" > "$tmp/$name.plain" 2> "$tmp/$name.plain.err"; rc_plain=$?
    "$vmstack" run --json --output "$tmp/$name.json" -- "$@" > "$tmp/$name.run" 2> "$tmp/$name.run.err"; rc_run=$?
    [ "$rc_plain" = "$rc_run" ] || fail "$*: exit status $rc_plain plain, $rc_run under vmstack run: $(cat "$tmp/$name.run.err")"
    cmp -s "$tmp/$name.plain" "$tmp/$name.run" || fail "$*: output differs under vmstack run"
    [ -s "$tmp/$name.json" ] || fail "$*: no usage table written"
}

case $case_ in
usage)
    # As env(1): bad usage is one line on stderr and exit 125; a program not found 127, found but
    # not runnable (not executable, a directory, not a program vmstack can load into) 126, with
    # the reason.
    printf 'not a program\n' > "$tmp/data"; chmod +x "$tmp/data"
    printf 'not executable\n' > "$tmp/noexec"
    for args in "" "--" "--stack-size 12345 -- true" \
                "--stack-size abc -- true" "--stack-size 8K -- true" "--guard 0 -- true" \
                "--report-signal NOSUCH -- true" "--report-signal KILL -- true" "--bogus -- true" \
                "--output /nonexistent/dir/f -- true"; do
        for sub in trace run; do
            # shellcheck disable=SC2086
            "$vmstack" $sub $args > "$tmp/out" 2> "$tmp/err"; rc=$?
            [ "$rc" = 125 ] || fail "vmstack $sub $args: exit $rc, expected 125"
            [ "$(wc -l < "$tmp/err")" = 1 ] || fail "vmstack $sub $args: not one line: $(cat "$tmp/err")"
            grep -q "^vmstack $sub: .* (see 'vmstack $sub --help')\$" "$tmp/err" ||
                fail "vmstack $sub $args: $(cat "$tmp/err")"
        done
    done
    for sub in trace run; do
        for want in "127 /nonexistent/prog: No such file or directory" \
                    "127 no-such-program-xyz: No such file or directory" \
                    "126 $tmp/noexec: Permission denied" "126 $tmp: Is a directory"; do
            code=${want%% *} prog=${want#* }; prog=${prog%: *}
            "$vmstack" $sub -- "$prog" > "$tmp/out" 2> "$tmp/err"; rc=$?
            [ "$rc" = "$code" ] && [ "$(cat "$tmp/err")" = "vmstack $sub: cannot run ${want#* }" ] ||
                fail "vmstack $sub -- $prog: exit $rc, expected $code: $(cat "$tmp/err")"
        done
        for prog in "$tmp/data" "$bin/run_static"; do
            "$vmstack" $sub -- "$prog" > "$tmp/out" 2> "$tmp/err"; rc=$?
            [ "$rc" = 126 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "^vmstack $sub: $prog is " "$tmp/err" ||
                fail "vmstack $sub -- $prog: exit $rc, expected 126: $(cat "$tmp/err")"
        done
    done
    grep -q 'not dynamically linked' "$tmp/err" || fail "static program: $(cat "$tmp/err")"
    # Each command names itself, trace too though run does the checking; an inherited VMSTACK_RUN_TRACE
    # (a run in a traced program's tree) does not make run a trace.
    "$vmstack" trace --output /nonexistent/dir/f -- true > "$tmp/out" 2> "$tmp/err"; rc=$?
    [ "$rc" = 125 ] && [ "$(cat "$tmp/err")" = "vmstack trace: --output /nonexistent/dir/f: cannot create files in /nonexistent/dir: No such file or directory (see 'vmstack trace --help')" ] ||
        fail "trace --output into a missing directory: exit $rc: $(cat "$tmp/err")"
    VMSTACK_RUN_TRACE=1 "$vmstack" run --folded "$tmp/f" -- true > "$tmp/out" 2> "$tmp/err"; rc=$?
    [ "$rc" = 125 ] && [ "$(cat "$tmp/err")" = "vmstack run: --folded is an option of 'vmstack trace' (see 'vmstack run --help')" ] ||
        fail "run --folded with VMSTACK_RUN_TRACE=1: exit $rc: $(cat "$tmp/err")"
    # Options take their value after '=' or as the next word; options stop at PROG.
    "$vmstack" run --stack-size=1M --guard=64K -- true || fail "--stack-size=1M"
    "$vmstack" run --stack-size 1M true || fail "--stack-size 1M without --"
    "$vmstack" run -o "$tmp/o.txt" -- sh -c 'exit 0' --json || fail "PROG's own options after PROG"
    [ -s "$tmp/o.txt" ] && ! grep -q '^{' "$tmp/o.txt" || fail "an option after PROG was taken as vmstack's"
    "$vmstack" run --help | grep -q -- '--stack-size' || fail "--help"
    ;;
json_utf8)
    # A thread name cut inside a character, and one with quotes and a control character.
    "$vmstack" run --json --output "$tmp/t.json" -- "$bin/run_threadname" || fail "run_threadname"
    json "$tmp/t.json" "sorted(x['name'] for x in t if x['name'] != 'run_threadname') ==
        ['abcdefghijklmn\\ufffd', 'q\"b\\\\\\x01']" > /dev/null || fail "names: $(cat "$tmp/t.json")"
    ;;
recurse)
    # Peak within one page of the depth the thread really reached.
    for levels in 10 100 1000; do
        truth=$("$vmstack" run --json --output "$tmp/t.json" -- "$bin/run_recurse" $levels) || fail "run_recurse $levels"
        json "$tmp/t.json" "len(t) == 2 and t[1]['start'] == 'deep_thread' and
            abs(t[1]['peak_bytes'] - $truth) < 4096 and t[1]['stack_size'] == t[0]['stack_size']" > /dev/null ||
            fail "$levels levels: truth $truth, table: $(cat "$tmp/t.json")"
    done
    # --stack-size: the thread gets exactly that; 100 KiB of frames fit in 128K.
    truth=$("$vmstack" run --stack-size 128K --json --output "$tmp/t.json" -- "$bin/run_recurse" 100) ||
        fail "--stack-size 128K"
    json "$tmp/t.json" "t[1]['stack_size'] == 131072 and t[1]['guard_size'] == 65536 and
        abs(t[1]['peak_bytes'] - $truth) < 4096 and 75 < t[1]['used_pct'] < 90" > /dev/null ||
        fail "--stack-size: $(cat "$tmp/t.json")"
    "$vmstack" run --guard 256K --json --output "$tmp/t.json" -- "$bin/run_recurse" 10 > /dev/null
    json "$tmp/t.json" "t[1]['guard_size'] == 262144" > /dev/null || fail "--guard: $(cat "$tmp/t.json")"
    # The text table: header and a row naming the start routine.
    "$vmstack" run -- "$bin/run_recurse" 10 > /dev/null 2> "$tmp/err" || fail "text table run"
    grep -q 'TID  NAME  *START  *STACK  *GUARD  *PEAK  *USED%' "$tmp/err" || fail "text header: $(cat "$tmp/err")"
    grep -q ' deep_thread  ' "$tmp/err" || fail "text row: $(cat "$tmp/err")"
    ;;
overflow)
    # The report names thread, tid and start routine; then death by SIGSEGV (shell: 128 + 11).
    "$vmstack" run --stack-size 64K -- "$bin/run_overflow" > "$tmp/out" 2> "$tmp/err"; rc=$?
    [ "$rc" = 139 ] || fail "exit $rc, expected death by SIGSEGV: $(cat "$tmp/err")"
    for piece in 'vmstack: BUG: stack guard page was hit at 0x' \
                 "vmstack: thread 'overflower' (tid [0-9][0-9]*), start routine overflow_thread+0x0/" \
                 'vmstack: stack 64 KiB, guard 64 KiB at 0x' 'bottomless+0x' \
                 "^vmstack: aborting: a thread cannot be killed alone without risking the rest of the process; vmstack run --stack-size sizes the stacks of threads that ask for no size\$"; do
        grep -q "$piece" "$tmp/err" || fail "report lacks '$piece': $(cat "$tmp/err")"
    done
    # The main thread too: its stack from [stack] and RLIMIT_STACK.
    keeper_run "$tmp/err" sh -c 'ulimit -s 1024; exec "$@"' sh "$vmstack" run -- "$bin/run_overflow" main > "$tmp/out"; rc=$?
    [ "$rc" = 139 ] || fail "main: exit $rc, expected death by SIGSEGV: $(cat "$tmp/err")"
    grep -q 'vmstack: BUG: stack guard page was hit' "$tmp/err" || fail "main: no report: $(cat "$tmp/err")"
    grep -q "vmstack: thread 'run_overflow' (tid [0-9]*)" "$tmp/err" || fail "main: no thread line: $(cat "$tmp/err")"
    # The report's last line says what happens; the table, made by the program's keeper, follows it.
    grep '^vmstack: ' "$tmp/err" | tail -n 1 | grep -qx "vmstack: aborting: a thread cannot be killed alone without risking the rest of the process; ulimit -s sizes the main thread's stack" ||
        fail "main: last line: $(cat "$tmp/err")"
    grep -qx 'vmstack run: stack usage of run_overflow (pid [0-9]*) at death by SIGSEGV' "$tmp/err" &&
        grep -Eq '^ +[0-9]+  run_overflow +main +1M +1M +10[0-9]{5} +(99\.[0-9]|100\.0)%$' "$tmp/err" ||
        fail "main: the table after the report: $(cat "$tmp/err")"
    ;;
quiet)
    # --quiet: no table (nor trace's chains) at exit, the program's own output and status untouched;
    # the table still after an overflow's report (from the keeper) and into --output.
    for sub in run trace; do
        "$vmstack" $sub --quiet -- "$bin/run_recurse" 20 > "$tmp/out" 2> "$tmp/err"; rc=$?
        [ "$rc" = 0 ] && [ ! -s "$tmp/err" ] || fail "$sub --quiet: exit $rc, stderr: $(cat "$tmp/err")"
        grep -qx '[0-9]*' "$tmp/out" || fail "$sub --quiet: stdout: $(cat "$tmp/out")"
        "$vmstack" $sub -q --output "$tmp/t" -- "$bin/run_recurse" 20 > "$tmp/out" 2> "$tmp/err"; rc=$?
        [ "$rc" = 0 ] && [ ! -s "$tmp/err" ] && grep -q '^vmstack run: stack usage of run_recurse' "$tmp/t" ||
            fail "$sub -q --output: exit $rc, stderr: $(cat "$tmp/err"), file: $(cat "$tmp/t")"
        keeper_run "$tmp/err" "$vmstack" $sub --quiet --stack-size 64K -- "$bin/run_overflow" > "$tmp/out"; rc=$?
        [ "$rc" = 139 ] && grep -q 'vmstack: BUG: stack guard page was hit' "$tmp/err" &&
            grep -qx 'vmstack run: stack usage of run_overflow (pid [0-9]*) at death by SIGSEGV' "$tmp/err" ||
            fail "$sub --quiet, overflow: exit $rc: $(cat "$tmp/err")"
    done
    ;;
overflow_lines)
    # file:line in the report's call trace from the program's DWARF line table: DWARF 4 and 5, 32- and
    # 64-bit, optimised or not; compressed sections (-gz) are not read: names only, the report intact.
    command -v cc > /dev/null || skip "no cc"
    src="$(dirname "$0")/run_overflow.c"
    rec=$(grep -n 'return bottomless(n + 1)' "$(dirname "$0")/bottomless.h" | cut -d: -f1)
    top=$(grep -n 'return (void \*)(long)bottomless' "$src" | cut -d: -f1)
    for flags in "-O0 -gdwarf-5" "-O2 -gdwarf-4" "-O1 -gdwarf-5 -gdwarf64" "-O0 -gdwarf-2" "-O1 -g -gz=zlib"; do
        cc $flags -D_GNU_SOURCE -pthread -o "$tmp/ovf" "$src" 2> "$tmp/cc.err" || { echo "cc $flags: $(cat "$tmp/cc.err")"; continue; }
        "$vmstack" run --stack-size 64K -- "$tmp/ovf" > /dev/null 2> "$tmp/err"; rc=$?
        [ "$rc" = 139 ] || fail "$flags: exit $rc: $(cat "$tmp/err")"
        case $flags in
        *-gz*)
            grep -Eq '^vmstack:  \[<0x[0-9a-f]+>\] bottomless\+0x[0-9a-f]+/0x[0-9a-f]+ \[ovf\]$' "$tmp/err" ||
                fail "$flags: $(cat "$tmp/err")" ;;
        *)
            grep -Eq "^vmstack:  \[<0x[0-9a-f]+>\] bottomless\+0x[0-9a-f]+/0x[0-9a-f]+ \[ovf\] bottomless.h:$rec\$" "$tmp/err" &&
                grep -Eq "^vmstack:  \[<0x[0-9a-f]+>\] overflow_thread\+0x[0-9a-f]+/0x[0-9a-f]+ \[ovf\] run_overflow.c:$top\$" "$tmp/err" ||
                fail "$flags: no bottomless.h:$rec and run_overflow.c:$top in $(cat "$tmp/err")" ;;
        esac
        # libc has no line table here: its frames stay as they were.
        grep -Eq '^vmstack:  \[<0x[0-9a-f]+>\] start_thread\+0x[0-9a-f]+/0x[0-9a-f]+ \[libc.so.6\]$' "$tmp/err" ||
            fail "$flags: start_thread: $(cat "$tmp/err")"
    done
    ;;
overflow_names_command)
    # The report's last line names the command in use, whose --stack-size sizes the thread's stack.
    for sub in run trace; do
        "$vmstack" $sub --stack-size 64K -- "$bin/run_overflow" > "$tmp/out" 2> "$tmp/err"; rc=$?
        [ "$rc" = 139 ] || fail "$sub: exit $rc, expected death by SIGSEGV: $(cat "$tmp/err")"
        grep '^vmstack: ' "$tmp/err" | tail -n 1 | grep -qx "vmstack: aborting: a thread cannot be killed alone without risking the rest of the process; vmstack $sub --stack-size sizes the stacks of threads that ask for no size" ||
            fail "$sub: last line: $(cat "$tmp/err")"
    done
    ;;
script_interpreter)
    # A script whose interpreter is missing, or static, or itself such a script: one line that
    # names the command in use, the interpreter and what is wrong with it.
    printf '#!/nonexistent/sh\necho hi\n' > "$tmp/missing"
    printf '#!%s\n' "$bin/run_static" > "$tmp/static"
    printf '#!%s\n' "$tmp/missing" > "$tmp/nested"
    chmod +x "$tmp/missing" "$tmp/static" "$tmp/nested"
    for sub in run trace; do
        for s in missing static nested; do
            "$vmstack" $sub -- "$tmp/$s" > "$tmp/out" 2> "$tmp/err"; rc=$?
            case $s in
            static) want="$bin/run_static cannot run under vmstack $sub: it is not dynamically linked: LD_PRELOAD cannot reach it" ;;
            *) want="/nonexistent/sh cannot run under vmstack $sub: it cannot be read" ;;
            esac
            [ "$rc" = 126 ] && [ ! -s "$tmp/out" ] &&
                [ "$(cat "$tmp/err")" = "vmstack $sub: $tmp/$s is a script whose interpreter $want" ] ||
                fail "$sub $s: exit $rc: $(cat "$tmp/err")"
        done
    done
    ;;
rlimit_as)
    # Under a limit on address space (ulimit -v) the program runs guarded as plain, its reserve a
    # share of the limit; a reserve asked for that cannot fit is one line, and no false 'no table'
    # line follows; too little room even for the table's memory is one line naming RLIMIT_AS.
    # (A sanitized vmstack command cannot itself run under the limit: its shadow memory needs more.)
    (ulimit -v 40000; "$vmstack" --help) > /dev/null 2>&1 || skip "the vmstack command cannot run under ulimit -v"
    for sub in run trace; do
        (ulimit -v 200000; exec "$vmstack" $sub --output "$tmp/t" -- "$bin/run_recurse" 10) > "$tmp/out" 2> "$tmp/err"
        rc=$?
        [ "$rc" = 0 ] && [ ! -s "$tmp/err" ] || fail "$sub: exit $rc: $(cat "$tmp/err")"
        grep -Eq '^ +[0-9]+  run_recurse +deep_thread +8M +64K +[0-9]+ +[0-9.]+%$' "$tmp/t" || fail "$sub: table: $(cat "$tmp/t")"
        (ulimit -v 200000; "$bin/run_threads100") > /dev/null 2>&1; plain=$?
        (ulimit -v 200000; exec "$vmstack" $sub --output "$tmp/t" -- "$bin/run_threads100") > /dev/null 2> "$tmp/err"
        rc=$?
        [ "$rc" = "$plain" ] && [ ! -s "$tmp/err" ] || fail "$sub: threads100: exit $rc, plain $plain: $(cat "$tmp/err")"
        (ulimit -v 200000; VMSTACK_RESERVE=1G exec "$vmstack" $sub --output "$tmp/t" -- "$bin/run_recurse" 10) \
            > "$tmp/out" 2> "$tmp/err"; rc=$?
        [ "$rc" = 0 ] && grep -qx "vmstack $sub: run_recurse (pid [0-9]*) runs without guarded stacks: could not reserve 102[0-9] MiB of address space for 1024 KiB stacks: the address space is used up or RLIMIT_AS (ulimit -v) leaves too little of it; lower VMSTACK_RESERVE" "$tmp/err" &&
            [ "$(wc -l < "$tmp/err")" = 1 ] || fail "$sub: VMSTACK_RESERVE=1G: exit $rc: $(cat "$tmp/err")"
        # Too little room for the keeper's memory: the program runs guarded, its table at exit whole, and
        # one line says that a table after a fatal signal would be lost.
        (ulimit -v 40000; exec "$vmstack" $sub --output "$tmp/t" -- "$bin/run_recurse" 10) > "$tmp/out" 2> "$tmp/err"; rc=$?
        [ "$rc" = 0 ] && [ "$(cat "$tmp/err")" = "vmstack $sub: cannot map the 64 MiB a table after a fatal signal is kept in: RLIMIT_AS (ulimit -v) is 40000 KiB; raise it by as much, or such a table is lost" ] &&
            grep -Eq '^ +[0-9]+  run_recurse +deep_thread +8M +[0-9]+K +[0-9]+ +[0-9.]+%$' "$tmp/t" ||
            fail "$sub: ulimit -v 40000: exit $rc: $(cat "$tmp/err" "$tmp/t")"
    done
    ;;
threads100)
    "$vmstack" run --json --output "$tmp/t.json" -- "$bin/run_threads100" > "$tmp/out" || fail "exit status"
    grep -qx '100 threads' "$tmp/out" || fail "output"
    json "$tmp/t.json" "len(t) == 101 and len({x['tid'] for x in t}) == 101 and
        all(x['start'] == 'worker' and x['peak_bytes'] > 2048 for x in t[1:])" > /dev/null ||
        fail "table: $(cat "$tmp/t.json")"
    ;;
ownsegv)
    # The program's own handler still catches its own faults, in main and in threads ...
    "$vmstack" run -- "$bin/run_ownsegv" > "$tmp/out" 2> "$tmp/err" || fail "exit status: $(cat "$tmp/err")"
    grep -qx 'caught 2' "$tmp/out" || fail "output: $(cat "$tmp/out")"
    # ... and its own overflow too, after the report: the program's handler wins.
    "$vmstack" run --stack-size 64K -- "$bin/run_ownsegv" overflow > "$tmp/out" 2> "$tmp/err" ||
        fail "overflow: exit $?, expected 0 (the program caught it): $(cat "$tmp/err")"
    grep -qx 'caught its overflow' "$tmp/out" || fail "overflow: output: $(cat "$tmp/out")"
    grep -q 'start routine thread+0x0/' "$tmp/err" || fail "overflow: report: $(cat "$tmp/err")"
    grep -qx "vmstack: passing SIGSEGV to the program's own handler" "$tmp/err" ||
        fail "overflow: last line: $(cat "$tmp/err")"
    ;;
userstack)
    "$vmstack" run --json --output "$tmp/t.json" -- "$bin/run_userstack" > "$tmp/out" || fail "exit status"
    grep -qx 'user stack ok 3600' "$tmp/out" || fail "output: $(cat "$tmp/out")"
    json "$tmp/t.json" "t[1]['user_stack'] and t[1]['stack_size'] == 262144 and
        40 * 1024 < t[1]['peak_bytes'] < 40 * 1024 + 12 * 1024" > /dev/null || fail "table: $(cat "$tmp/t.json")"
    "$vmstack" run -- "$bin/run_userstack" overflow > "$tmp/out" 2> "$tmp/err"; rc=$?
    [ "$rc" = 139 ] || fail "overflow: exit $rc, expected death by SIGSEGV: $(cat "$tmp/err")"
    grep -q 'vmstack: BUG: stack guard page was hit' "$tmp/err" || fail "overflow: no report: $(cat "$tmp/err")"
    grep -q 'start routine user_thread+0x0/' "$tmp/err" || fail "overflow: report: $(cat "$tmp/err")"
    ;;
output)
    # --output replaces FILE only once the table is complete; --report-signal prints on demand.
    echo old > "$tmp/keep"
    "$vmstack" run --output "$tmp/keep" -- "$bin/run_recurse" 10 > /dev/null || fail "run"
    grep -q 'deep_thread' "$tmp/keep" || fail "output file: $(cat "$tmp/keep")"
    [ -z "$(ls "$tmp" | grep tmp)" ] || fail "temporary file left: $(ls "$tmp")"
    # A file someone made set-user-ID is replaced by one without: the permission bits only.
    echo old > "$tmp/setid"; chmod 4777 "$tmp/setid"
    "$vmstack" run --output "$tmp/setid" -- "$bin/run_recurse" 10 > /dev/null || fail "run into a set-id file"
    [ "$(stat -c %a "$tmp/setid")" = 777 ] || fail "the table's file is mode $(stat -c %a "$tmp/setid"), not 777"
    # Not a regular file: written into, never replaced.
    mkfifo "$tmp/fifo"; cat "$tmp/fifo" > "$tmp/fromfifo" &
    "$vmstack" run --output "$tmp/fifo" -- "$bin/run_recurse" 10 > /dev/null || fail "run into a FIFO"
    wait
    [ -p "$tmp/fifo" ] && grep -q 'deep_thread' "$tmp/fromfifo" || fail "FIFO output: $(cat "$tmp/fromfifo")"
    "$vmstack" run --report-signal USR1 -- sh -c 'kill -USR1 $$; sleep 0.3' 2> "$tmp/err" || fail "report-signal run"
    grep -q 'at SIGUSR1' "$tmp/err" || fail "no table on SIGUSR1: $(cat "$tmp/err")"
    grep -q 'at exit' "$tmp/err" || fail "no table at exit: $(cat "$tmp/err")"
    ;;
python)
    command -v python3 > /dev/null || skip "python3 not installed"
    plain_vs_run py python3 -c '
import sys, threading
out = [0] * 8
def work(i):
    out[i] = sum(k * k for k in range(20000 + i))
ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
for t in ts: t.start()
for t in ts: t.join()
print(out)
sys.exit(3)'
    json "$tmp/py.json" "len(t) >= 9" > /dev/null || fail "python3: table: $(cat "$tmp/py.json")"
    ;;
xz)
    command -v xz > /dev/null || skip "xz not installed (apt-get install xz-utils)"
    i=0; while [ $i -lt 3000 ]; do echo "line $i of some text that compresses $((i * i))"; i=$((i + 1)); done > "$tmp/data"
    plain_vs_run xz xz -T2 --block-size=16KiB -c "$tmp/data"
    json "$tmp/xz.json" "len(t) >= 3" > /dev/null || fail "xz: no threads in the table: $(cat "$tmp/xz.json")"
    cp "$tmp/xz.plain" "$tmp/data.xz"
    plain_vs_run unxz xz -T2 -dc "$tmp/data.xz"
    cmp -s "$tmp/unxz.run" "$tmp/data" || fail "xz -d under vmstack run: not the original"
    plain_vs_run xzbad xz -T2 -dc "$tmp/data"
    ;;
nofds)
    # No descriptor of ours in the program, under run and trace, with or without --report-signal.
    "$bin/run_exitpath" fds > "$tmp/plain" || fail "run_exitpath fds"
    for sub in run trace "run --report-signal USR1" "trace --output $tmp/t"; do
        # shellcheck disable=SC2086
        "$vmstack" $sub -- "$bin/run_exitpath" fds > "$tmp/fds" 2> /dev/null || fail "$sub: exit $?"
        cmp -s "$tmp/plain" "$tmp/fds" || fail "$sub: descriptors $(tr '\n' ' ' < "$tmp/fds"), plain $(tr '\n' ' ' < "$tmp/plain")"
    done
    # CPython's own tests of descriptors passed to children (Debian's python3 and its test suite).
    /usr/bin/python3 -c 'import test.test_subprocess' 2> /dev/null || skip "libpython3.11-testsuite not installed"
    for sub in run trace; do
        "$vmstack" $sub --output "$tmp/t" -- /usr/bin/python3 -m test test_subprocess \
            -m test_close_fds_when_max_fd_is_lowered -m test_pass_fds_redirected > "$tmp/out" 2>&1 ||
            fail "$sub: python3 -m test test_subprocess: $(tail -n 20 "$tmp/out")"
        grep -q '^Tests result: SUCCESS' "$tmp/out" && grep -q '^1 test OK' "$tmp/out" || fail "$sub: test_subprocess: $(tail -n 20 "$tmp/out")"
    done
    ;;
table_exit)
    # _exit runs no exit handler: the table is written all the same, the status is the program's.
    "$vmstack" run --output "$tmp/t" -- "$bin/run_exitpath" _exit 2> "$tmp/err"; rc=$?
    [ "$rc" = 5 ] || fail "exit $rc, expected 5: $(cat "$tmp/err")"
    [ ! -s "$tmp/err" ] || fail "stderr: $(cat "$tmp/err")"
    grep -q '^vmstack run: stack usage of run_exitpath (pid [0-9]*) at exit$' "$tmp/t" &&
        [ "$(grep -c ' finished \| sleeper ' "$tmp/t")" = 2 ] || fail "table: $(cat "$tmp/t")"
    ;;
table_exit_group|table_abort|table_sigkill)
    # No exit handler can run: the program's keeper makes the table from the memory the
    # program left and writes it once the program has ended; the status is the program's.  Both threads
    # are in it: the one that ran (its peak) and the one still running when the program ended.
    case $case_ in
    table_exit_group) how=exit_group want=7 when='exit_group' ;;
    table_abort) how=abort want=134 when='death by SIGABRT' ;;
    table_sigkill) how=sigkill want=137 when='death by SIGKILL' ;;
    esac
    for sub in run trace; do
        rm -f "$tmp/t"
        keeper_run "$tmp/err" sh -c 'ulimit -c 0; exec "$@"' sh "$vmstack" $sub --output "$tmp/t" -- \
            "$bin/run_exitpath" $how > "$tmp/out"
        rc=$?
        [ "$rc" = "$want" ] || fail "$sub $how: exit $rc, expected $want: $(cat "$tmp/err")"
        [ ! -s "$tmp/err" ] || fail "$sub $how: stderr: $(cat "$tmp/err")"
        grep -qx "vmstack run: stack usage of run_exitpath (pid [0-9]*) at $when" "$tmp/t" &&
            grep -Eq '^ +[0-9]+  run_exitpath +main +' "$tmp/t" &&
            grep -Eq '^ +[0-9]+  run_exitpath +finished +8M +64K +[0-9]+ +[0-9.]+%$' "$tmp/t" &&
            grep -Eq '^ +[0-9]+  run_exitpath +sleeper +8M +64K +[1-9][0-9]+ +[0-9.]+%  running$' "$tmp/t" ||
            fail "$sub $how: table: $(cat "$tmp/t" 2>&1)"
        [ $sub = run ] || grep -q "^vmstack trace: deepest call chains of run_exitpath (pid [0-9]*) at $when" "$tmp/t" ||
            fail "$sub $how: no chains: $(cat "$tmp/t")"
    done
    ;;
valgrind)
    # valgrind under 'vmstack run' (the preload in the program valgrind runs): vmstack's own reads
    # of stacks (usage scans, zeroing a gone thread's stack, unwinding) are no memcheck errors.
    command -v valgrind > /dev/null || skip "valgrind not installed"
    "$vmstack" run -- valgrind -q --error-exitcode=9 "$bin/run_clean" > "$tmp/out" 2> "$tmp/err"; rc=$?
    [ "$rc" = 0 ] || fail "exit $rc: $(cat "$tmp/err")"
    [ "$(cat "$tmp/out")" = ok ] || fail "stdout: $(cat "$tmp/out")"
    ! grep -q '^==[0-9]*==' "$tmp/err" || fail "memcheck errors: $(cat "$tmp/err")"
    grep -q '^vmstack run: stack usage of run_clean (pid [0-9]*) at exit$' "$tmp/err" &&
        [ "$(grep -c '  work  ' "$tmp/err")" = 4 ] || fail "table: $(cat "$tmp/err")"
    ;;
emfile)
    # A program that used up its descriptors (soft limit at the hard one): exit 0, and the table
    # in FILE or on stderr all the same, with the names of the start routines (read from the
    # program's file) and of a thread that named itself by prctl (read from /proc).
    for sub in run trace; do
        keeper_run "$tmp/err" "$vmstack" $sub --output "$tmp/t" -- "$bin/run_exitpath" emfile; rc=$?
        [ "$rc" = 0 ] || fail "$sub: exit $rc: $(cat "$tmp/err")"
        [ ! -s "$tmp/err" ] || fail "$sub: stderr: $(cat "$tmp/err")"
        "$vmstack" $sub -- "$bin/run_exitpath" emfile 2> "$tmp/t2" || fail "$sub, to stderr: exit $?: $(cat "$tmp/t2")"
        for t in "$tmp/t" "$tmp/t2"; do
            grep -q '^vmstack run: stack usage of run_exitpath (pid [0-9]*) at exit$' "$t" &&
                grep -q '^ *[0-9]*  run_exitpath  *main  ' "$t" &&
                grep -Eq '^ +[0-9]+  run_exitpath +finished +8M ' "$t" &&
                grep -Eq '^ +[0-9]+  sleepy +sleeper +8M .*  running$' "$t" || fail "$sub: table: $(cat "$t")"
        done
    done
    ;;
handler_stack)
    # A handler without SA_ONSTACK runs on the interrupted stack, one with it on the program's own
    # alternate stack, with the same uc_stack and mask: the same lines plain, under run and trace.
    "$bin/run_handler_stack" > "$tmp/plain" 2>&1 || fail "plain: $(cat "$tmp/plain")"
    grep -q '^main: sig 10: frame on interrupted stack' "$tmp/plain" &&
        grep -q '^thread: sig 12: frame on own altstack' "$tmp/plain" || fail "plain: $(cat "$tmp/plain")"
    for sub in run trace; do
        "$vmstack" $sub --output "$tmp/t" -- "$bin/run_handler_stack" > "$tmp/out" 2>&1 ||
            fail "$sub: exit status: $(cat "$tmp/out")"
        cmp -s "$tmp/plain" "$tmp/out" || fail "$sub: $(diff "$tmp/plain" "$tmp/out")"
    done
    ;;
unmanaged)
    # A stack the program made itself (makecontext, an mprotect'd page below it) overflows: death
    # by SIGSEGV as plain, after a report that names the stack and its mapping.
    (ulimit -c 0; exec "$bin/run_unmanaged") > "$tmp/plain" 2> "$tmp/plain.err"; plain=$?
    [ "$plain" = 139 ] || fail "plain: exit $plain"
    for sub in run trace; do
        keeper_run "$tmp/err" sh -c 'ulimit -c 0; exec "$@"' sh "$vmstack" $sub --output "$tmp/t" -- \
            "$bin/run_unmanaged" > "$tmp/out"; rc=$?
        [ "$rc" = 139 ] && cmp -s "$tmp/plain" "$tmp/out" || fail "$sub: exit $rc: $(cat "$tmp/out" "$tmp/err")"
        grep -Eqx 'vmstack: BUG: stack overflow on a stack vmstack does not manage: access at 0x[0-9a-f]+, sp 0x[0-9a-f]+' "$tmp/err" &&
            grep -Eqx "vmstack: thread 'run_unmanaged' \(tid [0-9]+\)" "$tmp/err" &&
            grep -Eqx 'vmstack: stack mapping 0x[0-9a-f]+\.\.0x[0-9a-f]+ \(64 KiB\), below it a mapping the access hit at 0x[0-9a-f]+\.\.0x[0-9a-f]+' "$tmp/err" &&
            grep -Eq '^vmstack:  \[<0x[0-9a-f]+>\] coroutine\+0x[0-9a-f]+/0x[0-9a-f]+ \[run_unmanaged\]( [^ ]+:[0-9]+)?$' "$tmp/err" &&
            [ "$(grep '^vmstack: ' "$tmp/err" | tail -1)" = "vmstack: not a stack of vmstack's: passing SIGSEGV on" ] ||
            fail "$sub: report: $(cat "$tmp/err")"
        grep -q "^vmstack run: stack usage of run_unmanaged (pid [0-9]*) at death by SIGSEGV" "$tmp/t" ||
            fail "$sub: table: $(cat "$tmp/t")"
    done
    # Boost.Context's protected_fixedsize_stack: its own guard page, below its own mapping.
    [ -x "$bin/run_boost_protected" ] || skip "Boost.Context was not found at build time"
    (ulimit -c 0; exec "$bin/run_boost_protected") > "$tmp/plain" 2> "$tmp/plain.err"; plain=$?
    [ "$plain" = 139 ] || fail "boost plain: exit $plain"
    keeper_run "$tmp/err" sh -c 'ulimit -c 0; exec "$@"' sh "$vmstack" run --output "$tmp/t" -- \
        "$bin/run_boost_protected" > "$tmp/out"; rc=$?
    [ "$rc" = 139 ] && cmp -s "$tmp/plain" "$tmp/out" &&
        grep -Eqx 'vmstack: BUG: stack overflow on a stack vmstack does not manage: access at 0x[0-9a-f]+, sp 0x[0-9a-f]+' "$tmp/err" &&
        grep -Eq '^vmstack:  \[<0x[0-9a-f]+>\] down\(unsigned long\)\+0x[0-9a-f]+/0x[0-9a-f]+ \[run_boost_protected\]( [^ ]+:[0-9]+)?$' "$tmp/err" &&
        [ "$(grep '^vmstack: ' "$tmp/err" | tail -1)" = "vmstack: not a stack of vmstack's: passing SIGSEGV on" ] ||
        fail "boost: exit $rc: $(cat "$tmp/out" "$tmp/err")"
    ;;
boehm)
    # A conservative collector stops its threads with a signal whose handler must run on the
    # interrupted stack (it scans each stack from there): 20 of 20 runs as plain, run and trace.
    [ -x "$bin/run_boehm" ] || skip "libgc-dev was not installed at build time"
    "$bin/run_boehm" > "$tmp/plain" 2>&1 || fail "plain: $(cat "$tmp/plain")"
    for sub in run trace; do
        for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
            "$vmstack" $sub --output "$tmp/t" -- "$bin/run_boehm" > "$tmp/out" 2>&1; rc=$?
            [ "$rc" = 0 ] && cmp -s "$tmp/plain" "$tmp/out" || fail "$sub ($i): exit $rc: $(cat "$tmp/out")"
        done
    done
    ;;
exec_pid)
    # vmstack run becomes the program (exec): the pid and the parent it was started with.
    for sub in run trace; do
        sh -c 'echo "$$ $PPID"; exec "$@"' sh "$vmstack" $sub --output "$tmp/t" -- sh -c 'echo "$$ $PPID"' \
            > "$tmp/out" 2> "$tmp/err" || fail "$sub: exit status: $(cat "$tmp/err")"
        [ "$(wc -l < "$tmp/out")" = 2 ] && [ "$(sed -n 1p "$tmp/out")" = "$(sed -n 2p "$tmp/out")" ] ||
            fail "$sub: pid and parent before and after: $(cat "$tmp/out")"
    done
    ;;
exec_sigqueue)
    # A sigqueue payload and its sender reach the program as sent: no relay in between.
    for sub in run trace; do
        in_background $sub "$bin/run_signals" queue
        [ "$(sed -n 's/^ready //p' "$tmp/out")" = "$pid" ] || fail "$sub: the program is not the started pid $pid: $(cat "$tmp/out")"
        "$bin/run_signals" send "$pid" 4242 & sender=$!
        wait $sender || fail "$sub: sigqueue failed"
        wait $pid || fail "$sub: exit status: $(cat "$tmp/err")"
        grep -qx "code SI_QUEUE value 4242 sender $sender" "$tmp/out" || fail "$sub: $(cat "$tmp/out")"
    done
    ;;
exec_group_term)
    # A SIGTERM to the program's process group (timeout(1) sends one) arrives once, 20 of 20 runs.
    command -v setsid > /dev/null || skip "setsid not installed"
    for sub in run trace; do
        for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
            : > "$tmp/out"
            setsid "$vmstack" $sub --output "$tmp/t" -- "$bin/run_signals" terms > "$tmp/out" 2> "$tmp/err" &
            job=$!
            wait_ready "$tmp/out"
            pid=$(sed -n 's/^ready //p' "$tmp/out")
            kill -TERM "-$pid" || fail "$sub ($i): the program $pid leads no process group"
            wait $job
            while kill -0 "$pid" 2> /dev/null; do sleep 0.05; done
            grep -qx 'terms 1' "$tmp/out" || fail "$sub ($i): $(cat "$tmp/out" "$tmp/err")"
        done
    done
    ;;
exec_stop)
    # Job control as plain: SIGSTOP stops the program itself, SIGCONT goes on.
    for sub in run trace; do
        in_background $sub "$bin/run_signals" terms
        kill -STOP "$pid"
        i=0
        until [ "$(sed 's/.*) \(.\).*/\1/' "/proc/$pid/stat")" = T ]; do
            i=$((i + 1)); [ $i -lt 100 ] || fail "$sub: not stopped"; sleep 0.05
        done
        kill -CONT "$pid"; kill -TERM "$pid"
        wait $pid
        grep -qx 'terms 1' "$tmp/out" || fail "$sub: $(cat "$tmp/out" "$tmp/err")"
    done
    ;;
exec_subreaper)
    # A child subreaper that runs vmstack run reaps its own child first, with the program's status.
    # The keeper, which outlives the program by the moment it takes to write the table, is then
    # the subreaper's too, as 'strace -D's tracer is (docs/limits.md): one more, never before.
    for sub in run trace; do
        for how in exit_group sigkill; do
            "$bin/run_signals" subreaper "$vmstack" $sub --output "$tmp/t" -- "$bin/run_exitpath" $how \
                > "$tmp/out" 2> "$tmp/err"
            case $how in exit_group) want=1792 ;; sigkill) want=9 ;; esac
            [ "$(sed -n 2p "$tmp/out")" = "reaped child status $want" ] && [ "$(wc -l < "$tmp/out")" -le 3 ] &&
                ! sed -n '3,$p' "$tmp/out" | grep -qv '^reaped other status 0$' ||
                fail "$sub $how: $(cat "$tmp/out" "$tmp/err")"
            grep -q "^vmstack run: stack usage of run_exitpath" "$tmp/t" || fail "$sub $how: no table: $(cat "$tmp/t")"
        done
    done
    ;;
trace_options)
    # Every option of run works under trace, from one table: trace's --help lists each option
    # run's lists, and the program gets the same VMSTACK_RUN_* settings from both (the command's
    # own, TRACE and PID, aside), which differ from those of no option but for
    # --allow-unprotected, which only a set-id program sees (case usage, test_harden_*).
    mkdir "$tmp/bin" && printf '#!/bin/sh\nexit 0\n' > "$tmp/bin/gnuplot" && chmod +x "$tmp/bin/gnuplot" || fail "gnuplot stub"
    # vars SUB OPTIONS...: the settings 'vmstack SUB OPTIONS -- env' hands to the program, in $tmp/SUB.vars.
    vars() {
        s=$1; shift
        PATH="$tmp/bin:$PATH" "$vmstack" "$s" "$@" -- env > "$tmp/$s.env" 2> "$tmp/$s.err" || fail "$s $*: $(cat "$tmp/$s.err")"
        grep '^VMSTACK_RUN_' "$tmp/$s.env" | grep -v '^VMSTACK_RUN_\(TRACE\|PID\)=' | sort > "$tmp/$s.vars"
    }
    vars run && mv "$tmp/run.vars" "$tmp/none.vars"
    "$vmstack" run --help |
        sed -n 's/^  \(-[a-z], \)\{0,1\}\(--[a-z-]*\)\( [A-Z][A-Za-z.|]*\)\{0,1\}  .*/\2\3/p' > "$tmp/options"
    [ "$(wc -l < "$tmp/options")" -ge 8 ] || fail "run --help lists only: $(cat "$tmp/options")"
    "$vmstack" trace --help > "$tmp/trace.help" || fail "trace --help"
    while read -r opt arg; do
        grep -q -- "$opt\([ ,]\|\$\)" "$tmp/trace.help" || fail "trace --help does not list $opt"
        case $arg in
        "") set -- "$opt" ;;
        SIZE) set -- "$opt" 128K ;;
        SIG) set -- "$opt" USR1 ;;
        FILE) set -- "$opt" "$tmp/out.txt" ;;
        FILE.png\|.svg) set -- "$opt" "$tmp/plot.png" ;;
        *) fail "run --help: $opt $arg: the test has no value to try it with" ;;
        esac
        vars run "$@"
        vars trace "$@"
        cmp -s "$tmp/run.vars" "$tmp/trace.vars" ||
            fail "$*: run and trace differ: $(diff "$tmp/run.vars" "$tmp/trace.vars")"
        [ "$opt" = --allow-unprotected ] || ! cmp -s "$tmp/none.vars" "$tmp/run.vars" ||
            fail "$*: the program sees no difference: $(cat "$tmp/run.vars")"
    done < "$tmp/options"
    # And they take effect under trace: the thread's stack and guard, the table as JSON in FILE.
    truth=$("$vmstack" trace --stack-size 128K --guard 256K --json --output "$tmp/t.json" -- "$bin/run_recurse" 100) ||
        fail "trace --stack-size 128K"
    json "$tmp/t.json" "t[1]['stack_size'] == 131072 and t[1]['guard_size'] == 262144 and
        abs(t[1]['peak_bytes'] - $truth) < 4096 and 'trace' in r" > /dev/null || fail "trace options: $(cat "$tmp/t.json")"
    ;;
*)
    fail "unknown case"
    ;;
esac
exit 0
