#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the Debian packages (libvmstack0, libvmstack-dev, vmstack) with
# dpkg-buildpackage from a copy of this tree, checks them with lintian
# (errors fail, warnings are printed), unpacks them into a scratch root,
# runs 'vmstack demo' from there, and builds and runs a consumer against
# them with pkg-config.  The .deb files are left in OUT_DIR (default
# build-deb/).  Usage: scripts/package.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
out=$(realpath -m "${1:-build-deb}")

scripts/deps.sh
version=$(dpkg-parsechangelog -S Version)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# dpkg-buildpackage writes its packages next to the source tree: build a copy.
tree=$tmp/vmstack-$version
mkdir "$tree"
tar -C "$src" --exclude='./build*' --exclude='./.git' --exclude='./obj-*' -cf - . | tar -C "$tree" -xf -
start=$(date +%s)
(cd "$tree" && dpkg-buildpackage -us -uc -b -j"$(nproc)") >"$tmp/build.log" 2>&1 ||
  { tail -80 "$tmp/build.log"; echo "package.sh: dpkg-buildpackage failed"; exit 1; }
echo "packages built in $(( $(date +%s) - start )) s"
rm -rf "$out"; mkdir -p "$out"
cp "$tmp"/*.deb "$tmp"/*.changes "$tmp"/*.buildinfo "$out"/
ls "$out"

# lintian: errors fail the run; warnings are printed (none are left now).
lintian --fail-on error --tag-display-limit 0 "$out"/*.changes | tee "$tmp/lintian.log" ||
  { echo "package.sh: lintian found errors"; exit 1; }

# The vmstack command pulls in no Boost (the peers' benchmarks are a package apart), and suggests
# what its options use.
deps=$(dpkg-deb -f "$out"/vmstack_*.deb Depends)
! grep -qi boost <<<"$deps" || { echo "package.sh: vmstack depends on Boost: $deps"; exit 1; }
for s in gnuplot gdb valgrind; do
  dpkg-deb -f "$out"/vmstack_*.deb Suggests | grep -qw "$s" || { echo "package.sh: vmstack does not suggest $s"; exit 1; }
done

# A scratch root holds what the packages install.
root=$tmp/root
for deb in "$out"/libvmstack0_*.deb "$out"/libvmstack-dev_*.deb "$out"/vmstack_*.deb; do
  dpkg-deb -x "$deb" "$root"
done
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=$root/usr/lib/$multiarch
[ -f "$root/usr/share/gdb/auto-load/usr/lib/$multiarch/libvmstack.so.${version%%-*}-gdb.py" ] ||
  { echo "package.sh: the gdb extension is not where gdb auto-loads it"; exit 1; }

echo "=== vmstack demo, from the packages"
LD_LIBRARY_PATH=$libdir "$root/usr/bin/vmstack" demo 2>&1 | tee "$tmp/demo.log"
# The installed command names its own functions in its overflow report.
grep -q "^vmstack:  \[<0x[0-9a-f]*>\] runaway+0x" "$tmp/demo.log" && ! grep -q "?? \[vmstack" "$tmp/demo.log" ||
  { echo "package.sh: the installed vmstack does not name its own functions in its report"; exit 1; }

echo "=== a consumer built with pkg-config against the packages"
export PKG_CONFIG_PATH=$libdir/pkgconfig
# The packaged file's prefix is /usr itself: no path like lib/x86_64-linux-gnu/pkgconfig/../../../include.
grep -qx 'prefix=/usr' "$libdir/pkgconfig/vmstack.pc" ||
  { echo "package.sh: vmstack.pc's prefix is not /usr: $(grep '^prefix=' "$libdir/pkgconfig/vmstack.pc")"; exit 1; }
cc -o "$tmp/consumer" tests/consumer/consumer.c $(pkg-config --define-variable=prefix="$root/usr" --cflags --libs vmstack) \
  -Wl,-rpath,"$libdir"
# Read whole first: under pipefail, grep -q leaving early can kill ldd with SIGPIPE and fail the check.
linked=$(ldd "$tmp/consumer")
grep -q "libvmstack.so.0 => $libdir/" <<<"$linked" ||
  { echo "package.sh: the consumer did not link the packaged libvmstack.so"; exit 1; }
"$tmp/consumer"
echo "package.sh: packages built, checked, installed into a scratch root and used"
