"""Unleash Edge's offline mode on Flagpole: `flagpole serve --unleash-features FILE` with client and
frontend tokens. The client API (`/api/client/features`: token scopes, query filters, ETag and
304), the frontend API (`/api/frontend`, `/api/proxy`: context from the query or a POST body, the
caller's address as `remoteAddress`), SDK registrations and metrics, Edge's backstage probes, the
statuses Edge gives a missing, unknown or wrong-kind token, CORS, hot reload, and a broken file
(refused at start naming the JSON path; after start, the last good toggles kept).
"""

from __future__ import annotations

import re
import subprocess

from conftest import (CLIENT_TOKEN, FRONTEND_TOKEN, PROJECT_TOKEN, TOGGLES, binary_path,
                      write_toggles)
from loopback import EVENT_TIMEOUT, wait_until

CLIENT = "/api/client/features"
FRONTEND = "/api/frontend"


def names(body: dict, member: str = "features") -> list[str]:
    return sorted(t["name"] for t in body[member])


def auth(token: str) -> dict:
    return {"Authorization": token}


# -- client API -------------------------------------------------------------------------------


def test_client_features_with_a_client_token(edge):
    r = edge.get(CLIENT, headers=auth(CLIENT_TOKEN))
    assert r.status == 200, r
    assert r.header("content-type") == "application/json"
    body = r.json()
    assert names(body) == ["alpha", "beta", "gamma", "off", "office"]
    assert body["version"] == 2
    assert r.header("etag")
    # As the SDKs also send it.
    assert edge.get(CLIENT, headers=auth("Bearer " + CLIENT_TOKEN)).json() == body


def test_if_none_match_is_a_304(edge):
    etag = edge.get(CLIENT, headers=auth(CLIENT_TOKEN)).header("etag")
    r = edge.get(CLIENT, headers={**auth(CLIENT_TOKEN), "If-None-Match": etag})
    assert r.status == 304, r
    assert r.body == b""
    assert r.header("etag") == etag
    # Another scope is another body, with its own tag.
    other = edge.get(CLIENT, headers={**auth(PROJECT_TOKEN), "If-None-Match": etag})
    assert other.status == 200 and other.header("etag") != etag


def test_scopes_and_query_filters(edge):
    assert names(edge.get(CLIENT, headers=auth(PROJECT_TOKEN)).json()) == ["gamma"]
    # `project` narrows a token for every project, and cannot widen a scoped one.
    assert names(edge.get(CLIENT + "?project=other", headers=auth(CLIENT_TOKEN)).json()) == ["gamma"]
    assert names(edge.get(CLIENT + "?project=default", headers=auth(PROJECT_TOKEN)).json()) == ["gamma"]
    assert names(edge.get(CLIENT + "?namePrefix=of", headers=auth(CLIENT_TOKEN)).json()) == ["off", "office"]


def test_one_client_toggle(edge):
    r = edge.get(CLIENT + "/gamma", headers=auth(CLIENT_TOKEN))
    assert r.status == 200, r
    assert r.json()["variants"][0]["name"] == "blue"
    assert edge.get(CLIENT + "/alpha", headers=auth(PROJECT_TOKEN)).status == 404
    missing = edge.get(CLIENT + "/nope", headers=auth(CLIENT_TOKEN))
    assert missing.status == 404 and "nope" in missing.json()["message"]


def test_token_refusals_are_edges_403(edge):
    cases = [
        (CLIENT, None), (CLIENT, "*:development.unknown"), (CLIENT, "not a token"),
        (CLIENT, FRONTEND_TOKEN), (FRONTEND, CLIENT_TOKEN), (FRONTEND, None), ("/api/proxy", CLIENT_TOKEN),
    ]
    for path, token in cases:
        r = edge.get(path, headers=auth(token) if token else {})
        assert r.status == 403, (path, token, r)
        assert r.json()["status"] == "forbidden" and r.json()["message"], r
    assert "frontend token" in edge.get(CLIENT, headers=auth(FRONTEND_TOKEN)).json()["message"]


# -- frontend API -----------------------------------------------------------------------------


def test_frontend_evaluates_for_the_query_context(edge):
    h = auth(FRONTEND_TOKEN)
    r = edge.get(FRONTEND, headers=h)
    assert r.status == 200, r
    # The frontend token sees project `default` only; `office` wants 10.1.2.3, and the caller is
    # 127.0.0.1.
    assert names(r.json(), "toggles") == ["alpha"]
    toggle = r.json()["toggles"][0]
    assert toggle == {"name": "alpha", "enabled": True, "impressionData": True,
                      "variant": {"name": "disabled", "enabled": False}}
    r = edge.get(FRONTEND + "?userId=u1&remoteAddress=10.1.2.3", headers=h)
    assert names(r.json(), "toggles") == ["alpha", "beta", "office"]
    assert names(edge.get("/api/proxy?userId=u2", headers=h).json(), "toggles") == ["alpha", "beta"]


def test_frontend_post_body(edge):
    h = auth(FRONTEND_TOKEN)
    r = edge.post(FRONTEND, {"userId": "u1", "properties": {"tier": "gold"}}, headers=h)
    assert r.status == 200, r
    assert names(r.json(), "toggles") == ["alpha", "beta"]
    assert names(edge.post(FRONTEND, {"context": {"userId": "u2"}}, headers=h).json(), "toggles") == ["alpha", "beta"]
    bad = edge.post(FRONTEND, "[1, 2", headers={**h, "Content-Type": "application/json"})
    assert bad.status == 400 and bad.json()["message"], bad


def test_one_frontend_toggle(edge):
    h = auth(FRONTEND_TOKEN)
    off = edge.get(FRONTEND + "/features/off", headers=h)
    assert off.status == 200, off
    assert off.json()["enabled"] is False
    assert edge.get("/api/proxy/features/beta?userId=u1", headers=h).json()["enabled"] is True
    # Another project's toggle is not this token's.
    assert edge.get(FRONTEND + "/features/gamma", headers=h).status == 404


# -- registrations, metrics, probes, CORS ------------------------------------------------------


def test_register_and_metrics_are_accepted(edge):
    bucket = {"start": "2026-01-01T00:00:00Z", "stop": "2026-01-01T00:01:00Z",
              "toggles": {"alpha": {"yes": 3, "no": 1, "variants": {}}}}
    assert edge.post("/api/client/register", {"appName": "a", "instanceId": "i", "strategies": [],
                                              "started": "2026-01-01T00:00:00Z", "interval": 15000},
                     headers=auth(CLIENT_TOKEN)).status == 202
    assert edge.post("/api/client/metrics", {"appName": "a", "instanceId": "i", "bucket": bucket},
                     headers=auth(CLIENT_TOKEN)).status == 202
    assert edge.post("/api/frontend/client/metrics", {"appName": "web", "instanceId": "b", "bucket": bucket},
                     headers=auth(FRONTEND_TOKEN)).status == 202
    # As Edge: a bucket may be left out; JSON of another shape is a 422, text that is not JSON a 400.
    assert edge.post("/api/client/metrics", {"appName": "a"}, headers=auth(CLIENT_TOKEN)).status == 202
    bad = edge.post("/api/client/metrics", {"appName": "a", "bucket": []}, headers=auth(CLIENT_TOKEN))
    assert bad.status == 422 and "$.bucket" in bad.json()["message"], bad
    bad = edge.post("/api/client/register", {"instanceId": "i"}, headers=auth(CLIENT_TOKEN))
    assert bad.status == 422 and "$.appName" in bad.json()["message"], bad
    bad = edge.post("/api/client/register", "{", headers={**auth(CLIENT_TOKEN), "Content-Type": "application/json"})
    assert bad.status == 400 and bad.json()["message"], bad
    # A body declared as another type is Edge's 415; one declared as nothing is read as JSON.
    form = edge.post("/api/client/metrics", "appName=a", headers={**auth(CLIENT_TOKEN),
                     "Content-Type": "application/x-www-form-urlencoded"})
    assert form.status == 415 and "application/json" in form.json()["message"], form
    assert edge.post("/api/client/metrics", '{"appName": "a"}', headers=auth(CLIENT_TOKEN)).status == 202
    assert edge.post("/api/client/metrics", {"appName": "a", "bucket": bucket},
                     headers=auth(FRONTEND_TOKEN)).status == 403
    assert edge.get("/api/client/metrics", headers=auth(CLIENT_TOKEN)).status == 405
    metrics = edge.get("/metrics").body.decode()
    assert 'route="unleash_metrics"' in metrics and 'route="unleash_client"' in metrics


def test_backstage_probes(edge):
    assert edge.get("/internal-backstage/health").json() == {"status": "OK"}
    assert edge.get("/internal-backstage/ready").json() == {"status": "READY"}


def test_cors_as_the_other_doors(edge):
    origin = {"Origin": "https://app.test"}
    r = edge.get(FRONTEND, headers={**auth(FRONTEND_TOKEN), **origin})
    assert r.header("access-control-allow-origin") == "https://app.test"
    pre = edge.request("OPTIONS", FRONTEND, headers={**origin, "Access-Control-Request-Method": "GET",
                                                     "Access-Control-Request-Headers": "authorization"})
    assert pre.status == 200, pre
    assert pre.header("access-control-allow-headers") == "authorization"


def test_tokens_never_reach_the_log(edge):
    edge.get(CLIENT, headers=auth(CLIENT_TOKEN))
    log = edge.stderr_text()
    assert "Unleash toggles loaded" in log
    for token in (CLIENT_TOKEN, PROJECT_TOKEN, FRONTEND_TOKEN):
        assert token.split(".", 1)[1] not in log


# -- files: hot reload, refusals ---------------------------------------------------------------


def test_hot_reload_and_a_broken_file_keeps_the_last_good(tmp_path, serve_unleash):
    path = tmp_path / "features.json"
    write_toggles(path, TOGGLES)
    fp = serve_unleash(path)
    h = auth(CLIENT_TOKEN)
    first = fp.get(CLIENT, headers=h)
    changed = {**TOGGLES, "features": TOGGLES["features"] + [
        {"name": "delta", "project": "default", "enabled": True, "strategies": []}]}
    write_toggles(path, changed)
    wait_until(lambda: "delta" in names(fp.get(CLIENT, headers=h).json()), EVENT_TIMEOUT,
               "the new toggle was never served")
    second = fp.get(CLIENT, headers=h)
    assert second.header("etag") != first.header("etag")
    assert fp.get(CLIENT, headers={**h, "If-None-Match": first.header("etag")}).status == 200

    broken = {**TOGGLES, "features": [{"name": "x", "enabled": "yes"}]}
    write_toggles(path, broken)
    wait_until(lambda: "Unleash features file refused" in fp.stderr_text(), EVENT_TIMEOUT,
               "the broken file was never refused")
    assert "$.features[0]" in fp.stderr_text()
    assert fp.get(CLIENT, headers=h).json() == second.json()
    metrics = fp.get("/metrics").body.decode()
    # A write may be seen as more than one change: at least one each.
    assert re.search(r'flagpole_unleash_reloads_total\{feed="files",result="refused"\} [1-9]', metrics), metrics
    assert re.search(r'flagpole_unleash_reloads_total\{feed="files",result="taken"\} [1-9]', metrics), metrics
    assert 'flagpole_unleash_toggles{feed="files"} 6' in metrics
    write_toggles(path, "{not json")
    wait_until(lambda: fp.stderr_text().count("Unleash features file refused") >= 2, EVENT_TIMEOUT,
               "the unreadable file was never refused")
    assert fp.get(CLIENT, headers=h).json() == second.json()


def test_a_broken_file_stops_the_start_and_check(tmp_path):
    path = tmp_path / "features.json"
    write_toggles(path, {"version": 2, "features": [{"name": "x", "enabled": True, "strategies": 3}]})
    for command in (["serve", "--port", "0"], ["check"]):
        proc = subprocess.run([str(binary_path()), *command, "--unleash-features", str(path),
                               "--unleash-client-token", CLIENT_TOKEN], cwd=tmp_path,
                              capture_output=True, text=True, timeout=30)
        assert proc.returncode != 0, proc
        assert str(path) in proc.stderr and "$.features[0]" in proc.stderr, proc.stderr
        assert CLIENT_TOKEN not in proc.stderr + proc.stdout


def test_a_bad_token_stops_the_start_without_showing_it(tmp_path):
    path = tmp_path / "features.json"
    write_toggles(path, TOGGLES)
    proc = subprocess.run([str(binary_path()), "check", "--unleash-features", str(path),
                           "--unleash-frontend-token", "nocolonsecret"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2, proc
    assert "unleash.frontend_tokens[0]" in proc.stderr and "nocolonsecret" not in proc.stderr
