"""Python overhead of mpidict's hash_map (issue 19): insert_many and find_many from
Python against the same operations written in C++, in the same process and run
(hash_map_u64_u64.cpp_reference: async_insert in a loop + flush, then find_many,
as bench/hash_map_throughput does), and a per-key Python loop for contrast.
Medians of --reps; JSON lines on stdout (rank 0), like the C++ benchmarks.

    mpiexec -n 2 .venv/bin/python bench/python_hash_map.py --keys-per-rank 1000000 --reps 3
"""
import argparse
import json
import statistics
import sys

import numpy as np
from mpi4py import MPI

import mpidict
from mpidict import _containers

SALT = 0x9E3779B97F4A7C15


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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys-per-rank", type=int, default=1_000_000)
    parser.add_argument("--loop-keys", type=int, default=20_000, help="keys per rank for the per-key loop")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    n, p = args.keys_per_rank, comm.size
    keys = mix64(np.arange(comm.rank * n, (comm.rank + 1) * n, dtype=np.uint64) ^ np.uint64(SALT)).view(np.int64)
    total = n * p
    py_insert, py_find, cpp_insert, cpp_find, loop_insert, loop_find = [], [], [], [], [], []
    for _ in range(args.reps):
        with mpidict.hash_map("int64", "int64", expected_keys_per_rank=n + n // 4) as m:
            t = timed(comm, lambda: (m.insert_many(keys, keys), m.flush()))
            py_insert.append(total / t)
            found = {}
            # flush(): a rank whose finds are done keeps serving the others' (an mpi4py
            # collective does not), exactly as the C++ reference does.
            t = timed(comm, lambda: (found.update(result=m.find_many(keys, limit=1)), m.flush()))
            py_find.append(total / t)
            counts, values = found["result"]
            if not (counts == 1).all() or not np.array_equal(values, keys):
                raise SystemExit("python_hash_map: find_many returned wrong values")
        with mpidict.hash_map("uint64", "uint64", expected_keys_per_rank=n + n // 4) as m:
            insert_s, find_s = m._impl.cpp_reference(n, comm.rank * n)
            cpp_insert.append(total / insert_s)
            cpp_find.append(total / find_s)
        with mpidict.hash_map("int64", "int64") as m:
            few = keys[:args.loop_keys].tolist()

            def insert_loop():
                for k in few:
                    m.async_insert(k, k)
                m.flush()

            loop_insert.append(len(few) * p / timed(comm, insert_loop))

            def find_loop():
                requests = [m.find(k) for k in few[:2000]]
                for r in requests:
                    r.get()
                m.flush()

            loop_find.append(min(2000, len(few)) * p / timed(comm, find_loop))
    if comm.rank == 0:
        med = statistics.median
        context = {"ranks": p, "keys_per_rank": n, "reps": args.reps}
        figures = [
            ("python_insert_many_rate", med(py_insert), "ops/s"),
            ("cpp_insert_rate", med(cpp_insert), "ops/s"),
            ("python_find_many_rate", med(py_find), "ops/s"),
            ("cpp_find_many_rate", med(cpp_find), "ops/s"),
            ("python_per_key_insert_rate", med(loop_insert), "ops/s"),
            ("python_per_key_find_request_rate", med(loop_find), "ops/s"),
        ]
        for metric, value, unit in figures:
            print(json.dumps({"bench": "python_hash_map", "metric": metric, "value": value, "unit": unit, **context}))
        for metric, ours, theirs in (("insert_many_vs_cpp", med(py_insert), med(cpp_insert)),
                                     ("find_many_vs_cpp", med(py_find), med(cpp_find))):
            ratio = ours / theirs
            print(json.dumps({"bench": "python_hash_map", "metric": metric, "value": ratio, "unit": "ratio",
                              "target": ">= 0.8", "meets_target": ratio >= 0.8, **context}))
        print("python_hash_map: " + ", ".join(f"{m} {v / 1e6:.2f} M/s" for m, v, _ in figures), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
