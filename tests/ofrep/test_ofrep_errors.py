"""OFREP errors and authentication (request bodies, key headers and kinds, error bodies and
codes, `Retry-After`; docs/ofrep.md), plus the 403 of disabled key kinds."""

from __future__ import annotations

import json
import re

import pytest

from ofrep_support import (
    BROKEN,
    BULK,
    MAIN,
    SINGLE,
    UNLOADED,
    assert_error,
    bulk,
    flag_path,
    ok_bulk,
    ok_single,
    post,
    single,
)
from serve_harness import REPO

ENDPOINTS = [pytest.param("single", id="single"), pytest.param("bulk", id="bulk")]
FLAG = "seg_feat"


def path_of(endpoint: str) -> str:
    return flag_path(FLAG) if endpoint == "single" else BULK


def error_key(endpoint: str) -> str | None:
    """The `key` an error body carries: the flag on the single endpoint, none on bulk."""
    return FLAG if endpoint == "single" else None


def padded_body(size: int) -> bytes:
    """A valid request body of exactly `size` bytes (an ignored member carries the padding)."""
    head = b'{"context":{"targetingKey":"u1","plan":"pro"},"pad":"'
    tail = b'"}'
    body = head + b"x" * (size - len(head) - len(tail)) + tail
    assert len(body) == size
    json.loads(body)
    return body


# --------------------------------------------------------------------------------------------
# Line 6: bad input
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_bad_input(srv, endpoint):
    path, ekey = path_of(endpoint), error_key(endpoint)

    def send(body=None, raw=None, headers=None):
        return post(srv, path, body, key=MAIN.server_key, raw=raw, headers=headers)

    # INVALID_CONTEXT: a targetingKey of another type, a context that is not an object, traits
    # over the limits (as POST /api/v1/identities/).
    for tk in (5, 1.5, True, {"id": "u1"}, ["u1"]):
        assert_error(send({"context": {"targetingKey": tk}}), 400, "INVALID_CONTEXT", key=ekey)
    for ctx in ([], "u1", 5, True):
        assert_error(send({"context": ctx}), 400, "INVALID_CONTEXT", key=ekey)
    assert_error(send({"context": {"targetingKey": "u" * 2001}}), 400, "INVALID_CONTEXT", key=ekey)
    body = assert_error(send({"context": {"targetingKey": "u1", "nickname": "n" * 2001}}), 400,
                        "INVALID_CONTEXT", key=ekey)
    assert "nickname" in body["errorDetails"], f"the error must name the member: {body}"
    body = assert_error(send({"context": {"targetingKey": "u1", "traits": {"bio": "b" * 2001}}}), 400,
                        "INVALID_CONTEXT", key=ekey)
    assert "bio" in body["errorDetails"], body
    assert_error(send({"context": {"targetingKey": "u1", "k" * 201: "v"}}), 400, "INVALID_CONTEXT", key=ekey)
    # The limits themselves are accepted (2,000 characters, not bytes; 200-character keys).
    ok = send({"context": {"targetingKey": "é" * 2000, "nickname": "é" * 2000, "k" * 200: "v"}})
    assert ok.status == 200, ok

    # PARSE_ERROR: not JSON, not an object, not UTF-8.
    for raw in (b"{", b'{"context":', b"not json", b"[1,2]", b'"context"', b"5", b"null",
                b'{"context":{"targetingKey":"\xff"}}'):
        assert_error(send(raw=raw, headers={"Content-Type": "application/json"}), 400, "PARSE_ERROR", key=ekey)

    # Body size: 65,536 bytes is the limit; one more → 413.
    assert send(raw=padded_body(65_536), headers={"Content-Type": "application/json"}).status == 200
    assert_error(send(raw=padded_body(65_537), headers={"Content-Type": "application/json"}), 413,
                 "GENERAL", key=ekey)

    # Content-Type is never checked: text/plain, a comma-joined list, none at all.
    want = send({"context": {"targetingKey": "u1", "plan": "pro"}})
    assert want.status == 200, want
    raw = json.dumps({"context": {"targetingKey": "u1", "plan": "pro"}}).encode()
    for ct in ("text/plain", "text/plain;charset=UTF-8", "application/json; charset=utf-8, application/json",
               "application/x-www-form-urlencoded", None):
        r = send(raw=raw, headers={"Content-Type": ct} if ct else {})
        assert r.status == 200 and r.body == want.body, (ct, r)
    if endpoint == "single":
        assert json.loads(want.body)["reason"] == "TARGETING_MATCH"
    else:
        assert ok_bulk(want)[FLAG]["reason"] == "TARGETING_MATCH"


def test_configured_body_limit(start_flagpole, main_setup, tmp_path):
    config = dict(main_setup.config, ofrep={"max_body_bytes": 1000})
    fp = start_flagpole(config=config, workdir=tmp_path / "limit", serving_key=MAIN.server_key)
    ct = {"Content-Type": "application/json"}
    assert post(fp, BULK, key=MAIN.server_key, raw=padded_body(1000), headers=ct).status == 200
    assert_error(post(fp, BULK, key=MAIN.server_key, raw=padded_body(1001), headers=ct), 413, "GENERAL")
    assert_error(post(fp, flag_path(FLAG), key=MAIN.server_key, raw=padded_body(1001), headers=ct), 413,
                 "GENERAL", key=FLAG)


# --------------------------------------------------------------------------------------------
# Line 7: require_targeting_key
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_require_targeting_key(srv, opts_srv, endpoint):
    path, ekey = path_of(endpoint), error_key(endpoint)
    for raw in (b"{}", b"", b'{"context":null}', b'{"context":{}}', b'{"context":{"plan":"pro"}}',
                b'{"context":{"targetingKey":""}}', b'{"context":{"targetingKey":null}}'):
        r = post(opts_srv, path, key=MAIN.server_key, raw=raw, headers={"Content-Type": "application/json"})
        assert_error(r, 400, "TARGETING_KEY_MISSING", key=ekey)
    r = post(opts_srv, path, {"context": {"targetingKey": "u1", "plan": "pro"}}, key=MAIN.server_key)
    assert r.status == 200, r
    # Off by default: the main server answers the same requests.
    assert post(srv, path, {}, key=MAIN.server_key).status == 200
    # A bad targetingKey is still INVALID_CONTEXT, not TARGETING_KEY_MISSING.
    assert_error(post(opts_srv, path, {"context": {"targetingKey": 7}}, key=MAIN.server_key), 400,
                 "INVALID_CONTEXT", key=ekey)


# --------------------------------------------------------------------------------------------
# Line 8: authentication
# --------------------------------------------------------------------------------------------

WWW_AUTH = 'Bearer realm="flagpole"'


def assert_401(resp, ekey):
    assert_error(resp, 401, "GENERAL", key=ekey)
    assert resp.header("www-authenticate") == WWW_AUTH, resp


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_authentication(srv, endpoint):
    path, ekey = path_of(endpoint), error_key(endpoint)
    ctx = {"context": {"targetingKey": "u1", "plan": "pro"}}

    def send(headers):
        return post(srv, path, ctx, headers=headers)

    # No key, an unknown key, an empty key, conflicting keys → 401.
    assert_401(send({}), ekey)
    assert_401(send({"X-API-Key": "no-such-key"}), ekey)
    assert_401(send({"X-API-Key": "ser.no_such_key"}), ekey)
    assert_401(send({"Authorization": "Bearer no-such-key"}), ekey)
    assert_401(send({"X-API-Key": MAIN.client_key, "Authorization": f"Bearer {MAIN.server_key}"}), ekey)
    assert_401(send({"X-API-Key": MAIN.server_key, "X-Environment-Key": UNLOADED.server_key}), ekey)
    assert_401(send({"Authorization": f"Bearer {MAIN.client_key}", "X-Environment-Key": "other"}), ekey)

    # Each header form alone, with both key kinds; the kind shows in the metadata.
    forms = [
        lambda k: {"X-API-Key": k},
        lambda k: {"x-api-key": k},
        lambda k: {"Authorization": f"Bearer {k}"},
        lambda k: {"Authorization": f"bearer {k}"},
        lambda k: {"Authorization": f"BEARER {k}"},
        lambda k: {"X-Environment-Key": k},
        lambda k: {"Authorization": k},
    ]
    by_kind = {}
    for server, k in ((True, MAIN.server_key), (False, MAIN.client_key)):
        bodies = {send(form(k)).body for form in forms}
        assert len(bodies) == 1, f"header forms disagree for {k}: {bodies}"
        r = send(forms[0](k))
        item = ok_single(r, FLAG) if endpoint == "single" else ok_bulk(r)[FLAG]
        assert ("flagsmithReason" in item["metadata"]) == server, item
        by_kind[server] = r.body
    assert by_kind[True] != by_kind[False]
    # The same key twice is not a conflict.
    same = send({"X-API-Key": MAIN.server_key, "Authorization": f"Bearer {MAIN.server_key}"})
    assert same.status == 200 and same.body == by_kind[True], same

    # A known key whose document is not loaded → 503 with Retry-After.
    for k in (UNLOADED.client_key, UNLOADED.server_key):
        r = send({"X-API-Key": k})
        assert_error(r, 503, "GENERAL", key=ekey)
        assert r.header("retry-after") == "5", r


def test_disabled_key_kinds_are_403(opts_srv, start_flagpole, main_setup, tmp_path):
    """`ofrep.client_keys` / `ofrep.server_keys`; the second server is configured through
    the `OFREP` environment variable."""
    ctx = {"targetingKey": "u1"}
    assert_error(single(opts_srv, FLAG, ctx, key=MAIN.client_key), 403, "GENERAL", key=FLAG)
    assert_error(bulk(opts_srv, ctx, key=MAIN.client_key), 403, "GENERAL")
    assert single(opts_srv, FLAG, ctx, key=MAIN.server_key).status == 200
    # Unknown keys are still 401, not 403.
    assert single(opts_srv, FLAG, ctx, key="nope").status == 401

    fp = start_flagpole(config=main_setup.config, env={"OFREP": json.dumps({"server_keys": False})},
                        workdir=tmp_path / "envvar", serving_key=MAIN.client_key)
    assert_error(single(fp, FLAG, key=MAIN.server_key), 403, "GENERAL", key=FLAG)
    assert_error(bulk(fp, key=MAIN.server_key), 403, "GENERAL")
    assert ok_single(single(fp, FLAG, key=MAIN.client_key), FLAG)["value"] == "default"
    # The Edge Proxy API is not affected.
    assert fp.get("/api/v1/flags/", MAIN.server_key).status == 200


# --------------------------------------------------------------------------------------------
# Line 19: Retry-After and 500s
# --------------------------------------------------------------------------------------------

INTERNALS = [
    re.compile(p, re.I)
    for p in (r"\.rs\b", r"panick", r"thread '", r"backtrace", r"regex", r"unclosed", r"unterminated",
              r"character (set|class)", r"RegexError",
              r"serde", r"src/", r"bad_regex", r"\(\[")
]


def assert_no_internals(srv, text: str) -> None:
    for pattern in INTERNALS:
        assert not pattern.search(text), f"{pattern.pattern!r} in {text!r}"
    for path in (REPO, srv.workdir, srv.config_path):  # no file system paths either
        assert str(path) not in text, text


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_retry_after_and_500(srv, endpoint):
    path, ekey = path_of(endpoint), error_key(endpoint)
    # Every Retry-After is an integer ≥ 1.
    seen = 0
    for k in (UNLOADED.client_key, UNLOADED.server_key):
        for hdrs in ({"X-API-Key": k}, {"Authorization": f"Bearer {k}"}):
            r = post(srv, path, {}, headers=hdrs)
            assert r.status == 503, r
            values = r.header_all("retry-after")
            assert len(values) == 1 and re.fullmatch(r"[1-9][0-9]*", values[0]), r
            seen += 1
    assert seen == 4

    # A document the engine cannot evaluate for this identity (an invalid regex in a segment that
    # overrides `guarded`): 500 GENERAL, revealing nothing of it.
    ctx = {"context": {"targetingKey": "u1", "email": "a@example.com"}}
    for k in (BROKEN.server_key, BROKEN.client_key):
        if endpoint == "single":
            r = post(srv, flag_path("guarded"), ctx, key=k)
            body = assert_error(r, 500, "GENERAL", key="guarded")
        else:
            r = post(srv, BULK, ctx, key=k)
            if r.status == 200:  # a per-item failure instead of a failed request
                items = ok_bulk(r)
                item = items["guarded"]
                assert set(item) == {"key", "errorCode", "errorDetails"}, item
                assert item["errorCode"] == "PARSE_ERROR", item
                assert items["plain"]["value"] == "fine", items
                body = item
            else:
                body = assert_error(r, 500, "GENERAL")
        assert_no_internals(srv, body["errorDetails"])
        assert r.header("retry-after") is None or re.fullmatch(r"[1-9][0-9]*", r.header("retry-after")), r
    # The same document evaluates fine where the bad regex is not reached.
    good = post(srv, flag_path("guarded"), {"context": {"targetingKey": "u1"}}, key=BROKEN.server_key)
    assert ok_single(good, "guarded")["value"] == "on"


def test_error_bodies_reveal_no_internals(srv):
    responses = [
        post(srv, SINGLE + "nope", {}, key=MAIN.server_key),
        post(srv, BULK, {}, key="ser.unknown"),
        post(srv, BULK, raw=b"{oops", key=MAIN.server_key),
        post(srv, BULK, {"context": {"targetingKey": 3}}, key=MAIN.server_key),
        post(srv, BULK, {}, key=UNLOADED.server_key),
    ]
    for r in responses:
        assert 400 <= r.status < 600, r
        assert_no_internals(srv, r.body.decode())
