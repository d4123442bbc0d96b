#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what the compatibility suite (tests/compat/) and test_flamegraph
# (chromium, xmllint) run, from Debian's
# packages (only what is missing).  Node is required as a `node` binary:
# one from elsewhere (nodesource) is kept, Debian's is installed otherwise.
set -euo pipefail

PACKAGES=(openjdk-17-jdk-headless rustc golang-go libpython3.11-testsuite python3 valgrind gdb strace
          sqlite3 iputils-ping libcap2-bin util-linux git make xz-utils coreutils gcc g++
          php-cli lua5.4 luajit python3-gevent redis-server redis-tools nginx apache2-utils
          postgresql postgresql-contrib libgc-dev guile-3.0 erlang-base tcl gawk bash zstd pigz openssl
          chromium libxml2-utils)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v node > /dev/null || missing+=(nodejs)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
