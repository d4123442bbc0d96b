#!/bin/sh
# SPDX-License-Identifier: MIT
# The layering rule, checked on the sources and on the compiled objects:
# every #include of ours and every call into another file goes to the same
# layer or one below it (README, "How the code is laid out").
# usage: test_layers.sh SRC_DIR OBJ_DIR...   (OBJ_DIR: where CMake put src/<layer>/*.o)
set -u
src=$1; shift
layers="arch core task fault trace preload"   # bottom to top
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
rank() { n=0; for l in $layers; do [ "$l" = "$1" ] && { echo $n; return; }; n=$((n + 1)); done; echo 99; }

# Includes: "layer/file.h" only of the same layer or below; no bare "file.h" across folders.
for dir in $layers; do
    r=$(rank "$dir")
    for f in "$src/$dir"/*.[chS] "$src/$dir"/*/*.[chS]; do
        [ -e "$f" ] || continue
        grep -o '#include "[^"]*"' "$f" | sed 's/#include "\(.*\)"/\1/' | while read -r inc; do
            case $inc in
            */*) l=${inc%%/*}
                 [ "$(rank "$l")" -le "$r" ] || echo "FAIL: ${f#"$src"/} includes $inc (layer $l is above $dir)" ;;
            vmstack.h) ;;
            *) [ -e "$src/$dir/$inc" ] || echo "FAIL: ${f#"$src"/} includes \"$inc\" without its layer" ;;
            esac
        done
    done
done > "${TMPDIR:-/tmp}/layers.$$"
if [ -s "${TMPDIR:-/tmp}/layers.$$" ]; then
    cat "${TMPDIR:-/tmp}/layers.$$" >&2
    fails=$((fails + $(wc -l < "${TMPDIR:-/tmp}/layers.$$")))
fi
rm -f "${TMPDIR:-/tmp}/layers.$$"

# Calls: each object's undefined symbols of ours are defined in its layer or below.
defs=$(mktemp) || exit 1
trap 'rm -f "$defs"' EXIT
objs=$(for d in "$@"; do find "$d" -path '*/src/*' -name '*.o'; done)
[ -n "$objs" ] || { echo "FAIL: no objects under $*" >&2; exit 1; }
for o in $objs; do
    l=$(echo "$o" | sed 's|.*/src/\([a-z]*\)/.*|\1|')
    nm --defined-only "$o" | awk -v l="$l" '$2 ~ /[TDBRVW]/ {print $3, l}'
done | sort -u > "$defs"
checked=0
for o in $objs; do
    l=$(echo "$o" | sed 's|.*/src/\([a-z]*\)/.*|\1|')
    r=$(rank "$l")
    for s in $(nm -u "$o" | awk '{print $2}' | grep -E '^vms_'); do
        d=$(awk -v s="$s" '$1 == s {print $2; exit}' "$defs")
        [ -n "$d" ] || continue
        checked=$((checked + 1))
        [ "$(rank "$d")" -le "$r" ] || fail "$(basename "$o" .o) ($l) calls $s ($d)"
    done
done
[ "$checked" -gt 20 ] || fail "only $checked cross-file references checked: objects not found?"
[ "$fails" = 0 ] || exit 1
echo "layers: includes and $checked cross-file references go downward"
