"""The Python example of docs/checkpoint.md: read what examples/checkpoint_restart.cpp
saved, outside the job (numpy; pandas for the frame).  Run by CTest after it:
    python examples/read_checkpoint.py DIR"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

# doc-begin
from mpidict.checkpoint import Checkpoint

ck = Checkpoint(sys.argv[1])          # reads manifest.json, verifies every CRC-32
print(ck)                             # Checkpoint('...': hash_map, 300 entries, saved at 2 ranks)
frame = ck.to_pandas()                # one row per value: key, value
top = frame.groupby("key")["value"].sum().nlargest(3)
# doc-end
print(top)
ranks = ck.manifest["ranks"]
assert len(ck) == 300 and len(frame) == 1000 * ranks, (len(ck), len(frame))
print("read_checkpoint: ok")
