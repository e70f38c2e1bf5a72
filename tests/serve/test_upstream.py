"""Upstream sync of `flagpole serve` (README: `flagpole serve`; `deploy/README.md`: readiness): a
real upstream HTTP server that misbehaves on demand, readiness and staleness, pagination, warm
start from a snapshot. The process life cycle (local document reload, tiering, signals,
configuration sources) is in test_lifecycle.py.

Timings: flagpole polls every POLL_SECONDS (1 s) with a TIMEOUT_SECONDS (1 s) fetch timeout and a
GRACE_SECONDS (2 s) staleness grace, so one environment is stale 3 s after its last success.

The tests wait for events (requests the upstream received, failed fetches flagpole counted,
revisions served), never for a fixed time, with generous deadlines (WAIT) that only stop a hang:
on a busy machine everything may be slower, never faster. Staleness, a rule about time, is judged
against flagpole's own `last_successful_update` and the wall clock around each readiness request
(`assert_staleness_rule`), so a slow answer cannot make a correct proxy look wrong.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from datetime import datetime, timezone

import pytest

import serve_expect as ex
from documents import (
    OVERRIDDEN_USER,
    imf_fixdate,
    make_document,
    override_features,
    paginate,
    updated_at_for,
)
from serve_harness import (
    DOC_PATH,
    MOVED_PREFIX,
    HOST,
    IMF_FIXDATE,
    POLL_SECONDS,
    Env,
    Upstream,
    binary_path,
    upstream_config,
    wait_until,
)
from upstream_support import (
    CLIENT,
    SERVER,
    ENV,
    STALE_AFTER_1_ENV,
    WAIT,
    doc,
    rev_of,
    wait_rev,
    lsu,
    readiness,
    assert_staleness_rule,
    failed_fetches,
    start_with,
    assert_serves,
)


def test_initial_load_and_poll_request_headers(flagpole, upstream):
    upstream.etag = '"upstream-etag-7"'
    d0 = doc(0)
    fp = start_with(flagpole, upstream, d0)
    assert re.search(rf"listening on http://{re.escape(HOST)}:{fp.port}\b", fp.stderr_text()), fp.stderr_tail()
    assert_serves(fp, d0)
    upstream.wait_for_requests(2, SERVER)

    reqs = upstream.requests_for(SERVER)
    first, later = reqs[0], reqs[1:]
    assert first.path.startswith(DOC_PATH), first.path
    assert first.headers.get("x-environment-key") == SERVER
    assert (first.headers.get("user-agent") or "").startswith("flagpole/"), first.headers
    assert "if-modified-since" not in first.headers, "If-Modified-Since sent before a document is held"
    for r in later:
        ims = r.headers.get("if-modified-since")
        assert ims == "Sat, 01 Jun 2024 12:00:00 GMT", f"If-Modified-Since {ims!r}"
        assert IMF_FIXDATE.match(ims)
        assert r.headers.get("if-none-match") == '"upstream-etag-7"', r.headers
        assert r.headers.get("x-environment-key") == SERVER


def test_if_modified_since_follows_updated_at(flagpole, upstream):
    fp = start_with(flagpole, upstream, doc(0))
    upstream.set_document(SERVER, doc(61))  # updated_at + 61 minutes
    wait_rev(fp, 61)
    upstream.wait_for_requests(2, SERVER)
    ims = upstream.requests_for(SERVER)[-1].headers.get("if-modified-since")
    assert ims == imf_fixdate(updated_at_for(61)) == "Sat, 01 Jun 2024 13:01:00 GMT", ims
    assert "if-none-match" not in upstream.requests_for(SERVER)[-1].headers  # upstream sent no ETag


def test_poll_cadence_no_tight_loop(flagpole, upstream):
    upstream.set_mode("500")
    upstream.set_document(SERVER, doc(0))
    fp = start_with(flagpole, upstream, wait_ready=False)
    # Failures must not turn into a tight retry loop: one request per poll period (give or take
    # 2 % jitter) however often they fail. Gaps can only grow on a busy machine, so a lower bound
    # on each gap is safe to assert; polling going on is shown by the count. The first gap is the
    # environment's phase (a random part of the period: polls spread over it), so it is not one.
    upstream.wait_for_requests(6, SERVER, timeout=WAIT)
    arrivals = [r.at for r in upstream.requests_for(SERVER)]
    gaps = [b - a for a, b in zip(arrivals[1:], arrivals[2:])]
    assert min(gaps) >= POLL_SECONDS * 0.9, f"requests {gaps} s apart with a {POLL_SECONDS} s poll period"
    assert fp.running()


def test_environments_are_fetched_concurrently(flagpole, upstream):
    """Three environments behind an upstream that holds every request (longer than this test
    waits) while flagpole's fetch timeout is longer still: no fetch ends, so all three can only
    arrive if they are in flight together. Sequential fetching would never send the second."""
    envs = [Env(f"conc_{i}", f"ser.conc_{i}") for i in range(3)]
    for e in envs:
        upstream.set_document(e.server_key, make_document(e.client_key))
    upstream.slow_seconds = WAIT * 2
    upstream.set_mode("slow")
    flagpole(upstream_config(upstream, envs, api_poll_timeout_seconds=WAIT * 4))
    wait_until(lambda: all(upstream.count(e.server_key) >= 1 for e in envs), WAIT,
               "environment fetches were serialised: not every environment was requested while "
               "the first fetch was still open")


# ----------------------------------------------------------------------------------------
# Readiness and staleness
# ----------------------------------------------------------------------------------------


def test_not_loaded_then_recovery(flagpole, upstream):
    upstream.set_document(SERVER, doc(0))
    upstream.set_mode("500")
    fp = start_with(flagpole, upstream, wait_ready=False)  # the port is bound at once
    upstream.wait_for_requests(1, SERVER)
    status, body = readiness(fp)
    assert status == 503, body
    assert body["status"] != "ok" and body["reason"] == "environment document(s) not updated.", body
    for path in ("/proxy/health", "/health", "/proxy/health/serving"):
        assert fp.get(path).status == 503
    assert fp.get("/proxy/health/liveness").status == 200
    for key in (CLIENT, SERVER):
        r = fp.get("/api/v1/flags/", key)
        assert r.status == 503, r
        assert r.json()["message"] == "environment not loaded", r.json()
        r = fp.post("/api/v1/identities/", {"identifier": "u", "traits": []}, key)
        assert r.status == 503, r
    assert fp.get("/api/v1/flags/", "nobody-knows-me").status == 401
    upstream.set_mode("ok")
    fp.wait_ready(WAIT)
    assert_serves(fp, doc(0))
    assert readiness(fp)[1]["reason"] is None


def test_serving_readiness_stays_200_through_an_outage(flagpole, upstream):
    """The Edge Proxy's readiness turns 503 once the document is stale; `/proxy/health/serving`
    (the chart's readiness probe, `flagpole health`'s default) stays 200 while every environment
    has a document, so an upstream outage does not empty a Service of the replicas holding the
    last good flags. The staleness stays visible: in its body and in the STALE answers."""
    fp = start_with(flagpole, upstream, doc(0))
    served = fp.get("/proxy/health/serving")
    assert served.status == 200, served
    assert served.json()["stale"] == "0/1 environments stale", served.json()
    upstream.set_mode("500")
    wait_until(lambda: assert_staleness_rule(fp, STALE_AFTER_1_ENV)[0] == 503, WAIT,
               "readiness never went stale")
    served = fp.get("/proxy/health/serving")
    body = served.json()
    assert served.status == 200 and body["status"] == "ok" and body["reason"] is None, body
    assert body["stale"] == "1/1 environments stale" and body["last_successful_update"], body
    for path in ("/proxy/health", "/health"):
        assert fp.get(path).status == 503, path
    assert rev_of(fp) == "hello-r0"
    # The probe command: can serve by default, the Edge Proxy's rule with --strict.
    probe = [str(binary_path()), "health", "--url", fp.base_url]
    ok = subprocess.run(probe, capture_output=True, text=True, timeout=WAIT)
    assert ok.returncode == 0 and "/proxy/health/serving" in ok.stdout, ok
    strict = subprocess.run([*probe, "--strict"], capture_output=True, text=True, timeout=WAIT)
    assert strict.returncode == 1 and "stale" in strict.stderr, strict
    upstream.set_mode("ok")
    fp.wait_ready(WAIT)
    assert fp.get("/proxy/health/serving").json()["stale"] == "0/1 environments stale"


def test_304_keeps_document_and_counts_as_success(flagpole, upstream):
    fp = start_with(flagpole, upstream, doc(0))
    t0 = lsu(fp)
    upstream.set_document(SERVER, doc(1))  # would be visible if 304 were mistaken for 200
    upstream.set_mode("304")
    # Enough 304s to outlast the staleness limit had they counted as failures.
    n0 = upstream.count(SERVER)
    polls = int(STALE_AFTER_1_ENV / POLL_SECONDS) + 2
    deadline = time.monotonic() + WAIT
    while upstream.count(SERVER) < n0 + polls:
        assert time.monotonic() < deadline, f"fewer than {polls} polls in {WAIT} s"
        assert_staleness_rule(fp, STALE_AFTER_1_ENV)
        assert rev_of(fp) == "hello-r0"
        time.sleep(0.25)
    wait_until(lambda: lsu(fp) > t0, WAIT, "last_successful_update did not advance on 304")
    assert_serves(fp, doc(0))


def test_upstream_redirect_is_followed(flagpole, upstream):
    upstream.set_mode("redirect")
    fp = start_with(flagpole, upstream, doc(0))
    assert_serves(fp, doc(0))
    moved = [r for r in upstream.requests_for(SERVER) if r.path.startswith(MOVED_PREFIX)]
    assert moved, "the 307 target was never requested (with the key)"


def test_failures_are_logged_once_per_state_change(flagpole, upstream):
    fp = start_with(flagpole, upstream, doc(0))

    def failures() -> list[str]:
        return [line for line in fp.stderr_text().splitlines() if "update failed" in line]

    upstream.set_mode("500")
    wait_until(failures, WAIT, "the first failure was not logged")
    # A fetch is counted before its failure is recorded (and logged), and the next starts after
    # that: once 4 more are counted, at least 3 more identical failures have been through the log.
    counted = failed_fetches(fp)
    wait_until(lambda: failed_fetches(fp) >= counted + 4, WAIT, "fewer than 4 more failed fetches")
    assert len(failures()) == 1, "identical failures logged again:\n" + "\n".join(failures())


def test_conditional_upstream_304_via_etag(flagpole, upstream):
    upstream.etag = '"v0"'
    upstream.set_mode("conditional")
    fp = start_with(flagpole, upstream, doc(0))
    upstream.wait_for_requests(3, SERVER)
    assert readiness(fp)[0] == 200
    assert rev_of(fp) == "hello-r0"


FAULTS = ["500", "401", "garbage", "not_document", "truncated", "slow", "endless", "down"]


@pytest.mark.parametrize("fault", FAULTS)
def test_broken_upstream_keeps_last_good_document(flagpole, upstream, fault):
    d0, d1 = doc(0), doc(1)
    fp = start_with(flagpole, upstream, d0)
    etag_doc = fp.get("/api/v1/environment-document/", SERVER).header("etag")
    etag_flags = fp.get("/api/v1/flags/", CLIENT).header("etag")
    replacement = None
    failed_before = failed_fetches(fp)
    if fault == "down":
        port = upstream.port
        upstream.stop()
    else:
        upstream.set_mode(fault)
        upstream.set_document(SERVER, d1)  # what a broken fetch must never leak through
    # The first failure; from then on no poll may succeed.
    wait_until(lambda: failed_fetches(fp) > failed_before, WAIT, "no failed fetch counted")
    last_ok = lsu(fp)

    # Two more failed polls: flags never change, never error, last_successful_update frozen.
    deadline = time.monotonic() + WAIT
    while failed_fetches(fp) < failed_before + 3:
        assert time.monotonic() < deadline, f"fewer than 3 failed fetches in {WAIT} s"
        assert rev_of(fp) == "hello-r0"
        assert rev_of(fp, CLIENT) == "hello-r0"
        time.sleep(0.1)
    assert lsu(fp) == last_ok, "last_successful_update advanced on a failed fetch"
    assert_serves(fp, d0)
    assert fp.get("/api/v1/environment-document/", SERVER).header("etag") == etag_doc
    assert fp.get("/api/v1/flags/", CLIENT).header("etag") == etag_flags

    if fault in ("500", "down"):
        # ...and readiness turns stale 1 + 2 × 1 s after the last success (never earlier), while
        # flags are still served.
        wait_until(lambda: assert_staleness_rule(fp, STALE_AFTER_1_ENV)[0] == 503, WAIT,
                   "readiness never went stale")
        assert rev_of(fp) == "hello-r0"

    # Recovery.
    if fault == "down":
        replacement = Upstream(port=port).start()
        replacement.set_document(SERVER, d1)
    else:
        upstream.set_mode("ok")
    try:
        wait_rev(fp, 1)
        fp.wait_ready(WAIT)
        assert_serves(fp, d1)
        assert lsu(fp) > last_ok
    finally:
        if replacement is not None:
            replacement.stop()


def test_staleness_scales_with_number_of_environments(flagpole, upstream):
    """stale = now − last_successful_update > poll + grace × n_envs: with a 4 s grace and 2
    environments, 9 s. Every readiness answer is judged by that rule until one is stale, so it is
    never stale too early; and one answer still ready when the one-environment limit (5 s) had
    certainly passed shows that the limit scales (the samples are 0.1 s apart; the window is
    about 3 s wide, whole-second timestamps included)."""
    envs = [Env("stale_a", "ser.stale_a"), Env("stale_b", "ser.stale_b")]
    grace = 4
    limit, one_env_limit = POLL_SECONDS + grace * len(envs), POLL_SECONDS + grace
    for e in envs:
        upstream.set_document(e.server_key, make_document(e.client_key))
    fp = flagpole(upstream_config(upstream, envs,
                                  health_check={"environment_update_grace_period_seconds": grace}))
    fp.wait_ready(WAIT)
    upstream.wait_for_requests(2, "ser.stale_a", timeout=WAIT)
    upstream.set_mode("500")
    ready_ages = []
    deadline = time.monotonic() + WAIT
    while True:
        assert time.monotonic() < deadline, f"never stale with 2 environments in {WAIT} s"
        status, age = assert_staleness_rule(fp, limit)
        if status == 503:
            break
        ready_ages.append(age)
        time.sleep(0.1)
    # A reported age over the limit + 1 means a true age over the limit (whole-second timestamps).
    assert max(ready_ages) > one_env_limit + 1, (
        f"never seen ready past the one-environment limit: ready at ages {ready_ages}")


def test_null_grace_period_never_stale(flagpole, upstream):
    fp = start_with(flagpole, upstream, doc(0),
                    health_check={"environment_update_grace_period_seconds": None})
    upstream.set_mode("500")
    # Failed polls for longer than the staleness limit would allow, counted, not timed.
    n0 = upstream.count(SERVER)
    polls = int(STALE_AFTER_1_ENV / POLL_SECONDS) + 2
    deadline = time.monotonic() + WAIT
    while upstream.count(SERVER) < n0 + polls:
        assert time.monotonic() < deadline, f"fewer than {polls} polls in {WAIT} s"
        assert readiness(fp)[0] == 200
        time.sleep(0.25)
    assert readiness(fp)[0] == 200


# ----------------------------------------------------------------------------------------
# Pagination (identity overrides in `Link` pages)
# ----------------------------------------------------------------------------------------

PAGE_USERS = [f"page-user-{i}" for i in range(1, 7)]


def paginated_doc(rev: int) -> dict:
    # 2 built-in overrides + 6 → pages of 3, 3, 2: page-user-5 and -6 live on page 3.
    return doc(rev, extra_identity_overrides=[(u, override_features(f"from-{u}")) for u in PAGE_USERS])


def identity_target(fp, identifier: str, key: str = SERVER) -> str:
    return ex.by_name(fp.identity(key, identifier)["flags"])["identity_target"]["feature_state_value"]


def test_pagination_merges_all_pages(flagpole, upstream):
    full = paginated_doc(0)
    pages = paginate(full, 3)
    assert PAGE_USERS[-1] in [o["identifier"] for o in pages[2]["identity_overrides"]]
    upstream.set_pages(SERVER, pages)
    fp = start_with(flagpole, upstream)
    for u in PAGE_USERS:
        assert identity_target(fp, u) == f"from-{u}", u
        assert identity_target(fp, u, CLIENT) == f"from-{u}", u
    assert identity_target(fp, OVERRIDDEN_USER) == "for-you"
    served = fp.get("/api/v1/environment-document/", SERVER).json()
    assert [o["identifier"] for o in served["identity_overrides"]] == [o["identifier"] for o in full["identity_overrides"]]
    assert served == full
    # If-Modified-Since goes on the first page only; every page carries the key.
    upstream.wait_for_requests(2, SERVER, page=1)
    upstream.wait_for_requests(1, SERVER, page=3)
    for r in upstream.requests_for(SERVER):
        if r.page != 1:
            assert "if-modified-since" not in r.headers, (r.page, r.headers)
    assert any("if-modified-since" in r.headers for r in upstream.requests_for(SERVER, page=1))
    assert upstream.count(SERVER, page=2) >= 1 and upstream.count(SERVER, page=3) >= 1


def test_pagination_page2_failure_keeps_old_document(flagpole, upstream):
    fp = start_with(flagpole, upstream, doc(0))
    etag = fp.get("/api/v1/environment-document/", SERVER).header("etag")
    failed_before = failed_fetches(fp)
    upstream.failing_page = 2
    upstream.set_pages(SERVER, paginate(paginated_doc(1), 3))
    upstream.wait_for_requests(2, SERVER, page=2)
    # Counted as failed: flagpole has finished with both fetches (and applied nothing of them).
    wait_until(lambda: failed_fetches(fp) >= failed_before + 2, WAIT, "the failed page 2 was not counted")
    assert rev_of(fp) == "hello-r0"  # page 1 of the new revision was not applied alone
    assert identity_target(fp, "page-user-1") == "nobody"  # page-user-1 is on the new page 1
    assert fp.get("/api/v1/environment-document/", SERVER).header("etag") == etag
    upstream.failing_page = None
    wait_rev(fp, 1)
    for u in PAGE_USERS:
        assert identity_target(fp, u) == f"from-{u}", u


def test_pagination_cross_origin_link_is_rejected(flagpole, upstream):
    other = Upstream().start()
    try:
        fp = start_with(flagpole, upstream, doc(0))
        pages = paginate(paginated_doc(1), 3)
        other.set_pages(SERVER, pages)
        failed_before = failed_fetches(fp)
        upstream.cross_origin_next = f"{other.base_url}{DOC_PATH}?page=2"
        upstream.set_pages(SERVER, pages)
        # Two fetches refused for their Link, counted as failed: flagpole is done with them.
        wait_until(lambda: failed_fetches(fp) >= failed_before + 2, WAIT, "the bad Link was not refused")
        assert other.count() == 0, "flagpole followed a cross-origin Link (and sent it the server key)"
        assert rev_of(fp) == "hello-r0"
        upstream.cross_origin_next = None
        wait_rev(fp, 1)
    finally:
        other.stop()


def test_deleted_identity_override_disappears_at_next_poll(flagpole, upstream):
    fp = start_with(flagpole, upstream, doc(0))
    assert identity_target(fp, OVERRIDDEN_USER) == "for-you"
    upstream.set_document(SERVER, doc(1, identity_overrides=False))
    wait_rev(fp, 1)
    assert identity_target(fp, OVERRIDDEN_USER) == "nobody"
    flags = ex.by_name(fp.identity(SERVER, OVERRIDDEN_USER)["flags"])
    assert flags["server_only_secret"]["feature_state_value"] == "secret-r1"
    assert fp.get("/api/v1/environment-document/", SERVER).json()["identity_overrides"] == []


def test_equal_document_keeps_etag(flagpole, upstream):
    fp = start_with(flagpole, upstream, doc(0))
    paths = [("/api/v1/flags/", CLIENT), ("/api/v1/flags/", SERVER), ("/api/v1/environment-document/", SERVER),
             ("/api/v1/flags/?feature=plain_string", CLIENT)]
    etags = {p: fp.get(p[0], p[1]).header("etag") for p in paths}
    assert all(etags.values()), etags
    t0 = lsu(fp)
    upstream.set_document(SERVER, doc(0))  # same content, sent again with 200 at every poll
    upstream.wait_for_requests(3, SERVER)
    for (path, key), etag in etags.items():
        assert fp.get(path, key).header("etag") == etag, path
        assert fp.get(path, key, {"If-None-Match": etag}).status == 304, path
    assert lsu(fp) > t0
    # A real change does change the ETags.
    upstream.set_document(SERVER, doc(1))
    wait_rev(fp, 1)
    for (path, key), etag in etags.items():
        if "feature=" not in path:
            assert fp.get(path, key).header("etag") != etag, path


# ----------------------------------------------------------------------------------------
# Warm start, local files, tiering
# ----------------------------------------------------------------------------------------


def test_warm_start_from_snapshot(flagpole, upstream, tmp_path):
    snap = tmp_path / "snapshots"
    d3 = doc(3)
    config = upstream_config(upstream, [ENV], flagpole={"snapshot_dir": str(snap)})
    upstream.set_document(SERVER, d3)
    fp1 = flagpole(config)
    fp1.wait_ready(WAIT)
    wait_until(lambda: snap.is_dir() and any(p.is_file() for p in snap.rglob("*")), WAIT, "no snapshot written")
    env_doc = fp1.get("/api/v1/environment-document/", SERVER).body
    assert fp1.stop() == 0

    upstream.stop()  # upstream unreachable from now on
    fp2 = flagpole(config, wait=False)
    fp2.wait_live(60)
    # Served from disk at once, before any successful fetch.
    r = fp2.get("/api/v1/flags/", CLIENT)
    assert r.status == 200, r
    assert ex.typed(r.json()) == ex.typed(ex.env_flags(d3, client=True))
    assert_serves(fp2, d3)
    assert json.loads(fp2.get("/api/v1/environment-document/", SERVER).body) == json.loads(env_doc)


def test_warm_start_ignores_corrupt_snapshot(flagpole, upstream, tmp_path):
    snap = tmp_path / "snapshots"
    config = upstream_config(upstream, [ENV], flagpole={"snapshot_dir": str(snap)})
    upstream.set_document(SERVER, doc(4))
    fp1 = flagpole(config)
    fp1.wait_ready(WAIT)
    wait_until(lambda: snap.is_dir() and any(p.is_file() for p in snap.rglob("*")), WAIT, "no snapshot written")
    assert fp1.stop() == 0
    for p in snap.rglob("*"):
        if p.is_file():
            p.write_bytes(p.read_bytes()[: max(1, p.stat().st_size // 3)])
    upstream.set_document(SERVER, doc(5))
    fp2 = flagpole(config)  # must start (not crash) and load from upstream
    fp2.wait_ready(WAIT)
    assert rev_of(fp2) == "hello-r5"


def test_updated_at_is_reported_as_rfc3339_utc(flagpole, upstream):
    fp = start_with(flagpole, upstream, doc(0))
    body = readiness(fp)[1]
    v = body["last_successful_update"]
    assert re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|\+00:00)$", v), v
    age = (datetime.now(timezone.utc) - datetime.fromisoformat(v.replace("Z", "+00:00"))).total_seconds()
    # Now, give or take a busy machine: not the document's updated_at (2024) nor the epoch.
    assert -1 < age < WAIT, f"last_successful_update {v} is not 'now' ({age:.1f}s)"

