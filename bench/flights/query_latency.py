#!/usr/bin/env python3
"""Latency of the flights service's two-box queries (docs/flights.md).

    .venv/bin/python bench/flights/query_latency.py --build build [--ranks 1 2 4] [--queries 200]

For each rank count, starts the service (apps/flights) with its clock standing
at 2013-07-04T16:00Z, sends each query kind --queries times over the control
port, and prints the median and 95th percentile of the service's own latency
(match() on rank 0, "latency_ms") and of the round trip through the socket,
beside the same query as a full scan (`query * *`) in the same run.
"""
import argparse
import json
import os
import socket
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "flights", "tests"))
import harness  # noqa: E402

import time  # noqa: E402

KINDS = {
    "everything (* *)": "* *",
    "New York -> California": "-75,40.2,-73,41.4 -123.5,32,-116,39",
    "anywhere -> Florida": "* -88,24,-79,31",
    "Newark -> anywhere": "-74.2,40.65,-74.15,40.72 *",
}


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--mpiexec", default="mpiexec")
    parser.add_argument("--preflags", default="")
    options = parser.parse_args()
    print("| ranks | query | flights | service median ms | service p95 ms | round trip median ms |")
    print("|---|---|---|---|---|---|")
    for ranks in options.ranks:
        args = argparse.Namespace(mpiexec=options.mpiexec, preflags=options.preflags, np=ranks,
                                  service=os.path.join(options.build, "apps", "flights", "flights"),
                                  data=os.path.join(options.build, "flights_data"))
        service = harness.start_service(args, "2013-07-04T16:00Z")
        service.wait_for("ready")
        try:
            with socket.create_connection(("127.0.0.1", service.port)) as s:
                reader = s.makefile("rb")
                for name, line in KINDS.items():
                    inside, around, count = [], [], 0
                    for _ in range(options.queries):
                        began = time.perf_counter()
                        s.sendall(f"query {line}\n".encode())
                        answer = json.loads(reader.readline())
                        around.append((time.perf_counter() - began) * 1000)
                        inside.append(answer["latency_ms"])
                        count = answer["matching"]
                    print(f"| {ranks} | {name} | {count} | {statistics.median(inside):.2f} | "
                          f"{percentile(inside, 0.95):.2f} | {statistics.median(around):.2f} |", flush=True)
        finally:
            service.stop()


if __name__ == "__main__":
    main()
