"""What the upstream and life-cycle suites (test_upstream.py, test_lifecycle.py) share: the
environment they serve, its documents by revision, and waiting for and judging what is served.
Timings are explained in test_upstream.py's docstring."""

from __future__ import annotations

import time
from datetime import datetime

import serve_expect as ex
from documents import (
    OVERRIDDEN_USER,
    make_document,
)
from metrics_support import scrape
from serve_harness import (
    GRACE_SECONDS,
    POLL_SECONDS,
    Env,
    upstream_config,
    wait_until,
)


CLIENT = "up_client_key"
SERVER = "ser.up_server_key"
ENV = Env(CLIENT, SERVER)
STALE_AFTER_1_ENV = POLL_SECONDS + GRACE_SECONDS * 1
WAIT = 60  # seconds: the deadline of every wait for an event (a hang, not a slow machine)


def doc(rev: int, **kw) -> dict:
    return make_document(CLIENT, revision=rev, name="Upstream Env", **kw)


def rev_of(fp, key: str = SERVER) -> str:
    """Which revision flagpole serves: plain_string is 'hello-r<rev>'."""
    r = fp.get("/api/v1/flags/?feature=plain_string", key)
    assert r.status == 200, r
    return r.json()["feature_state_value"]


def wait_rev(fp, rev: int, timeout: float = WAIT) -> None:
    wait_until(lambda: rev_of(fp) == f"hello-r{rev}", timeout, f"flagpole never served revision {rev}")


def lsu(fp) -> datetime | None:
    """last_successful_update from readiness, parsed."""
    body = fp.readiness().json()
    v = body.get("last_successful_update")
    if v is None:
        return None
    return datetime.fromisoformat(v.replace("Z", "+00:00"))


def readiness(fp) -> tuple[int, dict]:
    r = fp.readiness()
    return r.status, r.json()


def assert_staleness_rule(fp, limit: float) -> tuple[int, float]:
    """One readiness request, judged by the staleness rule (stale once more than `limit` seconds
    have passed since the last success) with the wall clock read before sending and after the
    answer: a 200 must have been decided no later than `limit` after the last success, a 503 no
    earlier. `last_successful_update` is in whole seconds, truncated: the last success was up to
    1 s after it. Returns the status and the reported age when the request was sent."""
    sent = time.time()
    status, body = readiness(fp)
    received = time.time()
    last = body.get("last_successful_update")
    assert last is not None, body
    age = sent - datetime.fromisoformat(last.replace("Z", "+00:00")).timestamp()
    clocks = 0.05  # two clock reads, and the server's own
    if status == 200:
        assert age <= limit + 1 + clocks, f"ready {age:.2f}s after the last success: {body}"
    else:
        assert status == 503 and body["reason"] == "environment document(s) stale.", (status, body)
        assert age + (received - sent) > limit - clocks, f"stale {age:.2f}s after the last success"
    return status, age


def failed_fetches(fp) -> float:
    """Fetches flagpole counted as failed (every result but 200 and 304), all environments."""
    samples = scrape(fp).series("flagpole_upstream_fetches_total")
    return sum(s.value for s in samples if s.labels.get("result") not in ("200", "304"))


def start_with(flagpole, upstream, document: dict | None = None, envs=None, wait_ready=True, **cfg):
    if document is not None:
        upstream.set_document(SERVER, document)
    fp = flagpole(upstream_config(upstream, envs or [ENV], **cfg))
    if wait_ready:
        fp.wait_ready(WAIT)
    return fp


def assert_serves(fp, document: dict, identities=("user-1", OVERRIDDEN_USER)) -> None:
    for key, client in ((SERVER, False), (CLIENT, True)):
        got = fp.flags(key)
        assert ex.typed(got) == ex.typed(ex.env_flags(document, client)), (key, got)
        for identifier in identities:
            got = fp.identity(key, identifier, {"plan": "pro"})["flags"]
            want = ex.identity_flags(document, identifier, {"plan": "pro"}, client)
            assert ex.typed(got) == ex.typed(want), (key, identifier)


# ----------------------------------------------------------------------------------------
# Initial load, request headers, polling cadence
# ----------------------------------------------------------------------------------------
