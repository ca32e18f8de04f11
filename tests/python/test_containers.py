"""mpidict's Python classes at 1-4 ranks (tests/python/CMakeLists.txt runs this
file under mpiexec): every method, every kind of dtype, bad input.  Each test is
collective; conftest.py aborts the job if any rank fails."""

import numpy as np
import pytest
from mpi4py import MPI

import mpidict

NUMERIC = ["int64", "uint64", "float64", "int32", "uint8", "float32", "int16"]


def values_of(keys, dtype):
    return (np.asarray(keys, dtype=np.int64) % 97 + 3).astype(dtype)


def my_keys(rank, size, n, dtype):
    return np.arange(rank, n, size).astype(dtype)


# ---- hash_map ---------------------------------------------------------------------------

@pytest.mark.parametrize("key_dtype", NUMERIC)
@pytest.mark.parametrize("value_dtype", ["float64", "int32", "uint64"])
def test_hash_map_numeric(key_dtype, value_dtype, rank, size):
    n = 120
    with mpidict.hash_map(key_dtype, value_dtype) as m:
        keys = my_keys(rank, size, n, key_dtype)
        m.insert_many(keys, values_of(keys, value_dtype))
        m.insert_many(keys, values_of(keys, value_dtype) + 1)   # a second value per key
        m.flush()
        assert m.global_size() == n
        assert m.global_value_count() == 2 * n
        every = np.arange(n).astype(key_dtype)
        counts, values = m.find_many(every)
        assert values.dtype == np.dtype(value_dtype)
        assert counts.tolist() == [2] * n
        expected = np.stack([values_of(every, value_dtype), values_of(every, value_dtype) + 1], axis=1).reshape(-1)
        assert np.array_equal(values, expected)                 # in key order, values in insertion order
        counts, values = m.find_many(every, limit=1)
        assert counts.tolist() == [1] * n
        local_keys, local_counts, local_values = m.local_items()
        assert local_keys.dtype == np.dtype(key_dtype) and int(local_counts.sum()) == len(local_values)
        assert all(m.owner(k) == rank for k in local_keys)
        m.flush()


@pytest.mark.parametrize("value_dtype", ["int64", "float64", "int32", "float32", "uint16", "int8"])
def test_hash_map_reduce_many(value_dtype, rank, size):
    with mpidict.hash_map("int64", value_dtype) as m:
        keys = np.arange(50, dtype=np.int64).repeat(3)          # every key three times per rank
        m.reduce_many(keys, np.ones(len(keys), dtype=value_dtype))
        signed = np.dtype(value_dtype).kind in "if"
        low = -3 if signed else 0                                    # negative values compare as numbers
        m.reduce_many(keys + 1000, (keys % 7 + rank + low).astype(value_dtype), op="max")
        m.reduce_many(keys + 2000, (keys % 7 + rank + low).astype(value_dtype), op="min")
        m.reduce_many(keys + 3000, np.full(len(keys), rank, dtype=value_dtype), op="replace")
        m.flush()
        every = np.arange(50, dtype=np.int64)
        counts, values = m.find_many(every)
        assert counts.tolist() == [1] * 50 and values.tolist() == [3 * size] * 50
        counts, values = m.find_many(every + 1000)
        assert values.tolist() == (every % 7 + size - 1 + low).tolist()
        counts, values = m.find_many(every + 2000)
        assert values.tolist() == (every % 7 + low).tolist()
        counts, values = m.find_many(every + 3000)
        assert counts.tolist() == [1] * 50 and all(0 <= v < size for v in values)
        with pytest.raises(ValueError, match="op must be"):
            m.reduce_many(every, every.astype(value_dtype), op="product")
        if value_dtype == "int8":                                    # wraps like numpy
            m.reduce_many(np.array([9999, 9999]), np.array([100, 100], dtype=np.int8))
            m.flush()
            assert m.find(9999).get().tolist() == [int(np.array(200 * size).astype(np.int8))]
        m.flush()
        assert m.global_size() == 200 + (1 if value_dtype == "int8" else 0)


def test_hash_map_reduce_many_strings(rank, size):
    with mpidict.hash_map(str, bytes) as m:
        m.reduce_many([f"k{rank}"] * 3, [b"a", b"b", b"c"])        # sum: concatenation, in this rank's order
        m.flush()
        assert m.find(f"k{rank}").get() == [b"abc"]
        m.flush()


def test_hash_map_requests_and_take(rank, size):
    with mpidict.hash_map("int64", "int64") as m:
        request = m.insert(1000 + rank, 7)
        assert isinstance(request, mpidict.Request)
        assert request.get() is True and request.get() is True  # a result is read once, then kept
        m.async_insert(2000 + rank, 8)
        m.flush()
        found = m.find(1000 + (rank + 1) % size)
        found.wait()
        assert found.test()
        assert found.get().tolist() == [7]
        assert m.find(-5).get().tolist() == []
        m.flush()                                      # every rank has looked before any erases
        assert m.erase(2000 + rank).get() == 1
        m.async_erase(1000 + rank)
        m.flush()
        assert m.global_size() == 0
        keys = np.arange(rank * 10, rank * 10 + 10, dtype=np.int64)
        m.insert_many(keys, keys * 2)
        m.flush()
        counts, values = m.take_many(keys)
        assert counts.tolist() == [1] * 10 and values.tolist() == (keys * 2).tolist()
        m.flush()
        assert m.global_size() == 0
        assert m.take(keys[0]).get().tolist() == []


@pytest.mark.parametrize("key_type, value_type", [(bytes, bytes), (str, str), (str, "int64"), ("int64", bytes),
                                                  ("S12", "V24"), ("float64", str)])
def test_hash_map_strings(key_type, value_type, rank, size):
    def key(i):
        if key_type is bytes:
            return b"k" * (i % 5) + str(i).encode()
        if key_type is str:
            return "ключ-" + str(i)              # not ASCII: UTF-8 both ways
        if key_type == "S12":
            return np.bytes_(f"key{i}")
        return np.float64(i) if key_type == "float64" else np.int64(i)

    def value(i):
        if value_type is bytes:
            return b"\x00v" * (i % 4)
        if value_type is str:
            return "значение" * (i % 3)
        if value_type == "V24":
            return np.frombuffer(np.arange(3, dtype=np.int64).tobytes() if i % 2 else bytes(24), dtype="V24")[0]
        return i * 3

    n = 40
    mine = list(range(rank, n, size))

    def batch(items, kind):
        if kind in (bytes, str):
            return items
        return np.array(items, dtype=kind)

    with mpidict.hash_map(key_type, value_type) as m:
        m.insert_many(batch([key(i) for i in mine], key_type), batch([value(i) for i in mine], value_type))
        m.flush()
        assert m.global_size() == n
        everything = list(range(n))
        counts, values = m.find_many(batch([key(i) for i in everything], key_type))
        assert counts.tolist() == [1] * n
        for i in everything:
            got, want = values[i], value(i)
            assert (got == want) if not isinstance(got, np.ndarray) else np.array_equal(got, want)
        single = m.find(key(mine[0])).get()
        assert len(single) == 1
        m.flush()


def test_hash_map_insert_if_absent_many(rank, size):
    with mpidict.hash_map("int64", "int64") as m:
        keys = np.arange(100, dtype=np.int64)         # every rank offers every key
        inserted = m.insert_if_absent_many(keys, np.full(100, rank, dtype=np.int64))
        assert inserted.dtype == bool
        m.flush()
        total = MPI.COMM_WORLD.allreduce(int(inserted.sum()))
        assert total == 100                           # each key new exactly once
        counts, owners = m.find_many(keys)
        assert counts.tolist() == [1] * 100
        # the stored value is the rank whose insert was new
        mine = keys[inserted]
        assert all(owners[int(k)] == rank for k in mine)
        m.flush()


def test_hash_map_capacity_and_checkpoint(tmp_path_factory, rank, size):
    directory = MPI.COMM_WORLD.bcast(str(tmp_path_factory.mktemp("ckpt")) if rank == 0 else None)
    with mpidict.hash_map("int64", "int64", capacity_values=5, cyclic=True) as m:
        keys = np.arange(rank * 100, rank * 100 + 20, dtype=np.int64)
        m.async_insert_many(keys, keys)
        m.flush()
        # 20 values from each rank, 5 fit on each owner: which rank's are refused
        # depends on arrival order, the total does not.
        assert MPI.COMM_WORLD.allreduce(m.async_rejected()) == 15 * size
        m.save(directory)
        saved = m.global_size()
    with mpidict.hash_map("int64", "int64", cyclic=True) as restored:
        restored.load(directory)
        assert restored.global_size() == saved
        with pytest.raises(mpidict.InvalidArgumentError, match="needs an empty map"):
            restored.load(directory)
    with mpidict.hash_map("int64", "float64") as other:
        with pytest.raises(mpidict.CheckpointError, match="saved values are int64"):
            other.load(directory)


# ---- bad input ------------------------------------------------------------------------------

def test_bad_input(rank, size):
    with mpidict.hash_map("int64", "int64") as m:
        with pytest.raises(mpidict.InvalidArgumentError, match=r"keys are int32, but this container's are int64"):
            m.insert_many(np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int64))
        with pytest.raises(mpidict.InvalidArgumentError, match="3 keys but 2 values"):
            m.insert_many(np.arange(3, dtype=np.int64), np.arange(2, dtype=np.int64))
        with pytest.raises(mpidict.InvalidArgumentError, match="one-dimensional"):
            m.insert_many(np.zeros((2, 2), dtype=np.int64), np.zeros(4, dtype=np.int64))
        with pytest.raises(mpidict.InvalidArgumentError, match="do not convert"):
            m.insert_many(["x"], [1])
        with pytest.raises(mpidict.InvalidArgumentError, match="does not convert"):
            m.insert("seven", 1)
        with pytest.raises(mpidict.InvalidArgumentError, match="limit must be"):
            m.find_many(np.arange(2, dtype=np.int64), limit=-1)
        assert issubclass(mpidict.InvalidArgumentError, mpidict.Error)
        m.flush()
        assert m.global_size() == 0                  # nothing refused was stored
    with mpidict.hash_map(bytes, bytes) as b:
        with pytest.raises(mpidict.InvalidArgumentError, match="must be bytes"):
            b.insert("text", b"v")
        with pytest.raises(mpidict.InvalidArgumentError, match="must all be bytes"):
            b.insert_many([b"a", 5], [b"x", b"y"])
    with pytest.raises(mpidict.InvalidArgumentError, match="no option 'capacity'"):
        mpidict.hash_map("int64", "int64", capacity=5)
    with pytest.raises(mpidict.InvalidArgumentError, match="not a fixed-width numpy dtype"):
        mpidict.hash_map(object, "int64")
    with pytest.raises(mpidict.InvalidArgumentError, match="must be an mpi4py.MPI.Comm"):
        mpidict.hash_map("int64", "int64", comm=3)
    with pytest.raises(mpidict.InvalidArgumentError, match="skiplist_map keys must be"):
        mpidict.skiplist_map("int32", "int64")
    # A value too large for one message: refused on the calling rank, before sending.
    with mpidict.hash_map(bytes, bytes, buffer_bytes=4096) as small:
        with pytest.raises(mpidict.InvalidArgumentError):
            small.insert(b"k", b"x" * 100000)
        small.flush()
    # Outboxes that leave at 4 KiB of 16 KiB (runtime total_outbox_bytes): same answers.
    with mpidict.hash_map("int64", "int64", buffer_bytes=16384, total_outbox_bytes=4096) as early:
        keys = np.arange(rank * 5000, rank * 5000 + 5000, dtype=np.int64)
        early.insert_many(keys, keys * 2)
        early.flush()
        assert early.global_size() == 5000 * size
        counts, values = early.find_many(keys)
        assert (counts == 1).all() and (values == keys * 2).all()
    # Use after destroy.
    m = mpidict.hash_map("int64", "int64")
    m.destroy()
    with pytest.raises(mpidict.UseAfterDestroyError):
        m.flush()
    m.destroy()                                      # twice is fine


def test_sub_communicator(comm, rank, size):
    half = comm.Split(rank % 2, rank)
    with mpidict.hash_map("int64", "int64", comm=half) as m:
        m.insert_many(np.array([rank], dtype=np.int64), np.array([rank], dtype=np.int64))
        m.flush()
        assert m.global_size() == half.size
        assert m.num_ranks == half.size and m.rank == half.rank
    half.Free()


# ---- linear_hash_map ---------------------------------------------------------------------------

@pytest.mark.parametrize("key_dtype, value_dtype", [("int64", "int64"), (str, "float64"), ("uint64", bytes),
                                                    (bytes, str)])
def test_linear_hash_map(key_dtype, value_dtype, rank, size):
    n = 300

    def keys_of(ids):
        if key_dtype is str:
            return [f"word{i}" for i in ids]
        if key_dtype is bytes:
            return [f"w{i}".encode() for i in ids]
        return np.asarray(ids).astype(key_dtype)

    def values_for(ids):
        if value_dtype is str:
            return [str(i) * 3 for i in ids]
        if value_dtype is bytes:
            return [bytes([i % 256]) * (i % 7) for i in ids]
        return np.asarray(ids).astype(value_dtype)

    with mpidict.linear_hash_map(key_dtype, value_dtype, server_capacity_bytes=8192) as m:
        mine = list(range(rank, n, size))
        m.insert_many(keys_of(mine), values_for(mine))
        m.flush()
        assert m.global_size() == n
        ids = list(range(n)) + [n + 5]
        found, values = m.find_many(keys_of(ids))
        assert found.tolist() == [True] * n + [False]
        expected = values_for(list(range(n)))
        assert list(values) == list(expected)
        assert m.insert(keys_of([rank + n * 10])[0], values_for([1])[0]).get() is True
        m.flush()
        assert m.find(keys_of([n * 10])[0]).get() is not None
        assert m.find(keys_of([n * 20])[0]).get() is None
        m.flush()                                      # every rank has looked before any erases
        assert m.erase(keys_of([rank + n * 10])[0]).get() is True
        m.flush()
        keys, values = m.local_items()
        assert MPI.COMM_WORLD.allreduce(len(keys)) == n


# ---- skiplist_map ---------------------------------------------------------------------------------

@pytest.mark.parametrize("key_dtype", ["int64", "uint64", "float64", bytes, str])
def test_skiplist_map(key_dtype, rank, size):
    n = 200

    def keys_of(ids):
        if key_dtype is str:
            return [f"k{i:05d}" for i in ids]
        if key_dtype is bytes:
            return [f"k{i:05d}".encode() for i in ids]
        if key_dtype == "uint64":
            return np.asarray(ids, dtype=np.uint64)
        return (np.asarray(ids) - 100).astype(key_dtype)   # negative keys too

    with mpidict.skiplist_map(key_dtype, "int64", granularity=8) as m:
        mine = list(range(rank, n, size))
        assert m.insert_many(keys_of(mine), np.asarray(mine, dtype=np.int64)).added == len(mine)
        m.flush()
        assert m.global_size() == n
        found, values = m.find_many(keys_of([0, 5, n + 1]))
        assert found.tolist() == [True, True, False] and values.tolist() == [0, 5]
        lo, hi = keys_of([10]), keys_of([19])
        keys, values = m.range(lo[0], hi[0])
        assert values.tolist() == list(range(10, 20))    # in key order
        assert list(keys) == list(keys_of(range(10, 20)))
        keys, values = m.range(lo[0], hi[0], limit=3, descending=True)
        assert values.tolist() == [19, 18, 17]
        assert m.find(keys_of([7])[0]).get() == 7
        m.flush()                                      # every rank has looked before any erases
        erased = m.erase(keys_of([7])[0]).get()
        m.flush()
        assert MPI.COMM_WORLD.allreduce(int(erased)) == 1
        assert m.global_size() == n - 1
        if key_dtype == "int64":
            keys, values = m.match("[-90,-85]")
            assert keys.tolist() == list(range(-90, -84)) and values.tolist() == list(range(10, 16))
            keys, _ = m.match("[-90,-85)")                 # half-open intervals (issue 49, item 7)
            assert keys.tolist() == list(range(-90, -85))
            keys, _ = m.match("(-90,-85)")
            assert keys.tolist() == list(range(-89, -85))
            with pytest.raises(mpidict.Error):
                m.match("[-85,-85)")                          # empty: refused with its position
        else:
            with pytest.raises(mpidict.Error):
                m.match("[1,2]") if key_dtype in (bytes, str) else m.match("[a")
        m.flush()


def test_skiplist_consistency_option(rank, size):
    for mode in ("total_order", "sequential", "none"):
        with mpidict.skiplist_map("int64", "int64", consistency=mode) as m:
            m.insert_many(np.array([rank], dtype=np.int64), np.array([1], dtype=np.int64))
            m.flush()
            assert m.global_size() == size
    with pytest.raises(mpidict.InvalidArgumentError, match="not one of"):
        mpidict.skiplist_map("int64", "int64", consistency="eventual")


# ---- rma_hash_set -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int64", "int32", "S16", "struct32", "V20"])
def test_rma_hash_set(dtype, rank, size):
    n = 100
    ids = np.arange(n)
    if dtype == "S16":
        objects = np.array([f"obj{i}".encode() for i in ids], dtype="S16")
    elif dtype == "struct32":
        objects = np.zeros((n,), dtype=np.dtype([("a", "u8", 4)]))
        objects["a"][:, 0] = ids
        objects["a"][:, 3] = ids * 7
    elif dtype == "V20":
        raw = np.zeros((n, 20), dtype=np.uint8)
        raw[:, 0] = ids % 256
        raw[:, 19] = ids // 256 + 1
        objects = raw.view("V20").reshape(-1)
    else:
        objects = ids.astype(dtype)
    with mpidict.rma_hash_set(objects.dtype, slots_per_rank=1024) as s:
        status = s.insert_if_absent_many(objects[rank::size])
        assert status.tolist() == [1] * len(objects[rank::size])
        s.flush()                                     # every rank's share is in
        again = s.insert_if_absent_many(objects)
        assert again.tolist() == [0] * n
        s.flush()
        assert s.global_size() == n
        assert s.contains_many(objects).all()
        local = s.local_items()
        assert local.dtype == objects.dtype
        assert MPI.COMM_WORLD.allreduce(len(local)) == n
    with mpidict.rma_hash_set("int64", slots_per_rank=4) as tiny:
        status = tiny.insert_if_absent_many(np.arange(100, dtype=np.int64))
        assert (status == -1).any()                   # owner tables full: reported, not thrown
        tiny.flush()
    with pytest.raises(mpidict.InvalidArgumentError, match="1 to 32 bytes"):
        mpidict.rma_hash_set("S40")


# ---- the interplay with mpi4py ------------------------------------------------------------------

def test_same_mpi():
    from mpidict import _containers

    assert _containers._core.mpi_library_version().splitlines()[0] == MPI.Get_library_version().splitlines()[0]


def test_checkpoint_reader_sees_a_python_save(tmp_path_factory, rank):
    from mpidict.checkpoint import Checkpoint

    directory = MPI.COMM_WORLD.bcast(str(tmp_path_factory.mktemp("ck")) if rank == 0 else None)
    with mpidict.skiplist_map("float64", str) as m:
        m.insert_many(np.array([rank + 0.5]), [f"r{rank}"])
        m.save(directory)
    if rank == 0:
        ck = Checkpoint(directory)
        assert ck.container == "skiplist_map" and len(ck) == MPI.COMM_WORLD.size
    MPI.COMM_WORLD.Barrier()


def test_progress_thread(rank, size):
    # The optional progress thread serves other ranks while this one runs Python;
    # it never needs the GIL (no Python code runs inside the library).
    with mpidict.hash_map("int64", "int64", progress_thread=True) as m:
        keys = np.arange(rank * 500, rank * 500 + 500, dtype=np.int64)
        m.insert_many(keys, keys + 1)
        m.flush()
        counts, values = m.find_many(np.arange(500 * size, dtype=np.int64))
        assert counts.tolist() == [1] * (500 * size) and values.tolist() == list(range(1, 500 * size + 1))
        m.flush()


def test_routing(rank, size):
    # Grid routing (docs/runtime.md) gives the answers direct routing gives.
    for routing in ("direct", "grid"):
        with mpidict.hash_map("int64", "int64", routing=routing) as m:
            keys = np.arange(rank * 300, rank * 300 + 300, dtype=np.int64)
            m.insert_many(keys, keys * 2)
            m.flush()
            counts, values = m.find_many(np.arange(300 * size, dtype=np.int64))
            assert counts.tolist() == [1] * (300 * size) and values.tolist() == [2 * k for k in range(300 * size)]
            m.flush()
    with pytest.raises(mpidict.InvalidArgumentError, match="'diagonal'"):
        mpidict.hash_map("int64", "int64", routing="diagonal")


def test_mpi_mismatch_is_refused(monkeypatch):
    # Another MPI under mpi4py (as the PyPI wheel or Debian's Open MPI build would
    # bring): the check run at import refuses it, naming both libraries.
    from mpidict import _containers

    monkeypatch.setattr(_containers._MPI, "Get_library_version", lambda: "Open MPI v4.1.4, package: ...")
    with pytest.raises(mpidict.MPIMismatchError, match="but mpi4py runs Open MPI v4.1.4"):
        _containers._check_same_mpi()
