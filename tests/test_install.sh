#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the build into a temporary prefix, then builds and runs the
# consumer program against it the three ways the README gives: with
# pkg-config (shared library), with pkg-config --static and cc -static, and
# with CMake's find_package(vmstack), both of its targets.  Also checks
# that the install holds no empty directory.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR C_COMPILER
set -eu
build=$1 src=$2 cc=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
empty=$(find "$prefix" -type d -empty)
[ -z "$empty" ] || fail "empty directories installed: $empty"

# The guide's commands as written (docs/install.md): PKG_CONFIG_PATH=PREFIX/lib/pkgconfig,
# nothing else (the .pc file holds the prefix it was installed to).
pcfile=$(find "$prefix" -name vmstack.pc)
[ -n "$pcfile" ] || fail "no vmstack.pc installed"
export PKG_CONFIG_PATH="$(dirname "$pcfile")"
libdir=$(dirname "$PKG_CONFIG_PATH")
case $(pkg-config --variable=includedir vmstack) in
  "$prefix"/*) ;;
  *) fail "vmstack.pc's includedir is outside the install prefix: $(pkg-config --variable=includedir vmstack)" ;;
esac
flags=$(pkg-config --cflags --libs vmstack)
case $flags in
  *"/../"*|*"/./"*) fail "vmstack.pc gives paths that are not normalised: $flags" ;;
esac
case " $(pkg-config --cflags vmstack) " in
  *" -I$prefix/include "*) ;;
  *) fail "vmstack.pc's --cflags do not name PREFIX/include: $(pkg-config --cflags vmstack)" ;;
esac
expect='consumer: vmstack [0-9.]*, fiber ran on a guarded stack'

check_run() { # NAME PROGRAM
  out=$("$2") || fail "$1: exit status $?"
  echo "$out" | grep -qx "$expect" || fail "$1: unexpected output: $out"
  echo "ok: $1"
}

# A prefix the dynamic loader does not search: the rpath line of the guide.
"$cc" -o "$tmp/dyn" "$src/tests/consumer/consumer.c" $(pkg-config --cflags --libs vmstack) \
  -Wl,-rpath,"$(pkg-config --variable=libdir vmstack)"
ldd "$tmp/dyn" | grep -q "libvmstack.so.0 => $libdir/libvmstack.so.0" ||
  fail "pkg-config --libs did not link the installed libvmstack.so"
check_run "cc \$(pkg-config --cflags --libs vmstack)" "$tmp/dyn"

"$cc" -static -o "$tmp/static" "$src/tests/consumer/consumer.c" $(pkg-config --static --cflags --libs vmstack) 2>"$tmp/static.err" ||
  { cat "$tmp/static.err"; fail "cc -static \$(pkg-config --static ...) did not link"; }
readelf -l "$tmp/static" | grep -q INTERP && fail "the -static consumer is dynamically linked"
check_run "cc -static \$(pkg-config --static --cflags --libs vmstack)" "$tmp/static"

cmake -S "$src/tests/consumer" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_BUILD_RPATH="$libdir" >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "find_package(vmstack)"; }
cmake --build "$tmp/cmake" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "building against vmstack::*"; }
ldd "$tmp/cmake/consumer_shared" | grep -q "$libdir/libvmstack.so.0" || fail "vmstack::vmstack is not the installed libvmstack.so"
ldd "$tmp/cmake/consumer_static" | grep -q libvmstack && fail "vmstack::vmstack_static linked the shared library"
check_run "find_package(vmstack), vmstack::vmstack" "$tmp/cmake/consumer_shared"
check_run "find_package(vmstack), vmstack::vmstack_static" "$tmp/cmake/consumer_static"
# gdb and the extension of a prefix install: the one line of docs/debugging.md.
if command -v gdb > /dev/null 2>&1; then
  gdb -batch -iex "source $prefix/share/vmstack/vmstack-gdb.py" -ex 'help info vmstack-fibers' "$tmp/dyn" \
    > "$tmp/gdb.out" 2>&1 || fail "gdb with the installed extension: $(cat "$tmp/gdb.out")"
  grep -q 'Undefined' "$tmp/gdb.out" && fail "gdb did not load the installed extension: $(cat "$tmp/gdb.out")"
  grep -qi 'fiber' "$tmp/gdb.out" || fail "gdb's help for info vmstack-fibers: $(cat "$tmp/gdb.out")"
  echo "ok: gdb -iex 'source PREFIX/share/vmstack/vmstack-gdb.py'"
fi
echo "3 ways passed"
