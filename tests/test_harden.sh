#!/bin/sh
# 'vmstack run' changes nothing a program can observe, never hangs it and
# never leaves it silently unprotected: one case per argument.
# usage: test_harden.sh CASE VMSTACK BINDIR   (BINDIR holds the run_* programs)
# Exit 0 pass, 1 fail, 77 skip (a tool the case needs is not installed).
set -u
case_=$1 vmstack=$2 bin=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL ($case_): $*" >&2; exit 1; }
skip() { echo "SKIP ($case_): $*" >&2; exit 77; }

case $case_ in
nofork)
    # Start-up makes no child: the guard probe asks a system call, not a crash.
    command -v strace > /dev/null || skip "strace not installed"
    strace -f -qq -e trace=fork,vfork,clone,clone3 -o "$tmp/trace" "$vmstack" run -- true 2> "$tmp/err" ||
        fail "vmstack run -- true under strace: $(cat "$tmp/err")"
    [ ! -s "$tmp/trace" ] || fail "start-up made a process or thread: $(cat "$tmp/trace")"
    ;;
*)
    fail "unknown case"
    ;;
esac
exit 0
