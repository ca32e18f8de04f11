"""The containers of the mpidict package (imported on first use by mpidict/__init__.py)."""

from __future__ import annotations

import numpy as np

try:
    from mpi4py import MPI as _MPI
except ImportError as _problem:  # pragma: no cover - said clearly, not hidden
    raise ImportError(
        "mpidict needs mpi4py built against the MPI mpidict was built with: "
        "pip install --no-binary=mpi4py mpi4py (docs/python.md)") from _problem

from . import _core

Error = _core.Error
InvalidArgumentError = _core.InvalidArgumentError
UseAfterDestroyError = _core.UseAfterDestroyError
CollectiveMismatchError = _core.CollectiveMismatchError
MPIError = _core.MPIError
DecodeError = _core.DecodeError
CheckpointError = _core.CheckpointError
TableFullError = _core.TableFullError
Request = _core.Request


class MPIMismatchError(Error):
    """mpi4py and mpidict were built against different MPI libraries."""


def _check_same_mpi() -> None:
    ours = _core.mpi_library_version().strip()
    theirs = _MPI.Get_library_version().strip()
    if ours.splitlines()[:1] != theirs.splitlines()[:1]:
        raise MPIMismatchError(
            "mpidict was built with " + ours.splitlines()[0] + " but mpi4py runs "
            + theirs.splitlines()[0] + "; two MPI libraries in one process do not work. Rebuild mpi4py "
            "against the same MPI: pip install --force-reinstall --no-binary=mpi4py mpi4py")


_check_same_mpi()

__all__ = [
    "hash_map", "linear_hash_map", "skiplist_map", "rma_hash_set", "Request", "InsertManyResult",
    "Error", "InvalidArgumentError", "UseAfterDestroyError", "CollectiveMismatchError", "MPIError",
    "DecodeError", "CheckpointError", "TableFullError", "MPIMismatchError",
]


# ---- types -------------------------------------------------------------------------------

class _Codec:
    """How one user type crosses into the library: as uint64 bits (numeric dtypes of at
    most 8 bytes), as a C++ number (skiplist_map keys, which are ordered), or as byte
    strings (bytes, str, wider dtypes)."""

    def __init__(self, spec, ordered: bool = False):
        self.text = spec in (str, "str")
        self.variable = spec in (bytes, "bytes") or self.text
        self.dtype = None if self.variable else np.dtype(spec)
        self.name = "str" if self.text else "bytes" if self.variable else self.dtype.name
        if self.dtype is not None and (self.dtype.hasobject or self.dtype.itemsize == 0):
            raise InvalidArgumentError(f"mpidict: {spec!r} is not a fixed-width numpy dtype, bytes or str")
        # storage: "u64", "i64", "f64" (numbers) or "bytes"
        if self.variable or self.dtype.itemsize > 8:
            self.storage = "bytes"
        elif ordered and self.dtype.kind == "f" and self.dtype.itemsize == 8:
            self.storage = "f64"
        elif ordered and self.dtype.kind == "i" and self.dtype.itemsize == 8:
            self.storage = "i64"
        elif ordered and not (self.dtype.kind == "u" and self.dtype.itemsize == 8):
            raise InvalidArgumentError(
                f"mpidict: skiplist_map keys must be int64, uint64, float64, bytes or str (ordered), not {spec!r}")
        else:
            self.storage = "u64"
        # The name in a checkpoint's manifest (C++'s names where they agree).
        if self.text:
            self.checkpoint_name = "string"
        elif self.variable:
            self.checkpoint_name = "bytes"
        elif self.storage == "bytes":
            self.checkpoint_name = "numpy:" + self.dtype.str
        elif self.dtype.itemsize == 8 and self.dtype.kind in "iuf":
            self.checkpoint_name = self.dtype.name
        else:
            self.checkpoint_name = self.dtype.name + "@u64"

    # -- batches ---------------------------------------------------------------------------
    def batch(self, items, what: str):
        if self.storage == "bytes":
            if self.dtype is not None:
                array = self._exact(items, what)
                data = np.frombuffer(np.ascontiguousarray(array).tobytes(), dtype=np.uint8)
                offsets = np.arange(len(array) + 1, dtype=np.uint64) * np.uint64(self.dtype.itemsize)
                return _core.StringBatch(offsets, data)
            if isinstance(items, (str, bytes)) or not hasattr(items, "__len__"):
                raise InvalidArgumentError(f"mpidict: {what} must be a sequence of {self.name}")
            wanted = str if self.text else (bytes, bytearray, memoryview)
            for x in items:
                if not isinstance(x, wanted):
                    raise InvalidArgumentError(f"mpidict: {what} must all be {self.name}, "
                                               f"not {type(x).__name__} ({x!r:.40})")
            encoded = [x.encode() for x in items] if self.text else [bytes(x) for x in items]
            lengths = np.fromiter((len(x) for x in encoded), dtype=np.uint64, count=len(encoded))
            offsets = np.zeros(len(encoded) + 1, dtype=np.uint64)
            np.cumsum(lengths, out=offsets[1:])
            data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
            return _core.StringBatch(offsets, data)
        array = np.ascontiguousarray(self._exact(items, what))
        if self.storage == "i64":
            return array.view(np.int64)
        if self.storage == "f64":
            return array.view(np.float64)
        return self._to_u64(array)

    def _exact(self, items, what):
        if isinstance(items, np.ndarray):
            if items.dtype != self.dtype:
                raise InvalidArgumentError(
                    f"mpidict: {what} are {items.dtype}, but this container's are {self.dtype}; "
                    f"convert them with .astype({str(self.dtype)!r}) (no silent copy)")
            if items.ndim != 1:
                raise InvalidArgumentError(f"mpidict: {what} must be one-dimensional, not of shape {items.shape}")
            return items
        try:
            return self._cast(items, what).reshape(-1)
        except (TypeError, ValueError, OverflowError) as problem:
            raise InvalidArgumentError(f"mpidict: {what} do not convert to {self.dtype} ({problem})") from None

    def _cast(self, items, what, verb="do"):
        """items as this codec's dtype, by numpy's same_kind rule (issue 48, item 14):
        7.9 or '7' for an int64 key is refused, not truncated to 7.  Integers go
        to any integer dtype (Python ints are int64 to numpy) if their values fit;
        one outside the dtype's range is refused, not wrapped."""
        source = np.asarray(items)
        if source.size == 0 and source.dtype.kind == "f":
            return np.asarray(items, dtype=self.dtype)  # [] is float64 to numpy
        integers = source.dtype.kind in "iub" and self.dtype.kind in "iu"  # checked by value below
        if source.dtype.kind == "O" or not (integers or np.can_cast(source.dtype, self.dtype, casting="same_kind")):
            raise InvalidArgumentError(
                f"mpidict: {what} ({_describe(items)}) {verb} not convert to {self.dtype}: numpy's same_kind rule "
                f"refuses {source.dtype} -> {self.dtype} (convert explicitly if that is what you mean)")
        if integers and source.size and source.dtype.kind != "b" and \
                not np.iinfo(self.dtype).min <= int(source.min()) <= int(source.max()) <= np.iinfo(self.dtype).max:
            raise InvalidArgumentError(f"mpidict: {what} ({_describe(items)}) {verb} not fit in {self.dtype}")
        return source.astype(self.dtype)

    def _to_u64(self, array):
        size = self.dtype.itemsize
        if size == 8:
            return array.view(np.uint64)
        bits = array.view(f"u{size}")
        return bits.astype(np.uint64)

    def from_batch(self, out):
        """The library's output batch back in the user's type."""
        if self.storage == "bytes":
            offsets, data = out
            if self.dtype is not None:
                return np.frombuffer(data.tobytes(), dtype=self.dtype)
            raw = data.tobytes()
            pieces = [raw[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
            return [p.decode() for p in pieces] if self.text else pieces
        if self.storage in ("i64", "f64"):
            return out.view(self.dtype)
        size = self.dtype.itemsize
        if size == 8:
            return out.view(self.dtype)
        return out.astype(f"u{size}").view(self.dtype)

    # -- single items ---------------------------------------------------------------------
    def one(self, item, what: str):
        if self.storage == "bytes":
            if self.dtype is not None:
                return np.asarray(item, dtype=self.dtype).tobytes()
            if self.text:
                if not isinstance(item, str):
                    raise InvalidArgumentError(f"mpidict: {what} must be str, not {type(item).__name__}")
                return item.encode()
            if not isinstance(item, (bytes, bytearray, memoryview)):
                raise InvalidArgumentError(f"mpidict: {what} must be bytes, not {type(item).__name__}")
            return bytes(item)
        # Fast paths (a single key is converted on every call): a Python int for an
        # 8-byte integer type, a Python float for float64, already exact.
        kind = type(item)
        if kind is int and self.dtype.itemsize == 8:
            if self.dtype.kind == "i" and -2**63 <= item < 2**63:
                return item if self.storage == "i64" else item & 0xFFFFFFFFFFFFFFFF
            if self.dtype.kind == "u" and 0 <= item < 2**64:
                return item
        elif kind is float and self.storage == "f64":
            return item
        try:
            value = self._cast(item, what, "does")
        except (TypeError, ValueError, OverflowError) as problem:
            raise InvalidArgumentError(f"mpidict: {what} does not convert to {self.dtype} ({problem})") from None
        if value.ndim != 0:
            raise InvalidArgumentError(f"mpidict: {what} must be one {self.dtype}, not an array")
        if self.storage == "i64":
            return int(value)
        if self.storage == "f64":
            return float(value)
        return int(self._to_u64(value.reshape(1))[0])

    def from_one(self, item):
        if item is None:
            return None
        if self.storage == "bytes":
            if self.dtype is not None:
                return np.frombuffer(item, dtype=self.dtype)[0]
            return item.decode() if self.text else item
        if self.storage in ("i64", "f64"):
            return self.dtype.type(item)
        return self.from_batch(np.array([item], dtype=np.uint64))[0]


class _Converted:
    """A request whose result is converted when read."""

    def __init__(self, request, convert):
        self._request = request
        self._convert = convert

    def get(self):
        return self._convert(self._request.get())

    def wait(self):
        self._request.wait()

    def test(self) -> bool:
        return self._request.test()


def _describe(items) -> str:
    text = repr(items)
    return text if len(text) <= 60 else text[:57] + "..."


def _count(value, what: str, most: int = 2**64 - 1) -> int:
    """A whole number from 0 to most, or InvalidArgumentError naming it (issue 48, item 15)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not 0 <= value <= most:
        raise InvalidArgumentError(f"mpidict: {what} must be a whole number from 0 to {most}, not {_describe(value)}")
    return int(value)


def _communicator(comm):
    comm = _MPI.COMM_WORLD if comm is None else comm
    if not isinstance(comm, _MPI.Comm):
        raise InvalidArgumentError(f"mpidict: comm must be an mpi4py.MPI.Comm, not {type(comm).__name__}")
    if comm == _MPI.COMM_NULL:
        raise InvalidArgumentError("mpidict: comm is MPI.COMM_NULL")
    return _core.Communicator.from_fortran(comm.py2f())


def _config(config, options: dict, what: str):
    runtime_names = {"buffer_bytes", "blocking_factor", "release_queue", "total_outbox_bytes", "progress_thread",
                     "routing", "stuck_wait_seconds"}
    for name, value in options.items():
        target = config.runtime if name in runtime_names else config
        if not hasattr(target, name):
            raise InvalidArgumentError(f"mpidict: {what} has no option {name!r}")
        current = getattr(target, name)
        if isinstance(current, int) and not isinstance(current, bool):
            value = _count(value, f"{what} option {name}")
        try:
            setattr(target, name, value)
        except (TypeError, ValueError) as problem:
            raise InvalidArgumentError(f"mpidict: {what} option {name}={value!r}: {problem}") from None
    return config


class _Collective:
    """A handle whose end is collective (a container's destroy, a snapshot's
    release): leaving a `with` block normally ends it; every use after the end
    raises UseAfterDestroyError with the subclass's `_ended` text."""

    _impl = None
    _ended = "mpidict: this container was destroyed"

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        # Unwinding an exception, other ranks may not be here: do not wait for them.
        if kind is None:
            self._end()
        return False

    def _end(self) -> None:
        raise NotImplementedError

    def _live(self):
        if self._impl is None:
            raise UseAfterDestroyError(self._ended)
        return self._impl


class _Container(_Collective):
    """What every container shares: the collective destroy (also as a context
    manager), flush, sizes and checkpoints."""

    def _end(self) -> None:
        self.destroy()

    def destroy(self) -> None:
        """Collective: applies what is pending and releases the communicator."""
        if self._impl is not None:
            if not _MPI.Is_finalized():
                self._impl.destroy()
            self._impl = None

    def flush(self) -> None:
        """Collective: returns when every operation started anywhere before it is applied."""
        self._live().flush()

    def global_size(self) -> int:
        """Collective: entries over all ranks."""
        return self._live().global_size()

    def local_size(self) -> int:
        return self._live().local_size()

    @property
    def rank(self) -> int:
        return self._live().rank()

    @property
    def num_ranks(self) -> int:
        return self._live().num_ranks()

    def _type_names(self):
        return self._key.checkpoint_name, self._value.checkpoint_name if self._value else ""

    def save(self, directory) -> None:
        """Collective: writes a checkpoint (docs/checkpoint.md); the manifest names the
        Python types (int32 keys kept as uint64 bits say "int32@u64")."""
        self._live().save(str(directory), *self._type_names())

    def load(self, directory) -> None:
        """Collective: fills this empty container from a checkpoint saved at any rank
        count, by C++ or Python, with the same types."""
        self._live().load(str(directory), *self._type_names())


class InsertManyResult:
    """What insert_many returns in every container (docs/architecture.md, "Contracts"):
    stored pairs (new keys, replaced values, or hash_map's appended values), of them
    the ones that replaced a value (single-valued maps), and the pairs the owners
    refused for capacity (nothing of them stored; never raised), and which: refused_indexes,
    the refused pairs' indexes into the call's keys, ascending (an int64 array)."""

    __slots__ = ("stored", "replaced", "refused", "refused_indexes")

    def __init__(self, stored: int, replaced: int, refused: int, refused_indexes=None):
        self.stored, self.replaced, self.refused = int(stored), int(replaced), int(refused)
        self.refused_indexes = (np.zeros(0, dtype=np.int64) if refused_indexes is None
                                else np.asarray(refused_indexes, dtype=np.int64))

    @property
    def complete(self) -> bool:
        return self.refused == 0

    @property
    def added(self) -> int:
        """Keys that were not there before (single-valued maps)."""
        return self.stored - self.replaced

    def __int__(self) -> int:
        import warnings
        warnings.warn("mpidict: insert_many returns an InsertManyResult; use .added (new keys) or .stored",
                      DeprecationWarning, stacklevel=2)
        return self.added

    def __eq__(self, other):
        if isinstance(other, InsertManyResult):
            return (self.stored, self.replaced, self.refused) == (other.stored, other.replaced, other.refused)
        if isinstance(other, int) and not isinstance(other, bool):
            # skiplist_map.insert_many returned the count of new keys; `m.insert_many(...) == n` still works.
            import warnings
            warnings.warn("mpidict: insert_many returns an InsertManyResult; compare .added (new keys) or .stored",
                          DeprecationWarning, stacklevel=2)
            return self.added == other
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return f"InsertManyResult(stored={self.stored}, replaced={self.replaced}, refused={self.refused})"


def _pick(prefix: str, key: _Codec, value: _Codec | None):
    names = {"u64": "u64", "i64": "i64", "f64": "f64", "bytes": "bytes"}
    name = prefix + "_" + names[key.storage] + ("" if value is None else "_" + names[value.storage])
    return getattr(_core, name)


# ---- containers ---------------------------------------------------------------------------

class hash_map(_Container):
    """Multi-valued distributed hash map (C++ mpidict::hash_map): every key holds a
    sequence of values in insertion order.  Options: expected_keys_per_rank,
    max_load, capacity_values, capacity_bytes, cyclic, buffer_bytes,
    blocking_factor, release_queue, total_outbox_bytes, progress_thread, routing ("automatic", "direct",
    "grid"), stuck_wait_seconds (the stuck-wait message's threshold; 0 off; default: the environment
    variable MPIDICT_STUCK_WAIT_SECONDS, else 10; docs/runtime.md "Stuck waits")."""

    def __init__(self, key_dtype="int64", value_dtype="int64", comm=None, **options):
        self._key = _Codec(key_dtype)
        self._value = _Codec(value_dtype)
        config = _config(_core.HashMapConfig(), options, "hash_map")
        self._impl = _pick("hash_map", self._key, self._value)(_communicator(comm), config)

    def insert_many(self, keys, values) -> InsertManyResult:
        """Appends values[i] to keys[i]'s values, for every i; returns once every pair
        has been answered, with how many were stored and refused for capacity."""
        return InsertManyResult(*self._live().insert_many(self._key.batch(keys, "keys"),
                                                          self._value.batch(values, "values")))

    def async_insert_many(self, keys, values) -> None:
        """As insert_many, fire and forget: applied by flush(), refusals in async_rejected()."""
        self._live().async_insert_many(self._key.batch(keys, "keys"), self._value.batch(values, "values"))

    def reduce_many(self, keys, values, op: str = "sum") -> None:
        """Combines values[i] into keys[i]'s one value with `op` ('sum', 'min', 'max' or
        'replace'; for bytes 'sum' concatenates): a new key starts at values[i], a key
        with several values has them folded first.  Repeated keys are combined on this
        rank before they are sent (async: applied by flush())."""
        kind, size = ("", 0) if self._value.dtype is None else (self._value.dtype.kind, self._value.dtype.itemsize)
        self._live().reduce_many(self._key.batch(keys, "keys"), self._value.batch(values, "values"), op, kind, size)

    def find_many(self, keys, limit: int | None = None):
        """(counts, values): counts[i] of keys[i]'s values (at most `limit`), then all
        values concatenated in key order; np.repeat(range(len(keys)), counts) maps them back."""
        counts, values = self._live().find_many(self._key.batch(keys, "keys"), _limit(limit), False)
        return counts, self._value.from_batch(values)

    def take_many(self, keys, limit: int | None = None):
        """As find_many, and removes what it returns."""
        counts, values = self._live().find_many(self._key.batch(keys, "keys"), _limit(limit), True)
        return counts, self._value.from_batch(values)

    def insert_if_absent_many(self, keys, values):
        """A bool array: True where the key was new and values[i] was stored."""
        inserted = self._live().insert_if_absent_many(self._key.batch(keys, "keys"), self._value.batch(values, "values"))
        return inserted.astype(bool)

    def insert(self, key, value) -> Request:
        """A request; get() is True if the value was stored (False: capacity)."""
        return self._live().insert(self._key.one(key, "key"), self._value.one(value, "value"))

    def async_insert(self, key, value) -> None:
        self._live().async_insert(self._key.one(key, "key"), self._value.one(value, "value"))

    def find(self, key, limit: int | None = None):
        """A request; get() gives the key's values (an array, or a list of bytes/str)."""
        return _Converted(self._live().find(self._key.one(key, "key"), _limit(limit), False), self._value.from_batch)

    def take(self, key, limit: int | None = None):
        return _Converted(self._live().find(self._key.one(key, "key"), _limit(limit), True), self._value.from_batch)

    def erase(self, key) -> Request:
        """A request; get() is the number of values removed."""
        return self._live().erase(self._key.one(key, "key"))

    def async_erase(self, key) -> None:
        self._live().async_erase(self._key.one(key, "key"))

    def global_value_count(self) -> int:
        return self._live().global_value_count()

    def async_rejected(self) -> int:
        """Values of this rank's async inserts refused by capacity limits (complete after flush())."""
        return self._live().async_rejected()

    def owner(self, key) -> int:
        return self._live().owner(self._key.one(key, "key"))

    def local_items(self):
        """(keys, counts, values) held by this rank."""
        keys, counts, values = self._live().local_items()
        return self._key.from_batch(keys), counts, self._value.from_batch(values)


def _limit(limit):
    if limit is None:
        return 0xFFFFFFFF
    return min(_count(limit, "limit"), 0xFFFFFFFF)


class _SingleValued(_Container):
    """Point operations of the maps with one value per key: insert (replaces; the
    request's get() is True if stored), find (the value or None), erase (True if
    the key was there), and their async forms."""

    def insert(self, key, value) -> Request:
        return self._live().insert(self._key.one(key, "key"), self._value.one(value, "value"))

    def async_insert(self, key, value) -> None:
        self._live().async_insert(self._key.one(key, "key"), self._value.one(value, "value"))

    def find(self, key):
        return _Converted(self._live().find(self._key.one(key, "key")), self._value.from_one)

    def erase(self, key) -> Request:
        return self._live().erase(self._key.one(key, "key"))

    def async_erase(self, key) -> None:
        self._live().async_erase(self._key.one(key, "key"))

    def insert_many(self, keys, values) -> InsertManyResult:
        """Inserts (or replaces) every pair, in order where a key repeats; returns once
        every pair has been answered, with how many were stored, replaced and refused
        for capacity."""
        result = self._live().insert_many(self._key.batch(keys, "keys"), self._value.batch(values, "values"))
        return InsertManyResult(*result)

    def async_insert_many(self, keys, values) -> None:
        """As insert_many, fire and forget: applied by flush(), refusals in async_rejected()."""
        self._live().async_insert_many(self._key.batch(keys, "keys"), self._value.batch(values, "values"))

    def find_many(self, keys):
        """(found, values): found[i] says whether keys[i] is present; values holds the
        found keys' values in key order."""
        found, values = self._live().find_many(self._key.batch(keys, "keys"))
        return found.astype(bool), self._value.from_batch(values)

    def async_rejected(self) -> int:
        """Inserts of this rank's async calls refused for capacity (complete after flush())."""
        return self._live().async_rejected()


class linear_hash_map(_SingleValued):
    """LH*LH map (C++ mpidict::linear_hash_map): one value per key, grows onto dormant
    ranks by splits.  Options: initial_servers, server_capacity_bytes, split_load,
    max_key_bytes, max_value_bytes, buffer_bytes, ..."""

    def __init__(self, key_dtype="int64", value_dtype="int64", comm=None, **options):
        self._key = _Codec(key_dtype)
        self._value = _Codec(value_dtype)
        config = _config(_core.LinearHashMapConfig(), options, "linear_hash_map")
        self._impl = _pick("linear_hash_map", self._key, self._value)(_communicator(comm), config)

    def local_items(self):
        keys, values = self._live().local_items()
        return self._key.from_batch(keys), self._value.from_batch(values)


class _SetName:
    def __init__(self, dtype):
        exact = dtype.itemsize == 8 and dtype.kind in "iuf"
        self.checkpoint_name = dtype.name if exact else "numpy:" + dtype.str


class rma_hash_set(_Container):
    """One-sided distributed set (C++ mpidict::rma_hash_set): fixed-width objects of
    at most 32 bytes (any numpy dtype; padded to 8, 16 or 32 bytes).  Options:
    slots_per_rank, expected_per_rank, max_load."""

    def __init__(self, dtype="int64", comm=None, **options):
        self._dtype = np.dtype(dtype)
        if self._dtype.hasobject or not 0 < self._dtype.itemsize <= 32:
            raise InvalidArgumentError(f"mpidict: rma_hash_set objects are fixed-width dtypes of 1 to 32 bytes, "
                                       f"not {dtype!r}")
        self._words = 1 if self._dtype.itemsize <= 8 else 2 if self._dtype.itemsize <= 16 else 4
        self._key, self._value = _SetName(self._dtype), None
        config = _config(_core.RmaHashSetConfig(), options, "rma_hash_set")
        self._impl = getattr(_core, f"rma_hash_set_{8 * self._words}")(_communicator(comm), config)

    def _words_of(self, objects):
        array = _Codec(self._dtype)._exact(objects, "objects")
        padded = np.zeros((len(array), self._words * 8), dtype=np.uint8)
        padded[:, :self._dtype.itemsize] = np.ascontiguousarray(array).view(np.uint8).reshape(
            len(array), self._dtype.itemsize)
        return padded.view(np.uint64).reshape(-1)

    def insert_if_absent_many(self, objects):
        """An int8 array: 1 inserted, 0 already present, -1 not inserted (the owner's table is full)."""
        return self._live().insert_if_absent_many(self._words_of(objects))

    def contains_many(self, objects):
        return self._live().contains_many(self._words_of(objects)).astype(bool)

    def insert_many(self, objects) -> InsertManyResult:
        """The batch contract of every container (docs/architecture.md, "Contracts"):
        stored (in the set now), of them replaced (already there), refused (owner full)."""
        status = self.insert_if_absent_many(objects)
        return InsertManyResult(int((status >= 0).sum()), int((status == 0).sum()), int((status < 0).sum()),
                                np.flatnonzero(status < 0))

    def find_many(self, objects):
        """found[i]: objects[i] is in the set (contains_many, under the contract's name)."""
        return self.contains_many(objects)

    def local_items(self):
        words = self._live().local_items()
        raw = words.view(np.uint8).reshape(-1, self._words * 8)[:, :self._dtype.itemsize]
        return np.ascontiguousarray(raw).view(self._dtype).reshape(-1)


from ._skiplist import RebalanceResult, SkiplistSnapshot, skiplist_map  # noqa: E402  (it builds on the classes above)
