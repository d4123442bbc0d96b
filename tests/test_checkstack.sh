#!/bin/sh
# SPDX-License-Identifier: MIT
# test_checkstack.sh VMSTACK CC CS_FRAMES_C SHARED_LIB
#
# Compiles tests/cs_frames.c with CC and -fstack-usage at several
# optimisation levels and checks 'vmstack checkstack' against the compiler:
# every function of at least --min bytes within 16 bytes of the .su figure,
# alloca/VLA functions marked dynamic, the 20000-byte frame flagged as a
# stack clash with a 16 KiB guard but not with a 32 KiB one.  Then
# a shared library, and the error cases with their exit codes and messages.
set -u

VMSTACK=$1 CC=$2 SRC=$3
. "$(dirname "$0")/lib.sh"
SHLIB=$4

# json_field NAME FIELD < JSON: a field of the function NAME (one function per line).
json_field() { # FUNCTION FIELD < checkstack's JSON: the field of that function, as JSON
    python3 -c '
import json, sys
doc = json.load(sys.stdin)
for f in doc["functions"]:
    if f["name"] == sys.argv[1]:
        print(json.dumps(f[sys.argv[2]]))
        break' "$1" "$2"
}

# compare FLAGS: one build of cs_frames against its .su file.
compare() {
    dir="$TMP/build$(echo "$1" | tr -d ' -')"
    mkdir -p "$dir"
    (cd "$dir" && "$CC" $1 -fstack-usage -o cs_frames "$SRC") || { fail "$CC $1 did not compile $SRC"; return; }
    "$VMSTACK" checkstack --json --guard 16K "$dir/cs_frames" > "$dir/out.json" || { fail "[$1] checkstack failed"; return; }
    checked=0
    # GCC names the .su file after the object: cs_frames-cs_frames.su or cs_frames.su.
    for su in "$dir"/*.su; do
        while IFS='	' read -r loc size kind; do
            fn=${loc##*:}
            case $kind in
            dynamic) want_dyn=true ;;  # alloca, VLA; "dynamic,bounded" is a fixed frame plus pushes
            *) want_dyn=false ;;
            esac
            [ "$size" -ge 100 ] || [ "$want_dyn" = true ] || continue
            frame=$(json_field "$fn" frame < "$dir/out.json")
            dyn=$(json_field "$fn" dynamic < "$dir/out.json")
            if [ -z "$frame" ]; then
                fail "[$1] $fn ($size bytes, $kind) not listed"
                continue
            fi
            diff=$((frame - size))
            [ "$diff" -ge -16 ] && [ "$diff" -le 16 ] || fail "[$1] $fn: checkstack $frame, -fstack-usage $size"
            [ "$dyn" = "$want_dyn" ] || fail "[$1] $fn: dynamic $dyn, -fstack-usage says $kind"
            checked=$((checked + 1))
        done < "$su"
    done
    [ "$checked" -ge 6 ] || fail "[$1] only $checked functions compared"
    [ "$(json_field frame_restore dynamic < "$dir/out.json")" = false ] ||
        fail "[$1] frame_restore (mov %r13,%rsp restoring a copy) flagged dynamic"
    [ "$(json_field frame_20000 clash < "$dir/out.json")" = true ] || fail "[$1] frame_20000 not flagged clash"
    [ "$(json_field frame_4096 clash < "$dir/out.json")" = false ] || fail "[$1] frame_4096 flagged clash"
    [ -z "$(json_field frame_64 frame < "$dir/out.json")" ] || fail "[$1] frame_64 listed below --min 100"
    "$VMSTACK" checkstack --json --guard 32K "$dir/cs_frames" | json_field frame_20000 clash | grep -qx false ||
        fail "[$1] frame_20000 flagged clash with --guard 32K"
    "$VMSTACK" checkstack --min 0 "$dir/cs_frames" | grep -q ' frame_64 \[cs_frames\]$' ||
        fail "[$1] frame_64 not listed with --min 0"
    echo "ok: $CC $1: $checked functions agree with -fstack-usage"
}

compare "-O0"
compare "-O2"
compare "-O2 -fno-omit-frame-pointer"

# Text output: header, then rows largest first.
out=$("$VMSTACK" checkstack --guard 16K "$TMP/buildO2/cs_frames") || fail "text output failed"
echo "$out" | sed -n 2p | grep -q '^ADDRESS  *FRAME  *FLAGS  *FUNCTION \[MODULE\]$' || fail "no column header: $out"
echo "$out" | sed -n 3p | grep -q '^0x[0-9a-f]\{16\}  *200[0-9][0-9]  clash  *frame_20000 \[cs_frames\]$' ||
    fail "largest frame not first: $out"
echo "$out" | grep -q '  dynamic  *frame_vla \[cs_frames\]$' || fail "frame_vla not dynamic in text: $out"

# CI limits: --max-frame and --fail-on clash exit 1 with one line per broken limit, and pass otherwise.
O2="$TMP/buildO2/cs_frames"
err=$("$VMSTACK" checkstack --max-frame 8K "$O2" 2>&1 >/dev/null)
rc=$?
[ "$rc" = 1 ] || fail "--max-frame 8K: exit $rc"
echo "$err" | grep -q "^vmstack checkstack: $O2: 1 function with a frame above --max-frame 8192, the largest frame_20000 (200[0-9][0-9] bytes)\$" ||
    fail "--max-frame message: $err"
"$VMSTACK" checkstack --max-frame 32K "$O2" > /dev/null 2>&1 || fail "--max-frame 32K: not exit 0"
err=$("$VMSTACK" checkstack --guard 16K --fail-on clash --json "$O2" 2>&1 >/dev/null)
rc=$?
[ "$rc" = 1 ] || fail "--fail-on clash: exit $rc"
[ "$err" = "vmstack checkstack: $O2: 1 stack clash frame (--fail-on clash)" ] || fail "--fail-on message: $err"
"$VMSTACK" checkstack --fail-on clash --guard 32K "$O2" > /dev/null || fail "--fail-on clash with --guard 32K: not exit 0"
"$VMSTACK" checkstack --guard 16K --fail-on clash --json "$O2" 2>/dev/null | json_field frame_20000 clash | grep -qx true ||
    fail "--fail-on clash: the JSON is not printed as usual"

# A shared library.
lib=$(basename "$SHLIB")
"$VMSTACK" checkstack --min 0 "$SHLIB" > "$TMP/lib.txt" || fail "checkstack on $SHLIB failed"
[ "$(grep -c "\[$lib\]\( [^ ]*:[0-9]*\)\?\$" "$TMP/lib.txt")" -ge 10 ] || fail "few functions listed for $SHLIB"
# Built with -g: file:line after the module, in the text and in the JSON ("source").
grep -q "^0x[0-9a-f]* .* vms_stack_alloc \[$lib\] [a-z_]*\.[ch]:[0-9]*\$" "$TMP/lib.txt" ||
    fail "no file:line for vms_stack_alloc: $(grep vms_stack_alloc "$TMP/lib.txt")"
"$VMSTACK" checkstack --json --min 0 "$SHLIB" | grep -A8 '"name": "vms_stack_alloc"' | grep -q '"source": "[a-z_]*\.[ch]:[0-9]*"' ||
    fail "no source for vms_stack_alloc in the JSON"

# Two binaries in JSON: an array of objects.
"$VMSTACK" checkstack --json "$TMP/buildO0/cs_frames" "$SHLIB" | head -c 1 | grep -qx '\[' ||
    fail "JSON for two binaries is not an array"

# Errors: not ELF and a missing file (exit 1), bad usage (exit 2), help (exit 0).
err=$("$VMSTACK" checkstack "$0" 2>&1 >/dev/null)
rc=$?
[ "$rc" = 1 ] || fail "non-ELF file: exit $rc"
[ "$err" = "vmstack checkstack: $0: not an ELF file" ] || fail "non-ELF message: $err"
"$VMSTACK" checkstack "$TMP/missing" 2>/dev/null
[ $? = 1 ] || fail "missing file: not exit 1"
"$VMSTACK" checkstack 2>/dev/null
[ $? = 2 ] || fail "no arguments: not exit 2"
"$VMSTACK" checkstack --guard 12Q "$SHLIB" 2>/dev/null
[ $? = 2 ] || fail "bad size: not exit 2"
for args in "--max-frame 0" "--max-frame" "--max-frame 1Q" "--fail-on" "--fail-on dynamic"; do
    err=$("$VMSTACK" checkstack $args "$SHLIB" 2>&1 >/dev/null)
    rc=$?
    [ $rc = 2 ] && [ "$(echo "$err" | wc -l)" = 1 ] || fail "'checkstack $args': exit $rc: $err"
done
"$VMSTACK" checkstack --help | grep -q '^usage: vmstack checkstack' || fail "--help"
# Options and files in any order; --opt=value and --opt value alike.
a=$("$VMSTACK" checkstack --json --min 64 "$SHLIB") || fail "--json --min 64 FILE"
b=$("$VMSTACK" checkstack "$SHLIB" --min=64 --json) || fail "FILE --min=64 --json"
[ "$a" = "$b" ] || fail "option order changes the output"
"$VMSTACK" checkstack --bogus "$SHLIB" 2>/dev/null
[ $? = 2 ] || fail "unknown option: not exit 2"
err=$("$VMSTACK" checkstack "$SHLIB" --min 2>&1 >/dev/null)
[ "$err" = "vmstack checkstack: --min needs a value (see 'vmstack checkstack --help')" ] || fail "missing value: $err"

# No call-frame information, and a stripped executable.
printf 'int f(int x) { return x + 1; }\n' > "$TMP/nocfi.c"
if "$CC" -O2 -shared -nostdlib -fno-asynchronous-unwind-tables -fno-unwind-tables \
    -o "$TMP/nocfi.so" "$TMP/nocfi.c"; then
    err=$("$VMSTACK" checkstack "$TMP/nocfi.so" 2>&1)
    [ $? = 1 ] && echo "$err" | grep -q 'has no call-frame information' || fail "no CFI: $err"
fi
# Stripped: every FDE is still analysed, an unnamed function shown by its address; with its
# debug file next to it (.gnu_debuglink), the names come back from there.
if strip -o "$TMP/stripped" "$TMP/buildO2/cs_frames" 2>/dev/null; then
    out=$("$VMSTACK" checkstack --guard 16K "$TMP/stripped" 2>&1) || fail "stripped: $out"
    echo "$out" | grep -q '^0x0*\([0-9a-f]*\)  *200[0-9][0-9]  clash  *0x\1 \[stripped\]$' ||
        fail "stripped: frame_20000 not shown by address: $out"
    if objcopy --only-keep-debug "$TMP/buildO2/cs_frames" "$TMP/cs_frames.debug" &&
        objcopy --add-gnu-debuglink="$TMP/cs_frames.debug" "$TMP/stripped" "$TMP/linked"; then
        out=$(cd "$TMP" && "$VMSTACK" checkstack --guard 16K "$TMP/linked" 2>&1) || fail "debuglink: $out"
        echo "$out" | grep -q '  200[0-9][0-9]  clash  *frame_20000 \[linked\]$' || fail "debuglink: no names: $out"
        echo "$out" | head -1 | grep -q 'symbols from .*cs_frames\.debug' || fail "debuglink: header: $out"
    else
        fail "objcopy could not make a debug file"
    fi
fi

# A stripped system library with its debug package (libc6-dbg, from scripts/deps.sh): found by
# build-id, it names the static functions, buffered_vfprintf among them with its 33 KB frame.
# A cross compiler's libc has no debug package installed: said, not checked.
LIBC=$("$CC" -print-file-name=libc.so.6)
"$VMSTACK" checkstack --guard 16K "$LIBC" > "$TMP/libc.txt" || fail "checkstack $LIBC"
if [ -n "${VMS_CROSS_LIBC:-}" ]; then
    echo "skip: $LIBC: no debug package for the cross libc (buffered_vfprintf unnamed)"
else
    grep -q '^0x[0-9a-f]*  *[0-9]\{5\}  clash  *buffered_vfprintf \[libc.so.6\]' "$TMP/libc.txt" ||
        fail "libc.so.6: buffered_vfprintf not listed with its frame: $(head -5 "$TMP/libc.txt")"
fi
fdes=$(readelf --debug-dump=frames "$LIBC" 2>/dev/null | grep -c ' FDE ')
head -1 "$TMP/libc.txt" | grep -q ": $fdes functions " || fail "libc.so.6: not every FDE ($fdes): $(head -1 "$TMP/libc.txt")"

# The project's own library, built -O2 with and without frame pointers: at least 99% of the
# functions -fstack-usage reports agree within 16 bytes (pushed call arguments counted in
# frame-pointer code; compiler clones matched by name without their .N suffixes).
ROOT=$(cd "$(dirname "$SRC")/.." && pwd)
for flags in "-O2" "-O2 -fno-omit-frame-pointer"; do
    dir="$TMP/own$(echo "$flags" | tr -d ' -')"
    mkdir -p "$dir"
    (cd "$dir" && for c in "$ROOT"/src/*/*.c; do
        "$CC" $flags -fPIC -fstack-usage -D_GNU_SOURCE -I"$ROOT/include" -I"$ROOT/src" -c "$c" -o "$(basename "$c" .c).o" || exit 1
    done && "$CC" -shared -o own.so ./*.o) || { fail "[$flags] could not build the project's sources"; continue; }
    "$VMSTACK" checkstack --json --min 0 "$dir/own.so" > "$dir/own.json" || { fail "[$flags] checkstack own.so"; continue; }
    cat "$dir"/*.su > "$dir/all.su"
    python3 - "$dir/own.json" "$dir/all.su" "$flags" <<'PY' || fail "[$flags] the project's functions do not agree with -fstack-usage"
import json, re, sys
frames = {}
for f in json.load(open(sys.argv[1]))["functions"]:
    frames.setdefault(re.sub(r"\.[0-9]+", "", f["name"]), []).append(f["frame"])
total = agree = 0
off = []
for line in open(sys.argv[2]):
    loc, size, kind = line.rstrip("\n").split("\t")
    name, size = re.sub(r"\.[0-9]+", "", loc.split(":")[-1]), int(size)
    total += 1
    if any(abs(x - size) <= 16 for x in frames.get(name, [])):
        agree += 1
    else:
        off.append("%s (.su %d, checkstack %s)" % (name, size, frames.get(name)))
print("ok: [%s] %d of %d functions of the project agree with -fstack-usage (%.1f%%)%s"
      % (sys.argv[3], agree, total, 100.0 * agree / total, "; not: " + ", ".join(off) if off else ""))
sys.exit(0 if agree * 100 >= 99 * total else 1)
PY
done

passed "all checkstack tests passed"
