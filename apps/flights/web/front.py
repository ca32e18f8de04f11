#!/usr/bin/env python3
"""The web front of the flights demo (docs/flights.md).

    front.py --service-port PORT [--service-token-file FILE] [--port PORT] [--assets DIR] [--refresh SECONDS]

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

Safety (issue 48): one command at a time on the service connection, and a
command that is cancelled (its page went away) closes that connection, so an
unread answer can never be taken for the next command's; every answer is
checked to be of the kind its command asks for. Requests whose Host is not the
address served, and WebSockets from another Origin, are refused (DNS
rebinding, cross-site WebSocket hijacking). With --service-token-file the
front authenticates to the service with the token the service wrote there.
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


def finite(v):
    """v as a float if it is a finite number (a 400-digit integer is not), else None."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return None
    try:
        v = float(v)
    except OverflowError:
        return None
    return v if math.isfinite(v) else None


def parse_box(value, name):
    """None, or a [west, south, east, north] inside EXTENT; raises BadQuery."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 4:
        raise BadQuery(f"{name} must be null or [west, south, east, north], not {short(value)}")
    numbers = [finite(v) for v in value]
    if any(v is None for v in numbers):
        raise BadQuery(f"{name} {short(value)} holds something that is not a finite number")
    west, south, east, north = numbers
    if west > east or south > north:
        raise BadQuery(f"{name} {value}: west must not exceed east, nor south north")
    if west < EXTENT["west"] or east > EXTENT["east"] or south < EXTENT["south"] or north > EXTENT["north"]:
        raise BadQuery(f"{name} {value} lies outside the map (longitude {EXTENT['west']} to {EXTENT['east']}, "
                       f"latitude {EXTENT['south']} to {EXTENT['north']})")
    return [west, south, east, north]


def short(value, limit=80):
    """The start of value's JSON text, for an error message (never fails)."""
    try:
        return json.dumps(value)[:limit]
    except (ValueError, TypeError, RecursionError):
        return repr(value)[:limit]


def parse_query(text):
    """The page's message as (departure, arrival, combine); raises BadQuery naming the problem."""
    if len(text) > MAX_MESSAGE:
        raise BadQuery(f"message of {len(text)} characters (at most {MAX_MESSAGE})")
    try:
        message = json.loads(text)
    except RecursionError:
        raise BadQuery("message is nested too deeply") from None
    except ValueError as problem:  # (also an integer of more digits than Python converts)
        raise BadQuery(f"message is not JSON: {str(problem)[:120]}") from None
    if not isinstance(message, dict):
        raise BadQuery("message must be a JSON object")
    if message.get("type") != "query":
        raise BadQuery(f"unknown message type {short(message.get('type'), 40)} (known: query)")
    unknown = set(message) - {"type", "departure", "arrival", "combine"}
    if unknown:
        raise BadQuery(f"unknown field(s) {', '.join(sorted(unknown))[:80]} (known: departure, arrival, combine)")
    combine = message.get("combine", "and")
    if combine not in ("and", "or"):
        raise BadQuery(f"combine must be \"and\" or \"or\", not {short(combine, 40)}")
    return (parse_box(message.get("departure"), "departure box"), parse_box(message.get("arrival"), "arrival box"),
            combine)


def box_arg(box):
    return "*" if box is None else ",".join(repr(v) for v in box)


# The answer kinds each command may get (an error is always possible).
ANSWERS = {"status": {"status"}, "airports": {"airports"}, "query": {"result"}}


class Service:
    """One connection to the service's control port, reconnected when lost.

    Commands go one at a time (a lock); a command cancelled while it waits for
    its answer closes the connection, so the answer it leaves unread is never
    taken for another command's (issue 48, item 1)."""

    def __init__(self, host, port, token_file=None):
        self.host, self.port, self.token_file = host, port, token_file
        self.reader = self.writer = None
        self.lock = asyncio.Lock()
        self.airports = None

    async def _connect(self):
        self.reader, self.writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port, limit=1 << 24), 5.0)
        if self.token_file:
            try:
                with open(self.token_file, encoding="ascii") as f:
                    token = f.read(256).strip()
            except (OSError, ValueError) as problem:
                raise ConnectionError(f"cannot read the service's token file {self.token_file}: {problem}") from None
            self.writer.write(f"auth {token}\n".encode())
            await self.writer.drain()
            reply = json.loads(await asyncio.wait_for(self.reader.readline(), 5.0) or b"null")
            if not isinstance(reply, dict) or reply.get("type") != "auth":
                raise ConnectionError(f"the service refused the token of {self.token_file}: {reply}")

    async def command(self, line, timeout=20.0):
        """The service's answer (a dict) to one command; raises ConnectionError when unreachable."""
        expected = ANSWERS[line.split(" ", 1)[0]] | {"error"}
        async with self.lock:
            for attempt in (0, 1):  # a connection the service closed is noticed on use: retry once
                try:
                    if self.writer is None:
                        await self._connect()
                    self.writer.write(line.encode() + b"\n")
                    await self.writer.drain()
                    reply = await asyncio.wait_for(self.reader.readline(), timeout)
                    if not reply:
                        raise ConnectionError("closed")
                    answer = json.loads(reply)
                    if not isinstance(answer, dict) or answer.get("type") not in expected:
                        raise ConnectionError(f"an answer of type {str(answer.get('type'))[:20]} to {line[:20]!r}")
                    return answer
                except (OSError, ConnectionError, asyncio.TimeoutError, ValueError, AttributeError):
                    self.close()
                    if attempt == 1:
                        raise ConnectionError(f"the flights service is not answering on {self.host}:{self.port}")
                except BaseException:  # cancelled (the page went away): its answer must not be left unread
                    self.close()
                    raise

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
            except Exception as problem:  # anything else the checks missed: still an answer, not a dropped page
                await send(ws, {"type": "error", "message": f"message not understood ({type(problem).__name__})"})
    finally:
        loop.cancel()
    return ws


async def index(request):
    return web.FileResponse(os.path.join(HERE, "index.html"))


LOCAL_NAMES = ("127.0.0.1", "localhost")


@web.middleware
async def same_origin(request, handler):
    """Only requests for the address served (Host: DNS rebinding) and, when a
    browser says where a request comes from, only from this page (Origin:
    cross-site WebSocket hijacking)."""
    port = request.app["address"]["port"]
    allowed_hosts = {f"{name}:{port}" for name in LOCAL_NAMES}
    if port == 80:
        allowed_hosts |= set(LOCAL_NAMES)
    host = request.headers.get("Host", "")
    if host.lower() not in allowed_hosts:
        return web.Response(status=403, text=f"front: Host {host[:80]!r} is not this front's address "
                                             f"(127.0.0.1:{port})\n")
    origin = request.headers.get("Origin")
    if origin is not None and origin.lower() not in {"http://" + h for h in allowed_hosts}:
        return web.Response(status=403, text=f"front: Origin {origin[:80]!r} is not this front's page "
                                             f"(http://127.0.0.1:{port})\n")
    return await handler(request)


def make_app(service_host, service_port, assets, refresh, token_file=None):
    app = web.Application(middlewares=[same_origin])
    app["address"] = {"port": None}  # set once the socket is bound
    app["service"] = Service(service_host, service_port, token_file)
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
    parser.add_argument("--service-token-file", help="the service's --token-file (sent as 'auth TOKEN' first)")
    parser.add_argument("--port", type=int, default=8080, help="HTTP port on 127.0.0.1 (0: any free one)")
    parser.add_argument("--assets", required=True, help="directory bundle_assets.py wrote")
    parser.add_argument("--refresh", type=float, default=1.0, help="seconds between pushed updates")
    args = parser.parse_args()
    if not 0 < args.refresh <= 60:
        parser.error("--refresh must be in (0, 60]")

    async def serve():
        app = make_app(args.service_host, args.service_port, args.assets, args.refresh, args.service_token_file)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", args.port)
        await site.start()
        port = runner.addresses[0][1]
        app["address"]["port"] = port
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
