"""Many environments in one proxy: a thousand local document files, every one hot-reloaded by
one watcher (one inotify instance, not one per file, so the per-user limit of 128 instances does
not cut hot reload off after the 128th file); readiness reports loading progress; the polls of
hundreds of upstream environments spread over the poll period instead of arriving in a burst."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from documents import make_document
from serve_harness import EVENT_TIMEOUT, Env, upstream_config, wait_until, write_atomic

COUNT = 1000
WAIT = EVENT_TIMEOUT


def plain_value(fp, key: str) -> str | None:
    r = fp.get("/api/v1/flags/?feature=plain_string", key)
    if r.status != 200:
        return None
    return r.json()["feature_state_value"]


def test_a_thousand_files_are_each_reloaded_when_they_change(flagpole, tmp_path):
    # Two directories (one watch each), 500 documents in each.
    paths = []
    for i in range(COUNT):
        directory = tmp_path / ("docs-a" if i % 2 == 0 else "docs-b")
        directory.mkdir(exist_ok=True)
        path = directory / f"env-{i:04d}.json"
        path.write_text(json.dumps(make_document(f"many_{i:04d}", revision=0)))
        paths.append(path)
    config = {
        "api_url": "http://127.0.0.1:9/api/v1",
        "flagpole": {"documents": [{"path": str(p)} for p in paths]},
    }
    fp = flagpole(config, wait=False)
    fp.wait_ready(WAIT)
    ready = fp.get("/proxy/health/readiness").json()
    assert ready["status"] == "ok", ready
    assert ready.get("progress") == f"{COUNT}/{COUNT} environments loaded", ready
    for i in (0, COUNT // 2, COUNT - 1, 137):
        assert plain_value(fp, f"many_{i:04d}") == "hello-r0"

    # One inotify instance for all of them (Linux), whatever the file count.
    fds = Path(f"/proc/{fp.proc.pid}/fd")
    if fds.exists():
        inotify = [fd for fd in fds.iterdir() if "inotify" in os.readlink(fd)]
        assert len(inotify) <= 1, inotify

    # The first, the middle and the last file change; each new value is served, the others
    # keep theirs.
    changed = {0: 1, COUNT // 2: 2, COUNT - 1: 3}
    for i, revision in changed.items():
        write_atomic(paths[i], json.dumps(make_document(f"many_{i:04d}", revision=revision)))
    for i, revision in changed.items():
        key = f"many_{i:04d}"
        wait_until(lambda: plain_value(fp, key) == f"hello-r{revision}", WAIT,
                   f"{key} reloaded to revision {revision}")
    for i in (1, COUNT // 2 + 1, COUNT - 2):
        assert plain_value(fp, f"many_{i:04d}") == "hello-r0"

    # A file written in place (not replaced) is picked up too.
    i = 777
    with open(paths[i], "w") as f:
        f.write(json.dumps(make_document(f"many_{i:04d}", revision=9)))
    wait_until(lambda: plain_value(fp, f"many_{i:04d}") == "hello-r9", WAIT, "in-place write reloaded")


POLLED = 500
PERIOD = 4  # seconds
OBSERVED = 3  # whole periods observed after the first


def test_polls_of_500_environments_spread_over_the_period(flagpole, upstream):
    envs = [Env(f"spread_{i:03d}", f"ser.spread_{i:03d}") for i in range(POLLED)]
    document = make_document("placeholder")
    for env in envs:
        document["api_key"] = env.client_key
        upstream.set_document(env.server_key, document)
    # After the first document, every poll is a 304: what is measured is when polls arrive.
    upstream.etag = '"same"'
    upstream.set_mode("conditional")
    config = upstream_config(upstream, envs, api_poll_frequency_seconds=PERIOD,
                             api_poll_timeout_seconds=PERIOD)
    config["health_check"] = {"environment_update_grace_period_seconds": None}
    fp = flagpole(config, wait=False)
    fp.wait_ready(WAIT)
    with upstream.lock:
        start = min(r.at for r in upstream.requests)
    end = start + (1 + OBSERVED) * PERIOD

    def window_complete() -> bool:  # every environment polled again after the observed window
        with upstream.lock:
            return {r.headers.get("x-environment-key") for r in upstream.requests if r.at >= end} >= \
                {e.server_key for e in envs}

    wait_until(window_complete, WAIT + (1 + OBSERVED) * PERIOD, "polling stopped")

    with upstream.lock:
        requests = [r for r in upstream.requests if start + PERIOD <= r.at < end]
    per_env = Counter(r.headers.get("x-environment-key") for r in requests)
    # Each environment is polled once per period (a poll near the edge of a period may fall in
    # its neighbour, hence one either way).
    assert set(per_env) == {e.server_key for e in envs}
    assert all(OBSERVED - 1 <= n <= OBSERVED + 1 for n in per_env.values()), per_env.most_common(3)
    assert abs(len(requests) - OBSERVED * POLLED) <= POLLED // 20, len(requests)
    # Spread: no tenth of the period gets more than twice its share.
    tenths = Counter(int((r.at - start) % PERIOD / PERIOD * 10) for r in requests)
    share = len(requests) / 10
    assert max(tenths.values()) <= 2 * share, sorted(tenths.items())
    assert fp.get("/proxy/health/readiness").status == 200


def test_status_page_paginates_and_metrics_drop_per_environment_series(flagpole, tmp_path):
    count = 150
    paths = []
    for i in range(count):
        path = tmp_path / f"page-{i:03d}.json"
        path.write_text(json.dumps(make_document(f"page_{i:03d}")))
        paths.append(path)
    config = {
        "api_url": "http://127.0.0.1:9/api/v1",
        "flagpole": {"documents": [str(p) for p in paths],
                     "metrics": {"per_environment": False}},
    }
    fp = flagpole(config, wait=False)
    fp.wait_ready(WAIT)

    first = fp.get("/proxy/status?format=json").json()
    assert (first["page"], first["pages"], len(first["environments"])) == (1, 2, 100), first["page"]
    assert first["summary"]["progress"] == f"{count}/{count} environments loaded"
    second = fp.get("/proxy/status?format=json&page=2").json()
    assert (second["page"], len(second["environments"])) == (2, 50)
    seen = {e["environment"] for e in first["environments"] + second["environments"]}
    assert len(seen) == count
    html = fp.get("/proxy/status").body.decode()
    assert f"{count}/{count} environments loaded" in html and 'href="?page=2"' in html

    metrics = fp.get("/metrics").body.decode()
    assert f"flagpole_environments {count}\n" in metrics, metrics
    assert f"flagpole_environments_loaded {count}\n" in metrics
    assert "flagpole_environment_loaded{" not in metrics
    assert "flagpole_environment_requests_total{" not in metrics
    assert "flagpole_sse_connections 0" in metrics
