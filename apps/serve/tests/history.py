"""A consistency history test of apps/serve (docs/serve.md, "Consistency").

Several redis-py clients (threads of this process, one command in flight each)
run GET, SET, INCR and DEL on a few shared keys against an N-rank
`mpidict serve` (loopback, --requirepass), every command through a rank chosen
at random, so one key is reached through every rank's port.  Each command is
recorded with the time just before it was sent and just after its reply came
back (CLOCK_MONOTONIC, shared by the threads), and the history is checked by
tools/histcheck --mode linearizable (Porcupine, per key): what docs/serve.md
promises for single-key commands.

--broken runs the same workload through a client-side fault: a cache that
answers a GET of a key this client has seen before from the value it saw
(filled by its own GETs and writes, never invalidated), i.e. stale reads.
The checker must reject that history (histcheck --expect-reject).
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

import harness

PASSWORD = "history-test-password"
KEYS = 3


class Client:
    def __init__(self, index, ports, broken, ops, deadline, seed):
        self.index = index
        self.connections = [redis.Redis(host="127.0.0.1", port=p, password=PASSWORD, protocol=2,
                                        socket_timeout=20, retry=Retry(NoBackoff(), 0)) for p in ports]
        self.broken = broken
        self.cache = {}
        self.ops = ops
        self.deadline = deadline
        self.random = random.Random(seed)
        self.events = []
        self.error = None

    def command(self, op, key, value):
        """Runs one command; returns the number histcheck reads as its result."""
        name = "hist:%d" % key
        if self.broken and op == "get" and key in self.cache:
            return self.cache[key]  # the fault: a stale answer, the server not asked
        connection = self.random.choice(self.connections)
        if op == "get":
            reply = connection.get(name)
            out = -1 if reply is None else int(reply)
        elif op == "set":
            if connection.set(name, str(value)) is not True:
                raise RuntimeError("SET %s %d did not answer OK" % (name, value))
            out = 0
        elif op == "incr":
            out = connection.incr(name)
        else:
            out = connection.delete(name)
        if self.broken:  # what this client now believes the key holds
            self.cache[key] = {"get": out, "set": value, "incr": out, "del": -1}[op]
        return out

    def run(self, stop):
        try:
            for seq in range(self.ops):
                if stop.is_set() or time.monotonic() > self.deadline:
                    break
                roll = self.random.random()
                op = "get" if roll < 0.4 else "set" if roll < 0.65 else "incr" if roll < 0.9 else "del"
                key = self.random.randrange(KEYS)
                value = 1 if op == "incr" else (self.index + 1) * 1000000 + seq if op == "set" else 0
                call = time.monotonic_ns()
                out = self.command(op, key, value)
                ret = time.monotonic_ns()
                self.events.append({"client": self.index, "seq": seq, "call": call, "return": ret, "round": 0,
                                    "op": op, "key": key, "value": value, "out": out})
        except Exception as error:  # noqa: BLE001 - reported by the main thread
            self.error = "client %d: %r" % (self.index, error)
            stop.set()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.common_arguments(parser)
    parser.add_argument("--histcheck", required=True)
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--ops", type=int, default=300, help="commands per client at most")
    parser.add_argument("--seconds", type=float, default=5.0, help="the workload's time limit")
    parser.add_argument("--broken", action="store_true", help="stale client-side cache; expect a rejection")
    parser.add_argument("--seed", type=int, default=46)
    args = parser.parse_args()
    harness.exit_on_sigterm()

    # --duration: the job also ends by itself should this script be killed outright.
    extra = ["--requirepass", PASSWORD, "--duration", "120"]
    with harness.MpidictServe(args.mpiexec, args.preflags, args.np, args.serve, extra=extra, password=PASSWORD,
                              timeout=60) as serve:
        if len(serve.ports) != args.np:
            harness.fail("expected %d ports, got %s" % (args.np, serve.ports))
        stop = threading.Event()
        deadline = time.monotonic() + args.seconds
        clients = [Client(i, serve.ports, args.broken, args.ops, deadline, args.seed * 1000 + i)
                   for i in range(args.clients)]
        # Every key starts absent: nothing to set up.
        threads = [threading.Thread(target=c.run, args=(stop,), daemon=True) for c in clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=args.seconds + 60)
        if any(t.is_alive() for t in threads):
            harness.fail("a client did not finish (a reply never came)")
        errors = [c.error for c in clients if c.error]
        if errors:
            harness.fail("; ".join(errors))
        if not serve.stop():
            harness.fail("the service did not stop cleanly on SHUTDOWN:\n" + serve.text())

    events = sorted((e for c in clients for e in c.events), key=lambda e: e["call"])
    counts = {}
    for e in events:
        counts[e["op"]] = counts.get(e["op"], 0) + 1
    print("%d commands by %d clients on %d keys through %d ranks (%s)%s" % (
        len(events), args.clients, KEYS, args.np, ", ".join("%s %d" % kv for kv in sorted(counts.items())),
        ", stale client cache" if args.broken else ""))
    if len(events) < 20 * args.clients:
        harness.fail("too few commands ran (%d) to say anything" % len(events))
    with tempfile.TemporaryDirectory(prefix="serve-history-") as tmp:
        path = os.path.join(tmp, "serve_history_np%d%s.jsonl" % (args.np, "_broken" if args.broken else ""))
        with open(path, "w") as f:
            for e in events:
                f.write(json.dumps(e) + "\n")
        command = [args.histcheck, "--mode", "linearizable", "--timeout", "20s"]
        if args.broken:
            command.append("--expect-reject")
        result = subprocess.run(command + [path], capture_output=True, text=True, timeout=120)
        print(result.stdout + result.stderr, end="")
        if result.returncode != 0:
            kept = os.path.join(os.getcwd(), os.path.basename(path))
            shutil.copy(path, kept)
            if args.broken:
                harness.fail("the checker accepted the stale-cache history (kept in %s)" % kept)
            harness.fail("the history is not linearizable (kept in %s)" % kept)
        if "0 unknown" not in result.stdout:
            harness.fail("the checker could not decide in its time limit")
    print("PASS: %s" % ("stale reads rejected" if args.broken else "linearizable"))


if __name__ == "__main__":
    main()
