#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite: the default build in both guard modes, then
# AddressSanitizer+UBSan in both guard modes (the second pass leaves out
# the tests that set their guard mode themselves: label "guardmode"), then ThreadSanitizer on the
# concurrent tests, then the libFuzzer targets for 20 s each (clang), then the compatibility suite (tests/compat/: real
# runtimes and tools plain and under vmstack) once, on the default build,
# with its wall-time ratios.  Warnings are errors.
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh
scripts/test-deps.sh
jobs=$(nproc)

build() { # DIR [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -DVMS_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
}

suite() { # DIR LABEL [ctest args...]
  local dir=$1 label=$2; shift 2
  echo "=== tests: $label"
  (cd "$dir" && ctest --output-on-failure -j"$jobs" "$@")
}

build build-test
suite build-test "default build, guard mode auto" -LE compat
VMSTACK_GUARD=mprotect suite build-test "default build, VMSTACK_GUARD=mprotect" -LE "compat|guardmode"

build build-asan -DVMS_SANITIZE=address
suite build-asan "AddressSanitizer+UBSan, guard mode auto"
VMSTACK_GUARD=mprotect suite build-asan "AddressSanitizer+UBSan, VMSTACK_GUARD=mprotect" -LE guardmode

build build-tsan -DVMS_SANITIZE=thread
suite build-tsan "ThreadSanitizer, concurrent tests" -L threads

# The libFuzzer targets (clang, -DVMS_FUZZ=ON), each a test that fuzzes for
# 20 s (VMS_FUZZ_SECONDS) from a fresh corpus.  Only they and their seed
# binaries are built there: the rest of the tree is written for gcc.
CC=clang cmake -S . -B build-fuzz -DVMS_WERROR=ON -DVMS_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz_frames_libfuzzer run_recurse run_overflow >/dev/null
suite build-fuzz "libFuzzer targets, 20 s each" -L libfuzzer

# Last, so that its table of ratios ends the output.
rm -rf build-test/compat-times
compat=0
suite build-test "compatibility suite, default build" -L compat || compat=$?
tests/compat/ratios.sh build-test/compat-times
[ "$compat" -eq 0 ] || exit "$compat"
