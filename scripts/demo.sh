#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Set-up in one command: install the packages, build, and run 'vmstack demo'.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
build/vmstack demo
