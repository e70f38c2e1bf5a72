"""A fleet: replicas sharing one Redis (`flagpole.fleet`). Each environment is polled upstream by
one replica for the whole fleet (the holder of its lease) and the others load its document from
Redis, where it is stored gzip-compressed; a replica killed hands its environments over; a new
replica with an empty directory and no upstream serves what Redis holds; Redis going away never
fails a request (every replica then polls upstream itself); a corrupt or truncated value in
Redis is refused and the last good document kept; a holder whose lease ran out while it fetched
writes nothing (fencing); /metrics and the status page show the fleet; with Redis Sentinel the
fleet follows the promoted replica when the master dies; the `proxy_key` listing is fetched once
for the fleet; fifty environments on three replicas are polled once per interval in total; and with
no lease to spare every environment keeps a holder.

Redis is Debian's `redis-server` (Sentinel: `redis-server --sentinel`), started here on free
loopback ports with nothing saved to disk. Without it the suite is skipped, except under
CI=true, where that is a failure. Every wait is for an event (a revision served, a counter, a
request count) with a generous deadline; nothing asserts how long anything took.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import time
from pathlib import Path

from documents import make_document
from fleet_support import (  # noqa: F401 (`redis`: a fixture)
    LEASE_SECONDS, RedisServer, environment_id, fleet_config, leases, need_redis, redis, stored_text,
)
from fleet_support import wait_leases_settled as settled
from metrics_support import scrape, status_json
from serve_harness import Env, free_port, upstream_config, wait_until

WAIT = 60  # seconds: the deadline of every wait (a hang, not a slow machine)
ENVS = [Env(f"fleet_client_{i}", f"ser.fleet_server_{i}") for i in range(6)]


def doc(env: Env, rev: int) -> dict:
    return make_document(env.client_key, revision=rev, name="Fleet Env")


def set_revision(upstream, rev: int, envs=ENVS) -> None:
    for env in envs:
        upstream.set_document(env.server_key, doc(env, rev))


def serves(fp, env: Env, rev: int) -> bool:
    r = fp.get("/api/v1/flags/?feature=plain_string", env.server_key)
    return r.status == 200 and r.json()["feature_state_value"] == f"hello-r{rev}"


def wait_all_serve(replicas, rev: int, envs=ENVS) -> None:
    for fp in replicas:
        for env in envs:
            wait_until(lambda: serves(fp, env, rev), WAIT,
                       f"replica on {fp.port} never served revision {rev} of {env.client_key}")


def start_replicas(flagpole, tmp_path, config: dict, n: int) -> list:
    replicas = [flagpole(config, workdir=tmp_path / f"replica-{i}", wait=True) for i in range(n)]
    for fp in replicas:
        fp.wait_ready(WAIT)
    return replicas


def wait_leases_settled(replicas, envs=ENVS, redis=None) -> None:
    settled(replicas, envs, redis)


def counts(upstream) -> dict[str, int]:
    return {env.server_key: upstream.count(env.server_key) for env in ENVS}


def test_each_environment_is_polled_by_one_replica_for_the_fleet(redis, upstream, flagpole, tmp_path):
    set_revision(upstream, 1)
    replicas = start_replicas(flagpole, tmp_path, fleet_config(upstream, redis, ENVS), 3)
    wait_all_serve(replicas, 1)
    # Spread: the replica that started first (and took every lease, alone then) hands some over.
    wait_until(lambda: max(leases(fp) for fp in replicas) < len(ENVS), WAIT,
               "every lease stayed on one replica")
    wait_leases_settled(replicas)

    # Over the time every environment is polled 5 more times, none is polled much more: three
    # replicas polling on their own would poll each about 15 times meanwhile.
    before = counts(upstream)
    wait_until(lambda: min(counts(upstream)[k] - before[k] for k in before) >= 5, WAIT,
               "some environment stopped being polled")
    polled = {k: counts(upstream)[k] - before[k] for k in before}
    assert max(polled.values()) <= 8, polled

    # A change upstream reaches every replica, through Redis.
    set_revision(upstream, 2)
    wait_all_serve(replicas, 2)
    from_store = sum(scrape(fp).value("flagpole_fleet_documents_total", source="store") for fp in replicas)
    assert from_store >= 2 * len(ENVS), from_store
    for fp in replicas:
        assert scrape(fp).value("flagpole_fleet_store_reachable") == 1
    # Redis names carry digests, never a key.
    names = redis.cli("KEYS", "*")
    assert "fleet_client" not in names and "fleet_server" not in names, names
    assert f"flagpole:env:{environment_id(ENVS[0].client_key)}:document" in names.split(), names


def test_metrics_and_the_status_page_show_the_fleet(redis, upstream, flagpole, tmp_path):
    set_revision(upstream, 1)
    replicas = start_replicas(flagpole, tmp_path, fleet_config(upstream, redis, ENVS), 2)
    wait_all_serve(replicas, 1)
    wait_leases_settled(replicas)
    set_revision(upstream, 2)
    wait_all_serve(replicas, 2)
    # Each replica reads the store at the poll times of the environments the other polls.
    for fp in replicas:
        wait_until(lambda: scrape(fp).value("flagpole_fleet_upstream_fetches_saved_total") > 0, WAIT,
                   f"replica on {fp.port} never read the store instead of polling")
    # Read while no lease is being handed over (the status page counts them as /metrics does).
    facts = wait_until(lambda: (lambda f: f if sum(x["leases_held"] for x in f) == len(ENVS) else None)(
        [status_json(fp)["fleet"] for fp in replicas]), WAIT, "the status pages never showed every lease held")
    for fleet, fp in zip(facts, replicas):
        assert fleet["store_reachable"] is True, fleet
        assert fleet["replicas"] == 2, fleet
        assert fleet["upstream_fetches_saved"] >= 1, fleet
        assert fleet["store_values_refused"] == 0, fleet
        metrics = scrape(fp)
        assert fleet["documents_from_store"] <= metrics.value("flagpole_fleet_documents_total", source="store")
        assert fleet["upstream_fetches_saved"] <= metrics.value("flagpole_fleet_upstream_fetches_saved_total")
    # Revision 2 of every environment came once from upstream (on its holder) and once from the
    # store (on the other replica).
    assert sum(f["documents_from_upstream"] for f in facts) >= len(ENVS), facts
    assert sum(f["documents_from_store"] for f in facts) >= len(ENVS), facts
    page = replicas[0].get("/proxy/status", headers={"Accept": "text/html"}).body.decode()
    assert 'data-section="fleet"' in page
    assert 'data-field="fleet_store_reachable">reachable<' in page
    assert f'data-field="fleet_leases_held">{facts[0]["leases_held"]}<' in page
    # Without `flagpole.fleet`, neither shows a fleet.
    lone = flagpole(upstream_config(upstream, ENVS), workdir=tmp_path / "lone")
    lone.wait_ready(WAIT)
    assert status_json(lone)["fleet"] is None
    assert 'data-section="fleet"' not in lone.get("/proxy/status").body.decode()
    assert "flagpole_fleet_" not in scrape(lone).text


# 39: three shares of 13 with no lease to spare, the fleet's tightest spread.
MANY = [Env(f"fleet_many_client_{i}", f"ser.fleet_many_server_{i}") for i in range(39)]


def assert_polled_once_per_interval(upstream, replicas, envs, poll_seconds: float) -> None:
    """Over about fifteen intervals, ended by the polls (not by a clock): every environment
    polled every round of the fleet's polls, about one request per environment per interval in
    total, and one lease per environment in Redis at the end."""
    t0 = time.monotonic()
    before = upstream.count()
    wait_until(lambda: upstream.count() - before >= 15 * len(envs), WAIT, "the fleet stopped polling")
    t1 = time.monotonic()
    window = [r for r in upstream.requests_for() if t0 <= r.at <= t1]
    times: dict[str, list[float]] = {env.server_key: [] for env in envs}
    for r in window:
        times[r.headers.get("x-environment-key")].append(r.at)
    all_times = sorted(r.at for r in window)

    # Each environment's longest wait between polls, counted in rounds of the fleet's polls
    # (requests for any environment ÷ environments) rather than seconds, so that a slow machine
    # slows both sides alike: a holder polls every round; an environment without one waits
    # until a replica takes its lease (up to the lease, five rounds). A holder's poll that ends
    # after its next slot (a loaded machine) skips to the slot after by design, one wait of two
    # rounds plus the rounds' own spread: so up to three, and never the lease's five.
    for key, polled in times.items():
        edges = [t0, *polled, t1]
        start, end = max(zip(edges, edges[1:]), key=lambda e: e[1] - e[0])
        rounds = sum(start < t < end for t in all_times) / len(envs)
        assert rounds <= 3, f"{key} went unpolled for {rounds:.1f} rounds ({len(polled)} polls in the window)"

    # In total about one request per environment per interval: not one per replica, and not
    # far below one (environments without a holder).
    per_interval = len(window) / ((t1 - t0) / poll_seconds) / len(envs)
    assert 0.8 <= per_interval <= 1.5, f"{per_interval:.2f} requests per environment per interval"
    held = [leases(fp) for fp in replicas]
    assert sum(held) == len(envs), held


def test_with_many_environments_each_is_polled_once_per_interval_for_the_fleet(redis, upstream, flagpole,
                                                                               tmp_path):
    """Three replicas, 39 environments: once the leases have spread, every environment has a
    holder that polls it every interval, so the upstream sees about one request per environment
    per interval in total; no environment waits without a holder while the others are polled.
    The same once a replica has left and the other two have taken its leases."""
    set_revision(upstream, 1, MANY)
    config = fleet_config(upstream, redis, MANY)
    # A lease of five intervals: one left free waits up to five intervals for a holder.
    config["flagpole"]["fleet"]["lease_seconds"] = 5
    # Started together, as a deployment's pods are: leases are taken and handed over between
    # replicas that all run.
    replicas = [flagpole(config, workdir=tmp_path / f"replica-{i}", wait=False) for i in range(3)]
    for fp in replicas:
        fp.wait_ready(WAIT)
    wait_all_serve(replicas, 1, MANY)
    # Spread: no replica above its share (39 / 3) plus the one spare it may keep.
    wait_until(lambda: max(leases(fp) for fp in replicas) <= 14, WAIT, "the leases never spread")
    wait_leases_settled(replicas, MANY, redis)
    assert_polled_once_per_interval(upstream, replicas, MANY, config["api_poll_frequency_seconds"])

    # One replica stops (its leases released); the other two take them and poll every one.
    leaving = max(replicas, key=leases)
    assert leaving.stop() == 0
    survivors = [fp for fp in replicas if fp is not leaving]
    wait_leases_settled(survivors, MANY, redis)
    assert_polled_once_per_interval(upstream, survivors, MANY, config["api_poll_frequency_seconds"])


def test_a_killed_lease_holder_hands_its_environments_over(redis, upstream, flagpole, tmp_path):
    set_revision(upstream, 1)
    replicas = start_replicas(flagpole, tmp_path, fleet_config(upstream, redis, ENVS), 3)
    wait_all_serve(replicas, 1)
    wait_leases_settled(replicas)
    holder = max(replicas, key=leases)
    assert leases(holder) >= 1
    holder.expect_clean_exit = False
    holder.signalled = True
    holder.kill()  # SIGKILL: no lease released
    survivors = [fp for fp in replicas if fp is not holder]
    # The environments it polled are polled again: the change reaches both survivors.
    set_revision(upstream, 2)
    wait_all_serve(survivors, 2)
    wait_leases_settled(survivors)


def test_a_new_replica_serves_what_redis_holds_without_upstream(redis, upstream, flagpole, tmp_path):
    set_revision(upstream, 3)
    first = start_replicas(flagpole, tmp_path, fleet_config(upstream, redis, ENVS), 1)[0]
    wait_all_serve([first], 3)
    for env in ENVS:
        key = f"flagpole:env:{environment_id(env.client_key)}:document"
        wait_until(lambda: redis.cli("HEXISTS", key, "body") == "1", WAIT, f"{key} never written")
    upstream.stop()
    # Nothing listens on port 9: the new replica's upstream is unreachable; its directory is empty.
    config = fleet_config(upstream, redis, ENVS)
    config["api_url"] = "http://127.0.0.1:9/api/v1"
    fresh = flagpole(config, workdir=tmp_path / "fresh", wait=True)
    fresh.wait_ready(WAIT)
    for env in ENVS:
        assert serves(fresh, env, 3), env
    assert scrape(fresh).value("flagpole_fleet_documents_total", source="store") == len(ENVS)


def test_without_redis_every_replica_polls_upstream_itself(redis, upstream, flagpole, tmp_path):
    set_revision(upstream, 1)
    replicas = start_replicas(flagpole, tmp_path, fleet_config(upstream, redis, ENVS), 2)
    wait_all_serve(replicas, 1)
    wait_leases_settled(replicas)
    redis.stop()
    for fp in replicas:
        wait_until(lambda: scrape(fp).value("flagpole_fleet_store_reachable") == 0, WAIT,
                   "a replica never noticed that Redis is gone")
    set_revision(upstream, 2)
    wait_all_serve(replicas, 2)
    # Redis back, empty: the lease holders write the documents again, leases resume.
    redis.start()
    for env in ENVS:
        key = f"flagpole:env:{environment_id(env.client_key)}:document"
        wait_until(lambda: redis.cli("HGET", key, "body") != "", WAIT, f"{key} never written again")
    wait_leases_settled(replicas)
    set_revision(upstream, 3)
    wait_all_serve(replicas, 3)


def refused(replicas, reason: str) -> float:
    return sum(scrape(fp).value("flagpole_fleet_store_documents_refused_total", reason=reason)
               for fp in replicas)


def test_documents_are_stored_gzipped(redis, upstream, flagpole, tmp_path):
    env = ENVS[0]
    set_revision(upstream, 1, [env])
    fp = start_replicas(flagpole, tmp_path, fleet_config(upstream, redis, [env]), 1)[0]
    key = f"flagpole:env:{environment_id(env.client_key)}:document"
    wait_until(lambda: redis.cli("HEXISTS", key, "body") == "1", WAIT, "the document was never written")
    stored = redis.get_bytes(key, "body")
    served = fp.get("/api/v1/environment-document/", env.server_key)
    assert served.status == 200
    assert stored[:2] == b"\x1f\x8b", stored[:16]
    assert json.loads(gzip.decompress(stored)) == served.json()
    assert len(stored) < len(served.body)


def test_a_corrupt_or_truncated_value_in_redis_is_refused_and_the_last_good_kept(redis, upstream, flagpole,
                                                                                   tmp_path):
    set_revision(upstream, 1)
    replicas = start_replicas(flagpole, tmp_path, fleet_config(upstream, redis, ENVS), 2)
    wait_all_serve(replicas, 1)
    wait_leases_settled(replicas)
    env = ENVS[0]
    key = f"flagpole:env:{environment_id(env.client_key)}:document"
    wait_until(lambda: redis.cli("HEXISTS", key, "body") == "1", WAIT, "the document was never written")
    good = redis.get_bytes(key, "body")
    newer = gzip.compress(json.dumps(doc(env, 9)).encode())
    flipped = bytearray(newer)
    flipped[len(flipped) // 2] ^= 0xFF
    planted = [
        ("truncated", newer[: len(newer) // 2], "undecodable"),
        ("corrupt", bytes(flipped), "undecodable"),
        ("not gzip", json.dumps(doc(env, 9)).encode(), "undecodable"),
        ("another environment's", gzip.compress(json.dumps(doc(ENVS[1], 9)).encode()), "rejected"),
        ("not a document", gzip.compress(b'{"api_key": "fleet_client_0", "feature_'), "rejected"),
    ]
    assert gzip.decompress(good)  # what the fleet wrote is whole
    far_future = str(int(time.time() * 1000) + 10 ** 9)
    for i, (what, body, reason) in enumerate(planted):
        before = refused(replicas, reason)
        redis.cli("HSET", key, "revision", f"planted-{i}", "updated_at_ms", far_future, "body", stdin=body)
        redis.cli("PUBLISH", "flagpole:documents", environment_id(env.client_key))
        wait_until(lambda: refused(replicas, reason) > before, WAIT, f"no replica refused the {what} value")
        for fp in replicas:
            assert serves(fp, env, 1), (what, fp.port)
            assert fp.get("/api/v1/flags/", env.client_key).status == 200
    # The next change upstream replaces the refused value, and reaches every replica.
    set_revision(upstream, 2)
    wait_all_serve(replicas, 2)
    assert json.loads(gzip.decompress(redis.get_bytes(key, "body")))["api_key"] == env.client_key


def test_a_holder_whose_lease_ran_out_during_its_fetch_writes_nothing(redis, upstream, flagpole, tmp_path):
    env = ENVS[0]
    set_revision(upstream, 1, [env])
    config = fleet_config(upstream, redis, [env])
    config["flagpole"]["fleet"]["lease_seconds"] = 1
    config["api_poll_timeout_seconds"] = 10
    holder = flagpole(config, workdir=tmp_path / "holder", wait=True)
    holder.wait_ready(WAIT)
    wait_leases_settled([holder], [env])
    key = f"flagpole:env:{environment_id(env.client_key)}:document"
    lease = f"flagpole:env:{environment_id(env.client_key)}:lease"
    wait_until(lambda: redis.cli("HEXISTS", key, "body") == "1", WAIT, "the document was never written")
    stored = redis.cli("HGET", key, "revision")
    # The next fetch takes longer than the lease: the lease runs out meanwhile and another
    # replica (played here) takes it.
    upstream.slow_seconds = 3.0
    upstream.set_mode("slow")
    set_revision(upstream, 2, [env])
    wait_until(lambda: redis.cli("EXISTS", lease) == "0", WAIT, "the lease never ran out during the fetch")
    assert redis.cli("SET", lease, "another-replica:999999", "PX", "60000", "NX") == "OK"
    # The fetch ends: the holder serves what upstream answered, but writes nothing for the fleet.
    wait_until(lambda: serves(holder, env, 2), WAIT, "the slow answer was never served")
    wait_until(lambda: "lease expired during the fetch" in holder.stderr_text(), WAIT,
               "the holder never found its lease gone")
    assert redis.cli("HGET", key, "revision") == stored
    assert redis.cli("GET", lease) == "another-replica:999999"


def test_rediss_with_an_acl_user(upstream, flagpole, tmp_path):
    """`rediss://` (TLS, the server's certificate checked against the trusted roots) with an ACL
    user limited to Flagpole's keys and channel, the default user switched off."""
    need_redis()
    from tls_certs import Authority

    authority = Authority(tmp_path)
    pair = authority.issue()
    cert, key = tmp_path / "redis-cert.pem", tmp_path / "redis-key.pem"
    cert.write_bytes(pair.cert_pem)
    key.write_bytes(pair.key_pem)
    server = RedisServer(tmp_path / "redis-tls", tls=(authority.ca_path, cert, key)).start()
    try:
        assert server.cli("ACL", "SETUSER", "flagpole", "on", ">s3cret", "~flagpole:*", "&flagpole:*",
                          "+@all", "-@dangerous") == "OK"
        assert server.cli("ACL", "SETUSER", "default", "off") == "OK"
        env = ENVS[0]
        set_revision(upstream, 1, [env])
        config = fleet_config(upstream, server, [env])
        config["flagpole"]["fleet"]["redis_url"] = f"rediss://flagpole:s3cret@127.0.0.1:{server.port}/0"
        fp = flagpole(config, workdir=tmp_path / "replica", env={"SSL_CERT_FILE": str(authority.ca_path)})
        fp.wait_ready(WAIT)
        wait_leases_settled([fp], [env])
        assert scrape(fp).value("flagpole_fleet_store_reachable") == 1
        key_name = f"flagpole:env:{environment_id(env.client_key)}:document"
        wait_until(lambda: server.cli("--user", "flagpole", "--pass", "s3cret", "--no-auth-warning",
                                      "HEXISTS", key_name, "body") == "1", WAIT, "nothing written over TLS")
        assert "s3cret" not in fp.stderr_text()
    finally:
        server.stop()


class Sentinels:
    """Redis Sentinel on loopback: one master, one replica, three sentinels watching the master
    as `flags` (quorum 2, the master judged down after a second without an answer)."""

    MASTER = "flags"

    def __init__(self, workdir: Path) -> None:
        self.master = RedisServer(workdir / "master").start()
        self.replica = RedisServer(workdir / "replica", extra=["--replicaof", "127.0.0.1", str(self.master.port)])
        self.replica.start()
        wait_until(lambda: "master_link_status:up" in self.replica.cli("INFO", "replication"), WAIT,
                   "the replica never synchronised with the master")
        self.sentinels: list[tuple[int, subprocess.Popen]] = []
        for i in range(3):
            port = free_port()
            conf = workdir / f"sentinel-{i}.conf"  # sentinels rewrite their file: one each
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {workdir}\n"
                f"sentinel monitor {self.MASTER} 127.0.0.1 {self.master.port} 2\n"
                f"sentinel down-after-milliseconds {self.MASTER} 1000\n"
                f"sentinel failover-timeout {self.MASTER} 5000\n"
                f"sentinel parallel-syncs {self.MASTER} 1\n")
            proc = subprocess.Popen(["redis-server", str(conf), "--sentinel"], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            self.sentinels.append((port, proc))
        # Every sentinel knows the replica and the two other sentinels: a failover can be agreed.
        for port, _ in self.sentinels:
            wait_until(lambda: self.ask(port, "SENTINEL", "replicas", self.MASTER).count("ip") >= 1
                       and self.ask(port, "SENTINEL", "sentinels", self.MASTER).count("ip") >= 2, WAIT,
                       f"sentinel {port} never found the replica and the other sentinels")

    @staticmethod
    def ask(port: int, *args: str) -> str:
        done = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True, timeout=10)
        return done.stdout.strip()

    def master_port(self) -> int | None:
        answer = self.ask(self.sentinels[0][0], "SENTINEL", "get-master-addr-by-name", self.MASTER).split()
        return int(answer[1]) if len(answer) == 2 else None

    def addresses(self) -> list[str]:
        return [f"127.0.0.1:{port}" for port, _ in self.sentinels]

    def stop(self) -> None:
        for _, proc in self.sentinels:
            proc.kill()
            proc.wait(timeout=10)
        self.replica.stop()
        self.master.stop()


def test_with_sentinel_the_fleet_follows_the_promoted_replica(upstream, flagpole, tmp_path):
    need_redis()
    redis = Sentinels(tmp_path / "sentinel")
    try:
        set_revision(upstream, 1)
        config = upstream_config(upstream, ENVS)
        config["flagpole"] = {"fleet": {"sentinels": redis.addresses(), "sentinel_master": Sentinels.MASTER,
                                        "lease_seconds": LEASE_SECONDS}}
        replicas = start_replicas(flagpole, tmp_path, config, 2)
        wait_all_serve(replicas, 1)
        wait_leases_settled(replicas)
        key = f"flagpole:env:{environment_id(ENVS[0].client_key)}:document"
        wait_until(lambda: redis.master.cli("HEXISTS", key, "body") == "1", WAIT, "nothing written on the master")

        # The master dies: the sentinels promote the replica, and the fleet follows it.
        redis.master.stop()
        wait_until(lambda: redis.master_port() == redis.replica.port, WAIT,
                   "the sentinels never promoted the replica")
        for fp in replicas:
            wait_until(lambda: scrape(fp).value("flagpole_fleet_store_reachable") == 1, WAIT,
                       f"replica on {fp.port} never reached the promoted master")
        wait_leases_settled(replicas)
        from_store = sum(scrape(fp).value("flagpole_fleet_documents_total", source="store") for fp in replicas)
        set_revision(upstream, 2)
        wait_all_serve(replicas, 2)
        # Written to the new master by the lease holders, read from it by the other replica.
        for env in ENVS:
            key = f"flagpole:env:{environment_id(env.client_key)}:document"
            wait_until(lambda: "hello-r2" in stored_text(redis.replica, key), WAIT,
                       f"revision 2 of {env.client_key} never written to the promoted master")
        wait_until(lambda: sum(scrape(fp).value("flagpole_fleet_documents_total", source="store")
                               for fp in replicas) >= from_store + len(ENVS), WAIT,
                   "the replicas never loaded revision 2 from the promoted master")
    finally:
        redis.stop()


def test_the_proxy_key_listing_is_fetched_once_for_the_fleet(redis, flagpole, tmp_path):
    """One replica fetches the `proxy_key` listing for the fleet; the others read it from Redis."""
    from test_discovery import PROXY_KEY, ProxyApi, listed

    api = ProxyApi()
    try:
        first, second = make_document("disc_f1", env_id=7101), make_document("disc_f2", env_id=7102)
        api.set(documents={"ser.f1": first, "ser.f2": second}, listing=[listed("disc_f1", ("ser.f1", True, None))])
        config = {"proxy_key": PROXY_KEY, "api_url": api.api_url, "api_poll_frequency_seconds": 1,
                  "flagpole": {"fleet": {"redis_url": redis.url, "lease_seconds": LEASE_SECONDS}}}
        replicas = [flagpole(config=config, workdir=tmp_path / f"replica-{i}", wait=False) for i in range(3)]
        for fp in replicas:
            fp.wait_live()
            wait_until(lambda: fp.get("/api/v1/flags/", key="disc_f1").status == 200, WAIT,
                       f"replica on {fp.port} never served the discovered environment")

        def document_fetches() -> int:
            with api.lock:
                return sum(1 for key, _ in api.fetch_keys if key == "ser.f1")

        # The environment's document is fetched once per interval for the fleet: over five of
        # those, three replicas fetching the listing each would fetch it about fifteen times.
        wait_leases_settled(replicas, ["ser.f1"])
        fetches, listings = document_fetches(), api.listing_requests
        wait_until(lambda: document_fetches() >= fetches + 5, WAIT, "the environment stopped being polled")
        assert api.listing_requests - listings <= 8, api.listing_requests - listings
        assert sum(scrape(fp).value("flagpole_fleet_upstream_fetches_saved_total") for fp in replicas) > 0

        # A change to the listing reaches every replica.
        api.set(listing=[listed("disc_f1", ("ser.f1", True, None)), listed("disc_f2", ("ser.f2", True, None))])
        for fp in replicas:
            wait_until(lambda: fp.get("/api/v1/flags/", key="disc_f2").status == 200, WAIT,
                       f"replica on {fp.port} never served the newly listed environment")
        names = redis.cli("KEYS", "*").split()
        assert f"flagpole:discovery:{environment_id(PROXY_KEY)}:document" in names, names
        assert not any(PROXY_KEY in name or "ser.f" in name for name in names), names
    finally:
        api.stop()


FIFTY = [Env(f"fleet_many_{i}", f"ser.fleet_many_{i}") for i in range(50)]


def test_fifty_environments_on_three_replicas(redis, upstream, flagpole, tmp_path):
    """At scale: each of 50 environments is polled once per interval for the whole fleet, not
    once per replica; a lease holder killed, its environments are polled again by the others;
    Redis restarted empty, the next polls write every document again."""
    set_revision(upstream, 1, FIFTY)
    replicas = start_replicas(flagpole, tmp_path, fleet_config(upstream, redis, FIFTY), 3)
    wait_all_serve(replicas, 1, FIFTY)
    # Spread: none holds more than its share (50 / 3, rounded up) plus one, all are held.
    wait_until(lambda: (lambda held: sum(held) == len(FIFTY) and max(held) <= 18)([leases(fp) for fp in replicas]),
               WAIT, "the leases never spread over the replicas")

    def polled_since(before: dict[str, int]) -> dict[str, int]:
        return {e.server_key: upstream.count(e.server_key) - before[e.server_key] for e in FIFTY}

    # Until every environment has been polled 5 more times, none is polled more than 8 times
    # (slack for a poll moving with its lease); three replicas on their own would poll each ~15.
    before = {e.server_key: upstream.count(e.server_key) for e in FIFTY}
    wait_until(lambda: min(polled_since(before).values()) >= 5, WAIT, "some environment stopped being polled")
    polled = polled_since(before)
    assert max(polled.values()) <= 8, sorted(polled.values())
    assert sum(polled.values()) <= 8 * len(FIFTY), sum(polled.values())

    # SIGKILL of the replica holding the most leases: its environments are polled again by the
    # others, which take its leases between them, and a change reaches both.
    holder = max(replicas, key=leases)
    holder.expect_clean_exit = False
    holder.signalled = True
    holder.kill()
    survivors = [fp for fp in replicas if fp is not holder]
    before = {e.server_key: upstream.count(e.server_key) for e in FIFTY}
    wait_until(lambda: min(polled_since(before).values()) >= 2, WAIT,
               "the killed holder's environments were never polled again")
    wait_leases_settled(survivors, FIFTY)
    set_revision(upstream, 2, FIFTY)
    wait_all_serve(survivors, 2, FIFTY)

    # Redis restarted empty: the next polls write every document again, and the fleet goes on.
    redis.stop()
    redis.start()
    for env in FIFTY:
        key = f"flagpole:env:{environment_id(env.client_key)}:document"
        wait_until(lambda: "hello-r2" in stored_text(redis, key), WAIT, f"{key} never written again")
    wait_leases_settled(survivors, FIFTY)
    set_revision(upstream, 3, FIFTY)
    wait_all_serve(survivors, 3, FIFTY)
