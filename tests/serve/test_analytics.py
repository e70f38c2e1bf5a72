"""SDK flag analytics through the proxy (docs/analytics-and-shadow.md). The official Python SDK 6.3.0
and Node SDK (flagsmith-nodejs 8.x), analytics on, post their evaluation counts to Flagpole's
`/api/v1/analytics/flags/`; Flagpole answers at once and forwards them, one request per
environment and interval, to a scripted Flagsmith API that records every post. What reaches
upstream must equal what the SDKs counted: nothing lost, nothing doubled, across upstream 500s
and a SIGTERM. Also: validation (4xx with a JSON error), a 4xx upstream, offline environments.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from collections import Counter

import pytest
from flagsmith import Flagsmith

from serve_harness import JsonHandler, ScriptedApi, local_config, standard_envs, upstream_config, wait_until, write_documents

ENVS = standard_envs()
ENV = ENVS[0]
ANALYTICS_PATH = "/api/v1/analytics/flags/"


class FlagsmithApi(ScriptedApi):
    """The Flagsmith API as far as these tests need it: environment documents by server key, and
    `POST /api/v1/analytics/flags/` recorded and answered with `analytics_status`."""

    def __init__(self, envs) -> None:
        super().__init__()
        self.docs = {e.server_key: json.dumps(e.document).encode() for e in envs}
        self.analytics_status = 200
        self.posts: list[dict] = []  # {"path", "headers", "body", "status"}
        api = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:  # noqa: N802
                doc = api.docs.get(self.headers.get("X-Environment-Key", ""))
                if self.path.split("?")[0] != "/api/v1/environment-document/" or doc is None:
                    return self._send(404, b'{"detail":"Not found."}')
                self._send(200, doc)

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with api.lock:
                    status = api.analytics_status
                    api.posts.append({"path": self.path, "body": json.loads(body), "status": status,
                                      "headers": {k.lower(): v for k, v in self.headers.items()}})
                self._send(status, b"" if status == 200 else b'{"detail":"upstream says no"}')

        self.serve(Handler)

    def set_status(self, status: int) -> None:
        with self.lock:
            self.analytics_status = status

    def recorded(self) -> list[dict]:
        with self.lock:
            return list(self.posts)

    def delivered(self) -> Counter:
        """Feature → evaluations upstream accepted (answered 200)."""
        total: Counter = Counter()
        for post in self.recorded():
            if post["status"] == 200:
                total.update(post["body"])
        return total


@pytest.fixture
def api():
    server = FlagsmithApi(ENVS)
    yield server
    server.stop()


def start(flagpole, api, interval: float = 0.5):
    config = upstream_config(api, ENVS, flagpole={"analytics": {"flush_interval_seconds": interval}})
    fp = flagpole(config=config)
    fp.wait_ready(60)
    return fp


def status(fp) -> dict:
    """The status page's analytics entry for ENV (None before it reported)."""
    report = fp.get("/proxy/status?format=json").json()
    fingerprints = {e["environment"]: e for e in report["analytics"]}
    return next(iter(fingerprints.values()), None) if len(fingerprints) == 1 else fingerprints


def received(fp) -> int:
    entry = status(fp)
    return entry["received"] if entry else 0


def deliver_marker(fp, api, name: str, delivered: Counter) -> None:
    """Posts one evaluation of `name` and waits for a flush to carry it upstream; then upstream
    must have received exactly `delivered` plus it. Updates `delivered`. (How "nothing else was
    sent" is checked without waiting for a while: a flush sends everything held, so anything
    sent twice or late would have come with, or before, the marker.)"""
    assert fp.post(ANALYTICS_PATH, {name: 1}, key=ENV.client_key).status == 200
    wait_until(lambda: api.delivered()[name] >= 1, 60, f"{name} never reached upstream")
    delivered[name] += 1
    assert api.delivered() == delivered


def python_sdk_evaluations(fp, key: str, rounds: int) -> Counter:
    """The Python SDK, analytics on: reads every flag it gets, `rounds` times, then flushes as an
    application would (the SDK itself posts only at an evaluation 10 s after the last post)."""
    client = Flagsmith(environment_key=key, api_url=f"{fp.base_url}/api/v1/", enable_analytics=True)
    made: Counter = Counter()
    for i in range(rounds):
        env_flags = client.get_environment_flags()
        for flag in env_flags.all_flags():
            env_flags.is_feature_enabled(flag.feature_name)
            made[flag.feature_name] += 1
        identity = client.get_identity_flags(f"user-{i}", traits={"plan": "pro"})
        for flag in identity.all_flags():
            identity.get_feature_value(flag.feature_name)
            made[flag.feature_name] += 1
    client._analytics_processor.flush()
    return made


def node_sdk_evaluations(fp, node_sdk_dir, tmp_path, key: str, rounds: int) -> Counter:
    inp, out = tmp_path / "analytics_in.json", tmp_path / "analytics_out.json"
    inp.write_text(json.dumps({"api_url": f"{fp.base_url}/api/v1/", "key": key, "rounds": rounds,
                               "identifier": "node-user"}))
    proc = subprocess.run([shutil.which("node"), str(node_sdk_dir / "analytics.js"), str(inp), str(out)],
                          cwd=node_sdk_dir, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"node SDK run failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    result = json.loads(out.read_text())
    assert result["flushed"], "the Node SDK kept its analytics: Flagpole's answer was not a success"
    return Counter(result["tracked"])


def test_sdk_counts_reach_upstream_once_across_upstream_failures(flagpole, api, node_sdk_dir, tmp_path):
    api.set_status(500)
    fp = start(flagpole, api)
    made = python_sdk_evaluations(fp, ENV.client_key, rounds=7)
    made += node_sdk_evaluations(fp, node_sdk_dir, tmp_path, ENV.server_key, rounds=5)
    total = sum(made.values())
    assert total > 50
    wait_until(lambda: received(fp) == total, 60, f"flagpole did not receive {total} evaluations")

    # Upstream fails: the counts are kept (and retried with backoff).
    wait_until(lambda: any(p["status"] == 500 for p in api.recorded()), 60, "no forward attempt")
    wait_until(lambda: (status(fp)["last_flush"] or {}).get("outcome") == "failed", 30, "failure not shown")
    wait_until(lambda: status(fp)["pending"] == total, 30, "the counts should be held for a retry")
    assert api.delivered() == Counter()

    # Upstream recovers: everything arrives, once.
    api.set_status(200)
    wait_until(lambda: api.delivered() == made, 120, f"upstream never got {dict(made)}; got {api.delivered()}")
    # Nothing is sent twice: two more flushes go by, each marked by a count of its own.
    deliver_marker(fp, api, "marker_1", made)
    deliver_marker(fp, api, "marker_2", made)
    total += 2
    # Counted as forwarded once upstream's answer is back, a moment after upstream recorded it.
    wait_until(lambda: (status(fp)["forwarded"], status(fp)["pending"]) == (total, 0), 30,
               f"forwarded/pending should be {total}/0: {status(fp)}")
    entry = status(fp)
    assert (entry["forwarded"], entry["pending"], entry["dropped"]) == (total, 0, 0)
    assert entry["last_flush"]["outcome"] == "delivered"
    for post in api.recorded():
        assert post["path"] == ANALYTICS_PATH
        assert post["headers"]["x-environment-key"] == ENV.client_key
        assert post["headers"]["content-type"] == "application/json"
        assert all(isinstance(v, int) and v >= 0 for v in post["body"].values())

    metrics = fp.get("/metrics").body.decode()
    assert f'flagpole_analytics_events_total{{environment="{entry["environment"]}"}} {total}' in metrics
    assert f'flagpole_analytics_forwarded_total{{environment="{entry["environment"]}"}} {total}' in metrics
    assert 'flagpole_analytics_failed_total{environment="' in metrics


def test_sigterm_forwards_what_is_held(flagpole, api, node_sdk_dir, tmp_path):
    """With an interval far longer than the test, only the shutdown flush can deliver."""
    fp = start(flagpole, api, interval=3600)
    made = python_sdk_evaluations(fp, ENV.server_key, rounds=3)
    made += node_sdk_evaluations(fp, node_sdk_dir, tmp_path, ENV.client_key, rounds=2)
    wait_until(lambda: received(fp) == sum(made.values()), 60, "flagpole did not receive the evaluations")
    assert api.recorded() == []
    assert fp.stop(signal.SIGTERM) == 0
    assert api.delivered() == made
    assert len(api.recorded()) == 1  # one request for the environment


def test_requests_are_validated_and_answered_as_flagsmith_does(flagpole, api):
    fp = start(flagpole, api, interval=0.3)
    for path in ("/api/v1/analytics/flags/", "/api/v1/analytics/flags"):
        r = fp.post(path, {"feature_a": 2}, key=ENV.client_key)
        assert (r.status, r.body) == (200, b"")
    bad = [
        ([1, 2], "JSON object"),
        ({"feature_a": -1}, "non-negative integer"),
        ({"feature_a": "2"}, "non-negative integer"),
        ({"feature_a": 1.5}, "non-negative integer"),
        ({"": 1}, "empty"),
        ({f"f{i}": 1 for i in range(1001)}, "more than 1000"),
    ]
    for body, needle in bad:
        r = fp.post(ANALYTICS_PATH, body, key=ENV.client_key)
        assert r.status == 422, (body, r.status)
        assert needle in r.json()["message"], r.json()
        assert r.json()["status"] == "unprocessable_entity"
    r = fp.request("POST", ANALYTICS_PATH, key=ENV.client_key, body=b'{"a": 1', headers={"Content-Type": "application/json"})
    assert r.status == 422 and "malformed JSON" in r.json()["message"]
    big = {f"feature_{i:05d}_" + "x" * 80: 1 for i in range(900)}
    r = fp.post(ANALYTICS_PATH, big, key=ENV.client_key)
    assert r.status == 413 and "max_body_bytes" in r.json()["message"]
    assert fp.post(ANALYTICS_PATH, {"a": 1}, key="nope").status == 401
    assert fp.post(ANALYTICS_PATH, {"a": 1}).status == 401
    r = fp.get(ANALYTICS_PATH, key=ENV.client_key)
    assert r.status == 405 and r.header("allow") == "POST"
    # Only the two good requests count, and arrive upstream (merged into one post or two).
    wait_until(lambda: api.delivered() == Counter({"feature_a": 4}), 30, "good counts not forwarded")

    # A 4xx from upstream drops the counts, with a log line, and counts them as dropped.
    api.set_status(400)
    assert fp.post(ANALYTICS_PATH, {"feature_b": 5}, key=ENV.server_key).status == 200
    wait_until(lambda: status(fp)["dropped"] == 5, 30, "refused counts not dropped")
    assert status(fp)["last_flush"]["outcome"] == "refused"
    api.set_status(200)
    # The dropped counts never come back: a later flush carries only what arrived since.
    deliver_marker(fp, api, "marker", Counter({"feature_a": 4}))
    assert "flag analytics refused upstream" in fp.stderr_text()
    assert 'reason="refused"} 5' in fp.get("/metrics").body.decode()


def test_offline_environments_count_and_do_not_forward(flagpole, tmp_path):
    paths = write_documents(tmp_path / "docs", ENVS)
    fp = flagpole(config=local_config(paths, ENVS, flagpole={"analytics": {"flush_interval_seconds": 0.2}}))
    made = python_sdk_evaluations(fp, ENV.client_key, rounds=2)
    wait_until(lambda: received(fp) == sum(made.values()), 30, "evaluations not counted")
    wait_until(lambda: (status(fp)["last_flush"] or {}).get("outcome") == "offline", 30, "no offline flush")
    entry = status(fp)
    assert (entry["forwarded"], entry["dropped"], entry["failed_requests"]) == (0, 0, 0)
    page = fp.get("/proxy/status").body.decode()
    assert "Flag analytics" in page and "offline" in page
