#!/bin/sh
# SPDX-License-Identifier: MIT
# xz -T2 in the compatibility suite: multi-threaded compression (its output
# is the same bytes on every run), decompression, and a corrupt stream.
set -u
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
seq 1 200000 | awk '{ print "line " $1 " of some text " ($1 * $1) % 9973 }' > "$work/data"
xz -T2 --block-size=256KiB -c "$work/data" > "$work/data.xz"
sha256sum < "$work/data.xz"
xz -T2 -dc "$work/data.xz" | cmp - "$work/data" && echo "round trip ok"
head -c 5000 "$work/data.xz" > "$work/cut.xz"
xz -T2 -dc < "$work/cut.xz" > /dev/null
echo "cut stream: exit $?"
