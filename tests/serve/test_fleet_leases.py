"""A fleet's leases and its hold on Redis under trouble: a lease key overwritten with what no replica
wrote (garbage, a value without a time to live, another type) is taken over and the environment
polled again within a lease; a member list of another type is replaced; a Redis that cannot be
reached or refuses the password at start is logged once at WARN (redacted URL and reason) and the
attempts to connect back off; leases spread as replicas join, also with fewer environments than
replicas, and stay put once spread; every fleet series is on /metrics from the start; the banner
says which documents came from Redis.

Redis is Debian's `redis-server` on a free loopback port (see fleet_support.py). Leases last 3 s
and environments are polled every second. Every wait is for an event or a count with a generous
deadline; the only fixed stretches are the windows over which attempts to connect are counted.
"""

from __future__ import annotations

import re
import time

from documents import make_document
from fleet_support import (  # noqa: F401 (`redis`: a fixture)
    LEASE_SECONDS, RedisServer, environment_id, fleet_config, lease_key, leases, need_redis, redis,
    wait_leases_settled,
)
from metrics_support import scrape, status_json
from serve_harness import Env, free_port, wait_until

WAIT = 60  # seconds: the deadline of every wait (a hang, not a slow machine)
ENVS = [Env(f"lease_client_{i}", f"ser.lease_server_{i}") for i in range(5)]
MEMBERS = "flagpole:replicas"


def serve_revision(upstream, envs, rev: int = 1) -> None:
    for env in envs:
        upstream.set_document(env.server_key, make_document(env.client_key, revision=rev, name="Lease Env"))


def start(flagpole, tmp_path, config: dict, name: str):
    fp = flagpole(config, workdir=tmp_path / name, wait=True)
    fp.wait_ready(WAIT)
    return fp


def polls(upstream, env: Env) -> int:
    return upstream.count(env.server_key)


def readable_lease(redis: RedisServer, env: Env) -> bool:
    """The lease holds what a replica writes: `<replica>:<token>` with a time to live of at most a
    lease."""
    key = lease_key(env.client_key)
    value, ttl = redis.cli("GET", key), int(redis.cli("PTTL", key) or "-2")
    return bool(re.fullmatch(r"[0-9a-f]+:\d+", value)) and 0 < ttl <= LEASE_SECONDS * 1000


def test_a_lease_key_holding_what_no_replica_wrote_is_taken_over_within_a_lease(redis, upstream, flagpole,
                                                                                 tmp_path):
    """Garbage without a time to live, another replica's name without one (and a fencing counter
    that is not one), another type, and a lease of a day: each environment is polled again within
    a lease and a poll interval (counted against an untouched environment's polls); the member
    list of another type is replaced."""
    serve_revision(upstream, ENVS)
    config = fleet_config(upstream, redis, ENVS)
    replicas = [start(flagpole, tmp_path, config, f"replica-{i}") for i in range(2)]
    wait_leases_settled(replicas, ENVS)
    garbage, ghost, hashed, day, control = ENVS
    redis.cli("SET", lease_key(garbage.client_key), "garbage-no-colon")
    redis.cli("SET", lease_key(ghost.client_key), "ghost:7")
    # Its fencing counter too: the next token starts above any it gave.
    redis.cli("SET", f"flagpole:env:{environment_id(ghost.client_key)}:fence", "not-a-counter")
    redis.cli("DEL", lease_key(hashed.client_key))
    redis.cli("HSET", lease_key(hashed.client_key), "not", "a lease")
    redis.cli("SET", lease_key(day.client_key), "ghost:8", "EX", "86400")
    redis.cli("DEL", MEMBERS)
    redis.cli("SET", MEMBERS, "wrongtype")
    before = {env.server_key: polls(upstream, env) for env in ENVS}

    # A lease (3 s) and an interval (1 s) are 4 of the untouched environment's polls: over 12 of
    # them every planted one is polled again, twice at least (never, before: nobody took it).
    wait_until(lambda: polls(upstream, control) >= before[control.server_key] + 12, WAIT,
               "the untouched environment stopped being polled")
    polled = {env.client_key: polls(upstream, env) - before[env.server_key] for env in ENVS}
    assert min(polled.values()) >= 2, polled
    for env in ENVS:
        wait_until(lambda: readable_lease(redis, env), WAIT, f"the lease of {env.client_key} was never repaired")
    wait_leases_settled(replicas, ENVS)

    # The member list is a sorted set again, both replicas on it, after one warning.
    wait_until(lambda: redis.cli("TYPE", MEMBERS) == "zset" and redis.cli("ZCARD", MEMBERS) == "2", WAIT,
               "the member list was never replaced")
    for fp in replicas:
        wait_until(lambda: scrape(fp).value("flagpole_fleet_replicas_alive") == 2, WAIT,
                   f"replica on {fp.port} never counted two replicas again")
    warnings = sum(fp.stderr_text().count("member list in Redis had another type") for fp in replicas)
    assert 1 <= warnings <= 2, warnings
    # Not a warning every heartbeat: at most one fenced write of the holder's can meet the lease
    # of another type before its renewal mends it.
    wrongtype = sum(fp.stderr_text().count("WRONGTYPE") for fp in replicas)
    assert wrongtype <= 2, [fp.stderr_tail() for fp in replicas]


def auth_calls(server: RedisServer) -> int:
    """AUTH commands Redis has run, the one this question sends included."""
    stats = server.cli("INFO", "commandstats")
    found = re.search(r"^cmdstat_auth:calls=(\d+)", stats, re.M)
    return int(found.group(1)) if found else 0


def start_warning(fp) -> list[str]:
    return [line for line in fp.stderr_text().splitlines() if "cannot reach the fleet's Redis" in line]


def test_redis_unreachable_or_refusing_the_password_at_start_is_logged_once_and_attempts_back_off(
        upstream, flagpole, tmp_path):
    need_redis()
    server = RedisServer(tmp_path / "redis-auth", password="right-password").start()
    try:
        env = ENVS[0]
        serve_revision(upstream, [env])
        nobody = free_port()
        cases = {
            "refused": f"redis://flagpole:Secret-1-in-url@127.0.0.1:{nobody}/0",
            "wrong password": f"redis://:Secret-2-in-url@127.0.0.1:{server.port}/0",
        }
        replicas = {}
        for what, url in cases.items():
            config = fleet_config(upstream, server, [env])
            config["flagpole"]["fleet"]["redis_url"] = url
            replicas[what] = flagpole(config, workdir=tmp_path / what.split()[0], wait=True)
        for fp in replicas.values():
            # Served all the same: the replica polls upstream itself.
            fp.wait_ready(WAIT)

        # After the first few attempts, they come seconds apart: over ten seconds, a handful of
        # AUTH commands (a wait of a second each would send some twenty).
        time.sleep(6)
        first = auth_calls(server)
        time.sleep(10)
        sent = auth_calls(server) - first - 1
        assert sent <= 6, f"{sent} AUTH commands in 10 s"

        # Logged once each, at WARN, with where Redis is (no password) and why.
        for what, fp in replicas.items():
            wait_until(lambda: start_warning(fp), WAIT, f"{what}: nothing logged about Redis")
        shown = {"refused": f"redis://flagpole:redacted@127.0.0.1:{nobody}/0",
                 "wrong password": f"redis://:redacted@127.0.0.1:{server.port}/0"}
        reasons = {"refused": re.compile(r"refused", re.I), "wrong password": re.compile(r"WRONGPASS|password", re.I)}
        for what, fp in replicas.items():
            line = start_warning(fp)[0]
            assert "WARN" in line, line
            assert shown[what] in line, line
            assert reasons[what].search(line.split("reason=", 1)[-1]), line
        for what, fp in replicas.items():
            assert len(start_warning(fp)) == 1, (what, fp.stderr_tail())
            assert "still does not answer" not in fp.stderr_text(), (what, fp.stderr_tail())
            assert "Secret-1-in-url" not in fp.stderr_text() and "Secret-2-in-url" not in fp.stderr_text()
            assert fp.get("/api/v1/flags/", env.client_key).status == 200
            assert scrape(fp).value("flagpole_fleet_store_reachable") == 0
    finally:
        server.stop()


def fence(redis: RedisServer, env: Env) -> str:
    return redis.cli("GET", f"flagpole:env:{environment_id(env.client_key)}:fence")


def assert_spread_and_still(redis, upstream, replicas, envs, most: int) -> None:
    """No replica above `most` leases, every environment held; then, while each environment is
    polled five more times, no lease taken again anywhere (the fencing counters stay) and no
    environment polled by more than one replica."""
    wait_until(lambda: (lambda held: sum(held) == len(envs) and max(held) <= most)([leases(fp) for fp in replicas]),
               WAIT, "the leases never spread")
    fences = {env.client_key: fence(redis, env) for env in envs}
    before = {env.server_key: polls(upstream, env) for env in envs}
    wait_until(lambda: min(polls(upstream, env) - before[env.server_key] for env in envs) >= 5, WAIT,
               "some environment stopped being polled")
    assert {env.client_key: fence(redis, env) for env in envs} == fences, "a lease changed hands once spread"
    polled = [polls(upstream, env) - before[env.server_key] for env in envs]
    assert max(polled) <= 8, polled
    held = [leases(fp) for fp in replicas]
    assert sum(held) == len(envs) and max(held) <= most, held


def test_fewer_environments_than_replicas_spread_one_lease_each(redis, upstream, flagpole, tmp_path):
    """Three replicas, two environments: the first takes both alone; once the others have joined
    no replica holds two (today the first kept both)."""
    envs = ENVS[:2]
    serve_revision(upstream, envs)
    config = fleet_config(upstream, redis, envs)
    first = start(flagpole, tmp_path, config, "first")
    wait_until(lambda: leases(first) == 2, WAIT, "the first replica never took both leases")
    replicas = [first] + [start(flagpole, tmp_path, config, f"joined-{i}") for i in range(2)]
    for fp in replicas:
        wait_until(lambda: status_json(fp)["fleet"]["replicas"] == 3, WAIT,
                   f"replica on {fp.port} never counted three replicas")
    assert_spread_and_still(redis, upstream, replicas, envs, most=1)


def test_two_replicas_share_four_environments_two_each(redis, upstream, flagpole, tmp_path):
    envs = ENVS[:4]
    serve_revision(upstream, envs)
    config = fleet_config(upstream, redis, envs)
    first = start(flagpole, tmp_path, config, "first")
    wait_until(lambda: leases(first) == 4, WAIT, "the first replica never took every lease")
    replicas = [first, start(flagpole, tmp_path, config, "joined")]
    assert_spread_and_still(redis, upstream, replicas, envs, most=2)


def test_every_fleet_series_is_on_metrics_from_the_start(redis, upstream, flagpole, tmp_path):
    """Before anything was refused or loaded, each series is there (counters at 0, with each
    label value); the replicas alive are counted; Redis lost later is logged as before."""
    env = ENVS[0]
    config = fleet_config(upstream, redis, [env])
    # Nothing to serve yet: nothing is loaded, from the store or upstream.
    fp = flagpole(config, workdir=tmp_path / "replica", wait=True)
    metrics = scrape(fp)
    for name, labels in [
        ("flagpole_fleet_store_reachable", {}),
        ("flagpole_fleet_leases_held", {}),
        ("flagpole_fleet_replicas_alive", {}),
        ("flagpole_fleet_upstream_fetches_saved_total", {}),
        ("flagpole_fleet_documents_total", {"source": "store"}),
        ("flagpole_fleet_documents_total", {"source": "upstream"}),
        ("flagpole_fleet_store_documents_refused_total", {"reason": "undecodable"}),
        ("flagpole_fleet_store_documents_refused_total", {"reason": "rejected"}),
    ]:
        assert metrics.get(name, **labels) is not None, (name, labels, metrics.text)
    for reason in ("undecodable", "rejected"):
        assert metrics.get("flagpole_fleet_store_documents_refused_total", reason=reason) == 0
    assert metrics.get("flagpole_fleet_replicas_alive") >= 1
    wait_until(lambda: scrape(fp).value("flagpole_fleet_replicas_alive") == 1, WAIT, "one replica never counted")
    other = flagpole(config, workdir=tmp_path / "other", wait=True)
    for replica in (fp, other):
        wait_until(lambda: scrape(replica).value("flagpole_fleet_replicas_alive") == 2, WAIT,
                   f"replica on {replica.port} never counted two replicas")

    # Redis lost later: logged at once, with where Redis is.
    wait_until(lambda: scrape(fp).value("flagpole_fleet_store_reachable") == 1, WAIT, "Redis never answered")
    redis.stop()
    wait_until(lambda: any("the fleet's Redis does not answer" in line and redis.url in line
                           for line in fp.stderr_text().splitlines()), WAIT, "losing Redis was not logged")


def test_the_banner_says_which_documents_came_from_redis(redis, upstream, flagpole, tmp_path):
    """A replica starting with the API unreachable serves what Redis holds, and its banner says
    so; an environment Redis does not hold is still to come from upstream."""
    stored, missing = ENVS[:2], ENVS[2]
    serve_revision(upstream, stored)
    first = start(flagpole, tmp_path, fleet_config(upstream, redis, stored), "first")
    for env in stored:
        key = f"flagpole:env:{environment_id(env.client_key)}:document"
        wait_until(lambda: redis.cli("HEXISTS", key, "body") == "1", WAIT, f"{key} never written")
    first.stop()
    config = fleet_config(upstream, redis, [*stored, missing])
    config["api_url"] = "http://127.0.0.1:9/api/v1"  # nothing listens there
    fresh = flagpole(config, workdir=tmp_path / "fresh", wait=True)
    lines = re.findall(r"^environment \S+ from (.+)$", fresh.stderr_text(), re.M)
    assert sorted(lines) == ["the fleet's Redis", "the fleet's Redis", "upstream"], fresh.stderr_tail()
