"""skiplist_map's elastic servers from Python (issue 44): a map that starts on one
server rank grows onto the others at the flush after insert_many passes
grow_entries; rebalance() by entries and by requests; drain() of the last rank
empties it; server_ranks limits the servers.  Every step is checked against every
key's value and the global size; bad arguments fail every rank (no one waits)
and lose nothing."""

import numpy as np
import pytest

import mpidict

PER_RANK = 150


def check_all(m, rank, size):
    keys = np.arange(rank, PER_RANK * size, size, dtype=np.int64)
    found, values = m.find_many(keys)
    assert found.all()
    assert (values == 3 * keys + 1).all()
    assert m.global_size() == PER_RANK * size


@pytest.mark.parametrize("mode", ["total_order", "sequential", "none"])
def test_grow_rebalance_drain(mode, comm, rank, size):
    with mpidict.skiplist_map("int64", "int64", granularity=4, consistency=mode, initial_servers=1,
                              grow_entries=50) as m:
        assert m.active_servers() == [0]
        assert m.last_rebalance().moved_nodes == 0
        keys = np.arange(rank, PER_RANK * size, size, dtype=np.int64)
        m.insert_many(keys, 3 * keys + 1)
        m.flush()
        grown = m.last_rebalance()
        assert sorted(m.active_servers()) == list(range(size))
        assert grown.servers_added == size - 1
        if size > 1:
            assert grown.moved_nodes > 0 and grown.moved_entries > 0 and grown.refused_nodes == 0
            assert grown.entries_ratio_before == pytest.approx(float(size))   # every entry was on rank 0
            assert grown.entries_ratio_after < 1.5
            assert int(grown.entries_after.sum()) == PER_RANK * size
        check_all(m, rank, size)

        for metric in ("entries", "requests"):
            result = m.rebalance(metric, 1.05)
            assert sorted(result.servers) == list(range(size))
            assert result.seconds >= 0
            # The same result on every rank.
            mine = (result.moved_nodes, result.moved_entries, result.refused_nodes)
            assert comm.allgather(mine) == [mine] * size
            check_all(m, rank, size)

        # Online moves (not collective): rank 0 moves up to 3 idle nodes to the last rank while all find.
        started = m.local_rebalance(3 if rank == 0 else 0, size - 1)
        assert 0 <= started <= (3 if rank == 0 and size > 1 else 0)
        check_all(m, rank, size)
        m.flush()
        check_all(m, rank, size)
        with pytest.raises(mpidict.InvalidArgumentError, match="is outside"):
            m.local_rebalance(1, size)
        with pytest.raises(mpidict.InvalidArgumentError, match="a rank is an int"):
            m.local_rebalance(1, "last")

        with pytest.raises(mpidict.InvalidArgumentError, match="neither 'entries' nor 'requests'"):
            m.rebalance("entriez")
        with pytest.raises(mpidict.InvalidArgumentError, match="at least 1"):
            m.rebalance("entries", 0.5)
        with pytest.raises(mpidict.InvalidArgumentError, match="a number >= 1, not"):
            m.rebalance("entries", "fast")
        with pytest.raises(mpidict.InvalidArgumentError, match="not an active server"):
            m.drain(size)
        with pytest.raises(mpidict.InvalidArgumentError, match="drain takes a rank"):
            m.drain("last")
        if size > 1:
            # Rank 0 alone misspells the metric: every rank fails, rank 0 naming it.
            with pytest.raises(mpidict.Error) as raised:
                m.rebalance("entriez" if rank == 0 else "entries")
            if rank == 0:
                assert "entriez" in str(raised.value)
        check_all(m, rank, size)

        if size > 1:
            drained = m.drain(size - 1)
            assert size - 1 not in m.active_servers()
            assert drained.servers == m.active_servers()
            assert int(drained.entries_after[size - 1]) == 0
            if rank == size - 1:
                assert m.local_size() == 0
        else:
            with pytest.raises(mpidict.InvalidArgumentError, match="only active server"):
                m.drain(0)
        check_all(m, rank, size)


def test_online_policy_option(rank, size):
    with mpidict.skiplist_map("int64", "int64", granularity=4, online_rebalance=1.2,
                              online_rebalance_seconds=0.01) as m:
        keys = np.arange(rank, PER_RANK * size, size, dtype=np.int64)
        m.insert_many(keys, 3 * keys + 1)
        for _ in range(20):
            check_all(m, rank, size)
        m.flush()
        check_all(m, rank, size)
    with pytest.raises(mpidict.InvalidArgumentError, match="online_rebalance"):
        mpidict.skiplist_map("int64", "int64", online_rebalance=0.5)


def test_server_ranks_option(rank, size):
    with mpidict.skiplist_map("int64", "int64", granularity=4, server_ranks=[0]) as m:
        assert m.active_servers() == [0]
        keys = np.arange(rank, PER_RANK * size, size, dtype=np.int64)
        m.insert_many(keys, 3 * keys + 1)
        m.flush()
        if rank != 0:
            assert m.local_size() == 0
        check_all(m, rank, size)
