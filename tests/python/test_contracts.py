"""The contracts of docs/architecture.md, "Contracts" (issue 40), from Python at
1-4 ranks (run with test_containers.py, tests/python/CMakeLists.txt): insert_many
blocks and returns an InsertManyResult; find_many answers every key, in key
order; capacity refusals are results, never exceptions; async_insert_many is the
fire-and-forget form, its refusals in async_rejected()."""

import numpy as np
import pytest
from mpi4py import MPI

import mpidict

MAPS = ["hash_map", "linear_hash_map", "skiplist_map"]


def total(value):
    return MPI.COMM_WORLD.allreduce(int(value))


@pytest.mark.parametrize("container", MAPS)
def test_batches(container, rank, size):
    keys = np.arange(rank * 1000, rank * 1000 + 200, dtype=np.int64)
    with getattr(mpidict, container)("int64", "int64") as m:
        result = m.insert_many(keys, keys * 3)
        assert isinstance(result, mpidict.InsertManyResult)
        assert (result.stored, result.replaced, result.refused) == (200, 0, 0)
        assert result.complete and result.added == 200
        with pytest.warns(DeprecationWarning):   # the old count (skiplist_map), kept deprecated
            assert result == 200 and int(result) == 200
        again = m.insert_many(keys[:10], keys[:10] * 5)
        if container == "hash_map":
            assert (again.stored, again.replaced, again.refused) == (10, 0, 0)  # appended
        else:
            assert (again.stored, again.replaced, again.refused) == (10, 10, 0)
        absent = np.arange(size * 1000 + rank * 100, size * 1000 + rank * 100 + 20, dtype=np.int64)
        probe = np.concatenate([keys, absent])
        if container == "hash_map":
            counts, values = m.find_many(probe)
            assert counts.tolist() == [2] * 10 + [1] * 190 + [0] * 20
        else:
            found, values = m.find_many(probe)
            assert found.tolist() == [True] * 200 + [False] * 20
            assert values.tolist() == (keys[:10] * 5).tolist() + (keys[10:] * 3).tolist()
        assert m.erase(keys[0]).get()
        m.async_insert_many(absent, absent)
        m.flush()
        assert m.async_rejected() == 0
        assert m.global_size() == total(200 + 20 - 1)


def check_refused_indexes(m, keys, result):
    """refused_indexes: the refused pairs, ascending, as many as refused; exactly those keys are absent."""
    indexes = result.refused_indexes
    assert indexes.dtype == np.int64 and len(indexes) == result.refused
    assert (np.diff(indexes) > 0).all() and (len(indexes) == 0 or 0 <= indexes[0] <= indexes[-1] < len(keys))
    refused = np.zeros(len(keys), dtype=bool)
    refused[indexes] = True
    answer = m.find_many(keys)   # (found or counts, values); rma_hash_set: found
    m.flush()                    # other ranks' find_many may still need this rank's answers
    present = np.asarray(answer[0] if isinstance(answer, tuple) else answer)
    assert ((present > 0) == ~refused).all()


def test_capacity_is_a_result(rank, size):
    # linear_hash_map: every rank a server from the start, room for a few dozen entries.
    keys = np.arange(rank * 1000, rank * 1000 + 500, dtype=np.int64)
    with mpidict.linear_hash_map("int64", "int64", initial_servers=size, server_capacity_bytes=1024) as m:
        result = m.insert_many(keys, keys)
        assert result.stored + result.refused == len(keys)
        check_refused_indexes(m, keys, result)
        assert total(result.refused) > 0
        assert not result.complete or total(result.refused) > 0
        m.async_insert_many(keys + 500, keys)
        m.flush()
        stored_async = len(keys) - m.async_rejected()
        assert m.global_size() == total(result.stored + stored_async)
    # hash_map: a capacity of 5 values per rank.
    with mpidict.hash_map("int64", "int64", capacity_values=5) as m:
        mine = np.array([k for k in range(rank, 40 * size, size) if m.owner(k) == rank][:8], dtype=np.int64)
        result = m.insert_many(mine, mine)
        assert result.stored == min(5, len(mine)) and result.refused == len(mine) - result.stored
        check_refused_indexes(m, mine, result)
    # skiplist_map: room for a few nodes of 4 keys; list_full is counted, nothing raised.
    with mpidict.skiplist_map("int64", "int64", granularity=4, node_slots_per_rank=4) as m:
        result = m.insert_many(keys, keys)
        assert result.stored + result.refused == len(keys)
        check_refused_indexes(m, keys, result)
        assert total(result.refused) > 0
        m.flush()
        assert m.global_size() == total(result.stored)
        # One more insert into the full list: get() is False if refused (True if it
        # replaced a stored key), never an exception.
        assert m.insert(keys[-1], keys[-1]).get() in (True, False)
        m.flush()
    # rma_hash_set: a full owner says "not inserted" (-1), nothing raised.
    with mpidict.rma_hash_set("int64", slots_per_rank=8) as s:
        status = s.insert_if_absent_many(np.arange(rank * 100, rank * 100 + 64, dtype=np.int64))
        assert total((status == -1).sum()) > 0
        assert total((status == 1).sum()) == s.global_size()   # total() first: every rank's inserts done
        # The contract's names: the same objects again are all there or refused.
        again = s.insert_many(np.arange(rank * 100, rank * 100 + 64, dtype=np.int64))
        assert again.stored + again.refused == 64 and again.replaced == again.stored
        check_refused_indexes(s, np.arange(rank * 100, rank * 100 + 64, dtype=np.int64), again)
        assert total(again.stored) == s.global_size()


def test_set_batches(rank, size):
    objects = np.arange(rank * 1000, rank * 1000 + 200, dtype=np.int64)
    with mpidict.rma_hash_set("int64", slots_per_rank=4096) as s:
        result = s.insert_many(objects)
        assert (result.stored, result.replaced, result.refused) == (200, 0, 0) and result.added == 200
        absent = objects + size * 1000
        found = s.find_many(np.concatenate([objects, absent]))
        assert found.tolist() == [True] * 200 + [False] * 200
        MPI.COMM_WORLD.Barrier()   # one-sided: every rank's inserts done before the count
        assert s.global_size() == total(200)
