# SPDX-License-Identifier: MIT
# gevent in the compatibility suite: 300 greenlets (each with its stack
# copied in and out of the main one) sleeping, and pairs of them
# exchanging lines through socketpairs in gevent's event loop.
from gevent import monkey
monkey.patch_all()
import gevent
import socket

def sleeper(i):
    gevent.sleep(0.001 * (i % 7))
    return sum(range(i))

def echo(sock, n):
    f = sock.makefile("rwb")
    for _ in range(n):
        line = f.readline()
        f.write(line.upper())
        f.flush()
    sock.close()

def talk(sock, i, n):
    f = sock.makefile("rwb")
    got = []
    for k in range(n):
        f.write(b"greenlet %d line %d\n" % (i, k))
        f.flush()
        got.append(f.readline())
    sock.close()
    return len(b"".join(got))

jobs = [gevent.spawn(sleeper, i) for i in range(300)]
for i in range(50):
    a, b = socket.socketpair()
    jobs.append(gevent.spawn(echo, a, 20))
    jobs.append(gevent.spawn(talk, b, i, 20))
gevent.joinall(jobs, raise_error=True)
print("greenlets", len(jobs), "sum", sum(j.value or 0 for j in jobs))
