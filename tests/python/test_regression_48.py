"""Regression tests of issue 48 for the Python package, at 1-4 ranks (CTest
regression.python_issue48.npN; collective like test_containers.py).

- item 14: on an int64 hash_map, m.find(7.9) and m.find('7') returned key 7's
  values and insert_many([-1.999], [5]) stored under key -1; numpy's same_kind
  rule is the contract now, and out-of-range integers are refused too;
- item 15: hash_map(..., buffer_bytes=-1) and skiplist.range(0., 1., limit=-1)
  gave a nanobind signature dump or a TypeError, not an InvalidArgumentError
  naming the value;
- items 6, 9, 10, 11 for the reader (mpidict.checkpoint): a shard listed twice,
  a values column on the keys, a 33-bit crc32, ranks = 2^40, a zero value count
  with its CRC recomputed, a FIFO for a data file or the manifest, a 5 GB sparse
  manifest: each refused with CheckpointError naming it, without hanging.
"""
import json
import os
import zlib

import numpy as np
import pytest
from mpi4py import MPI

import mpidict
from mpidict.checkpoint import Checkpoint, CheckpointError


# ---- item 14 ------------------------------------------------------------------------------

def test_non_integral_keys_refused(rank, size):
    with mpidict.hash_map("int64", "int64") as m:
        m.insert_many(np.array([7], dtype=np.int64), np.array([70], dtype=np.int64))
        m.flush()
        for bad in (7.9, "7", 7.0, np.float64(7.0), 2**70):
            with pytest.raises(mpidict.InvalidArgumentError, match="key"):
                m.find(bad).get()
        for keys in ([-1.999], ["1"], [1, 2.5], [2**64]):
            with pytest.raises(mpidict.InvalidArgumentError, match="keys"):
                m.insert_many(keys, [5] * len(keys))
        with pytest.raises(mpidict.InvalidArgumentError, match="values"):
            m.insert_many([1], [5.5])
        # What same_kind allows still works: Python ints, numpy ints, bools as ints, lists.
        assert m.find(7).get().tolist() == [70] * size
        assert m.find(np.int32(7)).get().tolist() == [70] * size
        m.insert_many([8, 9], [80, 90])
        m.insert_many([], [])
        m.flush()
        assert m.global_size() == 3
        counts, values = m.find_many([7, 8, 9])
        assert counts.tolist() == [size, size, size]
        m.flush()
    with mpidict.hash_map("uint64", "float64") as m:
        with pytest.raises(mpidict.InvalidArgumentError, match="do not fit in uint64"):
            m.insert_many([-1], [1.0])
        m.insert_many([1], [2])        # an int for a float64 value: same_kind allows it
        m.flush()
        assert m.global_size() == 1
        m.flush()
    with mpidict.hash_map("uint8", "int64") as m:
        m.insert_many([1, 255], [1, 2])   # Python ints that fit a uint8
        with pytest.raises(mpidict.InvalidArgumentError, match="do not fit in uint8"):
            m.insert_many([256], [1])
        with pytest.raises(mpidict.InvalidArgumentError, match="key"):
            m.find(-1).get()
        m.flush()
        assert m.global_size() == 2
        m.flush()


# ---- item 15 ------------------------------------------------------------------------------

def test_bad_options_name_the_value(rank, size):
    for bad in (-1, 2**64, 1.5, "big"):
        with pytest.raises(mpidict.InvalidArgumentError, match="buffer_bytes") as caught:
            mpidict.hash_map("int64", "int64", buffer_bytes=bad)
        assert "Invalid" not in str(caught.value) and "incompatible" not in str(caught.value)
    with mpidict.skiplist_map("float64", "int64") as s:
        s.insert_many(np.array([0.5]), np.array([1]))
        s.flush()
        for bad in (-1, 1.5, 2**64):
            with pytest.raises(mpidict.InvalidArgumentError, match="limit"):
                s.range(0.0, 1.0, limit=bad)
        with pytest.raises(mpidict.InvalidArgumentError, match="limit"):
            s.match("*", limit=-3)
        keys, values = s.range(0.0, 1.0, limit=0)
        assert keys.tolist() == [0.5]
        s.flush()
    with mpidict.hash_map("int64", "int64") as m:
        with pytest.raises(mpidict.InvalidArgumentError, match="limit must be a whole number from 0 to 18446744073709551615, not -1"):
            m.find_many([1], limit=-1)
        m.flush()


# ---- checkpoints: the Python reader --------------------------------------------------------

@pytest.fixture
def saved(tmp_path_factory, rank, size):
    directory = MPI.COMM_WORLD.bcast(str(tmp_path_factory.mktemp("ck")) if rank == 0 else None, root=0)
    with mpidict.hash_map("int64", "int64") as m:
        keys = np.arange(rank, 200, size, dtype=np.int64)
        m.insert_many(keys, keys * 10)
        m.insert_many(keys, keys * 10 + 1)
        m.flush()
        m.save(directory)
    return directory


def damaged(directory, name, change):
    """A copy of the checkpoint with change(copy_dir) applied."""
    target = os.path.join(os.path.dirname(directory), os.path.basename(directory) + "-" + name)
    os.makedirs(target)
    for entry in os.listdir(directory):
        with open(os.path.join(directory, entry), "rb") as src, open(os.path.join(target, entry), "wb") as dst:
            dst.write(src.read())
    change(target)
    return target


def edit(directory, change):
    path = os.path.join(directory, "manifest.json")
    with open(path) as f:
        manifest = json.load(f)
    change(manifest)
    with open(path, "w") as f:
        json.dump(manifest, f)


def test_reader_refuses_what_load_refuses(saved, rank, size):
    if rank != 0:
        return
    assert len(Checkpoint(saved)) == 200

    def twice(m):
        if len(m["shards"]) == 1:
            m["ranks"] = 2
            m["shards"].append(m["shards"][0])
        else:
            m["shards"][1] = m["shards"][0]

    def values_on_keys(m):
        columns = m["shards"][0]["columns"]
        columns[2]["offset"], columns[2]["crc32"] = columns[0]["offset"], columns[0]["crc32"]

    def zero_count(d):
        m = json.load(open(os.path.join(d, "manifest.json")))
        shard = m["shards"][0]
        path = os.path.join(d, shard["file"])
        data = bytearray(open(path, "rb").read())
        column = next(c for c in shard["columns"] if c["name"] == "value_counts")
        counts = np.frombuffer(bytes(data[column["offset"]:column["offset"] + column["bytes"]]), dtype=np.uint64).copy()
        counts[1] += counts[0]
        counts[0] = 0
        data[column["offset"]:column["offset"] + column["bytes"]] = counts.tobytes()
        column["crc32"] = zlib.crc32(counts.tobytes())
        open(path, "wb").write(bytes(data))
        json.dump(m, open(os.path.join(d, "manifest.json"), "w"))

    def fifo_data(d):
        m = json.load(open(os.path.join(d, "manifest.json")))
        path = os.path.join(d, m["shards"][0]["file"])
        os.remove(path)
        os.mkfifo(path)

    def fifo_manifest(d):
        os.remove(os.path.join(d, "manifest.json"))
        os.mkfifo(os.path.join(d, "manifest.json"))

    def huge(d):
        os.truncate(os.path.join(d, "manifest.json"), 5 << 30)

    cases = [
        ("twice", lambda d: edit(d, twice), "listed twice"),
        ("values_on_keys", lambda d: edit(d, values_on_keys), "overlap"),
        ("crc33", lambda d: edit(d, lambda m: m["shards"][0]["columns"][0].update(
            crc32=m["shards"][0]["columns"][0]["crc32"] + 2**32)), "'crc32' is"),
        ("width", lambda d: edit(d, lambda m: m["shards"][0]["columns"][0].update(width=8 + 2**32)), "'width' is"),
        ("ranks", lambda d: edit(d, lambda m: m.update(ranks=2**40)), "'ranks' is 1099511627776"),
        ("total", lambda d: edit(d, lambda m: m.update(entries=m["entries"] * 2)), "but the shards hold"),
        ("container", lambda d: edit(d, lambda m: m.update(container="linear_hash_map", multi_valued=False)),
         "columns, expected"),
        ("zero_count", zero_count, "value_counts holds a 0"),
        ("fifo_data", fifo_data, "FIFO"),
        ("fifo_manifest", fifo_manifest, "FIFO"),
        ("huge", huge, "more than the"),
    ]
    for name, change, words in cases:
        with pytest.raises(CheckpointError, match=words):
            Checkpoint(damaged(saved, name, change))
