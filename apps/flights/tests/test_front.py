#!/usr/bin/env python3
"""The flights service and its web front, end to end without a browser:

- a page that connects before the service runs is told the service is offline,
  and gets answers once the service is up (and its data loaded);
- answers over the WebSocket equal a plain filter of the flight files;
- malformed messages (not JSON, wrong types, boxes outside the map, binary,
  oversized) and malformed control-port lines get clear errors, and both
  processes keep answering;
- when the service restarts (here with another start time), the front
  reconnects and the page gets the new service's answers.
"""
import argparse
import asyncio
import json
import socket
import sys

import aiohttp

import harness

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print(f"FAIL: {what}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def next_of(ws, kinds, timeout=60, where=None):
    """The next message whose type is in kinds (and, for results, that satisfies where)."""
    async def wait():
        while True:
            message = await ws.receive()
            if message.type != aiohttp.WSMsgType.TEXT:
                raise RuntimeError(f"WebSocket closed: {message}")
            m = json.loads(message.data)
            if m["type"] in kinds and (where is None or where(m)):
                return m
    return await asyncio.wait_for(wait(), timeout)


def control_lines(port, lines):
    answers = []
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        reader = s.makefile("rb")
        for line in lines:
            s.sendall(line + b"\n")
            answers.append(json.loads(reader.readline()))
    return answers


async def run(args):
    data = harness.load_data(args.data)
    service_port = free_port()
    front = harness.start_front(args.python, service_port, args.assets)
    service = None
    try:
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(f"http://127.0.0.1:{front.port}/ws") as ws:
                hello = await next_of(ws, {"hello"})
                check(hello["extent"]["west"] < -150, "hello names the map's extent")
                departure, arrival = [-74.6, 40.4, -73.5, 41.0], [-125.0, 30.0, -100.0, 50.0]
                await ws.send_str(json.dumps({"type": "query", "departure": departure, "arrival": arrival}))
                offline = await next_of(ws, {"status"})
                check(offline["state"] == "offline" and "not answering" in offline["message"],
                      f"before the service runs the page hears it is offline: {offline}")

                # The service comes up; the page gets its airports, then answers.
                start = "2013-07-04T16:00Z"
                service = harness.start_service(args, start, port=service_port)
                airports = await next_of(ws, {"airports"})
                check(len(airports["airports"]) == len(data[0]), "every airport reaches the page")
                result = await next_of(ws, {"result"})
                now = 1372953600
                check(result["time"] == now, f"the clock stands at the start: {result['time_text']}")
                got = sorted(f[0] for f in result["flights"])
                want = harness.expected_ids(data, now, departure, arrival)
                check(got == want and len(want) > 5, f"New York to the west: {len(got)} flights, expected {len(want)}")
                check(result["in_air"] == len(harness.expected_ids(data, now, None, None)), "flights in the air")
                check(sorted(f[0] for f in result["airborne"]) == harness.expected_ids(data, now, None, None),
                      "the arcs are every flight in the air")

                # Either box (the seed's front end), then back to both.
                await ws.send_str(json.dumps({"type": "query", "departure": departure, "arrival": arrival,
                                              "combine": "or"}))
                result = await next_of(ws, {"result"}, where=lambda m: m["combine"] == "or")
                want_or = harness.expected_ids(data, now, departure, arrival, either=True)
                check(sorted(f[0] for f in result["flights"]) == want_or and len(want_or) > len(want),
                      f"departing New York or landing in the west: {result['matching']}, expected {len(want_or)}")
                await ws.send_str(json.dumps({"type": "query", "departure": departure, "arrival": arrival}))
                await next_of(ws, {"result"}, where=lambda m: m["combine"] == "and")

                # Bad messages: one clear error each, nothing else changes.
                bad = [
                    ("{not json", "not JSON"),
                    ("[1, 2]", "JSON object"),
                    (json.dumps({"type": "subscribe"}), "unknown message type"),
                    (json.dumps({"type": "query", "departure": None, "arrival": None, "colour": 1}), "unknown field"),
                    (json.dumps({"type": "query", "departure": [1, 2, 3], "arrival": None}), "departure box must be"),
                    (json.dumps({"type": "query", "departure": None, "arrival": ["a", 1, 2, 3]}), "not a finite number"),
                    ('{"type": "query", "departure": [NaN, 1, 2, 3], "arrival": null}', "not a finite number"),
                    (json.dumps({"type": "query", "departure": [-70, 40, -75, 41], "arrival": None}), "west must not"),
                    (json.dumps({"type": "query", "departure": [10, 40, 20, 41], "arrival": None}), "outside the map"),
                    (json.dumps({"type": "query", "departure": None, "arrival": [-100, -80, -90, 30]}), "outside the map"),
                    ("x" * 5000, "at most 4096"),
                    (json.dumps({"type": "query", "departure": None, "arrival": None, "combine": "xor"}), "combine must"),
                ]
                for text, words in bad:
                    await ws.send_str(text)
                    error = await next_of(ws, {"error"})
                    check(words in error["message"], f"{text[:40]!r}: {error['message']!r} names {words!r}")
                await ws.send_bytes(b"\x00\x01")
                error = await next_of(ws, {"error"})
                check("text" in error["message"], f"binary message: {error['message']}")
                # The last good query still stands and is answered.
                result = await next_of(ws, {"result"})
                check(sorted(f[0] for f in result["flights"]) == want, "the good query survives bad messages")

                # Bad control-port lines, straight to rank 0.
                answers = control_lines(service.port, [b"bogus", b"query", b"query 1,2,3,4", b"query a,b,c,d *",
                                                       b"query 0,0,1,1 0,0,1", b"status extra",
                                                       b"query -74,40,-73,41 -100,-95,-90,30", b"\xff\xfe",
                                                       b"query * * nand", b"query * * or extra", b"query * *"])
                expect = ["unknown command", "two boxes", "two boxes", "is not a number", "not four numbers",
                          "takes no arguments", "latitude -95 is outside", "unknown command", "how boxes combine",
                          "two boxes", None]
                for answer, words in zip(answers, expect):
                    if words is None:
                        check(answer["type"] == "result", f"a good line after bad ones: {answer}")
                    else:
                        check(answer["type"] == "error" and words in answer["message"], f"{answer} names {words!r}")
                with socket.create_connection(("127.0.0.1", service.port), timeout=30) as s:
                    s.sendall(b"y" * 10000)
                    reply = json.loads(s.makefile("rb").readline())
                    check("longer than 4096" in reply["message"], f"an endless line: {reply}")

                # The service restarts (another start time); the front reconnects.
                check(service.stop() == 0, "the service stops cleanly on SIGTERM")
                check("0 refused" in "".join(service.output), "no insert was refused")
                offline = await next_of(ws, {"status"}, where=lambda m: True)
                check(offline["state"] == "offline", f"the page hears the service went away: {offline}")
                service = harness.start_service(args, "2013-01-01T12:00Z", port=service_port)
                later = 1357041600
                result = await next_of(ws, {"result"}, where=lambda m: m["time"] == later)
                got = sorted(f[0] for f in result["flights"])
                want = harness.expected_ids(data, later, departure, arrival)
                check(got == want, f"after the restart: {len(got)} flights, expected {len(want)}")
    finally:
        front.stop()
        if service is not None:
            service.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    harness.add_arguments(parser)
    args = parser.parse_args()
    asyncio.run(run(args))
    if failures:
        print(f"test_front: {len(failures)} failed checks", file=sys.stderr)
        sys.exit(1)
    print("test_front: all checks passed")


if __name__ == "__main__":
    main()
