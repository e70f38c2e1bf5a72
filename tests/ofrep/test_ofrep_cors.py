"""CORS on the OFREP endpoints (`allow_origins`, as for the Flagsmith API). The main server allows
one origin (ORIGIN)."""

from __future__ import annotations

import pytest

from ofrep_support import (
    BULK,
    EXPOSE,
    MAIN,
    ORIGIN,
    OTHER_ORIGIN,
    UNLOADED,
    flag_path,
    ok_json,
    post,
)
from serve_harness import http_request

PATHS = [pytest.param(BULK, id="bulk"), pytest.param(flag_path("flag_on"), id="single"),
         pytest.param(flag_path("a/b"), id="single-slash")]


def tokens(value: str | None) -> set[str]:
    return {t.strip().lower() for t in (value or "").split(",") if t.strip()}


def preflight(port: int, path: str, origin: str, headers: str):
    return http_request(port, "OPTIONS", path, {
        "Origin": origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": headers,
    })


@pytest.mark.parametrize("path", PATHS)
def test_cors(srv, path):
    # Preflight: 204, explicit methods, the requested header names echoed (no key needed).
    requested = "authorization, x-api-key, content-type, if-none-match"
    r = preflight(srv.port, path, ORIGIN, requested)
    assert r.status == 204, r
    assert r.header("access-control-allow-origin") == ORIGIN, r
    assert r.header("access-control-allow-methods") == "GET, POST, OPTIONS", r
    assert tokens(r.header("access-control-allow-headers")) >= tokens(requested), r
    assert "origin" in tokens(", ".join(r.header_all("vary"))), r
    custom = "x-environment-key, last-event-id, cache-control, x-tenant-id"
    r = preflight(srv.port, path, ORIGIN, custom)
    assert r.status == 204 and tokens(r.header("access-control-allow-headers")) >= tokens(custom), r

    # Every response exposes ETag and Retry-After: 200, 304 and errors alike.
    ok = post(srv, path, {}, key=MAIN.server_key, headers={"Origin": ORIGIN})
    ok_json(ok)
    responses = [
        ok,
        post(srv, path, {}, key=MAIN.server_key, headers={"Origin": ORIGIN, "If-None-Match": ok.header("etag")}),
        post(srv, path, {}, key="nope", headers={"Origin": ORIGIN}),
        post(srv, path, raw=b"{", key=MAIN.server_key, headers={"Origin": ORIGIN}),
        post(srv, path, {}, key=UNLOADED.server_key, headers={"Origin": ORIGIN}),
        post(srv, path, raw=b"{}" + b" " * 70_000, key=MAIN.server_key, headers={"Origin": ORIGIN}),
    ]
    assert [x.status for x in responses] == [200, 304, 401, 400, 503, 413], responses
    for x in responses:
        assert x.header("access-control-allow-origin") == ORIGIN, x
        assert x.header("access-control-expose-headers") == EXPOSE, x
        assert "origin" in tokens(", ".join(x.header_all("vary"))), x

    # A disallowed origin gets no Access-Control-Allow-Origin (preflight or not).
    r = preflight(srv.port, path, OTHER_ORIGIN, requested)
    assert r.header("access-control-allow-origin") is None, r
    r = post(srv, path, {}, key=MAIN.server_key, headers={"Origin": OTHER_ORIGIN})
    assert r.header("access-control-allow-origin") is None, r
