"""The stuck-wait message from Python (issue 41's scenario, made to end).

In the issue, every rank called find_many, then comm.allreduce without flush():
rank 0 finished its lookups and entered the allreduce, rank 1 still needed rank
0 to answer, and the job hung with no word. Here rank 0 looks up only keys it
owns (answered at once, before a barrier), then stays away from the library for 4x the
detector's threshold (in place of the allreduce it would otherwise never
leave) and flushes; every other rank looks up keys rank 0 owns, so its
find_many waits for rank 0. Run under mpiexec with MPIDICT_STUCK_WAIT_SECONDS
set low (tests/python/CMakeLists.txt: 2 s). Each waiting rank must print the
message once, on its own stderr (captured here at the file-descriptor level,
where the engine writes), within 15 s, naming rank 0 and the likely cause;
the answers must still be right and the job must end. A second phase does the
same with one request, find(k).get() (issue 48, item 16). Then everyone flushes
and the allreduce of the issue is made, correctly."""
import os
import re
import sys
import tempfile
import time

import numpy as np
from mpi4py import MPI

import mpidict

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
threshold = float(os.environ["MPIDICT_STUCK_WAIT_SECONDS"])
failures = []

m = mpidict.hash_map("int64", "int64")
candidates = np.arange(1, 4000, dtype=np.int64)
own = np.array([k for k in candidates if m.owner(k) == 0], dtype=np.int64)[:100]
m.insert_many(own if rank == 0 else own[:0], own * 7 if rank == 0 else own[:0])
m.flush()
if rank == 0:
    # Rank 0's lookups of its own keys (answered at once) come before the barrier: a find_many
    # serves while it waits, so made after it, it could answer the others' batch before rank 0
    # goes away, and they would have nothing to wait for.
    counts, values = m.find_many(own, 1)
    if not (np.all(counts == 1) and np.array_equal(values, own * 7)):
        failures.append("rank 0's own lookups are wrong")
comm.Barrier()  # after flush() and a completed find_many: allowed; now rank 0 is surely out of the library

REPORT = (r"\. Likely cause: rank 0 is probably inside an MPI call of its own: a collective \(MPI_Allreduce, "
          r"MPI_Barrier, mpi4py's comm\.allreduce[^\n]*call flush\(\) on every rank before an MPI collective of "
          r"your own[^\n]*This rank keeps waiting\.")


def captured(call):
    """Runs call() with this rank's stderr (fd 2, where the engine writes) captured;
    returns (its result, the seconds it took, the text written)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        started = time.monotonic()
        try:
            result = call()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        waited = time.monotonic() - started
        capture.seek(0)
        text = capture.read().decode(errors="replace")
    sys.stderr.write(text)
    return result, waited, text


def check_report(phase, text, waited, what):
    reports = re.findall(rf"mpidict: rank {rank} has waited ([0-9]+) s for {what}, and no message came from "
                         rf"rank 0 for [0-9.]+ s{REPORT}", text)
    if len(reports) != 1:
        failures.append(f"{phase}, rank {rank}: {len(reports)} stuck-wait messages in the wait, expected 1: {text!r}")
    elif int(reports[0]) > 15:
        failures.append(f"{phase}, rank {rank}: the message came after {reports[0]} s (at most 15)")
    if waited < 2 * threshold:
        failures.append(f"{phase}, rank {rank}: returned after {waited:.2f} s, before rank 0 came back")


# Phase 1, the batch: find_many of keys rank 0 owns.
if rank == 0:
    time.sleep(4 * threshold)                       # away, as if inside the allreduce
    m.flush()
else:
    (counts, values), waited, text = captured(lambda: m.find_many(own, 1))   # needs rank 0
    if not (np.all(counts == 1) and np.array_equal(values, own * 7)):
        failures.append(f"find_many, rank {rank}: wrong answers after the wait")
    check_report("find_many", text, waited, r"the answers of a batch \(find_many[^\n]*")
    m.flush()

# Phase 2 (issue 48, item 16): one request, find(k).get(), while its owner is away.
comm.Barrier()  # after flush(): allowed
key = int(own[rank % len(own)])
if rank == 0:
    time.sleep(4 * threshold)
    m.flush()
else:
    found, waited, text = captured(lambda: m.find(key).get())
    if list(np.asarray(found)) != [key * 7]:
        failures.append(f"find(k).get(), rank {rank}: {found!r} for key {key}, expected [{key * 7}]")
    check_report("find(k).get()", text, waited,
                 r"the answer to a request \(find: a request's get\(\) or wait\(\)\)")
    m.flush()

total = comm.allreduce(len(failures))               # the allreduce, after flush()
m.destroy()
for failure in failures:
    print("stuck_wait.py: FAIL:", failure, flush=True)
if rank == 0:
    print(f"stuck_wait.py: {'PASS' if total == 0 else 'FAIL'}: {total} failures on {size} ranks", flush=True)
sys.exit(0 if total == 0 else 1)
