#!/usr/bin/env bash
# Checks the SimGrid SMPI build and its time model (docs/scaling.md): 16
# simulated ranks on the fat tree, grid routing, 2,000 keys per rank: once with
# computation not simulated, once modeled at 100 ns per record and once at
# 20 us per message.  Every
# answer must be right (bench/scaling checks each find), and the modeled run
# must take at least the computation charged on one rank's critical path
# (each rank packs and handles its own 2,000 inserts: 2 x 2000 x 100 ns =
# 0.4 ms; a find is packed and handled twice, request and reply: 0.8 ms), while
# the network-only run must take less; likewise a third run charged 20 us per
# message sent and received (and nothing per record) must take at least 20 us
# times the messages a rank sent on average.  CTest runs it when smpirun is found
# (label "simulation"); the SMPI build goes to $MPIDICT_SMPI_BUILD (CTest:
# smpi-check/ in the build tree).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
common=(--ranks 16 --routing grid --phases hash_map --keys-per-rank 2000 --timeout 300)
"$here/simulate.sh" "${common[@]}" --out "$scratch/no.jsonl"
"$here/simulate.sh" "${common[@]}" --compute model --record-cost-ns 100 --out "$scratch/model.jsonl"
"$here/simulate.sh" "${common[@]}" --compute model --record-cost-ns 0 --message-cost-ns 20000 \
  --out "$scratch/messages.jsonl"
python3 - "$scratch" <<'PY'
import json, sys
scratch = sys.argv[1]
def read(name):
    try:
        with open(f"{scratch}/{name}.jsonl") as f:
            return {row["metric"]: row["value"] for row in map(json.loads, f)}
    except FileNotFoundError:
        sys.exit(f"check_simulation: the {name} run wrote no results (see the simulate.sh message above)")
no, model, messages = read("no"), read("model"), read("messages")
failures = []
for name, run in (("network-only", no), ("modeled", model)):
    for metric in ("hash_map_insert_seconds", "hash_map_find_seconds", "wrong_answers"):
        if metric not in run:
            failures.append(f"{name} run reports no {metric}")
    if run.get("wrong_answers", 1) != 0:
        failures.append(f"{name} run: {run.get('wrong_answers')} wrong answers")
for metric, floor in (("hash_map_insert_seconds", 0.4e-3), ("hash_map_find_seconds", 0.8e-3)):
    if metric in model and model[metric] < floor:
        failures.append(f"modeled {metric} {model[metric] * 1e3:.3f} ms is below the {floor * 1e3:.1f} ms charged")
    if metric in no and no[metric] >= floor:
        failures.append(f"network-only {metric} {no[metric] * 1e3:.3f} ms is not below {floor * 1e3:.1f} ms")
# 20 us per message sent: the slowest rank sends at least the mean number.
if "hash_map_insert_messages_per_rank" in messages:
    floor = 20e-6 * messages["hash_map_insert_messages_per_rank"]
    if messages.get("hash_map_insert_seconds", 0) < floor:
        failures.append(f"with 20 us per message the insert took {messages.get('hash_map_insert_seconds', 0) * 1e3:.3f}"
                        f" ms, below the {floor * 1e3:.3f} ms charged for its messages")
    if no.get("hash_map_insert_seconds", floor) >= floor:
        failures.append(f"network-only insert {no.get('hash_map_insert_seconds', 0) * 1e3:.3f} ms is not below "
                        f"{floor * 1e3:.3f} ms")
else:
    failures.append("the per-message run reports no hash_map_insert_messages_per_rank")
if messages.get("wrong_answers", 1) != 0:
    failures.append("per-message run: wrong answers")
for line in failures:
    print("check_simulation:", line, file=sys.stderr)
if failures:
    sys.exit(1)
print(f"check_simulation: insert {no['hash_map_insert_seconds'] * 1e3:.3f} ms network-only, "
      f"{model['hash_map_insert_seconds'] * 1e3:.3f} ms modeled; find {no['hash_map_find_seconds'] * 1e3:.3f} / "
      f"{model['hash_map_find_seconds'] * 1e3:.3f} ms; insert at 20 us per message "
      f"{messages['hash_map_insert_seconds'] * 1e3:.3f} ms ({messages['hash_map_insert_messages_per_rank']:.1f} "
      f"messages per rank); every answer right")
PY
