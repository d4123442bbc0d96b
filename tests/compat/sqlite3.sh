#!/bin/sh
# SPDX-License-Identifier: MIT
# sqlite3 in the compatibility suite: 200,000 rows from a recursive query,
# an index built by the sorter with two helper threads, aggregates.
set -eu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sqlite3 "$work/db" <<'SQL'
PRAGMA threads = 2;
PRAGMA cache_size = -2000;
CREATE TABLE t(a INTEGER, b TEXT);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
INSERT INTO t SELECT (i * 7919) % 100003, printf('row %d', i) FROM n;
CREATE INDEX ta ON t(a, b);
SELECT count(*), sum(a), min(b), max(b) FROM t;
SELECT a, count(*) FROM t GROUP BY a ORDER BY count(*) DESC, a LIMIT 3;
PRAGMA integrity_check;
SQL
