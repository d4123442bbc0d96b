#!/bin/sh
# SPDX-License-Identifier: MIT
# sort --parallel in the compatibility suite: 400,000 lines sorted by two
# threads with a small buffer (temporary files, merges), numerically and
# by key.
set -eu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
seq 1 400000 | awk '{ print ($1 * 7919) % 400009, "key" ($1 % 97) }' > "$work/data"
sort --parallel=2 -S 1M -T "$work" -n "$work/data" | sha256sum
sort --parallel=2 -S 1M -T "$work" -k2,2 -k1,1n "$work/data" | sha256sum
sort --parallel=2 -n "$work/data" | head -3
