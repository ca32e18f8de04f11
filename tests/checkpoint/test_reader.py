"""The Python reader (python/mpidict/checkpoint.py) against the checkpoints the
save tests wrote (tests/checkpoint/mpi_checkpoint.cpp, mode save): every entry
of every container checked against the same model, plus pandas and a damaged
copy.  Run by CTest as: python test_reader.py ROOT P (the checkpoints of ROOT/pP)."""

import os
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from mpidict.checkpoint import Checkpoint, CheckpointError  # noqa: E402

KEYS = 1500
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("CHECK FAILED:", what, file=sys.stderr)


def word(k):
    return f"word-{k * 7919 % 100003}"


def text_of(k, j):
    return chr(ord("a") + (k + j) % 26) * (k % 23 + j)


def main(root, p):
    base = os.path.join(root, f"p{p}")

    numbers = Checkpoint(os.path.join(base, "numbers"))
    check(numbers.container == "hash_map" and numbers.multi_valued, "numbers kind")
    check(len(numbers) == KEYS, f"numbers entries {len(numbers)}")
    got = {int(k): [int(v) for v in vs] for k, vs in numbers.items()}
    check(got == {k: [k * 10 + j - 7000 for j in range(1 + k % 3)] for k in range(KEYS)}, "numbers entries")
    frame = numbers.to_pandas()
    check(len(frame) == sum(1 + k % 3 for k in range(KEYS)), "numbers to_pandas rows")
    check(frame.groupby("key")["value"].count().to_dict() == {k: 1 + k % 3 for k in range(KEYS)},
          "numbers to_pandas counts")

    texts = Checkpoint(os.path.join(base, "texts"))
    got = dict(texts.items())
    check(got == {word(k): [text_of(k, j) for j in range(1 + k % 2)] for k in range(0, KEYS, 4)}, "texts entries")

    words = Checkpoint(os.path.join(base, "words"))
    check(words.container == "linear_hash_map" and not words.multi_valued, "words kind")
    check({k: int(v) for k, v in words.items()} == {word(k): k * 7 for k in range(KEYS)}, "words entries")

    ordered = Checkpoint(os.path.join(base, "ordered"))
    keys = ordered.column("keys")
    check(sorted(int(k) for k in keys) == [k * 3 - 1000 for k in range(KEYS)], "ordered keys")
    expiry = dict(zip((int(k) for k in keys), (float(e) for e in ordered.column("expiry"))))
    check(all(expiry[k * 3 - 1000] == (1000.0 if k % 5 == 0 else 0.0) for k in range(KEYS)), "ordered expiry")
    check({int(k): v for k, v in ordered.items()} == {k * 3 - 1000: text_of(k, 0) for k in range(KEYS)},
          "ordered entries")

    pairs = Checkpoint(os.path.join(base, "pairs"))
    check(pairs.key_type == "ordered", f"pairs key type {pairs.key_type}")
    decoded = {}
    for key, value in pairs.items():
        first, second = struct.unpack(">IH", bytes(key))
        decoded[(first ^ 0x80000000) - (1 << 32 if first ^ 0x80000000 >= 1 << 31 else 0), second] = float(value)
    check(decoded == {(k % 37 - 18, k): k / 8 for k in range(KEYS)}, "pairs entries (ordered encoding)")

    objects = Checkpoint(os.path.join(base, "objects"))
    check(objects.value_type is None, "objects has no values")
    check(sorted(int(k) for (k,) in objects.items()) ==
          sorted((k * 2654435761) % (1 << 40) + 1 for k in range(KEYS)), "objects entries")

    # A damaged copy is refused with the reason.
    with tempfile.TemporaryDirectory() as scratch:
        copy = os.path.join(scratch, "numbers")
        shutil.copytree(os.path.join(base, "numbers"), copy)
        data = [f for f in os.listdir(copy) if f.startswith("data-")][0]
        with open(os.path.join(copy, data), "r+b") as handle:
            handle.seek(5)
            byte = handle.read(1)
            handle.seek(5)
            handle.write(bytes([byte[0] ^ 1]))
        try:
            Checkpoint(copy)
            check(False, "a flipped byte was not noticed")
        except CheckpointError as problem:
            check("is corrupt" in str(problem), f"message: {problem}")
        Checkpoint(copy, verify=False)  # the manifest alone still reads

    print("FAIL" if failures else "PASS", f"({len(failures)} failed checks)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
