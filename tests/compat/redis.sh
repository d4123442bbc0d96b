#!/bin/sh
# SPDX-License-Identifier: MIT
# redis in the compatibility suite: redis-server on a loopback port (its
# io threads, its background jobs), redis-benchmark's SET and GET against
# it, then SHUTDOWN NOSAVE.  The figures change from run to run: what is
# printed is the shape of the benchmark's result and the exit statuses.
# usage: redis.sh PORT
set -u
port=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
    --logfile "$work/log" --io-threads 2 > "$work/out" 2>&1 &
srv=$!
i=0
until [ "$(redis-cli -p "$port" ping 2> /dev/null)" = PONG ]; do
    i=$((i + 1))
    [ $i -lt 100 ] || { echo "redis-server did not answer"; cat "$work/log"; kill $srv; exit 1; }
    sleep 0.1
done
redis-benchmark -p "$port" -q -n 2000 -c 10 -t set,get > "$work/bench" 2>&1
echo "redis-benchmark exit $?"
tr '\r' '\n' < "$work/bench" | sed -n -E 's/^([A-Z]+): [0-9.]+ requests per second.*/\1: N requests per second/p'
redis-cli -p "$port" dbsize
redis-cli -p "$port" shutdown nosave
echo "redis-cli shutdown exit $?"
wait $srv
echo "redis-server exit $?"
cat "$work/out"
