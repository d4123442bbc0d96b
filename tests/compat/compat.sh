#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The compatibility suite: each case runs real programs plain, under
# 'vmstack run --output F --' and under 'vmstack trace --output F --'.
# Their stdout, stderr and exit status must be the same (the table goes to
# F, which must be written); where a stack overflows, stderr is plain's
# with vmstack's report added.  Wall times under run and trace are written
# as ratios to plain to TIMES_DIR/CASE (ratios.sh prints them as a table).
# usage: compat.sh CASE VMSTACK BINDIR TIMES_DIR   (BINDIR holds the compat_* programs)
# Exit 0 pass, 1 fail.  A program it needs that is missing fails the case:
# scripts/test-deps.sh installs them all.
set -u
case_=$1 vmstack=$2 bin=$3 times=$4
src=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d) || exit 1
# Readable by the unprivileged user of the file-capability case.
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
failed=""
fail() { echo "FAIL ($case_): $*" >&2; failed=" FAILED"; ratios > /dev/null; exit 1; }
need() { for p in "$@"; do [ -x "$p" ] || command -v "$p" > /dev/null ||
             fail "$p is not installed: scripts/test-deps.sh installs what the suite needs"; done; }

limit=120          # seconds, for one program in one mode: far beyond any goal
wrap=()            # what runs before vmstack (and before the plain program): ulimit, setpriv, env
declare -A secs=([plain]=0 [run]=0 [trace]=0)
concurrent=""
timed=yes          # whether the case's wall times mean anything
keeper=""          # set where the program ends without exit handlers (a signal, exit_group): its table comes a moment later

# run1 MODE NAME CMD...: CMD plain or under vmstack MODE, into NAME.MODE.{out,err,rc,time};
# the table into NAME.MODE.table.  Adds the wall time to secs[MODE].
run1() {
    local mode=$1 name=$2 t0 t1 rc; shift 2
    local pre=()
    [ "$mode" = plain ] || pre=("$vmstack" "$mode" --output "$tmp/$name.$mode.table" --)
    t0=$EPOCHREALTIME
    if [ -n "$keeper" ]; then
        # After a fatal signal the keeper writes the table when the program is gone: its stderr
        # goes through a pipe, whose reader ends when the keeper closed its copy too.
        "${wrap[@]}" timeout -k 5 "$limit" "${pre[@]}" "$@" 2>&1 > "$tmp/$name.$mode.out" < /dev/null |
            timeout "$limit" cat > "$tmp/$name.$mode.err"
        rc=${PIPESTATUS[0]}
    else
        "${wrap[@]}" timeout -k 5 "$limit" "${pre[@]}" "$@" > "$tmp/$name.$mode.out" 2> "$tmp/$name.$mode.err" < /dev/null
        rc=$?
    fi
    t1=$EPOCHREALTIME
    echo "$rc" > "$tmp/$name.$mode.rc"
    echo "$t0 $t1" > "$tmp/$name.$mode.time"
    secs[$mode]=$(awk -v s="${secs[$mode]}" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", s + b - a }')
    awk -v a="$t0" -v b="$t1" -v l="$limit" 'BEGIN { exit !(b - a < l) }' ||
        fail "$*: still running after $limit s under ${pre[*]:-nothing (plain)}, killed; stderr: $(tail -5 "$tmp/$name.$mode.err")"
}

# times_of NAME: the wall times of NAME's three runs into secs[] (after runs in the background).
times_of() {
    local m
    for m in plain run trace; do
        secs[$m]=$(awk -v s="${secs[$m]}" '{ printf "%.3f", s + $2 - $1 }' "$tmp/$1.$m.time")
    done
}

# each NAME CMD...: CMD plain, under run, under trace, one after the other (clean wall times).
each() {
    local m
    for m in plain run trace; do run1 "$m" "$@"; done
}

# free_port: a loopback TCP port free now, for a server the case starts.
free_port() {
    /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# javac_to DIR SOURCE: SOURCE compiled into DIR.
javac_to() {
    javac -d "$1" "$2" 2> "$tmp/javac.err" || fail "javac: $(cat "$tmp/javac.err")"
}

# rc_is NAME STATUS: plain's exit status is STATUS (where the case means one).
rc_is() {
    [ "$(cat "$tmp/$1.plain.rc")" = "$2" ] ||
        fail "$1: plain exit $(cat "$tmp/$1.plain.rc"), expected $2; stderr: $(show "$tmp/$1.plain.err")"
}

# plain_has NAME LINE...: plain's stdout has each LINE (an extended regex for a whole line):
# the case did what it means to, before its runs under vmstack are compared with it.
plain_has() {
    local name=$1 l; shift
    for l in "$@"; do
        grep -Eqx -- "$l" "$tmp/$name.plain.out" ||
            fail "$name: plain's stdout has no line '$l': $(show "$tmp/$name.plain.out") $(show "$tmp/$name.plain.err")"
    done
}

# vmstack_for_all: vmstack becomes a copy in $tmp/bin that any user can run (the build
# tree may be closed to others), for a case that changes user.
vmstack_for_all() {
    mkdir "$tmp/bin" && cp "$vmstack" "$(dirname "$vmstack")/libvmstack-preload.so" "$tmp/bin/" &&
        chmod -R a+rX "$tmp/bin" || fail "cannot copy vmstack and its preload library to $tmp/bin"
    vmstack=$tmp/bin/vmstack
}

# show FILE: FILE's first lines, for a failure message.
show() { head -c 3000 "$1"; }

# same NAME [FILTER]: stdout, stderr and exit status under run and trace are plain's
# (each passed through FILTER first, a shell command reading stdin, when given).
same() {
    local name=$1 filter=${2:-cat} m f
    for f in out err rc; do
        sh -c "$filter" < "$tmp/$name.plain.$f" > "$tmp/$name.plain.$f.cmp"
        for m in run trace; do
            sh -c "$filter" < "$tmp/$name.$m.$f" > "$tmp/$name.$m.$f.cmp"
            cmp -s "$tmp/$name.plain.$f.cmp" "$tmp/$name.$m.$f.cmp" ||
                fail "$name: $f under vmstack $m differs from plain (diff plain $m):
$(diff "$tmp/$name.plain.$f.cmp" "$tmp/$name.$m.$f.cmp" | head -40)"
        done
    done
}

# table NAME: the table was written to --output under run, and with the call chains under trace.
table() {
    local m
    for m in run trace; do
        [ -s "$tmp/$1.$m.table" ] || fail "$1: vmstack $m wrote no table to --output; stderr: $(show "$tmp/$1.$m.err")"
        grep -q '^vmstack run: stack usage of ' "$tmp/$1.$m.table" ||
            fail "$1: vmstack $m: no usage table in --output: $(show "$tmp/$1.$m.table")"
    done
    grep -q '^vmstack trace: deepest call chains of ' "$tmp/$1.trace.table" ||
        fail "$1: vmstack trace: no call chains in --output: $(show "$tmp/$1.trace.table")"
}

# same_plus_report NAME THREAD: stdout and exit status are plain's; stderr is plain's with
# vmstack's report of THREAD's overflow (of a stack of vmstack's, or of one a runtime made
# itself) added as one block of 'vmstack: ' lines, whose
# last line says what happens (never a bare 'vmstack: aborting').
same_plus_report() {
    local name=$1 thread=$2 m
    for m in run trace; do
        for f in out rc; do
            cmp -s "$tmp/$name.plain.$f" "$tmp/$name.$m.$f" ||
                fail "$name: $f under vmstack $m differs from plain (diff plain $m):
$(diff "$tmp/$name.plain.$f" "$tmp/$name.$m.$f" | head -40)"
        done
        # The report: from its first line, every line that starts with 'vmstack: '.
        awk -v rep="$tmp/$name.$m.report" '
            !done && /^vmstack: BUG: stack (guard page was hit at 0x|overflow on a stack vmstack does not manage: )/ { inrep = 1 }
            inrep && /^vmstack: / { print > rep; next }
            inrep { inrep = 0; done = 1 }
            { print }' "$tmp/$name.$m.err" > "$tmp/$name.$m.rest"
        [ -s "$tmp/$name.$m.report" ] || fail "$name: no overflow report under vmstack $m: $(show "$tmp/$name.$m.err")"
        grep -q "^vmstack: thread '$thread' (tid [0-9]*)" "$tmp/$name.$m.report" ||
            fail "$name: the report under vmstack $m does not name thread '$thread': $(show "$tmp/$name.$m.report")"
        [ "$(tail -1 "$tmp/$name.$m.report")" != "vmstack: aborting" ] ||
            fail "$name: the report under vmstack $m ends in a bare 'vmstack: aborting': $(show "$tmp/$name.$m.report")"
        cmp -s "$tmp/$name.plain.err" "$tmp/$name.$m.rest" ||
            fail "$name: stderr under vmstack $m, less the report, differs from plain (diff plain $m):
$(diff "$tmp/$name.plain.err" "$tmp/$name.$m.rest" | head -40)"
    done
}

# check NAME [FILTER]: same, and the tables.
check() { same "$@"; table "$1"; }

# The ratios, written when the case ends, failed or not (once a program ran in all three modes).
ratios() {
    [ -n "$timed" ] && [ "${secs[plain]}" != 0 ] || return 0
    mkdir -p "$times"
    awk -v c="$case_" -v p="${secs[plain]}" -v r="${secs[run]}" -v t="${secs[trace]}" -v note="$concurrent$failed" 'BEGIN {
        q = p > 0.001 ? p : 0.001
        printf "%-26s %8.2f %8.2f %8.2f %9.2f%s\n", c, p, r / q, t / q, t / (r > 0.001 ? r : 0.001), note }' \
        > "$times/$case_"
    cat "$times/$case_"
}

# ---- CPython's own tests: the outcome of every test case, not their output.

python_tests() { # MODULE
    local module=$1 m diffs
    need /usr/bin/python3
    [ -d /usr/lib/python3.11/test ] && /usr/bin/python3 -c "import test.$module" 2> /dev/null ||
        fail "CPython's test.$module is missing: install libpython3.11-testsuite (scripts/test-deps.sh)"
    limit=900
    for m in plain run trace; do
        run1 "$m" "$module" /usr/bin/python3 -m test -j1 --junit-xml "$tmp/$module.$m.xml" "$module" &
    done
    wait
    times_of "$module"
    for m in plain run trace; do
        awk -v l="$limit" '{ exit !($2 - $1 < l) }' "$tmp/$module.$m.time" ||
            fail "$module: still running after $limit s ($m), killed"
        [ -s "$tmp/$module.$m.xml" ] || fail "$module: no results from the $m run: $(tail -20 "$tmp/$module.$m.out")"
    done
    concurrent=" (the three ran concurrently)"
    local kept=("${secs[plain]}" "${secs[run]}" "${secs[trace]}")
    for m in run trace; do
        diffs=$(/usr/bin/python3 "$src/junit_outcomes.py" "$tmp/$module.plain.xml" "$tmp/$module.$m.xml") ||
            fail "$module: $diffs"
        [ -z "$diffs" ] && continue
        # A test case whose outcome differs runs again, plain and in this mode: timing
        # tests on a loaded machine can flip once; a real difference stays.
        printf '%s\n' "$diffs" | cut -f1 > "$tmp/$module.$m.rerun"
        echo "$module: differs under vmstack $m, run again: $(tr '\n' ' ' < "$tmp/$module.$m.rerun")"
        [ "$(wc -l < "$tmp/$module.$m.rerun")" -le 10 ] ||
            fail "$module: outcomes under vmstack $m differ from plain (test, plain, $m):
$diffs"
        run1 plain "$module.again" /usr/bin/python3 -m test -j1 -v --junit-xml "$tmp/$module.again.plain.xml" \
             --matchfile "$tmp/$module.$m.rerun" "$module"
        run1 "$m" "$module.again" /usr/bin/python3 -m test -j1 -v --junit-xml "$tmp/$module.again.$m.xml" \
             --matchfile "$tmp/$module.$m.rerun" "$module"
        diffs=$(/usr/bin/python3 "$src/junit_outcomes.py" "$tmp/$module.again.plain.xml" "$tmp/$module.again.$m.xml") ||
            fail "$module (again): $diffs"
        [ -z "$diffs" ] || fail "$module: outcomes under vmstack $m differ from plain, twice (test, plain, $m):
$diffs
$(tail -60 "$tmp/$module.again.$m.out")"
    done
    secs=([plain]=${kept[0]} [run]=${kept[1]} [trace]=${kept[2]})
    table "$module"
}

# ---- the cases (one block, read whole before it runs)

{
case $case_ in
cpython_*)
    python_tests "${case_#cpython_}"
    ;;
java_version)
    need java
    each v java -version
    check v
    ;;
java_soe|java_npe|java_xcheck_jni)
    need java javac
    javac_to "$tmp/classes" "$src/Compat.java"
    case $case_ in
    java_soe) each soe java -cp "$tmp/classes" Compat soe ;;
    java_npe) each soe java -cp "$tmp/classes" Compat npe ;;
    java_xcheck_jni) each soe java -Xcheck:jni -cp "$tmp/classes" Compat npe ;;
    esac
    check soe
    ;;
node_recursion|node_workers|node_child)
    need node
    each js node "$src/${case_#node_}.js"
    check js
    ;;
rust_threads)
    need /usr/bin/rustc
    /usr/bin/rustc -O -o "$tmp/threads" "$src/threads.rs" 2> "$tmp/rustc.err" || fail "rustc: $(cat "$tmp/rustc.err")"
    # Rust's backtraces stay off whatever the environment says: the panic's message is compared.
    each rs env RUST_BACKTRACE=0 "$tmp/threads"
    check rs
    ;;
rust_deep)
    need /usr/bin/rustc
    /usr/bin/rustc -O -o "$tmp/deep" "$src/deep.rs" 2> "$tmp/rustc.err" || fail "rustc: $(cat "$tmp/rustc.err")"
    each rs "$tmp/deep"
    check rs
    ;;
rust_overflow)
    need /usr/bin/rustc
    /usr/bin/rustc -O -o "$tmp/overflow" "$src/overflow.rs" 2> "$tmp/rustc.err" || fail "rustc: $(cat "$tmp/rustc.err")"
    each rs env RUST_BACKTRACE=0 "$tmp/overflow"
    grep -q "^thread 'deep' has overflowed its stack$" "$tmp/rs.plain.err" || fail "plain: $(show "$tmp/rs.plain.err")"
    same_plus_report rs deep
    table rs
    ;;
go_cgo)
    need /usr/bin/go gcc
    keeper=yes # os.Exit is a raw exit_group: the keeper makes the table
    # Offline and self-contained: a fresh build cache, no module download.
    GOCACHE="$tmp/gocache" GOPATH="$tmp/gopath" GOFLAGS= GOPROXY=off GO111MODULE=off CGO_ENABLED=1 \
        /usr/bin/go build -o "$tmp/cgo" "$src/cgo.go" > "$tmp/go.err" 2>&1 || fail "go build: $(cat "$tmp/go.err")"
    each go "$tmp/cgo"
    check go
    ;;
valgrind)
    need valgrind
    each vg valgrind -q --error-exitcode=9 "$bin/compat_threads"
    check vg
    ;;
gdb)
    need gdb
    # Thread addresses, LWP and process ids differ from run to run, and the order of
    # gdb's thread lines with them: those are masked, the lines compared sorted.
    # gdb races a joined thread's exit against exit_group even plain (about 1 run
    # in 30): it then reports the main thread's exit and a "[New process N]".  Exit
    # lines are therefore left out; the "[New Thread" lines still count the threads.
    # The program's own output goes to a file of its own: gdb writes a thread's line
    # in pieces, and the program's lines would land in the middle of them.
    for m in plain run trace; do
        run1 "$m" gdb gdb -q -nx -batch -ex "run > $tmp/gdb.$m.prog" -ex 'print $_exitcode' "$bin/compat_threads"
        LC_ALL=C sort "$tmp/gdb.$m.prog" > "$tmp/gdb.$m.prog.sorted"
    done
    [ -s "$tmp/gdb.plain.prog" ] || fail "gdb: the program printed nothing plain: $(show "$tmp/gdb.plain.out")"
    for m in run trace; do
        cmp -s "$tmp/gdb.plain.prog.sorted" "$tmp/gdb.$m.prog.sorted" ||
            fail "gdb: the program's output under vmstack $m differs from plain (diff plain $m):
$(diff "$tmp/gdb.plain.prog.sorted" "$tmp/gdb.$m.prog.sorted" | head -40)"
    done
    check gdb "sed -E '/^\\[(Thread .* exited|New process [0-9]+)\\]\$/d; s/0x[0-9a-f]+/0xX/g; s/LWP [0-9]+/LWP N/g; s/process [0-9]+/process N/g' | LC_ALL=C sort"
    ;;
strace)
    need strace
    # Each mode with a log of its own: strace sees every signal, and vmstack's must not show.
    for m in plain run trace; do
        run1 "$m" st strace -f -qq -o "$tmp/strace.$m.log" "$bin/compat_threads"
        grep -e '--- SIG' "$tmp/strace.$m.log" | sed -E 's/^[0-9]+ +//; s/si_pid=[0-9]+/si_pid=N/' > "$tmp/strace.$m.sig"
    done
    check st
    for m in run trace; do
        cmp -s "$tmp/strace.plain.sig" "$tmp/strace.$m.sig" ||
            fail "strace -f saw other signals under vmstack $m than plain (diff plain $m):
$(diff "$tmp/strace.plain.sig" "$tmp/strace.$m.sig" | head -20)"
    done
    ;;
asan)
    need ldd
    # The sanitizer's runtime must come first in the libraries: the user preloads it,
    # as with any program whose runtime insists on that, and vmstack keeps it first.
    asan=$(ldd "$bin/compat_asan" | awk '/libasan/ { print $3 }')
    [ -n "$asan" ] && [ -e "$asan" ] || fail "compat_asan is not linked with libasan: $(ldd "$bin/compat_asan")"
    wrap=(env "LD_PRELOAD=$asan")
    each asan "$bin/compat_asan"
    check asan
    ;;
closefrom|close_range|nofile)
    each fds "$bin/compat_fds" "$case_"
    check fds
    ;;
close_range_overflow)
    each fds "$bin/compat_fds" overflow
    [ "$(cat "$tmp/fds.plain.rc")" = 139 ] || fail "plain: exit $(cat "$tmp/fds.plain.rc"), expected death by SIGSEGV"
    same_plus_report fds deep
    table fds
    ;;
trap_segv)
    # An ignored SIGSEGV stays ignored: in the shell that ignores it, and in what it execs.
    each sh sh -c 'trap "" SEGV; kill -SEGV $$; echo survived $?'
    check sh
    each py sh -c 'trap "" SEGV; exec /usr/bin/python3 -c "
import os, signal
print(signal.getsignal(signal.SIGSEGV))
os.kill(os.getpid(), signal.SIGSEGV)
print(\"survived\")"'
    check py
    ;;
ulimit_s16)
    # vmstack run itself runs on the 16 KiB main stack, and the program after it.
    printf '#!/bin/sh\nulimit -s 16 || exit 99\nexec "$@"\n' > "$tmp/ulimit16"
    chmod +x "$tmp/ulimit16"
    wrap=("$tmp/ulimit16")
    each sh sh -c 'echo ok; exit 3'
    check sh
    each thr "$bin/compat_threads"
    check thr
    ;;
filecap)
    # A program with a file capability, run by an unprivileged user, runs in secure-execution
    # mode: the loader would ignore LD_PRELOAD.  vmstack refuses it, as it refuses setuid
    # programs, with one line naming the reason; --allow-unprotected runs it as plain.
    need setcap setpriv
    timed=""
    [ "$(id -u)" = 0 ] || fail "needs root, to set a file capability and change user"
    cp "$(command -v ping)" "$tmp/ping" && setcap cap_net_raw+ep "$tmp/ping" ||
        fail "cannot set a file capability on a copy of ping in $tmp"
    # nobody runs a copy of vmstack (the build tree may be closed to others) and
    # writes the tables (if vmstack went so far) into $tmp.
    chmod 1777 "$tmp"
    vmstack_for_all
    wrap=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
    limit=20
    run1 plain ping "$tmp/ping" -c1 -W5 127.0.0.1
    [ "$(cat "$tmp/ping.plain.rc")" = 0 ] || fail "plain ping as nobody: $(show "$tmp/ping.plain.err")"
    for m in run trace; do
        run1 "$m" ping "$tmp/ping" -c1 -W5 127.0.0.1
        [ "$(cat "$tmp/ping.$m.rc")" = 126 ] && [ ! -s "$tmp/ping.$m.out" ] && [ "$(wc -l < "$tmp/ping.$m.err")" = 1 ] &&
            grep -Eq "^vmstack (run|trace): $tmp/ping .*capabilit" "$tmp/ping.$m.err" ||
            fail "vmstack $m of a file-capability program as nobody: exit $(cat "$tmp/ping.$m.rc"), expected 126 and one line naming its capabilities; stdout: $(show "$tmp/ping.$m.out"); stderr: $(show "$tmp/ping.$m.err")"
        "${wrap[@]}" "$vmstack" "$m" --allow-unprotected -- "$tmp/ping" -c1 -W5 127.0.0.1 \
            > "$tmp/ping.allow.out" 2> "$tmp/ping.allow.err" < /dev/null ||
            fail "vmstack $m --allow-unprotected: exit $?: $(show "$tmp/ping.allow.err")"
        grep -q '^1 packets transmitted, 1 received' "$tmp/ping.allow.out" ||
            fail "vmstack $m --allow-unprotected: ping did not run: $(show "$tmp/ping.allow.out")"
        [ "$(wc -l < "$tmp/ping.allow.err")" = 1 ] &&
            grep -Eq "^vmstack (run|trace): $tmp/ping .*capabilit.*without vmstack" "$tmp/ping.allow.err" ||
            fail "vmstack $m --allow-unprotected: not one notice naming the capabilities: $(show "$tmp/ping.allow.err")"
    done
    ;;
git|make|sqlite3|xz|sort)
    need "$case_"
    each s sh "$src/$case_.sh" "$bin"
    check s
    ;;
php_fibers)
    need php
    each php php "$src/fibers.php" fibers
    rc_is php 3
    check php
    ;;
php_overflow)
    # The fiber's stack is PHP's own mapping: its guard page ends PHP by SIGSEGV, and under
    # vmstack too, after a report of an overflow on a stack vmstack does not manage.
    need php
    keeper=yes
    each php php "$src/fibers.php" overflow
    rc_is php 139
    plain_has php deep
    same_plus_report php php
    table php
    ;;
guile_gc)
    need guile
    each scm guile --no-auto-compile "$src/gc.scm"
    check scm
    ;;
boehm_gc)
    [ -x "$bin/compat_boehm" ] || fail "compat_boehm was not built: libgc-dev (scripts/test-deps.sh) was missing"
    each gc "$bin/compat_boehm"
    check gc
    ;;
lua_coroutines)
    need lua5.4 luajit
    each lua lua5.4 "$src/coroutines.lua"
    rc_is lua 3
    check lua
    each jit luajit "$src/coroutines.lua"
    rc_is jit 3
    check jit
    ;;
gevent)
    need /usr/bin/python3
    /usr/bin/python3 -c 'import gevent' 2> /dev/null || fail "gevent is missing: install python3-gevent (scripts/test-deps.sh)"
    each py /usr/bin/python3 "$src/greenlets.py"
    plain_has py 'greenlets 400 sum 4474400'
    check py
    ;;
redis)
    need redis-server redis-cli redis-benchmark
    each s sh "$src/redis.sh" "$(free_port)"
    plain_has s 'redis-benchmark exit 0' 'SET: N requests per second' 'GET: N requests per second' \
              'redis-server exit 0'
    check s
    ;;
nginx)
    need nginx ab
    each s sh "$src/nginx.sh" "$(free_port)"
    plain_has s 'ab exit 0' 'Complete requests: +2000' 'Failed requests: +0' 'nginx exit 0'
    check s
    ;;
postgres)
    # Run by postgres (initdb refuses root): a copy of vmstack it can run, tables into $tmp.
    need setpriv /usr/lib/postgresql/15/bin/postgres /usr/lib/postgresql/15/bin/pgbench
    [ "$(id -u)" = 0 ] || fail "needs root, to run PostgreSQL as its own user"
    chmod 1777 "$tmp"
    vmstack_for_all
    wrap=(setpriv --reuid=postgres --regid=postgres --clear-groups --)
    each s sh "$src/postgres.sh"
    plain_has s 'pgbench exit 0' 'number of transactions actually processed: 800/800' \
              'ERROR:  stack depth limit exceeded' 'postgres exit 0'
    check s
    ;;
java_gc)
    need java javac
    javac_to "$tmp/classes" "$src/Gc.java"
    each gc java -cp "$tmp/classes" Gc
    rc_is gc 3
    check gc
    ;;
erlang)
    # Schedulers that sleep at once: spinning ones crawl on a loaded machine.
    need erl
    each erl erl +sbwt none +sbwtdcpu none +sbwtdio none -noshell -eval "$(cat "$src/ring.erl")"
    rc_is erl 3
    plain_has erl 'ring 100010000' 'deep 100000'
    check erl
    ;;
recursion)
    need tclsh gawk bash
    each s sh "$src/recursion.sh"
    plain_has s 'tcl depth 3000' 'gawk depth 200000 regex 2' 'bash depth 1501' 'bash FUNCNEST exit 1'
    check s
    ;;
compress)
    need zstd pigz openssl
    each s sh "$src/compress.sh"
    rc_is s 0
    check s
    ;;
signals)
    need setsid bash
    each s bash "$src/signals.sh" "$bin/compat_signals"
    plain_has s 'code SI_QUEUE value 4242 sender \(the sender\)' 'terms 1' 'reaped child status 1280'
    check s
    ;;
cxx_async)
    # The last exception is not caught: std::terminate, SIGABRT.
    keeper=yes
    each cxx "$bin/compat_async"
    rc_is cxx 134
    check cxx
    ;;
*)
    fail "unknown case"
    ;;
esac
ratios
exit 0
}
