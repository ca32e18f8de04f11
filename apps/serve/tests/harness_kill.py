"""The harness leaves nothing behind when a test script is killed outright
(SIGKILL, as a CI runner or a user's Ctrl-\\ might): a child script starts a
redis-server and an `mpidict serve` job through harness.py, prints their
process ids and waits; this script SIGKILLs it and checks that every one of
those processes (mpiexec, the ranks, redis-server) is gone within 20 s."""

import argparse
import os
import signal
import subprocess
import sys
import time

import harness


def descendants(pid):
    """pid and every process below it (mpiexec, its proxies, the ranks)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    parent = int(f.read().split(")")[-1].split()[1])
            except OSError:
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        found.append(todo.pop())
        todo.extend(children.get(found[-1], []))
    return found


def child(args):
    with harness.RedisServer(args.redis_server) as reference, \
            harness.MpidictServe(args.mpiexec, args.preflags, args.np, args.serve) as ours:
        print("PIDS", reference.process.pid, *descendants(ours.process.pid), flush=True)
        time.sleep(600)


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def main():
    parser = argparse.ArgumentParser()
    harness.common_arguments(parser)
    parser.add_argument("--child", action="store_true")
    args = parser.parse_args()
    if args.child:
        return child(args)
    harness.exit_on_sigterm()
    script = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child"] + sys.argv[1:],
                              stdout=subprocess.PIPE, text=True)
    line = script.stdout.readline()
    if not line.startswith("PIDS"):
        script.kill()
        harness.fail("the child script did not start its servers: %r" % line)
    pids = [int(p) for p in line.split()[1:]]
    if len(pids) < 2 + args.np or not all(alive(p) for p in pids):
        for p in pids:
            if alive(p):
                os.kill(p, signal.SIGKILL)
        script.kill()
        harness.fail("expected redis-server, mpiexec and %d ranks alive, got %s" % (args.np, pids))
    os.kill(script.pid, signal.SIGKILL)
    script.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    left = [p for p in pids if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    if left:
        harness.fail("processes outlived the killed test script: %s" % left)
    print("PASS: redis-server, mpiexec and %d rank(s) ended with the killed script (%d processes)"
          % (args.np, len(pids)))


if __name__ == "__main__":
    main()
