#!/bin/sh
# SPDX-License-Identifier: MIT
# vmstack.h compiles as C89 with GNU extensions, C99, C11 and C++98 and
# later; vmstack.hpp (with Boost.Context when installed) as C++11 and
# later.  Both with gcc and clang, warning-free under -Wall -Wextra
# -pedantic (and -Wold-style-cast for C++), each function of the header
# used once so that inline bodies are compiled too.
# Usage: test_headers.sh INCLUDE_DIR
set -u
inc=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0 passed=0

cat >"$tmp/c.c" <<'SRC'
#include <vmstack.h>
int main(void)
{
    vms_stack st;
    vms_fiber f;
    st.base = 0;
    st.size = 0;
    f.id = 1;
    return vms_stack_top(&st) != 0 || vms_fiber_id(f) != 1;
}
SRC
cat >"$tmp/hpp.cpp" <<'SRC'
#include <vmstack.hpp>
int main()
{
    vmstack::stack st;
    vmstack::stack moved(static_cast<vmstack::stack &&>(st));
#ifdef BOOST_CONTEXT_CONTINUATION_H
    vmstack::continuation c = vmstack::callcc("t", [](boost::context::continuation &&k) { return std::move(k); });
    vmstack::stack_allocator alloc;
    (void)alloc;
    return static_cast<bool>(c) || !moved;
#else
    return !moved;
#endif
}
SRC

check() { # COMPILER STD SOURCE EXTRA...
  cc=$1 std=$2 src=$3
  shift 3
  if out=$("$cc" -std="$std" -Wall -Wextra -pedantic -Werror "$@" -I"$inc" -c -o "$tmp/o.o" "$src" 2>&1); then
    passed=$((passed + 1))
  else
    echo "FAIL: $cc -std=$std $(basename "$src"):"
    echo "$out" | head -20
    failed=$((failed + 1))
  fi
}

for pair in gcc:g++ clang:clang++; do
  c=${pair%%:*} cxx=${pair#*:}
  command -v "$c" >/dev/null && command -v "$cxx" >/dev/null || { echo "FAIL: $c or $cxx not installed"; exit 1; }
  for std in c89 gnu89 c99 c11 c17; do check "$c" $std "$tmp/c.c"; done
  for std in c++98 c++03 c++11 c++14 c++17 c++20; do check "$cxx" $std "$tmp/c.c" -x c++ -Wold-style-cast; done
  for std in c++11 c++14 c++17 c++20; do check "$cxx" $std "$tmp/hpp.cpp" -Wold-style-cast; done
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
