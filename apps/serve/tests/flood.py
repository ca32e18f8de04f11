"""apps/serve under many clients and misbehaving ones (docs/serve.md, "Limits").

* 200 concurrent clients, spread over the ranks, each writing its own keys and
  incrementing one shared counter: every reply right, the counter exact, DBSIZE
  exact.
* Misbehaving clients, each compared with redis-server given the same bytes:
  malformed requests (the same error reply, then the connection closed), a
  request larger than the limit, a client that never reads its replies (cut
  off at the output limit), connections beyond --max-clients (refused); the
  service stays up and nothing stored is lost.
* --password-file: the AUTH exchange of redis-server --requirepass, reply for reply.
"""

import argparse
import os
import socket
import sys
import tempfile
import threading
import time

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

import harness

CLIENTS = 200
ROUNDS = 15


def raw(port, **kw):
    c = redis.Redis(host="127.0.0.1", port=port, socket_timeout=60, protocol=2,
                    retry=Retry(NoBackoff(), 0), **kw)
    c.response_callbacks.clear()
    return c


def exchange(port, data, wait=1.0):
    """Sends raw bytes; returns what came back until the server closed (or `wait` passed) and whether it closed."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        s.settimeout(wait)
        got = b""
        closed = False
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            got += chunk
        return got, closed


def flood(ports, failures):
    barrier = threading.Barrier(CLIENTS)

    def worker(i):
        try:
            c = raw(ports[i % len(ports)])
            barrier.wait(timeout=120)
            for j in range(ROUNDS):
                p = c.pipeline(transaction=False)
                p.execute_command("SET", f"k:{i}:{j}", f"v{i}.{j}")
                p.execute_command("GET", f"k:{i}:{j}")
                p.execute_command("INCR", "shared")
                p.execute_command("HSET", f"h:{i}", str(j), str(j * j))
                p.execute_command("ZADD", "board", i * 1000 + j, f"m:{i}:{j}")
                got = p.execute()
                if got[0] != b"OK" or got[1] != f"v{i}.{j}".encode() or not isinstance(got[2], int) or got[3] != 1 \
                        or got[4] != 1:
                    failures.append(f"client {i} round {j}: {got!r}")
                    return
            c.close()
        except Exception as e:  # noqa: BLE001 - any failure of a client is the test's failure
            failures.append(f"client {i}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    if any(t.is_alive() for t in threads):
        failures.append("some clients did not finish within 300 s")


def check_store(port, failures, what, extra_keys=0):
    c = raw(port)
    if c.execute_command("GET", "shared") != str(CLIENTS * ROUNDS).encode():
        failures.append(f"{what}: shared counter {c.execute_command('GET', 'shared')!r}, want {CLIENTS * ROUNDS}")
    want_keys = CLIENTS * ROUNDS + 1 + CLIENTS + 1 + extra_keys
    if c.execute_command("DBSIZE") != want_keys:
        failures.append(f"{what}: DBSIZE {c.execute_command('DBSIZE')}, want {want_keys}")
    if c.execute_command("ZCARD", "board") != CLIENTS * ROUNDS:
        failures.append(f"{what}: ZCARD board {c.execute_command('ZCARD', 'board')}")
    top = c.execute_command("ZRANGEBYSCORE", "board", (CLIENTS - 1) * 1000, "+inf")
    if top != [f"m:{CLIENTS - 1}:{j}".encode() for j in range(ROUNDS)]:
        failures.append(f"{what}: ZRANGEBYSCORE of the last client {top!r}")
    for i in range(0, CLIENTS, 37):
        for j in range(ROUNDS):
            if c.execute_command("GET", f"k:{i}:{j}") != f"v{i}.{j}".encode():
                failures.append(f"{what}: k:{i}:{j} lost")
                return


MALFORMED = [
    b"*2\r\n$3\r\nGET\r\n:5\r\n",              # expected '$'
    b"*abc\r\n",                              # invalid multibulk length
    b"*1\r\n$-5\r\n",                         # invalid bulk length
    b"*9999999999\r\n",                       # invalid multibulk length
    b"SET \"unbalanced x\r\n",                # unbalanced quotes
    b"*1\r\n$999999999999\r\n",               # invalid bulk length (beyond any limit)
]


def misbehave(ports, reference_port, failures):
    began = time.monotonic()
    for data in MALFORMED:
        theirs, theirs_closed = exchange(reference_port, data)
        for port in ports:
            ours, ours_closed = exchange(port, data)
            if (ours, ours_closed) != (theirs, theirs_closed):
                failures.append(f"malformed {data!r}: redis-server {theirs!r} closed={theirs_closed}, "
                                f"mpidict {ours!r} closed={ours_closed}")
    print(f"  malformed: {time.monotonic() - began:.1f} s")
    # A request over our limit (--max-request-bytes 262144): an error and the connection closed.
    big = b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$" + str(300000).encode() + b"\r\n" + b"x" * 300000 + b"\r\n"
    ours, closed = exchange(ports[0], big)
    if not ours.startswith(b"-ERR Protocol error: invalid bulk length") or not closed:
        failures.append(f"oversized request: {ours[:80]!r} closed={closed}")
    print(f"  oversized: {time.monotonic() - began:.1f} s")
    # A client that pipelines 400 GETs of a 100 KB value and does not read:
    # the replies pass --output-limit (1 MiB) and the server cuts it off.
    c = raw(ports[-1])
    c.execute_command("SET", "fat", "y" * 100000)
    s = socket.create_connection(("127.0.0.1", ports[-1]), timeout=10)
    s.sendall(b"*2\r\n$3\r\nGET\r\n$3\r\nfat\r\n" * 400)
    time.sleep(2.0)
    s.settimeout(5)
    drained, cut = 0, False
    try:
        while drained < 400 * 100000:
            chunk = s.recv(1 << 20)
            if not chunk:
                cut = True
                break
            drained += len(chunk)
    except ConnectionResetError:
        cut = True
    except socket.timeout:
        pass
    s.close()
    if not cut or drained >= 400 * 100000:
        failures.append(f"slow reader: read {drained} bytes, connection closed={cut} (want closed, short)")
    print(f"  cut off: {time.monotonic() - began:.1f} s")
    # One that sends without end and never reads: the server stops reading it
    # (its pipeline and unsent replies are bounded) and serves the others.
    s = socket.create_connection(("127.0.0.1", ports[0]), timeout=10)
    s.settimeout(3)
    sent = 0
    try:
        for _ in range(2000):
            s.sendall(b"*2\r\n$3\r\nGET\r\n$3\r\nfat\r\n" * 100)
            sent += 1
    except OSError:
        pass
    if raw(ports[0]).execute_command("PING") != b"PONG":
        failures.append("a flooding client that never reads stopped the rank")
    s.close()
    print(f"  slow reader: {time.monotonic() - began:.1f} s")
    # Beyond --max-clients (300 per rank): refused with redis-server's words.
    held = [socket.create_connection(("127.0.0.1", ports[0]), timeout=10) for _ in range(300)]
    try:
        got, closed = exchange(ports[0], b"PING\r\n")
        if got != b"-ERR max number of clients reached\r\n" or not closed:
            failures.append(f"client 301: {got!r} closed={closed}")
    finally:
        for s in held:
            s.close()
    time.sleep(0.5)
    for port in ports:
        if raw(port).execute_command("PING") != b"PONG":
            failures.append(f"rank port {port} did not answer PING after the misbehaving clients")


def passwords(args, failures):
    with tempfile.NamedTemporaryFile("w", delete=False) as f:
        f.write("s3cret\n")
        password_file = f.name
    steps = [("GET", "x"), ("AUTH", "wrong"), ("AUTH", "default", "wrong"), ("PING",), ("AUTH", "s3cret"),
             ("SET", "x", "1"), ("GET", "x"), ("AUTH", "nobody", "s3cret")]
    try:
        with harness.RedisServer(args.redis_server, ["--requirepass", "s3cret"]) as reference, \
                harness.MpidictServe(args.mpiexec, args.preflags, args.np, args.serve,
                                     ["--password-file", password_file, "--duration", "120"],
                                     password="s3cret") as ours:
            def run(port):
                c = raw(port)
                out = []
                for step in steps:
                    try:
                        out.append(c.execute_command(*step))
                    except redis.exceptions.ResponseError as e:
                        out.append("error: " + str(e))
                    except redis.exceptions.AuthenticationError as e:
                        out.append("auth error: " + str(e))
                return out
            theirs = run(reference.port)
            for port in ours.ports:
                mine = run(port)
                if mine != theirs:
                    failures.append(f"AUTH exchange on {port}: redis-server {theirs!r}, mpidict {mine!r}")
            if not ours.stop():
                failures.append("the password job did not stop cleanly:\n" + ours.text())
    finally:
        os.unlink(password_file)


def main():
    parser = argparse.ArgumentParser()
    harness.common_arguments(parser)
    args = parser.parse_args()
    harness.exit_on_sigterm()
    failures = []
    started = time.monotonic()
    with harness.RedisServer(args.redis_server) as reference, \
            harness.MpidictServe(args.mpiexec, args.preflags, args.np, args.serve,
                                 ["--max-clients", "300", "--max-request-bytes", "262144",
                                  "--max-bulk-bytes", "262144", "--output-limit", "1048576"]) as ours:
        flood(ours.ports, failures)
        print(f"{CLIENTS} clients x {ROUNDS} rounds of 5 pipelined commands: {time.monotonic() - started:.1f} s")
        check_store(ours.ports[0], failures, "after the flood")
        phase = time.monotonic()
        misbehave(ours.ports, reference.port, failures)
        print(f"misbehaving clients: {time.monotonic() - phase:.1f} s")
        check_store(ours.ports[-1], failures, "after the misbehaving clients", extra_keys=1)
        if not ours.stop():
            failures.append("SHUTDOWN did not end the job cleanly:\n" + ours.text())
    phase = time.monotonic()
    passwords(args, failures)
    print(f"AUTH exchange: {time.monotonic() - phase:.1f} s")
    for line in failures:
        print("FAIL " + line)
    print(f"flood, misbehaving clients and AUTH at {args.np} rank(s): {len(failures)} failures "
          f"({time.monotonic() - started:.1f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
