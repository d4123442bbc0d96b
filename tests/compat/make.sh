#!/bin/sh
# SPDX-License-Identifier: MIT
# make in the compatibility suite: make -j4 builds a C program from eight
# generated sources with the compiler (cc1, as, ld all run under vmstack),
# then runs it.  Silent, so that the order of parallel jobs does not show.
set -eu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s -j4 -C "$work" -f "$(dirname "$0")/compat.mk"
