"""What a fleet's replicas find in Redis is trusted no more than an upstream answer, and what
they load from it survives a restart (docs/fleet.md).

- A well-formed JSON object with the environment's `api_key` and nothing else of a document,
  planted with a newer revision and a notice, is refused by every replica that reads it (the last
  good document served, the refusal counted), and the lease holder writes its own document back
  at its next poll although the upstream has nothing new.
- Garbage under the revision the holder wrote (nobody reloads it: the revision is unchanged) is
  also written over by the holder at its next poll.
- A replica that loaded its documents from Redis has them in its `snapshot_dir`; restarted with
  Redis and the upstream both down, it serves them.

Redis is Debian's `redis-server` (fleet_support.py). Every wait is for an event, with a generous
deadline.
"""

from __future__ import annotations

import gzip
import json
import time

import pytest

from documents import make_document
from fleet_support import (  # noqa: F401 (`redis`: a fixture)
    RedisServer, environment_id, fleet_config, redis)
from metrics_support import scrape
from serve_harness import Env, wait_until

WAIT = 60  # seconds: the deadline of every wait (a hang, not a slow machine)
ENVS = [Env(f"values_client_{i}", f"ser.values_server_{i}") for i in range(2)]
# Planting a value and announcing it, in one step (a holder's poll cannot fall in between).
PLANT = ("redis.call('HSET', KEYS[1], 'revision', ARGV[1], 'updated_at_ms', ARGV[2], 'body', ARGV[4]) "
         "redis.call('PUBLISH', 'flagpole:documents', ARGV[3])")


def document_key(env: Env) -> str:
    return f"flagpole:env:{environment_id(env.client_key)}:document"


def serves(fp, env: Env, rev: int) -> bool:
    r = fp.get("/api/v1/flags/?feature=plain_string", env.server_key)
    return r.status == 200 and r.json()["feature_state_value"] == f"hello-r{rev}"


def wait_all_serve(replicas, rev: int) -> None:
    for fp in replicas:
        for env in ENVS:
            wait_until(lambda: serves(fp, env, rev), WAIT,
                       f"replica on {fp.port} never served revision {rev} of {env.client_key}")


def leases(fp) -> float:
    return scrape(fp).value("flagpole_fleet_leases_held")


def refused(fp) -> float:
    return scrape(fp).value("flagpole_fleet_store_documents_refused_total", reason="rejected")


def stored_document(redis: RedisServer, env: Env) -> dict | None:
    """The document Redis holds for `env`, or None when its body is not one gzip-compressed JSON
    object with `feature_states`."""
    try:
        doc = json.loads(gzip.decompress(redis.get_bytes(document_key(env), "body")))
    except (OSError, EOFError, ValueError):
        return None
    return doc if isinstance(doc, dict) and "feature_states" in doc else None


def start_fleet(flagpole, upstream, redis, tmp_path, n: int, **flagpole_settings) -> list:
    for env in ENVS:
        upstream.set_document(env.server_key, make_document(env.client_key, revision=1, name="Values"))
    config = fleet_config(upstream, redis, ENVS)
    config["flagpole"].update(flagpole_settings)
    replicas = [flagpole(config, workdir=tmp_path / f"replica-{i}", wait=True) for i in range(n)]
    for fp in replicas:
        fp.wait_ready(WAIT)
    wait_all_serve(replicas, 1)
    wait_until(lambda: sum(leases(fp) for fp in replicas) == len(ENVS), WAIT,
               "the replicas never held one lease per environment between them")
    for env in ENVS:
        wait_until(lambda: stored_document(redis, env) is not None, WAIT, f"{env.client_key} never written")
    return replicas


def test_a_near_empty_document_is_refused_everywhere_and_the_holder_writes_its_own_back(
        redis, upstream, flagpole, tmp_path):
    replicas = start_fleet(flagpole, upstream, redis, tmp_path, 3)
    env = ENVS[0]
    good = redis.cli("HGET", document_key(env), "revision")
    near_empty = gzip.compress(json.dumps({"api_key": env.client_key, "hello": 1}).encode())
    newer = str(int(time.time() * 1000) + 10 ** 9)
    polled = upstream.count(env.server_key)
    before = {fp.port: refused(fp) for fp in replicas}
    redis.cli("EVAL", PLANT, "1", document_key(env), "planted", newer, environment_id(env.client_key),
              stdin=near_empty)
    # Every replica that read it refused it (the holder ignores notices: it reads at its poll).
    wait_until(lambda: sum(refused(fp) > before[fp.port] for fp in replicas) >= len(replicas) - 1, WAIT,
               "the replicas that are not the holder never refused the near-empty document")
    for fp in replicas:
        assert serves(fp, env, 1), fp.port
        assert fp.get("/api/v1/flags/", env.client_key).json() != []
    # Upstream has nothing new, yet the holder's next poll writes the good document back.
    wait_until(lambda: redis.cli("HGET", document_key(env), "revision") == good, WAIT,
               "the holder never wrote its document over the near-empty one")
    assert upstream.count(env.server_key) > polled
    assert stored_document(redis, env)["api_key"] == env.client_key
    for fp in replicas:
        assert serves(fp, env, 1), fp.port
        assert fp.stderr_text().count("refused the document the fleet's store holds") <= 1, fp.port


@pytest.mark.parametrize("garbage", [b"not gzip at all", gzip.compress(b'{"api_key": "values_client_1"}')],
                         ids=["not gzip", "not a document"])
def test_garbage_under_the_holders_revision_is_written_over(redis, upstream, flagpole, tmp_path, garbage):
    replicas = start_fleet(flagpole, upstream, redis, tmp_path, 2)
    env = ENVS[1]
    revision = redis.cli("HGET", document_key(env), "revision")
    redis.cli("HSET", document_key(env), "body", stdin=garbage)
    assert stored_document(redis, env) is None
    wait_until(lambda: stored_document(redis, env) is not None, WAIT,
               "the holder never repaired the garbage body under its revision")
    assert redis.cli("HGET", document_key(env), "revision") == revision
    assert stored_document(redis, env)["api_key"] == env.client_key
    for fp in replicas:
        assert serves(fp, env, 1), fp.port
    holder = max(replicas, key=leases)
    assert "repairing it" in "".join(fp.stderr_text() for fp in replicas), holder.stderr_tail()


def test_documents_loaded_from_redis_are_saved_and_served_after_a_restart_without_redis_or_upstream(
        redis, upstream, flagpole, tmp_path):
    start_fleet(flagpole, upstream, redis, tmp_path, 1)
    # A replica whose upstream never answers: everything it serves comes from Redis.
    snapshots = tmp_path / "snapshots"
    config = fleet_config(upstream, redis, ENVS)
    config["api_url"] = "http://127.0.0.1:9/api/v1"  # nothing listens on port 9
    config["flagpole"]["snapshot_dir"] = str(snapshots)
    loader = flagpole(config, workdir=tmp_path / "loader", wait=True)
    loader.wait_ready(WAIT)
    for env in ENVS:
        assert serves(loader, env, 1), env
    assert scrape(loader).value("flagpole_fleet_documents_total", source="store") == len(ENVS)
    saved = lambda: [p for p in snapshots.glob("env-*.json") if not p.name.endswith(".meta.json")]
    wait_until(lambda: len(saved()) == len(ENVS), WAIT, "the documents loaded from Redis were not saved")
    assert sorted(json.loads(p.read_text())["api_key"] for p in saved()) == sorted(e.client_key for e in ENVS)
    assert loader.stop() == 0
    redis.stop()
    upstream.stop()
    restarted = flagpole(config, workdir=tmp_path / "restarted", wait=True)
    for env in ENVS:
        wait_until(lambda: serves(restarted, env, 1), WAIT,
                   f"the restarted replica never served {env.client_key} from its snapshot")


def test_a_document_key_of_another_type_is_replaced_by_the_holder(redis, upstream, flagpole, tmp_path):
    # `SET …:document garbage`: a string where replicas keep a hash. Reading it fails with WRONGTYPE;
    # the holder's next poll deletes it and writes its document back, and every replica keeps serving.
    replicas = start_fleet(flagpole, upstream, redis, tmp_path, 2)
    env = ENVS[0]
    redis.cli("DEL", document_key(env))
    redis.cli("SET", document_key(env), "garbage")
    wait_until(lambda: redis.cli("TYPE", document_key(env)) == "hash" and stored_document(redis, env) is not None,
               WAIT, "the holder never replaced the document key of another type")
    assert stored_document(redis, env)["api_key"] == env.client_key
    for fp in replicas:
        assert serves(fp, env, 1), fp.port
