"""Read an mpidict checkpoint outside the MPI job: plain Python and numpy.

A checkpoint directory (written by ``save()`` of any mpidict container, or by
``mpidict hash --save``) holds ``manifest.json`` and data files.  Each saving
rank's shard is a set of columns, each a flat array of one fixed-width type at
an offset in a data file; byte strings are an ``.offsets`` column (count + 1
uint64) and a ``.data`` column.  docs/checkpoint.md describes the format.

    from mpidict.checkpoint import Checkpoint

    ck = Checkpoint("run/ckpt")          # reads the manifest, verifies CRC-32s
    ck.container, len(ck)                # "hash_map", entries
    keys = ck.column("keys")             # numpy array over all shards
    for key, values in ck.items(): ...   # hash_map: a list of values per key
    frame = ck.to_pandas()               # one row per value (needs pandas)

Fixed-width columns are numpy memmaps (nothing is read until used), so a
checkpoint larger than memory can be inspected shard by shard
(``ck.column("keys", shard=3)``).
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import zlib
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

FORMAT = "mpidict-checkpoint"
FORMAT_VERSION = 1

_DTYPES = {
    "bool": "?",
    "int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8",
    "uint8": "u1", "uint16": "u2", "uint32": "u4", "uint64": "u8",
    "float32": "f4", "float64": "f8",
}


class CheckpointError(Exception):
    """The checkpoint is missing, damaged, or not one this reader understands."""


MAX_MANIFEST_BYTES = 256 << 20  # as the library (src/checkpoint/manifest.hpp)
_MOST_BYTES = 1 << 62
_CONTAINERS = ("hash_map", "linear_hash_map", "skiplist_map", "rma_hash_set")
_WIDTHS = {"bool": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4,
           "uint64": 8, "float32": 4, "float64": 8, "string": 0, "bytes": 0}
_DATA_FILE = re.compile(r"data-[0-9]+(-r[0-9]+)?\.bin")


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def _read_manifest(path: str) -> bytes:
    """The manifest's bytes: a regular file (a FIFO would block) of at most MAX_MANIFEST_BYTES,
    both checked before anything is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint here ({path} does not exist)") from None
    except OSError as problem:
        raise CheckpointError(f"no checkpoint here ({path} cannot be opened: {problem.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CheckpointError(f"{path} is {_kind(info.st_mode)}, not a regular file")
        if info.st_size > MAX_MANIFEST_BYTES:
            raise CheckpointError(f"{path} is {info.st_size} bytes, more than the {MAX_MANIFEST_BYTES} a manifest "
                                  f"may have")
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read(MAX_MANIFEST_BYTES + 1)
    finally:
        os.close(fd)


def _uint(obj, name: str, most: int, where: str) -> int:
    """A field that must be a whole number from 0 to `most` (JSON; not a bool, not a float)."""
    if not isinstance(obj, dict) or name not in obj:
        raise CheckpointError(f"{where} has no field {name!r}")
    value = obj[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CheckpointError(f"{where}: {name!r} is {json.dumps(value)[:40]}, not a whole number from 0 to {most}")
    if value > most:
        raise CheckpointError(f"{where}: {name!r} is {value}, more than {most}")
    return value


def _text(obj, name: str, where: str) -> str:
    if not isinstance(obj, dict) or not isinstance(obj.get(name), str):
        raise CheckpointError(f"{where}: {name!r} is missing or not a string")
    return obj[name]


def _implied_columns(container, key_type, key_bytes, value_type, value_bytes, multi):
    """(name, type, width) of the columns a load of this container reads, in order."""
    out = []

    def add(name, type_, width):
        if width == 0:
            out.extend([(name + ".offsets", "uint64", 8), (name + ".data", type_, 1)])
        else:
            out.append((name, type_, width))
    add("keys", key_type, key_bytes)
    if multi:
        out.append(("value_counts", "uint64", 8))
    if value_type is not None:
        add("values", value_type, value_bytes)
    if container == "skiplist_map":
        out.append(("expiry", "float64", 8))
    return out


def _check_manifest(m, path: str) -> list:
    """The shards of a manifest, after every check the library's load makes
    (src/checkpoint/manifest.cpp); raises CheckpointError naming the field."""
    container = _text(m, "container", path)
    if container not in _CONTAINERS:
        raise CheckpointError(f"{path}: 'container' is {container[:40]!r}, not one of {', '.join(_CONTAINERS)}")
    key = m.get("key")
    key_type, key_bytes = _text(key, "type", path + ": key"), _uint(key, "bytes", 1 << 30, path + ": key")
    value_type = value_bytes = None
    if "value" in m:
        value_type = _text(m["value"], "type", path + ": value")
        value_bytes = _uint(m["value"], "bytes", 1 << 30, path + ": value")
    multi = m.get("multi_valued")
    if not isinstance(multi, bool):
        raise CheckpointError(f"{path}: 'multi_valued' is missing or not true/false")
    if multi != (container == "hash_map"):
        raise CheckpointError(f"{path}: 'multi_valued' is {str(multi).lower()}, but a {container} is "
                              f"{'' if container == 'hash_map' else 'not '}multi-valued")
    if (value_type is None) != (container == "rma_hash_set"):
        raise CheckpointError(f"{path}: a {container} {'needs' if value_type is None else 'has no'} 'value'")
    for type_, width, role in ((key_type, key_bytes, "key"), (value_type, value_bytes, "value")):
        if type_ in _WIDTHS and _WIDTHS[type_] != width and (width <= 8 or _WIDTHS[type_] == 0):
            raise CheckpointError(f"{path}: the {role} type {type_} has {_WIDTHS[type_]} bytes, not {width}")
    ranks = _uint(m, "ranks", 2**31 - 1, path)
    generation = _uint(m, "generation", 2**64 - 1, path)
    layout = _text(m, "layout", path)
    if layout not in ("shared_file", "file_per_rank"):
        raise CheckpointError(f"{path}: 'layout' is {layout[:40]!r}, not shared_file or file_per_rank")
    declared = _uint(m, "entries", 2**64 - 1, path)
    listed = m.get("shards")
    if not isinstance(listed, list):
        raise CheckpointError(f"{path}: 'shards' is missing or not a list")
    if ranks < 1 or len(listed) != ranks:
        raise CheckpointError(f"{path} lists {len(listed)} shards for {ranks} ranks")
    wanted = _implied_columns(container, key_type, key_bytes, value_type, value_bytes, multi)
    seen, shards, spans = set(), [], {}
    for item in listed:
        rank = _uint(item, "rank", ranks - 1, path + ": a shard")
        where = f"{path}: shard {rank}"
        if rank in seen:
            raise CheckpointError(f"{where} is listed twice")
        seen.add(rank)
        file = _text(item, "file", where)
        entries = _uint(item, "entries", _MOST_BYTES, where)
        own = f"data-{generation}" + ("" if layout == "shared_file" else f"-r{rank}") + ".bin"
        if os.path.basename(file) != file or not _DATA_FILE.fullmatch(file):
            raise CheckpointError(f"{where} names the file {file[:80]!r}, which is not a data file of a checkpoint")
        if file != own:
            raise CheckpointError(f"{where} names the file {file!r}; a {layout} checkpoint of generation "
                                  f"{generation} keeps it in {own}")
        columns_listed = item.get("columns")
        if not isinstance(columns_listed, list):
            raise CheckpointError(f"{where}: 'columns' is missing or not a list")
        if len(columns_listed) != len(wanted):
            raise CheckpointError(f"{where} has {len(columns_listed)} columns, expected {len(wanted)}")
        columns = {}
        for index, (c, (name, type_, width)) in enumerate(zip(columns_listed, wanted)):
            cw = f"{where} column {index}"
            column = Column(_text(c, "name", cw), _text(c, "type", cw), _uint(c, "width", 1 << 30, cw),
                            _uint(c, "count", _MOST_BYTES, cw), _uint(c, "offset", _MOST_BYTES, cw),
                            _uint(c, "bytes", _MOST_BYTES, cw), _uint(c, "crc32", 0xFFFFFFFF, cw))
            # The keys' and values' element type is the saving container's (the bindings keep
            # int64 or float64 in uint64 columns and name the user's type in "key"/"value").
            type_known = name.endswith(".offsets") or name in ("value_counts", "expiry")
            if (column.name, column.width) != (name, width) or (type_known and column.type != type_):
                raise CheckpointError(f"{where} column {index} is {column.name[:40]!r} of {column.type[:40]} "
                                      f"({column.width} bytes wide), expected {name!r} of {type_} ({width})")
            if column.count * column.width != column.bytes or column.bytes > _MOST_BYTES or \
                    column.offset > _MOST_BYTES - column.bytes:
                raise CheckpointError(f"{where} column {column.name} has inconsistent sizes (count {column.count} "
                                      f"x width {column.width} is not bytes {column.bytes})")
            per_entry = name in ("keys", "value_counts", "expiry") or (name == "values" and not multi)
            offsets_per_entry = name == "keys.offsets" or (name == "values.offsets" and not multi)
            if (per_entry and column.count != entries) or (offsets_per_entry and column.count != entries + 1) or \
                    (name == "values.offsets" and column.count == 0):
                raise CheckpointError(f"{where} column {name} has {column.count} elements for {entries} entries")
            if column.bytes:
                spans.setdefault(file, []).append((column.offset, column.offset + column.bytes, rank, name))
            columns[name] = column
        shards.append(Shard(rank, file, entries, columns))
    shards.sort(key=lambda shard: shard.rank)
    total = sum(shard.entries for shard in shards)
    if total != declared:
        raise CheckpointError(f"{path}: 'entries' is {declared}, but the shards hold {total}")
    for file, ranges in spans.items():
        ranges.sort()
        for before, after in zip(ranges, ranges[1:]):
            if after[0] < before[1]:
                raise CheckpointError(f"{path}: in {file}, column {before[3]} of shard {before[2]} (bytes "
                                      f"{before[0]} to {before[1]}) and column {after[3]} of shard {after[2]} "
                                      f"(from byte {after[0]}) overlap")
    return shards


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    width: int
    count: int
    offset: int
    bytes: int
    crc32: int


@dataclass(frozen=True)
class Shard:
    rank: int
    file: str
    entries: int
    columns: dict[str, Column]


class Checkpoint:
    """One checkpoint directory.  Raises CheckpointError naming the problem."""

    def __init__(self, directory: str | os.PathLike, verify: bool = True):
        self.directory = os.fspath(directory)
        path = os.path.join(self.directory, "manifest.json")
        try:
            self.manifest: dict[str, Any] = json.loads(_read_manifest(path))
        except RecursionError:
            raise CheckpointError(f"{path} is not valid JSON (nested too deeply)") from None
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError) as problem:
            raise CheckpointError(f"{path} is not valid JSON ({problem})") from None
        m = self.manifest
        if not isinstance(m, dict) or m.get("format") != FORMAT:
            raise CheckpointError(f"{path} is not an mpidict checkpoint manifest")
        if _uint(m, "version", 2**64 - 1, path) > FORMAT_VERSION:
            raise CheckpointError(f"{path} has format version {m['version']}, newer than this reader "
                                  f"({FORMAT_VERSION})")
        if m.get("byte_order") != sys.byteorder:
            raise CheckpointError(f"{path} was written {str(m.get('byte_order'))[:20]}-endian; this machine is "
                                  f"{sys.byteorder}-endian")
        self.shards = _check_manifest(m, path)
        if verify:
            self.verify()

    # ---- what it is -------------------------------------------------------------------

    @property
    def container(self) -> str:
        return self.manifest["container"]

    @property
    def key_type(self) -> str:
        return self.manifest["key"]["type"]

    @property
    def value_type(self) -> str | None:
        value = self.manifest.get("value")
        return value["type"] if value else None

    @property
    def multi_valued(self) -> bool:
        return bool(self.manifest["multi_valued"])

    def __len__(self) -> int:
        return int(self.manifest["entries"])

    def __repr__(self) -> str:
        return (f"Checkpoint({self.directory!r}: {self.container}, {len(self)} entries, "
                f"saved at {self.manifest['ranks']} ranks)")

    # ---- checks -----------------------------------------------------------------------

    def verify(self) -> None:
        """Checks every column's size and CRC-32, as a load does."""
        for shard in self.shards:
            path = os.path.join(self.directory, shard.file)
            try:
                info = os.stat(path)
            except FileNotFoundError:
                raise CheckpointError(f"shard {shard.rank} is missing: {path} does not exist") from None
            if not stat.S_ISREG(info.st_mode):  # a FIFO would block the open
                raise CheckpointError(f"shard {shard.rank} ({shard.file}): {path} is {_kind(info.st_mode)}, "
                                      f"not a regular file")
            size = info.st_size
            with open(path, "rb") as handle:
                for column in shard.columns.values():
                    if column.offset + column.bytes > size:
                        raise CheckpointError(f"shard {shard.rank} ({shard.file}) is truncated: column "
                                              f"{column.name} needs bytes {column.offset} to "
                                              f"{column.offset + column.bytes}, the file has {size}")
                    handle.seek(column.offset)
                    crc, left = 0, column.bytes
                    while left:
                        chunk = handle.read(min(left, 1 << 22))
                        crc = zlib.crc32(chunk, crc)
                        left -= len(chunk)
                    if crc != column.crc32:
                        raise CheckpointError(f"shard {shard.rank} ({shard.file}) is corrupt: column "
                                              f"{column.name} has CRC-32 {crc:#010x}, the manifest says "
                                              f"{column.crc32:#010x}")
            self._verify_structure(shard)

    def _verify_structure(self, shard: Shard) -> None:
        """Offsets increase from 0 to the data's length; value counts are positive and add up to the values."""
        name = f"shard {shard.rank} ({shard.file})"
        for column in shard.columns.values():
            if column.name.endswith(".offsets"):
                offsets = self._fixed(shard, column.name)
                if len(offsets) and (offsets[0] != 0 or np.any(offsets[1:] < offsets[:-1])):
                    raise CheckpointError(f"{name}: column {column.name} is not a list of increasing offsets from 0")
                data = shard.columns[column.name[:-8] + ".data"]
                end = int(offsets[-1]) if len(offsets) else 0
                if end != data.count:
                    raise CheckpointError(f"{name}: column {column.name} ends at {end}, but {data.name} holds "
                                          f"{data.count} bytes")
        if "value_counts" in shard.columns:
            counts = self._fixed(shard, "value_counts")
            if len(counts) and np.any(counts == 0):
                raise CheckpointError(f"{name}: value_counts holds a 0 at entry {int(np.argmax(counts == 0))} "
                                      f"(every saved key has a value)")
            total = int(np.sum(counts, dtype=np.uint64)) if len(counts) else 0
            values = shard.columns.get("values") or shard.columns.get("values.offsets")
            held = values.count if values.name == "values" else values.count - 1
            if total != held:
                raise CheckpointError(f"{name}: value_counts add up to {total}, but the values column holds {held}")

    # ---- columns ----------------------------------------------------------------------

    def _fixed(self, shard: Shard, name: str) -> np.ndarray:
        column = shard.columns[name]
        if column.type in _DTYPES:
            dtype = np.dtype(_DTYPES[column.type])
        else:  # raw or ordered: the bytes of each element
            dtype = np.dtype(f"V{column.width}")
        if column.count == 0:
            return np.empty(0, dtype=dtype)
        return np.memmap(os.path.join(self.directory, shard.file), dtype=dtype, mode="r",
                         offset=column.offset, shape=(column.count,))

    def _strings(self, shard: Shard, name: str) -> list:
        offsets = self._fixed(shard, name + ".offsets")
        data_column = shard.columns[name + ".data"]
        with open(os.path.join(self.directory, shard.file), "rb") as handle:
            handle.seek(data_column.offset)
            data = handle.read(data_column.bytes)
        pieces = [data[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
        if data_column.type == "string":
            return [piece.decode("utf-8", errors="surrogateescape") for piece in pieces]
        return pieces

    def column(self, name: str, shard: int | None = None):
        """A column ("keys", "values", "value_counts", "expiry") of one shard, or of
        all shards concatenated: a numpy array, or a list for byte strings."""
        shards = self.shards if shard is None else [self.shards[shard]]
        if not shards:
            return np.empty(0)
        if name + ".offsets" in shards[0].columns:
            out: list = []
            for s in shards:
                out.extend(self._strings(s, name))
            return out
        if name not in shards[0].columns:
            raise KeyError(f"this {self.container} checkpoint has no column {name!r} "
                           f"(it has {sorted(shards[0].columns)})")
        arrays = [self._fixed(s, name) for s in shards]
        array = arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
        declared = {"keys": self.key_type, "values": self.value_type}.get(name)
        return _as_declared(array, declared)

    # ---- entries ----------------------------------------------------------------------

    def items(self) -> Iterator[tuple]:
        """(key, value) per entry; hash_map: (key, [values...]) in their saved order;
        rma_hash_set: (key,)."""
        for index in range(len(self.shards)):
            keys = self.column("keys", index)
            if self.value_type is None:
                for key in keys:
                    yield (key,)
                continue
            values = self.column("values", index)
            if not self.multi_valued:
                yield from zip(keys, values)
                continue
            counts = self.column("value_counts", index)
            at = 0
            for key, count in zip(keys, counts):
                yield key, list(values[at:at + int(count)])
                at += int(count)

    def __iter__(self):
        return self.items()

    def to_pandas(self):
        """A DataFrame: columns key (and value, and expiry for skiplist_map); one row
        per value of a multi-valued map."""
        import pandas as pd  # only this method needs pandas

        keys = self.column("keys")
        frame: dict[str, Any] = {}
        if self.value_type is not None and self.multi_valued:
            counts = np.asarray(self.column("value_counts"), dtype=np.int64)
            if isinstance(keys, list):
                frame["key"] = [k for k, c in zip(keys, counts) for _ in range(int(c))]
            else:
                frame["key"] = np.repeat(keys, counts)
        else:
            frame["key"] = keys
        if self.value_type is not None:
            frame["value"] = self.column("values")
        if self.shards and "expiry" in self.shards[0].columns:
            frame["expiry"] = self.column("expiry")
        return pd.DataFrame(frame)


def _as_declared(array, declared):
    """Columns written by the Python bindings keep several numpy types in one C++
    type: "float64" in a uint64 column (same bits), "int32@u64" (zero-extended bits),
    "numpy:<dtype>" in a raw column.  Returns the array in the declared type."""
    if declared is None:
        return array
    try:
        if declared.startswith("numpy:"):
            dtype = np.dtype(declared[6:])
            return array.view(dtype) if array.dtype.itemsize == dtype.itemsize else array
        if declared.endswith("@u64"):
            dtype = np.dtype(declared[:-4])
            return array.astype(f"u{dtype.itemsize}").view(dtype)
        dtype = np.dtype(_DTYPES.get(declared, ""))
    except TypeError:
        return array
    if dtype.itemsize == array.dtype.itemsize and dtype != array.dtype and array.dtype.kind in "iufV":
        return array.view(dtype)
    return array


def main(argv: list[str] | None = None) -> int:
    """python -m mpidict.checkpoint DIR: the summary and the first entries."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("directory")
    parser.add_argument("--head", type=int, default=5, help="entries to print")
    args = parser.parse_args(argv)
    try:
        ck = Checkpoint(args.directory)
    except CheckpointError as problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    print(ck)
    for index, entry in enumerate(ck.items()):
        if index >= args.head:
            break
        print(*entry)
    return 0


if __name__ == "__main__":
    sys.exit(main())
