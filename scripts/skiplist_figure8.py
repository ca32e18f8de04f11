#!/usr/bin/env python3
"""Reproduces Figure 8 of seed 004 (find throughput of the skip-list service in its
three consistency modes) with bench/skiplist_map, and writes the table and
docs/figures/skiplist_figure8.png into docs/skiplist_map.md between the markers
<!-- figure8:begin --> and <!-- figure8:end -->.

    python3 scripts/skiplist_figure8.py [--build-dir build] [--ranks 1,2,3,4]
                                         [--keys 100000,1000000] [--rounds 3] [--quick]

Each run: every rank inserts --keys uniform 8-byte keys (insert_many), then looks
all of them up with find_many --rounds times (the median is reported), on a list in
one mode (total_order, sequential, none), and hash_map's find_many on the same keys
in the same process as the baseline.  The seed ran 100% finds at up to 120 FG-MPI
processes; this machine has 2 cores, so 3 and 4 ranks are oversubscribed (marked).
--quick: 20,000 keys per rank, ranks 1-2, one round (a smoke test of the script).
Environment: MPIEXEC overrides the launcher (default scripts/mpirun.sh).
The measurements are also written to build/skiplist_figure8.json; --replot redraws
the section from that file without running anything.  Needs matplotlib (Debian:
python3-matplotlib; run it with /usr/bin/python3 if another python3 comes first).
"""

import argparse
import datetime
import json
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ["total_order", "sequential", "none"]
# Each mode twice: with the directory (the route cache: direct finds in the
# shortcut modes) and without it (--route-cache 0: every find enters at the head
# and is routed by the skip list itself), so the figure also measures the skip
# list's own routing (issue 42).
VARIANTS = [("directory", []), ("no directory", ["--route-cache", "0"])]


def run(build, ranks, keys, mode, rounds, extra):
    launcher = shlex.split(os.environ.get("MPIEXEC", os.path.join(ROOT, "scripts", "mpirun.sh")))
    command = launcher + ["-n", str(ranks), os.path.join(build, "bench", "skiplist_map"),
                          "--keys-per-rank", str(keys), "--ranges-per-rank", "0", "--ascending", "0",
                          "--find-rounds", str(rounds), "--consistency", mode] + extra
    shown = "scripts/mpirun.sh " + " ".join(shlex.quote(part) for part in command[len(launcher):])
    shown = shown.replace(build + "/", "build/")
    print("  " + shown, file=sys.stderr, flush=True)
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=1800)
    if result.returncode != 0:
        sys.exit(f"skiplist_figure8: {shown} failed ({result.returncode}):\n{result.stderr[-2000:]}")
    metrics = {}
    for line in result.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            metrics[record["metric"]] = record.get("value")
            metrics["load_average"] = record.get("load_average")
    if metrics.get("verified") != 1:
        sys.exit(f"skiplist_figure8: {shown} did not verify")
    return shown, metrics


def plot(rows, keys_list, ranks_list, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(keys_list), figsize=(5.2 * len(keys_list), 4), squeeze=False)
    for axis, keys in zip(axes[0], keys_list):
        for (variant, _), style in zip(VARIANTS, ["-", ":"]):
            for mode, marker, color in zip(MODES, ["s", "o", "^"], ["C0", "C1", "C2"]):
                ys = [rows[(keys, ranks, mode, variant)]["skiplist_find_many_rate"] / 1e6 for ranks in ranks_list]
                axis.plot(ranks_list, ys, marker=marker, linestyle=style, color=color,
                          label=f"skiplist_map, {mode}, {variant}")
        ys = [rows[(keys, ranks, "none", "directory")]["hash_map_find_many_rate"] / 1e6 for ranks in ranks_list]
        axis.plot(ranks_list, ys, linestyle="--", color="grey", label="hash_map (same runs)")
        axis.set_yscale("log")
        axis.set_xticks(ranks_list)
        axis.set_xlabel("ranks (2 cores: 3 and 4 oversubscribed)")
        axis.set_ylabel("finds per second (millions, log)")
        axis.set_title(f"100% finds, {keys:,} keys per rank")
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--ranks", default="1,2,3,4")
    parser.add_argument("--keys", default="100000,1000000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    parser.add_argument("--replot", action="store_true", help="use the last run's build/skiplist_figure8.json")
    options = parser.parse_args()
    if options.quick:
        options.ranks, options.keys, options.rounds = "1,2", "20000", 1
    ranks_list = [int(part) for part in options.ranks.split(",")]
    keys_list = [int(part) for part in options.keys.split(",")]
    build = os.path.abspath(options.build_dir)

    saved = os.path.join(build, "skiplist_figure8.json")
    rows, commands = {}, []
    if options.replot:
        with open(saved) as handle:
            data = json.load(handle)
        keys_list, ranks_list, options.rounds = data["keys"], data["ranks"], data["rounds"]
        commands = data["commands"]
        rows = {tuple(json.loads(key)): value for key, value in data["rows"].items()}
        if any(len(key) != 4 for key in rows):
            sys.exit("skiplist_figure8: build/skiplist_figure8.json is from before the no-directory runs; rerun")
    else:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            if not options.no_write:
                sys.exit("skiplist_figure8: matplotlib is missing (Debian: apt-get install python3-matplotlib; "
                         "then run the script with /usr/bin/python3)")
        for keys in keys_list:
            for ranks in ranks_list:
                # Interleaved: each mode with and without the directory, one after the other.
                for mode in MODES:
                    for variant, extra in VARIANTS:
                        shown, metrics = run(build, ranks, keys, mode, options.rounds, extra)
                        rows[(keys, ranks, mode, variant)] = metrics
                        commands.append(shown)
        with open(saved, "w") as handle:
            json.dump({"keys": keys_list, "ranks": ranks_list, "rounds": options.rounds, "commands": commands,
                       "rows": {json.dumps(list(key)): value for key, value in rows.items()}}, handle)

    import math
    lines = ["| keys/rank | ranks | mode | entry | finds/s | hops/find | 2·log2(N/G)+4 | head visits/find | "
             "hash_map finds/s | ratio | load |",
             "|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for keys in keys_list:
        for ranks in ranks_list:
            for mode in MODES:
                for variant, _ in VARIANTS:
                    m = rows[(keys, ranks, mode, variant)]
                    find, base = m["skiplist_find_many_rate"], m["hash_map_find_many_rate"]
                    over = " (oversubscribed)" if ranks > (os.cpu_count() or 1) else ""
                    bound = 2 * math.log2(max(2.0, keys * ranks / m.get("granularity", 64))) + 4
                    lines.append(f"| {keys:,} | {ranks}{over} | {mode} | {variant} | {find / 1e6:.3f} M | "
                                 f"{m['skiplist_find_hops_per_op']:.2f} | {bound:.1f} | "
                                 f"{m['skiplist_find_head_visits_per_op']:.3f} | "
                                 f"{base / 1e6:.2f} M | {find / base:.3f} | {m.get('load_average', '?')} |")
    ordering = []
    for keys in keys_list:
        for ranks in ranks_list:
            for variant, _ in VARIANTS:
                t, s, n = (rows[(keys, ranks, mode, variant)]["skiplist_find_many_rate"] for mode in MODES)
                ordering.append(f"{keys:,} keys, {ranks} ranks, {variant}: none/sequential {n / s:.2f}, "
                                f"total_order/sequential {t / s:.3f}")
    table = "\n".join(lines)
    print(table)
    print("\n".join(ordering))
    if options.no_write:
        return
    figure = os.path.join(ROOT, "docs", "figures", "skiplist_figure8.png")
    quoted = " ".join(shlex.quote(arg) for arg in sys.argv[1:])
    plot(rows, keys_list, ranks_list, figure)
    loads = sorted({m.get("load_average") for m in rows.values() if m.get("load_average") is not None})
    section = "\n".join([
        "<!-- figure8:begin -->",
        f"Generated by `python3 scripts/skiplist_figure8.py {quoted}` on {datetime.date.today()} "
        f"({os.cpu_count()} cores; 1-minute load average during the runs {loads[0] if loads else '?'}"
        f"-{loads[-1] if loads else '?'}; find rate = median of {options.rounds} rounds of find_many over "
        f"every inserted key, hash_map's find_many on the same keys in the same process).",
        "",
        "![Figure 8: find throughput per consistency mode](figures/skiplist_figure8.png)",
        "",
        table,
        "",
        "Ratios between the modes (the seed's ordering is none >= sequential >= total_order); "
        "`2·log2(N/G)+4` is issue 42's bound on total_order's hops per find (N keys in all, G per node):",
        "",
        "\n".join("- " + line for line in ordering),
        "",
        "Commands:",
        "",
        "```",
        "\n".join(commands),
        "```",
        "<!-- figure8:end -->",
    ])
    doc = os.path.join(ROOT, "docs", "skiplist_map.md")
    text = open(doc).read()
    pattern = re.compile(r"<!-- figure8:begin -->.*?<!-- figure8:end -->", re.S)
    if not pattern.search(text):
        sys.exit("skiplist_figure8: docs/skiplist_map.md has no <!-- figure8:begin --> ... <!-- figure8:end --> markers")
    open(doc, "w").write(pattern.sub(lambda _: section, text))
    print(f"wrote {figure} and the Figure 8 section of {doc}", file=sys.stderr)


if __name__ == "__main__":
    main()
