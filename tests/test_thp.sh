#!/bin/sh
# SPDX-License-Identifier: MIT
# Stacks never become transparent huge pages.  Without root: the stack of a
# thread under 'vmstack run' and of vms_thread_create is MADV_NOHUGEPAGE, in
# both guard modes.  Where this may write the machine's setting (root): with
# it "always" (Fedora's and RHEL's default), then "madvise" and "never", 200
# threads on 8 MiB stacks that touch 16 KiB each cost per thread under 'vmstack
# run' and on vms_thread_create at most a tenth more than plain threads (and
# one page under run, below); a 2 MiB page per stack would make that 80 times
# as much.  The setting is put back however
# the script ends (each command has a time limit, so that ctest never has to
# kill the script).
# usage: test_thp.sh VMSTACK RUN_THP
set -u
vmstack=$1 prog=$2
thp=/sys/kernel/mm/transparent_hugepage/enabled
tmp=$(mktemp -d) || exit 1
saved=
restore() {
    [ -z "$saved" ] || echo "$saved" > "$thp"
    rm -rf "$tmp"
}
trap restore EXIT
trap 'exit 1' INT TERM HUP
fail() { echo "FAIL: $*" >&2; exit 1; }

# Prints the kB per thread of one run of run_thp; with "nh" first, its thread's stack must be MADV_NOHUGEPAGE.
measure() {
    nh=$1; shift
    timeout 30 "$@" > "$tmp/out" 2> "$tmp/err" || fail "$*: exit $?: $(cat "$tmp/out" "$tmp/err")"
    [ "$nh" != nh ] || grep -qx 'stack nh' "$tmp/out" ||
        fail "$*: the thread's stack is not MADV_NOHUGEPAGE: $(cat "$tmp/out")"
    sed -n 's/^\([0-9-]*\) kB per thread$/\1/p' "$tmp/out"
}

for mode in auto mprotect; do
    VMSTACK_GUARD=$mode measure nh "$vmstack" run -- "$prog" pthread 20 > /dev/null
    VMSTACK_GUARD=$mode measure nh "$prog" vms 20 > /dev/null
done
echo "stacks of threads under run and of vms_thread_create are MADV_NOHUGEPAGE (both guard modes)"

if ! [ -w "$thp" ] || ! grep -q always "$thp" 2> /dev/null; then
    echo "SKIP the measurement: $thp cannot be written here (needs root and transparent huge pages)"
    exit 0
fi
saved=$(sed 's/.*\[\(.*\)\].*/\1/' "$thp")
page_kb=$(($(getconf PAGESIZE) / 1024))
for setting in always madvise never; do
    echo "$setting" > "$thp" || fail "cannot write $setting to $thp"
    plain=$(measure any "$prog" pthread 200) || exit 1
    for mode in auto mprotect; do
        run=$(VMSTACK_GUARD=$mode measure nh "$vmstack" run -- "$prog" pthread 200) || exit 1
        vms=$(VMSTACK_GUARD=$mode measure nh "$prog" vms 200) || exit 1
        echo "THP $setting, guard $mode: per thread plain $plain kB, under run $run kB, vms_thread_create $vms kB"
        # At most a tenth more than plain; under run one page more: glibc's descriptor, at the
        # top of the stack it is given, ends the preload's static TLS past a page boundary, so
        # that the thread goes exactly as deep as plain from a page-aligned bottom (preload.c).
        [ "$vms" -le $((plain * 11 / 10)) ] || fail "THP $setting, guard $mode: vms_thread_create $vms kB per thread against $plain plain"
        [ "$run" -le $((plain * 11 / 10 + page_kb)) ] || fail "THP $setting, guard $mode: under run $run kB per thread against $plain plain"
    done
done
