"""Differential test of `mpidict serve` against redis-server (apps/serve).

The same command sequence goes to a real redis-server and to an mpidict serve
job of --np ranks, command i to rank i mod np (any rank accepts any key), through
redis-py with its reply conversions off (the raw RESP values, errors with their
words), then a few through redis-py's own API and through redis-cli.  Every
reply must be equal; TTLs may differ by the time between the two calls.
Exits 0 when all match; prints each difference otherwise."""

import argparse
import subprocess
import sys
import time

import redis

import harness


# (command, how to compare): "exact", "ttl" (seconds, +-1), "pttl" (ms, +-1500),
# "skip" (run on both, replies not compared: INFO, COMMAND COUNT).
SEQUENCE = [
    "FLUSHALL", "PING", "PING hello", "PING a b", "ECHO hi", "ECHO", "SELECT 0", "SELECT 99", "SELECT x",
    "SET k1 v1", "GET k1", "GET missing", "SET k1 v2 NX", "SET k1 v2 XX", "GET k1", "SET k2 v NX", "SET k3 v XX",
    "GET k3", "SET k1 v3 GET", "SET nokey v GET", "SET k1 x NX XX", "SET k1 x EX 0", "SET k1 x EX abc",
    "SET k1 x PX -5", "SET k1 x EX", "SET k1 x BOGUS", "SET k1 x EX 10 PX 10", "SET k1 x KEEPTTL EX 5", "GET k1",
    "SET e1 v EX 100", ("TTL e1", "ttl"), ("PTTL e1", "pttl"), "PERSIST e1", "TTL e1", "PERSIST e1", "TTL missing",
    "EXPIRE e1 50", ("TTL e1", "ttl"), "EXPIRE missing 5", "EXPIRE e1 abc", "EXPIRE e1 10 NX", "EXPIRE e1 10 XX",
    "EXPIRE e1 5 GT", "EXPIRE e1 100 GT", ("TTL e1", "ttl"), "EXPIRE e1 10 NX XX", "EXPIRE e1 10 GT LT",
    "EXPIRE e1 10 FOO", "SET e1 v KEEPTTL", ("TTL e1", "ttl"), "SET e1 v", "TTL e1",
    "SET e2 v PX 3000", "EXISTS e2", "SLEEP 3.3", "GET e2", "EXISTS e2", "TTL e2",
    "SET e3 v", "EXPIRE e3 -1", "EXISTS e3", "SET e4 v", "PEXPIRE e4 200", "SLEEP 0.4", "GET e4",
    "INCR c", "INCR c", "INCRBY c 10", "DECR c", "DECRBY c 5", "GET c", "INCRBY c abc", "INCRBY c 1.5",
    "SET big 9223372036854775807", "INCR big", "GET big", "SET small -9223372036854775808", "DECR small",
    "INCR k1", "SET sp \" 1\"", "INCR sp", "SET lz 01", "INCR lz", "SET neg -5", "INCRBY neg -5", "GET neg",
    "DECRBY c -9223372036854775808", "INCR", "INCRBY c",
    "MSET a 1 b 2 c 3", "MGET a b c nope", "MSET a", "MSET a 1 b", "DEL a b nope", "EXISTS a b c c", "MGET k1 h c",
    "APPEND ap hello", "APPEND ap \" world\"", "GET ap", "STRLEN ap", "STRLEN nope",
    "HSET h f1 v1 f2 v2", "HSET h f1 x", "HGET h f1", "HGET h nope", "HMGET h f1 nope f2", ("HGETALL h", "pairs"),
    "HDEL h f1 nope", ("HGETALL h", "pairs"), "HMSET h a 1 b 2", "HSET h f", "HGET k1 f", "GET h", "HLEN h",
    "HEXISTS h a", "HEXISTS h zz", "HDEL h f2 a b", "EXISTS h", ("HGETALL nohash", "pairs"), "HMGET nohash a b",
    "HSET k1 f v", "INCR h2", "HSET h2 f v",
    "ZADD z 1 a 2 b 3 c 1.5 d", "ZADD z NX 5 a 6 e", "ZADD z XX CH 10 a 7 f", "ZADD z INCR 2 b",
    "ZADD z INCR 1 a 2 b", "ZADD z NX XX 1 a", "ZADD z GT LT 1 a", "ZADD z NX GT 1 a", "ZADD z abc a", "ZADD z 1",
    "ZADD z GT 0 a", "ZADD z GT CH 20 a", "ZADD z LT CH 30 a", "ZADD z XX INCR 1 nope",
    "ZSCORE z a", "ZSCORE z nope", "ZSCORE nozset a", "ZCARD z", "ZCARD nope", "ZREM z c nope", "ZREM nozset a",
    "ZRANGE z 0 -1", "ZRANGE z 0 -1 WITHSCORES", "ZRANGE z 1 2", "ZRANGE z -2 -1", "ZRANGE z 0 -1 REV",
    "ZRANGE z 5 1", "ZRANGE z 0 100", "ZRANGE z -100 1", "ZRANGE z (1 10 BYSCORE", "ZRANGE z 10 (1 BYSCORE REV",
    "ZRANGE z -inf +inf BYSCORE LIMIT 1 2", "ZRANGE z -inf +inf BYSCORE LIMIT 1 -1 WITHSCORES",
    "ZRANGE z -inf +inf BYSCORE LIMIT -1 2", "ZRANGE z 0 1 LIMIT 0 1", "ZRANGE z a b BYSCORE", "ZRANGE z 0 1 FOO",
    "ZRANGE z x 1", "ZRANGEBYSCORE z 1 4 WITHSCORES", "ZRANGEBYSCORE z -inf +inf LIMIT 0 2",
    "ZRANGEBYSCORE z (1.5 +inf", "ZRANGEBYSCORE z (1.5 (2", "ZRANGEBYSCORE z x y", "ZRANGEBYSCORE z 1 2 LIMIT 0",
    "ZREVRANGEBYSCORE z +inf -inf", "ZREVRANGEBYSCORE z 5 (1 WITHSCORES LIMIT 1 1", "ZREVRANGE z 0 1 WITHSCORES",
    "ZADD lex 0 a 0 b 0 c 0 d 0 e 0 ee 0 f", "ZRANGEBYLEX lex [b (d", "ZRANGEBYLEX lex - +",
    "ZRANGEBYLEX lex - + LIMIT 1 2", "ZRANGEBYLEX lex b d", "ZRANGEBYLEX lex (e +", "ZRANGEBYLEX lex [e [e",
    "ZRANGE lex [a [c BYLEX", "ZRANGE lex [c [a BYLEX REV", "ZRANGE lex - + BYLEX WITHSCORES",
    "ZREVRANGEBYLEX lex + - LIMIT 0 3", "ZRANGEBYLEX lex - + WITHSCORES",
    "ZADD z 1.1 g", "ZSCORE z g", "ZADD z inf h", "ZSCORE z h", "ZADD z -inf i", "ZADD z 0.1 j", "ZADD z 1e300 k",
    "ZADD z -0.5 l", "ZRANGE z 0 -1 WITHSCORES", "ZADD z nan m", "ZADD z INCR inf h", "ZADD z INCR -inf h",
    "ZSCORE z h", "GET z", "ZADD k1 1 a", "ZRANGE k1 0 1", "ZSCORE k1 a",
    # What YCSB 0.17.0's Redis binding sends through Jedis 2.9.0 (bench/ycsb_redis): Java's
    # Double.toString scores (E notation, Infinity) on one index set, records as hashes.
    "ZADD _indices -1.234567891E9 user1 3.0E8 user2 0.0 user3", "ZADD _indices 1.0E-5 user4",
    "ZRANGEBYSCORE _indices -1.234567891E9 Infinity LIMIT 0 2", "ZRANGEBYSCORE _indices 0.0 Infinity LIMIT 0 100",
    "ZRANGEBYSCORE _indices -Infinity 2.5E8 WITHSCORES", "HMSET user1 field0 v0 field1 v1", "HMGET user1 field1 field0 field9",
    ("HGETALL user1", "pairs"), "DEL user1", "ZREM _indices user1", "ZREM _indices user1", "DEL user1",
    "TYPE k1", "TYPE h", "TYPE z", "TYPE nope", "DBSIZE",
    "FOO", "FOO bar baz", "foo 'bar'", "GET", "GET a b", "SET a", "HGET h", "ZADD z", "DEL", "EXISTS",
    "CLIENT SETNAME myname", ("CLIENT GETNAME", "skip"), "CLIENT SETNAME \"bad name\"", "CLIENT FOO", "CLIENT",
    "AUTH secret", "AUTH a b c", ("COMMAND COUNT", "skip"), ("INFO", "skip"), "DBSIZE",
    "FLUSHALL", "DBSIZE", "GET k1", "ZCARD z", "HGETALL h", "SET k1 after", "GET k1", "FLUSHALL BOGUS",
    "FLUSHALL ASYNC", "DBSIZE",
]


def split(command):
    import shlex
    return shlex.split(command)


def call(client, words):
    try:
        return ("ok", client.execute_command(*words))
    except redis.exceptions.ResponseError as e:
        return ("error", str(e))
    except redis.exceptions.RedisError as e:
        return ("failure", type(e).__name__ + ": " + str(e))


def normalise(reply, how):
    kind, value = reply
    if kind != "ok":
        return reply
    if how == "pairs" and isinstance(value, list):
        return (kind, sorted(zip(value[0::2], value[1::2])))
    return reply


def close_enough(a, b, how):
    if how == "skip":
        return a[0] == b[0] == "ok"
    if how in ("ttl", "pttl") and a[0] == b[0] == "ok":
        return abs(int(a[1]) - int(b[1])) <= (1 if how == "ttl" else 1500)
    return normalise(a, how) == normalise(b, how)


def raw_client(port, protocol=2):
    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=30, protocol=protocol)
    client.response_callbacks.clear()  # compare what the servers sent, not redis-py's conversions
    return client


def main():
    parser = argparse.ArgumentParser()
    harness.common_arguments(parser)
    args = parser.parse_args()
    harness.exit_on_sigterm()
    differences = []
    with harness.RedisServer(args.redis_server) as reference, \
            harness.MpidictServe(args.mpiexec, args.preflags, args.np, args.serve) as ours:
        checked = 0
        for protocol, index, entry in [(p, i, e) for p in (2, 3) for i, e in enumerate(SEQUENCE)]:
            if index == 0:  # RESP2, then the same again after HELLO 3 (RESP3)
                theirs_client = raw_client(reference.port, protocol)
                our_clients = [raw_client(port, protocol) for port in ours.ports]
            command, how = (entry, "exact") if isinstance(entry, str) else entry
            words = split(command)
            if words[0] == "SLEEP":
                time.sleep(float(words[1]))
                continue
            expected = call(theirs_client, words)
            got = call(our_clients[index % len(our_clients)], words)
            checked += 1
            if not close_enough(expected, got, how):
                differences.append(f"{command!r} (RESP{protocol}, rank {index % len(our_clients)}): "
                                   f"redis-server {expected!r}, "
                                   f"mpidict serve {got!r}")

        # redis-py's own API (its conversions) on both.
        def api_steps(client):
            out = []
            client.flushall()
            out.append(client.set("user:1", "alice", ex=100))
            out.append(client.get("user:1"))
            out.append(client.set("user:1", "bob", nx=True))
            out.append(client.incr("visits", 5))
            out.append(client.mset({"m1": "1", "m2": "2"}))
            out.append(client.mget(["m1", "m2", "m3"]))
            out.append(client.hset("hh", mapping={"a": "1", "b": "2"}))
            out.append(sorted(client.hgetall("hh").items()))
            out.append(client.zadd("board", {"x": 1.5, "y": 2.5, "z": 3.5}))
            out.append(client.zrange("board", 0, -1, withscores=True))
            out.append(client.zrangebyscore("board", 2, "+inf", withscores=True))
            out.append(client.zrange("board", 0, 1, desc=True))
            out.append(client.zscore("board", "y"))
            for i in range(300):
                client.set(f"scan:{i}", i)
            out.append(sorted(client.scan_iter(match="scan:1*", count=7)))
            out.append(len(list(client.scan_iter(count=50))))
            out.append(client.dbsize())
            out.append(0 < client.ttl("user:1") <= 100)  # the steps above may take seconds on a loaded machine
            out.append(client.persist("user:1"))
            out.append(client.delete("m1", "m2", "m3"))
            out.append(client.exists("m1", "hh"))
            out.append("redis_version" in client.info())
            out.append(client.ping())
            out.append(client.echo("x"))
            pipe = client.pipeline(transaction=False)
            for i in range(50):
                pipe.incr("piped")
                pipe.get("piped")
            out.append(pipe.execute()[-4:])
            return out

        for protocol in (2, 3):  # 3: redis-py 8's default
            theirs_api = api_steps(redis.Redis(host="127.0.0.1", port=reference.port, decode_responses=True,
                                               protocol=protocol))
            for rank, port in enumerate(ours.ports):
                mine = api_steps(redis.Redis(host="127.0.0.1", port=port, decode_responses=True, protocol=protocol))
                for step, (a, b) in enumerate(zip(theirs_api, mine)):
                    if a != b:
                        differences.append(f"redis-py API step {step} (RESP{protocol}, rank {rank}): "
                                           f"redis-server {a!r}, mpidict {b!r}")

        # redis-cli: one command per invocation, and a script on standard input.
        cli_commands = [["set", "cli", "1"], ["incr", "cli"], ["get", "cli"], ["get", "nope"], ["foo", "x"],
                        ["zadd", "cz", "1", "a", "2", "b"], ["zrange", "cz", "0", "-1", "withscores"],
                        ["hset", "ch", "f", "v"], ["hget", "ch", "f"], ["ping"], ["dbsize"], ["type", "cz"],
                        ["get", "cz"], ["del", "cli", "cz", "ch"], ["exists", "cli"]]
        redis.Redis(host="127.0.0.1", port=reference.port, protocol=2).flushall()
        redis.Redis(host="127.0.0.1", port=ours.ports[0], protocol=2).flushall()
        for index, words in enumerate(cli_commands):
            port = ours.ports[index % len(ours.ports)]
            a = subprocess.run([args.redis_cli, "-p", str(reference.port)] + words, capture_output=True,
                               text=True, timeout=30)
            b = subprocess.run([args.redis_cli, "-p", str(port)] + words, capture_output=True, text=True, timeout=30)
            if (a.stdout, a.returncode) != (b.stdout, b.returncode):
                differences.append(f"redis-cli {' '.join(words)}: redis-server {a.stdout!r}, mpidict {b.stdout!r}")
        script = "set s1 hello\nget s1\nappend s1 x\nget s1\nmget s1 nope\nbogus\nincr s1\nquit\n"
        a = subprocess.run([args.redis_cli, "-p", str(reference.port)], input=script, capture_output=True,
                           text=True, timeout=30)
        b = subprocess.run([args.redis_cli, "-p", str(ours.ports[-1])], input=script, capture_output=True,
                           text=True, timeout=30)
        if a.stdout != b.stdout:
            differences.append(f"redis-cli script: redis-server {a.stdout!r}, mpidict {b.stdout!r}")

        stopped = ours.stop()
        if not stopped:
            differences.append("SHUTDOWN did not end the job cleanly:\n" + ours.text())
    for line in differences:
        print("DIFF " + line)
    print(f"{checked} raw commands (RESP2 and RESP3), redis-py API steps and {len(cli_commands) + 1} redis-cli runs at "
          f"{args.np} rank(s): {len(differences)} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
