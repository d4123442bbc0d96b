#!/bin/sh
# SPDX-License-Identifier: MIT
# nginx in the compatibility suite: a master and two workers in the
# foreground on a loopback port, 2000 requests from ab, ten at a time,
# then SIGQUIT (a graceful stop).  ab's figures change from run to run:
# what is printed is its count of requests, failures and the exit statuses.
# usage: nginx.sh PORT
set -u
port=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The workers run as nobody, and read the page.
chmod 755 "$work"
mkdir "$work/logs" "$work/html" "$work/tmp"
seq 1 500 > "$work/html/index.html"
cat > "$work/nginx.conf" <<CONF
daemon off;
worker_processes 2;
pid $work/nginx.pid;
error_log $work/logs/error.log;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $work/tmp/body;
    proxy_temp_path $work/tmp/proxy;
    fastcgi_temp_path $work/tmp/fastcgi;
    uwsgi_temp_path $work/tmp/uwsgi;
    scgi_temp_path $work/tmp/scgi;
    server { listen 127.0.0.1:$port; root $work/html; }
}
CONF
nginx -p "$work" -c "$work/nginx.conf" -e "$work/logs/error.log" > "$work/out" 2>&1 &
srv=$!
i=0
until [ -s "$work/nginx.pid" ] && ab -q -n 1 "http://127.0.0.1:$port/" > /dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 100 ] || { echo "nginx did not answer"; cat "$work/logs/error.log"; kill $srv; exit 1; }
    sleep 0.1
done
ab -n 2000 -c 10 "http://127.0.0.1:$port/" > "$work/ab" 2>&1
echo "ab exit $?"
grep -E '^(Document Length|Complete requests|Failed requests|Non-2xx responses):' "$work/ab"
kill -QUIT $srv
wait $srv
echo "nginx exit $?"
cat "$work/out"
grep -E '\[(alert|emerg|crit|error)\]' "$work/logs/error.log"
exit 0
