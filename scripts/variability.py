#!/usr/bin/env python3
"""Variability study of seed 000 §4-5 (Tables 2 and 3, Figures 4-6) for mpidict.

Runs --runs randomized N-N micro-benchmarks (bench/patterns --pattern nn), each
with a random blocking factor L in {1, 10, 20, ..., 200}, a random request size n
in 1..8, a random rank count in 1..--max-ranks and a distinct key seed; every
run is done twice, with release queue q = 0 and q = 128 (the same L, n, ranks
and keys).  Keys per run: --keys-per-rank x ranks (the paper: 10,000).

For each run and each of the three wall-clock times (immediate = initiation,
completion, barrier; per value, per rank) the variability is
(max - mean) / mean over the ranks.  Kruskal-Wallis H (scipy.stats.kruskal)
tests whether the variability distribution differs across groups of L
(Table 2) and across groups of rank counts (Table 3); the 0.05 critical value
is scipy.stats.chi2.ppf(0.95, groups - 1).  Groups with fewer than
--min-group runs are left out, as in the paper.  With fewer than 200 runs the
L groups are coarse bins (1 | 10-50 | 60-100 | 110-150 | 160-200) so that each
holds enough runs; --l-groups exact forces the paper's 21 groups.  Table 3 is
also given, in parentheses, without the 1-rank group (whose variability is 0 by
definition; the paper's analogue is its 4-processor single-node group).

Outputs in --out: runs.jsonl (one line per run and q), variability.md (the
tables, Markdown) and figure4_q*.png, figure5.png, figure6_q*.png.

Usage: scripts/variability.py --bench build/bench/patterns [--runs 40]
         [--max-ranks 4] [--keys-per-rank 1000] [--seed 1] [--out DIR]
"""

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys

OPS = ("insert", "find", "take")
PHASES = ("initiation", "completion", "barrier")
PHASE_LABEL = {"initiation": "Immediate", "completion": "Completion", "barrier": "Barrier"}
QUEUES = (0, 128)
L_CHOICES = [1] + list(range(10, 201, 10))
COARSE_BINS = [(1, 1), (10, 50), (60, 100), (110, 150), (160, 200)]


def ensure_python_deps():
    """Installs scipy and matplotlib with pip if they are missing."""
    missing = []
    for module in ("scipy", "matplotlib"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        print(f"variability.py: installing {' '.join(missing)} with pip", file=sys.stderr)
        base = [sys.executable, "-m", "pip", "install", "--quiet"]
        if subprocess.call(base + missing) != 0:
            # Debian's externally-managed Python refuses a plain install.
            subprocess.check_call(base + ["--break-system-packages"] + missing)


def mpiexec_command():
    launcher = os.environ.get("MPIEXEC") or shutil.which("mpiexec") or shutil.which("mpirun")
    if not launcher:
        sys.exit("variability.py: no mpiexec found (set MPIEXEC)")
    return launcher


def run_one(args, launcher, ranks, L, n, q, seed):
    keys = args.keys_per_rank * ranks
    command = [launcher, "-n", str(ranks), args.bench, "--pattern", "nn", "--no-baseline", "--reps", "1",
               "--keys", str(keys), "--values-per-key", str(n), "--blocking-factor", str(L),
               "--release-queue", str(q), "--seed", str(seed)]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=args.timeout)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        sys.exit(f"variability.py: benchmark failed (exit {done.returncode}): {' '.join(command)}")
    record = {"ranks": ranks, "blocking_factor": L, "values_per_key": n, "release_queue": q, "seed": seed,
              "keys": keys, "per_rank": {}}
    for line in done.stdout.splitlines():
        figure = json.loads(line)
        if figure.get("pattern") == "nn" and figure.get("impl") == "hash_map":
            record["per_rank"][f"{figure['op']}_{figure['phase']}"] = figure["per_rank"]
    return record


def variability(times):
    values = [t for t in times if t is not None and math.isfinite(t)]
    mean = sum(values) / len(values)
    return (max(values) - mean) / mean if mean > 0 else 0.0


def truncate(value, digits):
    scale = 10 ** digits
    return math.floor(value * scale) / scale


def l_group(L, mode):
    if mode == "exact":
        return str(L)
    for low, high in COARSE_BINS:
        if low <= L <= high:
            return f"{low}" if low == high else f"{low}-{high}"
    raise ValueError(L)


def kruskal(groups, min_group):
    """H and the 0.05 critical value over groups with at least min_group samples."""
    from scipy import stats
    kept = {name: values for name, values in groups.items() if len(values) >= min_group}
    if len(kept) < 2:
        return math.nan, math.nan, sorted(kept)
    try:
        h, _ = stats.kruskal(*kept.values())
    except ValueError:  # every sample identical
        h = 0.0
    return h, stats.chi2.ppf(0.95, len(kept) - 1), sorted(kept, key=lambda g: float(g.split("-")[0]))


def cell(h, critical):
    if not math.isfinite(h):
        return "n/a"
    text = f"{h:.2f}"
    return f"**{text}**" if h >= critical else text


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", default="build/bench/patterns")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--max-ranks", type=int, default=4)
    parser.add_argument("--keys-per-rank", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--min-group", type=int, default=5)
    parser.add_argument("--digits", type=int, default=2,
                        help="variability truncated to this many decimals before the test (the paper: 1)")
    parser.add_argument("--l-groups", choices=("auto", "exact", "coarse"), default="auto")
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--out", default="variability-out")
    args = parser.parse_args()

    ensure_python_deps()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(args.out, exist_ok=True)
    launcher = mpiexec_command()
    rng = random.Random(args.seed)
    records = []
    with open(os.path.join(args.out, "runs.jsonl"), "w") as log:
        for index in range(args.runs):
            L = rng.choice(L_CHOICES)
            n = rng.randint(1, 8)
            ranks = rng.randint(1, args.max_ranks)
            key_seed = 1000 + args.seed * 100000 + index
            for q in QUEUES:
                record = run_one(args, launcher, ranks, L, n, q, key_seed)
                record["run"] = index
                record["variability"] = {name: variability(times) for name, times in record["per_rank"].items()}
                records.append(record)
                log.write(json.dumps(record) + "\n")
                log.flush()
            print(f"run {index + 1}/{args.runs}: ranks {ranks}, L {L}, n {n}", file=sys.stderr)

    mode = args.l_groups if args.l_groups != "auto" else ("exact" if args.runs >= 200 else "coarse")
    series = [(op, phase) for op in ("find", "insert") for phase in PHASES]
    lines = []
    lines.append(f"Runs: {args.runs} randomized N-N runs, each with q = 0 and q = 128; L in {{1, 10, ..., 200}}, "
                 f"n in 1..8, ranks in 1..{args.max_ranks}, {args.keys_per_rank} keys per rank, seed {args.seed}. "
                 f"Variability truncated to {args.digits} decimals; groups with fewer than {args.min_group} runs "
                 f"left out; L groups: {mode}. **Bold**: H at or above the 0.05 critical value "
                 f"(the null hypothesis \"the grouping does not matter\" is rejected).")
    lines.append("")

    def table(title, grouping, exclude=None):
        header = "| q | " + " | ".join(f"{op.title()} {PHASE_LABEL[phase]}" for op, phase in series) + \
                 " | groups | critical H (0.05) |"
        out = [f"**{title}**", "", header, "|" + "---|" * (len(series) + 3)]
        for q in QUEUES:
            cells = []
            used = []
            critical = math.nan
            for op, phase in series:
                groups = {}
                for r in records:
                    if r["release_queue"] != q:
                        continue
                    key = grouping(r)
                    if exclude and key in exclude:
                        continue
                    groups.setdefault(key, []).append(truncate(r["variability"][f"{op}_{phase}"], args.digits))
                h, critical, used = kruskal(groups, args.min_group)
                cells.append(cell(h, critical))
            out.append(f"| {q} | " + " | ".join(cells) + f" | {', '.join(used) or '-'} | "
                       f"{critical:.2f} |" if math.isfinite(critical) else
                       f"| {q} | " + " | ".join(cells) + " | (too few groups) | n/a |")
        return out

    lines += table("Table 2: Kruskal-Wallis H, variability versus blocking factor L",
                   lambda r: l_group(r["blocking_factor"], mode))
    lines.append("")
    lines += table("Table 3: Kruskal-Wallis H, variability versus number of ranks",
                   lambda r: str(r["ranks"]))
    lines.append("")
    lines += table("Table 3, without the 1-rank group",
                   lambda r: str(r["ranks"]), exclude={"1"})
    lines.append("")

    # Mean variability per L group (the numbers behind Figure 5).
    lines.append("**Mean variability per L group** (completion / barrier, insert and find)")
    lines.append("")
    groups_sorted = sorted({l_group(r["blocking_factor"], mode) for r in records},
                           key=lambda g: float(g.split("-")[0]))
    lines.append("| q | L group | runs | insert completion | insert barrier | find completion | find barrier |")
    lines.append("|---|---|---|---|---|---|---|")
    for q in QUEUES:
        for g in groups_sorted:
            rs = [r for r in records if r["release_queue"] == q and l_group(r["blocking_factor"], mode) == g]
            if not rs:
                continue
            means = [sum(r["variability"][name] for r in rs) / len(rs)
                     for name in ("insert_completion", "insert_barrier", "find_completion", "find_barrier")]
            lines.append(f"| {q} | {g} | {len(rs)} | " + " | ".join(f"{m:.3f}" for m in means) + " |")
    with open(os.path.join(args.out, "variability.md"), "w") as md:
        md.write("\n".join(lines) + "\n")
    print("\n".join(lines))

    # Figure 4: per-rank per-value times versus L; Figure 6: versus ranks.
    style = {"initiation": ("tab:red", 60), "completion": ("tab:blue", 30), "barrier": ("tab:brown", 10)}
    for q in QUEUES:
        for figure_name, x_field, x_label in (("figure4", "blocking_factor", "blocking factor L"),
                                              ("figure6", "ranks", "ranks")):
            fig, axes = plt.subplots(1, 3, figsize=(15, 4.5), sharey=True)
            for axis, op in zip(axes, OPS):
                for phase in PHASES:
                    xs, ys = [], []
                    for r in records:
                        if r["release_queue"] != q:
                            continue
                        for t in r["per_rank"][f"{op}_{phase}"]:
                            if t is not None:
                                xs.append(r[x_field])
                                ys.append(t)
                    color, size = style[phase]
                    axis.scatter(xs, ys, s=size, c=color, marker="_", label=PHASE_LABEL[phase].lower())
                axis.set_title(f"{op}, q = {q}")
                axis.set_xlabel(x_label)
                axis.set_yscale("log")
            axes[0].set_ylabel("wall-clock time per value (us), one mark per rank and run")
            axes[0].legend()
            fig.tight_layout()
            fig.savefig(os.path.join(args.out, f"{figure_name}_q{q}.png"), dpi=90)
            plt.close(fig)

    # Figure 5: mean variability versus L group.
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for axis, q in zip(axes, QUEUES):
        for op, marker in (("insert", "o"), ("find", "s")):
            for phase in ("completion", "barrier"):
                ys = []
                for g in groups_sorted:
                    rs = [r for r in records if r["release_queue"] == q and l_group(r["blocking_factor"], mode) == g]
                    ys.append(sum(r["variability"][f"{op}_{phase}"] for r in rs) / len(rs) if rs else math.nan)
                axis.plot(groups_sorted, ys, marker=marker, label=f"{op} {phase}")
        axis.set_title(f"mean variability (max - mean) / mean, q = {q}")
        axis.set_xlabel("blocking factor L (group)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "figure5.png"), dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    main()
