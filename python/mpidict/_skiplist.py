"""skiplist_map for Python (imported by mpidict/_containers.py): ranges and their
request and chunked forms, pattern queries, expiry, and composite (tuple) keys."""

from __future__ import annotations

import datetime
import numbers

import numpy as np

from ._containers import (
    Error, InsertManyResult, InvalidArgumentError, Request, _Codec, _Collective, _Converted, _SingleValued,
    _communicator, _config, _count, _describe, _core,
)

_REDUCE_OPS = ("add", "min", "max")
_FIELD_LETTERS = {"int64": "i", "uint64": "u", "float64": "f"}
_SIGN = np.uint64(1 << 63)


class _CompositeCodec:
    """Composite keys: a tuple of 2 to 4 fields, each int64, uint64 or float64,
    ordered field by field (field 0 first) as C++'s std::tuple keys are.  They
    cross as uint64 words, one per field, holding the field's order-preserving
    bits (int64 with the sign bit flipped; float64 as ordered_codec encodes it:
    negatives complemented, positives with the sign bit set, -0.0 as +0.0, NaN
    refused), so the list stores the bytes of the C++ tuple key.  Batches in: a
    structured array of exactly these field dtypes, an (n, D) array or a sequence
    of D-tuples; keys out: a structured array with fields f0, f1, ..."""

    storage = "composite"

    def __init__(self, spec):
        try:
            fields = [np.dtype(f) for f in spec]
        except TypeError as problem:
            raise InvalidArgumentError(f"mpidict: composite key {spec!r}: {problem}") from None
        if not 2 <= len(fields) <= 4:
            raise InvalidArgumentError(f"mpidict: a composite key has 2 to 4 fields, not {len(fields)} ({spec!r})")
        for f in fields:
            if f.name not in _FIELD_LETTERS:
                raise InvalidArgumentError(f"mpidict: composite key fields are int64, uint64 or float64, not {f} "
                                           f"(widen it: an int32 field as int64 keeps its order)")
        self.fields = fields
        self.size = len(fields)
        self.letters = "".join(_FIELD_LETTERS[f.name] for f in fields)
        self.dtype = np.dtype([(f"f{i}", f) for i, f in enumerate(fields)])
        self.name = "(" + ", ".join(f.name for f in fields) + ")"
        self.checkpoint_name = "tuple<" + ",".join(f.name for f in fields) + ">"
        self._columns = [_Codec(f, ordered=True) for f in fields]

    def _encode(self, columns, what):
        n = len(columns[0])
        words = np.empty((n, self.size), dtype=np.uint64)
        for i, (column, letter) in enumerate(zip(columns, self.letters)):
            if letter == "i":
                words[:, i] = np.ascontiguousarray(column, dtype=np.int64).view(np.uint64) ^ _SIGN
            elif letter == "u":
                words[:, i] = column
            else:
                x = np.ascontiguousarray(column, dtype=np.float64)
                nan = np.isnan(x)
                if nan.any():
                    raise InvalidArgumentError(f"mpidict: {what}: field {i} of key {int(np.flatnonzero(nan)[0])} is "
                                               "NaN, which cannot be an ordered key (it compares with nothing)")
                bits = (x + 0.0).view(np.uint64)  # -0.0 + 0.0 is +0.0: one key, as in C++
                words[:, i] = np.where(bits & _SIGN != 0, ~bits, bits | _SIGN)
        return words.reshape(-1)

    def _columns_of(self, items, what):
        if isinstance(items, np.ndarray) and items.dtype.names is not None:
            if [items.dtype[i] for i in range(len(items.dtype.names))] != self.fields:
                raise InvalidArgumentError(f"mpidict: {what} are {items.dtype}, but this map's keys are {self.name}; "
                                           f"convert them with .astype({self.dtype!r}) (no silent copy)")
            if items.ndim != 1:
                raise InvalidArgumentError(f"mpidict: {what} must be one-dimensional, not of shape {items.shape}")
            return [items[name] for name in items.dtype.names]
        if isinstance(items, np.ndarray):
            if items.ndim != 2 or items.shape[1] != self.size:
                raise InvalidArgumentError(f"mpidict: {what} must be a structured array, an (n, {self.size}) array "
                                           f"or a sequence of {self.size}-tuples, not an array of shape {items.shape}")
            return [codec._cast(items[:, i], f"{what} field {i}") for i, codec in enumerate(self._columns)]
        if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
            raise InvalidArgumentError(f"mpidict: {what} must be a sequence of {self.size}-tuples {self.name}, "
                                       f"not {_describe(items)}")
        rows = [self._row(row, f"{what}[{index}]") for index, row in enumerate(items)]
        if not rows:
            return [np.zeros(0, dtype=f) for f in self.fields]
        return [self._column(codec, list(column), f"{what} field {i}") for i, (codec, column)
                in enumerate(zip(self._columns, zip(*rows)))]

    @staticmethod
    def _column(codec, values, what):
        """Python ints become an integer field exactly (numpy would make a list of
        ints beyond int64 float64); anything else by _Codec's same_kind rule."""
        if codec.dtype.kind in "iu" and all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                                            for v in values):
            info = np.iinfo(codec.dtype)
            for v in values:
                if not info.min <= int(v) <= info.max:
                    raise InvalidArgumentError(f"mpidict: {what} ({int(v)}) does not fit in {codec.dtype}")
            return np.array([int(v) for v in values], dtype=codec.dtype)
        return codec._cast(values, what)

    def _row(self, key, what):
        if isinstance(key, np.void) and key.dtype.names is not None:
            key = tuple(key)
        if isinstance(key, (str, bytes)) or not hasattr(key, "__len__") or len(key) != self.size:
            raise InvalidArgumentError(f"mpidict: {what} must be a tuple of {self.size} numbers {self.name}, "
                                       f"not {_describe(key)}")
        return tuple(key)

    def batch(self, items, what: str):
        return self._encode(self._columns_of(items, what), what)

    def one(self, key, what: str):
        row = self._row(key, what)
        columns = [self._column(codec, [value], f"{what} field {i}").reshape(1)
                   for i, (codec, value) in enumerate(zip(self._columns, row))]
        return [int(w) for w in self._encode(columns, what)]

    def from_batch(self, words):
        words = np.asarray(words).reshape(-1, self.size)
        out = np.empty(len(words), dtype=self.dtype)
        for i, letter in enumerate(self.letters):
            column = words[:, i]
            if letter == "i":
                out[f"f{i}"] = (column ^ _SIGN).view(np.int64)
            elif letter == "u":
                out[f"f{i}"] = column
            else:
                out[f"f{i}"] = np.where(column & _SIGN != 0, column & ~_SIGN, ~column).view(np.float64)
        return out


def _seconds(value, what: str) -> float:
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(f"mpidict: {what} must be a number of seconds or a "
                                   f"{'timedelta' if what == 'ttl' else 'datetime'}, not {_describe(value)}")
    return float(value)


def _expiry(expires_at, ttl):
    """(seconds, from_now) for the C++ insert(key, value, expires_at), or None."""
    if expires_at is not None and ttl is not None:
        raise InvalidArgumentError("mpidict: give expires_at or ttl, not both")
    if ttl is not None:
        return _seconds(ttl, "ttl"), True
    if expires_at is None:
        return None
    if isinstance(expires_at, datetime.datetime):
        return expires_at.timestamp(), False  # a naive datetime is local time, as datetime.timestamp() says
    return _seconds(expires_at, "expires_at"), False


class skiplist_map(_SingleValued):
    """Ordered map (C++ mpidict::skiplist_map): point operations, ranges and
    multi-dimensional pattern queries.  Keys: int64, uint64, float64, bytes, str,
    or a tuple of 2 to 4 of int64 / uint64 / float64 (composite keys, ordered
    field by field: skiplist_map(("int64", "float64"), "float64")).
    Options: granularity, node_slots_per_rank (hard limit, 0: none),
    memory_limit_per_rank (resident bytes; 0: automatic), max_key_bytes, max_value_bytes,
    consistency ("total_order", "sequential", "none"), buffer_bytes, server_ranks (a list),
    initial_servers, grow_entries, grow_memory_fraction, rebalance_threshold,
    online_rebalance, online_rebalance_seconds (elastic servers: rebalance(), drain(),
    local_rebalance()), ..."""

    def __init__(self, key_dtype="int64", value_dtype="int64", comm=None, **options):
        composite = isinstance(key_dtype, (tuple, list))
        self._key = _CompositeCodec(key_dtype) if composite else _Codec(key_dtype, ordered=True)
        self._value = _Codec(value_dtype)
        config = _config(_core.SkiplistMapConfig(), options, "skiplist_map")
        key_name = f"c{self._key.size}" if composite else {"u64": "u64", "i64": "i64", "f64": "f64",
                                                             "bytes": "bytes"}[self._key.storage]
        value_name = "bytes" if self._value.storage == "bytes" else "u64"
        cls = getattr(_core, f"skiplist_map_{key_name}_{value_name}")
        self._impl = cls(_communicator(comm), config, self._key.letters if composite else "")

    @property
    def consistency(self) -> str:
        """This rank's consistency mode: "total_order", "sequential" or "none"."""
        return self._live().consistency()

    def set_consistency(self, mode: str) -> None:
        """Local: this rank's operations from now on run in `mode`; first waits until
        its earlier operations have completed (C++ set_consistency)."""
        if not isinstance(mode, str):
            raise InvalidArgumentError(f"mpidict: consistency is a name, not {_describe(mode)}")
        self._live().set_consistency(mode)

    # -- elastic servers (docs/skiplist_map.md "Rebalancing, growing and draining") ------------
    # Arguments of the collective calls are checked in C++ after every rank
    # compared them, so one rank's bad argument fails every rank instead of
    # leaving the others waiting; this rank's error names it.
    def rebalance(self, metric: str = "entries", target: float = 1.1) -> RebalanceResult:
        """Collective (every rank the same metric and target): flush(), then nodes
        move from the most loaded server ranks to the least until max/mean of
        `metric` ("entries" held, or "requests" handled since the last rebalance)
        is near 1; nothing moves while it is at or below `target` (>= 1)."""
        impl = self._live()
        number = isinstance(target, numbers.Real) and not isinstance(target, bool)
        try:
            return RebalanceResult(impl.rebalance(metric if isinstance(metric, str) else repr(metric),
                                                  float(target) if number else float("nan")))
        except Error as problem:
            if not number:
                raise InvalidArgumentError(f"mpidict: rebalance target is a number >= 1, not "
                                           f"{_describe(target)}; nothing moved") from problem
            raise

    def drain(self, rank: int) -> RebalanceResult:
        """Collective (the same rank everywhere): moves every node off `rank` (an
        active server, not the only one), which then stops being a server."""
        impl = self._live()
        integral = isinstance(rank, numbers.Integral) and not isinstance(rank, bool) and -2**31 <= rank < 2**31
        try:
            return RebalanceResult(impl.drain(int(rank) if integral else -1))
        except Error as problem:
            if not integral:
                raise InvalidArgumentError(f"mpidict: drain takes a rank (an int), not {_describe(rank)}; "
                                           "nothing moved") from problem
            raise

    def local_rebalance(self, nodes: int, to: int = -1) -> int:
        """Not collective: starts moving up to `nodes` of this rank's idle nodes to
        rank `to` (-1: the other active servers in turn) while operations go on;
        returns the moves started (the next flush() settles them)."""
        return self._live().local_rebalance(_count(nodes, "nodes"), _rank(to))

    def last_rebalance(self) -> RebalanceResult:
        """What the last rebalance, drain or flush that grew or moved did."""
        return RebalanceResult(self._live().last_rebalance())

    def active_servers(self) -> list:
        """The ranks hosting nodes now: the initial ones, then ranks as they woke."""
        return list(self._live().active_servers())

    # -- expiry ----------------------------------------------------------------------------
    def insert(self, key, value, *, expires_at=None, ttl=None) -> Request:
        """A request; get() is True if stored (False: the list was full).  With
        expires_at (seconds since the epoch, or a datetime) or ttl (seconds from now,
        or a timedelta) the entry expires then: finds stop seeing it, and a flush()
        after that time removes it (C++ insert(key, value, expires_at))."""
        deadline = _expiry(expires_at, ttl)
        if deadline is None:
            return super().insert(key, value)
        return self._live().insert_expiring(self._key.one(key, "key"), self._value.one(value, "value"), *deadline)

    def async_insert(self, key, value, *, expires_at=None, ttl=None) -> None:
        deadline = _expiry(expires_at, ttl)
        if deadline is None:
            return super().async_insert(key, value)
        self._live().async_insert_expiring(self._key.one(key, "key"), self._value.one(value, "value"), *deadline)

    def insert_if_absent(self, key, value, *, expires_at=None, ttl=None) -> Request:
        """Stores the pair only if the key is absent (C++ insert_if_absent); get() is
        True if it was new (False: the key was there, the list was full, or the
        deadline had passed).  expires_at / ttl as for insert."""
        deadline = _expiry(expires_at, ttl)
        seconds, from_now = deadline if deadline is not None else (0.0, False)
        return self._live().insert_if_absent(self._key.one(key, "key"), self._value.one(value, "value"),
                                             deadline is not None, seconds, from_now)

    def insert_many(self, keys, values, *, expires_at=None, ttl=None) -> InsertManyResult:
        """As insert_many of every map; with expires_at or ttl every pair gets that
        one deadline, on insert_many's own path (C++ insert_many(keys, values,
        deadline | ttl)).  A deadline already passed (ttl <= 0) stores nothing:
        stored = 0."""
        deadline = _expiry(expires_at, ttl)
        if deadline is None:
            return super().insert_many(keys, values)
        result = self._live().insert_many_expiring(self._key.batch(keys, "keys"), self._value.batch(values, "values"),
                                                   *deadline)
        return InsertManyResult(*result)

    def ttl(self, key) -> Request:
        """A request; get() is the seconds left before the key expires (float,
        millisecond precision, rounded up: Redis PTTL / 1000), -2.0 if the key is
        absent (or expired), -1.0 if it never expires."""
        return self._live().ttl(self._key.one(key, "key"))

    def expire(self, key, ttl) -> Request:
        """Sets the key's deadline `ttl` from now (seconds or a timedelta; Redis
        EXPIRE); get() is True if the key was there.  ttl <= 0 removes the key."""
        return self._live().expire(self._key.one(key, "key"), _seconds(ttl, "ttl"))

    def expire_at(self, key, expires_at) -> Request:
        """Sets the key's deadline (epoch seconds or a datetime; Redis EXPIREAT);
        get() is True if the key was there.  A time passed removes the key."""
        if expires_at is None:
            raise InvalidArgumentError("mpidict: expire_at needs a deadline (persist removes one)")
        seconds, _ = _expiry(expires_at, None)
        return self._live().expire_at(self._key.one(key, "key"), seconds)

    def persist(self, key) -> Request:
        """Removes the key's deadline (Redis PERSIST); get() is True if it had one."""
        return self._live().persist(self._key.one(key, "key"))

    # -- counting, erasing a range, reduce at the node ---------------------------------------
    def count(self, lo, hi, *, after_lo: bool = False, before_hi: bool = False) -> int:
        """How many keys lie in [lo, hi] (after_lo / before_hi exclude an end),
        counted at their nodes: no entry travels (Redis ZCOUNT)."""
        return self.count_request(lo, hi, after_lo=after_lo, before_hi=before_hi).get()

    def count_request(self, lo, hi, *, after_lo: bool = False, before_hi: bool = False) -> Request:
        return self._counted(lo, hi, after_lo, before_hi, False)

    def erase_range(self, lo, hi, *, after_lo: bool = False, before_hi: bool = False) -> int:
        """Erases every key in [lo, hi] at its node and returns how many
        (Redis ZREMRANGEBYSCORE, RocksDB DeleteRange)."""
        return self.erase_range_request(lo, hi, after_lo=after_lo, before_hi=before_hi).get()

    def erase_range_request(self, lo, hi, *, after_lo: bool = False, before_hi: bool = False) -> Request:
        return self._counted(lo, hi, after_lo, before_hi, True)

    def _counted(self, lo, hi, after_lo, before_hi, erase):
        return self._live().counted_request(self._key.one(lo, "lo"), self._key.one(hi, "hi"), bool(after_lo),
                                            bool(before_hi), erase)

    def reduce(self, key, value, op: str = "add") -> Request:
        """Folds `value` into the key's value at the key's node: op(current, value)
        with op "add", "min" or "max" (a new key stores `value`, as insert does);
        get() is True if stored.  Values of dtype int64, uint64 or float64 only
        (add wraps around for the integers, as C++ does).  A fixed set: a Python
        callable cannot run at the node, which is another rank inside the library."""
        return self._live().reduce(self._key.one(key, "key"), self._value.one(value, "value"), self._reduce_op(op))

    def async_reduce(self, key, value, op: str = "add") -> None:
        """reduce, fire and forget: applied by flush()."""
        self._live().async_reduce(self._key.one(key, "key"), self._value.one(value, "value"), self._reduce_op(op))

    def _reduce_op(self, op):
        dtype = self._value.dtype
        if dtype is None or dtype.itemsize != 8 or dtype.kind not in "iuf" or self._value.storage != "u64":
            raise InvalidArgumentError(f"mpidict: skiplist_map reduce needs int64, uint64 or float64 values, not "
                                       f"{self._value.name}")
        if op not in _REDUCE_OPS:
            raise InvalidArgumentError(f"mpidict: skiplist_map reduce op must be one of {', '.join(_REDUCE_OPS)}, "
                                       f"not {_describe(op)}")
        return "iuf".index(dtype.kind) * 3 + _REDUCE_OPS.index(op)

    # -- ranges ----------------------------------------------------------------------------
    def _entries(self, raw):
        keys, values = raw
        return self._key.from_batch(keys), self._value.from_batch(values)

    def _start(self, lo, hi, bounded, limit, descending, after_lo, before_hi):
        lo_arg = self._key.one(lo, "lo")
        hi_arg = self._key.one(hi, "hi") if bounded else lo_arg
        return self._live().range_request(lo_arg, hi_arg, bounded, min(_count(limit, "limit"), 2**64 - 1),
                                          bool(descending), bool(after_lo), bool(before_hi))

    def range(self, lo, hi, limit: int = 0, descending: bool = False, *, after_lo: bool = False,
              before_hi: bool = False):
        """(keys, values) with lo <= key <= hi in key order (descending: largest
        first), at most `limit` (0: all; with descending the largest ones, in
        O(log n + limit): "latest N").  after_lo / before_hi exclude lo / hi: the
        next page of a page cut by `limit` is range(last_key, hi, limit, after_lo=True)
        (descending: range(lo, last_key, limit, True, before_hi=True))."""
        return self.range_request(lo, hi, limit, descending, after_lo=after_lo, before_hi=before_hi).get()

    def range_from(self, lo, limit: int = 0, descending: bool = False, *, after_lo: bool = False):
        """(keys, values) with key >= lo (after_lo: key > lo), as range."""
        return self.range_from_request(lo, limit, descending, after_lo=after_lo).get()

    def range_request(self, lo, hi, limit: int = 0, descending: bool = False, *, after_lo: bool = False,
                      before_hi: bool = False):
        """range as a request (C++'s request<entry_list>): it starts at once, and
        get() waits and gives (keys, values); wait(), test().  Keep several in flight
        to pipeline them."""
        return _Converted(self._start(lo, hi, True, limit, descending, after_lo, before_hi), self._entries)

    def range_from_request(self, lo, limit: int = 0, descending: bool = False, *, after_lo: bool = False):
        return _Converted(self._start(lo, None, False, limit, descending, after_lo, False), self._entries)

    def range_many(self, los, his, limit: int = 0, descending: bool = False, *, after_lo: bool = False,
                   before_hi: bool = False, window: int = 0):
        """Several ranges in one call (C++ mpidict::range_many): a list with
        range(los[i], his[i], limit, descending, after_lo=..., before_hi=...) for
        each i, in order, up to `window` ranges in flight (0: 16).  Each is a range
        with a range's promise, not one snapshot of all."""
        raw = self._live().range_many(self._key.batch(los, "los"), self._key.batch(his, "his"),
                                      min(_count(limit, "limit"), 2**64 - 1), bool(descending), bool(after_lo),
                                      bool(before_hi), _count(window, "window"))
        return [self._entries(r) for r in raw]

    def range_chunks(self, lo, hi=None, chunk: int = 4096, limit: int = 0, descending: bool = False, *,
                     after_lo: bool = False, before_hi: bool = False):
        """The streaming form: yields (keys, values) of at most `chunk` entries at a
        time, in key order (descending: largest first), over [lo, hi] (hi None: every
        key >= lo), at most `limit` in all (0: all).  Each chunk is one limited range
        resumed after the last key of the one before (the paging of range_options),
        so the whole range is never held at once, a chunk can be used before the next
        is asked for, and the generator may be left early.  Entries inserted or
        erased meanwhile may be seen or not, as with separate ranges."""
        chunk = _count(chunk, "chunk")
        if chunk == 0:
            raise InvalidArgumentError("mpidict: range_chunks chunk must be at least 1")
        limit = _count(limit, "limit")
        self._key.one(lo, "lo")  # bad input is refused here, not at the first chunk
        if hi is not None:
            self._key.one(hi, "hi")
        self._live()
        return self._chunks(lo, hi, chunk, limit, bool(descending), bool(after_lo), bool(before_hi))

    def _chunks(self, lo, hi, chunk, limit, descending, after_lo, before_hi):
        remaining = limit or None
        bounded = hi is not None
        while remaining is None or remaining > 0:
            want = chunk if remaining is None else min(chunk, remaining)
            keys, values = self._start(lo, hi, bounded, want, descending, after_lo, before_hi and bounded).get()
            got = self._entries((keys, values))
            n = len(got[0])
            if n:
                yield got
            if remaining is not None:
                remaining -= n
            if n < want:
                return
            last = got[0][n - 1]
            if descending:
                if not bounded:
                    bounded = True
                hi, before_hi = last, True
            else:
                lo, after_lo = last, True

    def prefix(self, prefix, limit: int = 0, descending: bool = False):
        """(keys, values) of every key that starts with `prefix` (bytes or str keys;
        a str prefix as UTF-8), in key order (descending: largest first), at most `limit`."""
        return self.prefix_request(prefix, limit, descending).get()

    def prefix_request(self, prefix, limit: int = 0, descending: bool = False):
        if self._key.storage != "bytes" or self._key.dtype is not None:
            raise InvalidArgumentError("mpidict: skiplist_map prefix needs bytes or str keys")
        return _Converted(self._live().prefix_request(self._key.one(prefix, "prefix"), _count(limit, "limit"),
                                                      bool(descending)), self._entries)

    def snapshot(self) -> "SkiplistSnapshot":
        """Collective: a consistent snapshot (C++ skiplist_map::snapshot()).  Reads
        through it see the map as it was when every rank made this call, whatever is
        written, erased or expires later.  Release it collectively with release() or
        a `with` block; one that is only garbage collected stays with the map until
        the map is destroyed (the collector runs at different times on each rank)."""
        return SkiplistSnapshot(self, self._live().snapshot())

    def match(self, pattern: str, limit: int = 0, descending: bool = False):
        """(keys, values) of the keys in a pattern's box (docs/skiplist_map.md,
        "Pattern queries"): for composite keys one element per field, e.g.
        "7.[0.5,2.0)" (field 0 is 7, field 1 in [0.5, 2.0)), "*.[,3]"; numeric keys
        take one.  In key order (descending: largest first), at most `limit`."""
        return self.match_request(pattern, limit, descending).get()

    def match_request(self, pattern: str, limit: int = 0, descending: bool = False):
        """match as a request: get() gives (keys, values)."""
        if not isinstance(pattern, str):
            raise InvalidArgumentError(f"mpidict: a pattern is text, not {_describe(pattern)}")
        return _Converted(self._live().match_request(pattern, _count(limit, "limit"), bool(descending)),
                          self._entries)


def _rank(value) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or not -2**31 <= value < 2**31:
        raise InvalidArgumentError(f"mpidict: a rank is an int, not {_describe(value)}")
    return int(value)


class RebalanceResult:
    """What skiplist_map.rebalance(), drain() or a flush that grew or moved did
    (C++ skiplist_rebalance_result); the same on every rank.  Per-rank arrays
    (entries_before/after, load_before/after: the balanced metric's) are indexed
    by rank; servers are the active server ranks afterwards; the ratios are
    max/mean over them (0.0 for the empty result before anything moved)."""

    __slots__ = ("entries_before", "entries_after", "load_before", "load_after", "moved_nodes", "moved_entries",
                 "moved_bytes", "refused_nodes", "servers_added", "head_moved", "servers", "seconds",
                 "entries_ratio_before", "entries_ratio_after", "load_ratio_before", "load_ratio_after")

    def __init__(self, fields: dict):
        for name in ("entries_before", "entries_after", "load_before", "load_after"):
            setattr(self, name, np.asarray(fields[name], dtype=np.uint64))
        for name in ("moved_nodes", "moved_entries", "moved_bytes", "refused_nodes", "servers_added"):
            setattr(self, name, int(fields[name]))
        for name in ("entries_ratio_before", "entries_ratio_after", "load_ratio_before", "load_ratio_after"):
            setattr(self, name, float(fields[name]))  # computed by C++ (skiplist_rebalance_result::ratio)
        self.head_moved = bool(fields["head_moved"])
        self.servers = [int(r) for r in fields["servers"]]
        self.seconds = float(fields["seconds"])

    def __repr__(self) -> str:
        return (f"RebalanceResult(moved_nodes={self.moved_nodes}, moved_entries={self.moved_entries}, "
                f"refused_nodes={self.refused_nodes}, servers_added={self.servers_added}, servers={self.servers}, "
                f"entries max/mean {self.entries_ratio_before:.2f} -> {self.entries_ratio_after:.2f})")


class SkiplistSnapshot(_Collective):
    """A consistent snapshot of a skiplist_map (made by skiplist_map.snapshot()).

    Reads (local calls; other ranks are served while they wait): find, range,
    range_from, count.  Each rank holds one slice of the snapshot, in key order
    (rank r's keys below rank r + 1's): local_items() gives this rank's, and
    size() the whole snapshot's entry count.  release() is collective, as is
    leaving a `with` block normally; reading a released snapshot raises
    UseAfterDestroyError.  Cost: a copy of the entries (docs/skiplist_map.md,
    "Snapshots")."""

    _ended = "mpidict: this skiplist_map snapshot was released"

    def __init__(self, owner: skiplist_map, impl):
        self._key = owner._key
        self._value = owner._value
        self._impl = impl

    def _end(self) -> None:
        self.release()

    def release(self) -> None:
        """Collective: frees the copy on every rank."""
        if self._impl is not None:
            self._impl.release()
            self._impl = None

    def find(self, key):
        """The key's value at the cut, or None."""
        raw = self._live().find(self._key.one(key, "key"))
        return None if raw is None else self._value.from_one(raw)

    def _entries(self, raw):
        keys, values = raw
        return self._key.from_batch(keys), self._value.from_batch(values)

    def range(self, lo, hi, limit: int = 0, descending: bool = False, *, after_lo: bool = False,
              before_hi: bool = False):
        """(keys, values) with lo <= key <= hi at the cut, as skiplist_map.range."""
        return self._entries(self._live().range(self._key.one(lo, "lo"), self._key.one(hi, "hi"), True,
                                                min(_count(limit, "limit"), 2**64 - 1), bool(descending),
                                                bool(after_lo), bool(before_hi)))

    def range_from(self, lo, limit: int = 0, descending: bool = False, *, after_lo: bool = False):
        """(keys, values) with key >= lo at the cut."""
        lo_arg = self._key.one(lo, "lo")
        return self._entries(self._live().range(lo_arg, lo_arg, False, min(_count(limit, "limit"), 2**64 - 1),
                                                bool(descending), bool(after_lo), False))

    def count(self, lo, hi, *, after_lo: bool = False, before_hi: bool = False) -> int:
        """How many entries had lo <= key <= hi at the cut."""
        return self._live().count(self._key.one(lo, "lo"), self._key.one(hi, "hi"), bool(after_lo),
                                  bool(before_hi))

    def size(self) -> int:
        """Entries in the whole snapshot."""
        return self._live().size()

    def local_size(self) -> int:
        """Entries in this rank's slice."""
        return self._live().local_size()

    def local_items(self):
        """(keys, values) of this rank's slice, in key order."""
        return self._entries(self._live().local_items())
