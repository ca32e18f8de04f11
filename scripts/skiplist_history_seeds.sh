#!/usr/bin/env bash
# The long run of the skiplist_map history checks (docs/skiplist_map.md, "The
# checkers and why they are sound"): for every consistency mode, SEEDS
# simulation seeds (default 1000; CTest's sim.skiplist_history.<mode> runs a
# few hundred) through tools/histcheck, with ranges and matches in every mode,
# then the mode broken on purpose (config.break_consistency_for_testing), of
# which some history must be rejected.  Prints one line per run with its time.
#
#   scripts/skiplist_history_seeds.sh [BUILD_DIR] [SEEDS]      (after cmake --build BUILD_DIR)
set -euo pipefail
build="${1:-build}"
seeds="${2:-1000}"
sim="$build/tests/sim/sim_skiplist_history"
checker="$build/tools/histcheck/histcheck"
for tool in "$sim" "$checker"; do
  [[ -x "$tool" ]] || { echo "skiplist_history_seeds: $tool is missing (cmake --build $build)" >&2; exit 2; }
done
status=0
for mode in sequential none total_order; do
  start=$SECONDS
  if "$sim" --mode "$mode" --seeds "$seeds" --checker "$checker" | tail -n 3; then verdict=pass; else verdict=FAIL; status=1; fi
  echo "skiplist_history_seeds: $mode, $seeds seeds: $verdict ($((SECONDS - start)) s)"
  start=$SECONDS
  if "$sim" --mode "$mode" --seeds "$seeds" --break --expect-reject --checker "$checker" | tail -n 3; then
    verdict=pass; else verdict=FAIL; status=1; fi
  echo "skiplist_history_seeds: $mode broken, $seeds seeds: $verdict ($((SECONDS - start)) s)"
done
# total_order across callers (issue 42): two callers, dependent chains, the order probe.
start=$SECONDS
if "$sim" --mode total_order --chains --probe --seeds "$seeds" --checker "$checker" | tail -n 4; then
  verdict=pass; else verdict=FAIL; status=1; fi
echo "skiplist_history_seeds: total_order chains + probe, $seeds seeds: $verdict ($((SECONDS - start)) s)"
start=$SECONDS
if "$sim" --mode total_order --chains --probe --unordered --seeds "$seeds" | tail -n 2; then
  verdict=pass; else verdict=FAIL; status=1; fi
echo "skiplist_history_seeds: total_order chains, markers off (an overtaking expected), $seeds seeds: $verdict ($((SECONDS - start)) s)"
# Ranges that go ahead in sequential (issue 42): runs of range_from queries, then the check skipped.
start=$SECONDS
if "$sim" --mode sequential --range-runs --seeds "$seeds" --checker "$checker" | tail -n 3; then
  verdict=pass; else verdict=FAIL; status=1; fi
echo "skiplist_history_seeds: sequential range runs, $seeds seeds: $verdict ($((SECONDS - start)) s)"
start=$SECONDS
if "$sim" --mode sequential --range-runs --trust-ranges --expect-reject --seeds "$seeds" --checker "$checker" | tail -n 3; then
  verdict=pass; else verdict=FAIL; status=1; fi
echo "skiplist_history_seeds: sequential range runs, check skipped, $seeds seeds: $verdict ($((SECONDS - start)) s)"
exit $status
