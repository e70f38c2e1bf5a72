"""Flagpole's edge mode against a scripted Unleash server that misbehaves on demand
(scripted_unleash.py: a real HTTP server in the test, for what the real Unleash server cannot be
made to do on cue): nothing is served for a token before its first fetch (503, readiness
NOT_READY), the features are fetched
with each client token and `If-None-Match`, a failing or refusing server keeps the last good
toggles, a body that does not load never replaces them, a warm-start copy is served at once
after a restart with the server away, and SDK metrics are forwarded in bulk: a batch the server
answers 5xx is sent again, merged, and what is held at SIGTERM goes out before exit. The real
Unleash server's behaviour is in test_edge_upstream.py.
"""

from __future__ import annotations

import pytest

from conftest import TOGGLES
from loopback import EVENT_TIMEOUT, wait_until
from scripted_unleash import CLIENT, FRONTEND, REFUSED, api, auth, edge_args, names  # noqa: F401 (`api`: a fixture)
from serve_harness import FlagpoleProcess


@pytest.fixture
def started(tmp_path):
    processes: list[FlagpoleProcess] = []

    def start(args: list[str], wait: bool = True, config: dict | None = None) -> FlagpoleProcess:
        fp = FlagpoleProcess(tmp_path / f"fp{len(processes)}", config=config, extra_args=args)
        processes.append(fp)
        return fp.start(wait=wait)

    yield start
    for fp in processes:
        fp.stop()


def test_polls_each_client_token_and_serves_its_features(api, started):
    api.set(mode="down")
    fp = started(edge_args(api, client=(CLIENT, REFUSED)))
    # Nothing fetched yet: the token's endpoints and readiness say so.
    missing = fp.get("/api/client/features", headers=auth(CLIENT))
    assert missing.status == 503 and missing.header("retry-after"), missing
    assert fp.get("/internal-backstage/ready").json() == {"status": "NOT_READY"}
    assert fp.get("/proxy/health/readiness").status == 503
    api.set(mode="ok")
    wait_until(lambda: fp.get("/api/client/features", headers=auth(CLIENT)).status == 200, EVENT_TIMEOUT,
               "the features were never served")
    assert names(fp.get("/api/client/features", headers=auth(CLIENT))) == [f["name"] for f in TOGGLES["features"]]
    toggles = fp.get("/api/frontend?userId=u1", headers=auth(FRONTEND)).json()["toggles"]
    assert {t["name"] for t in toggles} == {"alpha", "beta"}
    # The refused token keeps failing; its feed is never ready, and the logs say why.
    assert fp.get("/api/client/features", headers=auth(REFUSED)).status == 503
    assert fp.get("/internal-backstage/ready").status == 503
    wait_until(lambda: "refused this client token" in fp.stderr_text(), EVENT_TIMEOUT, "no reason logged")
    # Conditional polls: once served, the server is asked with the ETag it gave.
    n = api.fetch_count(CLIENT)
    wait_until(lambda: api.fetch_count(CLIENT) >= n + 2, EVENT_TIMEOUT, "polling stopped")
    with api.lock:
        later = [inm for t, inm in api.fetches if t == CLIENT][-2:]
    assert all(later), later
    status = fp.get("/proxy/status?format=json").json()["unleash_feeds"]
    assert [f["loaded"] for f in status] == [True, False], status
    assert "refused" in (status[1]["last_error"] or ""), status


def test_a_broken_server_never_replaces_good_toggles(api, started):
    fp = started(edge_args(api))
    wait_until(lambda: fp.get("/internal-backstage/ready").status == 200, EVENT_TIMEOUT, "never ready")
    good = fp.get("/api/client/features", headers=auth(CLIENT)).json()
    for mode in ("garbage", "down"):
        api.set(mode=mode)
        n = api.fetch_count(CLIENT)
        wait_until(lambda: api.fetch_count(CLIENT) >= n + 2, EVENT_TIMEOUT, f"no poll in mode {mode}")
        assert fp.get("/api/client/features", headers=auth(CLIENT)).json() == good
        # Serving the last good toggles: Edge's readiness stays ready (an outage upstream must
        # not empty the load balancer).
        assert fp.get("/internal-backstage/ready").status == 200
    assert "refused; the last good toggles are kept" in fp.stderr_text()
    # Back: a change reaches SDKs.
    changed = {**TOGGLES, "features": TOGGLES["features"][:2]}
    api.set(mode="ok", features={CLIENT: changed})
    wait_until(lambda: names(fp.get("/api/client/features", headers=auth(CLIENT))) == ["alpha", "beta"],
               EVENT_TIMEOUT, "the change never arrived")


def test_a_warm_start_copy_serves_while_the_server_is_away(api, started, tmp_path):
    config = {"flagpole": {"snapshot_dir": str(tmp_path / "snapshots")}}
    first = started(edge_args(api), config=config)
    wait_until(lambda: first.get("/internal-backstage/ready").status == 200, EVENT_TIMEOUT, "never ready")
    served = first.get("/api/client/features", headers=auth(CLIENT)).json()
    assert first.stop() == 0
    api.set(mode="down")
    second = started(edge_args(api), config=config)
    assert second.get("/internal-backstage/ready").status == 200
    assert second.get("/api/client/features", headers=auth(CLIENT)).json() == served
    assert "warm-start copy" in second.stderr_text()


def test_sdk_metrics_are_forwarded_in_bulk_and_survive_a_failure_and_sigterm(api, started):
    fp = started(edge_args(api))
    wait_until(lambda: fp.get("/internal-backstage/ready").status == 200, EVENT_TIMEOUT, "never ready")
    bucket = {"start": "2026-11-28T10:05:00Z", "stop": "2026-11-28T10:06:00Z",
              "toggles": {"alpha": {"yes": 3, "no": 1, "variants": {}}}}
    register = {"appName": "shop", "instanceId": "i1", "strategies": ["default"], "interval": 1000,
                "started": "2026-11-28T10:00:00Z"}
    assert fp.post("/api/client/register", register, headers=auth(CLIENT)).status == 202
    api.set(metrics_status=503)
    assert fp.post("/api/client/metrics", {"appName": "shop", "instanceId": "i1", "bucket": bucket},
                   headers=auth(CLIENT)).status == 202
    assert fp.post("/api/frontend/client/metrics", {"appName": "web", "instanceId": "b", "bucket": bucket},
                   headers=auth(FRONTEND)).status == 202
    wait_until(lambda: "kept for the next interval" in fp.stderr_text(), EVENT_TIMEOUT, "no failed forward")
    api.set(metrics_status=202)
    wait_until(lambda: api.evaluations("shop") > 0, EVENT_TIMEOUT, "the metrics were never forwarded")
    # Counted once, the failed attempt's batch merged into the one delivered.
    assert api.evaluations("shop") == 4 and api.evaluations("web") == 4
    with api.lock:
        apps = [a for b in api.bulk for a in b["applications"]]
        assert all(b["token"] == CLIENT for b in api.bulk)
    assert [(a["appName"], a["environment"]) for a in apps] == [("shop", "development")]
    assert apps[0]["connectVia"][0]["appName"] == "flagpole"
    # Held at SIGTERM: sent before exit.
    assert fp.post("/api/client/metrics", {"appName": "late", "instanceId": "i1", "bucket": bucket},
                   headers=auth(CLIENT)).status == 202
    assert fp.stop() == 0
    assert api.evaluations("late") == 4
