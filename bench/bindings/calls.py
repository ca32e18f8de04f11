import sys, time, statistics
sys.path.insert(0, "b")
import numpy as np, nb_mod, pb_mod
n = 1_000_000
keys = np.arange(n, dtype=np.uint64)
for name, mod in (("nanobind", nb_mod), ("pybind11", pb_mod)):
    per_call, batch = [], []
    for _ in range(5):
        c = mod.counter(); add = c.add
        t = time.perf_counter()
        for k in range(n):
            add(k)
        per_call.append((time.perf_counter() - t) / n * 1e9)
        t = time.perf_counter()
        for _ in range(1000):
            c.add_many(keys[:16])
        batch.append((time.perf_counter() - t) / 1000 * 1e9)
    print(f"{name}: per-key call {statistics.median(per_call):.1f} ns, 16-key array call {statistics.median(batch):.0f} ns (medians of 5)")
