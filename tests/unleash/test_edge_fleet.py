"""The edge mode in a fleet (`flagpole.fleet`): each client token's features are polled by one
replica for the whole fleet (the holder of a lease per upstream and token), which stores each
accepted body with its ETag in Redis under a digest of both (never the token) and announces it;
the others serve it from there. A change upstream reaches every replica; a replica started while
the upstream is down serves what Redis holds; while Redis does not answer every replica polls the
upstream itself and keeps serving.

Real parts only: Debian's `redis-server`, the scripted Unleash server (scripted_unleash.py, which
records the instance id each fetch introduces itself with) and three Flagpole replicas, all on
loopback. Every wait is for an event or a count, with a generous deadline.
"""

from __future__ import annotations

import hashlib
import json

from conftest import TOGGLES
from fleet_support import LEASE_SECONDS, RedisServer, redis  # noqa: F401 (`redis`: a fixture)
from metrics_support import scrape
from scripted_unleash import CLIENT, UnleashApi, api, auth, edge_args, names  # noqa: F401 (`api`: a fixture)
from serve_harness import FlagpoleProcess, stop_all, wait_until

WAIT = 60  # seconds: the deadline of every wait (a hang, not a slow machine)
OTHER = "default:production.edge-other-secret"
OTHER_TOGGLES = {**TOGGLES, "features": TOGGLES["features"][:1]}
ALL = [f["name"] for f in TOGGLES["features"]]


def feed_key(api: UnleashApi, token: str) -> str:
    both = f"http://127.0.0.1:{api.port}\n{token}"
    return f"flagpole:unleash:{hashlib.sha256(both.encode()).hexdigest()[:32]}:document"


class Fleet:
    """Replicas in edge mode on one Redis, each stopped at the end."""

    def __init__(self, api: UnleashApi, redis: RedisServer, tmp_path) -> None:
        self.api, self.redis, self.tmp_path = api, redis, tmp_path
        self.replicas: list[FlagpoleProcess] = []

    def start(self, wait_ready: bool = True) -> FlagpoleProcess:
        config = {"flagpole": {"fleet": {"redis_url": self.redis.url, "lease_seconds": LEASE_SECONDS}}}
        fp = FlagpoleProcess(self.tmp_path / f"r{len(self.replicas)}", config=config,
                             extra_args=edge_args(self.api, client=(CLIENT, OTHER)))
        self.replicas.append(fp)
        fp.start()
        if wait_ready:
            wait_until(lambda: fp.get("/internal-backstage/ready").status == 200, WAIT,
                       f"replica on port {fp.port} never ready:\n{fp.stderr_tail()}")
        return fp

    def stop(self) -> None:
        stop_all(self.replicas)


def features(fp: FlagpoleProcess, token: str = CLIENT) -> list[str] | None:
    response = fp.get("/api/client/features", headers=auth(token))
    return names(response) if response.status == 200 else None


def settled(replicas: list[FlagpoleProcess], tokens: int) -> bool:
    """Every replica counts the others, and each token's lease is held once, none beyond a share."""
    figures = [scrape(fp) for fp in replicas]
    held = [f.value("flagpole_fleet_leases_held") for f in figures]
    alive = [f.value("flagpole_fleet_replicas_alive") for f in figures]
    share = -(-tokens // len(replicas))
    return all(a == len(replicas) for a in alive) and sum(held) == tokens and max(held) <= share


def askers(api: UnleashApi, token: str, polls: int) -> set[str]:
    """Waits for `polls` more fetches with `token` (a few refresh intervals) and returns who made
    them."""
    since = len(api.askers)
    wait_until(lambda: len(api.askers_since(token, since)) >= polls, WAIT, "the token stopped being polled")
    return set(api.askers_since(token, since))


def test_one_replica_polls_each_token_and_a_change_reaches_every_replica(api, redis, tmp_path):
    api.set(features={CLIENT: TOGGLES, OTHER: OTHER_TOGGLES})
    fleet = Fleet(api, redis, tmp_path)
    try:
        replicas = [fleet.start() for _ in range(3)]
        wait_until(lambda: settled(replicas, 2), WAIT, "the leases never settled between the replicas")
        # (a) Each token is polled by one replica only, over several refresh intervals.
        for token in (CLIENT, OTHER):
            who = askers(api, token, 6)
            assert len(who) == 1, f"{token[:8]}… polled by {sorted(who)}, not by one replica"
        for fp in replicas:
            assert features(fp) == ALL and features(fp, OTHER) == ["alpha"]
        # Stored raw under a digest of the upstream and token, with its ETag; no token in Redis.
        key = feed_key(api, CLIENT)
        assert redis.cli("HGET", key, "etag").startswith('"'), redis.cli("HGETALL", key)
        assert [f["name"] for f in json.loads(redis.get_bytes(key, "body"))["features"]] == ALL
        keys = redis.cli("KEYS", "*")
        assert "secret" not in keys and "flagpole:unleash:" in keys, keys
        # (b) A change upstream reaches every replica's /api/client/features.
        api.set(features={CLIENT: {**TOGGLES, "features": TOGGLES["features"][:2]}, OTHER: OTHER_TOGGLES})
        for fp in replicas:
            wait_until(lambda fp=fp: features(fp) == ["alpha", "beta"], WAIT,
                       f"the change never reached the replica on port {fp.port}")
        assert sum(fp.stderr_text().count("loaded from the fleet's store") for fp in replicas) >= 2
    finally:
        fleet.stop()


def test_a_replica_started_while_the_upstream_is_down_serves_what_redis_holds(api, redis, tmp_path):
    api.set(features={CLIENT: TOGGLES, OTHER: OTHER_TOGGLES})
    fleet = Fleet(api, redis, tmp_path)
    try:
        first = fleet.start()
        wait_until(lambda: redis.cli("EXISTS", feed_key(api, OTHER)) == "1", WAIT, "nothing stored for the fleet")
        api.set(mode="down")
        failed = len(api.fetches)
        wait_until(lambda: len(api.fetches) > failed, WAIT, "the upstream was not asked while down")
        # (c) Cold start: nothing from the upstream, the features from Redis.
        late = fleet.start()
        assert features(late) == ALL and features(late, OTHER) == ["alpha"]
        assert "loaded from the fleet's store" in late.stderr_text(), late.stderr_tail()
        assert features(first) == ALL
    finally:
        fleet.stop()


def test_without_redis_every_replica_polls_the_upstream_itself(api, redis, tmp_path):
    api.set(features={CLIENT: TOGGLES, OTHER: OTHER_TOGGLES})
    fleet = Fleet(api, redis, tmp_path)
    try:
        replicas = [fleet.start() for _ in range(2)]
        wait_until(lambda: settled(replicas, 2), WAIT, "the leases never settled between the replicas")
        # (d) Redis stopped: every replica polls for itself and keeps serving.
        redis.stop()
        since = len(api.askers)
        wait_until(lambda: len(set(api.askers_since(CLIENT, since))) == 2, WAIT,
                   "the replicas never polled the upstream each on their own")
        for fp in replicas:
            assert features(fp) == ALL
            wait_until(lambda fp=fp: scrape(fp).value("flagpole_fleet_store_reachable") == 0, WAIT,
                       "Redis still counted as reachable")
        api.set(features={CLIENT: {**TOGGLES, "features": TOGGLES["features"][1:]}, OTHER: OTHER_TOGGLES})
        for fp in replicas:
            wait_until(lambda fp=fp: features(fp) == ALL[1:], WAIT,
                       f"the change never reached the replica on port {fp.port} without Redis")
    finally:
        fleet.stop()
