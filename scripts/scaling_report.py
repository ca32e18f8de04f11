#!/usr/bin/env python3
"""Turns the JSON lines of scripts/simulate.sh (bench/scaling under SimGrid SMPI)
into the weak-scaling tables and docs/figures/scaling_*.png, written into
docs/scaling.md between the markers <!-- scaling:begin --> and <!-- scaling:end -->.

    /usr/bin/python3 scripts/scaling_report.py FILE.jsonl [FILE.jsonl ...]

Efficiency at p ranks = time at the smallest p measured (16) / time at p, for the
same platform family (fat tree, torus), phase and routing (weak scaling: the keys per rank stay fixed, so perfect
scaling keeps the time constant).  Rows of runs that did not finish are absent.
Needs matplotlib (Debian: python3-matplotlib).
"""

import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "scaling.md")
PHASES = [("hash_map_insert_seconds", "hash_map insert"), ("hash_map_find_seconds", "hash_map find"),
          ("empty_flush_seconds", "empty flush (the fixed cost of every phase)"),
          ("rma_hash_set_insert_seconds", "rma_hash_set insert"),
          ("linear_hash_map_grow_seconds", "linear_hash_map growth")]


def load(paths):
    # (topology ("fattree", "torus"), time model, keys per rank) -> (ranks, routing asked) -> {metric: value, ...}
    topologies = {}
    for path in paths:
        with open(path) as lines:
            for line in lines:
                line = re.sub(r":\.(\d)", r":0.\1", line.strip())  # bc's ".08" in older files
                if not line:
                    continue
                row = json.loads(line)
                # (compute, ns per record, ns per message): the costs matter under "model" only.
                compute = row.get("compute", "no")
                model = (compute, row.get("record_cost_ns", 0), row.get("message_cost_ns", 0)) \
                    if compute == "model" else (compute, 0, 0)
                runs = topologies.setdefault((row.get("platform", "fattree").split("-")[0], model,
                                              row["keys_per_rank"]), {})
                key = (row["ranks"], row["routing_asked"])
                entry = runs.setdefault(key, {})
                entry[row["metric"]] = row["value"]
                entry.setdefault("simulator_seconds", {})[row.get("phases", "all")] = row["simulator_seconds"]
                entry["keys_per_rank"] = row["keys_per_rank"]
    return topologies


def efficiency_table(runs):
    out = []
    for metric, title in PHASES:
        points = {(p, r): v[metric] for (p, r), v in runs.items() if metric in v}
        if not points:
            continue
        ranks = sorted({p for p, _ in points})
        out.append(f"**{title}** (simulated ms from a barrier to the slowest rank's end; efficiency vs {ranks[0]} ranks)\n")
        out.append("| ranks | " + " | ".join(f"{r} ms | {r} eff." for r in ("direct", "grid")) + " |")
        out.append("|---|" + "---|" * 4)
        for p in ranks:
            cells = []
            for routing in ("direct", "grid"):
                t = points.get((p, routing))
                base = points.get((ranks[0], routing))
                if t is None:
                    cells += ["not run", ""]
                else:
                    cells += [f"{t * 1e3:.3f}", f"{base / t:.0%}" if base else ""]
            out.append(f"| {p} | " + " | ".join(cells) + " |")
        out.append("")
    return out


def memory_table(runs):
    out = ["**Per-rank buffers** (hash_map's engine: outboxes + sends in flight, largest over ranks; "
           "outboxes kept; messages sent per rank; reductions of the insert phase's flush; "
           "records a rank forwarded)\n",
           "| ranks | routing | buffer high-water | peers | messages / rank (insert phase) | messages / rank (all) | "
           "insert flush rounds | forwarded / rank | simulator wall s |",
           "|---|---|---|---|---|---|---|---|---|"]
    for (p, routing) in sorted(runs):
        v = runs[(p, routing)]
        if "hash_map_buffer_bytes_high_water" not in v:
            continue
        wall = v["simulator_seconds"].get("hash_map", max(v["simulator_seconds"].values()))
        rounds = f"{v['hash_map_insert_flush_rounds']:.0f}" if "hash_map_insert_flush_rounds" in v else "—"
        out.append(f"| {p} | {routing} | {v['hash_map_buffer_bytes_high_water'] / 2**20:.2f} MiB | "
                   f"{v['hash_map_peers']:.0f} | {v.get('hash_map_insert_messages_per_rank', float('nan')):.0f} | "
                   f"{v['hash_map_messages_per_rank']:.0f} | {rounds} | "
                   f"{v['hash_map_records_forwarded_per_rank']:.0f} | {wall:.1f} |")
    out.append("")
    return out


def plot(groups):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    metric = PHASES[0][0]
    for (model, keys), runs in groups:
        for routing, style in (("direct", "--"), ("grid", "-")):
            points = sorted((p, v[metric]) for (p, r), v in runs.items() if r == routing and metric in v)
            if len(points) < 2:
                continue
            base = points[0][1]
            left.plot([p for p, _ in points], [base / t for _, t in points], style, marker="o",
                      label=f"{routing}, {keys // 1000}k keys/rank, {describe(model, short=True)}")
    left.axhline(0.8, color="grey", linewidth=0.8)
    left.set_xscale("log", base=2)
    left.set_xlabel("simulated ranks (one per node, fat tree)")
    left.set_ylabel("hash_map insert efficiency vs 16 ranks")
    left.legend(fontsize=7)
    runs = groups[0][1]
    for routing, style in (("direct", "--"), ("grid", "-")):
        points = sorted((p, v["hash_map_buffer_bytes_high_water"] / 2**20) for (p, r), v in runs.items()
                        if r == routing and "hash_map_buffer_bytes_high_water" in v)
        if points:
            right.plot([p for p, _ in points], [m for _, m in points], style, marker="o", label=routing)
    right.axhline(8, color="grey", linewidth=0.8)
    right.set_xscale("log", base=2)
    right.set_yscale("log", base=2)
    right.set_xlabel("simulated ranks")
    right.set_ylabel("per-rank buffer memory (MiB, high-water)")
    right.legend(fontsize=8)
    figure.tight_layout()
    path = os.path.join(ROOT, "docs", "figures", "scaling_hash_map.png")
    figure.savefig(path, dpi=110)
    return "![weak scaling and buffer memory](figures/scaling_hash_map.png)\n"


def describe(model, short=False):
    compute, ns, per_message = model
    if compute == "no":
        return "network only" if short else "computation not simulated"
    if compute == "yes":
        return "computation measured"
    extra = "" if per_message == 0 else (f" + {per_message:g} ns/message" if short else
                                         f", {per_message:g} ns per message sent and per message received")
    return (f"{ns:g} ns/record" if short else
            f"computation modeled, {ns:g} ns per record packed and per record handled") + extra


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    groups = load(sys.argv[1:])
    # The fat trees give the main tables and the figure (modeled computation
    # first, then the network alone); a torus (scripts/simulate.sh --topology
    # torus) its own tables after them.
    order = sorted(groups, key=lambda g: (g[0] != "fattree", g[1][0] == "no", g))
    fat = [((model, keys), groups[(topology, model, keys)]) for topology, model, keys in order
           if topology == "fattree"]
    section = []
    for index, (topology, model, keys) in enumerate(order):
        runs = groups[(topology, model, keys)]
        section += [f"### {'Fat tree' if topology == 'fattree' else topology.capitalize()}, {keys:,} keys per rank, "
                    f"{describe(model)} (scripts/simgrid/{topology}-*.xml)\n"]
        section += efficiency_table(runs) + memory_table(runs)
        if index == 0 and fat:
            section.append(plot(fat))
    with open(DOC) as f:
        text = f.read()
    begin, end = "<!-- scaling:begin -->", "<!-- scaling:end -->"
    if begin not in text or end not in text:
        print(f"scaling_report: {DOC} lacks the markers {begin} / {end}", file=sys.stderr)
        return 1
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(DOC, "w") as f:
        f.write(head + begin + "\n" + "\n".join(section) + "\n" + end + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
