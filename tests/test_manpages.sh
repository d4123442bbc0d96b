#!/bin/sh
# SPDX-License-Identifier: MIT
# The per-function manual pages (docs/man3, made by scripts/man3.py from
# include/vmstack.h): none missing, stale or left over; one for every
# function the library exports (debian/libvmstack0.symbols); each formats
# without a groff warning.  Usage: test_manpages.sh SOURCE_DIR
set -u
src=$1
command -v python3 >/dev/null || { echo "no python3"; exit 77; }
fails=0
python3 "$src/scripts/man3.py" --check || fails=$((fails + 1))
for sym in $(sed -n 's/^ \(vms_[a-z0-9_]*\)@.*/\1/p' "$src/debian/libvmstack0.symbols"); do
  grep -q "[ *]$sym(" "$src/include/vmstack.h" || continue # data (the gdb table), not a function
  [ -f "$src/docs/man3/$sym.3" ] || { echo "FAIL: no page for $sym"; fails=$((fails + 1)); }
done
if command -v man >/dev/null; then
  for page in "$src"/docs/man3/*.3; do
    out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
    [ -z "$out" ] || { echo "FAIL: $page: $out"; fails=$((fails + 1)); }
  done
fi
[ "$fails" -eq 0 ] && echo "ok: $(ls "$src"/docs/man3/*.3 | wc -l) function pages"
[ "$fails" -eq 0 ]
