#!/usr/bin/env bash
# Runs the real benchmark binaries on simulated clusters with SimGrid SMPI
# (docs/scaling.md).  Builds the library and bench/scaling with smpicc/smpicxx
# (-DMPIDICT_SMPI=ON) in build-smpi/, then runs bench/scaling on the fat-tree
# or torus platforms in scripts/simgrid/ (one rank per node, 100 Gb/s, 1 us
# links) at each rank count and routing, appending its JSON lines, tagged with the
# platform and the simulator's own wall-clock cost, to the output file.
#
#   scripts/simulate.sh                                   16 64 256 ranks, both routings
#   scripts/simulate.sh --ranks "16 64 256 1024" --phases hash_map --keys-per-rank 2000
#   scripts/simulate.sh --routing grid --out /tmp/grid.jsonl
#   scripts/simulate.sh --topology torus --ranks "16 64"
#
# Options: --ranks "P ..." (16 64 256 1024 have platforms), --routing "direct grid",
# --topology fattree|torus (default fattree),
# --phases all|hash_map|hash_map_insert|rma|linear|skiplist|skiplist_core|skiplist_ranges|
# skiplist_mix|skiplist_patterns, --keys-per-rank N, --buffer-bytes B,
# --total-outbox-bytes T (runtime::config::total_outbox_bytes; default: the library's),
# --timeout S (per run, default 1800), --compute no|model|yes (default no),
# --record-cost-ns N, --message-cost-ns N (with --compute model, default 10 and 0),
# --poll-cost S (simulated seconds per MPI_Test / MPI_Iprobe, default 1e-7),
# --eager-bytes N (standard sends below N bytes complete at once, default 8192),
# --cfg NAME:VALUE (more SimGrid configuration, repeatable),
# --bench-args "ARGS" (more bench/scaling options, e.g. the skiplist phases'
# "--total-order-keys 200 --pattern-queries 4"; bench/scaling --help lists them),
# --out FILE (default build-smpi/scaling.jsonl), --simgrid PREFIX (a SimGrid
# installed there, e.g. 4.1 built from PyPI's sdist, docs/scaling.md; default: the
# smpicc/smpirun on PATH, else Debian's libsimgrid-dev).  The SMPI build goes to
# $MPIDICT_SMPI_BUILD if set (default build-smpi/); use one per SimGrid.
#
# Simulated time: MPI_Wtime under SMPI.  With --compute no (the default) the
# computation between MPI calls takes no simulated time: the curves show what
# the network and the library's messages cost, the same on a loaded machine.
# With --compute model every record costs --record-cost-ns of simulated time
# when it is packed into a message and again when its handler runs, and every
# message between ranks --message-cost-ns when sent and again when received
# (the engine charges them; docs/scaling.md says how 10 ns was measured), the
# same on every run.  With --compute yes it is measured on this machine and replayed at
# smpi/host-speed (1 Gflop/s, the platform's node speed, so a burst costs what
# it cost here), which a busy machine inflates.
# A standard send below --eager-bytes completes when it is posted, as an
# MPI's eager protocol does; larger ones (and every synchronous send: full
# buffers) complete when the receiver has the data.  (SMPI's default,
# 64 KiB, kept each such send in one list of the whole simulation that
# SimGrid 3.32 searches linearly: a 1024-rank run did not finish in 76 minutes.)
# An MPI_Test or
# MPI_Iprobe costs --poll-cost of simulated time: 0.1 us by default, between
# MPICH's 15 ns measured on this machine and a network MPI's completion-queue
# poll (SMPI's default, 100 us, would dominate every polling loop; 1 us, used
# before, still made polling the largest part of an empty flush; docs/scaling.md).
# SMPI's smpi/grow-injected-times is off: by default every failed test anywhere
# in the simulation makes the next one cost more (one counter for all ranks,
# reset by any success), which charged ranks for polls made by others.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
ranks="16 64 256"
routings="direct grid"
topology=fattree
phases="all"
keys=2000
buffer=65536
total_outbox=""
limit=1800
compute=no
record_cost_ns=10
message_cost_ns=0
eager_bytes=8192
poll_cost=1e-7
out="${MPIDICT_SMPI_BUILD:-$root/build-smpi}/scaling.jsonl"
extra_cfg=()
bench_args=""

while [[ $# -gt 0 ]]; do
  case "$1" in
    --ranks) ranks="$2"; shift 2 ;;
    --routing) routings="$2"; shift 2 ;;
    --topology) topology="$2"; shift 2 ;;
    --phases) phases="$2"; shift 2 ;;
    --keys-per-rank) keys="$2"; shift 2 ;;
    --buffer-bytes) buffer="$2"; shift 2 ;;
    --total-outbox-bytes) total_outbox="$2"; shift 2 ;;
    --timeout) limit="$2"; shift 2 ;;
    --compute) compute="$2"; shift 2 ;;
    --record-cost-ns) record_cost_ns="$2"; shift 2 ;;
    --message-cost-ns) message_cost_ns="$2"; shift 2 ;;
    --eager-bytes) eager_bytes="$2"; shift 2 ;;
    --poll-cost) poll_cost="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --cfg) extra_cfg+=("--cfg=$2"); shift 2 ;;
    --bench-args) bench_args="$2"; shift 2 ;;
    --simgrid) export PATH="$2/bin:$PATH" LD_LIBRARY_PATH="$2/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/{/^set -e/!p}' "$0"; exit 0 ;;
    *) echo "simulate.sh: unknown argument '$1' (--help lists them)" >&2; exit 2 ;;
  esac
done

case "$compute" in
  no) simulate=no; cost=0; message_cost=0 ;;
  model) simulate=no; cost="$record_cost_ns"; message_cost="$message_cost_ns" ;;
  yes) simulate=yes; cost=0; message_cost=0 ;;
  *) echo "simulate.sh: --compute takes no, model or yes, not '$compute'" >&2; exit 2 ;;
esac

if ! command -v smpicxx > /dev/null || ! command -v smpirun > /dev/null; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get > /dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libsimgrid-dev
  else
    echo "simulate.sh: SimGrid SMPI is missing; install Debian's libsimgrid-dev (smpicc, smpicxx, smpirun)" >&2
    exit 1
  fi
fi

simgrid_version=$(smpirun -version 2>/dev/null | grep -o -m1 '[0-9][0-9.]*[0-9]' || echo unknown)
build="${MPIDICT_SMPI_BUILD:-$root/build-smpi}"
if [[ ! -f "$build/build.ninja" ]]; then
  CC=smpicc CXX=smpicxx cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMPIDICT_SMPI=ON \
    -DMPIDICT_BUILD_TESTS=OFF -DBUILD_TESTING=OFF -DMPIDICT_BUILD_PYTHON=OFF -DMPIDICT_BUILD_TOOLS=OFF \
    -DMPIDICT_BUILD_APPS=OFF -DMPIDICT_BUILD_EXAMPLES=OFF > "$build.configure.log" 2>&1 ||
    { cat "$build.configure.log" >&2; exit 1; }
fi
cmake --build "$build" --target bench_scaling > /dev/null

mkdir -p "$(dirname "$out")"
for p in $ranks; do
  platform="$here/simgrid/$topology-$p.xml"
  hosts="$here/simgrid/hosts-$p.txt"
  if [[ ! -f "$platform" ]]; then
    echo "simulate.sh: no platform for $p ranks ($platform)" >&2
    exit 2
  fi
  for routing in $routings; do
    log="$build/run-$topology-$p-$routing-$phases-$compute-$keys-$$.log"
    start=$(date +%s.%N)
    status=0
    timeout "$limit" smpirun -np "$p" -platform "$platform" -hostfile "$hosts" \
      --cfg=smpi/host-speed:1Gf --cfg=smpi/simulate-computation:$simulate \
      --cfg=smpi/send-is-detached-thresh:$eager_bytes \
      --cfg=smpi/test:$poll_cost --cfg=smpi/iprobe:$poll_cost --cfg=smpi/grow-injected-times:no \
      --log=root.thres:critical "${extra_cfg[@]}" \
      "$build/bench/scaling" --keys-per-rank "$keys" --buffer-bytes "$buffer" --routing "$routing" \
      ${total_outbox:+--total-outbox-bytes "$total_outbox"} \
      --phases "$phases" --record-cost-ns "$cost" --message-cost-ns "$message_cost" $bench_args > "$log.json" 2> "$log" || status=$?
    wall=$(printf "%.2f" "$(echo "$(date +%s.%N) - $start" | bc)")
    if [[ $status -ne 0 ]]; then
      echo "simulate.sh: $p ranks, $routing: exit $status after ${wall}s (log: $log)" >&2
      continue
    fi
    # Each line gets the run's platform, routing asked for and simulator cost.
    sed -e "s|}\$|,\"simgrid\":\"$simgrid_version\",\"platform\":\"$topology-$p\",\"routing_asked\":\"$routing\",\"phases\":\"$phases\",\"compute\":\"$compute\",\"poll_cost\":$poll_cost,\"eager_bytes\":$eager_bytes,\"simulator_seconds\":$wall}|" \
      "$log.json" >> "$out"
    echo "simulate.sh: $p ranks, $routing, $phases: ${wall}s of simulation" >&2
  done
done
echo "simulate.sh: results in $out" >&2
