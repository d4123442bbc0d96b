#!/bin/sh
# SPDX-License-Identifier: MIT
# What a program observes is the same plain and under 'vmstack run' and
# 'vmstack trace' (the table goes to --output): thread attributes, joins,
# signal dispositions, LD_PRELOAD order, vmstack run's own stack.
# usage: test_run_same.sh CASE VMSTACK BINDIR   (BINDIR holds the run_* programs)
# Exit 0 pass, 1 fail, 77 skip (a program it needs is not installed).
set -u
case_=$1 vmstack=$2 bin=$3
. "$(dirname "$0")/lib.sh"
tmp=$TMP

# each NAME CMD...: runs CMD plain, under run and under trace; NAME.{plain,run,trace}{,.err,.rc}.
each() {
    name=$1; shift
    "$@" > "$tmp/$name.plain" 2> "$tmp/$name.plain.err"; echo $? > "$tmp/$name.plain.rc"
    for mode in run trace; do
        "$vmstack" $mode --guard 128K --output "$tmp/$name.$mode.table" -- "$@" \
            > "$tmp/$name.$mode" 2> "$tmp/$name.$mode.err"; echo $? > "$tmp/$name.$mode.rc"
    done
}

# same NAME: stdout, stderr and exit status identical plain, under run and under trace.
same() {
    for mode in run trace; do
        for f in "" .err .rc; do
            cmp -s "$tmp/$1.plain$f" "$tmp/$1.$mode$f" ||
                fail "$1: $mode$f differs from plain:
$(diff "$tmp/$1.plain$f" "$tmp/$1.$mode$f")"
        done
    done
}

rustc() {
    [ -x /usr/bin/rustc ] || skip "no /usr/bin/rustc"
    /usr/bin/rustc -O -o "$tmp/$1" "$(dirname "$0")/rust/$1.rs" 2> "$tmp/rustc.err" ||
        fail "rustc $1: $(cat "$tmp/rustc.err")"
}

case $case_ in
getattr)
    # pthread_getattr_np: glibc's stack size for the size asked, the guard size asked, the detach state.
    each attr "$bin/run_attr"
    grep ' stack ' "$tmp/attr.plain" > "$tmp/want"
    grep -q 'asked 100000: stack 99968 guard 4096 joinable, frame inside the stack' "$tmp/want" ||
        fail "glibc itself reports otherwise: $(cat "$tmp/attr.plain")"
    for mode in run trace; do
        grep ' stack ' "$tmp/attr.$mode" | cmp -s "$tmp/want" - ||
            fail "$mode: $(grep ' stack ' "$tmp/attr.$mode" | diff "$tmp/want" -)"
    done
    ;;
attr_usable)
    # For each stack and guard size asked: the size, guard and usable bytes read back are plain's,
    # the bottom read back is page aligned and writable (glibc cuts 100000 down to 99968 from its
    # top), and vmstack's guard is right below it, whatever guard was asked (0 included).
    each usable "$bin/run_attr_usable"
    [ "$(cat "$tmp/usable.plain.rc")" = 0 ] && [ "$(grep -c ' aligned writable' "$tmp/usable.plain")" = 17 ] ||
        fail "plain: $(cat "$tmp/usable.plain" "$tmp/usable.plain.err")"
    grep -q '^asked 100000 guard 0: size 99968 guard 0 usable' "$tmp/usable.plain" &&
        grep -q '^asked 100000 guard 1: size 99968 guard 4096 usable [0-9]* aligned writable, below guarded$' \
            "$tmp/usable.plain" || fail "glibc itself reports otherwise: $(cat "$tmp/usable.plain")"
    for mode in run trace; do
        [ "$(cat "$tmp/usable.$mode.rc")" = 0 ] || fail "$mode: exit $(cat "$tmp/usable.$mode.rc"): $(cat "$tmp/usable.$mode.err")"
        paste -d ' ' "$tmp/usable.plain" "$tmp/usable.$mode" | awk -v mode="$mode" '
            function field(name, from,   i) { for (i = from; i <= NF; i++) if ($i == name) return i; return 0 }
            {
                half = NF / 2
                ps = field("size", 1); rs = field("size", half + 1)
                if ($(ps + 1) != $(rs + 1) || $(ps + 3) != $(rs + 3)) bad = bad "\n" $0 ": size or guard read back differs"
                pu = field("usable", 1); ru = field("usable", half + 1)
                if ($(pu + 1) != $(ru + 1)) bad = bad "\n" $0 ": usable bytes differ"
                if ($(ru + 2) != "aligned" || $(ru + 3) != "writable,") bad = bad "\n" $0 ": bottom not aligned or writable"
                if ($NF != "guarded") bad = bad "\n" $0 ": no guard below the stack under " mode
                if ($(ps + 3) > 0 && $(half) != "guarded") bad = bad "\n" $0 ": plain has no guard below it"
            }
            END { if (NR != 17) bad = bad "\n" NR " lines"; if (bad) { print substr(bad, 2); exit 1 } }' > "$tmp/bad" ||
            fail "$mode (plain | $mode): $(cat "$tmp/bad")"
    done
    ;;
thread_depth_as_plain)
    # A thread has exactly as much stack below its start routine, down to the bottom it reads
    # back, as plain, for sizes that are a class (64K, 512K, the default 8M) and one that is not
    # (100000): the room the preload's static TLS takes is given back (preload.c, tls_room_init).
    each depth "$bin/run_depth"
    [ "$(cat "$tmp/depth.plain.rc")" = 0 ] && [ "$(grep -c ' usable [0-9]*$' "$tmp/depth.plain")" = 4 ] ||
        fail "plain: $(cat "$tmp/depth.plain" "$tmp/depth.plain.err")"
    for mode in run trace; do
        [ "$(cat "$tmp/depth.$mode.rc")" = 0 ] || fail "$mode: exit $(cat "$tmp/depth.$mode.rc"): $(cat "$tmp/depth.$mode.err")"
        paste -d ' ' "$tmp/depth.plain" "$tmp/depth.$mode" | awk '
            { p = $(NF / 2); r = $NF; if (r != p) bad = bad "\n" $0 ": usable " (r - p) " bytes off plain" }
            END { if (NR != 4) bad = bad "\n" NR " lines"; if (bad) { print substr(bad, 2); exit 1 } }' > "$tmp/bad" ||
            fail "$mode (plain | $mode): $(cat "$tmp/bad")"
    done
    ;;
join_detached)
    # pthread_join/pthread_detach of detached and joined threads: glibc's errors, and creating goes on.
    each attr "$bin/run_attr"
    for mode in run trace; do
        [ "$(cat "$tmp/attr.$mode.rc")" = 0 ] || fail "$mode: exit $(cat "$tmp/attr.$mode.rc"): $(cat "$tmp/attr.$mode.err")"
        grep -v ' stack ' "$tmp/attr.plain" > "$tmp/want"
        grep -v ' stack ' "$tmp/attr.$mode" | cmp -s "$tmp/want" - ||
            fail "$mode: $(grep -v ' stack ' "$tmp/attr.$mode" | diff "$tmp/want" -)"
        [ "$(grep -c '^after: ' "$tmp/attr.$mode")" = 10 ] || fail "$mode: threads created after: $(cat "$tmp/attr.$mode")"
    done
    grep -qx 'join of a detached thread: EINVAL' "$tmp/attr.plain" && grep -qx 'join again: ESRCH' "$tmp/attr.plain" ||
        fail "glibc itself says otherwise: $(cat "$tmp/attr.plain")"
    ;;
rust_thread)
    # Rust's std::thread finds its guard with pthread_getattr_np: the program runs as plain.
    rustc thread
    each thread "$tmp/thread"
    [ "$(cat "$tmp/thread.plain.rc")" = 5 ] || fail "plain: exit $(cat "$tmp/thread.plain.rc")"
    same thread
    ;;
rust_overflow)
    # Our report, then Rust's own message, and death by SIGABRT as plain.
    rustc overflow
    each overflow "$tmp/overflow"
    for mode in plain run trace; do
        [ "$(cat "$tmp/overflow.$mode.rc")" = 134 ] || fail "$mode: exit $(cat "$tmp/overflow.$mode.rc")"
        # (the shell's own "Aborted" line left out)
        [ "$(grep -v '^Aborted' "$tmp/overflow.$mode.err" | tail -n 2)" = "thread 'deep' has overflowed its stack
fatal runtime error: stack overflow" ] || fail "$mode: Rust's message is not last: $(cat "$tmp/overflow.$mode.err")"
    done
    for mode in run trace; do
        grep -q '^vmstack: BUG: stack guard page was hit at ' "$tmp/overflow.$mode.err" ||
            fail "$mode: no report: $(cat "$tmp/overflow.$mode.err")"
        grep -q "^vmstack: thread 'deep' (tid [0-9]*), start routine .*thread_start" "$tmp/overflow.$mode.err" ||
            fail "$mode: the report does not name the thread: $(cat "$tmp/overflow.$mode.err")"
        grep -qx "vmstack: passing SIGSEGV to the program's own handler" "$tmp/overflow.$mode.err" ||
            fail "$mode: $(cat "$tmp/overflow.$mode.err")"
        # Rust's names demangled in the report: the program's (legacy scheme), its std's (v0 in rustc 1.95).
        grep -q '^vmstack:  \[<0x[0-9a-f]*>\] overflow::deep+0x' "$tmp/overflow.$mode.err" ||
            fail "$mode: overflow::deep not named: $(cat "$tmp/overflow.$mode.err")"
        ! grep -Eq '^vmstack: .*(_R[A-Z][A-Za-z0-9_]*|_ZN[0-9][A-Za-z0-9_$.]*17h[0-9a-f]{16}E)\+0x' "$tmp/overflow.$mode.err" ||
            fail "$mode: a Rust name not demangled: $(cat "$tmp/overflow.$mode.err")"
    done
    # The program in the v0 scheme too.
    /usr/bin/rustc -O -C symbol-mangling-version=v0 -o "$tmp/overflow_v0" "$(dirname "$0")/rust/overflow.rs" 2> "$tmp/rustc.err" ||
        fail "rustc -C symbol-mangling-version=v0: $(cat "$tmp/rustc.err")"
    "$vmstack" run -- "$tmp/overflow_v0" > /dev/null 2> "$tmp/overflow_v0.err"
    grep -q '^vmstack:  \[<0x[0-9a-f]*>\] overflow::deep+0x' "$tmp/overflow_v0.err" &&
        ! grep -q '^vmstack: .*_R[A-Z][A-Za-z0-9_]*+0x' "$tmp/overflow_v0.err" ||
        fail "v0: overflow::deep not named: $(cat "$tmp/overflow_v0.err")"
    ;;
asan)
    # A program built with -fsanitize=address (gcc: libasan.so needed) runs under run as plain:
    # its runtime goes first in LD_PRELOAD.  And a library the environment preloads stays first.
    cc -fsanitize=address -D_GNU_SOURCE -pthread -o "$tmp/attr_asan" "$(dirname "$0")/run_attr.c" 2> "$tmp/cc.err" ||
        skip "no ASan: $(cat "$tmp/cc.err")"
    "$tmp/attr_asan" > "$tmp/want" 2> "$tmp/want.err" || fail "plain: $(cat "$tmp/want.err")"
    "$vmstack" run --guard 128K --output "$tmp/table" -- "$tmp/attr_asan" > "$tmp/out" 2> "$tmp/err" ||
        fail "exit $?: $(cat "$tmp/err")"
    cmp -s "$tmp/want" "$tmp/out" || fail "$(diff "$tmp/want" "$tmp/out")"
    [ ! -s "$tmp/err" ] || fail "stderr: $(cat "$tmp/err")"
    grep -q 'asan_thread_start' "$tmp/table" || fail "the threads are not in the table: $(cat "$tmp/table")"
    lib=$(ldd "$tmp/attr_asan" | awk '/libasan/ { print $3 }')
    [ "$(LD_PRELOAD=$lib "$vmstack" run --output "$tmp/table" -- printenv LD_PRELOAD | cut -d: -f1)" = "$lib" ] ||
        fail "LD_PRELOAD=$lib does not stay first"
    ;;
preload_libc)
    # glibc itself in LD_PRELOAD (by path, by name, beside another library, its threads library):
    # the program runs as plain (the guard it reads back is the one it asked for), and its
    # threads are on guarded stacks (vmstack's 128K guard, in the table).
    libc=$(ldd "$bin/run_attr" | awk '$1 == "libc.so.6" { print $3 }')
    libm=$(dirname "$libc")/libm.so.6
    i=0
    for pre in "$libc" libc.so.6 "$libc $libm" "$libm:$libc" libpthread.so.0 "$(dirname "$libc")/libpthread.so.0"; do
        i=$((i + 1))
        LD_PRELOAD=$pre "$bin/run_attr" > "$tmp/p$i.plain" 2> "$tmp/p$i.plain.err"; echo $? > "$tmp/p$i.plain.rc"
        for mode in run trace; do
            LD_PRELOAD=$pre "$vmstack" $mode --guard 128K --output "$tmp/p$i.$mode.table" -- "$bin/run_attr" \
                > "$tmp/p$i.$mode" 2> "$tmp/p$i.$mode.err"; echo $? > "$tmp/p$i.$mode.rc"
            [ "$(grep -c ' run_attr  *show  *8M  *128K ' "$tmp/p$i.$mode.table")" -ge 10 ] ||
                fail "LD_PRELOAD=$pre, $mode: the threads are not on guarded stacks: $(cat "$tmp/p$i.$mode.table" "$tmp/p$i.$mode.err")"
        done
        [ "$(cat "$tmp/p$i.plain.rc")" = 0 ] || fail "LD_PRELOAD=$pre, plain: exit $(cat "$tmp/p$i.plain.rc")"
        same "p$i"
    done
    # Preloaded by hand after glibc, the library cannot interpose: it says so and what to do (the
    # shell may add its own "Aborted" line).
    LD_PRELOAD="libc.so.6:$(dirname "$vmstack")/libvmstack-preload.so" "$bin/run_attr" > "$tmp/out" 2> "$tmp/err"; rc=$?
    [ "$rc" = 134 ] && [ "$(head -n 1 "$tmp/err")" = "vmstack run: libc comes before libvmstack-preload.so in LD_PRELOAD, so pthread_create cannot be interposed: put libvmstack-preload.so before it; aborting" ] ||
        fail "by hand after glibc: exit $rc: $(cat "$tmp/err")"
    ;;
altstack)
    # The program reads back and replaces its own alternate signal stack, never vmstack's, one thread
    # after the other on reused stacks; the kernel refuses what it would refuse.
    each alt "$bin/run_altstack"
    same alt
    grep -qx 'thread 7 at start: flags 0x2, no stack, size 0' "$tmp/alt.plain" &&
        grep -qx 'handler on it: flags 0x1, its own, size its own' "$tmp/alt.plain" &&
        grep -qx 'handler: replacing it: EPERM' "$tmp/alt.plain" &&
        grep -qx 'thread 0: too small: ENOMEM' "$tmp/alt.plain" || fail "the kernel itself says otherwise: $(cat "$tmp/alt.plain")"
    ;;
asan_threads_reused)
    # AddressSanitizer's runtime unmaps, at each thread's exit, the alternate stack it read back: a
    # program built with it runs as plain under run and trace, threads one after the other reusing
    # stacks, recursing on them and on main, and the trace has every thread's chain; an overflow
    # in a thread after those is reported, then ASan's own report follows, as plain.
    cc -fsanitize=address -fno-omit-frame-pointer -D_GNU_SOURCE -pthread -o "$tmp/alt_asan" \
        "$(dirname "$0")/run_altstack.c" 2> "$tmp/cc.err" || skip "no ASan: $(cat "$tmp/cc.err")"
    cc -fsanitize=address -D_GNU_SOURCE -pthread -o "$tmp/attr_asan" "$(dirname "$0")/run_attr.c" 2> "$tmp/cc.err" ||
        fail "cc: $(cat "$tmp/cc.err")"
    # ASan as it is by default (the tests' environment turns its SIGSEGV handler off).
    unset ASAN_OPTIONS
    each alt "$tmp/alt_asan"
    same alt
    [ "$(cat "$tmp/alt.plain.rc")" = 0 ] && [ "$(grep -c ': recursed: 1$' "$tmp/alt.plain")" = 9 ] ||
        fail "plain: exit $(cat "$tmp/alt.plain.rc"): $(cat "$tmp/alt.plain" "$tmp/alt.plain.err")"
    [ "$(grep -c '^thread .*, start routine asan_thread_start(void\*): [0-9]* of [0-9]* stack bytes deep' \
        "$tmp/alt.trace.table")" = 8 ] && grep -q "^main thread 'alt_asan' (pid [0-9]*): [0-9]* of [0-9]* stack bytes deep" \
        "$tmp/alt.trace.table" || fail "not every thread's chain in the trace: $(cat "$tmp/alt.trace.table")"
    each attr "$tmp/attr_asan"
    for mode in plain run trace; do
        sed 's/ guard [0-9]* / guard 131072 /' "$tmp/attr.$mode" > "$tmp/attr.$mode.g" && mv "$tmp/attr.$mode.g" "$tmp/attr.$mode"
    done
    same attr
    each ovf "$tmp/alt_asan" overflow
    for mode in run trace; do
        for f in "" .rc; do
            cmp -s "$tmp/ovf.plain$f" "$tmp/ovf.$mode$f" || fail "overflow: $mode$f differs from plain:
$(diff "$tmp/ovf.plain$f" "$tmp/ovf.$mode$f")"
        done
        grep -q "^vmstack: thread 'alt_asan' (tid [0-9]*), start routine .*asan_thread_start" "$tmp/ovf.$mode.err" &&
            grep -qx "vmstack: passing SIGSEGV to the program's own handler" "$tmp/ovf.$mode.err" &&
            grep -q '^==[0-9]*==ERROR: AddressSanitizer: stack-overflow on address' "$tmp/ovf.$mode.err" ||
            fail "overflow under $mode: $(cat "$tmp/ovf.$mode.err")"
    done
    [ "$(cat "$tmp/ovf.plain.rc")" = 1 ] || fail "plain: exit $(cat "$tmp/ovf.plain.rc"): $(cat "$tmp/ovf.plain.err")"
    ;;
sigaction)
    # Handlers, flags (SA_RESTORER kept, no SA_ONSTACK added) and masks read back as set.
    each sa "$bin/run_sigaction"
    same sa
    grep -qx 'onstack SEGV: action flags 0x4c000004 restorer set mask 1111111101111111110111111111111001111111111111111111111111111111' \
        "$tmp/sa.plain" || fail "glibc itself reads back otherwise: $(cat "$tmp/sa.plain")"
    tail -n 1 "$tmp/sa.plain" | grep -qx 'a sent SIGSEGV was ignored' || fail "plain: $(cat "$tmp/sa.plain")"
    ;;
sigset)
    # bsd_signal, ssignal, sysv_signal, sigset, sigignore and siginterrupt: glibc's go past sigaction.
    each sigset "$bin/run_sigset"
    same sigset
    [ "$(grep -c 'caught [1-9]' "$tmp/sigset.plain")" = 9 ] || fail "plain: $(cat "$tmp/sigset.plain")"
    ;;
sigign)
    # SIG_IGN set by the program, inherited across the exec into it, and passed on to what it executes.
    each set sh -c 'trap "" SEGV; kill -SEGV $$; echo alive'
    same set
    each inherited sh -c 'trap "" SEGV BUS; exec "$@"' sh sh -c 'kill -SEGV $$; kill -BUS $$; echo alive'
    same inherited
    each passed sh -c 'trap "" SEGV; sh -c "kill -SEGV \$\$; echo alive"; echo parent'
    same passed
    [ "$(cat "$tmp/set.plain" "$tmp/inherited.plain" "$tmp/passed.plain")" = "alive
alive
alive
parent" ] || fail "plain: $(cat "$tmp/set.plain" "$tmp/inherited.plain" "$tmp/passed.plain")"
    # The same through execl, execlp and execle, whose argv glibc builds past the other exec calls,
    # and through system and popen, which spawn past them.
    for l in l lp le; do
        each exec$l "$bin/run_execl" $l
        same exec$l
    done
    for l in system popen; do
        each $l "$bin/run_execl" $l
        same $l
    done
    [ "$(cat "$tmp/execl.plain" "$tmp/execlp.plain" "$tmp/execle.plain" "$tmp/system.plain" "$tmp/popen.plain")" = "alive environ
alive environ
alive execle
alive environ
alive environ" ] || fail "plain: $(cat "$tmp/execl.plain" "$tmp/execlp.plain" "$tmp/execle.plain" "$tmp/system.plain" "$tmp/popen.plain")"
    ;;
java_xcheck)
    # The JVM checks that its signal handlers stay as it set them: no warning, as plain.
    command -v java > /dev/null || skip "no java"
    each java java -Xcheck:jni -version
    same java
    ! grep -q 'Warning' "$tmp/java.plain.err" || fail "plain warns: $(cat "$tmp/java.plain.err")"
    ;;
secure)
    # Secure-execution programs, run by an unprivileged user: refused, naming the reason (the loader
    # would drop the preload: silently unprotected otherwise); --allow-unprotected runs them as plain.
    [ "$(id -u)" = 0 ] && command -v setcap > /dev/null && command -v setpriv > /dev/null ||
        skip "needs root, setcap and setpriv"
    chmod 755 "$tmp"
    cp /bin/true "$tmp/cap" && setcap cap_net_raw+ep "$tmp/cap" || skip "setcap refused here"
    cp /bin/true "$tmp/suid" && chmod 4755 "$tmp/suid"
    cp /bin/true "$tmp/sgid" && chgrp root "$tmp/sgid" && chmod 2755 "$tmp/sgid"
    for prog in cap suid sgid; do
        case $prog in
        cap) why='has file capabilities (security.capability)' ;;
        suid) why='is set-user-ID' ;;
        sgid) why='is set-group-ID' ;;
        esac
        for mode in run trace; do
            setpriv --reuid=nobody --regid=nogroup --clear-groups "$vmstack" $mode -- "$tmp/$prog" \
                > "$tmp/out" 2> "$tmp/err"; rc=$?
            [ "$rc" = 126 ] && [ "$(cat "$tmp/err")" = "vmstack $mode: $tmp/$prog $why: it runs in secure-execution mode, where the dynamic loader ignores vmstack; --allow-unprotected runs it without vmstack (see 'vmstack $mode --help')" ] ||
                fail "$mode $prog: exit $rc: $(cat "$tmp/err")"
            setpriv --reuid=nobody --regid=nogroup --clear-groups "$vmstack" $mode --allow-unprotected -- "$tmp/$prog" \
                > "$tmp/out" 2> "$tmp/err"; rc=$?
            [ "$rc" = 0 ] && [ "$(cat "$tmp/err")" = "vmstack $mode: $tmp/$prog $why: it runs without vmstack" ] ||
                fail "$mode $prog --allow-unprotected: exit $rc: $(cat "$tmp/err")"
        done
    done
    # Root gets no secure execution from file capabilities: it runs under vmstack.
    "$vmstack" run --output "$tmp/table" -- "$tmp/cap" 2> "$tmp/err" && [ -s "$tmp/table" ] ||
        fail "root: $(cat "$tmp/err")"
    ;;
small_stack_descendants)
    # What the program executes under 'ulimit -S -s 16' gets the loader's room too (40 execs of awk,
    # a few hundred bytes of environment: plain never fails, without the raise some did), and sees
    # what it would plain: the limit, no variable of ours, the limit back after an exec that failed.
    pad=$(head -c 600 /dev/zero | tr '\0' x)
    for mode in plain run trace; do
        w=; [ $mode = plain ] || w="$vmstack $mode --output $tmp/table --"
        env -i PATH=/usr/bin:/bin PAD="$pad" sh -c 'ulimit -S -s 16 && exec "$@"' sh $w sh -c \
            'n=0; for i in $(seq 40); do awk "BEGIN { exit 0 }" || n=$((n + 1)); done; echo "failed $n"
             sh -c "ulimit -S -s"; env | grep -c "^VMSTACK_RUN_STACK_LIMIT="; no-such-program-xyz 2> /dev/null
             ulimit -S -s' > "$tmp/seen.$mode" 2>&1
    done
    printf 'failed 0\n16\n0\n16\n' | cmp -s - "$tmp/seen.plain" || fail "plain: $(cat "$tmp/seen.plain")"
    for mode in run trace; do
        cmp -s "$tmp/seen.plain" "$tmp/seen.$mode" || fail "$mode: $(diff "$tmp/seen.plain" "$tmp/seen.$mode")"
    done
    ;;
small_stack)
    # vmstack run runs where the program does: under 'ulimit -S -s 16', every frame of its own under 4 KiB
    # (static functions inlined into run_main count in its frame; its messages are formatted in static
    # memory, tools/say.c).  The dynamic loader gets the room it needs
    # to preload vmstack, and the program its own limit back: the same soft and hard limits, the same
    # stack mapping (so its main thread overflows where it would), the same default thread stack.
    for mode in run trace; do
        for i in 1 2 3 4 5 6 7 8; do
            env -i PATH=/usr/bin:/bin sh -c 'ulimit -S -s 16 && exec "$@"' sh "$vmstack" $mode -- true \
                > "$tmp/out" 2> "$tmp/err"; rc=$?
            [ "$rc" = 0 ] && [ ! -s "$tmp/out" ] && grep -q '^vmstack run: stack usage of true ' "$tmp/err" ||
                fail "$mode ($i): exit $rc: $(cat "$tmp/out" "$tmp/err")"
        done
    done
    # All in the shell's builtins: a program it started would be a descendant (see docs/limits.md).
    seen='ulimit -S -s; ulimit -H -s; while read -r r x; do case $x in *"[stack]") lo=${r%-*} hi=${r#*-}; echo "stack mapping $((0x$hi - 0x$lo))";; esac; done < /proc/$$/maps'
    for mode in plain run trace; do
        w=; [ $mode = plain ] || w="$vmstack $mode --output $tmp/table --"
        env -i PATH=/usr/bin:/bin sh -c 'ulimit -S -s 16 && exec "$@"' sh $w sh -c "$seen" > "$tmp/seen.$mode" 2>&1 ||
            fail "limits seen $mode: $(cat "$tmp/seen.$mode")"
    done
    grep -qx 16 "$tmp/seen.plain" || fail "plain: $(cat "$tmp/seen.plain")"
    for mode in run trace; do
        cmp -s "$tmp/seen.plain" "$tmp/seen.$mode" ||
            fail "limits seen under $mode differ: $(diff "$tmp/seen.plain" "$tmp/seen.$mode")"
    done
    env -i PATH=/usr/bin:/bin sh -c 'ulimit -S -s 16 && exec "$@"' sh "$vmstack" run --output "$tmp/table" -- \
        "$bin/run_attr" default-stack > "$tmp/attr.run" 2>&1
    env -i PATH=/usr/bin:/bin sh -c 'ulimit -S -s 16 && exec "$@"' sh "$bin/run_attr" default-stack > "$tmp/attr.plain" 2>&1
    cmp -s "$tmp/attr.plain" "$tmp/attr.run" || fail "default thread stack: plain $(cat "$tmp/attr.plain"), run $(cat "$tmp/attr.run")"
    # A hard limit that small cannot be raised: said, since the loader may kill the program first.
    for mode in run trace; do
        env -i PATH=/usr/bin:/bin sh -c 'ulimit -s 16 && exec "$@"' sh "$vmstack" $mode -- true > "$tmp/out" 2> "$tmp/err"
        [ "$(head -1 "$tmp/err")" = "vmstack $mode: the hard stack limit (16384 bytes) is below the 65536 the dynamic loader may need to preload vmstack into /usr/bin/true: it may die before it starts; raise it with 'ulimit -H -s'" ] ||
            fail "hard limit of 16K, $mode: $(cat "$tmp/err")"
    done
    # There vmstack run cannot raise its own limit either: its messages must fit in what is left.
    for mode in run trace; do
        for i in 1 2 3 4 5 6 7 8; do
            env -i PATH=/usr/bin:/bin sh -c 'ulimit -s 16 && exec "$@"' sh "$vmstack" $mode --output "$tmp/none/table" \
                -- true > "$tmp/out" 2> "$tmp/err"; rc=$?
            [ "$rc" = 125 ] && [ ! -s "$tmp/out" ] && [ "$(cat "$tmp/err")" = "vmstack $mode: --output $tmp/none/table: cannot create files in $tmp/none: No such file or directory (see 'vmstack $mode --help')" ] ||
                fail "--output into a missing directory under a hard limit of 16K, $mode ($i): exit $rc: $(cat "$tmp/out" "$tmp/err")"
        done
    done
    "$vmstack" checkstack --min 0 "$vmstack" > "$tmp/frames" || fail "checkstack: $(cat "$tmp/frames")"
    awk '$3 ~ /^(main|cmd_run|cmd_trace|cmd_options|cmd_say|cmd_usage_error|run_main|gnuplot_ready|check_files|check_file|check_environment|check_config_var|find_program|program_problem|elf_problem|sanitizer_runtime|preload_list|set_env|cmd_find_lib)$/ {
            n++; if ($2 >= 4096) { print; bad = 1 } }
         END { exit bad || n < 5 }' "$tmp/frames" || fail "vmstack run frames of 4 KiB or more, or not found"
    ;;
*)
    fail "no such case"
    ;;
esac
exit 0
