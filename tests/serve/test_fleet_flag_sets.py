"""Flag-set URL sources in a fleet: one replica polls each URL for the whole fleet (the holder of its
lease), stores each accepted flag file with its ETag in Redis under a digest of the URL and
announces it; the others serve it from there. A change reaches every replica; the holder's death
hands the polling to a survivor once its lease runs out; a broken flag file, from the URL or
planted in Redis, never replaces the last good one; a replica joining serves what Redis holds;
while the URL does not answer every replica answers STALE; while Redis does not answer every
replica polls the URL itself.

Real parts only: Debian's `redis-server`, a scripted HTTP flag server and three Flagpole replicas,
all on loopback. Each replica sends its own `X-Replica` header with its fetches, so the flag server
can tell who polls. Every wait is for an event or a count, with a generous deadline.
"""

from __future__ import annotations

import hashlib
import json
import signal

from fleet_support import LEASE_SECONDS, RedisServer, redis  # noqa: F401 (`redis`: a fixture)
from serve_harness import wait_until
from test_flag_files import BASE, FlagServer, ofrep

WAIT = 60  # seconds: the deadline of every wait (a hang, not a slow machine)
NAMES = ["a", "b", "c"]


def flag_key(url: str) -> str:
    return f"flagpole:flags:{hashlib.sha256(url.encode()).hexdigest()[:32]}:document"


def with_color(variant: str, body: dict = BASE) -> dict:
    changed = json.loads(json.dumps(body))
    changed["flags"]["color"]["variants"]["green"] = "#0a0"
    changed["flags"]["color"]["defaultVariant"] = variant
    return changed


def color(fp) -> str | None:
    return ofrep(fp, "color").json().get("value")


def requesters(server: FlagServer, since: int) -> set[str]:
    with server.lock:
        return {r.get("x-replica", "?") for r in server.requests[since:]}


def polled_by_one(server: FlagServer, polls: int = 4) -> str:
    """Waits for `polls` more fetches of the URL (a few poll intervals) and returns the one replica
    that made them all."""
    since = len(server.requests)
    wait_until(lambda: len(server.requests) >= since + polls, WAIT, "the flag URL stopped being polled")
    who = requesters(server, since)
    assert len(who) == 1, f"the URL was polled by {sorted(who)}, not by one replica"
    return who.pop()


def test_one_replica_polls_each_flag_url_for_the_fleet(redis, flagpole, tmp_path):
    server = FlagServer(BASE)
    try:
        run_fleet(redis, flagpole, tmp_path, server)
    finally:
        server.stop()


def run_fleet(redis: RedisServer, flagpole, tmp_path, server: FlagServer) -> None:
    def config(name: str) -> dict:
        return {"flags": [{"uri": server.url, "interval": 1, "headers": {"X-Replica": name}}],
                "api_poll_frequency_seconds": 1,
                "health_check": {"environment_update_grace_period_seconds": LEASE_SECONDS},
                "flagpole": {"fleet": {"redis_url": redis.url, "lease_seconds": LEASE_SECONDS}}}

    replicas = {name: flagpole(config(name), workdir=tmp_path / name) for name in NAMES}
    for fp in replicas.values():
        fp.wait_ready(WAIT)

    # 1. One replica polls; every replica serves the file's values, stored under the URL's digest.
    holder = polled_by_one(server)
    assert holder in NAMES
    for name, fp in replicas.items():
        assert color(fp) == "#00c", name
        assert ofrep(fp, "banner").json()["value"] is True, name
    key = flag_key(server.url)
    assert redis.get_bytes(key, "body") == server.body
    assert redis.cli("HGET", key, "etag").startswith('"')
    assert "flags.json" not in redis.cli("KEYS", "flagpole:*")

    # 2. A change at the URL reaches every replica.
    server.set(body=json.dumps(with_color("red")).encode())
    for name, fp in replicas.items():
        wait_until(lambda fp=fp: color(fp) == "#c00", WAIT, f"replica {name} never served the change")

    # 3. The holder dies: a survivor takes the polling over once its lease runs out, and a further
    # change reaches both survivors.
    replicas[holder].send_signal(signal.SIGKILL)
    replicas[holder].proc.wait(timeout=10)
    survivors = {n: fp for n, fp in replicas.items() if n != holder}
    since = len(server.requests)
    wait_until(lambda: requesters(server, since) & set(survivors), WAIT,
               "no survivor took the polling of the URL over")
    server.set(body=json.dumps(with_color("green")).encode())
    for name, fp in survivors.items():
        wait_until(lambda fp=fp: color(fp) == "#0a0", WAIT, f"survivor {name} never served the change")
    new_holder = polled_by_one(server)
    assert new_holder in survivors

    # 4. A broken flag file at the URL: refused by the holder, never stored, never served.
    refusals = replicas[new_holder].stderr_text().count("$.flags.color.variants")
    server.set(body=b'{"flags": {"color": {"state": "ENABLED"}}}')
    wait_until(lambda: replicas[new_holder].stderr_text().count("$.flags.color.variants") > refusals, WAIT,
               "the holder never refused the broken flag file")
    polled_by_one(server, polls=2)
    assert json.loads(redis.get_bytes(key, "body"))["flags"]["color"]["defaultVariant"] == "green"
    for name, fp in survivors.items():
        assert color(fp) == "#0a0", name

    # A broken flag file planted in Redis and announced: the other survivor refuses it as a polled
    # answer is refused (logged with its JSON path) and keeps the last good flags; the holder
    # writes its own back over it.
    (other,) = [fp for n, fp in survivors.items() if n != new_holder]
    before = other.stderr_text().count("$.flags.color.variants")
    redis.cli("HSET", key, "body", '{"flags": {"color": {"state": "ENABLED"}}}', "revision", "planted",
              "updated_at_ms", "99999999999999")
    redis.cli("PUBLISH", "flagpole:documents", key.split(":")[2])
    wait_until(lambda: other.stderr_text().count("$.flags.color.variants") > before, WAIT,
               "the replica never refused the broken flag file Redis held")
    assert color(other) == "#0a0"
    wait_until(lambda: redis.cli("HGET", key, "revision") != "planted", WAIT,
               "the holder never repaired the flag file Redis held")
    for name, fp in survivors.items():
        assert color(fp) == "#0a0", name

    server.set(body=json.dumps(with_color("green")).encode())

    # 5. A replica joining now serves what Redis holds without asking the URL (the lease is held).
    late = flagpole(config("d"), workdir=tmp_path / "d")
    wait_until(lambda: late.get("/proxy/health/serving").status == 200, WAIT, "the new replica never served")
    assert color(late) == "#0a0"
    assert "d" not in requesters(server, 0)
    everyone = [*survivors.values(), late]

    # 6. The URL stops answering: every replica, holder or not, answers STALE with the last good
    # value, and fresh again once the URL answers.
    server.set(status=500)
    for fp in everyone:
        wait_until(lambda fp=fp: ofrep(fp, "color").json().get("reason") == "STALE", WAIT,
                   f"flagpole on port {fp.port} never answered STALE")
        assert color(fp) == "#0a0"
    server.set(status=200)
    for fp in everyone:
        wait_until(lambda fp=fp: ofrep(fp, "color").json().get("reason") != "STALE", WAIT,
                   f"flagpole on port {fp.port} stayed STALE")

    # 7. Redis goes away: every replica polls the URL itself, and a change still reaches all.
    redis.stop()
    since = len(server.requests)
    wait_until(lambda: requesters(server, since) >= {*survivors, "d"}, WAIT,
               "the replicas never polled the URL themselves while Redis was down")
    server.set(body=json.dumps(with_color("red", with_color("green"))).encode())
    for fp in everyone:
        wait_until(lambda fp=fp: color(fp) == "#c00", WAIT,
                   f"flagpole on port {fp.port} never served the change while Redis was down")
