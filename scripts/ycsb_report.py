#!/usr/bin/env python3
"""Regenerates the results section of docs/ycsb.md (between <!-- ycsb-report:begin -->
and <!-- ycsb-report:end -->) and docs/figures/ycsb_*.png: YCSB's core workloads A-F
on mpidict's containers.  The reference point outside the project, YCSB's own client
and Redis binding against redis-server and `mpidict serve`, is
bench/ycsb_redis/serve_compare.py (make ycsb-serve-report).

    /usr/bin/python3 scripts/ycsb_report.py [--build-dir build] [--ranks 2,4]
        [--records 100000] [--operations 100000] [--window 16] [--quick] [--no-redis] [--replot]

mpidict runs: apps/ycsb (build/apps/ycsb/ycsb) with the workload files of
data/ycsb (the repository's statement of YCSB A-F), -p recordcount/operationcount, on skiplist_map in each
consistency mode, hash_map and linear_hash_map (E only on skiplist_map), every rank a
client with --window operations in flight.  --quick: 5,000 records and operations at 2 ranks (a smoke test).  The
measurements go to build/ycsb_report.json; --replot rewrites the section from it.
Needs matplotlib (Debian: python3-matplotlib; run with /usr/bin/python3 if another
python3 comes first).  Environment: MPIEXEC overrides the launcher.
"""

import argparse
import datetime
import json
import os
import re
import shlex
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS = os.path.join(ROOT, "data", "ycsb")   # the repository's statement of YCSB A-F
CONFIGS = [  # (label, container, consistency)
    ("skiplist total_order", "skiplist", "total_order"),
    ("skiplist sequential", "skiplist", "sequential"),
    ("skiplist none", "skiplist", "none"),
    ("hash_map", "hash", None),
    ("linear_hash_map", "linear", None),
]
REDIS_PORT = 16379


def shown_command(command, launcher, build):
    text = "scripts/mpirun.sh " + " ".join(shlex.quote(part) for part in command[len(launcher):])
    return text.replace(build + "/", "build/").replace(WORKLOADS + "/", "data/ycsb/")


def run_mpidict(build, ranks, workload, container, mode, records, operations, window):
    launcher = shlex.split(os.environ.get("MPIEXEC", os.path.join(ROOT, "scripts", "mpirun.sh")))
    command = launcher + ["-n", str(ranks), os.path.join(build, "apps", "ycsb", "ycsb"), "--json", "--quiet",
                          "--workload", os.path.join(WORKLOADS, "workload" + workload),
                          "-p", f"recordcount={records}", "-p", f"operationcount={operations}",
                          "--container", container, "--window", str(window)]
    if mode:
        command += ["--consistency", mode]
    shown = shown_command(command, launcher, build)
    print("  " + shown, file=sys.stderr, flush=True)
    started = time.time()
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=1800)
    print(f"    {time.time() - started:.1f} s", file=sys.stderr, flush=True)
    if result.returncode != 0:
        sys.exit(f"ycsb_report: {shown} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    run = {"command": shown, "wall_seconds": time.time() - started, "latency": {}}
    for line in result.stdout.splitlines():
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        metric, phase = record["metric"], record.get("phase")
        run["load_average"] = record.get("load_average")
        if metric == "throughput":
            run[phase + "_throughput"] = record["value"]
        elif metric.startswith("latency_") and phase == "run":
            run["latency"].setdefault(record["operation"], {})[metric[len("latency_"):]] = record["value"]
        elif metric == "scanned_records" and phase == "run":
            run[metric] = record["value"]
        elif metric == "verified":
            run["verified"] = record["value"]
    if run.get("verified") != 1:
        sys.exit(f"ycsb_report: {shown} did not verify")
    return run


def run_ranges(build, ranks, args_list):
    launcher = shlex.split(os.environ.get("MPIEXEC", os.path.join(ROOT, "scripts", "mpirun.sh")))
    command = launcher + ["-n", str(ranks), os.path.join(build, "apps", "ycsb", "skiplist_ranges"), "--json"] + args_list
    shown = shown_command(command, launcher, build)
    print("  " + shown, file=sys.stderr, flush=True)
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=1800)
    if result.returncode != 0:
        sys.exit(f"ycsb_report: {shown} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    run = {"command": shown}
    for line in result.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            run[record["metric"]] = record["value"]
            run["box"] = record.get("box")
    if run.get("verified") != 1:
        sys.exit(f"ycsb_report: {shown} did not verify")
    return run


# Seed 004 Section 3.2-3.3: (figure, label, skiplist_ranges arguments, operations per rank).
def range_runs(quick):
    scale = 0.1 if quick else 1
    runs = []
    for size, operations in ((100, 40000), (1000, 8000), (10000, 800)):
        runs.append(("9", f"range {size}", ["--experiment", "size", "--size", str(size)], operations))
    for size, figure in ((1000, "10"), (100, "11")):
        runs.append((figure, f"mix find {size}", ["--experiment", "mix", "--mix", "find", "--size", str(size)], 200000))
        runs.append((figure, f"mix range {size}", ["--experiment", "mix", "--mix", "range", "--size", str(size)],
                     8000 if size == 1000 else 40000))
    for d in range(1, 7):
        runs.append(("12", f"D={d}", ["--experiment", "dimensions", "--dimensions", str(d)], 1000))
    return [(f, label, a + ["--operations", str(max(4, int(o * scale)))], o) for f, label, a, o in runs]


def run_all_ranges(data, build, args):
    range_ranks = [int(r) for r in ("1,2" if args.quick else args.range_ranks).split(",")]
    range_keys = 16384 if args.quick else args.range_keys
    plan = range_runs(args.quick)
    data["ranges"] = {"ranks": range_ranks, "keys": range_keys, "window": 16,
                      "plan": [(f, label, o if not args.quick else max(4, int(o * 0.1))) for f, label, _, o in plan],
                      "runs": {}}
    for ranks in range_ranks:
        for figure, label, arguments, _ in plan:
            data["ranges"]["runs"].setdefault(str(ranks), {})[label] = run_ranges(
                build, ranks, arguments + ["--keys", str(range_keys), "--window", "16"])


def plot(data, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ranks_list = data["ranks"]
    workloads = data["workloads"]
    labels = [label for label, _, _ in CONFIGS] + (["YCSB client + Redis"] if data.get("redis") else [])
    figure, axes = plt.subplots(1, len(ranks_list), figsize=(6.5 * len(ranks_list), 4.2), squeeze=False)
    width = 0.8 / len(labels)
    for column, ranks in enumerate(ranks_list):
        axis = axes[0][column]
        for index, label in enumerate(labels):
            values = []
            for workload in workloads:
                if label == "YCSB client + Redis":
                    run = data["redis"]["runs"].get(str(ranks), {}).get(workload)
                else:
                    run = data["runs"].get(str(ranks), {}).get(workload, {}).get(label)
                values.append(run["run_throughput"] / 1e3 if run else 0)
            positions = [w + (index - (len(labels) - 1) / 2) * width for w in range(len(workloads))]
            axis.bar(positions, values, width, label=label)
        axis.set_xticks(range(len(workloads)))
        axis.set_xticklabels([w.upper() for w in workloads])
        axis.set_yscale("log")
        axis.set_ylabel("run phase, thousand operations/s (log)")
        oversubscribed = " (oversubscribed: 2 cores)" if ranks > (os.cpu_count() or 2) else ""
        axis.set_title(f"YCSB A-F, {ranks} ranks{oversubscribed}")
        axis.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    figure.suptitle(f"{data['records']:,} records of 10 x 100 bytes, {data['operations']:,} operations, "
                    f"window {data['window']} per rank", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def plot_ranges(data, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ranges = data["ranges"]
    ranks_list = ranges["ranks"]
    figure, axes = plt.subplots(2, 3, figsize=(16, 8.5))
    metrics = [("operations_per_second", "operations/s"), ("messages_per_second", "returned messages/s"),
               ("key_values_per_second", "returned key-values/s")]
    for column, (metric, name) in enumerate(metrics):
        axis = axes[0][column]
        for size in (100, 1000, 10000):
            label = f"range {size}"
            axis.plot(ranks_list, [ranges["runs"][str(r)][label][metric] for r in ranks_list], "o-",
                      label=f"{size} results")
        axis.set_yscale("log")
        axis.set_xlabel("ranks")
        axis.set_title(f"Fig. 9{'abc'[column]}: {name}, 100% range queries", fontsize=9)
        axis.set_xticks(ranks_list)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    for column, size in enumerate((1000, 100)):
        axis = axes[1][column]
        for kind, style in (("find", "s--"), ("range", "o-")):
            label = f"mix {kind} {size}"
            axis.plot(ranks_list, [ranges["runs"][str(r)][label]["operations_per_second"] for r in ranks_list], style,
                      label=f"60% {kind}: operations/s")
            axis.plot(ranks_list, [ranges["runs"][str(r)][label]["key_values_per_second"] for r in ranks_list], style,
                      alpha=0.5, label=f"60% {kind}: key-values/s")
        axis.set_yscale("log")
        axis.set_xlabel("ranks")
        axis.set_xticks(ranks_list)
        axis.set_title(f"Fig. {10 if size == 1000 else 11}: 20% insert, 20% delete, 60% find or range of {size}",
                       fontsize=9)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    axis = axes[1][2]
    top = ranks_list[-1]
    dims = list(range(1, 7))
    axis.plot(dims, [ranges["runs"][str(top)][f"D={d}"]["key_values_per_second"] for d in dims], "o-",
              label="key-values/s")
    axis.plot(dims, [ranges["runs"][str(top)][f"D={d}"]["messages_per_second"] for d in dims], "s--",
              label="messages/s")
    axis.set_yscale("log")
    axis.set_xlabel("dimensions D")
    axis.set_title(f"Fig. 12: pattern queries of at most 4,096 results, {top} ranks", fontsize=9)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    figure.suptitle("Seed 004's range experiments on skiplist_map (mode none; 2 cores: 3 and 4 ranks oversubscribed)",
                    fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def ranges_section(data):
    ranges = data["ranges"]
    lines = []
    out = lines.append
    out(f"Generated by `{data['command']}` on {data['date']}: `build/apps/ycsb/skiplist_ranges` on "
        f"{ranges['keys']:,} keys (mode none, {ranges['window']} queries in flight per rank), at "
        f"{', '.join(str(r) for r in ranges['ranks'])} ranks.  Rates are over every rank; "
        "messages are the range parts and point answers the callers received.")
    out("")
    out("![Seed 004 range experiments](figures/ycsb_ranges.png)")
    out("")
    header = ["run", "operations/rank"] + [f"{r} ranks: ops/s · msgs/s · kv/s" for r in ranges["ranks"]]
    out("| " + " | ".join(header) + " |")
    out("|" + "---|" * len(header))
    for figure, label, operations in ranges["plan"]:
        row = [f"Fig. {figure}: {label}", f"{operations:,}"]
        for r in ranges["ranks"]:
            run = ranges["runs"][str(r)][label]
            row.append(f"{run['operations_per_second']:,.0f} · {run['messages_per_second']:,.0f} · "
                       f"{run['key_values_per_second']:,.0f}")
        out("| " + " | ".join(row) + " |")
    out("")
    boxes = ", ".join(f"D={d}: {ranges['runs'][str(ranges['ranks'][0])][f'D={d}']['box']}" for d in range(1, 7))
    out(f"Pattern-query boxes (values per dimension): {boxes}.")
    out("")
    out("Commands (one per kind; the others differ in ranks and sizes):")
    out("")
    out("```")
    for label in ("range 1000", "mix find 1000", "mix range 1000", "D=3"):
        out(ranges["runs"][str(ranges["ranks"][-1])][label]["command"])
    out("```")
    return "\n".join(lines)


def section(data):
    lines = []
    out = lines.append
    out(f"Generated by `{data['command']}` on {data['date']} ({data['machine']}). "
        f"{data['records']:,} records of 10 fields x 100 bytes, {data['operations']:,} operations, "
        f"every rank a client with {data['window']} operations in flight; load average "
        f"{data['load_before']:.2f} before the runs.  Throughput is the run phase's "
        "(operations over the time from a barrier to the end of its flush); latencies are "
        "per operation in microseconds from the merged histograms.")
    out("")
    out("![YCSB throughput](figures/ycsb_throughput.png)")
    out("")
    labels = [label for label, _, _ in CONFIGS]
    redis = data.get("redis")
    for ranks in data["ranks"]:
        header = ["workload"] + labels + (["YCSB + Redis"] if redis else [])
        out(f"**Run-phase throughput, thousand operations/s, {ranks} ranks** "
            f"(load phase in parentheses){' — oversubscribed' if ranks > (os.cpu_count() or 2) else ''}:")
        out("")
        out("| " + " | ".join(header) + " |")
        out("|" + "---|" * len(header))
        for workload in data["workloads"]:
            row = [workload.upper()]
            for label in labels:
                run = data["runs"].get(str(ranks), {}).get(workload, {}).get(label)
                cell = "cannot scan"
                if run:
                    cell = f"{run['run_throughput'] / 1e3:.1f} ({run['load_throughput'] / 1e3:.0f})"
                    if run.get("operations", data["operations"]) != data["operations"]:
                        cell += f" [{run['operations']:,} ops]"
                row.append(cell)
            if redis:
                run = redis["runs"].get(str(ranks), {}).get(workload)
                row.append(f"{run['run_throughput'] / 1e3:.1f} ({run['load_throughput'] / 1e3:.0f})" if run else "-")
            out("| " + " | ".join(row) + " |")
        out("")
    ranks = data["ranks"][0]
    out(f"**Latency at {ranks} ranks, microseconds: p50 / p99 / p99.9 per operation type:**")
    out("")
    header = ["workload", "operation"] + labels + (["YCSB + Redis"] if redis else [])
    out("| " + " | ".join(header) + " |")
    out("|" + "---|" * len(header))
    for workload in data["workloads"]:
        operations = []
        for label in labels:
            run = data["runs"].get(str(ranks), {}).get(workload, {}).get(label)
            for op in (run or {}).get("latency", {}):
                if op not in operations:
                    operations.append(op)
        for op in operations:
            row = [workload.upper(), op]
            for label in labels:
                run = data["runs"].get(str(ranks), {}).get(workload, {}).get(label)
                value = (run or {}).get("latency", {}).get(op)
                row.append(f"{value['p50']:.0f} / {value['p99']:.0f} / {value['p999']:.0f}" if value else "-")
            if redis:
                value = redis["runs"].get(str(ranks), {}).get(workload, {}).get("latency", {}).get(op)
                row.append(f"{value.get('p50', 0):.0f} / {value.get('p99', 0):.0f} / {value.get('p999', 0):.0f}"
                           if value else "-")
            out("| " + " | ".join(row) + " |")
    out("")
    # The target of issue 14: workload C, skiplist none vs hash_map at 2 ranks.
    for ranks in data["ranks"]:
        c = data["runs"].get(str(ranks), {}).get("c", {})
        if "skiplist none" in c and "hash_map" in c:
            ratio = c["skiplist none"]["run_throughput"] / c["hash_map"]["run_throughput"]
            out(f"Workload C at {ranks} ranks: skiplist_map (none) / hash_map = **{ratio:.2f}**.")
    out("")
    if redis:
        out(f"Redis: {redis['server']}, on 127.0.0.1:{REDIS_PORT} without persistence, YCSB's Client "
            "(site.ycsb:core 0.17.0) with `-threads` equal to the rank count and the binding "
            "bench/ycsb_redis (Jedis 2.9.0, one connection per thread, scans through a sorted set of "
            "the keys).  Commands, with CP the jar and its dependencies:")
        out("")
        out("```")
        first = redis["runs"][str(data["ranks"][0])]["a"]
        out(first["load_command"])
        out(first["run_command"])
        out("```")
    else:
        out("Redis: YCSB's own client and Redis binding against redis-server and `mpidict serve` alike, "
            "in \"Against Redis, with the same client\" below (`make ycsb-serve-report`).")
    out("")
    out("mpidict commands (one per run; the others differ in workload, container and ranks):")
    out("")
    out("```")
    shown = set()
    for ranks in data["ranks"]:
        for label in labels:
            run = data["runs"].get(str(ranks), {}).get("a", {}).get(label)
            if run and label not in shown:
                shown.add(label)
                out(run["command"])
    out("```")
    return "\n".join(lines)


def write_section(text, name="ycsb-report"):
    path = os.path.join(ROOT, "docs", "ycsb.md")
    with open(path) as handle:
        page = handle.read()
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    if begin not in page or end not in page:
        sys.exit(f"ycsb_report: {path} lacks the markers {begin} / {end}")
    head, rest = page.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w") as handle:
        handle.write(head + begin + "\n" + text + "\n" + end + tail)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--ranks", default="2,4")
    parser.add_argument("--records", type=int, default=100000)
    parser.add_argument("--operations", type=int, default=100000)
    parser.add_argument("--window", type=int, default=16)
    parser.add_argument("--workloads", default="a,b,c,d,e,f")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-redis", action="store_true", help="ignored (Redis: make ycsb-serve-report)")
    parser.add_argument("--replot", action="store_true")
    parser.add_argument("--ranges-only", action="store_true",
                        help="rerun only the range experiments, keeping the YCSB runs of build/ycsb_report.json")
    parser.add_argument("--range-ranks", default="1,2,3,4")
    parser.add_argument("--range-keys", type=int, default=131072)
    args = parser.parse_args()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        sys.exit("ycsb_report: matplotlib is missing (Debian: apt-get install python3-matplotlib; "
                 "run this script with /usr/bin/python3 if another python3 comes first)")
    build = os.path.abspath(args.build_dir)
    store = os.path.join(build, "ycsb_report.json")
    if args.replot or args.ranges_only:
        with open(store) as handle:
            data = json.load(handle)
        if args.ranges_only:
            run_all_ranges(data, build, args)
            with open(store, "w") as handle:
                json.dump(data, handle, indent=1)
    else:
        if args.quick:
            args.records, args.operations, args.ranks = 5000, 5000, "2"
        ranks_list = [int(r) for r in args.ranks.split(",")]
        workloads = args.workloads.split(",")
        with open("/proc/loadavg") as handle:
            load_before = float(handle.read().split()[0])
        command = "/usr/bin/python3 scripts/ycsb_report.py" + ("" if not sys.argv[1:] else " " + " ".join(
            shlex.quote(a) for a in sys.argv[1:] if not a.startswith("--build-dir")))
        data = {"records": args.records, "operations": args.operations, "window": args.window,
                "ranks": ranks_list, "workloads": workloads, "runs": {}, "load_before": load_before,
                "date": datetime.date.today().isoformat(), "command": command,
                "machine": f"{os.cpu_count()} cores, {os.uname().sysname} {os.uname().release}"}
        for ranks in ranks_list:
            for workload in workloads:
                for label, container, mode in CONFIGS:
                    if workload == "e" and container != "skiplist":
                        continue
                    operations = args.operations
                    if mode == "total_order":
                        # Every request through the head: a tenth of the operations (a hundredth
                        # for E, whose scans split over the towers run at tens per second).
                        operations = max(1, args.operations // (100 if workload == "e" else 10))
                    run = run_mpidict(build, ranks, workload, container, mode, args.records, operations,
                                      args.window)
                    run["operations"] = operations
                    data["runs"].setdefault(str(ranks), {}).setdefault(workload, {})[label] = run
        run_all_ranges(data, build, args)
        # The Redis reference is bench/ycsb_redis/serve_compare.py (make ycsb-serve-report): YCSB's own
        # client and Redis binding against redis-server and mpidict serve alike.
        with open(store, "w") as handle:
            json.dump(data, handle, indent=1)
    plot(data, os.path.join(ROOT, "docs", "figures", "ycsb_throughput.png"))
    write_section(section(data))
    if "ranges" in data:
        plot_ranges(data, os.path.join(ROOT, "docs", "figures", "ycsb_ranges.png"))
        write_section(ranges_section(data), "ranges-report")
    print("ycsb_report: wrote docs/ycsb.md, docs/figures/ycsb_throughput.png and ycsb_ranges.png", file=sys.stderr)


if __name__ == "__main__":
    main()
