#!/bin/sh
# SPDX-License-Identifier: MIT
# Interpreters' deep recursion in the compatibility suite, each using about
# 1-2 MiB of the C stack without ending, then past its own limit where it
# has one, whose error is printed.  tcl: procs called from lsort -command
# (Tcl 8.6 calls procs without C recursion, a command's callback with it),
# then its recursion limit.  gawk: functions (on gawk's own stack) and a
# dynamic regex 2000 groups deep (the regex compilers recurse).  bash:
# functions (its C stack), then FUNCNEST.
set -u
tclsh <<'TCL'
interp recursionlimit {} 20000
proc sorted {n} { if {$n == 0} { return 0 }; lsort -command [list cmp $n] {a b}; return [expr {$::got + 1}] }
proc cmp {n a b} { set ::got [sorted [expr {$n - 1}]]; return 0 }
set got 0
puts "tcl depth [sorted 3000]"
interp recursionlimit {} 1000
puts "tcl limit [catch {sorted 5000} err] $err"
TCL
echo "tclsh exit $?"
gawk 'function depth(n) { return n == 0 ? 0 : depth(n - 1) + 1 }
      BEGIN { s = "x"; for (i = 0; i < 2000; i++) s = "(" s ")"
              print "gawk depth", depth(200000), "regex", match("ax", s) }'
echo "gawk exit $?"
bash -c 'depth() { if [ "$1" -gt 0 ]; then depth $(( $1 - 1 )); fi; n=$(( n + 1 )); }
         n=0; depth 1500; echo "bash depth $n"'
echo "bash exit $?"
bash -c 'FUNCNEST=500; depth() { depth $(( $1 + 1 )); }; depth 0; echo "not reached"' 2>&1
echo "bash FUNCNEST exit $?"
