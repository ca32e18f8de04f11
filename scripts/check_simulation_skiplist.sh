#!/usr/bin/env bash
# Checks bench/scaling's skiplist_map phases on the SimGrid SMPI build
# (docs/scaling.md, "The ordered service"): 16 simulated ranks on the fat tree,
# grid routing, computation modeled, small sizes, every phase (insert_many,
# find_many in the three modes, ranges of 100 / 1,000 / 10,000, the 20/20/60
# mix, pattern queries D = 1..6).  bench/scaling checks every answer (each
# find's value, each range exactly its keys, each pattern query exactly its
# box); this script fails if any answer was wrong, if a phase reported nothing,
# or if mode total_order's finds did not all enter at the head (no shortcut;
# find_many's sorted chunks each visit it once).  CTest runs it
# when smpirun is found (label "simulation"); the SMPI build goes to
# $MPIDICT_SMPI_BUILD (CTest: smpi-check/ in the build tree, shared with
# simulation.time_model).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
"$here/simulate.sh" --ranks 16 --routing grid --phases skiplist --keys-per-rank 300 --compute model --timeout 600 \
  --bench-args "--total-order-keys 50 --range-entries 1000 --mix-operations 100 --pattern-queries 1 --window 8" \
  --out "$scratch/skiplist.jsonl"
python3 - "$scratch/skiplist.jsonl" <<'PY'
import json, sys
try:
    with open(sys.argv[1]) as f:
        run = {row["metric"]: row["value"] for row in map(json.loads, f)}
except FileNotFoundError:
    sys.exit("check_simulation_skiplist: the run wrote no results (see the simulate.sh message above)")
expected = ["skiplist_insert_many_seconds", "skiplist_find_many_sequential_seconds",
            "skiplist_find_many_sequential_first_round_seconds", "skiplist_find_many_none_seconds",
            "skiplist_find_total_order_seconds", "skiplist_mix_seconds"]
expected += [f"skiplist_range_{r}_seconds" for r in (100, 1000)]
expected += [f"skiplist_pattern_{d}_seconds" for d in range(1, 7)]
failures = [f"no {metric} reported" for metric in expected + ["wrong_answers"] if run.get(metric) is None]
if run.get("wrong_answers", 1) != 0:
    failures.append(f"{run.get('wrong_answers')} wrong answers")
# total_order's find_many sends its keys to the head in sorted chunks (one head
# visit per chunk, docs/skiplist_map.md), so every find entered there when no
# shortcut was taken and the head was visited at all.
if run.get("skiplist_find_total_order_shortcut_share") != 0:
    failures.append(f"total_order: shortcut share {run.get('skiplist_find_total_order_shortcut_share')}, not 0")
if not run.get("skiplist_find_total_order_head_visits_per_find", 0) > 0:
    failures.append("total_order: the finds never visited the head")
for metric in expected:
    if run.get(metric) is not None and not run[metric] > 0:
        failures.append(f"{metric} is {run[metric]}")
for line in failures:
    print("check_simulation_skiplist:", line, file=sys.stderr)
if failures:
    sys.exit(1)
print("check_simulation_skiplist: every phase ran and every answer was right; ms: " +
      ", ".join(f"{m[len('skiplist_'):-len('_seconds')]} {run[m] * 1e3:.3f}" for m in expected))
PY
