#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what vmstack needs from Debian's packages (only what is missing).
set -euo pipefail

PACKAGES=(gcc g++ clang libc6-dev make cmake pkg-config libdw-dev libelf-dev libunwind-dev valgrind gnuplot-nox
          python3 xz-utils binutils libboost-context-dev libboost-fiber-dev apache2-utils libc6-dbg gdb libbz2-dev strace m4
          debhelper dpkg-dev fakeroot lintian)

# Checked for this machine's architecture (or none): the arm64 -dev
# packages of the aarch64 build (deps-aarch64.sh) do not stand for these.
arch=$(dpkg --print-architecture)
installed() {
  dpkg-query -W -f='${Status}' "$1:$arch" 2>/dev/null | grep -q "install ok installed" ||
    dpkg-query -W -f='${Status}' "$1:all" 2>/dev/null | grep -q "install ok installed"
}
missing=()
for p in "${PACKAGES[@]}"; do
  installed "$p" || missing+=("$p:$arch")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
