"""Starts the flights service and the web front for the tests, and computes the
expected answers independently: a plain loop over flights.tsv and airports.tsv
(not the service's code)."""
import os
import queue
import signal
import subprocess
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FRONT = os.path.join(ROOT, "apps", "flights", "web", "front.py")


class Process:
    """A child whose output lines are collected by a thread; wait_for(text) finds one."""

    def __init__(self, command, name, env=None):
        self.name = name
        self.command = command
        self.lines = queue.Queue()
        self.output = []
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        env=env, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.output.append(line)
            self.lines.put(line)

    def wait_for(self, text, timeout=90):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.process.poll() is not None and self.lines.empty():
                    break
                continue
            if text in line:
                return line
        raise RuntimeError(f"{self.name}: no '{text}' within {timeout} s; output:\n{''.join(self.output)}")

    def stop(self, timeout=30):
        """SIGTERM (mpiexec passes it to the ranks, which stop together); the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        return self.process.returncode


def start_service(args, start, speed=0, port=0, extra=()):
    """args: the test's --mpiexec, --np, --service, --data."""
    command = [args.mpiexec, "-n", str(args.np), *args.preflags.split(), args.service, "--data", args.data,
               "--start", start, "--speed", str(speed), "--control-port", str(port), *extra]
    service = Process(command, "service")
    line = service.wait_for("control port 127.0.0.1:")
    service.port = int(line.rsplit(":", 1)[1])
    return service


def start_front(python, service_port, assets, port=0, refresh=0.5, extra=()):
    front = Process([python, FRONT, "--service-port", str(service_port), "--port", str(port), "--assets", assets,
                     "--refresh", str(refresh), *extra], "front")
    line = front.wait_for("front: serving http://127.0.0.1:")
    front.port = int(line.split("127.0.0.1:")[1].split("/")[0])
    return front


def load_data(directory):
    airports = {}
    with open(os.path.join(directory, "airports.tsv")) as lines:
        for line in lines:
            if line.startswith("#"):
                continue
            code, lat, lon, _name = line.rstrip("\n").split("\t")
            airports[code] = (float(lat), float(lon))
    flights = []
    with open(os.path.join(directory, "flights.tsv")) as lines:
        for line in lines:
            if line.startswith("#"):
                continue
            fields = line.split("\t")
            flights.append((int(fields[0]), int(fields[1]), int(fields[2]), fields[3], fields[4]))
    return airports, flights


def inside(box, point):
    lat, lon = point
    return box is None or (box[0] <= lon <= box[2] and box[1] <= lat <= box[3])


def expected_ids(data, now, departure, arrival, either=False):
    """The flights in the air at `now` departing in `departure` and (either: or) arriving in
    `arrival`; a box that is None asks nothing, and no box at all asks for every flight."""
    airports, flights = data
    wanted = []
    for fid, dep, arr, origin, dest in flights:
        if not dep <= now < arr:
            continue
        conditions = []
        if departure is not None:
            conditions.append(inside(departure, airports[origin]))
        if arrival is not None:
            conditions.append(inside(arrival, airports[dest]))
        if not conditions or (any(conditions) if either else all(conditions)):
            wanted.append(fid)
    return sorted(wanted)


def add_arguments(parser):
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--preflags", default="", help="mpiexec's extra flags, one string")
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--service", required=True, help="the flights program")
    parser.add_argument("--data", required=True, help="prepare_data.py's directory")
    parser.add_argument("--assets", required=True, help="bundle_assets.py's directory")
    parser.add_argument("--python", required=True, help="the Python that runs front.py")
