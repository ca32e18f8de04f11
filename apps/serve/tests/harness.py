"""Starts and stops the servers the apps/serve tests talk to: a real
redis-server on a free loopback port and an `mpidict serve` job (every rank on
a port of its own, chosen by the system).  Both are killed on any exit of the
test script: its `with` blocks on a normal exit, an exception or CTest's
SIGTERM (exit_on_sigterm), and the kernel when the script itself is killed
outright (SIGKILL): every server is started with PR_SET_PDEATHSIG, and the
serve job also stops by itself after --duration."""

import ctypes

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time


PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent(parent):
    """preexec_fn: SIGKILL this child when the thread that started it ends,
    whatever ends it; a parent already gone before the call means now."""
    def set_death_signal():
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)
    return set_death_signal


def exit_on_sigterm():
    """A CTest timeout sends SIGTERM: leave through the `with` exits, which
    kill the servers, and say why."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("FAIL: terminated (SIGTERM, the test's timeout?)"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, deadline):
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


class RedisServer:
    def __init__(self, redis_server, extra=()):
        self.redis_server = redis_server
        self.extra = list(extra)
        self.process = None
        self.port = None
        self.dir = tempfile.TemporaryDirectory(prefix="serve-test-redis-")

    def __enter__(self):
        for _attempt in range(5):
            self.port = free_port()
            self.process = subprocess.Popen(
                [self.redis_server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--daemonize", "no", "--dir", self.dir.name, "--logfile", ""] + self.extra,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                preexec_fn=_die_with_parent(os.getpid()))
            if wait_for_port(self.port, time.monotonic() + 10):
                return self
            self.stop()
        raise RuntimeError("redis-server did not start")

    def stop(self):
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def __exit__(self, *exc):
        self.stop()
        self.dir.cleanup()


class MpidictServe:
    """mpiexec -n NP serve --port 0 ...; `ports` lists every rank's port.
    Unless `extra` gives --duration, the job stops by itself after `duration`
    seconds: the last guard should mpiexec outlive this script."""

    def __init__(self, mpiexec, preflags, np, serve, extra=(), timeout=60, password=None, duration=900):
        self.password = password
        extra = list(extra)
        if "--duration" not in extra:
            extra += ["--duration", str(duration)]
        self.command = [mpiexec] + shlex.split(preflags) + ["-n", str(np), serve, "--port", "0"] + extra
        self.timeout = timeout
        self.process = None
        self.ports = []
        self.output = tempfile.TemporaryFile(mode="w+")

    def __enter__(self):
        self.process = subprocess.Popen(self.command, stdout=self.output, stderr=subprocess.STDOUT,
                                        start_new_session=True, preexec_fn=_die_with_parent(os.getpid()))
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            text = self.text()
            found = re.search(r"ready: \d+ ranks, listening on(( [0-9.]+:\d+)+)", text)
            if found:
                self.ports = [int(p.split(":")[1]) for p in found.group(1).split()]
                return self
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        self.kill()
        raise RuntimeError("mpidict serve did not start:\n" + self.text())

    def text(self):
        self.output.seek(0)
        return self.output.read()

    def kill(self):
        if self.process and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=10)

    def stop(self, client_factory=None):
        """SHUTDOWN through rank 0; True if the job then ended by itself."""
        if self.process.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", self.ports[0]), timeout=5) as s:
                    if self.password:
                        word = self.password.encode()
                        s.sendall(b"*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n" % (len(word), word))
                    s.sendall(b"*1\r\n$8\r\nSHUTDOWN\r\n")
            except OSError:
                pass
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                return False
        return self.process.returncode == 0

    def __exit__(self, *exc):
        self.kill()


def common_arguments(parser):
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--preflags", default="")
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--serve", required=True)
    parser.add_argument("--redis-server", default="redis-server")
    parser.add_argument("--redis-cli", default="redis-cli")


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)
