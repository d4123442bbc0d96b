#!/bin/sh
# SPDX-License-Identifier: MIT
# PostgreSQL in the compatibility suite, run by its own user: initdb (the
# bootstrap backend), the postmaster on a socket in a directory of its own
# and its forked backends, pgbench's load and 800 transactions from four
# clients, then a PL/pgSQL function that calls itself until PostgreSQL's
# own check says "stack depth limit exceeded", and a fast stop.  pgbench's
# figures change from run to run: only its counts are printed.
set -u
bin=/usr/lib/postgresql/15/bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin/initdb" -D "$work/data" -A trust -U postgres -E UTF8 --locale=C --no-sync > "$work/initdb" 2>&1 ||
    { echo "initdb failed"; cat "$work/initdb"; exit 1; }
"$bin/postgres" -D "$work/data" -k "$work" -c listen_addresses= -c fsync=off -c synchronous_commit=off \
    -c full_page_writes=off -c max_connections=10 -c shared_buffers=16MB > "$work/log" 2>&1 &
srv=$!
i=0
until "$bin/pg_isready" -q -h "$work"; do
    i=$((i + 1))
    [ $i -lt 100 ] || { echo "postgres did not answer"; cat "$work/log"; kill $srv; exit 1; }
    sleep 0.1
done
"$bin/pgbench" -h "$work" -i -q -s 1 postgres > "$work/init" 2>&1
echo "pgbench -i exit $?"
"$bin/pgbench" -h "$work" -n -t 200 -c 4 -j 2 postgres > "$work/bench" 2>&1
echo "pgbench exit $?"
grep -E '^(number of (clients|threads|transactions actually processed|failed transactions))' "$work/bench"
"$bin/psql" -h "$work" -X -q -v ON_ERROR_STOP=0 postgres <<'SQL' 2>&1
\set SHOW_CONTEXT never
SELECT count(*) FROM pgbench_accounts;
CREATE FUNCTION r(n int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN r(n + 1); END $$;
CREATE FUNCTION d(n int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN CASE WHEN n = 0 THEN 0 ELSE d(n - 1) + 1 END; END $$;
SELECT d(500);
SELECT r(0);
SELECT 'still here';
SQL
echo "psql exit $?"
kill -INT $srv
wait $srv
echo "postgres exit $?"
