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
            with open(path, "rb") as handle:
                self.manifest: dict[str, Any] = json.load(handle)
        except FileNotFoundError:
            raise CheckpointError(f"no checkpoint here ({path} does not exist)") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as problem:
            raise CheckpointError(f"{path} is not valid JSON ({problem})") from None
        m = self.manifest
        if not isinstance(m, dict) or m.get("format") != FORMAT:
            raise CheckpointError(f"{path} is not an mpidict checkpoint manifest")
        if int(m.get("version", 0)) > FORMAT_VERSION:
            raise CheckpointError(f"{path} has format version {m['version']}, newer than this reader "
                                  f"({FORMAT_VERSION})")
        if m.get("byte_order") != sys.byteorder:
            raise CheckpointError(f"{path} was written {m.get('byte_order')}-endian; this machine is "
                                  f"{sys.byteorder}-endian")
        try:
            self.shards = [
                Shard(int(s["rank"]), str(s["file"]), int(s["entries"]),
                      {c["name"]: Column(c["name"], c["type"], int(c["width"]), int(c["count"]),
                                         int(c["offset"]), int(c["bytes"]), int(c["crc32"]))
                       for c in s["columns"]})
                for s in m["shards"]
            ]
        except (KeyError, TypeError, ValueError) as problem:
            raise CheckpointError(f"{path} is malformed ({problem!r})") from None
        for shard in self.shards:
            if os.path.basename(shard.file) != shard.file:
                raise CheckpointError(f"{path}: shard {shard.rank} names a file outside the directory")
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
                size = os.path.getsize(path)
            except FileNotFoundError:
                raise CheckpointError(f"shard {shard.rank} is missing: {path} does not exist") from None
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
