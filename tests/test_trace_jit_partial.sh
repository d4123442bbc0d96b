#!/bin/sh
# SPDX-License-Identifier: MIT
# JIT code (trace_jit.c: a stub in an anonymous executable mapping with a
# 64 KiB frame of pointers into itself, calling back into C): the dead-stack
# scan stops where the code is in no module and marks the chain partial; it
# shows no frame it could not check (a bare address), and the program runs
# as it does plain.
set -u

VMSTACK=$1 CC=$2 SRC=$3
. "$(dirname "$0")/lib.sh"

compile jit -O1 -g
traced_as_plain jit "no executable anonymous memory?"
sed -n "/^main thread 'jit'/,/^\$/p" "$TMP/report.txt" > "$TMP/chain.txt"
[ -s "$TMP/chain.txt" ] || fail "no chain for the main thread: $(cat "$TMP/report.txt")"
grep -qx '  (partial: later calls overwrote part of the chain at that depth)' "$TMP/chain.txt" ||
    fail "the chain through JIT code is not marked partial: $(cat "$TMP/chain.txt")"
grep -Eq '^ *0\) +[0-9]+ +([0-9]+|\?) +(jit_callee\+|\? \(unknown)' "$TMP/chain.txt" ||
    fail "the deepest frame is neither jit_callee nor unknown: $(cat "$TMP/chain.txt")"
grep -Eq '^ *[0-9]+\) +[0-9]+ +[0-9]+ +0x[0-9a-f]+$' "$TMP/chain.txt" &&
    fail "a frame in JIT code, unchecked: $(cat "$TMP/chain.txt")"
passed "ok: the chain stops at JIT code, partial"
