#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What the aarch64 cross build and its run under qemu-user need: Debian's
# cross compilers, qemu-user, and the arm64 multiarch libraries vmstack
# links (only what is missing).
set -euo pipefail

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
PACKAGES=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user
          libunwind-dev:arm64 libdw-dev:arm64 libelf-dev:arm64 zlib1g-dev:arm64)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The gdb extension's check under qemu's gdb stub; without it, the check
# says it is skipped.
if ! command -v gdb-multiarch > /dev/null; then
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq gdb-multiarch > /dev/null 2>&1 ||
    echo "gdb-multiarch could not be installed: the gdb extension's aarch64 check will be skipped"
fi
