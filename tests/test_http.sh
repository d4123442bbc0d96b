#!/bin/sh
# SPDX-License-Identifier: MIT
# The HTTP/1.1 example server (examples/http-server.c) on two threads: ab
# with keep-alive and 50 concurrent clients, no failed request; then a
# check of every response of 20 keep-alive connections (status, length,
# body, the shared counter: every request number distinct), with
# /overflow in the middle: that connection is closed without an answer,
# the report names its fiber, and the others go on.
# usage: test_http.sh HTTP_SERVER
set -u
server=$1
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT

"$server" -t 2 -p 0 >"$dir/out" 2>"$dir/err" &
pid=$!
for i in $(seq 100); do
  grep -q '^listening on' "$dir/out" 2>/dev/null && break
  sleep 0.1
done
port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$dir/out")
[ -n "$port" ] || { echo "FAIL: the server did not start"; cat "$dir/err"; exit 1; }

ab -k -n 5000 -c 50 "http://127.0.0.1:$port/ab" >"$dir/ab" 2>&1 || { echo "FAIL: ab"; cat "$dir/ab"; exit 1; }
grep -q '^Complete requests: *5000$' "$dir/ab" || { echo "FAIL: ab did not complete 5000"; cat "$dir/ab"; exit 1; }
grep -q '^Failed requests: *0$' "$dir/ab" || { echo "FAIL: ab saw failures"; cat "$dir/ab"; exit 1; }
grep -q '^Keep-Alive requests: *5000$' "$dir/ab" || { echo "FAIL: not every request kept alive"; cat "$dir/ab"; exit 1; }
grep 'Requests per second' "$dir/ab"

/usr/bin/python3 - "$port" <<'PY' || exit 1
import socket, sys
port = int(sys.argv[1])
seen = set()

def request(s, f, path):
    s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode())
    response(f, path)

# Reads one response by its Content-Length, so that a pipelined answer
# that follows stays in the buffer for the next call.
def response(f, path):
    status = f.readline()
    assert status == b"HTTP/1.1 200 OK\r\n", status
    length = None
    while True:
        h = f.readline()
        if h == b"\r\n":
            break
        if h.lower().startswith(b"content-length:"):
            length = int(h.split(b":")[1])
    body = f.read(length)
    words = body.split()
    assert words[0] == b"request" and words[2] == b"of" and words[3] == path.encode(), body
    n = int(words[1])
    assert n not in seen, ("counter value twice", n)
    seen.add(n)

conns = []
for i in range(20):
    s = socket.create_connection(("127.0.0.1", port))
    conns.append((s, s.makefile("rb")))
for r in range(50):
    for i, (s, f) in enumerate(conns):
        request(s, f, "/c%d/r%d" % (i, r))
    if r == 25:
        bad = socket.create_connection(("127.0.0.1", port))
        bad.sendall(b"GET /overflow HTTP/1.1\r\nHost: x\r\n\r\n")
        bad.settimeout(30)
        assert bad.recv(100) == b"", "the overflowing connection answered"
        bad.close()
# Pipelined: three requests in one send, three answers in order.
s, f = conns[0]
s.sendall(b"".join(b"GET /p%d HTTP/1.1\r\n\r\n" % i for i in range(3)))
for i in range(3):
    response(f, "/p%d" % i)
assert len(seen) == 1003, len(seen)
print("http: 1,003 keep-alive responses checked (3 pipelined), the counter distinct in each; /overflow closed without an answer")
PY
grep -q "vmstack: killed fiber 'http-conn'" "$dir/err" || { echo "FAIL: no report of the killed fiber"; cat "$dir/err"; exit 1; }
grep -q "parse_path" "$dir/err" || { echo "FAIL: the report does not name parse_path"; cat "$dir/err"; exit 1; }
kill -0 $pid || { echo "FAIL: the server died"; exit 1; }
echo "ok"
