#!/bin/sh
# SPDX-License-Identifier: MIT
# 'vmstack run' on a program linked with libvmstack.so: one library
# instance per process (the program's calls and the run's threads share
# it), and the program's own configuration wins over the run's.
# usage: test_run_linked.sh VMSTACK RUN_LINKED
set -u
vmstack=$1 prog=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; cat "$tmp/out" "$tmp/err" >&2; exit 1; }
expect() { grep -qx "$1" "$tmp/out" || fail "expected the line '$1'"; }

unset VMSTACK_STACK_SIZE VMSTACK_GUARD_SIZE
# Without settings of its own: the built-in defaults (64 KiB stacks, 64 KiB
# guards), not the run's 1 MiB alternate stacks and 64 KiB thread guards.
"$vmstack" run --guard 64K -- "$prog" default > "$tmp/out" 2> "$tmp/err" || fail "exit status $?"
expect "init 0"
expect "config stack 65536 guard 65536"
expect "fiber stack at least 65536: 1, guard 65536"
expect "thread on a known stack 1"
expect "vms_stack_alloc in libvmstack-preload.so"
grep -q ' 64K ' "$tmp/err" || fail "the run's thread guard is not in its table"

# Its environment, as without 'vmstack run'.
VMSTACK_STACK_SIZE=256K "$vmstack" run -- "$prog" default > "$tmp/out" 2> "$tmp/err" || fail "exit status $?"
expect "config stack 262144 guard 65536"
expect "fiber stack at least 262144: 1, guard 65536"

# Its own vms_init succeeds and holds.
"$vmstack" run --guard 64K -- "$prog" init > "$tmp/out" 2> "$tmp/err" || fail "exit status $?"
expect "init 0"
expect "config stack 131072 guard 32768"
expect "fiber stack at least 131072: 1, guard 32768"
expect "thread on a known stack 1"

# Settings the run has made already are refused, naming the command in use.
for sub in run trace; do
    "$vmstack" $sub -- "$prog" guard > "$tmp/out" 2> "$tmp/err" || fail "$sub guard: exit status $?"
    expect "init -16: under vmstack $sub the guard mode and the cache size are set already (VMSTACK_GUARD, VMSTACK_CACHE): set them in the environment instead"
done

# And the same program without 'vmstack run': its own copy, same answers.
"$prog" init > "$tmp/out" 2> "$tmp/err" || fail "exit status $?"
expect "config stack 131072 guard 32768"
expect "fiber stack at least 131072: 1, guard 32768"
expect "vms_stack_alloc in libvmstack.so.0"
echo "test_run_linked: ok"
