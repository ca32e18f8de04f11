"""Rank 1 raises while the others wait in a collective flush: run under
`python -m mpi4py`, the uncaught exception aborts the job, so nobody waits
forever.  tests/python/CMakeLists.txt expects a quick non-zero exit."""
import numpy as np
from mpi4py import MPI

import mpidict

with mpidict.hash_map("int64", "int64") as m:
    m.insert_many(np.arange(10, dtype=np.int64), np.arange(10, dtype=np.int64))
    if MPI.COMM_WORLD.rank == 1:
        m.insert_many(np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int64))  # wrong dtype: raises here
    m.flush()
print("unreachable on every rank")
