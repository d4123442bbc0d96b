#!/bin/sh
# SPDX-License-Identifier: MIT
# The licence is MIT: LICENSE says so, and every source, script and build
# file names it in an SPDX line among its first three lines.
# usage: test_license.sh SOURCE_DIR
set -u
top=$1
fails=0
grep -q '^MIT License$' "$top/LICENSE" || { echo "FAIL: $top/LICENSE is not the MIT licence" >&2; fails=1; }
for f in $(cd "$top" && find src tools include tests examples gdb scripts cmake .ci debian \
               CMakeLists.txt -type f \( -name '*.[chS]' -o -name '*.cpp' -o -name '*.hpp' \
               -o -name '*.sh' -o -name '*.py' -o -name '*.go' -o -name '*.cmake' -o -name '*.in' \
               -o -name CMakeLists.txt -o -name run -o -name rules \) | sort); do
    head -3 "$top/$f" | grep -q 'SPDX-License-Identifier: MIT' || { echo "FAIL: $f has no 'SPDX-License-Identifier: MIT' line" >&2; fails=$((fails + 1)); }
done
[ "$fails" -eq 0 ] && echo "license: every file carries the SPDX line"
exit "$fails"
