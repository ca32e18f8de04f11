#!/usr/bin/env python3
"""Tables of bench/scaling's skiplist_map phases (docs/scaling.md, "The ordered
service"): reads the JSON lines scripts/simulate.sh appended (--phases
skiplist*), prints Markdown tables per platform family and time model, or with
--write rewrites docs/scaling.md between its skiplist-scaling markers.

    python3 scripts/scaling_skiplist_report.py docs/figures/scaling_skiplist_runs.jsonl [--write]

A later run of the same platform, ranks, compute model, record cost, keys per
rank and metric replaces an earlier one (the last line wins)."""
import json
import re
import sys
from collections import defaultdict


def load(paths):
    # One run: the lines one simulate.sh invocation appended for one rank count
    # (same platform, phases, model and simulator time); its keys per rank are
    # the context's (the wrong_answers line carries no figure fields).
    lines = defaultdict(dict)
    for path in paths:
        with open(path) as f:
            for line in f:
                row = json.loads(line)
                if not str(row.get("metric", "")).startswith("skiplist_") and row.get("metric") != "wrong_answers":
                    continue
                run = (path, row["platform"], row.get("phases"), row.get("compute"), row.get("record_cost_ns"),
                       row.get("simulator_seconds"))
                lines[run][row["metric"]] = row
    runs = {}
    for (path, platform, phases, compute, cost, _), metrics in lines.items():
        if "wrong_answers" not in metrics or not any(m.startswith("skiplist_") for m in metrics):
            continue
        keys = metrics["wrong_answers"]["keys_per_rank"]
        family = platform.rsplit("-", 1)[0]
        key = (family, compute, cost, keys, metrics["wrong_answers"]["ranks"])
        if phases in ("skiplist_ranges", "skiplist_mix", "skiplist_patterns"):
            # Their load (insert_many) is a figure of the core run, not theirs.
            metrics = {m: row for m, row in metrics.items()
                       if not m.startswith(("skiplist_insert_many", "skiplist_nodes", "skiplist_find"))}
        runs.setdefault(key, {}).update(metrics)
    return runs


def ms(value):
    return "" if value is None else f"{value * 1e3:.3f}"


def eff(base, value):
    return "" if base is None or value is None else f"{100 * base / value:.0f}%"


def value(run, metric):
    row = run.get(metric)
    return None if row is None else row.get("value")


def tables(runs):
    out = []
    groups = defaultdict(dict)
    for (family, compute, cost, keys, ranks), run in runs.items():
        groups[(family, compute, cost, keys)][ranks] = run
    for (family, compute, cost, keys), by_ranks in sorted(groups.items(), key=lambda item: str(item[0])):
        ranks = sorted(by_ranks)
        model = f"computation modeled, {cost:g} ns per record packed and per record handled" if compute == "model" \
            else "network only" if compute == "no" else f"compute {compute}"
        out.append(f"#### {family}, {keys:,} keys per rank, {model}\n")
        base = by_ranks.get(16, {})
        if any("skiplist_insert_many_seconds" in by_ranks[p] for p in ranks):
            out.append("**insert_many and find_many** (simulated ms from a barrier to the slowest rank's end; "
                       "efficiency vs 16 ranks; find_many of every key, second round; total_order: "
                       "`--total-order-keys` per rank, every find through the head)\n")
            out.append("| ranks | insert_many ms | eff. | find sequential, 1st round ms | find sequential ms | eff. "
                       "| find none ms | eff. | total_order ms | total_order M finds/s | hops/find (total_order) "
                       "| messages/rank (insert) | wrong |")
            out.append("|" + "---|" * 13)
            for p in ranks:
                run = by_ranks[p]
                t_o = value(run, "skiplist_find_total_order_seconds")
                rate = value(run, "skiplist_find_total_order_rate")
                out.append("| " + " | ".join([
                    str(p), ms(value(run, "skiplist_insert_many_seconds")),
                    eff(value(base, "skiplist_insert_many_seconds"), value(run, "skiplist_insert_many_seconds")),
                    ms(value(run, "skiplist_find_many_sequential_first_round_seconds")),
                    ms(value(run, "skiplist_find_many_sequential_seconds")),
                    eff(value(base, "skiplist_find_many_sequential_seconds"),
                        value(run, "skiplist_find_many_sequential_seconds")),
                    ms(value(run, "skiplist_find_many_none_seconds")),
                    eff(value(base, "skiplist_find_many_none_seconds"), value(run, "skiplist_find_many_none_seconds")),
                    ms(t_o), "" if rate is None else f"{rate / 1e6:.2f}",
                    "" if value(run, "skiplist_find_total_order_hops_per_find") is None
                    else f"{value(run, 'skiplist_find_total_order_hops_per_find'):.1f}",
                    "" if value(run, "skiplist_insert_many_messages_per_rank") is None
                    else f"{value(run, 'skiplist_insert_many_messages_per_rank'):.0f}",
                    "" if value(run, "wrong_answers") is None else f"{value(run, 'wrong_answers'):.0f}"]) + " |")
            out.append("")
        if any("skiplist_range_100_seconds" in by_ranks[p] for p in ranks):
            out.append("**Ranges (Figure 9) and the 60/20/20 find/insert/erase mix** (simulated ms per phase; "
                       "queries/s over every rank; range parts per query)\n")
            out.append("| ranks | range 100: ms · queries/s · parts | range 1,000 | range 10,000 | mix: ms · ops/s |")
            out.append("|---|---|---|---|---|")
            for p in ranks:
                run = by_ranks[p]
                cells = [str(p)]
                for r in (100, 1000, 10000):
                    t = value(run, f"skiplist_range_{r}_seconds")
                    cells.append("" if t is None else f"{ms(t)} · {value(run, f'skiplist_range_{r}_rate'):,.0f} · "
                                 f"{value(run, f'skiplist_range_{r}_parts_per_query'):.1f}")
                t = value(run, "skiplist_mix_seconds")
                cells.append("" if t is None else f"{ms(t)} · {value(run, 'skiplist_mix_rate'):,.0f}")
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
        if any("skiplist_pattern_1_seconds" in by_ranks[p] for p in ranks):
            out.append("**Pattern queries (Figure 12)**: queries/s over every rank · range parts per query "
                       "(boxes of at most 4,096 points)\n")
            out.append("| D | box | " + " | ".join(f"{p} ranks" for p in ranks) + " |")
            out.append("|---|---|" + "---|" * len(ranks))
            for d in range(1, 7):
                metric = f"skiplist_pattern_{d}_seconds"
                box = next((by_ranks[p][metric].get("box") for p in ranks if metric in by_ranks[p]), "")
                cells = [str(d), box]
                for p in ranks:
                    run = by_ranks[p]
                    rate = value(run, f"skiplist_pattern_{d}_rate")
                    cells.append("" if rate is None else
                                 f"{rate:,.0f} · {value(run, f'skiplist_pattern_{d}_parts_per_query'):.0f}")
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
    return "\n".join(out)


def main():
    args = [a for a in sys.argv[1:] if a != "--write"]
    text = tables(load(args))
    if "--write" not in sys.argv:
        print(text)
        return
    path = "docs/scaling.md"
    with open(path) as f:
        doc = f.read()
    begin, end = "<!-- skiplist-scaling:begin -->", "<!-- skiplist-scaling:end -->"
    if begin not in doc:
        sys.exit(f"scaling_skiplist_report: no {begin} marker in {path}")
    doc = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: f"{begin}\n{text}\n{end}", doc, flags=re.S)
    with open(path, "w") as f:
        f.write(doc)


if __name__ == "__main__":
    main()
