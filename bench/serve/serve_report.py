#!/usr/bin/env python3
"""redis-benchmark against redis-server and `mpidict serve` (2 and 4 ranks) on
this machine's loopback, interleaved; writes the tables of docs/serve.md
(between its serve-bench markers) and the raw runs as JSON lines.

    python3 bench/serve/serve_report.py --build-dir build [--reps 3] [--quick]
    make serve-report

For each repetition, each server in turn (the order alternating between
repetitions) (redis-server, serve at 2 ranks, serve
at 4 ranks) is started on free ports, loaded with a sorted set of 1000 members
(scores 0-999), and driven by redis-benchmark -c 50 with -P 1 and -P 16 for SET,
GET, INCR, ZADD and ZRANGEBYSCORE bench:zset 100 199 (100 members per reply),
in two client layouts:

  one port   one redis-benchmark -c 50 on the server's (rank 0's) port;
  spread     N redis-benchmark processes with 50/N clients each, N = the
             service's rank count, each on its own rank's port (redis-server:
             the same N processes on its one port); the rate is their sum.

Each figure is the median over the repetitions; ratios are ours / redis-server
of the same repetition's medians. The machine's 1-minute load average is
recorded with every run: on a shared 2-core machine the numbers are noisy.
"""

import argparse
import csv
import io
import json
import os
import re
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = ["SET", "GET", "INCR", "ZADD", "ZRANGEBYSCORE"]
ZRANGE_COMMAND = ["ZRANGEBYSCORE", "bench:zset", "100", "199"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def wait_port(port, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


class Server:
    def __init__(self, kind, ranks, build_dir, extra):
        self.kind, self.ranks, self.extra = kind, ranks, extra
        self.build_dir = build_dir
        self.process, self.ports = None, []
        self.output = tempfile.TemporaryFile(mode="w+")

    def __enter__(self):
        if self.kind == "redis-server":
            port = free_port()
            self.process = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                             "--appendonly", "no"], stdout=self.output, stderr=subprocess.STDOUT,
                                            start_new_session=True)
            wait_port(port)
            self.ports = [port]
        else:
            words = shlex.split(self.extra)
            # A design may name another build's program ("@PATH args"): a
            # baseline measured in the same run.
            program = words.pop(0)[1:] if words and words[0].startswith("@") else \
                os.path.join(self.build_dir, "apps", "serve", "serve")
            command = [os.path.join(ROOT, "scripts", "mpirun.sh"), "-n", str(self.ranks), program, "--port", "0"] + words
            self.process = subprocess.Popen(command, stdout=self.output, stderr=subprocess.STDOUT,
                                            start_new_session=True)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                self.output.seek(0)
                found = re.search(r"listening on(( [0-9.]+:\d+)+)", self.output.read())
                if found:
                    self.ports = [int(p.split(":")[1]) for p in found.group(1).split()]
                    break
                time.sleep(0.1)
            else:
                raise RuntimeError("mpidict serve did not start")
        # The sorted set ZRANGEBYSCORE reads: 1000 members, scores 0-999.
        script = "".join(f"ZADD bench:zset {i} member:{i:04d}\n" for i in range(1000))
        subprocess.run(["redis-cli", "-p", str(self.ports[0])], input=script, capture_output=True, text=True,
                       check=True, timeout=120)
        return self

    def __exit__(self, *exc):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)


def redis_benchmark(port, clients, requests, pipeline, test):
    base = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", str(clients), "-n", str(requests),
            "-P", str(pipeline), "-r", "100000", "--csv"]
    if test == "ZRANGEBYSCORE":
        return base + ZRANGE_COMMAND
    return base + ["-t", test.lower()]


def run_layout(server, layout, processes, pipeline, test, requests):
    """Starts the redis-benchmark processes at once; returns the summed rate (requests/s)."""
    ports = [server.ports[i % len(server.ports)] for i in range(processes)] if layout == "spread" else \
        [server.ports[0]]
    counts = [50 // len(ports) + (1 if i < 50 % len(ports) else 0) for i in range(len(ports))]
    commands = [redis_benchmark(port, count, max(1000, requests * count // 50), pipeline, test)
                for port, count in zip(ports, counts)]
    started = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in commands]
    total = 0.0
    p50 = []
    for p in started:
        out, err = p.communicate(timeout=600)
        rows = list(csv.reader(io.StringIO(out)))
        rate = [float(row[1]) for row in rows[1:] if len(row) > 1]
        if p.returncode != 0 or not rate:
            raise RuntimeError(f"redis-benchmark failed: {' '.join(commands[0])}\n{out}\n{err}")
        total += rate[0]
        p50 += [float(row[4]) for row in rows[1:] if len(row) > 4][:1]
    return total, statistics.median(p50) if p50 else None, [" ".join(shlex.quote(w) for w in c) for c in commands]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="fewer requests (a smoke run)")
    parser.add_argument("--ranks", default="2,4")
    parser.add_argument("--layouts", default="one port,spread")
    parser.add_argument("--runs", default=os.path.join(ROOT, "docs", "figures", "serve_runs.jsonl"))
    parser.add_argument("--doc", default=os.path.join(ROOT, "docs", "serve.md"))
    parser.add_argument("--no-doc", action="store_true")
    parser.add_argument("--designs", default="yield=--wait-us 0;wait 50 us=--wait-us 50",
                        help="the service's variants to compare, 'label=arguments;...'; arguments that begin "
                             "with @PATH run the program PATH (another build's apps/serve/serve) instead")
    parser.add_argument("--tests", default=",".join(TESTS), help="a subset of " + ",".join(TESTS))
    parser.add_argument("--pipelines", default="1,16", help="the -P values")
    args = parser.parse_args()
    tests = [t for t in args.tests.upper().split(",") if t]
    pipelines = [int(p) for p in args.pipelines.split(",")]
    if not set(tests) <= set(TESTS) or not set(pipelines) <= {1, 16}:
        sys.exit(f"serve_report: --tests takes {','.join(TESTS)} and --pipelines 1,16")
    for tool in ("redis-server", "redis-benchmark", "redis-cli"):
        if subprocess.run(["which", tool], capture_output=True).returncode != 0:
            sys.exit(f"serve_report: {tool} not found (scripts/install_deps.sh installs redis-server and redis-tools)")
    requests = {1: 20000, 16: 200000} if args.quick else {1: 60000, 16: 600000}
    rank_counts = [int(r) for r in args.ranks.split(",")]
    layouts = args.layouts.split(",")
    designs = [tuple(d.split("=", 1)) for d in args.designs.split(";")]
    configs = [("redis-server", 1, "", "")] + [("mpidict serve", r, label, extra) for r in rank_counts
                                                for label, extra in designs]
    results = []  # dicts
    began = time.time()
    for rep in range(args.reps):
        # The order alternates: redis-server first in even repetitions, last in odd ones.
        for kind, ranks, design, extra in (configs if rep % 2 == 0 else list(reversed(configs))):
            with Server(kind, ranks, args.build_dir, extra) as server:
                for layout in layouts:
                    # redis-server gets the client layout of each rank count it is compared with.
                    process_counts = rank_counts if kind == "redis-server" and layout == "spread" else \
                        ([ranks] if layout == "spread" else [1])
                    for processes in process_counts:
                        for pipeline in pipelines:
                            for test in tests:
                                load = load_average()
                                rate, p50_ms, commands = run_layout(server, layout, processes, pipeline, test,
                                                            requests[pipeline])
                                row = {"rep": rep, "server": kind, "ranks": ranks, "design": design,
                                       "serve_args": extra, "layout": layout,
                                       "processes": processes, "pipeline": pipeline, "test": test, "rate": rate, "p50_ms": p50_ms,
                                       "load": load, "cores": os.cpu_count(),
                                       "oversubscribed": load > (os.cpu_count() or 1), "commands": commands}
                                results.append(row)
                                print(json.dumps(row), flush=True)
    os.makedirs(os.path.dirname(args.runs), exist_ok=True)
    with open(args.runs, "a") as f:
        for row in results:
            f.write(json.dumps(dict(row, date=time.strftime("%Y-%m-%d", time.gmtime(began)))) + "\n")

    def median(kind, ranks, layout, processes, pipeline, test, design="", field="rate"):
        rates = [r[field] for r in results if r["server"] == kind and r["ranks"] == ranks and r["layout"] == layout
                 and r["design"] == design
                 and r["processes"] == processes and r["pipeline"] == pipeline and r["test"] == test
                 and r.get(field) is not None]
        return statistics.median(rates) if rates else None

    loads = [r["load"] for r in results]
    lines = [f"Generated by `python3 bench/serve/serve_report.py` (`make serve-report`) on "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(began))}: {args.reps} interleaved repetitions, "
             f"medians; 2 cores shared with other work, 1-minute load average {min(loads):.1f}-{max(loads):.1f} "
             f"during the runs (noisy: compare ratios, not rates). Requests per run: {requests[1]:,} at -P 1, "
             f"{requests[16]:,} at -P 16; -c 50 in total, -r 100000; ZRANGEBYSCORE is "
             f"`{' '.join(ZRANGE_COMMAND)}` (100 members) on a set of 1000. Designs of the service: "
             + "; ".join(f"{label}: `serve --port 0 {extra}`" for label, extra in designs) + ".", ""]
    for layout in layouts:
        for ranks in rank_counts:
            processes = ranks if layout == "spread" else 1
            lines.append(f"**{ranks} ranks, {layout}** ({processes} redis-benchmark process"
                         f"{'es' if processes > 1 else ''}):")
            lines.append("")
            header = "| test | -P | redis-server ops/s |" + "".join(f" serve ({label}) ops/s | ratio |"
                                                                   for label, _ in designs)
            lines.append(header)
            lines.append("|---|---:|---:|" + "---:|---:|" * len(designs))
            for pipeline in pipelines:
                for test in tests:
                    theirs = median("redis-server", 1, layout, processes, pipeline, test)
                    if theirs is None:
                        continue
                    row = f"| {test} | {pipeline} | {theirs:,.0f} |"
                    for label, _ in designs:
                        ours = median("mpidict serve", ranks, layout, processes, pipeline, test, label)
                        row += f" {ours:,.0f} | {ours / theirs:.2f} |" if ours else " - | - |"
                    lines.append(row)
            lines.append("")
            lines.append("Median latency (redis-benchmark's p50, ms) of the same runs:")
            lines.append("")
            lines.append("| test | -P | redis-server |" + "".join(f" serve ({label}) |" for label, _ in designs))
            lines.append("|---|---:|---:|" + "---:|" * len(designs))
            for pipeline in pipelines:
                for test in tests:
                    theirs = median("redis-server", 1, layout, processes, pipeline, test, field="p50_ms")
                    if theirs is None:
                        continue
                    row = f"| {test} | {pipeline} | {theirs:.3f} |"
                    for label, _ in designs:
                        ours = median("mpidict serve", ranks, layout, processes, pipeline, test, label, "p50_ms")
                        row += f" {ours:.3f} |" if ours is not None else " - |"
                    lines.append(row)
            lines.append("")
    example = [r for r in results if r["server"] == "mpidict serve" and r["pipeline"] == 16 and r["test"] == "GET"]
    if example:
        lines.append("One run's commands (GET, -P 16, mpidict serve):")
        lines.append("")
        lines.append("```")
        lines.extend(example[-1]["commands"])
        lines.append("```")
    table = "\n".join(lines)
    print(table)
    if not args.no_doc:
        with open(args.doc) as f:
            doc = f.read()
        begin, end = "<!-- serve-bench:begin -->", "<!-- serve-bench:end -->"
        if begin in doc and end in doc:
            doc = doc[:doc.index(begin) + len(begin)] + "\n" + table + "\n" + doc[doc.index(end):]
            with open(args.doc, "w") as f:
                f.write(doc)


if __name__ == "__main__":
    main()
