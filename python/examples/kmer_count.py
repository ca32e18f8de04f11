"""Distributed k-mer counting with top-k, from Python (docs/python.md).

Every rank cuts its share of the reads into k-mers (2 bits a base, packed into a
uint64), inserts them into a hash_map in one batch each, and the counts are the
number of values under each key.  The top k come from each rank's local top k,
gathered on rank 0.  Verified against a serial count (collections.Counter)
when --verify is given.

    mpiexec -n 4 python kmer_count.py --reads 2000 --length 150 --k 21 --top 10 --verify
"""
import argparse
import collections
import sys

import numpy as np
from mpi4py import MPI

import mpidict

BASES = np.frombuffer(b"ACGT", dtype=np.uint8)


def kmers_of(read, k):
    """uint64 codes of every k-mer of one read (array of 0-3)."""
    n = len(read) - k + 1
    if n <= 0:
        return np.empty(0, dtype=np.uint64)
    codes = np.zeros(n, dtype=np.uint64)
    for j in range(k):                       # k vector passes, not n * k Python steps
        codes = (codes << np.uint64(2)) | read[j:j + n].astype(np.uint64)
    return codes


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument("--length", type=int, default=150)
    parser.add_argument("--k", type=int, default=21)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--verify", action="store_true")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    if not 1 <= args.k <= 32:
        if rank == 0:
            print("--k must be in 1..32 (a k-mer is packed into 64 bits)", file=sys.stderr)
        return 2

    # The same reads everywhere (a genome with repeats, so some k-mers recur); rank r takes every p-th.
    rng = np.random.default_rng(args.seed)
    genome = rng.integers(0, 4, size=max(20000, 4 * args.length), dtype=np.uint8)
    genome[10000:10300] = genome[1000:1300]  # a repeat
    starts = rng.integers(0, len(genome) - args.length, size=args.reads)
    reads = [genome[s:s + args.length] for s in starts]
    mine = reads[rank::size]

    with mpidict.hash_map("uint64", "uint8", expected_keys_per_rank=args.reads * args.length // size) as counts:
        for read in mine:
            codes = kmers_of(read, args.k)
            counts.async_insert_many(codes, np.ones(len(codes), dtype=np.uint8))  # one value per sighting
        counts.flush()
        keys, how_many, _ = counts.local_items()
        order = np.lexsort((keys, -how_many.astype(np.int64)))[:args.top]  # count down, then code up
        local_top = list(zip(how_many[order].tolist(), keys[order].tolist()))
        distinct = counts.global_size()
        total = counts.global_value_count()

    tops = comm.gather(local_top, root=0)
    status = 0
    if rank == 0:
        top = sorted((pair for part in tops for pair in part), key=lambda p: (-p[0], p[1]))[:args.top]
        print(f"{total} k-mers, {distinct} distinct, over {size} ranks; top {args.top}:")
        for count, code in top:
            text = "".join(chr(BASES[(code >> (2 * (args.k - 1 - j))) & 3]) for j in range(args.k))
            print(f"  {count:6d}  {text}")
        if args.verify:
            serial = collections.Counter()
            for read in reads:
                serial.update(kmers_of(read, args.k).tolist())
            want = sorted(serial.items(), key=lambda p: (-p[1], p[0]))[:args.top]
            ok = [(c, k) for k, c in want] == top and sum(serial.values()) == total and len(serial) == distinct
            print("verified against a serial count:", "yes" if ok else "NO")
            status = 0 if ok else 1
    return comm.bcast(status, root=0)


if __name__ == "__main__":
    sys.exit(main())
