#!/usr/bin/env python3
"""Regenerate the hash_map side-by-side table in docs/benchmarks-hash_map.md (issue 47).

Runs bench/hash_map_throughput at each rank count of --ranks (default 1, 2, 4)
and each key count of --keys (default 1,000,000 and 4,000,000 keys per rank),
medians of --reps repetitions (default 5; ours, the bulk Alltoallv exchange
into our table and the same exchange into abseil's flat_hash_map alternate
inside each run), collects its JSON lines, and rewrites the part of
docs/benchmarks-hash_map.md between the markers

    <!-- BEGIN GENERATED: scripts/hash_map_table.py -->
    <!-- END GENERATED: scripts/hash_map_table.py -->

with one table: insert and find rates of ours, bulk and abseil-bulk, the
ratios ours/bulk, the latency against a ping-pong, and the machine state of
each run (load average per repetition, ping-pong).  Runs with more ranks than
cores are labelled OVERSUBSCRIBED.  Everything outside the markers is left as
it is.

    scripts/hash_map_table.py --build-dir build
    scripts/hash_map_table.py --build-dir build --ranks 2 --keys 1000000 --reps 3 --dry-run
    scripts/hash_map_table.py --from-jsonl runs.jsonl        # the table from saved JSON lines

A run that exits non-zero (a wrong answer exits 1) stops the script with an
error: the table only ever shows verified runs.
"""

import argparse
import datetime
import json
import os
import pathlib
import shlex
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks-hash_map.md"
BEGIN = "<!-- BEGIN GENERATED: scripts/hash_map_table.py -->"
END = "<!-- END GENERATED: scripts/hash_map_table.py -->"


def run_one(build_dir, ranks, keys, reps, extra):
    command = [str(ROOT / "scripts" / "mpirun.sh"), "-n", str(ranks),
               str(pathlib.Path(build_dir) / "bench" / "hash_map_throughput"),
               "--keys-per-rank", str(keys), "--reps", str(reps)] + extra
    print("running:", " ".join(shlex.quote(c) for c in command), file=sys.stderr, flush=True)
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sys.stderr.write(done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"hash_map_table.py: {command[3]} at {ranks} ranks, {keys} keys exited {done.returncode}")
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    for line in lines:
        line.setdefault("command", " ".join(shlex.quote(c) for c in command[3:]))
    return lines


def rate(metrics, name):
    item = metrics.get(name)
    if not item or item.get("value") is None:
        return "—"
    return f"{item['value'] / 1e6:.1f}"


def ratio(metrics, name):
    item = metrics.get(name)
    if not item or item.get("value") is None:
        return "—"
    return f"{item['value']:.2f}"


def table(lines):
    runs = {}
    for line in lines:
        runs.setdefault((line["ranks"], line.get("keys_per_rank") or line.get("keys")), {})[line["metric"]] = line
    rows = []
    header = ("| ranks | keys/rank | insert M/s: ours / bulk / abseil-bulk | insert_vs_bulk "
              "| find M/s: ours / bulk / abseil-bulk | find_vs_bulk | latency_vs_pingpong "
              "| bytes/pair | load per rep | ping-pong us |")
    rows.append(header)
    rows.append("|---|---|---|---|---|---|---|---|---|---|")
    for (ranks, keys), metrics in sorted(runs.items(), key=lambda item: (item[0][0], item[0][1] or 0)):
        any_line = next(iter(metrics.values()))
        label = f"{ranks}" + (" OVERSUBSCRIBED" if any_line.get("oversubscribed") else "")
        find = metrics.get("find_vs_bulk", {})
        loads = find.get("load_average_per_rep") or []
        loads_after = find.get("load_average_after_per_rep") or []
        if len(loads_after) == len(loads):  # start -> end of each repetition
            load_text = ", ".join(f"{a:.1f}→{b:.1f}" for a, b in zip(loads, loads_after))
        else:
            load_text = ", ".join(f"{x:.1f}" for x in loads)
        pingpong = find.get("pingpong_us_median")
        memory = metrics.get("bytes_per_pair") or metrics.get("peak_bytes_per_pair") or {}
        rows.append(
            f"| {label} | {keys:,} "
            f"| {rate(metrics, 'insert_rate')} / {rate(metrics, 'bulk_insert_rate')} / {rate(metrics, 'absl_bulk_insert_rate')} "
            f"| {ratio(metrics, 'insert_vs_bulk')} "
            f"| {rate(metrics, 'find_rate')} / {rate(metrics, 'bulk_find_rate')} / {rate(metrics, 'absl_bulk_find_rate')} "
            f"| {ratio(metrics, 'find_vs_bulk')} | {ratio(metrics, 'latency_vs_pingpong')} "
            f"| {memory.get('value', float('nan')):.1f} "
            f"| {load_text} "
            f"| {'—' if pingpong is None else f'{pingpong:.1f}'} |")
    return "\n".join(rows)


def machine():
    def text(command):
        try:
            return subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
        except OSError:
            return "?"
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mpi = [" ".join(line.split()) for line in text(["mpiexec", "--version"]).splitlines()
           if "Version" in line or "Open MPI" in line or "mpirun" in line]
    commit = text(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    return f"{os.cpu_count()} cores ({cpu}), {mpi[0] if mpi else '?'}, commit {commit}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--ranks", default="1,2,4")
    parser.add_argument("--keys", default="1000000,4000000")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--extra", default="--latency-blocks 3 --latency-iterations 500",
                        help="more hash_map_throughput options (default: %(default)s)")
    parser.add_argument("--save-jsonl", help="also write every JSON line here")
    parser.add_argument("--from-jsonl", help="build the table from saved JSON lines instead of running")
    parser.add_argument("--dry-run", action="store_true", help="print the table, leave the doc alone")
    args = parser.parse_args()

    if args.from_jsonl:
        lines = [json.loads(line) for line in open(args.from_jsonl) if line.startswith("{")]
        command = f"scripts/hash_map_table.py --from-jsonl {args.from_jsonl}"
    else:
        lines = []
        for keys in [int(k) for k in args.keys.split(",")]:
            for ranks in [int(r) for r in args.ranks.split(",")]:
                lines += run_one(args.build_dir, ranks, keys, args.reps, shlex.split(args.extra))
        command = ("scripts/hash_map_table.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])).strip()
    if args.save_jsonl:
        with open(args.save_jsonl, "w") as out:
            for line in lines:
                out.write(json.dumps(line) + "\n")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (f"{BEGIN}\n\nGenerated {stamp} by `{command}` (medians of {args.reps} repetitions; ours, bulk and "
            f"abseil-bulk alternate inside each run; rates are all ranks' keys over the slowest rank's time; "
            f"machine: {machine()}).\n\n{table(lines)}\n\n{END}")
    if args.dry_run:
        print(text)
        return
    doc = DOC.read_text()
    if BEGIN in doc and END in doc:
        doc = doc[:doc.index(BEGIN)] + text + doc[doc.index(END) + len(END):]
    else:
        raise SystemExit(f"hash_map_table.py: {DOC} has no {BEGIN} ... {END} markers")
    DOC.write_text(doc)
    print(f"hash_map_table.py: wrote the table into {DOC}", file=sys.stderr)


if __name__ == "__main__":
    main()
