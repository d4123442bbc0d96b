#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The output samples of README.md and docs/*.md, made from real output.
#
#   scripts/doc-samples.sh [--check] [BUILD_DIR]    (BUILD_DIR: build)
#
# A sample is a fenced block right after a line "<!-- sample: NAME -->";
# NAME is one of the programs below, run from BUILD_DIR.  Without --check
# the blocks are rewritten with what the programs print now.  With --check
# nothing is written: both sides are normalised (addresses, pids, tids)
# and a sample that differs is shown with its diff; exit 1 if any does.
# The samples are taken in the madvise guard mode, where a fiber's stack
# has its colour (mprotect mode gives fibers 64 KiB stacks, not 80 KiB).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
check=0
[ "${1:-}" = --check ] && { check=1; shift; }
build=$(cd "${1:-$src/build}" && pwd)
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export VMSTACK_GUARD=madvise
unset VMSTACK_GUARD_SIZE VMSTACK_STACK_SIZE VMSTACK_CACHE VMSTACK_POOL VMSTACK_RESERVE VMSTACK_SCRUB

if ! "$build/vmstack" run -- true 2>"$tmp/probe"; then
    echo "doc-samples: skip: no madvise guards here: $(cat "$tmp/probe")" >&2
    exit 77
fi

# One function per sample: prints the sample's text.
sample_hello() {
    "$build/examples/hello" 2>&1
}
sample_run-table() {  # a thread 100 KiB deep, the table on stderr
    "$build/vmstack" run -- "$build/tests/run_recurse" 100 2>&1 >/dev/null
}
sample_trace-frames() {  # the thread's chain: its first and last lines
    (cd "$tmp" && "$cc" -O2 -g -pthread -o tf "$src/tests/trace_frames.c" &&
        "$build/vmstack" trace --output report.txt -- ./tf >/dev/null &&
        sed -n "/^thread 'frames'/,/^ *42)/p" report.txt | sed -n '1,5p;/ more entries/p;/^ *4[12])/p')
}
sample_checkstack() {  # tests/cs_frames.c: known frames
    (cd "$tmp" && "$cc" -O2 -o csf "$src/tests/cs_frames.c" && "$build/vmstack" checkstack --guard 16K ./csf)
}
sample_run-help() { "$build/vmstack" run --help; }
sample_trace-help() { "$build/vmstack" trace --help; }

normalise() {
    sed -E -e 's/0x[0-9a-f]+/0x_/g' -e 's/\((tid|pid|id) [0-9]+\)/(\1 _)/g' -e 's/LWP [0-9]+/LWP _/g' \
        -e 's/^ *[0-9]{3,}  /_  /' -e '/ main  /s/[0-9]+ +[0-9.]+%$/_ _%/'
}

files=("$src/README.md" "$src"/docs/*.md)
names=$(sed -n 's/^<!-- sample: \([a-z-]*\) -->$/\1/p' "${files[@]}" | sort -u)
for n in $names; do
    type "sample_$n" >/dev/null 2>&1 || { echo "doc-samples: no program for sample '$n'" >&2; exit 2; }
    "sample_$n" > "$tmp/$n.out" || { echo "doc-samples: sample '$n' failed: $(tail -3 "$tmp/$n.out")" >&2; exit 2; }
    [ -s "$tmp/$n.out" ] || { echo "doc-samples: sample '$n' printed nothing" >&2; exit 2; }
done

declare -f normalise > "$tmp/normalise.sh"

# Each file: the sample blocks replaced (or, with --check, compared).
stale=0
for f in "${files[@]}"; do
    python3 - "$f" "$tmp" "$check" <<'PY' || stale=1
import re, subprocess, sys
path, tmp, check = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
lines = open(path).read().split("\n")
out, i, bad = [], 0, 0
while i < len(lines):
    out.append(lines[i])
    m = re.fullmatch(r"<!-- sample: ([a-z-]+) -->", lines[i])
    i += 1
    if not m:
        continue
    if i >= len(lines) or not lines[i].startswith("```"):
        sys.exit(f"{path}:{i}: sample '{m[1]}' is not followed by a fenced block")
    end = next(k for k in range(i + 1, len(lines)) if lines[k] == "```")
    old = "\n".join(lines[i + 1:end])
    new = open(f"{tmp}/{m[1]}.out").read().rstrip("\n")
    if check:
        open(f"{tmp}/doc.txt", "w").write(old + "\n")
        open(f"{tmp}/real.txt", "w").write(new + "\n")
        r = subprocess.run(["bash", "-c", 'source /dev/stdin; diff -u <(normalise < "$1") <(normalise < "$2")',
                            "x", f"{tmp}/doc.txt", f"{tmp}/real.txt"],
                           input=open(f"{tmp}/normalise.sh").read(), capture_output=True, text=True)
        if r.returncode:
            print(f"{path}: sample '{m[1]}' is stale (- the document, + the real output, normalised):\n{r.stdout}")
            bad = 1
    out.append(lines[i])
    out.extend(new.split("\n"))
    out.append("```")
    i = end + 1
if check:
    sys.exit(bad)
open(path, "w").write("\n".join(out))
PY
done
[ "$check" = 1 ] && [ "$stale" = 0 ] && echo "doc-samples: every sample is current"
[ "$check" = 0 ] && echo "doc-samples: samples written: $names" | tr '\n' ' ' && echo
exit "$stale"
