"""`proxy_key` discovery and usage reporting (docs/serve.md, `proxy_key`), against a
real HTTP server standing in for the Flagsmith API's proxy endpoints: `GET /proxy/config/` (the listing),
`GET /environment-document/` (per server key, only with the right `X-Proxy-Key`) and
`POST /proxy/usage/` (recorded). Environments are added, rotated and removed as the listing says;
configured pairs stay; a broken listing changes nothing; usage batches carry an
`Idempotency-Key`, are retried on 5xx with the same key and dropped on 4xx."""

from __future__ import annotations

import json
import socket

import pytest

from documents import make_document
from serve_harness import HOST, JsonHandler, ScriptedApi, wait_until

PROXY_KEY = "proxy-secret-key"
POLL = 1  # the shortest poll period Flagpole accepts


class ProxyApi(ScriptedApi):
    """The Flagsmith API's proxy endpoints, scripted by the test."""

    def __init__(self) -> None:
        super().__init__()
        self.listing: list = []
        self.listing_mode = "ok"  # ok | 500 | garbage
        self.usage_mode = "ok"  # ok | 500 | 400
        self.documents: dict[str, dict] = {}  # server key -> document
        self.usage: list[tuple[dict, list]] = []  # (headers, rows) of every usage POST
        self.delivered: list[list] = []  # rows of the POSTs answered 2xx
        self.fetch_keys: list[tuple[str, str]] = []  # (X-Environment-Key, X-Proxy-Key)
        self.close_connections = False  # answer with `Connection: close` (no pooled connection)
        self.listing_requests = 0  # GET /proxy/config/ answered
        api = self

        class Handler(JsonHandler):
            def _send(self, status: int, body: bytes, *, close: bool = False) -> None:
                super()._send(status, body, close=close or api.close_connections)

            def do_GET(self) -> None:  # noqa: N802
                with api.lock:
                    if self.path == "/api/v1/proxy/config/":
                        api.listing_requests += 1
                        if self.headers.get("X-Proxy-Key") != PROXY_KEY:
                            return self._send(401, b'{"detail":"bad proxy key"}')
                        if api.listing_mode == "500":
                            return self._send(500, b'{"detail":"boom"}')
                        if api.listing_mode == "garbage":
                            return self._send(200, b"<html>oops")
                        return self._send(200, json.dumps(api.listing).encode())
                    if self.path == "/api/v1/environment-document/":
                        key = self.headers.get("X-Environment-Key", "")
                        api.fetch_keys.append((key, self.headers.get("X-Proxy-Key", "")))
                        doc = api.documents.get(key)
                        if doc is None or self.headers.get("X-Proxy-Key") != PROXY_KEY:
                            return self._send(401, b'{"detail":"invalid key"}')
                        return self._send(200, json.dumps(doc).encode())
                self._send(404, b"{}")

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with api.lock:
                    if self.path != "/api/v1/proxy/usage/":
                        return self._send(404, b"{}")
                    rows = json.loads(body)
                    api.usage.append(({k.lower(): v for k, v in self.headers.items()}, rows))
                    mode = api.usage_mode
                    if mode == "ok":
                        api.delivered.append(rows)
                self._send({"ok": 202, "500": 500, "400": 400}[mode], b"{}")

        self.serve(Handler)


def listed(client_key: str, *keys: tuple[str, bool, str | None]) -> dict:
    return {"client_side_key": client_key,
            "server_side_keys": [{"key": k, "active": a, "expires_at": e} for k, a, e in keys]}


@pytest.fixture
def api():
    server = ProxyApi()
    yield server
    server.stop()


def start(flagpole, api, **extra):
    config = {"proxy_key": PROXY_KEY, "api_url": api.api_url, "api_poll_frequency_seconds": POLL,
              "flagpole": {"usage_report_interval_seconds": 0.5}}
    config.update(extra)
    return flagpole(config=config, wait=False)


def status(fp, path: str, key: str) -> int:
    try:
        return fp.get(path, key=key).status
    except OSError:
        return 0


def test_environments_follow_the_listing(flagpole, api):
    doc_a, doc_b = make_document("disc_a", env_id=7001), make_document("disc_b", env_id=7002)
    api.set(documents={"ser.a1": doc_a, "ser.a2": doc_a, "ser.b1": doc_b},
            listing=[listed("disc_a", ("ser.a1", True, None), ("ser.old", True, "2020-01-01T00:00:00Z"),
                            ("ser.off", False, None))])
    fp = start(flagpole, api)
    fp.wait_live()
    wait_until(lambda: status(fp, "/api/v1/flags/", "disc_a") == 200, 60, "discovered environment served")
    assert fp.get("/api/v1/environment-document/", key="ser.a1").status == 200
    for unusable in ("ser.old", "ser.off", "example_client_key"):
        assert fp.get("/api/v1/flags/", key=unusable).status == 401, unusable
    assert fp.get("/proxy/health/readiness").status == 200
    with api.lock:
        assert ("ser.a1", PROXY_KEY) in api.fetch_keys, api.fetch_keys

    # A new environment, and a key rotation on the first.
    api.set(listing=[listed("disc_a", ("ser.a1", False, None), ("ser.a2", True, None)),
                     listed("disc_b", ("ser.b1", True, None))])
    wait_until(lambda: status(fp, "/api/v1/flags/", "disc_b") == 200, 60, "second environment served")
    wait_until(lambda: status(fp, "/api/v1/environment-document/", "ser.a1") == 401, 60, "rotated-out key refused")
    assert fp.get("/api/v1/environment-document/", key="ser.a2").status == 200
    with api.lock:
        api.fetch_keys.clear()
    wait_until(lambda: any(k == "ser.a2" for k, _ in api.fetch_keys), 60, "fetches use the rotated key")

    # A broken listing changes nothing.
    for mode in ("500", "garbage"):
        api.set(listing_mode=mode)
        polled = len(api.fetch_keys)
        wait_until(lambda: len(api.fetch_keys) > polled + 2, 60, "polling goes on")
        assert fp.get("/api/v1/flags/", key="disc_a").status == 200
        assert fp.get("/api/v1/flags/", key="disc_b").status == 200
    api.set(listing_mode="ok")

    # Removal: the environment's keys stop resolving and its change streams end.
    stream = socket.create_connection((HOST, fp.port), timeout=10)
    stream.sendall(b"GET /ofrep/v1/events HTTP/1.1\r\nHost: x\r\nX-API-Key: disc_a\r\n\r\n")
    assert stream.recv(65536).startswith(b"HTTP/1.1 200"), "stream not opened"
    api.set(listing=[listed("disc_b", ("ser.b1", True, None))])
    wait_until(lambda: status(fp, "/api/v1/flags/", "disc_a") == 401, 60, "removed environment refused")
    assert fp.get("/api/v1/environment-document/", key="ser.a2").status == 401
    assert fp.get("/api/v1/flags/", key="disc_b").status == 200
    stream.settimeout(5)
    while stream.recv(65536):
        pass  # the rest of the stream, up to its end
    stream.close()


def test_configured_pairs_are_never_removed(flagpole, api):
    doc_c, doc_d = make_document("disc_c", env_id=7003), make_document("disc_d", env_id=7004)
    api.set(documents={"ser.c1": doc_c, "ser.d1": doc_d}, listing=[listed("disc_d", ("ser.d1", True, None))])
    fp = start(flagpole, api, environment_key_pairs=[{"server_side_key": "ser.c1", "client_side_key": "disc_c"}])
    fp.wait_live()
    wait_until(lambda: status(fp, "/api/v1/flags/", "disc_d") == 200, 60, "discovered environment served")
    wait_until(lambda: status(fp, "/api/v1/flags/", "disc_c") == 200, 60, "configured environment served")
    api.set(listing=[])
    wait_until(lambda: status(fp, "/api/v1/flags/", "disc_d") == 401, 60, "discovered environment removed")
    assert fp.get("/api/v1/flags/", key="disc_c").status == 200
    assert fp.get("/api/v1/environment-document/", key="ser.c1").status == 200


def test_no_environments_until_discovered(flagpole, api):
    api.set(listing_mode="500")
    fp = start(flagpole, api)
    fp.wait_live()
    assert fp.get("/proxy/health/readiness").status == 503
    assert fp.get("/api/v1/flags/", key="example_client_key").status == 401


def _rows(api) -> list:
    with api.lock:
        return list(api.usage)


def test_usage_reports(flagpole, api):
    doc = make_document("disc_u", env_id=7005)
    api.set(documents={"ser.u1": doc}, listing=[listed("disc_u", ("ser.u1", True, None))])
    fp = start(flagpole, api)
    fp.wait_live()
    wait_until(lambda: status(fp, "/api/v1/flags/", "disc_u") == 200, 60, "environment served")
    wait_until(lambda: _rows(api), 60, "first usage batch")  # the probe above

    def delivered_counts() -> dict:
        totals: dict = {}
        with api.lock:
            delivered = list(api.delivered)
        for rows in delivered:
            for row in rows:
                totals[row["resource"]] = totals.get(row["resource"], 0) + row["count"]
        return totals

    # Everything reported once, while the server answers 2xx.
    before = delivered_counts()
    for _ in range(3):
        assert fp.get("/api/v1/flags/", key="disc_u").status == 200
    for _ in range(2):
        assert fp.get("/api/v1/identities/?identifier=u1", key="disc_u").status == 200
    assert fp.get("/api/v1/environment-document/", key="ser.u1").status == 200
    want = {"flags": before.get("flags", 0) + 3, "identities": before.get("identities", 0) + 2,
            "environment-document": before.get("environment-document", 0) + 1}
    wait_until(lambda: delivered_counts() == want, 60, f"usage totals {want}")
    for headers, rows in _rows(api):
        assert headers.get("x-proxy-key") == PROXY_KEY
        assert len(headers.get("idempotency-key", "")) >= 16, headers
        assert headers.get("content-type", "").startswith("application/json")
        assert all(set(r) == {"client_side_key", "resource", "count"} and r["client_side_key"] == "disc_u"
                   and r["count"] > 0 for r in rows), rows
    keys = [h["idempotency-key"] for h, _ in _rows(api)]
    assert len(keys) == len(set(keys)), "a delivered batch was sent again"

    # 5xx: the same batch is retried with the same key, then delivered once.
    api.set(usage_mode="500")
    sent = len(_rows(api))
    assert fp.get("/api/v1/flags/", key="disc_u").status == 200
    wait_until(lambda: len(_rows(api)) >= sent + 2, 60, "retries")
    retried = _rows(api)[sent:]
    assert len({h["idempotency-key"] for h, _ in retried}) == 1, "a retry changed the Idempotency-Key"
    assert all(rows == retried[0][1] for _, rows in retried)
    api.set(usage_mode="ok")
    want["flags"] += 1
    wait_until(lambda: delivered_counts() == want, 60, "the retried batch delivered")
    assert _rows(api)[-1][0]["idempotency-key"] == retried[0][0]["idempotency-key"]

    # 4xx: the batch is dropped, not sent again.
    api.set(usage_mode="400")
    sent = len(_rows(api))
    assert fp.get("/api/v1/flags/", key="disc_u").status == 200
    wait_until(lambda: len(_rows(api)) >= sent + 1, 60, "the refused batch")
    refused_key = _rows(api)[sent][0]["idempotency-key"]
    api.set(usage_mode="ok")
    assert fp.get("/api/v1/identities/?identifier=u2", key="disc_u").status == 200
    wait_until(lambda: any(r["resource"] == "identities" for r in _rows(api)[-1][1]) and len(_rows(api)) > sent + 1,
               10, "the next batch")
    later = [h["idempotency-key"] for h, _ in _rows(api)[sent + 1:]]
    assert refused_key not in later, "a batch refused with 4xx was sent again"
    assert all(r["resource"] != "flags" for _, rows in _rows(api)[sent + 1:] for r in rows), \
        "the dropped batch's counts were reported again"


def test_sigterm_reports_the_last_interval(flagpole, api):
    """Requests served just before SIGTERM reach upstream: the usage reporter's last batch runs
    after the drain, not at the moment the signal arrives."""
    doc = make_document("disc_t", env_id=7006)
    # No connection is kept open for the last report to reuse: it must connect during shutdown.
    api.set(documents={"ser.t1": doc}, listing=[listed("disc_t", ("ser.t1", True, None))],
            close_connections=True)
    # An interval far longer than the test: only the batch sent at shutdown can carry the counts.
    config = {"proxy_key": PROXY_KEY, "api_url": api.api_url, "api_poll_frequency_seconds": POLL,
              "flagpole": {"usage_report_interval_seconds": 3600}}
    fp = flagpole(config=config, wait=False)
    fp.wait_live()
    wait_until(lambda: status(fp, "/api/v1/flags/", "disc_t") == 200, 10, "environment served")
    for _ in range(4):
        assert fp.get("/api/v1/flags/", key="disc_t").status == 200
    for _ in range(3):
        assert fp.get("/api/v1/identities/?identifier=t1", key="disc_t").status == 200
    assert _rows(api) == [], "no batch is due before the interval"
    assert fp.stop() == 0
    totals: dict = {}
    with api.lock:
        delivered = list(api.delivered)
    for rows in delivered:
        for row in rows:
            assert row["client_side_key"] == "disc_t"
            totals[row["resource"]] = totals.get(row["resource"], 0) + row["count"]
    # The probe in wait_until above counts as flags too (at least one 200 before the loop).
    assert totals.get("identities") == 3, totals
    assert totals.get("flags", 0) >= 5, totals
