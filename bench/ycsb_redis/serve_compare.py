#!/usr/bin/env python3
"""YCSB A-F through YCSB 0.17.0's client and the project's Redis binding
(org.mpidict.ycsb.RedisClient, Jedis 2.9.0; bench/ycsb_redis) against redis-server and against
`mpidict serve` at 2 and 4 ranks, on this machine's loopback, interleaved;
writes the tables of docs/serve.md and docs/ycsb.md (between their
ycsb-serve markers), a plot docs/figures/ycsb_serve.png and the raw runs
docs/figures/ycsb_serve_runs.json.

    python3 bench/ycsb_redis/serve_compare.py --build-dir build [--reps 3]
        [--records 10000] [--operations 20000] [--threads 8]

Every repetition starts each server in turn (the order rotating between
repetitions), every one with a password (redis.password) and bound to
127.0.0.1: redis-server --requirepass (no persistence), serve -n 2 and -n 4
--requirepass (the client on rank 0's port; rank 0 forwards to the owners).
For each workload: FLUSHALL, YCSB's load phase, then its run phase, the same
client (site.ycsb.Client -threads T, one Jedis connection per thread, one
command in flight each) against every server.  Workload E runs a tenth of
the operations (a scan is up to 100 round trips: YCSB's binding reads each
record of a scan with its own HGETALL).  Each figure is the median over the
repetitions; the 1-minute load average is recorded with every run.
"""

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROJECT = os.path.join(ROOT, "bench", "ycsb_redis")
WORKLOADS_DIR = os.path.join(ROOT, "data", "ycsb")
WORKLOADS = ["a", "b", "c", "d", "e", "f"]
PASSWORD = "ycsb-serve-compare"
TARGETS = [("redis-server", 1), ("serve", 2), ("serve", 4)]
OPS = {"READ": "read", "UPDATE": "update", "INSERT": "insert", "SCAN": "scan",
       "READ-MODIFY-WRITE": "read_modify_write"}


def label(kind, ranks):
    return "redis-server" if kind == "redis-server" else f"mpidict serve, {ranks} ranks"


# The loopback helpers of bench/serve/serve_report.py (free port, load average, wait for a listener).
sys.path.insert(0, os.path.join(ROOT, "bench", "serve"))
from serve_report import free_port, load_average, wait_port  # noqa: E402


class Server:
    def __init__(self, kind, ranks, build_dir, serve_args=""):
        self.kind, self.ranks, self.build_dir, self.serve_args = kind, ranks, build_dir, serve_args
        self.process, self.port = None, None
        self.output = tempfile.TemporaryFile(mode="w+")
        self.dir = tempfile.mkdtemp(prefix="ycsb-serve-")

    def __enter__(self):
        if self.kind == "redis-server":
            self.port = free_port()
            self.process = subprocess.Popen(
                ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--requirepass", PASSWORD, "--dir", self.dir],
                stdout=self.output, stderr=subprocess.STDOUT, start_new_session=True)
            wait_port(self.port, seconds=60)
        else:
            # --duration: the job ends by itself should this script be killed.
            command = [os.path.join(ROOT, "scripts", "mpirun.sh"), "-n", str(self.ranks),
                       os.path.join(self.build_dir, "apps", "serve", "serve"), "--port", "0",
                       "--requirepass", PASSWORD, "--duration", "3600"] + shlex.split(self.serve_args)
            self.process = subprocess.Popen(command, stdout=self.output, stderr=subprocess.STDOUT,
                                            start_new_session=True)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                self.output.seek(0)
                found = re.search(r"listening on(( [0-9.]+:\d+)+)", self.output.read())
                if found:
                    self.port = int(found.group(1).split()[0].split(":")[1])
                    break
                if self.process.poll() is not None:
                    break
                time.sleep(0.1)
            else:
                raise RuntimeError("mpidict serve did not start")
            if self.port is None:
                self.output.seek(0)
                raise RuntimeError("mpidict serve did not start:\n" + self.output.read())
        return self

    def cli(self, *words):
        return subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(self.port), "-a", PASSWORD,
                               "--no-auth-warning"] + list(words), capture_output=True, text=True, check=True,
                              timeout=120).stdout.strip()

    def __exit__(self, *exc):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)


def ycsb(classpath, phase, workload, port, records, operations, threads):
    command = ["java", "-cp", classpath, "site.ycsb.Client", phase, "-db", "org.mpidict.ycsb.RedisClient",
               "-P", os.path.join(WORKLOADS_DIR, "workload" + workload), "-p", f"recordcount={records}",
               "-p", f"operationcount={operations}", "-p", "redis.host=127.0.0.1", "-p", f"redis.port={port}",
               "-p", f"redis.password={PASSWORD}", "-p", "hdrhistogram.percentiles=50,99,99.9",
               "-threads", str(threads)]
    shown = " ".join(shlex.quote(w) for w in command).replace(classpath, "CP") \
        .replace(WORKLOADS_DIR + "/", "data/ycsb/").replace(f"redis.port={port}", "redis.port=PORT")
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    result = {"command": shown, "latency": {}, "errors": []}
    for line in done.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3:
            continue
        section, name, value = parts[0].strip("[]"), parts[1], parts[2]
        if section == "OVERALL" and name == "Throughput(ops/sec)":
            result["throughput"] = float(value)
        op = OPS.get(section)
        match = re.match(r"(\d+(?:\.\d+)?)(?:th)?PercentileLatency\(us\)", name)
        if op and match:
            key = {"50": "p50", "99": "p99", "99.9": "p999"}.get(match.group(1))
            if key:
                result["latency"].setdefault(op, {})[key] = float(value)
        if section.endswith("-FAILED") and name == "Operations":
            result["errors"].append(f"{section} {value}")
        elif "Return=" in name and not name.endswith("=OK"):
            result["errors"].append(f"{section} {name} {value}")
    if done.returncode != 0 or "throughput" not in result:
        raise RuntimeError(f"{shown} failed (exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return result


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def build_tables(data):
    targets = [label(k, r) for k, r in TARGETS]
    lines = []
    out = lines.append
    extra = ""
    if data.get("targets", "redis,2,4") != "redis,2,4":
        extra += f" --targets {data['targets']}"
    if data.get("serve_args"):
        extra += f" --serve-args '{data['serve_args']}'"
    out(f"Generated by `python3 bench/ycsb_redis/serve_compare.py --reps {data['reps']} --records "
        f"{data['records']} --operations {data['operations']} --threads {data['threads']}{extra}` on {data['date']} "
        f"({data['cores']} cores, shared with other jobs; 1-minute load average {data['load_min']:.1f}-"
        f"{data['load_max']:.1f} during the runs, so every number is noisy). {data['server']}; YCSB 0.17.0's "
        f"Client with the project's Redis binding (org.mpidict.ycsb.RedisClient on Jedis), `-threads {data['threads']}` (one "
        f"connection and one command in flight per thread), the same against every server, each with a "
        f"password, on 127.0.0.1; mpidict serve's client on rank 0's port. {data['records']:,} records of 10 "
        f"fields x 100 bytes, {data['operations']:,} operations (E: {data['operations'] // 10:,}). Medians of "
        f"{data['reps']} runs, servers interleaved.")
    out("")
    out("![YCSB through its Redis binding](figures/ycsb_serve.png)")
    out("")
    out("**Run-phase throughput, thousand operations/s** (load phase in parentheses; ratio = serve / "
        "redis-server):")
    out("")
    ratio_names = [f"{r} ranks / redis" for k, r in TARGETS[1:]] if TARGETS[0][0] == "redis-server" else []
    out("| workload | " + " | ".join(targets + ratio_names) + " |")
    out("|---|" + "---|" * (len(targets) + len(ratio_names)))
    for w in WORKLOADS:
        cells, runs = [], []
        for t in targets:
            m = data["medians"][t][w]
            runs.append(m["run"])
            cells.append(f"{m['run'] / 1000:.1f} ({m['load'] / 1000:.1f})")
        ratios = [f"{runs[i] / runs[0]:.2f}x" for i in range(1, len(runs))] if ratio_names else []
        out(f"| {w.upper()} | " + " | ".join(cells + ratios) + " |")
    out("")
    out("**Latency, microseconds, p50 / p99 / p99.9** (median over the repetitions of each run's percentile):")
    out("")
    out("| workload | operation | " + " | ".join(targets) + " |")
    out("|---|---|" + "---|" * len(targets))
    for w in WORKLOADS:
        ops = sorted({op for t in targets for op in data["medians"][t][w]["latency"]})
        for op in ops:
            cells = []
            for t in targets:
                lat = data["medians"][t][w]["latency"].get(op)
                cells.append(" / ".join(f"{lat[k]:.0f}" if lat and lat.get(k) is not None else "-"
                                        for k in ("p50", "p99", "p999")))
            out(f"| {w.upper()} | {op} | " + " | ".join(cells) + " |")
    errors = [f"{t} {w}: {e}" for t in targets for w in WORKLOADS for e in data["errors"][t][w]]
    out("")
    out("Errors reported by YCSB: " + ("; ".join(sorted(set(errors))) if errors else "none") + ".")
    out("")
    out("Commands (CP = the jar bench/ycsb_redis builds and its dependencies; PORT = the server's or rank 0's "
        "port; the other runs differ in workload):")
    out("")
    out("```")
    out(data["example_load"])
    out(data["example_run"])
    out("scripts/mpirun.sh -n 2 build/apps/serve/serve --port 0 --requirepass PASSWORD --duration 3600"
        + (" " + data["serve_args"] if data.get("serve_args") else ""))
    out("redis-server --port PORT --bind 127.0.0.1 --save '' --appendonly no --requirepass PASSWORD")
    out("```")
    return "\n".join(lines) + "\n"


def plot(data, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    targets = [label(k, r) for k, r in TARGETS]
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(targets)
    for i, t in enumerate(targets):
        xs = [j + (i - (len(targets) - 1) / 2) * width for j in range(len(WORKLOADS))]
        ys = [data["medians"][t][w]["run"] / 1000 for w in WORKLOADS]
        ax.bar(xs, ys, width, label=t)
    ax.set_xticks(range(len(WORKLOADS)))
    ax.set_xticklabels([w.upper() for w in WORKLOADS])
    ax.set_xlabel("YCSB workload")
    ax.set_ylabel("run-phase throughput, thousand ops/s")
    ax.set_title(f"YCSB 0.17.0 Redis binding, -threads {data['threads']}, median of {data['reps']} "
                 f"(load avg {data['load_min']:.0f}-{data['load_max']:.0f} on {data['cores']} cores)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def write_section(path, text, name="ycsb-serve"):
    with open(path) as f:
        page = f.read()
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    if begin not in page or end not in page:
        sys.exit(f"serve_compare: {path} lacks the markers {begin} / {end}")
    head, rest = page.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w") as f:
        f.write(head + begin + "\n" + text + end + tail)


def summarise(data):
    data["medians"], data["errors"] = {}, {}
    for kind, ranks in TARGETS:
        t = label(kind, ranks)
        data["medians"][t], data["errors"][t] = {}, {}
        for w in WORKLOADS:
            runs = [r for r in data["runs"] if r["target"] == t and r["workload"] == w]
            ops = sorted({op for r in runs for op in r["run"]["latency"]})
            data["medians"][t][w] = {
                "run": median([r["run"]["throughput"] for r in runs]),
                "load": median([r["load"]["throughput"] for r in runs]),
                "latency": {op: {k: median([r["run"]["latency"].get(op, {}).get(k) for r in runs])
                                 for k in ("p50", "p99", "p999")} for op in ops}}
            data["errors"][t][w] = sorted({e for r in runs for e in r["run"]["errors"] + r["load"]["errors"]})
    loads = [r["load_average"] for r in data["runs"]]
    data["load_min"], data["load_max"] = min(loads), max(loads)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--records", type=int, default=10000)
    parser.add_argument("--operations", type=int, default=20000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--workloads", default="abcdef")
    parser.add_argument("--runs", default=os.path.join(ROOT, "docs", "figures", "ycsb_serve_runs.json"))
    parser.add_argument("--replot", action="store_true", help="only rewrite the tables and plot from --runs")
    parser.add_argument("--no-docs", action="store_true")
    parser.add_argument("--targets", default="redis,2,4",
                        help="redis-server and/or serve rank counts, comma-separated (a second design: --no-docs)")
    parser.add_argument("--section", default="ycsb-serve",
                        help="the marker pair to rewrite; another than ycsb-serve: docs/serve.md only, no plot")
    parser.add_argument("--serve-args", default="", help="more options of serve, e.g. '--wait-us 50'")
    args = parser.parse_args()
    global TARGETS
    TARGETS = [("redis-server", 1) if t == "redis" else ("serve", int(t)) for t in args.targets.split(",")]
    if args.replot:
        with open(args.runs) as f:
            data = json.load(f)
        TARGETS = [("redis-server", 1) if t == "redis" else ("serve", int(t))
                   for t in data.get("targets", "redis,2,4").split(",")]
    else:
        missing = [t for t in ("java", "mvn", "redis-server", "redis-cli") if shutil.which(t) is None]
        if missing:
            sys.exit("serve_compare: missing " + ", ".join(missing) + " (scripts/install_deps.sh --ycsb-reference)")
        if not os.path.exists(os.path.join(args.build_dir, "apps", "serve", "serve")):
            sys.exit(f"serve_compare: no {args.build_dir}/apps/serve/serve (cmake --build build --target serve)")
        print("  mvn -q -B -f bench/ycsb_redis/pom.xml package", file=sys.stderr, flush=True)
        subprocess.run(["mvn", "-q", "-B", "-f", os.path.join(PROJECT, "pom.xml"), "package", "-DskipTests"],
                       check=True, stdout=subprocess.DEVNULL, timeout=1200)
        classpath = os.path.join(PROJECT, "target", "ycsb-redis-reference-1.0.jar") + ":" + \
            os.path.join(PROJECT, "target", "lib", "*")
        workloads = [w for w in args.workloads]
        version = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.strip()
        data = {"date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(), "kernel": platform.release(),
                "server": version.split(" sha=")[0], "reps": args.reps, "records": args.records,
                "operations": args.operations, "threads": args.threads, "serve_args": args.serve_args,
                "targets": args.targets, "runs": []}
        for rep in range(args.reps):
            order = TARGETS[rep % len(TARGETS):] + TARGETS[:rep % len(TARGETS)]
            for kind, ranks in order:
                with Server(kind, ranks, args.build_dir, args.serve_args) as server:
                    for w in workloads:
                        server.cli("FLUSHALL")
                        ops = args.operations // 10 if w == "e" else args.operations
                        before = load_average()
                        loaded = ycsb(classpath, "-load", w, server.port, args.records, ops, args.threads)
                        ran = ycsb(classpath, "-t", w, server.port, args.records, ops, args.threads)
                        keys = int(server.cli("DBSIZE"))
                        run = {"rep": rep, "target": label(kind, ranks), "workload": w,
                               "load_average": max(before, load_average()), "load": loaded, "run": ran,
                               "dbsize": keys}
                        data["runs"].append(run)
                        print(f"  rep {rep} {label(kind, ranks):24s} {w.upper()}: load {loaded['throughput']:8.0f}"
                              f" run {ran['throughput']:8.0f} ops/s, DBSIZE {keys}, load avg "
                              f"{run['load_average']:.1f}{' ERRORS ' + str(ran['errors']) if ran['errors'] else ''}",
                              file=sys.stderr, flush=True)
                        data["example_load"], data["example_run"] = loaded["command"], ran["command"]
        with open(args.runs, "w") as f:
            json.dump(data, f, indent=1)
    global WORKLOADS
    WORKLOADS = [w for w in WORKLOADS if any(r["workload"] == w for r in data["runs"])]
    summarise(data)
    text = build_tables(data)
    print(text)
    if not args.no_docs and args.section != "ycsb-serve":
        write_section(os.path.join(ROOT, "docs", "serve.md"), text.replace(
            "![YCSB through its Redis binding](figures/ycsb_serve.png)\n\n", ""), args.section)
    elif not args.no_docs:
        plot(data, os.path.join(ROOT, "docs", "figures", "ycsb_serve.png"))
        for page in ("serve.md", "ycsb.md"):
            write_section(os.path.join(ROOT, "docs", page), text)


if __name__ == "__main__":
    main()
