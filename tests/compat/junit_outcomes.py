#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Compares two JUnit XML files of CPython's regrtest (--junit-xml): prints
# one line per test case whose outcome differs (id, outcome in A, outcome
# in B, tab-separated; "missing" where a file lacks the case), nothing when
# they agree.  Timings are not compared.
# usage: junit_outcomes.py A.xml B.xml
import sys
import xml.etree.ElementTree as ET


def outcomes(path):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"cannot read {path}: {e}")
        sys.exit(1)
    out = {}
    for case in root.iter("testcase"):
        result = "ok"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                result = child.tag
        out[case.get("name")] = result
    return out


a, b = outcomes(sys.argv[1]), outcomes(sys.argv[2])
if not a:
    print(f"{sys.argv[1]} holds no test case")
    sys.exit(1)
for name in sorted(a.keys() | b.keys()):
    if a.get(name) != b.get(name):
        print(f"{name}\t{a.get(name, 'missing')}\t{b.get(name, 'missing')}")
