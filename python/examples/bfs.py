"""Breadth-first search with a distributed visited set, from Python (docs/python.md).

The graph is implicit (a random-ish successor function over 0..n-1), as in
orbit enumeration: the frontier is split across ranks, each rank expands its
part, and rma_hash_set.insert_if_absent_many keeps only the vertices nobody has
visited yet, in one call per level.  Verified against a serial BFS with a
Python set when --verify is given.

    mpiexec -n 4 python bfs.py --vertices 200000 --verify
"""
import argparse
import sys

import numpy as np
from mpi4py import MPI

import mpidict


def successors(vertices, n):
    """Three successors per vertex: an affine step, a multiplicative one, a neighbour."""
    v = vertices.astype(np.int64)
    return np.concatenate([(v * 3 + 1) % n, (v * 7919) % n, (v + 1) % n])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vertices", type=int, default=200000)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--verify", action="store_true")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    n = args.vertices

    with mpidict.rma_hash_set("int64", expected_per_rank=n // size + 1024) as visited:
        frontier = np.array([args.start], dtype=np.int64) if rank == 0 else np.empty(0, dtype=np.int64)
        if rank == 0:
            visited.insert_if_absent_many(frontier)
        levels = 0
        while comm.allreduce(len(frontier)) > 0:
            candidates = np.unique(successors(frontier, n))
            status = visited.insert_if_absent_many(candidates)   # 1: new, 0: seen, -1: table full
            if (status < 0).any():
                raise RuntimeError("visited set full: raise expected_per_rank")
            new = candidates[status == 1]
            # Deal the new vertices out evenly for the next level.
            everyone = comm.allgather(new)
            frontier = np.concatenate(everyone)[rank::size] if everyone else new
            levels += 1
        visited.flush()
        reached = visited.global_size()

    status = 0
    if rank == 0:
        print(f"{reached} of {n} vertices reached from {args.start} in {levels - 1} levels on {size} ranks")
        if args.verify:
            seen = {args.start}
            level = [args.start]
            while level:
                nxt = []
                for v in level:
                    for w in ((v * 3 + 1) % n, (v * 7919) % n, (v + 1) % n):
                        if w not in seen:
                            seen.add(w)
                            nxt.append(w)
                level = nxt
            ok = len(seen) == reached
            print("verified against a serial BFS:", "yes" if ok else f"NO (serial reached {len(seen)})")
            status = 0 if ok else 1
    return comm.bcast(status, root=0)


if __name__ == "__main__":
    sys.exit(main())
