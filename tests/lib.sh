# SPDX-License-Identifier: MIT
# The set-up the shell tests share, sourced after 'set -u' and after the
# script named its arguments, as . "$(dirname "$0")/lib.sh".  A test of
# cases (one CTest test per case, the case in case_) ends at its first
# failure; another counts its failures and ends with passed.  Uses VMSTACK,
# and CC and SRC (the C compiler, the source of the test's program) for
# compile.
#   TMP                     a directory of the test's own, removed at exit
#   fail MESSAGE            says the failure: the case ends (exit 1), or the
#                           failure is counted and the test goes on
#   skip REASON             the case cannot run here: exit 77
#   check WHAT COMMAND...   runs COMMAND: "ok: WHAT", or a failure
#   compile OUT CFLAGS...   SRC built into $TMP/OUT, or the test ends (exit 1)
#   traced_as_plain PROG [WHY]  $TMP/PROG plain, then under 'vmstack trace' with
#                           the report in $TMP/report.txt: it must run plain (or
#                           the test ends, WHY the likely reason) and print the same
#   passed MESSAGE          the end: MESSAGE and exit 0, or exit 1 after failures
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
FAILS=0

fail() {
    if [ -n "${case_:-}" ]; then
        echo "FAIL ($case_): $*" >&2
        exit 1
    fi
    echo "FAIL: $*"
    FAILS=$((FAILS + 1))
}

skip() {
    echo "SKIP (${case_:-$0}): $*" >&2
    exit 77
}

check() {
    what=$1
    shift
    if "$@"; then echo "ok: $what"; else fail "$what"; fi
}

compile() {
    out=$1
    shift
    "$CC" "$@" -o "$TMP/$out" "$SRC" || { echo "FAIL: cannot compile"; exit 1; }
}

traced_as_plain() {
    "$TMP/$1" > "$TMP/plain.out" || { echo "FAIL: the program fails plain${2:+ ($2)}"; exit 1; }
    "$VMSTACK" trace --output "$TMP/report.txt" -- "$TMP/$1" > "$TMP/trace.out" || fail "exit $?"
    cmp -s "$TMP/plain.out" "$TMP/trace.out" || fail "printed $(cat "$TMP/trace.out"), plain $(cat "$TMP/plain.out")"
}

passed() {
    [ "$FAILS" = 0 ] || { echo "$FAILS failure(s)"; exit 1; }
    echo "$*"
    exit 0
}
