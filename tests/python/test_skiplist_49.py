"""skiplist_map from Python as in C++ (issue 49, item 4): composite (tuple) keys and
match with multi-dimensional patterns, expiry (absolute and as a ttl), the paging
flags after_lo / before_hi, range_from, the request and chunked (streaming) forms
of ranges, and match(..., descending=).  Every rank inserts its share of one
key set all ranks generate alike, then queries the whole list at once and checks
each answer against a sorted model."""

import datetime
import math
import time

import numpy as np
import pytest

import mpidict

FIELDS = {
    2: ("int64", "float64"),
    3: ("uint64", "int64", "float64"),
    4: ("float64", "uint64", "int64", "int64"),
}


def composite_keys(fields, n, seed):
    """n distinct tuples (with negatives, -0.0 as 0.0, uint64 above 2**63), sorted as C++ orders them."""
    rng = np.random.default_rng(seed)
    columns = []
    for f in fields:
        if f == "int64":
            columns.append(rng.integers(-4, 4, n).tolist())
        elif f == "uint64":
            columns.append([int(x) for x in rng.choice(np.array([0, 1, 7, 2**63 - 1, 2**63, 2**64 - 1],
                                                                dtype=np.uint64), n)])
        else:
            columns.append([float(x) for x in rng.choice([-np.inf, -2.5, -1e-300, -0.0, 0.0, 0.5, 3.0, 1e300], n)])
    rows = sorted({tuple(0.0 if (isinstance(v, float) and v == 0) else v for v in row) for row in zip(*columns)})
    return rows


def structured(rows, fields):
    dtype = np.dtype([(f"f{i}", f) for i, f in enumerate(fields)])
    return np.array(rows, dtype=dtype)


def in_box(row, box):
    """box: per field (lo, hi, lo_open, hi_open), None for '*'."""
    for value, bounds in zip(row, box):
        if bounds is None:
            continue
        lo, hi, lo_open, hi_open = bounds
        if lo is not None and (value < lo or (lo_open and value == lo)):
            return False
        if hi is not None and (value > hi or (hi_open and value == hi)):
            return False
    return True


def pattern_text(box):
    parts = []
    for bounds in box:
        if bounds is None:
            parts.append("*")
            continue
        lo, hi, lo_open, hi_open = bounds
        if lo is not None and lo == hi and not lo_open and not hi_open:
            parts.append(repr(lo))
            continue
        parts.append(("(" if lo_open else "[") + ("" if lo is None else repr(lo)) + "," +
                     ("" if hi is None else repr(hi)) + (")" if hi_open else "]"))
    return ".".join(parts)


def as_rows(keys):
    return [tuple(k.item() if hasattr(k, "item") else k for k in row) for row in keys.tolist()]


@pytest.mark.parametrize("dims", [2, 3, 4])
def test_composite_keys_and_patterns(dims, rank, size):
    fields = FIELDS[dims]
    rows = composite_keys(fields, 300, seed=dims)
    value_of = {row: i for i, row in enumerate(rows)}
    with mpidict.skiplist_map(fields, "int64", granularity=4) as m:
        mine = list(range(rank, len(rows), size))
        batch = structured([rows[i] for i in mine], fields) if rank % 2 == 0 else [rows[i] for i in mine]
        result = m.insert_many(batch, np.asarray(mine, dtype=np.int64))
        assert result.stored == len(mine) and result.refused == 0
        m.flush()
        assert m.global_size() == len(rows)

        # Whole list, in C++'s order (field 0 first; -0.0 stored as 0.0).
        keys, values = m.range_from(rows[0])
        assert keys.dtype.names == tuple(f"f{i}" for i in range(dims))
        assert as_rows(keys) == rows and values.tolist() == list(range(len(rows)))

        # Point operations and find_many with all three batch forms.
        probe = rows[::37] + [tuple([1] * dims)]
        found, values = m.find_many(probe)
        expect = [value_of.get(tuple(float(v) if f == "float64" else v for v, f in zip(p, fields)))
                  for p in probe]
        assert found.tolist() == [e is not None for e in expect]
        assert values.tolist() == [e for e in expect if e is not None]
        found2, _ = m.find_many(structured(rows[::37], fields))
        assert found2.all()
        assert m.find(rows[5]).get() == 5

        # Patterns: exact fields, intervals closed, half-open and open, '*'.
        rng = np.random.default_rng(100 + dims)
        for trial in range(12):
            box = []
            for f in fields:
                choice = rng.integers(0, 4)
                column = sorted({r[len(box)] for r in rows if not math.isinf(r[len(box)])})  # no 'inf' in patterns
                a, b = sorted(rng.choice(len(column), 2))
                lo, hi = column[a], column[b]
                if choice == 0:
                    box.append(None)
                elif choice == 1:
                    box.append((lo, lo, False, False))
                elif choice == 2:
                    box.append((lo, hi, bool(rng.integers(0, 2)), bool(rng.integers(0, 2)) and lo != hi))
                else:
                    box.append((None, hi, False, False) if rng.integers(0, 2) else (lo, None, False, False))
            def empty(bounds, f):
                lo, hi, lo_open, hi_open = bounds
                if lo is None or hi is None:
                    return False
                step = 1 if f != "float64" else 0
                return lo + (step if lo_open else 0) > hi - (step if hi_open else 0) or \
                    (lo == hi and (lo_open or hi_open))
            if any(b is not None and empty(b, f) for b, f in zip(box, fields)):
                continue
            text = pattern_text(box)
            expect = [r for r in rows if in_box(r, box)]
            keys, values = m.match(text)
            assert as_rows(keys) == expect, text
            assert values.tolist() == [value_of[r] for r in expect]
            keys, _ = m.match(text, limit=3, descending=True)
            assert as_rows(keys) == expect[::-1][:3], text
            keys, _ = m.match_request(text, limit=2).get()
            assert as_rows(keys) == expect[:2], text

        # Bad input, refused on the calling rank with the problem named.
        with pytest.raises(mpidict.InvalidArgumentError, match="tuple of"):
            m.find(rows[0][:-1]).get()
        with pytest.raises(mpidict.InvalidArgumentError, match="tuple of"):
            m.insert(5, 1)
        with pytest.raises(mpidict.InvalidArgumentError, match="dimensions|expected"):
            m.match("*")
        with pytest.raises(mpidict.InvalidArgumentError, match="convert"):
            m.insert_many(np.zeros(2, dtype=[(f"f{i}", "int32") for i in range(dims)]), [1, 2])
        nan_row = tuple(float("nan") if f == "float64" else 0 for f in fields)
        with pytest.raises(mpidict.InvalidArgumentError, match="NaN"):
            m.insert(nan_row, 1)
        with pytest.raises(mpidict.InvalidArgumentError, match="NaN"):
            m.insert_many([rows[0], nan_row], [1, 2])
        with pytest.raises(mpidict.InvalidArgumentError, match=r"\(n, %d\) array" % dims):
            m.find_many(np.zeros((3, dims + 1), dtype=np.int64))
        m.flush()
        assert m.global_size() == len(rows)   # nothing stored was touched by the refusals


def test_composite_key_types_refused():
    with pytest.raises(mpidict.InvalidArgumentError, match="2 to 4 fields"):
        mpidict.skiplist_map(("int64",), "int64")
    with pytest.raises(mpidict.InvalidArgumentError, match="2 to 4 fields"):
        mpidict.skiplist_map(("int64",) * 5, "int64")
    with pytest.raises(mpidict.InvalidArgumentError, match="int64, uint64 or float64"):
        mpidict.skiplist_map(("int32", "float64"), "int64")


def test_time_series_window(rank, size):
    """The issue's user: (sensor, time) keys; a [t0, t1) window of one sensor and the latest readings."""
    sensors, readings = 6, 50
    with mpidict.skiplist_map(("int64", "float64"), bytes) as m:
        mine = [(s, t * 0.25) for s in range(sensors) for t in range(readings) if (s * readings + t) % size == rank]
        with pytest.raises(mpidict.InvalidArgumentError, match="field 0.*float64 -> int64"):
            m.insert_many(np.array(mine), [b""] * len(mine))   # an (n, 2) float array: sensor ids would be floats
        m.insert_many(mine, [f"{s}@{t}".encode() for s, t in mine])
        m.flush()
        keys, values = m.match("3.[2.0,4.0)")
        assert keys["f1"].tolist() == [2.0 + 0.25 * i for i in range(8)] and set(keys["f0"]) == {3}
        assert values[0] == b"3@2.0"
        keys, _ = m.match("3.*", limit=5, descending=True)            # latest 5 of sensor 3
        assert keys["f1"].tolist() == [0.25 * (readings - 1 - i) for i in range(5)]
        keys, _ = m.range((2, 0.0), (2, 1.0), before_hi=True)
        assert keys["f1"].tolist() == [0.0, 0.25, 0.5, 0.75]
        m.flush()


@pytest.mark.parametrize("key_dtype", ["int64", "float64", "uint64", bytes, str])
def test_paging_flags_range_from_and_chunks(key_dtype, rank, size):
    n = 240

    def key(i):
        if key_dtype is str:
            return f"k{i:04d}"
        if key_dtype is bytes:
            return f"k{i:04d}".encode()
        if key_dtype == "uint64":
            return np.uint64(i * 3)
        return np.dtype(key_dtype).type(i * 3 - 300)

    model = [key(i) for i in range(n)]
    with mpidict.skiplist_map(key_dtype, "int64", granularity=6) as m:
        mine = list(range(rank, n, size))
        if key_dtype in (bytes, str):
            m.insert_many([model[i] for i in mine], np.asarray(mine, dtype=np.int64))
        else:
            m.insert_many(np.asarray([model[i] for i in mine], dtype=key_dtype), np.asarray(mine, dtype=np.int64))
        m.flush()
        rng = np.random.default_rng(7 + rank)
        for _ in range(25):
            a, b = sorted(rng.integers(0, n, 2))
            after_lo, before_hi, descending = (bool(x) for x in rng.integers(0, 2, 3))
            limit = int(rng.integers(0, 9))
            expect = list(range(a + after_lo, b + 1 - before_hi))
            if descending:
                expect = expect[::-1]
            if limit:
                expect = expect[:limit]
            keys, values = m.range(model[a], model[b], limit, descending, after_lo=after_lo, before_hi=before_hi)
            assert values.tolist() == expect, (a, b, after_lo, before_hi, descending, limit)
            assert list(keys) == [model[i] for i in expect]
            expect = list(range(a + after_lo, n))
            keys, values = m.range_from(model[a], limit, descending, after_lo=after_lo)
            expect = expect[::-1] if descending else expect
            assert values.tolist() == (expect[:limit] if limit else expect)

        # Paging down the whole list by hand, as range_options describes it.
        got, hi, before = [], model[-1], False
        while True:
            _, values = m.range(model[0], hi, 7, True, before_hi=before)
            got += values.tolist()
            if len(values) < 7:
                break
            hi, before = model[values[-1]], True
        assert got == list(range(n))[::-1]

        # The chunked (streaming) form, ascending and descending, bounded or not, with limits.
        for chunk in (1, 5, 64, 1000):
            pieces = list(m.range_chunks(model[3], model[200], chunk))
            assert all(0 < len(v) <= chunk for _, v in pieces)
            assert np.concatenate([v for _, v in pieces]).tolist() == list(range(3, 201))
            pieces = list(m.range_chunks(model[10], None, chunk, limit=50, descending=True))
            assert np.concatenate([v for _, v in pieces]).tolist() == list(range(n - 1, n - 51, -1))
        if key_dtype in (bytes, str):
            keys, values = m.prefix(model[0][:3])                        # "k00": keys 0..99
            assert values.tolist() == list(range(100)) and list(keys) == model[:100]
            keys, values = m.prefix(model[0][:4], limit=3, descending=True)   # "k000": 0..9, the largest 3
            assert values.tolist() == [9, 8, 7]
            assert m.prefix_request(model[0][:0]).get()[1].tolist() == list(range(n))
        else:
            with pytest.raises(mpidict.InvalidArgumentError, match="prefix needs bytes or str keys"):
                m.prefix(b"k")
        pieces = list(m.range_chunks(model[10], model[20], 4, after_lo=True, before_hi=True))
        assert np.concatenate([v for _, v in pieces]).tolist() == list(range(11, 20))
        assert list(m.range_chunks(model[20], model[10], 4)) == []
        with pytest.raises(mpidict.InvalidArgumentError, match="chunk"):
            m.range_chunks(model[0], model[1], 0)
        with pytest.raises(mpidict.InvalidArgumentError, match="limit"):
            m.range_from(model[0], limit=-1)
        m.flush()


def test_range_requests_pipelined(rank, size):
    n = 2000
    with mpidict.skiplist_map("int64", "int64", granularity=16) as m:
        mine = np.arange(rank, n, size, dtype=np.int64)
        m.insert_many(mine, mine * 2)
        m.flush()
        rng = np.random.default_rng(rank)
        bounds = [sorted(rng.integers(0, n, 2)) for _ in range(64)]
        window = [m.range_request(int(a), int(b), descending=bool(i % 2)) for i, (a, b) in enumerate(bounds)]
        window.append(m.range_from_request(n - 10, limit=4))
        assert window[0].test() in (True, False)
        window[1].wait()
        for i, ((a, b), request) in enumerate(zip(bounds, window)):
            keys, values = request.get()
            expect = list(range(a, b + 1))[::-1] if i % 2 else list(range(a, b + 1))
            assert keys.tolist() == expect and values.tolist() == [2 * k for k in expect]
            assert request.get()[0].tolist() == expect        # get() again: the same result
        assert window[-1].get()[0].tolist() == list(range(n - 10, n - 6))
        keys, _ = m.match("[100,200)", limit=3, descending=True)
        assert keys.tolist() == [199, 198, 197]
        keys, _ = m.match_request("(100,200]", limit=3).get()
        assert keys.tolist() == [101, 102, 103]
        m.flush()


def test_expiry(rank, size):
    now = time.time()
    with mpidict.skiplist_map("int64", "int64") as m:
        base = 100 * rank
        m.insert(base + 1, 1, ttl=3600).get()                                   # a duration: seconds
        m.insert(base + 2, 2, ttl=datetime.timedelta(hours=1)).get()            # or a timedelta
        m.insert(base + 3, 3, expires_at=now + 3600).get()                      # absolute: seconds since the epoch
        m.insert(base + 4, 4, expires_at=datetime.datetime.now(datetime.timezone.utc) +
                 datetime.timedelta(hours=1)).get()                             # or a datetime
        m.insert(base + 5, 5, ttl=0).get()                                      # expires at once
        m.insert(base + 6, 6, expires_at=now - 10).get()                        # a deadline already passed
        m.insert(base + 7, 7, ttl=0.3).get()
        m.async_insert(base + 8, 8, ttl=3600)
        m.async_insert(base + 9, 9, expires_at=now - 1)
        m.insert(base + 10, 10).get()                                           # never expires
        m.flush()
        assert m.find(base + 5).get() is None and m.find(base + 6).get() is None
        assert m.find(base + 9).get() is None
        assert [m.find(base + k).get() for k in (1, 2, 3, 4, 8, 10)] == [1, 2, 3, 4, 8, 10]
        time.sleep(0.5)
        m.flush()                                   # removes what expired by now
        assert m.find(base + 7).get() is None
        m.flush()
        assert m.global_size() == 6 * size
        for bad, what in ((dict(ttl=float("nan")), "finite"), (dict(ttl=-math.inf), "finite"),
                          (dict(expires_at=math.inf), "finite"), (dict(expires_at=1e12), "beyond"),
                          (dict(ttl="1h"), "ttl must be a number"), (dict(ttl=True), "ttl must be a number"),
                          (dict(expires_at="tomorrow"), "expires_at must be"),
                          (dict(ttl=1, expires_at=now), "not both")):
            with pytest.raises(mpidict.InvalidArgumentError, match=what):
                m.insert(base + 50, 50, **bad)
            with pytest.raises(mpidict.InvalidArgumentError, match=what):
                m.async_insert(base + 50, 50, **bad)
        m.flush()
        assert m.global_size() == 6 * size
        # a negative ttl is a deadline already passed, as in C++ and C: nothing stored, the old value stays
        assert m.insert(base + 10, 11, ttl=-1).get() is False
        assert m.insert(base + 10, 11, ttl=datetime.timedelta(seconds=-5)).get() is False
        m.async_insert(base + 10, 12, ttl=-0.5)
        m.flush()
        assert m.find(base + 10).get() == 10


def test_ttl_expire_persist(rank, size):
    with mpidict.skiplist_map("int64", "int64") as m:
        base = 1000 * rank
        m.insert(base + 1, 1, ttl=3600).get()
        m.insert(base + 2, 2).get()
        left = m.ttl(base + 1).get()
        assert 3000 < left <= 3600 and isinstance(left, float)
        assert m.ttl(base + 2).get() == -1.0 and m.ttl(base + 99).get() == -2.0
        assert m.persist(base + 1).get() is True and m.ttl(base + 1).get() == -1.0
        assert m.persist(base + 1).get() is False
        assert m.expire(base + 2, 7200).get() is True and 6600 < m.ttl(base + 2).get() <= 7200
        assert m.expire(base + 2, datetime.timedelta(hours=1)).get() is True
        assert 3000 < m.ttl(base + 2).get() <= 3600
        assert m.expire(base + 99, 10).get() is False
        assert m.expire_at(base + 2, time.time() + 100).get() is True and 0 < m.ttl(base + 2).get() <= 101
        assert m.expire_at(base + 99, time.time() + 100).get() is False
        for bad, what in ((None, "needs a deadline"), (0, "needs a deadline"), ("soon", "expires_at must be")):
            with pytest.raises(mpidict.InvalidArgumentError, match=what):
                m.expire_at(base + 2, bad)
        with pytest.raises(mpidict.InvalidArgumentError, match="finite"):
            m.expire(base + 2, math.nan)
        assert m.expire(base + 2, -1).get() is True            # a deadline passed removes the key (Redis EXPIRE)
        assert m.find(base + 2).get() is None and m.ttl(base + 2).get() == -2.0
        # insert_many with one deadline for the batch
        keys = np.arange(base + 100, base + 120, dtype=np.int64)
        result = m.insert_many(keys, keys * 2, ttl=3600)
        assert (result.stored, result.replaced, result.refused) == (20, 0, 0)
        assert 3000 < m.ttl(base + 110).get() <= 3600
        result = m.insert_many(keys, keys * 3, ttl=-1)           # passed: nothing stored or changed
        assert (result.stored, result.refused) == (0, 0)
        assert m.find(base + 110).get() == 2 * (base + 110)
        result = m.insert_many(keys, keys * 4, expires_at=time.time() + 7200)
        assert (result.stored, result.replaced) == (20, 20)
        assert 6600 < m.ttl(base + 119).get() <= 7200
        result = m.insert_many(keys[:5], keys[:5], ttl=0.2)
        assert result.stored == 5
        result = m.insert_many(keys[5:7], keys[5:7])             # no deadline: clears it (Redis SET)
        assert m.ttl(base + 105).get() == -1.0
        with pytest.raises(mpidict.InvalidArgumentError, match="not both"):
            m.insert_many(keys, keys, ttl=1, expires_at=time.time())
        time.sleep(0.4)
        assert [m.find(k).get() for k in keys[:5].tolist()] == [None] * 5
        assert m.count(base + 100, base + 119) == 15
        m.flush()
        assert m.global_size() == 16 * size                     # base + 1 and 15 of the batch per rank


def test_insert_if_absent(rank, size):
    with mpidict.skiplist_map("int64", "int64") as m:
        base = 1000 * rank
        assert m.insert_if_absent(base, 1).get() is True
        assert m.insert_if_absent(base, 2).get() is False and m.find(base).get() == 1
        assert m.insert_if_absent(base + 1, 3, ttl=3600).get() is True and 3000 < m.ttl(base + 1).get() <= 3600
        assert m.insert_if_absent(base + 2, 4, ttl=-1).get() is False and m.find(base + 2).get() is None
        assert m.insert_if_absent(base + 3, 5, expires_at=time.time() + 100).get() is True
        with pytest.raises(mpidict.InvalidArgumentError, match="not both"):
            m.insert_if_absent(base + 4, 6, ttl=1, expires_at=time.time())
        m.flush()
        assert m.global_size() == 3 * size


def test_count_erase_range(rank, size):
    with mpidict.skiplist_map("int64", "int64", granularity=4) as m:
        base = 1000 * rank
        keys = np.arange(base, base + 50, dtype=np.int64)
        m.insert_many(keys, keys)
        assert m.count(base, base + 49) == 50
        assert m.count(base, base + 49, after_lo=True) == 49
        assert m.count(base, base + 49, after_lo=True, before_hi=True) == 48
        assert m.count(base + 5, base + 4) == 0
        m.flush()
        assert m.count(-2**63, 2**63 - 1) == 50 * size
        assert m.count_request(0, 1000 * size).get() == 50 * size
        m.flush()                                   # every rank counted before any erases
        assert m.erase_range(base + 10, base + 20, before_hi=True) == 10
        assert m.find(base + 15).get() is None and m.find(base + 20).get() == base + 20
        assert m.erase_range_request(base + 10, base + 19).get() == 0
        assert m.count(base, base + 49) == 40
        with pytest.raises(mpidict.InvalidArgumentError):
            m.count(base, "x")
        m.flush()
        assert m.global_size() == 40 * size
    with mpidict.skiplist_map(str, "int64") as m:
        names = [f"r{rank}-{i:03d}" for i in range(12)]
        m.insert_many(names, np.arange(12, dtype=np.int64))
        assert m.count(f"r{rank}-", f"r{rank}-~") == 12
        assert m.erase_range(names[2], names[5], after_lo=True) == 3
        assert m.count(f"r{rank}-", f"r{rank}-~") == 9
        m.flush()


def test_reduce(rank, size):
    with mpidict.skiplist_map("int64", "int64") as m:
        for _ in range(10):
            m.async_reduce(7, 1)                                 # "add" by default
        assert m.reduce(8, rank - 5, "max").get() is True
        assert m.reduce(9, -rank, op="min").get() is True
        m.reduce(1000 + rank, 3).get()
        assert m.reduce(1000 + rank, 4, "add").get() is True
        assert m.find(1000 + rank).get() == 7                    # this rank's own key: its reduces in order
        m.flush()
        assert m.find(7).get() == 10 * size
        assert m.find(8).get() == size - 1 - 5
        assert m.find(9).get() == -(size - 1)
        for bad, what in (("mul", "op must be one of"), (len, "op must be one of")):
            with pytest.raises(mpidict.InvalidArgumentError, match=what):
                m.reduce(7, 1, bad)
        m.flush()
    with mpidict.skiplist_map("int64", "float64") as m:
        m.async_reduce(1, 0.5)
        m.async_reduce(2, -1.5 * rank, "min")
        m.flush()
        assert m.find(1).get() == 0.5 * size and m.find(2).get() == -1.5 * (size - 1)
        m.flush()
    with mpidict.skiplist_map("int64", "uint64") as m:
        m.reduce(1, 2**63 + rank, "max").get()
        m.reduce(2, 2**63 + rank, "min").get()
        m.flush()
        assert m.find(1).get() == 2**63 + size - 1 and m.find(2).get() == 2**63
        m.flush()
    with mpidict.skiplist_map("int64", bytes) as m:
        with pytest.raises(mpidict.InvalidArgumentError, match="int64, uint64 or float64 values"):
            m.reduce(1, b"x")
        m.flush()


def test_range_many(rank, size):
    with mpidict.skiplist_map("int64", "int64", granularity=8) as m:
        keys = np.arange(rank, 3000, size, dtype=np.int64) * 3
        m.insert_many(keys, keys + 1)
        m.flush()
        every = np.arange(0, 3000, dtype=np.int64) * 3
        rng = np.random.default_rng(77 + rank)
        los = rng.integers(-20, 9020, 60)
        his = los + rng.integers(-5, 80, 60)                    # some lo > hi: empty
        for limit, descending, after_lo, before_hi, window in ((0, False, False, False, 0), (3, True, True, False, 1),
                                                                (5, False, True, True, 4)):
            got = m.range_many(los, his, limit, descending, after_lo=after_lo, before_hi=before_hi, window=window)
            assert len(got) == len(los)
            for lo, hi, (k, v) in zip(los.tolist(), his.tolist(), got):
                want = [x for x in every.tolist() if lo <= x <= hi and not (after_lo and x == lo)
                        and not (before_hi and x == hi)]
                if descending:
                    want.reverse()
                if limit:
                    want = want[:limit]
                assert k.tolist() == want and v.tolist() == [x + 1 for x in want], (lo, hi)
        assert m.range_many(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)) == []
        with pytest.raises(mpidict.InvalidArgumentError):
            m.range_many(los, his[:-1])
        m.flush()
    with mpidict.skiplist_map(str, "int64") as m:
        m.insert_many([f"k{rank}-{i}" for i in range(5)], np.arange(5, dtype=np.int64))
        (k0, _), (k1, _) = m.range_many([f"k{rank}-", f"k{rank}-3"], [f"k{rank}-~", f"k{rank}-4"])
        assert list(k0) == [f"k{rank}-{i}" for i in range(5)] and list(k1) == [f"k{rank}-3", f"k{rank}-4"]
        m.flush()


def test_set_consistency(rank, size):
    with mpidict.skiplist_map("int64", "int64", consistency="none") as m:
        assert m.consistency == "none"
        m.insert_many(np.arange(rank, 100, size, dtype=np.int64), np.arange(rank, 100, size, dtype=np.int64))
        for mode in ("total_order", "sequential", "none"):
            m.set_consistency(mode)
            assert m.consistency == mode
            assert m.find(42).get() in (None, 42)        # others may still be inserting
            m.insert(1000 + rank, rank).get()
        with pytest.raises(mpidict.InvalidArgumentError, match="not one of"):
            m.set_consistency("eventual")
        m.flush()
        assert m.global_size() == 100 + size
        keys, _ = m.range(0, 99, limit=5, descending=True)
        assert keys.tolist() == [99, 98, 97, 96, 95]


def test_snapshot(rank, size):
    """skiplist_map.snapshot(): reads see the map at the cut while every rank
    writes afterwards; slices in key order over the ranks; composite and bytes
    keys; release and use after release."""
    with mpidict.skiplist_map("int64", "int64", granularity=4) as m:
        keys = np.arange(rank, 40 * size, size, dtype=np.int64)
        m.insert_many(keys, keys * 10)
        for k in keys[::3]:
            m.async_insert(int(k), int(k) * 10 + 1)           # still buffered: the snapshot flushes first
        model = {int(k): int(k) * 10 + (1 if i % 3 == 0 else 0) for r in range(size)
                 for i, k in enumerate(range(r, 40 * size, size))}
        with m.snapshot() as snap:
            for k in keys:                                    # writes after the cut
                m.async_insert(int(k), -1)
            m.async_erase(int(keys[0]))
            m.flush()
            assert m.find(int(keys[1])).get() == -1
            for k in range(0, 40 * size, 7):
                assert snap.find(k) == model.get(k)
            assert snap.find(40 * size + 1) is None
            lo, hi = 5, 30 * size
            got_keys, got_values = snap.range(lo, hi)
            want = [k for k in sorted(model) if lo <= k <= hi]
            assert got_keys.tolist() == want and got_values.tolist() == [model[k] for k in want]
            got_keys, _ = snap.range(lo, hi, limit=4, descending=True, before_hi=True)
            assert got_keys.tolist() == [k for k in sorted(model, reverse=True) if lo <= k < hi][:4]
            assert snap.range_from(lo, after_lo=True)[0].tolist() == [k for k in sorted(model) if k > lo]
            assert snap.count(lo, hi) == len(want)
            assert snap.size() == len(model)
            mine, values = snap.local_items()
            assert all(model[int(k)] == int(v) for k, v in zip(mine, values))
            assert list(mine) == sorted(mine)
            m.flush()                                         # others may still read from this rank: serve them first
            assert sum(MPI_allgather(snap.local_size())) == len(model)
            bounds = MPI_allgather((int(mine[0]), int(mine[-1])) if len(mine) else None)
            present = [b for b in bounds if b is not None]
            assert all(a[1] < b[0] for a, b in zip(present, present[1:]))   # rank r's keys below rank r+1's
        with pytest.raises(mpidict.UseAfterDestroyError):
            snap.find(1)
        m.flush()
    fields = ("int64", "float64")
    with mpidict.skiplist_map(fields, "bytes") as m:
        if rank == 0:
            m.insert((1, 0.5), b"a").get()
            m.insert((2, -1.5), b"b").get()
        m.flush()
        snap = m.snapshot()
        if rank == 0:
            m.insert((1, 0.5), b"changed").get()
        m.flush()
        assert snap.find((1, 0.5)) == b"a"
        keys, values = snap.range((0, 0.0), (3, 0.0))
        assert [tuple(k) for k in keys.tolist()] == [(1, 0.5), (2, -1.5)] and list(values) == [b"a", b"b"]
        snap.release()
        snap.release()                                        # a second release does nothing


def MPI_allgather(value):
    from mpi4py import MPI
    return MPI.COMM_WORLD.allgather(value)
