#!/bin/sh
# SPDX-License-Identifier: MIT
# The wall times of the compatibility suite, one line per case: plain's in
# seconds, then run's and trace's as ratios to plain, and trace's to run's.
# usage: ratios.sh TIMES_DIR   (where compat.sh wrote one file per case)
set -u
echo "=== compatibility suite: wall time under vmstack run and trace, as ratios"
printf '%-26s %8s %8s %8s %9s\n' case plain_s run/plain trace/plain trace/run
if [ -d "$1" ] && [ -n "$(ls "$1")" ]; then
    cat "$1"/* | sort
else
    echo "(no case passed)"
fi
