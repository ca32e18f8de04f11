#!/usr/bin/env python3
"""Reproduces seed 003's LH*LH experiments (Gupta, Modi, Pimentel, SAC 2001) with
apps/word_build and writes docs/linear_hash_map.md and docs/figures/linear_hash_map_*.png.

    python3 scripts/word_build_report.py [--build-dir build] [--quick]

The paper builds an LH*LH file from a Dutch dictionary (about 180,000 words, 1 KB
values) with 1-8 clients on 8 dual-processor workstations, the file starting on
1 (or 3) servers and growing to 8.  This machine allows at most 4 ranks (on
however many cores it has; ranks beyond the cores are oversubscribed and marked
so).  Runs and what they reproduce:

    fig1  build time vs insertions, splits marked, clients 1..P (1 starting server,
          P servers), and the speedup over 1 client (Figure 1a, 1b); also Figure 2
          (average insertion time = elapsed / insertions) from the same runs, and
          the hash_map baseline of each run
    two   the same at 2 ranks (not oversubscribed on 2 cores), the whole list
    big   ranks = min(--ranks, cores), the whole list, with the baseline, 3 runs alternating (headline)
    fig3  insert latency histogram of one client, P clients, 3 starting servers
    fig4  average insertion time vs value size 1, 2, 4, 8 KB (3 starting servers)
    fig5  build time for max servers 1, 2, 4 (1 starting server), 2 and P clients

--quick runs everything on a few thousand words (a smoke test of the script,
about a minute); the default takes about 8 minutes on a 2-core machine (more when it is loaded).
Environment: MPIEXEC overrides the launcher (default scripts/mpirun.sh).
"""

import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build", help="CMake build directory (default build)")
    parser.add_argument("--words", default="/usr/share/dict/dutch",
                        help="word list (default /usr/share/dict/dutch: Debian's wdutch, data/README.md)")
    parser.add_argument("--ranks", type=int, default=4, help="largest rank count (default 4)")
    parser.add_argument("--quick", action="store_true", help="a few thousand words per run (smoke test)")
    parser.add_argument("--doc", default=os.path.join("docs", "linear_hash_map.md"))
    parser.add_argument("--figures", default=os.path.join("docs", "figures"))
    parser.add_argument("--timeout", type=int, default=900, help="seconds allowed per run (default 900)")
    return parser.parse_args()


def shell_join(words):
    return " ".join(shlex.quote(w) for w in words)


class Runner:
    def __init__(self, args):
        self.args = args
        self.exe = os.path.join(args.build_dir, "apps", "word_build", "word_build")
        launcher = os.environ.get("MPIEXEC")
        self.launcher = [launcher] if launcher else [os.path.join("scripts", "mpirun.sh")]
        self.work = tempfile.mkdtemp(prefix="word_build_report.")
        self.runs = []
        self.count = 0

    def ensure_built(self):
        if not os.path.isfile(os.path.join(self.args.build_dir, "CMakeCache.txt")):
            generator = ["-G", "Ninja"] if subprocess.call(["sh", "-c", "command -v ninja >/dev/null"]) == 0 else []
            subprocess.check_call(["cmake", "-S", ".", "-B", self.args.build_dir, *generator,
                                   "-DCMAKE_BUILD_TYPE=Release"])
        subprocess.check_call(["cmake", "--build", self.args.build_dir, "-j", str(os.cpu_count() or 2),
                               "--target", "word_build"])

    def run(self, group, ranks, options, label=None):
        """Runs word_build on `ranks` ranks; returns the run record (metrics by name, trace)."""
        self.count += 1
        trace = os.path.join(self.work, f"trace{self.count}.json")
        shown = [*self.launcher, "-n", str(ranks), self.exe, "--json", *options, self.args.words]
        command = [*shown, "--trace", trace]
        print(f"word_build_report: [{group}] {shell_join(shown)}", file=sys.stderr, flush=True)
        start = time.monotonic()
        try:
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=self.args.timeout)
            exit_code, stdout, stderr = done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired as expired:
            exit_code, stdout, stderr = "timeout", expired.stdout or "", expired.stderr or ""
            if isinstance(stdout, bytes):
                stdout = stdout.decode(errors="replace")
            if isinstance(stderr, bytes):
                stderr = stderr.decode(errors="replace")
        wall = time.monotonic() - start
        metrics = {}
        for line in stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    figure = json.loads(line)
                except json.JSONDecodeError:
                    continue
                metrics[figure["metric"]] = figure
        trace_doc = None
        if os.path.isfile(trace):
            try:
                with open(trace) as handle:
                    trace_doc = json.load(handle)
            except (OSError, json.JSONDecodeError):
                trace_doc = None
        record = {"group": group, "label": label, "ranks": ranks, "options": options, "command": shell_join(shown),
                  "exit": exit_code, "wall": wall, "metrics": metrics, "trace": trace_doc,
                  "stderr_tail": "\n".join(stderr.strip().splitlines()[-6:])}
        if exit_code != 0:
            print(f"word_build_report: run failed (exit {exit_code}):\n{record['stderr_tail']}", file=sys.stderr)
        else:
            print(f"word_build_report:   {wall:.1f} s", file=sys.stderr, flush=True)
        self.runs.append(record)
        return record


def value(run, metric, field="value", default=None):
    figure = run["metrics"].get(metric)
    if figure is None:
        return default
    return figure.get(field, default)


def ok(run):
    return run["exit"] == 0 and value(run, "verified") == 1


# ---- the experiments ---------------------------------------------------------------------


def experiments(runner, args):
    P = args.ranks
    quick = args.quick
    sweep_words = 3000 if quick else 180000    # the oversubscribed client sweeps (Figures 1, 2)
    servers_words = 3000 if quick else 100000  # Figure 5
    size_words = 2000 if quick else 20000      # Figure 4 (values up to 8 KB)
    full = ["--limit", "4000"] if quick else []  # the whole list
    plan = {"sweep_words": sweep_words, "servers_words": servers_words, "size_words": size_words,
            "full": "4000 words" if quick else "the whole list"}
    groups = {}

    # Figures 1 and 2: clients 1..P, 1 starting server growing to P, with the baseline.
    groups["fig1"] = [runner.run("fig1", P, ["--clients", str(c), "--servers-start", "1", "--servers-max", str(P),
                                             "--limit", str(sweep_words), "--baseline"], label=f"{c} client" +
                                 ("s" if c > 1 else "")) for c in range(1, P + 1)]
    # The same on 2 ranks, which are not oversubscribed on 2 cores: the whole list.
    if P >= 2:
        groups["two"] = [runner.run("two", 2, ["--clients", str(c), "--servers-start", "1", "--servers-max", "2",
                                               *full, "--baseline"], label=f"{c} client" + ("s" if c > 1 else ""))
                         for c in (1, 2)]
    # The headline (issue 52): at most as many ranks as cores, the whole list, LH*LH and
    # the hash_map baseline alternating which builds first, medians of 3 runs.
    H = max(1, min(P, os.cpu_count() or P))
    groups["big"] = [runner.run("big", H, ["--clients", str(H), "--servers-start", "1", "--servers-max", str(H),
                                           *full, "--baseline", "--repeat", "3"],
                                label=f"{H} client{'s' if H > 1 else ''}, whole list")]
    # Figure 3: P clients, 3 starting servers (the histogram is client 0's).
    start3 = min(3, P)
    groups["fig3"] = [runner.run("fig3", P, ["--clients", str(P), "--servers-start", str(start3), "--servers-max",
                                             str(P), *full], label=f"{P} clients, {start3} starting servers")]
    # Figure 4: value sizes, 3 starting servers, 1, 2 and P clients.
    groups["fig4"] = []
    for c in sorted({1, 2, P}):
        for kb in (1, 2, 4, 8):
            groups["fig4"].append(runner.run("fig4", P, ["--clients", str(c), "--servers-start", str(start3),
                                                         "--servers-max", str(P), "--value-bytes", str(kb * 1024),
                                                         "--limit", str(size_words)],
                                             label=f"{c} client{'s' if c > 1 else ''}, {kb} KB"))
    # Figure 5: max servers 1, 2, 4 (1 starting server), with 2 and P clients.
    groups["fig5"] = []
    for c in sorted({2, P}):
        for servers in (1, 2, 4):
            if servers > P:
                continue
            groups["fig5"].append(runner.run("fig5", P, ["--clients", str(c), "--servers-start", "1",
                                                         "--servers-max", str(servers), "--limit", str(servers_words)],
                                             label=f"{c} clients, max {servers} server{'s' if servers > 1 else ''}"))
    return groups, plan


# ---- figures -------------------------------------------------------------------------------


def make_figures(groups, figures_dir, P):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(figures_dir, exist_ok=True)
    written = {}

    def save(fig, name):
        path = os.path.join(figures_dir, name)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written[name] = path

    def curve(run):
        points = (run["trace"] or {}).get("curve", [])
        return [p[1] for p in points], [p[0] for p in points]

    def split_points(run):
        splits = (run["trace"] or {}).get("splits", [])
        return [s["insertions"] for s in splits], [s["start_seconds"] for s in splits]

    def over(run):
        return " (oversubscribed)" if value(run, "words_inserted", "oversubscribed") else ""

    # Figure 1a: build time vs insertions with split points.
    panels = [g for g in ("fig1", "two") if groups.get(g)]
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.5), squeeze=False)
    for axis, group in zip(axes[0], panels):
        for run in groups[group]:
            if run["trace"] is None:
                continue
            x, y = curve(run)
            line, = axis.plot(x, y, label=run["label"])
            sx, sy = split_points(run)
            axis.plot(sx, sy, "o", color=line.get_color(), markersize=5)
        run0 = groups[group][0]
        axis.set_title(f"{run0['ranks']} ranks{over(run0)}, 1 starting server")
        axis.set_xlabel("insertions")
        axis.set_ylabel("build time (s)")
        axis.grid(alpha=0.3)
        axis.legend()
    fig.suptitle("LH*LH build time, 1 KB values (dots: global splits)")
    save(fig, "linear_hash_map_fig1a_build_time.png")

    # Figure 1b: speedup vs clients.
    fig, axis = plt.subplots(figsize=(5.5, 4.5))
    for group in panels:
        runs = [r for r in groups[group] if ok(r)]
        if not runs:
            continue
        base = value(runs[0], "build_seconds")
        clients = [value(r, "words_inserted", "clients") for r in runs]
        speedup = [base / value(r, "build_seconds") for r in runs]
        axis.plot(clients, speedup, "o-", label=f"{runs[0]['ranks']} ranks{over(runs[0])}")
    top = max(P, 2)
    axis.plot([1, top], [1, top], "k--", label="ideal")
    axis.set_xlabel("clients")
    axis.set_ylabel("speedup over 1 client (build time)")
    axis.set_xticks(range(1, top + 1))
    axis.grid(alpha=0.3)
    axis.legend()
    axis.set_title("Insertion speedup, 1 starting server")
    save(fig, "linear_hash_map_fig1b_speedup.png")

    # Figure 2: average insertion time (elapsed / insertions) vs insertions.
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.5), squeeze=False)
    for axis, group in zip(axes[0], panels):
        for run in groups[group]:
            if run["trace"] is None:
                continue
            x, y = curve(run)
            avg = [1e6 * t / n for n, t in zip(x, y) if n > 0]
            line, = axis.plot([n for n in x if n > 0], avg, label=run["label"])
            sx, sy = split_points(run)
            axis.plot(sx, [1e6 * t / n if n else 0 for n, t in zip(sx, sy)], "o", color=line.get_color(),
                      markersize=5)
        run0 = groups[group][0]
        axis.set_title(f"{run0['ranks']} ranks{over(run0)}, 1 starting server")
        axis.set_xlabel("insertions")
        axis.set_ylabel("average insertion time (us)")
        axis.set_yscale("log")
        axis.grid(alpha=0.3, which="both")
        axis.legend()
    fig.suptitle("Average insertion time seen by the application (dots: global splits)")
    save(fig, "linear_hash_map_fig2_avg_insertion_time.png")

    # Figure 3: latency histogram of client 0.
    run = groups["fig3"][0]
    if run["trace"] is not None and run["trace"].get("client0_latency_us"):
        samples = sorted(run["trace"]["client0_latency_us"])
        cut = samples[min(len(samples) - 1, int(0.999 * len(samples)))]
        shown = [s for s in samples if s <= cut]
        fig, axis = plt.subplots(figsize=(6.5, 4.5))
        axis.hist(shown, bins=150, color="tab:blue")
        axis.set_yscale("log")
        axis.set_xlabel("insertion latency (us)")
        axis.set_ylabel("insertions (log scale)")
        axis.set_title(f"Client 0's {len(samples):,} insertions, {value(run, 'words_inserted', 'clients')} clients, "
                       f"{value(run, 'words_inserted', 'servers_start')} starting servers{over(run)}\n"
                       f"(the slowest 0.1% above {cut:.0f} us not shown; max {samples[-1]:.0f} us)", fontsize=9)
        axis.grid(alpha=0.3)
        save(fig, "linear_hash_map_fig3_latency_histogram.png")

    # Figure 4: average insertion time vs value size.
    fig, axis = plt.subplots(figsize=(6, 4.5))
    by_clients = {}
    for run in groups["fig4"]:
        if ok(run):
            by_clients.setdefault(value(run, "words_inserted", "clients"), []).append(run)
    for clients, runs in sorted(by_clients.items()):
        runs.sort(key=lambda r: value(r, "words_inserted", "value_bytes"))
        axis.plot([value(r, "words_inserted", "value_bytes") / 1024 for r in runs],
                  [value(r, "avg_insertion_time_us") for r in runs], "o-",
                  label=f"{clients} client{'s' if clients > 1 else ''}")
    axis.set_xscale("log", base=2)
    axis.set_xticks([1, 2, 4, 8])
    axis.set_xticklabels(["1", "2", "4", "8"])
    axis.set_xlabel("value size (KB)")
    axis.set_ylabel("average insertion time (us)")
    axis.grid(alpha=0.3, which="both")
    axis.legend()
    first = groups["fig4"][0]
    axis.set_title(f"{value(first, 'words_inserted', 'words', 0):,} words, {first['ranks']} ranks{over(first)}, "
                   f"{value(first, 'words_inserted', 'servers_start')} starting servers", fontsize=10)
    save(fig, "linear_hash_map_fig4_value_size.png")

    # Figure 5: build time for max servers 1, 2, 4.
    by_clients = {}
    for run in groups["fig5"]:
        by_clients.setdefault(value(run, "words_inserted", "clients", 0), []).append(run)
    fig, axes = plt.subplots(1, len(by_clients), figsize=(6 * len(by_clients), 4.5), squeeze=False)
    for axis, (clients, runs) in zip(axes[0], sorted(by_clients.items())):
        for run in runs:
            if run["trace"] is None:
                continue
            x, y = curve(run)
            line, = axis.plot(x, y, label=f"max {value(run, 'words_inserted', 'servers_max')} server"
                             + ("s" if value(run, 'words_inserted', 'servers_max') != 1 else ""))
            sx, sy = split_points(run)
            axis.plot(sx, sy, "o", color=line.get_color(), markersize=5)
        axis.set_title(f"{clients} clients, {runs[0]['ranks']} ranks{over(runs[0])}, 1 starting server")
        axis.set_xlabel("insertions")
        axis.set_ylabel("build time (s)")
        axis.grid(alpha=0.3)
        axis.legend()
    fig.suptitle("Build time for a maximum of 1, 2 and 4 servers (dots: global splits)")
    save(fig, "linear_hash_map_fig5_max_servers.png")
    return written


# ---- the document --------------------------------------------------------------------------

USER_SECTION = r"""
`linear_hash_map<K, V>` (`include/mpidict/linear_hash_map.hpp`) is LH\*LH
(Litwin, Neimat and Schneider's LH\*, in Karlsson's LH\*LH variant; seed 003): a
distributed dictionary that **grows while it is used**. Some ranks are *servers*,
some are *clients*, a rank may be both. The file starts on `initial_servers`
servers; when the server holding the split token passes its load threshold it
*splits*: it wakes the next dormant server rank and ships it half of its local
linear-hashing buckets in bulk, while it keeps answering requests (a request for a
key that has moved is forwarded). Clients address servers through an *image*
(i', n') of the file that may be out of date; a misaddressed request is forwarded
at most twice (LH\*'s proof) and the answer carries an image adjustment (IAM) that
moves the client's image forward.

Keys and values are `std::string`, `std::vector<std::byte>` or trivially copyable
types. `insert` inserts or replaces; every operation is acknowledged by the server
that answers it.

```cpp
#include <mpidict/linear_hash_map.hpp>

mpidict::linear_hash_map_config config;
config.server_ranks = std::vector<int>{3, 2, 1, 0};  // activation order: bucket a on server_ranks[a]
config.client_ranks = std::vector<int>{0, 1};        // who may start operations (default: every rank)
config.initial_servers = 1;                          // N: active at the start
config.server_capacity_bytes = 64u << 20;            // key + value payload bytes per server
mpidict::linear_hash_map<std::string, std::string> words(MPI_COMM_WORLD, config);  // collective

if (words.is_client()) {
    mpidict::replace_result r = words.insert("fiets", std::string(1024, 'x')).get();
    if (!r.stored) { /* the answering server was full and no dormant server was left */ }
    std::optional<std::string> v = words.find("fiets").get();
    words.async_insert("boot", "...");       // fire and forget: done by the next flush()
}
words.flush();                               // collective: everything answered, no split in progress
mpidict::linear_hash_map_statistics s = words.gather_statistics();  // collective: splits, servers, forwards, IAMs
```

| `linear_hash_map_config` | default | meaning |
|---|---|---|
| `server_ranks` | every rank | server ranks in activation order (bucket address a lives on `server_ranks[a]`); an empty list is an error |
| `client_ranks` | every rank | ranks that may start operations (others only serve) |
| `initial_servers` | 1 | N, servers active at the start; the rest are dormant until a split wakes them |
| `server_capacity_bytes` | 256 MiB | per server, key + value payload bytes; the load factor is payload / capacity; an insert beyond it is refused (`stored = false`), not an error |
| `split_load` | 0.8 | the token holder splits when its load factor passes this and a dormant server remains |
| `max_key_bytes`, `max_value_bytes` | 1024, 16 KiB | largest key and value; one record of both must fit a message: `runtime.buffer_bytes` at least `config.required_buffer_bytes()` (the constructor says so otherwise) |
| `bucket_entries` | 8 | local LH table: average entries per LH bucket before it grows |
| `ship_window` | 2 | split shipment messages in flight, unacknowledged |
| `runtime` | | the engine's tunables (buffer size B, blocking factor L, release queue q, progress thread; `docs/runtime.md`) |

Statistics (`gather_statistics()`, collective): `forwards[op][h]` (operations
answered after h forwards, h = 3 meaning more than two, which never happens),
`iams_sent` / `iams_applied`, `rejected` (inserts refused for capacity),
`deferred` (requests a new server held until the bucket they need had arrived), one
`lh_split_record` per split (addresses, ranks, start and end time, bytes,
entries and messages shipped) and one `lh_server_info` per server (address,
entries, payload, load factor, requests served and forwarded).

A client's own operations on one key are answered in the order it issued them,
even across an image change. See `docs/design-decisions.md` (linear_hash_map) for
the decisions taken where LH\* left room.

## The dictionary-build application: `word_build` / `mpidict words`

`apps/word_build/` (library `mpidict_app_word_build`, program `word_build`, also
`mpidict words FILE`) is the paper's experiment: clients build the file from a word
list, one line = one key (the line's bytes without the `\n`), each with a value of
`--value-bytes` that is a deterministic function of the word; then every word is
looked up by its client and its value compared byte for byte.

```
scripts/mpirun.sh -n 4 build/apps/word_build/word_build /usr/share/dict/dutch
scripts/mpirun.sh -n 4 build/tools/mpidict words --clients 2 --servers-start 3 --baseline --json FILE
```

With p ranks, clients are ranks 0..C-1 and servers, in activation order, ranks
p-1, p-2, ..., p-S (the paper maps clients from node 1 up and servers from node 8
down), so a rank may be both. Options: `--clients C` (default every rank),
`--servers-start N` (1), `--servers-max S` (every rank), `--value-bytes` (1024, at
most 16384), `--limit W` (the first W words), `--server-capacity` (default
automatic: the largest share a bucket holds at the end, plus three standard
deviations of its word count, ends at load (split_load + 1) / 2, so the file grows
to S servers and nothing is refused; printed), `--split-load`, `--buffer-bytes`,
`--window K` (outstanding requests per client; 1 = the paper's synchronous insert,
so the latency is per request), `--share contiguous|strided`, `--baseline` (the
same words, values, clients and window into a `hash_map<std::string, std::string>`
placed by hash on the S server ranks), `--json`, `--trace FILE` (build curve, split
points, client 0's latencies), `--seed`.

Output: JSON lines (`"bench":"mpidict_words"`, the format of docs/architecture.md, every line with
`clients`, `servers_start`, `servers_max`, `value_bytes`, `words`, `oversubscribed`)
with the metrics `words_inserted`, `words_found`, `max_forwards`, `splits`,
`servers_active`, `build_seconds` (barrier to the last acknowledged insert),
`insert_rate`, `avg_insertion_time_us` (build time / words: the paper's "average
insertion time as experienced by the application"), `insert_latency_us` (mean per
request, with median/p90/p99/min/max), `forwards_per_op` (inserts and finds),
`iams`, `lookup_seconds`, `find_latency_us`, with `--baseline`
`hash_map_build_seconds`, `hash_map_insert_latency_us`, `insert_latency_vs_hash_map`
and `build_time_vs_hash_map` (ratios, LH\*LH / hash_map), and `verified`. A table
goes to stderr. The exit code is non-zero if a word is not found with its value or
an operation was forwarded more than twice; bad input (a missing file, an empty
line, which is named by its line number, a value above the maximum, no server rank,
an unknown option) gives one error line and a non-zero exit on every rank.
Tests: `ctest -L word_build`.
"""


def fmt(x, digits=3):
    if x is None:
        return "-"
    if isinstance(x, int):
        return f"{x:,}"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def run_table(runs, baseline=False):
    head = ["run", "ranks", "C", "N", "S", "words", "value B", "build s", "inserts/s", "avg ins. us",
            "latency mean / median / p99 us", "splits", "servers", "fwd/op", "max fwd", "IAMs", "lookup s"]
    if baseline:
        head += ["hash_map latency us", "latency ratio", "build ratio"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for run in runs:
        w = lambda metric, field="value": value(run, metric, field)
        if not run["metrics"]:
            lines.append(f"| {run['label']} | {run['ranks']} | failed (exit {run['exit']}) |" + " |" * (len(head) - 3))
            continue
        over = "*" if w("words_inserted", "oversubscribed") else ""
        verdict = "" if ok(run) else " **(not verified)**"
        row = [run["label"] + verdict, f"{run['ranks']}{over}", fmt(w("words_inserted", "clients")),
               fmt(w("words_inserted", "servers_start")), fmt(w("words_inserted", "servers_max")),
               fmt(w("words_inserted", "words")), fmt(w("words_inserted", "value_bytes")),
               fmt(w("build_seconds")), fmt(w("insert_rate")), fmt(w("avg_insertion_time_us")),
               f"{fmt(w('insert_latency_us'))} / {fmt(w('insert_latency_us', 'median'))} / "
               f"{fmt(w('insert_latency_us', 'p99'))}",
               fmt(int(w("splits") or 0)), fmt(int(w("servers_active") or 0)), f"{w('forwards_per_op') or 0:.2g}",
               fmt(int(w("max_forwards") or 0)), fmt(int(w("iams") or 0)), fmt(w("lookup_seconds"))]
        if baseline:
            row += [fmt(w("hash_map_insert_latency_us")), fmt(w("insert_latency_vs_hash_map")),
                    fmt(w("build_time_vs_hash_map"))]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def commands_block(runs):
    return "```\n" + "\n".join(r["command"] for r in runs) + "\n```"


def split_table(run):
    splits = (run["trace"] or {}).get("splits", [])
    if not splits:
        return "(no splits)"
    lines = ["| split | ranks | at insertion | start s | end s | shipped bytes | entries | messages |",
             "|---|---|---|---|---|---|---|---|"]
    for s in splits:
        lines.append(f"| {s['from_address']} → {s['to_address']} | {s['from_rank']} → {s['to_rank']} | "
                     f"{s['insertions']:,} | {s['start_seconds']:.3f} | {s['end_seconds']:.3f} | "
                     f"{s['bytes_shipped']:,} | {s['entries_shipped']:,} | {s['messages']:,} |")
    return "\n".join(lines)


def machine_facts(args):
    def out(command):
        try:
            return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""
    cpu = ""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    launcher = os.environ.get("MPIEXEC", "mpiexec")
    mpi = " ".join(out([launcher, "--version"]).splitlines()[:2]).split()
    commit = out(["git", "rev-parse", "--short", "HEAD"]) or "unknown"
    if out(["git", "status", "--porcelain"]):
        commit += " (with uncommitted changes)"
    try:
        load = " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        load = "?"
    return {"cores": os.cpu_count(), "cpu": cpu or "unknown", "mpi": " ".join(mpi), "commit": commit, "load": load}


def write_document(args, groups, plan, figures, facts, total_seconds):
    P = args.ranks
    out = []
    w = out.append
    w("# linear_hash_map — LH\\*LH (seed 003)")
    w("")
    w("The first part describes the container and the application; the second part")
    w("(**Experiments**) is generated by `scripts/word_build_report.py`" + (" --quick" if args.quick else "")
      + " on " + datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
      + ". Do not edit by hand: rerun the script.")
    w(USER_SECTION)
    w("## Experiments (seed 003, Gupta, Modi and Pimentel, SAC 2001)")
    w("")
    w(f"* Machine: {facts['cores']} cores ({facts['cpu']}), shared with other work; load averages (1, 5, 15 min) "
      f"at the end: {facts['load']}. MPI launcher: {facts['mpi']}. Git commit: {facts['commit']}.")
    w(f"* The paper used 8 workstations (2 CPUs each, Fast Ethernet) and up to 8 clients and 8 servers. Here "
      f"everything runs on **one {facts['cores']}-core machine with at most {P} ranks**: runs with more ranks than "
      "cores are **oversubscribed** (marked `*` in the tables; the JSON field `oversubscribed`), so a request's "
      "round trip includes waiting for the operating system to schedule the server rank (tens to hundreds of "
      "microseconds) instead of a network round trip. Clients are ranks 0..C-1, servers ranks p-1 down to p-S, "
      "as in the paper, so ranks are shared by a client and a server exactly as nodes were. 8 servers or 8 "
      "clients are not possible here; Figure 5's 8-server curve is missing for that reason.")
    w(f"* Word list: `{args.words}` (Debian's wdutch: 413,288 Dutch words, OpenTaal; the paper's had about 180,000). Values of "
      "1 KB unless stated, a deterministic function of the word, checked byte for byte after the build by "
      "finding every word (every run below verified: all words found with the right value, at most 2 "
      "forwards, unless marked).")
    w(f"* Subsets, to keep the whole report under about 15 minutes: the oversubscribed client sweeps (Figures 1 "
      f"and 2) use the first {plan['sweep_words']:,} words (about the size of the paper's dictionary); Figure 4 the first "
      f"{plan['size_words']:,} words (values up to 8 KB); Figure 5 the first {plan['servers_words']:,} words; "
      f"the 2-rank runs, the headline run and Figure 3 use {plan['full']}.")
    w("* Insertions are synchronous as in the paper (`--window 1`: insert, then wait for its acknowledgement), "
      "so *insert latency* is the round trip of one request. *Average insertion time* is the paper's measure "
      "(elapsed build time / insertions so far, as seen by the application), which falls with more clients. "
      "The server capacity is automatic (see above) so that the file grows to its maximum number of servers; "
      "split points are where a split *started* (the number of insertions acknowledged by then).")
    w(f"* Total time of the runs: {total_seconds / 60:.1f} minutes.")
    w("")

    big = groups["big"][0]
    w("### Headline")
    w("")
    if big["metrics"]:
        b = lambda metric, field="value": value(big, metric, field)
        w(f"{big['label']} ({big['ranks']} ranks{' oversubscribed' if b('words_inserted', 'oversubscribed') else ''},"
          f" {b('words_inserted', 'words'):,} words, 1 KB values, 1 starting server growing to "
          f"{b('servers_active')}): build **{b('build_seconds'):.2f} s** ({b('insert_rate'):,.0f} inserts/s), "
          f"{int(b('splits'))} splits, **{b('forwards_per_op'):.2g} forwards per operation** (max "
          f"{int(b('max_forwards'))}), {int(b('iams'))} IAMs; insert latency mean {b('insert_latency_us'):.1f} us "
          f"(median {b('insert_latency_us', 'median'):.1f}, p99 {b('insert_latency_us', 'p99'):.1f}) against "
          f"{b('hash_map_insert_latency_us'):.1f} us for `hash_map` on the same ranks; over the "
          f"{b('median_insert_latency_vs_hash_map', 'repeats')} runs (the two alternating which builds first) "
          f"the median latency ratio LH\\*LH / hash_map is **{b('median_insert_latency_vs_hash_map'):.2f}** "
          f"(per run {b('median_insert_latency_vs_hash_map', 'per_run')}) and the build time ratio "
          f"{b('median_build_time_vs_hash_map'):.2f}; lookup of every word {b('lookup_seconds'):.2f} s.")
    else:
        w(f"The headline run failed (exit {big['exit']}).")
    w("")
    w(commands_block(groups["big"]))
    w("")
    w(split_table(big))
    w("")

    starved = []
    for run in sum(groups.values(), []):
        trace = run["trace"] or {}
        first = (trace.get("client0_latency_us") or [0])[0]
        clients, ranks = value(run, "words_inserted", "clients"), run["ranks"]
        if first > 20000 and clients == ranks and ranks > 1:
            starved.append((run, first))
    if starved:
        worst, first = max(starved, key=lambda item: item[1])
        w("### Known issue in this run: a client that is also the only server starves the others")
        w("")
        w("When every rank is a client (C = p), the first server (rank p-1) is also a client. While it is the only "
          "active server, all its own requests go to itself; the engine completes them through its loopback path "
          "(`engine::ship` drains the loopback message, the reply completes the request inside `wait_until`'s "
          "`ship_all()`) and never polls MPI, so the other clients' requests to it wait until it next sends a "
          "message to another rank, which is its first split. In `" + worst["command"] + "`, client 0's first "
          f"insertion took {first / 1e6:.3f} s. This shows as the flat start of the C = p curves and inflates "
          "their mean latency and the C = p rows' ratio to `hash_map` (whose keys are mostly remote, so it "
          f"polls). Runs affected: {len(starved)}. It is a runtime issue, not LH\\*LH's; the paper's server "
          "process served independently of its client.")
        w("")

    w("### Figure 1: build time and speedup (1 starting server)")
    w("")
    w(f"Clients 1..{P} on {P} ranks, the file starting on 1 server and growing to {P}; every run also builds "
      "the `hash_map` baseline (static placement on the same server ranks, same clients, same window).")
    w("")
    w(f"![build time](figures/linear_hash_map_fig1a_build_time.png)")
    w("")
    w(f"![speedup](figures/linear_hash_map_fig1b_speedup.png)")
    w("")
    w(run_table(groups["fig1"] + groups.get("two", []), baseline=True))
    w("")
    w(commands_block(groups["fig1"] + groups.get("two", [])))
    w("")
    fig1 = [r for r in groups["fig1"] if ok(r)]
    if len(fig1) > 1:
        base = value(fig1[0], "build_seconds")
        speed = ", ".join(f"{value(r, 'words_inserted', 'clients')} clients {base / value(r, 'build_seconds'):.2f}"
                          for r in fig1[1:])
        w(f"Speedup over 1 client ({P} ranks): {speed}.")
        w("")
    w("### Figure 2: average insertion time")
    w("")
    w("![average insertion time](figures/linear_hash_map_fig2_avg_insertion_time.png)")
    w("")
    w("The same runs as Figure 1. The average insertion time is elapsed time / insertions; dots mark splits.")
    w("")
    w("### Figure 3: latency histogram of one client")
    w("")
    f3 = groups["fig3"][0]
    w(f"{f3['label']}, {P} ranks; client 0's insertions (rank 0 is also the last server to be activated). "
      "On an oversubscribed machine the tail is the operating system's: a request whose server rank is "
      "descheduled waits for a time slice (the bump near 4 ms), not for LH\\*LH.")
    w("")
    w("![latency histogram](figures/linear_hash_map_fig3_latency_histogram.png)")
    w("")
    w(run_table(groups["fig3"]))
    w("")
    w(commands_block(groups["fig3"]))
    w("")
    w("### Figure 4: insertion time vs value size (3 starting servers)")
    w("")
    w(f"Values of 1, 2, 4 and 8 KB, the first {plan['size_words']:,} words (a subset: at 8 KB the whole list "
      f"would be 3.4 GB of values), {min(3, P)} starting servers growing to {P}.")
    w("")
    w("![value size](figures/linear_hash_map_fig4_value_size.png)")
    w("")
    w(run_table(groups["fig4"]))
    w("")
    w(commands_block(groups["fig4"]))
    w("")
    w("### Figure 5: maximum number of servers")
    w("")
    w(f"Maximum 1, 2 and 4 servers (1 starting server), the first {plan['servers_words']:,} words, with 2 and "
      f"{P} clients. The paper's 8-server curve needs 8 ranks and is not possible here.")
    w("")
    w("![max servers](figures/linear_hash_map_fig5_max_servers.png)")
    w("")
    w(run_table(groups["fig5"]))
    w("")
    w(commands_block(groups["fig5"]))
    w("")
    failed = [r for r in sum(groups.values(), []) if not ok(r)]
    if failed:
        w("### Runs that did not verify")
        w("")
        for r in failed:
            w(f"* `{r['command']}`: exit {r['exit']}")
            w("")
            w("```")
            w(r["stderr_tail"])
            w("```")
        w("")
    w("### Reproducing")
    w("")
    w("```")
    w(f"python3 scripts/word_build_report.py --build-dir {args.build_dir}" + (" --quick" if args.quick else ""))
    w("```")
    w("")
    w("Each command above is one run; add `--trace FILE` for the curve and split points, drop `--json` for the "
      "table only.")
    with open(os.path.join(ROOT, args.doc), "w") as handle:
        handle.write("\n".join(out) + "\n")


def main():
    args = parse_arguments()
    os.chdir(ROOT)
    if not os.path.isfile(args.words):
        print(f"word_build_report: {args.words} not found (Debian: apt-get install wdutch)", file=sys.stderr)
        return 1
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("word_build_report: matplotlib is missing (Debian: apt-get install python3-matplotlib)",
              file=sys.stderr)
        return 1
    runner = Runner(args)
    runner.ensure_built()
    start = time.monotonic()
    groups, plan = experiments(runner, args)
    total = time.monotonic() - start
    figures = make_figures(groups, os.path.join(ROOT, args.figures), args.ranks)
    facts = machine_facts(args)
    write_document(args, groups, plan, figures, facts, total)
    with open(os.path.join(runner.work, "runs.json"), "w") as handle:
        json.dump([{k: v for k, v in r.items() if k != "trace"} for r in runner.runs], handle, indent=1)
    print(f"word_build_report: wrote {args.doc} and {len(figures)} figures in {total / 60:.1f} min "
          f"(raw runs in {runner.work})", file=sys.stderr)
    failed = [r for r in runner.runs if not ok(r)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
