"""Python overhead of mpidict's batch calls (issues 19 and 51): insert_many, find_many
(and skiplist_map's range, one at a time and as requests pipelined --range-window deep) from Python against the same operations written in C++
against the library (python/src/reference.hpp), in the same process and run.

The C++ reference of each phase runs on the very numpy array Python passes (its
buffer; values = keys), checks every answer as the Python side does, and runs
interleaved with the Python phase: each repetition runs both sides on fresh
containers, in alternating order (Python first on even repetitions).  After the
first repetition's inserts the two containers' keys are compared rank by rank: the
run fails if the key sets differ.  Figures are medians of --reps.

Every ratio is printed beside both rates, with the machine's load (os.getloadavg)
and whether the ranks outnumber the cores ("oversubscribed").  Self-check: a binding
cannot be faster than the library it binds, so the run fails when a Python rate
exceeds its C++ reference's by more than --speed-check-tolerance (noise).

    PYTHONPATH=build/python/stage mpiexec -n 2 .venv/bin/python bench/python_hash_map.py \\
        --keys-per-rank 1000000 --reps 3
"""
import argparse
import collections
import json
import os
import statistics
import sys

import numpy as np
from mpi4py import MPI

import mpidict

SALT = 0x9E3779B97F4A7C15
PIPELINED = "skiplist_map range_request pipelined (entries)"


def mix64(x):
    """mpidict::mix64 (local/hash.hpp) on a uint64 array."""
    x = x.copy()
    with np.errstate(over="ignore"):
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return x


def timed(comm, body):
    comm.Barrier()
    start = MPI.Wtime()
    body()
    return comm.allreduce(MPI.Wtime() - start, op=MPI.MAX)


def fail(comm, message):
    if comm.rank == 0:
        print("python_hash_map: " + message, file=sys.stderr, flush=True)
    raise SystemExit(1)


def range_ok(k, v, lo, hi, expected):
    """A range's answer as the C++ reference checks it: `expected` entries, keys in
    [lo, hi] strictly ascending, each value equal to its key.  Same-dtype compares
    (an int64 array against a uint64 one would go through float64: slower, and
    inexact above 2**53)."""
    return (len(k) == expected and np.array_equal(k, v.view(np.int64))
            and (len(k) == 0 or (k[0] >= lo and k[-1] <= hi and bool((k[1:] > k[:-1]).all()))))


def check_all(comm, ok, message):
    """Collective: fails every rank when any rank's check failed."""
    if not comm.allreduce(bool(ok), op=MPI.LAND):
        fail(comm, message)


def same_key_sets(comm, a, b, what):
    """Collective: this rank's keys of the Python container (a) and of the C++ one (b)."""
    ok = len(a) == len(b) and np.array_equal(np.sort(a), np.sort(b))
    check_all(comm, ok, f"{what}: the key sets differ between the Python phase and its C++ reference "
                        f"(rank {comm.rank}: {len(a)} keys against {len(b)})")


def run_pair(rep, python_phase, cpp_phase):
    """Both sides of one phase, Python first on even repetitions; (python s, cpp s)."""
    if rep % 2 == 0:
        py = python_phase()
        return py, cpp_phase()
    cpp = cpp_phase()
    return python_phase(), cpp


def bench_hash_map(comm, args, keys, ref_keys, results):
    n, p = len(keys), comm.size
    total = n * p
    u64 = keys.view(np.uint64)
    for rep in range(args.reps):
        with mpidict.hash_map("int64", "int64", expected_keys_per_rank=n + n // 4) as py, \
                mpidict.hash_map("uint64", "uint64", expected_keys_per_rank=n + n // 4) as cpp:
            t_py, t_cpp = run_pair(rep, lambda: timed(comm, lambda: (py.async_insert_many(keys, keys), py.flush())),
                                   lambda: cpp._impl.cpp_reference_insert(ref_keys))
            results["hash_map insert_many"].append((total / t_py, total / t_cpp))
            if rep == 0:
                same_key_sets(comm, py.local_items()[0].view(np.uint64), cpp.local_items()[0], "hash_map")
            found = {}

            # flush(): a rank whose finds are done keeps serving the others' (an mpi4py
            # collective does not), exactly as the C++ reference does.
            def python_find():
                return timed(comm, lambda: (found.update(result=py.find_many(keys, limit=1)), py.flush()))

            t_py, t_cpp = run_pair(rep, python_find, lambda: cpp._impl.cpp_reference_find(u64))
            counts, values = found["result"]
            check_all(comm, (counts == 1).all() and np.array_equal(values, keys), "hash_map find_many: wrong values")
            results["hash_map find_many"].append((total / t_py, total / t_cpp))
        # A per-key Python loop, for contrast (no reference: the batch is the comparison).
        with mpidict.hash_map("int64", "int64") as m:
            few = keys[:args.loop_keys].tolist()

            def insert_loop():
                for k in few:
                    m.async_insert(k, k)
                m.flush()

            results["per-key insert loop"].append(len(few) * p / timed(comm, insert_loop))

            def find_loop():
                requests = [m.find(k) for k in few[:2000]]
                for r in requests:
                    r.get()
                m.flush()

            results["per-key find requests"].append(min(2000, len(few)) * p / timed(comm, find_loop))


def bench_linear(comm, args, keys, ref_keys, results):
    n, p = len(keys), comm.size
    total = n * p
    u64 = keys.view(np.uint64)
    for rep in range(args.reps):
        with mpidict.linear_hash_map("int64", "int64") as py, mpidict.linear_hash_map("uint64", "uint64") as cpp:
            t_py, t_cpp = run_pair(rep, lambda: timed(comm, lambda: (py.async_insert_many(keys, keys), py.flush())),
                                   lambda: cpp._impl.cpp_reference_insert(ref_keys))
            results["linear_hash_map insert_many"].append((total / t_py, total / t_cpp))
            if rep == 0:
                # LH*LH moves keys between ranks by splits: compare the global sets on rank 0.
                a = comm.gather(py.local_items()[0].view(np.uint64), root=0)
                b = comm.gather(cpp.local_items()[0], root=0)
                same_key_sets(comm, np.concatenate(a) if a else np.empty(0, np.uint64),
                              np.concatenate(b) if b else np.empty(0, np.uint64), "linear_hash_map")
            found = {}

            def python_find():
                return timed(comm, lambda: (found.update(result=py.find_many(keys)), py.flush()))

            t_py, t_cpp = run_pair(rep, python_find, lambda: cpp._impl.cpp_reference_find(u64))
            hit, values = found["result"]
            check_all(comm, hit.all() and np.array_equal(values, keys), "linear_hash_map find_many: wrong values")
            results["linear_hash_map find_many"].append((total / t_py, total / t_cpp))


def bench_skiplist(comm, args, keys, ref_keys, results):
    n, p = len(keys), comm.size
    total = n * p
    # Ranges: --ranges-per-rank of about --range-results keys each, starting at this
    # rank's keys; the expected count from the sorted global key set.
    everything = np.sort(np.concatenate(comm.allgather(keys)))
    width = np.int64(min(2**62, int(args.range_results * 2.0**64 / max(total, 1))))
    step = max(1, n // max(args.ranges_per_rank, 1))
    lo = np.ascontiguousarray(keys[::step][:args.ranges_per_rank])
    with np.errstate(over="ignore"):
        hi = lo + width
    hi = np.where(hi < lo, np.int64(np.iinfo(np.int64).max), hi)  # clipped at the top
    expected = (np.searchsorted(everything, hi, side="right") - np.searchsorted(everything, lo, side="left"))
    expected = expected.astype(np.uint64)
    entries = int(comm.allreduce(int(expected.sum())))
    for rep in range(args.reps):
        with mpidict.skiplist_map("int64", "int64") as py, mpidict.skiplist_map("int64", "int64") as cpp:
            t_py, t_cpp = run_pair(rep, lambda: timed(comm, lambda: (py.insert_many(keys, keys), py.flush())),
                                   lambda: cpp._impl.cpp_reference_insert(ref_keys))
            results["skiplist_map insert_many"].append((total / t_py, total / t_cpp))
            if rep == 0:
                # Ranks own key ranges: rank 0 reads each whole map with one range
                # while the others serve in flush(); the global sets are compared.
                def all_keys(m):
                    k = m.range(np.iinfo(np.int64).min, np.iinfo(np.int64).max)[0] if comm.rank == 0 else None
                    m.flush()
                    return np.asarray(k if k is not None else np.empty(0, np.int64))

                same_key_sets(comm, all_keys(py), all_keys(cpp), "skiplist_map")
            found = {}

            def python_find():
                return timed(comm, lambda: (found.update(result=py.find_many(keys)), py.flush()))

            t_py, t_cpp = run_pair(rep, python_find, lambda: cpp._impl.cpp_reference_find(keys))
            hit, values = found["result"]
            check_all(comm, hit.all() and np.array_equal(values, keys), "skiplist_map find_many: wrong values")
            results["skiplist_map find_many"].append((total / t_py, total / t_cpp))
            got = {}

            def python_range():
                def body():
                    wrong = 0
                    for i in range(len(lo)):
                        k, v = py.range(int(lo[i]), int(hi[i]))
                        wrong += not range_ok(k, v, lo[i], hi[i], expected[i])
                    py.flush()
                    got["wrong"] = wrong
                return timed(comm, body)

            t_py, t_cpp = run_pair(rep, python_range, lambda: cpp._impl.cpp_reference_range(lo, hi, expected, 1))
            check_all(comm, got["wrong"] == 0, "skiplist_map range: wrong entries")
            results["skiplist_map range (entries)"].append((entries / t_py, entries / t_cpp))

            # The request form pipelined (issue 49): up to --range-window ranges in
            # flight on both sides, each started as the oldest is read.
            def python_pipelined():
                def body():
                    wrong, pending, started = 0, collections.deque(), 0
                    for i in range(len(lo)):
                        while started < len(lo) and len(pending) < args.range_window:
                            pending.append(py.range_request(int(lo[started]), int(hi[started])))
                            started += 1
                        k, v = pending.popleft().get()
                        wrong += not range_ok(k, v, lo[i], hi[i], expected[i])
                    py.flush()
                    got["wrong"] = wrong
                return timed(comm, body)

            t_py, t_cpp = run_pair(rep, python_pipelined,
                                   lambda: cpp._impl.cpp_reference_range(lo, hi, expected, args.range_window))
            check_all(comm, got["wrong"] == 0, "skiplist_map range_request pipelined: wrong entries")
            results[PIPELINED].append((entries / t_py, entries / t_cpp))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys-per-rank", type=int, default=1_000_000)
    parser.add_argument("--linear-keys-per-rank", type=int, default=None, help="default: --keys-per-rank")
    parser.add_argument("--skiplist-keys-per-rank", type=int, default=None, help="default: --keys-per-rank")
    parser.add_argument("--containers", default="hash_map,linear_hash_map,skiplist_map")
    parser.add_argument("--loop-keys", type=int, default=20_000, help="keys per rank for the per-key loop")
    parser.add_argument("--ranges-per-rank", type=int, default=200)
    parser.add_argument("--range-results", type=int, default=1000, help="about this many entries per range")
    parser.add_argument("--range-window", type=int, default=16,
                        help="ranges in flight in the pipelined phase (Python range_request and C++ alike)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--speed-check-tolerance", type=float, default=1.25,
                        help="fail when a Python rate exceeds its C++ reference's by more than this factor")
    parser.add_argument("--corrupt-reference-keys", action="store_true",
                        help="(test) give the C++ references the old XOR-salted keys: the run must fail")
    args = parser.parse_args()
    if args.range_window < 1:
        parser.error("--range-window must be at least 1")
    comm = MPI.COMM_WORLD
    p = comm.size
    wanted = args.containers.split(",")
    results = {name: [] for name in ("hash_map insert_many", "hash_map find_many", "per-key insert loop",
                                     "per-key find requests", "linear_hash_map insert_many",
                                     "linear_hash_map find_many", "skiplist_map insert_many",
                                     "skiplist_map find_many", "skiplist_map range (entries)", PIPELINED)}
    sizes = {}

    def keys_for(n):
        keys = mix64(np.arange(comm.rank * n, (comm.rank + 1) * n, dtype=np.uint64) ^ np.uint64(SALT)).view(np.int64)
        if args.corrupt_reference_keys:
            # The bug of issue 51: mix64(i ^ rank * n) repeats other ranks' keys.
            ref = mix64(np.arange(n, dtype=np.uint64) ^ np.uint64(comm.rank * n))
        else:
            ref = keys.view(np.uint64)
        return keys, ref

    for name, n, run in (("hash_map", args.keys_per_rank, bench_hash_map),
                         ("linear_hash_map", args.linear_keys_per_rank or args.keys_per_rank, bench_linear),
                         ("skiplist_map", args.skiplist_keys_per_rank or args.keys_per_rank, bench_skiplist)):
        if name in wanted:
            keys, ref = keys_for(n)
            if name == "skiplist_map":
                ref = ref.view(np.int64)
            sizes[name] = n
            run(comm, args, keys, ref, results)
    load = os.getloadavg()
    cores = os.cpu_count() or 1
    if comm.rank == 0:
        med = statistics.median
        context = {"ranks": p, "reps": args.reps, "cores": cores, "oversubscribed": p > cores,
                   "load_1_5_15": [round(x, 2) for x in load]}
        summary = []
        for label, samples in results.items():
            if not samples:
                continue
            container = label.split()[0] if label.split()[0] in sizes else "hash_map"
            fields = dict(context, keys_per_rank=sizes[container])
            if label == PIPELINED:
                fields["range_window"] = args.range_window
            if not isinstance(samples[0], tuple):
                print(json.dumps({"bench": "python_hash_map", "metric": label, "python_rate": med(samples),
                                  "unit": "ops/s", **fields}))
                summary.append(f"{label} {med(samples) / 1e6:.2f} M/s")
                continue
            py_rate = med([s[0] for s in samples])
            cpp_rate = med([s[1] for s in samples])
            ratio = py_rate / cpp_rate
            target = None if label == "skiplist_map range (entries)" else 0.8
            record = {"bench": "python_hash_map", "metric": label, "python_rate": py_rate, "cpp_rate": cpp_rate,
                      "ratio": ratio, "unit": "ops/s", "paired_ratios": [s[0] / s[1] for s in samples],
                      "target": ">= 0.8" if target else "(reported)",
                      "meets_target": ratio >= target if target else None, **fields}
            print(json.dumps(record))
            summary.append(f"{label}: Python {py_rate / 1e6:.2f} M/s, C++ {cpp_rate / 1e6:.2f} M/s, ratio {ratio:.2f}")
        print("python_hash_map (load " + " ".join(f"{x:.2f}" for x in load) +
              (", OVERSUBSCRIBED" if p > cores else "") + "):\n  " + "\n  ".join(summary), file=sys.stderr, flush=True)
    # Self-check: a binding cannot beat the library it binds.
    too_fast = []
    for label, samples in results.items():
        if samples and isinstance(samples[0], tuple):
            py_rate = statistics.median([s[0] for s in samples])
            cpp_rate = statistics.median([s[1] for s in samples])
            if py_rate > args.speed_check_tolerance * cpp_rate:
                too_fast.append(f"{label} ({py_rate / cpp_rate:.2f}x)")
    if too_fast:
        fail(comm, "self-check failed: Python faster than its C++ reference by more than "
                   f"{args.speed_check_tolerance}x, so the reference is not the library's speed: " + ", ".join(too_fast))
    return 0


if __name__ == "__main__":
    sys.exit(main())
