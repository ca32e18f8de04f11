#!/usr/bin/env python3
"""The web front of the flights demo (docs/flights.md).

    front.py --service-port PORT [--port PORT] [--assets DIR] [--refresh SECONDS]

Serves the page (this directory) and its bundled third-party files (--assets,
written by bundle_assets.py) over HTTP on 127.0.0.1, and a WebSocket at /ws.
It relays the page's queries to the flights service (rank 0's control port,
one command per line and one JSON line per answer, flights.hpp) and pushes
fresh answers every --refresh seconds. When the service is not running yet,
is still loading, or restarts, the page is told so and the front reconnects;
the page itself reconnects when the front restarts.

Messages from the page (JSON):
    {"type": "query", "departure": [west, south, east, north] | null,
                      "arrival":   [west, south, east, north] | null,
                      "combine": "and" | "or"}   (optional, default "and")
Messages to the page: hello (the map's extent), airports, result, status, error.
"""
import argparse
import asyncio
import json
import math
import os
import sys
import time

from aiohttp import WSMsgType, web

HERE = os.path.dirname(os.path.abspath(__file__))
# The part of the world the page draws (and the only place boxes may be):
# the United States with Alaska, Hawaii, Puerto Rico and the Virgin Islands.
EXTENT = {"west": -162.0, "east": -62.0, "south": 16.0, "north": 64.0}
MAX_MESSAGE = 4096


class BadQuery(ValueError):
    pass


def parse_box(value, name):
    """None, or a [west, south, east, north] inside EXTENT; raises BadQuery."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 4:
        raise BadQuery(f"{name} must be null or [west, south, east, north], not {json.dumps(value)[:80]}")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value):
        raise BadQuery(f"{name} {json.dumps(value)[:80]} holds something that is not a finite number")
    west, south, east, north = (float(v) for v in value)
    if west > east or south > north:
        raise BadQuery(f"{name} {value}: west must not exceed east, nor south north")
    if west < EXTENT["west"] or east > EXTENT["east"] or south < EXTENT["south"] or north > EXTENT["north"]:
        raise BadQuery(f"{name} {value} lies outside the map (longitude {EXTENT['west']} to {EXTENT['east']}, "
                       f"latitude {EXTENT['south']} to {EXTENT['north']})")
    return [west, south, east, north]


def parse_query(text):
    """The page's message as (departure, arrival, combine); raises BadQuery naming the problem."""
    if len(text) > MAX_MESSAGE:
        raise BadQuery(f"message of {len(text)} characters (at most {MAX_MESSAGE})")
    try:
        message = json.loads(text)
    except ValueError as problem:
        raise BadQuery(f"message is not JSON: {problem}") from None
    if not isinstance(message, dict):
        raise BadQuery("message must be a JSON object")
    if message.get("type") != "query":
        raise BadQuery(f"unknown message type {json.dumps(message.get('type'))[:40]} (known: query)")
    unknown = set(message) - {"type", "departure", "arrival", "combine"}
    if unknown:
        raise BadQuery(f"unknown field(s) {', '.join(sorted(unknown))[:80]} (known: departure, arrival, combine)")
    combine = message.get("combine", "and")
    if combine not in ("and", "or"):
        raise BadQuery(f"combine must be \"and\" or \"or\", not {json.dumps(combine)[:40]}")
    return (parse_box(message.get("departure"), "departure box"), parse_box(message.get("arrival"), "arrival box"),
            combine)


def box_arg(box):
    return "*" if box is None else ",".join(repr(v) for v in box)


class Service:
    """One connection to the service's control port, reconnected when lost."""

    def __init__(self, host, port):
        self.host, self.port = host, port
        self.reader = self.writer = None
        self.lock = asyncio.Lock()
        self.airports = None

    async def command(self, line, timeout=20.0):
        """The service's answer (a dict) to one command; raises ConnectionError when unreachable."""
        async with self.lock:
            for attempt in (0, 1):  # a connection the service closed is noticed on use: retry once
                try:
                    if self.writer is None:
                        self.reader, self.writer = await asyncio.wait_for(
                            asyncio.open_connection(self.host, self.port, limit=1 << 24), 5.0)
                    self.writer.write(line.encode() + b"\n")
                    await self.writer.drain()
                    reply = await asyncio.wait_for(self.reader.readline(), timeout)
                    if not reply:
                        raise ConnectionError("closed")
                    return json.loads(reply)
                except (OSError, ConnectionError, asyncio.TimeoutError, ValueError):
                    self.close()
                    if attempt == 1:
                        raise ConnectionError(f"the flights service is not answering on {self.host}:{self.port}")

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


async def send(ws, message):
    if not ws.closed:
        await ws.send_str(json.dumps(message))


async def page_socket(request):
    app = request.app
    service = app["service"]
    ws = web.WebSocketResponse(heartbeat=20, max_msg_size=64 * 1024)
    await ws.prepare(request)
    await send(ws, {"type": "hello", "extent": EXTENT, "refresh": app["refresh"]})
    state = {"query": None, "wake": asyncio.Event(), "airports_sent": False}

    async def answer_loop():
        while not ws.closed:
            try:
                status = await service.command("status")
                if status.get("state") != "ready":
                    await send(ws, status)
                else:
                    if not state["airports_sent"]:
                        if service.airports is None:
                            service.airports = await service.command("airports")
                        await send(ws, service.airports)
                        state["airports_sent"] = True
                    if state["query"] is not None:
                        departure, arrival, combine = state["query"]
                        began = time.monotonic()
                        result = await service.command(f"query {box_arg(departure)} {box_arg(arrival)} {combine}")
                        if result.get("type") == "result":
                            result["roundtrip_ms"] = round((time.monotonic() - began) * 1000, 3)
                            # Every flight in the air, for the arcs the page draws.
                            everything = await service.command("query * *")
                            result["airborne"] = everything.get("flights", [])
                        await send(ws, result)
                    else:
                        await send(ws, status)
            except ConnectionError as problem:
                service.airports = None  # a restarted service may hold other data
                state["airports_sent"] = False
                await send(ws, {"type": "status", "state": "offline", "message": f"{problem}; retrying"})
            state["wake"].clear()
            try:
                await asyncio.wait_for(state["wake"].wait(), app["refresh"])
            except asyncio.TimeoutError:
                pass

    loop = asyncio.create_task(answer_loop())
    try:
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                await send(ws, {"type": "error", "message": "only text messages (JSON) are understood"})
                continue
            try:
                state["query"] = parse_query(message.data)
                state["wake"].set()
            except BadQuery as problem:
                await send(ws, {"type": "error", "message": str(problem)})
    finally:
        loop.cancel()
    return ws


async def index(request):
    return web.FileResponse(os.path.join(HERE, "index.html"))


def make_app(service_host, service_port, assets, refresh):
    app = web.Application()
    app["service"] = Service(service_host, service_port)
    app["refresh"] = refresh
    app.router.add_get("/", index)
    app.router.add_get("/ws", page_socket)
    app.router.add_static("/static/", HERE)
    vendor = os.path.join(assets, "vendor")
    if not os.path.isdir(vendor):
        sys.exit(f"front: no {vendor} (bundle_assets.py --out {assets} writes it; make flights does)")
    app.router.add_static("/vendor/", vendor)
    return app


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--service-port", type=int, required=True, help="the flights service's control port")
    parser.add_argument("--service-host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080, help="HTTP port on 127.0.0.1 (0: any free one)")
    parser.add_argument("--assets", required=True, help="directory bundle_assets.py wrote")
    parser.add_argument("--refresh", type=float, default=1.0, help="seconds between pushed updates")
    args = parser.parse_args()
    if not 0 < args.refresh <= 60:
        parser.error("--refresh must be in (0, 60]")

    async def serve():
        runner = web.AppRunner(make_app(args.service_host, args.service_port, args.assets, args.refresh))
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", args.port)
        await site.start()
        port = runner.addresses[0][1]
        print(f"front: serving http://127.0.0.1:{port}/ (service at {args.service_host}:{args.service_port})",
              flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    except OSError as problem:
        sys.exit(f"front: cannot serve on 127.0.0.1:{args.port}: {problem}")


if __name__ == "__main__":
    main()
