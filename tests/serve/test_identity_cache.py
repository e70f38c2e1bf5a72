"""The identity cache (`flagpole.identity_cache.max_bytes`), on real `flagpole serve` processes.

Repeat identity requests are answered from a cache that belongs to the document revision, so:
- a cached answer is byte for byte the answer an uncached proxy gives, for every key kind,
  identifier and trait list (order included, it is echoed);
- a new document is never answered from the old one's cache;
- hits and misses are counted in `flagpole_identity_cache_requests_total`;
- `max_bytes: 0` turns it off.
"""

from __future__ import annotations

import json

from metrics_support import scrape
from serve_harness import local_config, standard_envs, wait_until, write_atomic, write_documents
from documents import make_document

CACHE = "flagpole_identity_cache_requests_total"
WAIT = 60

# Identities with traits that steer segments and splits, in two trait orders.
REQUESTS = [
    ("user-1", []),
    ("user-2", [("plan", "enterprise"), ("age", 42)]),
    ("user-2", [("age", 42), ("plan", "enterprise")]),
    ("user-3", [("plan", "free"), ("beta", True), ("score", 2.5)]),
    ("ünï-cödé", [("country", "GB")]),
]


def post_identity(fp, key, identifier, traits):
    body = {"identifier": identifier, "traits": [{"trait_key": k, "trait_value": v} for k, v in traits]}
    r = fp.post("/api/v1/identities/", body, key)
    assert r.status == 200, r
    return r.body


def get_identity(fp, key, identifier):
    r = fp.get(f"/api/v1/identities/?identifier={identifier}", key)
    assert r.status == 200, r
    return r.body


def answers(fp, envs):
    out = []
    for env in envs:
        for key in (env.client_key, env.server_key):
            for identifier, traits in REQUESTS:
                out.append(post_identity(fp, key, identifier, traits))
            out.append(get_identity(fp, key, "user-1"))
    return out


def test_cached_answers_equal_uncached_ones(flagpole, tmp_path):
    envs = standard_envs()
    paths = write_documents(tmp_path / "docs", envs)
    cached = flagpole(local_config(paths, envs), workdir=tmp_path / "cached")
    off = flagpole(local_config(paths, envs, flagpole={"identity_cache": {"max_bytes": 0}}),
                   workdir=tmp_path / "off")
    cached.wait_ready(WAIT)
    off.wait_ready(WAIT)

    first = answers(cached, envs)
    again = answers(cached, envs)
    reference = answers(off, envs)
    assert first == reference
    assert again == reference
    # Trait order is echoed, so the two orders are two answers.
    body = json.loads(first[1])
    assert [t["trait_key"] for t in body["traits"]] == ["plan", "age"]
    assert [t["trait_key"] for t in json.loads(first[2])["traits"]] == ["age", "plan"]

    m = scrape(cached)
    # GET ?identifier=user-1 asks what POST {"identifier": "user-1"} asks: one answer for both.
    distinct = len(first) - 2 * len(envs)
    assert m.value(CACHE, result="miss") == distinct
    assert m.value(CACHE, result="hit") == 2 * len(first) - distinct
    off_metrics = scrape(off)
    assert off_metrics.get(CACHE, result="hit") in (None, 0)


def test_a_new_document_is_never_answered_from_the_old_cache(flagpole, tmp_path):
    envs = standard_envs()[:1]
    paths = write_documents(tmp_path / "docs", envs)
    fp = flagpole(local_config(paths, envs))
    fp.wait_ready(WAIT)
    env = envs[0]

    def plain_value():
        body = json.loads(post_identity(fp, env.client_key, "user-2", [("plan", "enterprise")]))
        return next(f["feature_state_value"] for f in body["flags"] if f["feature"]["name"] == "plain_string")

    assert plain_value() == "hello-r0"
    assert plain_value() == "hello-r0"  # now cached
    write_atomic(paths[0], json.dumps(make_document(env.client_key, name="Env A", env_id=1001, revision=1)))
    wait_until(lambda: fp.flags(env.client_key) and any(
        f["feature_state_value"] == "hello-r1" for f in fp.flags(env.client_key)), WAIT, "new document served")
    # The first identity answer after the swap already comes from the new document.
    assert plain_value() == "hello-r1"


def test_gzip_answers_decompress_to_the_plain_answer(flagpole, tmp_path):
    import gzip

    envs = standard_envs()[:1]
    paths = write_documents(tmp_path / "docs", envs)
    fp = flagpole(local_config(paths, envs))
    fp.wait_ready(WAIT)
    key = envs[0].server_key
    body = {"identifier": "user-2", "traits": [{"trait_key": "plan", "trait_value": "enterprise"}]}
    plain = fp.post("/api/v1/identities/", body, key)
    assert plain.status == 200 and plain.header("content-encoding") is None
    assert len(plain.body) >= 1000  # large enough to be compressed
    for _ in range(2):  # the first compresses, the second is served from the cache
        r = fp.post("/api/v1/identities/", body, key, headers={"Accept-Encoding": "gzip"})
        assert r.status == 200 and r.header("content-encoding") == "gzip", r.headers
        assert gzip.decompress(r.body) == plain.body
