"""OFREP caching (docs/ofrep.md, ETags and `If-None-Match`): byte-stable bodies, ETags
that depend on exactly the inputs that matter, conditional requests, revisions."""

from __future__ import annotations

import copy
import json
import time

import pytest

import fixtures as fx
from ofrep_support import (
    BULK,
    EXPOSE,
    HIDE,
    MAIN,
    OK_CACHE,
    ORIGIN,
    ETAG,
    flag_path,
    ok_bulk,
    ok_json,
    ok_single,
    post,
)
from serve_harness import Env, Upstream, upstream_config, wait_until

PRO = {"targetingKey": "u1", "plan": "pro"}

# (path, context, key): a spread of requests whose answers must be reproducible.
REQUESTS = [
    (BULK, None, MAIN.server_key),
    (BULK, None, MAIN.client_key),
    (BULK, PRO, MAIN.server_key),
    (BULK, PRO, MAIN.client_key),
    (BULK, {"targetingKey": fx.OVERRIDE_USER, "level": 1}, MAIN.server_key),
    (BULK, {"targetingKey": "mv-user-1", "traits": {"plan": "free"}}, HIDE.client_key),
    (flag_path("seg_feat"), PRO, MAIN.server_key),
    (flag_path("mv"), {"targetingKey": "mv-user-1"}, MAIN.client_key),
    (flag_path("text_off"), None, MAIN.server_key),
    (flag_path("a/b"), None, HIDE.server_key),
]


FRESHNESS_WAIT = 60  # seconds: `ofrep.freshness_wait_ms` where a test relies on it

def snapshot(fp, requests=REQUESTS) -> list[tuple]:
    out = []
    for path, ctx, key in requests:
        r = post(fp, path, {} if ctx is None else {"context": ctx}, key=key)
        body = ok_json(r)
        if path == BULK:
            ok_bulk(r)
        else:
            assert isinstance(body, dict) and "key" in body, r
        out.append((r.body, r.header("etag")))
    return out


def assert_same(got: list[tuple], want: list[tuple], requests, what: str) -> None:
    problems = []
    for (path, ctx, key), (b1, e1), (b0, e0) in zip(requests, got, want):
        if e1 != e0:
            problems.append(f"{path} {ctx} {key}: ETag {e0} → {e1}")
        if b1 != b0:
            i = next((i for i, (x, y) in enumerate(zip(b0, b1)) if x != y), min(len(b0), len(b1)))
            problems.append(f"{path} {ctx} {key}: body differs at byte {i}: "
                            f"{b0[max(0, i - 80):i + 80]!r} → {b1[max(0, i - 80):i + 80]!r}")
    assert not problems, f"{what}:\n" + "\n".join(problems)


def etag(fp, path: str, ctx, key: str = MAIN.server_key, raw: bytes | None = None) -> str:
    if raw is not None:
        r = post(fp, path, key=key, raw=raw, headers={"Content-Type": "application/json"})
    else:
        r = post(fp, path, {} if ctx is None else {"context": ctx}, key=key)
    ok_json(r)
    return r.header("etag")


# --------------------------------------------------------------------------------------------
# Line 13: reproducible bodies and ETags, across processes and restarts
# --------------------------------------------------------------------------------------------


def test_identical_requests_identical_answers(srv, main_setup, start_flagpole, tmp_path):
    first = snapshot(srv)
    assert_same(snapshot(srv), first, REQUESTS, "the same process answered the same request differently")
    assert len({e for _, e in first}) == len(first), "different requests must not share an ETag"

    replica = start_flagpole(config=main_setup.config, workdir=tmp_path / "replica", serving_key=MAIN.server_key)
    assert_same(snapshot(replica), first, REQUESTS, "two processes on the same documents disagree")
    port = replica.port
    assert replica.stop() == 0
    restarted = start_flagpole(config=main_setup.config, workdir=tmp_path / "replica", port=port,
                               serving_key=MAIN.server_key)
    assert_same(snapshot(restarted), first, REQUESTS, "a restarted process answers differently")


# --------------------------------------------------------------------------------------------
# Line 14: what changes an ETag
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [pytest.param(BULK, id="bulk"), pytest.param(flag_path("typed_trait"), id="single")])
def test_etag_inputs(srv, path):
    base = {"targetingKey": "u1", "plan": "pro", "level": 1}
    e = etag(srv, path, base)

    # Same inputs after the context is normalised → same ETag.
    same = [
        {"level": 1, "plan": "pro", "targetingKey": "u1"},
        dict(base, address={"city": "Paris"}, tags=["a", 1], nothing=None),
        {"targetingKey": "u1", "traits": {"plan": "pro", "level": 1}},
        {"targetingKey": "u1", "plan": "pro", "traits": {"level": 1, "deep": {"x": [1]}}},
        {"targetingKey": "u1", "plan": "pro", "level": 1, "traits": {"plan": "free"}},  # flat wins
    ]
    for ctx in same:
        assert etag(srv, path, ctx) == e, ctx
    raw = json.dumps({"extra": [1, 2], "context": base, "flags": "x"}).encode()
    assert etag(srv, path, None, raw=raw) == e, "members other than context are ignored"
    spaced = b'{ "context" : { "level" : 1 , "targetingKey" : "u1" , "plan" : "pro" } }'
    assert etag(srv, path, None, raw=spaced) == e

    # Without an identity, traits are ignored: all these are the empty context.
    empty = etag(srv, path, None)
    for ctx in ({}, {"plan": "pro"}, {"targetingKey": ""}, {"targetingKey": None, "plan": "x"},
                {"traits": {"plan": "pro"}}):
        assert etag(srv, path, ctx) == empty, ctx
    assert empty != e

    # A change to a used attribute (value, type, presence) → another ETag.
    changed = [
        dict(base, targetingKey="u2"),
        dict(base, targetingKey="U1"),
        dict(base, plan="free"),
        dict(base, level="1"),
        dict(base, level=True),
        dict(base, level=2),
        dict(base, age=31),
        {"targetingKey": "u1", "plan": "pro"},
    ]
    etags = [etag(srv, path, ctx) for ctx in changed]
    for ctx, got in zip(changed, etags):
        assert got != e, f"ETag unchanged for {ctx}"
    assert len(set(etags)) == len(etags), "distinct inputs share an ETag"
    # The key kind is an input too (client keys see other metadata).
    assert etag(srv, path, base, key=MAIN.client_key) != e

    # Equal ETags must mean equal bodies: 1 and 1.0 evaluate differently (str() is "1" vs
    # "1.0"), so their ETags must differ.
    want_int = fx.expected_items(MAIN.document, base, server=True)["typed_trait"]["value"]
    want_float = fx.expected_items(MAIN.document, dict(base, level=1.0), server=True)["typed_trait"]["value"]
    assert (want_int, want_float) == ("int-one", "other")
    r_int = post(srv, path, {"context": base}, key=MAIN.server_key)
    r_float = post(srv, path, raw=b'{"context":{"targetingKey":"u1","plan":"pro","level":1.0}}', key=MAIN.server_key)
    assert r_int.body != r_float.body
    assert r_int.header("etag") != r_float.header("etag"), "different bodies behind one ETag"


def test_etag_is_per_flag_and_per_endpoint(srv):
    tags = {etag(srv, flag_path(n), PRO) for n in ("flag_on", "flag_off", "text", "seg_feat")}
    tags.add(etag(srv, BULK, PRO))
    assert len(tags) == 5


# --------------------------------------------------------------------------------------------
# Line 15: conditional requests
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [pytest.param(BULK, id="bulk"), pytest.param(flag_path("seg_feat"), id="single")])
@pytest.mark.parametrize("ctx", [pytest.param(None, id="env-level"), pytest.param(PRO, id="identity")])
def test_if_none_match(srv, path, ctx):
    body = {} if ctx is None else {"context": ctx}
    first = post(srv, path, body, key=MAIN.server_key)
    ok_json(first)
    tag = first.header("etag")
    assert ETAG.match(tag)
    opaque = tag[2:]  # "x"
    bare = opaque.strip('"')  # x
    for inm in (tag, opaque, bare, f'W/{opaque}'):
        r = post(srv, path, body, key=MAIN.server_key, headers={"If-None-Match": inm, "Origin": ORIGIN})
        assert r.status == 304, (inm, r)
        assert r.body == b"", r
        assert r.header("etag") == tag, r
        assert r.header("cache-control") == OK_CACHE, r
        assert r.header("access-control-allow-origin") == ORIGIN, r
        assert r.header("access-control-expose-headers") == EXPOSE, r
    # Stale, wildcard, or the ETag of another context → a full 200.
    other = {"context": {"targetingKey": "u9", "plan": "free"}}
    for inm, b in (('W/"00000000000000000000000000000000"', body), ("*", body), (tag, other)):
        r = post(srv, path, b, key=MAIN.server_key, headers={"If-None-Match": inm})
        ok_json(r)
        assert r.body, r
    # The other key kind does not revalidate with this ETag either.
    r = post(srv, path, body, key=MAIN.client_key, headers={"If-None-Match": tag})
    assert r.status == 200, r


# --------------------------------------------------------------------------------------------
# Line 16: revisions
# --------------------------------------------------------------------------------------------

REV = Env("ofrep_rev_client", "ser.ofrep_rev_server", fx.make_document("ofrep_rev_client", env_id=4010))
REV_REQUESTS = [
    (BULK, None, REV.server_key),
    (BULK, None, REV.client_key),
    (BULK, PRO, REV.server_key),
    (flag_path("flag_on"), None, REV.client_key),
    (flag_path("flag_on"), PRO, REV.server_key),
    (flag_path("text"), PRO, REV.server_key),
]


def bulk_metadata(fp, key: str = REV.server_key) -> dict:
    r = post(fp, BULK, {}, key=key)
    return ok_json(r)["metadata"]


def test_revisions(start_flagpole, tmp_path):
    upstream = Upstream().start()
    try:
        doc0 = REV.document
        upstream.set_document(REV.server_key, doc0)
        fp = start_flagpole(config=upstream_config(upstream, [REV]), workdir=tmp_path / "rev",
                            serving_key=REV.server_key)
        rev0 = fx.revision_of(doc0)
        assert bulk_metadata(fp) == {"version": rev0, "lastModified": fx.last_modified_of(doc0)}
        assert bulk_metadata(fp, REV.client_key)["version"] == rev0
        s0 = snapshot(fp, REV_REQUESTS)

        # Identical re-fetches (the same bytes, then the same document with its members in
        # another order) change nothing.
        reordered = json.loads(json.dumps(doc0), object_pairs_hook=lambda pairs: dict(reversed(pairs)))
        assert json.dumps(reordered) != json.dumps(doc0) and fx.revision_of(reordered) == rev0
        for document, what in ((doc0, "the same bytes"), (reordered, "the same document, members reordered")):
            upstream.set_document(REV.server_key, document)
            upstream.wait_for_requests(2, REV.server_key, timeout=10)
            assert bulk_metadata(fp)["version"] == rev0, what
            # Same rev, so same ETags: the bodies must be the same bytes too (equal ETags
            # mean equal bodies), object values included.
            assert_same(snapshot(fp, REV_REQUESTS), s0, REV_REQUESTS, f"re-fetching {what} changed answers")

        # A new revision: metadata.version and every ETag change, even where the body does not.
        doc1 = fx.make_document("ofrep_rev_client", env_id=4010, revision=1)
        rev1 = fx.revision_of(doc1)
        assert rev1 != rev0
        upstream.set_document(REV.server_key, copy.deepcopy(doc1))
        wait_until(lambda: bulk_metadata(fp)["version"] == rev1, 60, "the new revision was never served")
        assert bulk_metadata(fp) == {"version": rev1, "lastModified": fx.last_modified_of(doc1)}
        s1 = snapshot(fp, REV_REQUESTS)
        for (path, ctx, key), (b0, e0), (b1, e1) in zip(REV_REQUESTS, s0, s1):
            assert e0 != e1, f"ETag unchanged by a new revision: {path} {ctx} {key}"
            if path == flag_path("flag_on"):
                assert b0 == b1
        assert ok_single(post(fp, flag_path("text"), {"context": PRO}, key=REV.server_key), "text")["value"] == "Hello r1"
        # The old ETag is stale now.
        r = post(fp, BULK, {}, key=REV.server_key, headers={"If-None-Match": s0[0][1]})
        assert r.status == 200 and r.header("etag") == s1[0][1], r
    finally:
        upstream.stop()


def test_freshness_hints(start_flagpole, tmp_path):
    """`flagConfigEtag` alone never yields a 304; a newer `flagConfigLastModified` makes a
    lagging replica (here: one that would not poll for ten minutes) fetch and serve the newer
    document within the freshness wait (here 60 s, so that a busy machine cannot make the fetch
    miss it; it ends as soon as the fetch does)."""
    upstream = Upstream().start()
    try:
        doc0 = REV.document
        upstream.set_document(REV.server_key, doc0)
        fp = start_flagpole(config=upstream_config(upstream, [REV], api_poll_frequency_seconds=600,
                                                   ofrep={"freshness_wait_ms": FRESHNESS_WAIT * 1000}),
                            workdir=tmp_path / "fresh", serving_key=REV.server_key)
        rev0 = fx.revision_of(doc0)
        first = post(fp, BULK, {}, key=REV.server_key)
        etag0 = first.header("etag")
        assert ok_json(first)["metadata"]["version"] == rev0

        # The current ETag plus a flagConfigEtag naming another revision: still a 304 decision
        # on the ETag alone; the hint only starts a fetch in the background.
        before = upstream.count(REV.server_key)
        r = post(fp, BULK + "?flagConfigEtag=0123456789abcdef0123456789abcdef", {},
                 key=REV.server_key, headers={"If-None-Match": etag0})
        assert r.status == 304, r
        wait_until(lambda: upstream.count(REV.server_key) > before, 60, "the hint started no fetch")

        # Another replica already serves revision 1; this one has not polled it.
        doc1 = fx.make_document("ofrep_rev_client", env_id=4010, revision=1)
        upstream.set_document(REV.server_key, copy.deepcopy(doc1))
        time.sleep(1.1)  # past the once-a-second limit on forced fetches (a rule about time)
        assert bulk_metadata(fp)["version"] == rev0, "test precondition: the replica lags"
        # An RFC 3339 hint that is not newer changes nothing: no fetch, so the lagging revision
        # is still the answer (a fetch, waited for or not, would bring revision 1).
        before = upstream.count(REV.server_key)
        r = post(fp, BULK + "?flagConfigLastModified=2001-01-01T00:00:00Z", {}, key=REV.server_key)
        assert ok_json(r)["metadata"]["version"] == rev0, r
        assert upstream.count(REV.server_key) == before, "an older hint started a fetch"
        # A newer one fetches at once and waits for it: the answer is already revision 1.
        newer = fx.last_modified_of(doc1)
        r = post(fp, BULK + f"?flagConfigLastModified={newer}", {}, key=REV.server_key)
        assert ok_json(r)["metadata"]["version"] == fx.revision_of(doc1), r
    finally:
        upstream.stop()
