"""Operations: Prometheus metrics at `GET /metrics` and the access log, on real `flagpole serve`
processes and a real (misbehaving on demand) upstream.

- The exposition parses (prometheus_client's parser), every family is `flagpole_…` with HELP and
  TYPE, and `flagpole_build_info` carries the version.
- Request counters and latency histograms move with requests, per route and status.
- Upstream fetches are counted by result: 200, 304 and each kind of failure.
- Per-environment gauges are labelled with key fingerprints, never with a key.
- Open change streams are counted; `flagpole.metrics.enabled: false` turns `/metrics` into a 404.
- `logging.enable_access_log`: one line per request (text or JSON), no query strings, no keys;
  nothing without it.
"""

from __future__ import annotations

import json
import re
import time

from documents import make_document
from metrics_support import (
    FINGERPRINT,
    OpenStream,
    lines_with,
    printed_fingerprints,
    scrape,
    status_json,
    wait_metric,
)
from serve_harness import REPO, Env, local_config, standard_envs, upstream_config, wait_until, write_documents

REQUESTS = "flagpole_http_requests_total"
DURATION = "flagpole_http_request_duration_seconds"
FETCHES = "flagpole_upstream_fetches_total"
ENV_KEYS = [k for e in standard_envs() for k in (e.client_key, e.server_key)]


# Seconds within which a wait for an event must end: only a hang, not a busy machine, takes this
# long.
WAIT = 60

def local_flagpole(start, tmp_path, envs=None, **extra):
    envs = envs or standard_envs()
    paths = write_documents(tmp_path / "docs", envs)
    fp = start(local_config(paths, envs, **extra))
    fp.wait_ready(WAIT)
    return fp, envs


# ----------------------------------------------------------------------------------------
# The exposition
# ----------------------------------------------------------------------------------------


def test_exposition_parses_and_names_the_build(flagpole, tmp_path):
    launched = time.time()
    fp = flagpole()  # the bundled example
    fp.wait_ready(WAIT)
    m = scrape(fp)
    assert m.families, m.text
    for name, family in m.families.items():
        assert name.startswith("flagpole_"), name
        assert family.documentation, f"{name} has no HELP"
        assert family.type in ("counter", "gauge", "histogram"), (name, family.type)
    version = status_json(fp)["version"]
    assert m.get("flagpole_build_info", version=version) == 1
    # Between the launch and the scrape (order, not speed; whole seconds allowed for).
    assert int(launched) <= m.value("flagpole_start_time_seconds") <= time.time() + 1
    assert m.get("flagpole_sse_connections") == 0
    assert m.families["flagpole_http_requests"].type == "counter"
    assert m.families[DURATION].type == "histogram"
    # The example environment is there, by fingerprint.
    (example,) = m.label_values("flagpole_environment_loaded", "environment")
    assert FINGERPRINT.match(example), example
    assert m.get("flagpole_environment_loaded", environment=example, source="example") == 1
    assert "example_client_key" not in m.text and "ser.example_server_key" not in m.text


def test_request_counters_and_latency_move(flagpole, tmp_path):
    fp, (env_a, _) = local_flagpole(flagpole, tmp_path)
    (fp_a, _) = printed_fingerprints(fp)
    before = scrape(fp)
    for _ in range(5):
        assert fp.get("/api/v1/flags/", env_a.client_key).status == 200
    for _ in range(2):
        assert fp.get("/api/v1/flags/", "not-a-key").status == 401
    assert fp.get("/nope").status == 404
    assert fp.post("/api/v1/identities/", {"identifier": "u1"}, env_a.server_key).status == 200
    assert fp.request("PUT", "/api/v1/flags/", env_a.client_key).status == 405
    assert fp.get("/proxy/health/liveness").status == 200
    preflight = fp.request("OPTIONS", "/api/v1/flags/", headers={
        "Origin": "https://app.example", "Access-Control-Request-Method": "GET"})
    after = scrape(fp)

    def delta(route: str, status: str, name: str = REQUESTS) -> float:
        return after.value(name, route=route, status=status) - before.value(name, route=route, status=status)

    assert delta("flags", "200") == 5
    assert delta("flags", "401") == 2
    assert delta("not_found", "404") == 1
    assert delta("identities", "200") == 1
    assert delta("flags", "405") == 1
    assert delta("health", "200") == 1
    assert delta("cors_preflight", str(preflight.status)) == 1
    assert delta("metrics", "200") == 1  # the first scrape (a scrape is counted once answered)
    # The histogram agrees with the counter; its buckets are cumulative and end at the count.
    assert delta("flags", "200", DURATION + "_count") == 5
    labels = {"route": "flags", "status": "200"}
    buckets = sorted(((float(s.labels["le"]), s.value) for s in after.series(DURATION + "_bucket")
                      if labels.items() <= s.labels.items()))
    assert buckets[-1] == (float("inf"), after.value(DURATION + "_count", **labels))
    assert all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])), buckets
    assert 0 < after.value(DURATION + "_sum", **labels) < 5
    # The same requests per environment and resource.
    served = "flagpole_environment_requests_total"
    assert after.value(served, environment=fp_a, resource="flags") - before.value(
        served, environment=fp_a, resource="flags") == 5
    assert after.value(served, environment=fp_a, resource="identities") == 1


# ----------------------------------------------------------------------------------------
# Upstream fetches
# ----------------------------------------------------------------------------------------

# (upstream mode, the `result` label flagpole counts for it), in the order they are tried.
FETCH_RESULTS = [
    ("ok", "200"),
    ("304", "304"),
    ("500", "status_5xx"),
    ("401", "status_4xx"),
    ("garbage", "invalid_json"),
    ("not_document", "rejected_document"),
    ("truncated", "network"),
    ("slow", "timeout"),
]


def test_upstream_fetch_results_are_counted(flagpole, upstream):
    env = Env("fetch_client_key", "ser.fetch_server_key", make_document("fetch_client_key"))
    upstream.set_document(env.server_key, env.document)
    fp = flagpole(upstream_config(upstream, [env]))
    fp.wait_ready(WAIT)
    (fingerprint,) = printed_fingerprints(fp)
    for mode, result in FETCH_RESULTS:
        upstream.set_mode(mode)
        start = scrape(fp).value(FETCHES, result=result)
        m = wait_metric(fp, lambda m: m.value(FETCHES, result=result) > start, WAIT,
                        f"upstream mode {mode}: no fetch counted as {result}")
        failed = m.get("flagpole_environment_update_failed", environment=fingerprint)
        assert failed == (0 if result in ("200", "304") else 1), (mode, m.text)
    # Every fetch was timed; the fetch counters add up to the histogram's count.
    m = scrape(fp)
    total = sum(s.value for s in m.series(FETCHES))
    timed = m.value("flagpole_upstream_fetch_duration_seconds_count")
    assert 0 < timed and abs(timed - total) <= 1, (timed, total)  # a fetch may end between the two reads
    # Upstream gone: a connection error. The last good document is still served.
    upstream.stop()
    wait_metric(fp, lambda m: m.value(FETCHES, result="connect") > 0, WAIT, "no fetch counted as connect")
    assert fp.get("/api/v1/flags/", env.client_key).status == 200


# ----------------------------------------------------------------------------------------
# Per-environment gauges
# ----------------------------------------------------------------------------------------


def test_environment_gauges_use_fingerprints_never_keys(flagpole, upstream):
    envs = standard_envs()
    for e in envs:
        upstream.set_document(e.server_key, e.document)
    launched = time.time()
    fp = flagpole(upstream_config(upstream, envs))
    fp.wait_ready(WAIT)
    printed = printed_fingerprints(fp)
    m = scrape(fp)
    assert m.label_values("flagpole_environment_loaded", "environment") == set(printed)
    assert len(set(printed)) == 2 and all(FINGERPRINT.match(f) for f in printed), printed
    for key in ENV_KEYS:
        assert key not in m.text, f"the metrics name the key {key!r}"
    now = time.time()
    revisions = {}
    for e, fingerprint in zip(envs, printed):
        assert fingerprint.startswith(e.client_key[:3])
        assert m.get("flagpole_environment_loaded", environment=fingerprint, source="upstream") == 1
        assert m.get("flagpole_environment_revision", environment=fingerprint) == 1
        size = len(json.dumps(e.document).encode())  # what the upstream sent
        assert m.get("flagpole_environment_document_bytes", environment=fingerprint) == size
        # Current (not the epoch, not the document's date): between the launch and the scrape.
        success = m.get("flagpole_environment_last_success_timestamp_seconds", environment=fingerprint)
        assert int(launched) <= success <= now + 1, (launched, success, now)
        assert 0 <= m.get("flagpole_environment_document_age_seconds", environment=fingerprint) <= now - launched + 1
        assert m.get("flagpole_environment_update_failed", environment=fingerprint) == 0
        assert m.get("flagpole_environment_streams", environment=fingerprint) == 0
        (revision,) = [s.labels["content_revision"] for s in m.series("flagpole_environment_info")
                       if s.labels["environment"] == fingerprint]
        assert re.fullmatch(r"[0-9a-f]{32}", revision), revision
        revisions[fingerprint] = revision
    # A new document upstream: the revision moves, and so does the content revision.
    env_a, fp_a = envs[0], printed[0]
    upstream.set_document(env_a.server_key, make_document(env_a.client_key, name="Env A", env_id=1001, revision=1))
    m = wait_metric(fp, lambda m: m.get("flagpole_environment_revision", environment=fp_a) == 2, WAIT,
                    "revision 2 never showed")
    (revision,) = [s.labels["content_revision"] for s in m.series("flagpole_environment_info")
                   if s.labels["environment"] == fp_a]
    assert revision != revisions[fp_a]
    assert m.get("flagpole_environment_revision", environment=printed[1]) == 1


def test_the_sample_dashboard_uses_exported_names(flagpole, upstream):
    """deploy/grafana-dashboard.json queries only metric families this build exports."""
    dashboard = json.loads((REPO / "deploy" / "grafana-dashboard.json").read_text())
    queried = {name for panel in dashboard["panels"] for target in panel.get("targets", [])
               for name in re.findall(r"\bflagpole_[a-z_]+", target["expr"])}
    env = standard_envs()[0]
    upstream.set_document(env.server_key, env.document)
    fp = flagpole(upstream_config(upstream, [env]))
    fp.wait_ready(WAIT)
    assert fp.get("/api/v1/flags/", env.client_key).status == 200
    m = wait_metric(fp, lambda m: m.value(FETCHES, result="200") > 0, WAIT, "no fetch counted")
    exported = {s.name for s in m.samples}
    assert queried and queried <= exported, sorted(queried - exported)


def test_change_streams_are_counted(flagpole, tmp_path):
    fp, (env_a, _) = local_flagpole(flagpole, tmp_path)
    (fp_a, fp_b) = printed_fingerprints(fp)
    before = scrape(fp).value(REQUESTS, route="realtime_stream", status="200")
    with OpenStream(fp.port, f"/sse/environments/{env_a.client_key}/stream") as stream:
        assert " 200 " in stream.head.splitlines()[0], stream.head
        m = scrape(fp)
        assert m.get("flagpole_sse_connections") == 1
        assert m.get("flagpole_environment_streams", environment=fp_a) == 1
        assert m.get("flagpole_environment_streams", environment=fp_b) == 0
        assert m.value(REQUESTS, route="realtime_stream", status="200") == before + 1
    wait_metric(fp, lambda m: m.get("flagpole_sse_connections") == 0, WAIT, "the closed stream is still counted")


def test_metrics_can_be_disabled(flagpole, tmp_path):
    fp, (env_a, _) = local_flagpole(flagpole, tmp_path, flagpole={"metrics": {"enabled": False}})
    r = fp.get("/metrics")
    assert r.status == 404, r
    assert r.json()["status"] == "not_found", r
    assert fp.get("/api/v1/flags/", env_a.client_key).status == 200
    assert status_json(fp)["environments"], "the status page does not depend on metrics"


# ----------------------------------------------------------------------------------------
# Access log
# ----------------------------------------------------------------------------------------

ACCESS = "flagpole::access"
SECRET_IDENTIFIER = "identifier-in-the-query-42"


def traffic(fp, env: Env) -> dict[str, int]:
    """A few requests; returns the body size of the /flags answer."""
    flags = fp.get("/api/v1/flags/", env.client_key)
    assert flags.status == 200
    assert fp.get(f"/api/v1/identities/?identifier={SECRET_IDENTIFIER}", env.client_key).status == 200
    assert fp.get("/api/v1/flags/", "ser.an_unknown_key_xyz").status == 401
    with OpenStream(fp.port, f"/sse/environments/{env.client_key}/stream"):
        pass
    return {"flags_bytes": len(flags.body)}


def access_lines(fp, n: int) -> list[str]:
    """The access-log lines once there are `n` (health checks of the harness left out)."""

    def lines():
        found = [line for line in lines_with(fp.stderr_text(), ACCESS) if "/proxy/health" not in line]
        return found if len(found) >= n else None

    return wait_until(lines, WAIT, f"fewer than {n} access-log lines")


def assert_no_secrets(fp, tmp_path) -> None:
    """No key or identifier in the log (document paths aside: the test names files by key)."""
    docs = str(tmp_path / "docs")
    text = "\n".join(line for line in fp.stderr_text().splitlines() if docs not in line)
    for secret in ENV_KEYS + ["ser.an_unknown_key_xyz", SECRET_IDENTIFIER]:
        assert secret not in text, f"the log shows {secret!r}"


def test_access_log_lines(flagpole, tmp_path):
    fp, (env_a, _) = local_flagpole(flagpole, tmp_path, logging={"enable_access_log": True})
    sizes = traffic(fp, env_a)
    lines = access_lines(fp, 4)
    fields = [dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line.split(ACCESS, 1)[1])) for line in lines]
    by_path = {(f["path"].strip('"'), f["status"]): f for f in fields}
    flags = by_path[("/api/v1/flags/", "200")]
    assert flags["method"] == '"GET"' and int(flags["duration_us"]) >= 0, flags
    assert int(flags["bytes"]) == sizes["flags_bytes"], flags
    assert ("/api/v1/identities/", "200") in by_path, by_path  # no query string
    assert ("/api/v1/flags/", "401") in by_path, by_path
    (stream,) = [f for (path, _), f in by_path.items() if path.startswith("/sse/environments/")]
    assert re.fullmatch(r'"/sse/environments/env…[0-9a-f]{8}/stream"', stream["path"]), stream
    assert "bytes" not in stream, "a stream has no size"
    assert "\x1b[" not in fp.stderr_text(), "colour codes in a log that is not a terminal"
    assert_no_secrets(fp, tmp_path)


def test_access_log_as_json(flagpole, tmp_path):
    fp, (env_a, _) = local_flagpole(flagpole, tmp_path,
                                    logging={"enable_access_log": True, "log_format": "json"})
    traffic(fp, env_a)
    records = [json.loads(line) for line in access_lines(fp, 4)]
    for record in records:
        assert record["target"] == ACCESS and record["level"] == "INFO", record
        f = record["fields"]
        assert f["message"] == "request" and f["method"] == "GET", record
        assert isinstance(f["status"], int) and isinstance(f["duration_us"], int), record
        assert "?" not in f["path"], record
    assert {r["fields"]["status"] for r in records} == {200, 401}
    assert_no_secrets(fp, tmp_path)


def test_access_log_is_off_by_default(flagpole, tmp_path):
    fp, (env_a, _) = local_flagpole(flagpole, tmp_path)
    traffic(fp, env_a)
    # A request's access-log line is written before its response is sent (api/observe.rs), so
    # with every answer in hand, any line these requests could cause is already in the log.
    assert not list(lines_with(fp.stderr_text(), ACCESS)), fp.stderr_tail()


def test_access_log_shows_at_warning_level(flagpole, tmp_path):
    """`log_level: WARNING` (the Python proxy's spelling) hides INFO lines but not the access log
    that was asked for (and without RUST_LOG, which would decide instead)."""
    envs = standard_envs()
    paths = write_documents(tmp_path / "docs", envs)
    config = local_config(paths, envs, logging={"enable_access_log": True, "log_level": "WARNING"})
    fp = flagpole(config, start=False)
    child_env = fp.child_env
    fp.child_env = lambda: {k: v for k, v in child_env().items() if k != "RUST_LOG"}
    fp.start()
    fp.wait_ready(WAIT)
    traffic(fp, envs[0])
    assert len(access_lines(fp, 4)) == 4
    assert "configuration loaded" not in fp.stderr_text(), "INFO lines shown at WARNING"
