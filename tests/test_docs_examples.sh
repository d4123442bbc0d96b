#!/bin/sh
# SPDX-License-Identifier: MIT
# Every C and C++ block of README.md and docs/*.md compiles against the
# build (include/ and libvmstack.so, warnings as errors), and every program
# among them runs and exits 0.  What the line before a ```c, ```c++ or
# ```cpp fence says of its block (docs/README.md explains it to writers):
#   (nothing)                      the block is a whole file: compiled, and
#                                  linked and run when it has a main
#   <!-- file: NAME -->            the block is a part of file NAME; the parts
#                                  of one NAME in one page, in order, are the
#                                  whole file, handled as above
#   <!-- excerpt: PATH -->         the block's lines are lines of the
#                                  repository's file PATH, in order (blank
#                                  lines aside); PATH is compiled and run as
#                                  above when the block shows its main
#   <!-- skip: REASON -->          not compiled; the reason is printed
# The README's first C block must be an excerpt of examples/hello.c.
# Usage: test_docs_examples.sh SOURCE_DIR LIBVMSTACK_SO C_COMPILER CXX_COMPILER
set -eu
src=$1 lib=$2 cc=$3 cxx=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$src" "$(cd "$(dirname "$lib")" && pwd)" "$cc" "$cxx" "$tmp" <<'PY'
import glob, os, re, subprocess, sys
src, libdir, cc, cxx, tmp = sys.argv[1:]
langs = {"c": "c", "c++": "c++", "cpp": "c++"}
boost = os.path.isdir("/usr/include/boost/context")
failures, counts = [], {"compiled": 0, "ran": 0, "excerpts": 0, "skipped": 0}

def blocks(path):
    """(line, marker kind, marker value, language, text) of every C/C++ block."""
    lines = open(path).read().split("\n")
    i = 0
    while i < len(lines):
        m = re.fullmatch(r"```(\S*)\s*", lines[i])
        if not m:
            i += 1
            continue
        end = next(k for k in range(i + 1, len(lines)) if lines[k].startswith("```"))
        if m[1] in langs:
            mk = re.fullmatch(r"<!-- (file|excerpt|skip): (.+?) -->", lines[i - 1] if i else "")
            yield i + 1, mk[1] if mk else None, mk[2] if mk else None, langs[m[1]], "\n".join(lines[i + 1:end]) + "\n"
        i = end + 1

def has_main(text):
    return re.search(r"^int main\(", text, re.M) is not None

def build_and_run(where, name, lang, path, run):
    exe = os.path.join(tmp, re.sub(r"\W", "_", where + "_" + name))
    comp = cc if lang == "c" else cxx
    std = ["-std=gnu11"] if lang == "c" else ["-std=c++17"]
    libs = ["-lboost_context", "-lboost_fiber"] if lang == "c++" and boost else []
    cmd = [comp, *std, "-O2", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE", "-I" + os.path.join(src, "include")]
    cmd += [path, "-o", exe, "-L" + libdir, "-lvmstack", "-Wl,-rpath," + libdir, *libs] if run else ["-c", path, "-o", exe + ".o"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        failures.append(f"{where}: {name} does not compile:\n  {' '.join(cmd)}\n{r.stderr}")
        return
    counts["compiled"] += 1
    if not run:
        return
    r = subprocess.run(["timeout", "60", exe], capture_output=True, text=True, cwd=tmp)
    if r.returncode:
        failures.append(f"{where}: {name} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    else:
        counts["ran"] += 1

def excerpt(where, path, text):
    want = [l.strip() for l in text.split("\n") if l.strip()]
    have = iter(l.strip() for l in open(os.path.join(src, path)))
    for l in want:
        if not any(h == l for h in have):
            failures.append(f"{where}: not an excerpt of {path}: no line in order reads\n  {l}")
            return False
    counts["excerpts"] += 1
    return True

pages = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))
first = True
for page in pages:
    rel = os.path.relpath(page, src)
    files = {}   # NAME -> (line of its first part, language, text)
    for line, kind, value, lang, text in blocks(page):
        where = f"{rel}:{line}"
        if rel == "README.md" and lang == "c" and first:
            first = False
            if (kind, value) != ("excerpt", "examples/hello.c"):
                failures.append(f"{where}: the README's first C block is not <!-- excerpt: examples/hello.c -->")
        if kind == "skip":
            print(f"{where}: skipped: {value}")
            counts["skipped"] += 1
        elif kind == "excerpt":
            if excerpt(where, value, text) and has_main(text):
                build_and_run(where, value, lang, os.path.join(src, value), True)
        else:
            name = value or f"block{line}.{'c' if lang == 'c' else 'cpp'}"
            old = files.get(name, (line, lang, ""))
            files[name] = (old[0], lang, old[2] + text)
    for name, (line, lang, text) in files.items():
        where = f"{rel}:{line}"
        if lang == "c++" and not boost and "vmstack.hpp" in text:
            print(f"{where}: skipped: {name} needs Boost.Context's headers, not installed")
            counts["skipped"] += 1
            continue
        path = os.path.join(tmp, re.sub(r"[^\w.]", "_", rel + "_" + name))
        open(path, "w").write(text)
        build_and_run(where, name, lang, path, has_main(text))

print(", ".join(f"{v} {k}" for k, v in counts.items()))
for f in failures:
    print("FAIL: " + f)
sys.exit(1 if failures else 0)
PY
