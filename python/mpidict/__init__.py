"""mpidict from Python: distributed dictionaries over mpi4py communicators,
driven by numpy batches (docs/python.md).

    from mpi4py import MPI
    import numpy as np
    import mpidict

    with mpidict.hash_map("int64", "float64", comm=MPI.COMM_WORLD) as m:
        m.async_insert_many(keys, values)    # numpy arrays; fire-and-forget
        m.flush()                            # collective
        counts, found = m.find_many(keys)    # counts[i] values of keys[i]

Containers: hash_map (multi-valued), linear_hash_map, skiplist_map (ordered:
ranges and pattern queries), rma_hash_set.  Keys and values are numpy dtypes
("int64", "uint64", "float64", "int32", ... any fixed width; wider ones such as
"S16" travel as byte strings), or ``bytes`` / ``str`` for variable-length byte
strings.  Errors are subclasses of mpidict.Error with the library's messages.

mpidict.checkpoint reads saved containers without MPI (numpy only).
"""

from __future__ import annotations

# The containers load mpi4py and the compiled module on first use, so that
# mpidict.checkpoint (numpy only) works where neither is installed.
_CONTAINERS = (
    "hash_map", "linear_hash_map", "skiplist_map", "SkiplistSnapshot", "RebalanceResult", "rma_hash_set", "Request", "InsertManyResult",
    "Error", "InvalidArgumentError", "UseAfterDestroyError", "CollectiveMismatchError", "MPIError",
    "DecodeError", "CheckpointError", "TableFullError", "MPIMismatchError",
)
__all__ = list(_CONTAINERS)


def __getattr__(name):
    if name in _CONTAINERS:
        from . import _containers

        return getattr(_containers, name)
    raise AttributeError(f"module 'mpidict' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_CONTAINERS))
