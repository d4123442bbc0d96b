#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Signals and the process tree in the compatibility suite, from the
# programs of test_run.sh's exec case (run_signals.c): a sigqueue payload
# and its sender, a SIGTERM to the process group the program leads (it
# must arrive once), and a child subreaper that reaps its child and the
# orphans it is given.  Pids are printed as names.
# usage: signals.sh RUN_SIGNALS
set -u
prog=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ready() {
    i=0
    until grep -qs "^ready" "$1"; do
        i=$((i + 1)); [ $i -lt 200 ] || { echo "never ready"; exit 1; }; sleep 0.05
    done
}
"$prog" queue > "$work/q" &
pid=$!
ready "$work/q"
"$prog" send $pid 4242 &
sender=$!
wait $sender
echo "send exit $?"
wait $pid
echo "queue exit $?"
sed -e "s/ready $pid\$/ready (its pid)/" -e "s/sender $sender\$/sender (the sender)/" "$work/q"
setsid "$prog" terms > "$work/t" &
pid=$!
ready "$work/t"
kill -TERM -- -$pid
wait $pid
echo "terms exit $?"
sed "s/ready $pid\$/ready (its pid)/" "$work/t"
"$prog" subreaper sh -c 'sleep 0.4 & sleep 0.2 & exit 5' > "$work/s"
echo "subreaper exit $?"
sed -E 's/^child [0-9]+$/child (its pid)/' "$work/s"
