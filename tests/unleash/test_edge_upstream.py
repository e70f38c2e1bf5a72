"""Flagpole's edge mode against a real Unleash server (unleash-server 8.2.0 on PostgreSQL:
unleash_server.py): `flagpole serve --unleash-upstream URL` with the server's client and
frontend tokens. What the server serves is the reference: toggles made through its admin API
show through Flagpole as the server's own client API shows them, its changes reach Flagpole's
client and frontend answers, the official SDKs (Node `unleash-client` and `unleash-proxy-client`,
Python `UnleashClient`) read through Flagpole answer as the server's frontend API does, a server
that stops leaves Flagpole serving the last good toggles until it is back, SDK metrics sent to
Flagpole are counted once by the server, and a token the server refuses keeps Flagpole unready.

Each test names its toggles with a prefix of its own: the server lives for the whole session.
Every wait is for an event, with a generous timeout; no test asserts a speed.
"""

from __future__ import annotations

import re
import time
import urllib.parse

import pytest

from loopback import EVENT_TIMEOUT, wait_until
from unleash_sdks import (make_toggles, node_sdks, python_sdk, sdk_toggles, server_frontend_answers,
                          settled_frontend_answers)
from unleash_server import frontend_query, utc_now

CLIENT = "/api/client/features"
FRONTEND = "/api/frontend"
READY = "/internal-backstage/ready"


def auth(token: str) -> dict:
    return {"Authorization": token}


# -- what is compared ---------------------------------------------------------------------------


def _constraint(c: dict) -> dict:
    return {"contextName": c["contextName"], "operator": c["operator"], "values": sorted(c.get("values") or []),
            "value": c.get("value"), "inverted": bool(c.get("inverted")),
            "caseInsensitive": bool(c.get("caseInsensitive"))}


def _variant(v: dict) -> dict:
    return {"name": v["name"], "weight": v.get("weight"), "stickiness": v.get("stickiness"),
            "payload": v.get("payload")}


def projection(body: dict, prefix: str = "") -> dict[str, dict]:
    """What an SDK evaluates of a client-features body, by toggle name: whether it is on, its
    strategies (parameters, constraints, strategy variants) and its variants; fields that only
    describe the toggle (type, description, stale, ...) and the body's `meta` are left out."""
    out = {}
    for t in body["features"]:
        if not t["name"].startswith(prefix):
            continue
        out[t["name"]] = {
            "enabled": t["enabled"], "project": t.get("project"), "impressionData": bool(t.get("impressionData")),
            "strategies": [{"name": s["name"], "parameters": s.get("parameters") or {},
                            "constraints": [_constraint(c) for c in s.get("constraints") or []],
                            "variants": [_variant(v) for v in s.get("variants") or []],
                            "segments": s.get("segments") or []}
                           for s in t.get("strategies") or []],
            "variants": [_variant(v) for v in t.get("variants") or []],
        }
    return out


def flagpole_client(fp, token: str) -> dict:
    r = fp.get(CLIENT, headers=auth(token))
    assert r.status == 200, r
    return r.json()


def flagpole_frontend(fp, token: str, **context) -> set[str]:
    query = "&".join(f"{k}={v}" for k, v in context.items())
    r = fp.get(FRONTEND + ("?" + query if query else ""), headers=auth(token))
    assert r.status == 200, r
    return {t["name"] for t in r.json()["toggles"]}


def wait_same_as_server(fp, server, environment: str, prefix: str) -> dict:
    """Until Flagpole serves the toggles named `prefix…` as the server does for the same client
    token (both read again on each try); that projection."""
    token = server.client_tokens[environment]
    seen = {}

    def same():
        want = projection(server.client_features(environment), prefix)
        seen["flagpole"] = got = projection(flagpole_client(fp, token), prefix)
        seen["server"] = want
        return want if want and got == want else None

    try:
        return wait_until(same, EVENT_TIMEOUT, f"Flagpole never served the {environment} toggles as the server does")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nserver:   {seen.get('server')}\nflagpole: {seen.get('flagpole')}\n"
                             f"stderr:\n{fp.stderr_tail()}") from None


# -- (a) the same toggles -----------------------------------------------------------------------


def test_toggles_made_in_the_server_show_through_flagpole_as_the_server_serves_them(unleash_server, serve_upstream):
    s = unleash_server
    s.create_toggle("same-rollout", impression_data=True)
    s.add_strategy("same-rollout", "development", "flexibleRollout",
                   {"rollout": "40", "stickiness": "userId", "groupId": "same-rollout"},
                   constraints=[{"contextName": "tier", "operator": "IN", "values": ["gold", "silver"]},
                                {"contextName": "userId", "operator": "STR_STARTS_WITH", "values": ["u"],
                                 "caseInsensitive": True, "inverted": False}],
                   variants=[{"name": "blue", "weight": 1000, "weightType": "variable", "stickiness": "default",
                              "payload": {"type": "json", "value": '{"n": 1}'}}])
    s.add_strategy("same-rollout", "development", "userWithId", {"userIds": "u1,u2"})
    s.enable("same-rollout")
    s.create_toggle("same-production-only")
    s.add_strategy("same-production-only", "production", "default")
    s.enable("same-production-only", "production")
    s.create_toggle("same-off")

    fp = serve_upstream()
    dev = wait_same_as_server(fp, s, "development", "same-")
    prod = wait_same_as_server(fp, s, "production", "same-")
    # What the server made of the admin calls, so that equal is not equal on nothing.
    assert sorted(dev) == ["same-off", "same-production-only", "same-rollout"]
    assert dev["same-rollout"]["enabled"] and not dev["same-production-only"]["enabled"]
    assert [st["name"] for st in dev["same-rollout"]["strategies"]] == ["flexibleRollout", "userWithId"]
    assert dev["same-rollout"]["strategies"][0]["variants"][0]["payload"] == {"type": "json", "value": '{"n": 1}'}
    assert prod["same-production-only"]["enabled"] and not prod["same-rollout"]["enabled"]
    # Every client token's features were fetched: Edge's readiness probe says so.
    assert fp.get(READY).status == 200


# -- (b) changes flow ---------------------------------------------------------------------------


def test_a_change_in_the_server_reaches_flagpoles_client_and_frontend_answers(unleash_server, serve_upstream):
    s = unleash_server
    name = "change-me"
    s.create_toggle(name)
    sid = s.add_strategy(name, "development", "userWithId", {"userIds": "u1"})
    s.enable(name)
    fp = serve_upstream()
    token, frontend = s.client_tokens["development"], s.frontend_tokens["development"]

    def frontend_shows(on_for: set[str]) -> None:
        wait_until(lambda: {u for u in ("u1", "u2") if name in flagpole_frontend(fp, frontend, userId=u)} == on_for,
                   EVENT_TIMEOUT, f"Flagpole's frontend API never had {name} on for exactly {sorted(on_for)}")

    def client_enabled() -> bool | None:
        return next((t["enabled"] for t in flagpole_client(fp, token)["features"] if t["name"] == name), None)

    frontend_shows({"u1"})
    s.disable(name)
    wait_until(lambda: client_enabled() is False, EVENT_TIMEOUT, "the disable never reached Flagpole's client API")
    frontend_shows(set())
    s.enable(name)
    frontend_shows({"u1"})
    s.update_strategy(name, sid, strategy="userWithId", parameters={"userIds": "u2"})
    frontend_shows({"u2"})
    wait_same_as_server(fp, s, "development", name)
    s.archive(name)
    wait_until(lambda: client_enabled() is None, EVENT_TIMEOUT, "the archived toggle never left Flagpole's client API")
    frontend_shows(set())


# -- (c) the official SDKs through Flagpole ---------------------------------------------------


def test_official_sdks_through_flagpole_agree_with_the_servers_frontend_api(unleash_server, serve_upstream, node_dir):
    s = unleash_server
    toggles = sdk_toggles("via")
    make_toggles(s, toggles)
    want = settled_frontend_answers(s, toggles)
    fp = serve_upstream()
    wait_same_as_server(fp, s, "development", "via-")
    # Flagpole's own frontend API first: the same contexts, the same answers as the server's.
    assert server_frontend_answers(_FlagpoleAsServer(fp, s), toggles) == want
    out = node_sdks(node_dir, fp.base_url, s.client_tokens["development"], s.frontend_tokens["development"], toggles,
                    "via-flagpole-node")
    assert out["server"] == want, "unleash-client through Flagpole"
    assert out["frontend"] == want, "unleash-proxy-client through Flagpole"
    assert out["registered"] and out["metricsSent"], out
    assert python_sdk(fp.base_url, s.client_tokens["development"], toggles, "via-flagpole-python") == want


class _FlagpoleAsServer:
    """Flagpole's frontend API in the shape `server_frontend_answers` reads from the server."""

    def __init__(self, fp, server) -> None:
        self.fp, self.server = fp, server

    def frontend(self, context, environment: str = "development") -> dict[str, dict]:
        r = self.fp.get(FRONTEND + "?" + urllib.parse.urlencode(frontend_query(context)),
                        headers=auth(self.server.frontend_tokens[environment]))
        assert r.status == 200, r
        return {t["name"]: t for t in r.json()["toggles"]}


# -- (d) the server away, then back -------------------------------------------------------------


def fetch_errors(fp) -> int:
    """Flagpole's count of failed upstream fetches, from its /metrics."""
    text = fp.get("/metrics").body.decode()
    return sum(int(float(m)) for m in re.findall(r'^flagpole_unleash_fetches_total\{[^}]*result="error"[^}]*\} (\S+)',
                                                 text, re.M))


def test_with_the_server_stopped_flagpole_keeps_serving_and_recovers_on_restart(unleash_server, serve_upstream):
    s = unleash_server
    name = "outage"
    s.create_toggle(name)
    s.add_strategy(name, "development", "default")
    s.enable(name)
    fp = serve_upstream()
    token, frontend = s.client_tokens["development"], s.frontend_tokens["development"]
    wait_same_as_server(fp, s, "development", name)
    before = flagpole_client(fp, token)
    s.stop()
    try:
        # Flagpole has noticed: a fetch failed (the server is gone, not merely quiet).
        wait_until(lambda: fetch_errors(fp) > 0, EVENT_TIMEOUT, "Flagpole never saw the server gone")
        # The last good toggles, still served; ready by Edge's probe (docs/unleash.md: it stays ready
        # while the server is away, so an outage upstream does not empty a load balancer).
        assert projection(flagpole_client(fp, token)) == projection(before)
        assert name in flagpole_frontend(fp, frontend)
        assert fp.get(READY).status == 200
        assert fp.get("/proxy/health/serving").status == 200
    finally:
        s.start()
    s.disable(name)
    wait_until(lambda: name not in flagpole_frontend(fp, frontend), EVENT_TIMEOUT,
               f"a change after the restart never reached Flagpole:\n{fp.stderr_tail()}")
    wait_same_as_server(fp, s, "development", name)


# -- (e) SDK metrics, counted once by the server ------------------------------------------------


def post_usage(fp, token: str, app: str, toggle: str, yes: int, no: int) -> None:
    """A registration and one metrics bucket, as a server-side SDK posts them."""
    now = utc_now()
    r = fp.post("/api/client/register", {"appName": app, "instanceId": f"{app}-1", "sdkVersion": "unleash-client-python:6.9.1",
                                         "strategies": ["default"], "started": now, "interval": 1000},
                headers=auth(token))
    assert r.status in (200, 202), r
    r = fp.post("/api/client/metrics", {"appName": app, "instanceId": f"{app}-1",
                                        "bucket": {"start": now, "stop": now,
                                                   "toggles": {toggle: {"yes": yes, "no": no, "variants": {}}}}},
                headers=auth(token))
    assert r.status in (200, 202), r


@pytest.fixture(scope="module")
def metrics_toggles(unleash_server_session):
    """The toggles the metrics tests count, made together so that one wait covers both."""
    s = unleash_server_session
    if not s.running():
        s.start()
    for name in ("counted", "held"):
        s.create_toggle(name)
        s.add_strategy(name, "development", "default")
        s.enable(name)
    s.wait_metrics_known("counted", "held")


def test_sdk_metrics_sent_to_flagpole_are_counted_once_by_the_server(unleash_server, serve_upstream, metrics_toggles):
    s = unleash_server
    name, app = "counted", "counted-app"
    fp = serve_upstream(metrics=1)
    post_usage(fp, s.client_tokens["development"], app, name, yes=7, no=3)
    want = {"yes": 7, "no": 3}
    # Read back by application: the raw rows name the one the counts came from (the server's
    # application list would too, but it is written only every 20 s).
    wait_until(lambda: s.feature_metrics(name, app) == want, EVENT_TIMEOUT,
               f"the server never counted the metrics (last: {s.feature_metrics(name, app)}):\n{fp.stderr_tail()}")
    # Counted once: after further forwarding intervals and the server's own write period (5 s),
    # nothing was added. (A wait for an absence: a few seconds, never an assertion of speed.)
    time.sleep(6)
    assert s.feature_metrics(name, app) == want


def test_sdk_metrics_held_at_shutdown_reach_the_server(unleash_server, serve_upstream, metrics_toggles):
    s = unleash_server
    name, app = "held", "held-app"
    # An interval no test outlasts: only the shutdown can send them.
    fp = serve_upstream(metrics=3600)
    post_usage(fp, s.client_tokens["development"], app, name, yes=2, no=5)
    assert fp.stop() == 0, fp.stderr_tail()
    want = {"yes": 2, "no": 5}
    wait_until(lambda: s.feature_metrics(name, app) == want, EVENT_TIMEOUT,
               f"the metrics held at SIGTERM never reached the server (last: {s.feature_metrics(name, app)}):\n"
               f"{fp.stderr_tail()}")


# -- (f) a token the server refuses ---------------------------------------------------------------


def test_a_client_token_the_server_refuses_keeps_flagpole_unready(unleash_server, serve_upstream):
    """Expected (as implemented: the poller's 401/403 branch and Edge's readiness probe): never
    ready, the token's endpoints not served, and the log saying the upstream refused the token,
    without printing it."""
    wrong = "*:development.not-the-servers-secret"
    fp = serve_upstream(wait_ready=False, client=[wrong], frontend=[])
    wait_until(lambda: "refused this client token" in fp.stderr_text(), EVENT_TIMEOUT,
               "the log never said the server refused the token")
    assert "not-the-servers-secret" not in fp.stderr_text()
    # Refused at every poll, so never ready: checked again after a few more (backed-off) polls.
    wait_until(lambda: fetch_refusals(fp) >= 2, EVENT_TIMEOUT, "Flagpole stopped asking")
    assert fp.get(READY).status == 503
    assert fp.get(CLIENT, headers=auth(wrong)).status == 503


def fetch_refusals(fp) -> int:
    text = fp.get("/metrics").body.decode()
    return sum(int(float(m)) for m in re.findall(
        r'^flagpole_unleash_fetches_total\{[^}]*result="refused"[^}]*\} (\S+)', text, re.M))


def test_readiness_waits_for_every_client_token(unleash_server, serve_upstream):
    """One good token and one refused: never ready (Edge's probe is ready once every client
    token's features were fetched), while the good token's toggles are served."""
    s = unleash_server
    good = s.client_tokens["development"]
    fp = serve_upstream(wait_ready=False, client=[good, "default:production.not-the-servers-secret"], frontend=[])
    wait_until(lambda: fp.get(CLIENT, headers=auth(good)).status == 200, EVENT_TIMEOUT,
               f"the good token's toggles were never served:\n{fp.stderr_tail()}")
    wait_until(lambda: fetch_refusals(fp) >= 2, EVENT_TIMEOUT, "Flagpole stopped asking")
    assert fp.get(READY).status == 503
