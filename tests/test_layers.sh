#!/bin/sh
# SPDX-License-Identifier: MIT
# The layering rule, checked on the sources and on the compiled objects:
# every #include of ours and every call into another file goes to the same
# layer or one below it (docs/internals.md); no code but
# src/arch's names a register; and the shared library exports only the
# API: vms_* and the C++ names (vmstack::), nothing that would replace
# another library's function in every program linked with it; no function
# in src/ or tools/ takes more than 6 parameters.
# usage: test_layers.sh SRC_DIR SHARED_LIB OBJ_DIR...   (OBJ_DIR: where CMake put src/<layer>/*.o)
set -u
src=$1 lib=$2; shift 2
layers="arch core task fault trace preload"   # bottom to top
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
rank() { n=0; for l in $layers; do [ "$l" = "$1" ] && { echo $n; return; }; n=$((n + 1)); done; echo 99; }
# Counts and shows the FAIL lines a loop wrote to file $1 (a loop in a pipe cannot count in this shell).
fails_in() {
    if [ -s "$1" ]; then
        cat "$1" >&2
        fails=$((fails + $(wc -l < "$1")))
    fi
    rm -f "$1"
}

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
fails_in "${TMPDIR:-/tmp}/layers.$$"

# Registers: only src/arch names one (README of src/arch), in code: comments
# may say what x86-64 does, string literals are text.  A register is one of
# the names below, alone or as part of a name joined by '_' (DW_RBP, rbp_off,
# REG_RSP), or the interrupted context's register file (uc_mcontext, gregs),
# or an asm statement with instructions or a register variable: asm outside
# src/arch is an empty compiler barrier.
regs='rax|rbx|rcx|rdx|rsi|rdi|rbp|rsp|rip|r8|r9|r1[0-5]|eax|ebx|ecx|edx|esi|edi|ebp|esp|eip|x29|x30'
regs="$regs|uc_mcontext|gregs|fpregs|mcontext_t"
# A C file with its comments blanked (lines kept, for their numbers).
uncomment() {
    awk '{
        out = ""
        for (i = 1; i <= length($0); i++) {
            c = substr($0, i, 1); c2 = substr($0, i, 2)
            if (st == "/*") { if (c2 == "*/") { st = ""; i++ } continue }
            if (st != "") {
                out = out c
                if (c == "\\") { out = out substr($0, i + 1, 1); i++ }
                else if (c == st) st = ""
                continue
            }
            if (c2 == "/*") { st = "/*"; out = out " "; i++; continue }
            if (c2 == "//") break
            if (c == "\"" || c == "\047") st = c
            out = out c
        }
        if (st != "/*") st = ""
        print out
    }' "$1"
}
for f in "$src"/*/*.[ch] "$src"/*/*/*.[ch] "$src"/../include/*.h "$src"/../include/*.hpp; do
    [ -e "$f" ] || continue
    case $f in "$src"/arch/*) continue ;; esac
    name=${f#"$src"/}
    uncomment "$f" | sed 's/"\([^"\\]\|\\.\)*"/""/g' |
        grep -niE "(^|[^A-Za-z0-9_])([A-Za-z0-9_]*_)?($regs)(_[A-Za-z0-9_]*)?([^A-Za-z0-9_]|\$)" |
        sed "s|^|FAIL: register named outside src/arch: $name:|"
    uncomment "$f" | tr '\n' ' ' |
        grep -oE '(^|[^A-Za-z0-9_])(__asm__|__asm|asm)[[:space:]]*((volatile|__volatile__|goto|inline)[[:space:]]*)*\([[:space:]]*"([^"\\]|\\.)*"' |
        grep -vE '\([[:space:]]*""$' | sed "s|^[^_a]*|FAIL: asm with registers outside src/arch: $name: |"
done > "${TMPDIR:-/tmp}/regs.$$"
fails_in "${TMPDIR:-/tmp}/regs.$$"

# Parameters: no function defined in src/ or tools/ takes more than 6 (a
# record passed whole instead).  A definition is a "name(...)" followed by
# its body at file level (or in a namespace), read with comments, literals,
# attributes and preprocessor lines left out.
params=$(python3 - "$src" "$src/../tools" <<'EOF'
import os, re, sys

def blank(t):
    t = re.sub(r'/\*.*?\*/|//[^\n]*|"(\\.|[^"\\\n])*"|\'(\\.|[^\'\\\n])*\'',
               lambda m: re.sub(r'[^\n]', ' ', m.group(0)), t, flags=re.S)
    t = re.sub(r'^[ \t]*#(.*\\\n)*.*$', lambda m: '\n' * m.group(0).count('\n'), t, flags=re.M)
    return re.sub(r'__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)', ' ', t)

def count(p):
    p, depth, n = p.strip(), 0, 1
    for c in p:
        depth += (c in '([{<') - (c in ')]}>')
        n += c == ',' and depth == 0
    return 0 if p in ('', 'void') else n

def params(head):
    """The parameter list when head, the text before a '{' at file level, opens a function's body."""
    depth, groups = 0, []
    for i, c in enumerate(head):
        if c == '(' and depth == 0:
            start = i + 1
        depth += (c == '(') - (c == ')')
        if c == ')' and depth == 0:
            groups.append((start, i))
    if not groups or '=' in head[:groups[0][0]] or head[groups[-1][1] + 1:].strip() not in ('', 'const', 'noexcept'):
        return None
    for s, e in groups:
        m = re.search(r'([A-Za-z_]\w*)\s*\($', head[:s])
        if m and m.group(1) not in ('if', 'while', 'for', 'switch', 'return', 'sizeof'):
            return m.group(1), head[s:e]
    return None

seen = 0
for root in sys.argv[1:]:
    for dp, _, names in sorted(os.walk(root)):
        for f in sorted(n for n in names if n.endswith(('.c', '.h', '.cpp'))):
            path = os.path.join(dp, f)
            t = blank(open(path, encoding='utf-8', errors='replace').read())
            depth = start = 0
            for i, c in enumerate(t):
                if c in ';}' and depth == 0:
                    start = i + 1
                if c == '{' and depth == 0:
                    head = t[start:i]
                    if re.search(r'(namespace\s*\w*|extern\s*"\s*")\s*$', head):
                        start = i + 1
                        continue  # its inside is at file level too
                    d = params(head)
                    if d:
                        seen += 1
                        if count(d[1]) > 6:
                            line = t.count('\n', 0, start + len(head) - len(head.lstrip())) + 1
                            print(f'FAIL: {os.path.relpath(path, sys.argv[1] + "/..")}:{line}: '
                                  f'{d[0]} takes {count(d[1])} parameters (at most 6)', file=sys.stderr)
                depth += (c == '{') - (c == '}' and depth > 0)
                if c == '}' and depth == 0:
                    start = i + 1
print(seen)
EOF
) 2> "${TMPDIR:-/tmp}/params.$$"
fails_in "${TMPDIR:-/tmp}/params.$$"
[ "${params:-0}" -gt 500 ] || fail "only ${params:-0} function definitions found in src/ and tools/: parser broken?"

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

exports=$(nm -D --defined-only "$lib" | awk '{print $3}')
[ -n "$exports" ] || fail "$lib exports nothing"
# A sanitizer build adds its own markers (__odr_asan.NAME): not the library's.
for s in $(echo "$exports" | grep -Ev '^(vms_|_ZN7vmstack|__odr_asan)'); do
    fail "$(basename "$lib") exports $s, which is not the API"
done
[ "$fails" = 0 ] || exit 1
echo "layers: includes and $checked cross-file references go downward; registers only in src/arch; $params functions, none with more than 6 parameters; $(basename "$lib") exports $(echo "$exports" | wc -l) symbols, all the API"
