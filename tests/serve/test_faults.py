"""Fault injection (upstream polling, pagination and readiness; docs/serve.md): a
real `flagpole serve` process polling a real upstream HTTP server on loopback, which breaks in
one way per case and then heals with a *different* valid document.

For every case, while clients keep polling the flags, identities and OFREP bulk endpoints and the
environment document:

1. no wrong flag is served: every answer during the fault is a 200, byte for byte the answer
   given before the fault (never an error, never an empty or partial list), except that OFREP
   answers say `STALE` once the document is stale (docs/serve.md: Stale answers), otherwise equal;
2. the last good document is kept (the environment document is byte-equal);
3. the metrics say so: `flagpole_upstream_fetches_total{result=…}` grows under the fault's own
   label (and no other failure label), `flagpole_environment_update_failed` is 1, the document
   age grows while the last-success timestamp, revision and content revision stay put;
4. the status page (JSON) shows the fault's error text for the environment, and no key;
5. readiness follows the staleness rule (`now − last success > poll + grace × environments`,
   checked against the status page's age on every sample) and answers 503 once stale;
6. once the upstream heals, the new document is served (new revision, checked against the
   reference engine), clients switch from the old answers to the new ones once and never back,
   the failure gauge returns to 0 and the last error is cleared.

Timings are short (poll every second, the shortest period Flagpole accepts; 0.5 s fetch
timeout, 1 s grace, the shortest beside that period: stale 2 s after the last success). Every wait is for events (failed fetches counted, readiness saying stale, client
requests made) with a generous deadline (WAIT) that only stops a hang; staleness is judged
against the status page's own age, so a busy machine cannot make a correct proxy look wrong.

`FLAGPOLE_FAULT_TABLE=<file>` writes a Markdown table of what each case showed (what a client
saw, what the metrics said, what the status page and readiness said).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from documents import paginate
from fault_clients import (CLIENT, PROBES, SERVER, WAIT, Clients, answers, bad_segment_doc, check_answers, doc,
                           foreign_doc, same_answer)
from metrics_support import Metrics, scrape, status_json
from serve_harness import DOC_PATH, Upstream, wait_until

POLL = 1
TIMEOUT = 0.5
GRACE = 1
STALE_AFTER = POLL + GRACE  # one environment
SLACK = 0.005  # float rounding between the status page's age and readiness' own clock

FETCHES = "flagpole_upstream_fetches_total"
FAILED = "flagpole_environment_update_failed"
AGE = "flagpole_environment_document_age_seconds"
LAST_SUCCESS = "flagpole_environment_last_success_timestamp_seconds"
REVISION = "flagpole_environment_revision"
DOC_BYTES = "flagpole_environment_document_bytes"
SUCCESS_LABELS = {"200", "304"}


# ----------------------------------------------------------------------------------------
# The faults
# ----------------------------------------------------------------------------------------


class FaultUpstream(Upstream):
    """The suite's upstream, plus `flapping`: page-1 requests alternate 500, ok, 500, ok, …"""

    def __init__(self, port: int = 0) -> None:
        super().__init__(port)
        self.flapping = False
        self._flaps = 0

    def _handle(self, h) -> None:
        with self.lock:
            if self.flapping and h.path.split("?")[0] == DOC_PATH:
                self._flaps += 1
                self.mode = "500" if self._flaps % 2 else "ok"
        super()._handle(h)


@dataclass
class Ctx:
    upstream: FaultUpstream
    d0: dict
    d1: dict
    paginated: bool
    spares: list = field(default_factory=list)  # upstreams started by the test (stopped at the end)

    def pages(self, document: dict) -> list[dict]:
        return paginate(document, 3) if self.paginated else [document]

    def serve(self, up: Upstream, document: dict) -> None:
        up.set_pages(SERVER, self.pages(document))


def set_mode(mode: str):
    """The upstream switches to `mode`; the next document (were it sent) would be the new one."""
    def inject(c: Ctx) -> None:
        c.upstream.set_mode(mode)
        c.serve(c.upstream, c.d1)
    return inject


def serve_bad(make: Callable[[int], dict]):
    """The upstream answers 200 with a bad document."""
    def inject(c: Ctx) -> None:
        c.upstream.set_document(SERVER, make(1))
    return inject


def go_down(c: Ctx) -> None:
    c.upstream.stop()  # stops listening and cuts its keep-alive connections: connection refused


def come_back(c: Ctx) -> None:
    up = FaultUpstream(port=c.upstream.port)
    c.serve(up, c.d1)
    c.spares.append(up.start())


def fail_page_2(c: Ctx) -> None:
    c.upstream.failing_page = 2
    c.serve(c.upstream, c.d1)  # page 1 of the new document is fetched, page 2 fails


def start_flapping(c: Ctx) -> None:
    c.upstream.flapping = True  # the good answers are the current document again


def heal(c: Ctx) -> None:
    c.serve(c.upstream, c.d1)
    c.upstream.failing_page = None
    c.upstream.flapping = False
    c.upstream.set_mode("ok")


@dataclass
class Fault:
    id: str
    summary: str
    label: str  # the `result` label its failed fetches are counted under
    error: str  # regex the status page's last_error must match (re.search)
    inject: Callable[[Ctx], None]
    heal: Callable[[Ctx], None] = heal
    paginated: bool = False
    flapping: bool = False
    grace: float = GRACE


TIMED_OUT = rf"^timed out after {int(TIMEOUT * 1000)}ms$"
FAULTS = [
    Fault("down", "upstream down (process gone: connection refused)", "connect",
          r"(?i)connection refused", go_down, heal=come_back),
    Fault("500", "HTTP 500", "status_5xx", r"^upstream answered 500 Internal Server Error$", set_mode("500")),
    Fault("401", "HTTP 401 (server key revoked)", "status_4xx", r"^upstream answered 401 Unauthorized$",
          set_mode("401")),
    Fault("garbage", "200 with a body that is not JSON", "invalid_json", r"^invalid JSON from upstream: ",
          set_mode("garbage")),
    Fault("truncated", "200, Content-Length promises more than is sent, connection closed", "network",
          r"(?i)error decoding response body|incomplete|end of file|closed", set_mode("truncated")),
    Fault("endless", "200, chunked body that never ends", "timeout", TIMED_OUT, set_mode("endless")),
    Fault("slow_headers", "nothing sent until after the poll timeout", "timeout", TIMED_OUT, set_mode("slow")),
    Fault("flapping", "alternating 500 / 200 (same document) every poll", "status_5xx",
          r"^upstream answered 500 Internal Server Error$", start_flapping, flapping=True, grace=1.5),
    Fault("page_2_of_3", "paginated document, page 2 of 3 answers 500", "status_5xx",
          r"^page 2: upstream answered 500 Internal Server Error$", fail_page_2, paginated=True),
    Fault("not_document", "200, valid JSON that is not an environment document", "rejected_document",
          r"api_key", set_mode("not_document")),
    Fault("bad_segment", "200, a document whose segment the engine rejects", "rejected_document",
          r"segments\[0\]\.rules", serve_bad(bad_segment_doc)),
    Fault("foreign_document", "200, a valid document of another environment", "rejected_document",
          r"api_key is not this environment's client key", serve_bad(foreign_doc)),
]


# ----------------------------------------------------------------------------------------
# Fixtures and the fault table
# ----------------------------------------------------------------------------------------

TABLE: dict[str, dict[str, str]] = {}


@pytest.fixture(scope="module", autouse=True)
def fault_table():
    yield
    target = os.environ.get("FLAGPOLE_FAULT_TABLE")
    if not target or not TABLE:
        return
    lines = [
        "| case | what a client saw | what the metrics said | what the status page / readiness said |",
        "|---|---|---|---|",
    ]
    for f in FAULTS:
        row = TABLE.get(f.id)
        if row:
            cells = [f"**{f.id}**: {f.summary}", row["client"], row["metrics"], row["status"]]
            lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    Path(target).write_text("\n".join(lines) + "\n")


@pytest.fixture
def upstream():
    up = FaultUpstream().start()
    up.slow_seconds = 1.0  # well after the poll timeout, then the (new) document
    try:
        yield up
    finally:
        up.stop()


def config_for(up: Upstream, grace: float) -> dict:
    return {
        "environment_key_pairs": [{"server_side_key": SERVER, "client_side_key": CLIENT}],
        "api_url": up.api_url,
        "api_poll_frequency_seconds": POLL,
        "api_poll_timeout_seconds": TIMEOUT,
        "health_check": {"environment_update_grace_period_seconds": grace},
    }


# ----------------------------------------------------------------------------------------
# Observations
# ----------------------------------------------------------------------------------------


@dataclass
class Sample:
    t: float
    metrics: Metrics
    env: dict  # the status page's entry for the environment (read after readiness)
    age_before: float  # the status page's age just before readiness was asked
    success_before: str | None
    ready: int
    reason: str | None


def only_env(status: dict) -> dict:
    (env,) = status["environments"]
    return env


def observe(fp) -> Sample:
    before = only_env(status_json(fp))
    r = fp.readiness()
    st = status_json(fp)
    for key in (CLIENT, SERVER):
        assert key not in json.dumps(st), f"the status page shows the key {key!r}"
    m = scrape(fp)
    return Sample(time.monotonic(), m, only_env(st), before["age_seconds"], before["last_success"],
                  r.status, r.json()["reason"])


def failures(m: Metrics) -> dict[str, float]:
    return {s.labels["result"]: s.value for s in m.series(FETCHES) if s.labels["result"] not in SUCCESS_LABELS}


def delta(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    return {k: v - a.get(k, 0.0) for k, v in b.items() if v - a.get(k, 0.0) > 0}


def env_metric(m: Metrics, name: str, fingerprint: str) -> float | None:
    return m.get(name, environment=fingerprint)


def content_revision(m: Metrics, fingerprint: str) -> str:
    (rev,) = [s.labels["content_revision"] for s in m.series("flagpole_environment_info")
              if s.labels["environment"] == fingerprint]
    return rev


# ----------------------------------------------------------------------------------------
# The test
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", FAULTS, ids=[f.id for f in FAULTS])
def test_fault(flagpole, upstream, fault: Fault):
    c = Ctx(upstream, doc(0, fault.paginated), doc(1, fault.paginated), fault.paginated)
    c.serve(upstream, c.d0)
    fp = flagpole(config_for(upstream, fault.grace))
    try:
        run_fault(fp, c, fault)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- flagpole stderr ---\n{fp.stderr_tail(25)}") from None
    finally:
        for up in c.spares:
            up.stop()


def run_fault(fp, c: Ctx, fault: Fault) -> None:
    allowed = POLL + fault.grace  # one environment
    fp.wait_ready(WAIT)
    upstream = c.upstream

    # --- before: the good document, served right -------------------------------------------
    old = answers(fp.port)
    check_answers(old, c.d0, upstream.docs[SERVER])
    m0 = scrape(fp)
    st0 = only_env(status_json(fp))
    fingerprint = st0["environment"]
    assert st0["last_error"] is None and st0["revision"] == 1, st0
    assert env_metric(m0, FAILED, fingerprint) == 0
    rev0 = content_revision(m0, fingerprint)
    ok0 = m0.value(FETCHES, result="200")

    # --- the fault ------------------------------------------------------------------------
    clients = Clients(fp.port).start()
    try:
        clients.switch("fault")
        fault.inject(c)
        samples = watch_fault(fp, fault, fingerprint, m0, allowed, clients)
        html = fp.get("/proxy/status", headers={"Accept": "text/html"}).body.decode()
        for key in (CLIENT, SERVER):
            assert key not in html, f"the HTML status page shows the key {key!r}"
        during = answers(fp.port)  # and once more, after the watch, from here
        assert all(same_answer(k, during[k], old[k]) for k in old), \
            [k for k in old if not same_answer(k, during[k], old[k])]

        # --- healing ----------------------------------------------------------------------
        clients.switch("recovery")
        fault.heal(c)
        t_heal = time.monotonic()
        wait_until(lambda: serves(fp, c, c.d1), WAIT, "the new document was never served after the upstream healed")
        t_new = time.monotonic()
        healed = wait_until(lambda: (lambda s: s if s.env["last_error"] is None and s.ready == 200 and
                                     env_metric(s.metrics, FAILED, fingerprint) == 0 else None)(observe(fp)),
                            WAIT, "failure gauge / last error / readiness did not recover")
        clients.switch("after")
    finally:
        clients.stop()

    # --- after: the new document, served right, and said so -------------------------------
    new = answers(fp.port)
    check_answers(new, c.d1, upstream_pages(c, c.d1))
    changed = [k for k in new if new[k] != old[k]]
    assert "environment document" in changed and "flags (client key)" in changed, changed
    m1 = healed.metrics
    assert healed.env["revision"] == 2, healed.env
    assert env_metric(m1, REVISION, fingerprint) == 2
    assert content_revision(m1, fingerprint) != rev0
    assert m1.value(FETCHES, result="200") > ok0
    assert healed.ready == 200 and healed.reason is None

    # --- what the clients saw ---------------------------------------------------------------
    fault_records = clients.of("fault")
    wrong = [r for r in fault_records if r[2] != 200 or not same_answer(r[1], clients.bodies[r[3]], old[r[1]])]
    assert not wrong, (f"{len(wrong)} of {len(fault_records)} answers during the fault were not the last good "
                       f"one; first: {wrong[0][:3]} {clients.show(wrong[0][3])!r}")
    t_failed = samples["t_first_failure"]
    after_failure = [r for r in fault_records if r[4] > t_failed]
    assert len(after_failure) >= 2 * len(PROBES), f"only {len(after_failure)} client requests after the failure"
    while_unready = [r for r in fault_records if samples["t_stale"] is not None and r[4] > samples["t_stale"]]
    if not fault.flapping:
        assert len(while_unready) >= len(PROBES), f"only {len(while_unready)} client requests while stale"

    recovery = clients.of("recovery") + clients.of("after")
    seen_new_at = None
    for i, (phase, name, status, sha, t) in enumerate(recovery):
        assert status == 200, (phase, name, status, clients.show(sha))
        body = clients.bodies[sha]
        is_old, is_new = same_answer(name, body, old[name]), same_answer(name, body, new[name])
        assert is_old or is_new, f"{name}: an answer that is neither the old nor the new one: {clients.show(sha)!r}"
        if is_new and not is_old and seen_new_at is None:
            seen_new_at = i
        if seen_new_at is not None:
            assert is_new, f"{name}: the old answer again after the new one was served (request {i})"
    assert seen_new_at is not None, "clients never saw the new document"

    # --- the table ----------------------------------------------------------------------------
    TABLE[fault.id] = describe(fault, samples, len(fault_records), len(while_unready), len(recovery),
                               t_new - t_heal, fingerprint)


def upstream_pages(c: Ctx, document: dict) -> list[bytes]:
    return [json.dumps(p).encode() for p in c.pages(document)]


def serves(fp, c: Ctx, document: dict) -> bool:
    """Whether flagpole's environment document is `document` (as sent, or its pages merged)."""
    body = fp.get("/api/v1/environment-document/", SERVER).body
    pages = upstream_pages(c, document)
    return body == pages[0] if len(pages) == 1 else json.loads(body) == document


def watch_fault(fp, fault: Fault, fingerprint: str, m0: Metrics, allowed: float, clients: Clients) -> dict:
    """Samples readiness, the status page and the metrics until the fault has shown everywhere
    and the clients have asked enough during it; asserts the invariants on every sample. Returns
    what was seen."""
    failed0 = failures(m0)
    content0, bytes0 = content_revision(m0, fingerprint), env_metric(m0, DOC_BYTES, fingerprint)
    first: Sample | None = None  # the first sample after a failed fetch was counted
    gauge_seen: set[float] = set()
    ready_seen: set[int] = set()
    errors_seen: set[str] = set()
    stale_at: float | None = None  # the age at which readiness first said stale
    t_stale: float | None = None
    max_age = 0.0
    oks_at_first = None
    last: Sample | None = None
    n = 0
    deadline = time.monotonic() + WAIT
    while True:
        s = observe(fp)
        n += 1
        m, env = s.metrics, s.env
        # The document is kept: same revision, same content, same size, still loaded.
        assert env["loaded"] and env["revision"] == 1, env
        assert env_metric(m, REVISION, fingerprint) == 1
        assert content_revision(m, fingerprint) == content0 and env_metric(m, DOC_BYTES, fingerprint) == bytes0
        assert m.get("flagpole_environment_loaded", environment=fingerprint) == 1
        counted = delta(failed0, failures(m))
        assert set(counted) <= {fault.label}, f"failed fetches counted as {counted}, expected only {fault.label!r}"
        gauge = env_metric(m, FAILED, fingerprint)
        if env["last_error"] is not None:
            errors_seen.add(env["last_error"])
            assert re.search(fault.error, env["last_error"]), f"last_error {env['last_error']!r} !~ {fault.error!r}"
        # The fetch is counted a moment before the failure is recorded: start from a sample that
        # shows both (this one's metrics were read after its status page).
        if counted and first is None and gauge == 1 and env["last_error"] is not None:
            first = s
            oks_at_first = m.value(FETCHES, result="200")
        if first is not None:
            gauge_seen.add(gauge)
            ready_seen.add(s.ready)
            if not fault.flapping:
                # Nothing succeeds any more: the gauge stays up, the last success stays put.
                assert gauge == 1, f"update_failed is {gauge} during the fault"
                assert env["last_error"] is not None
                assert m.value(FETCHES, result="200") == oks_at_first, "a fetch succeeded during the fault"
                assert env_metric(m, LAST_SUCCESS, fingerprint) == env_metric(first.metrics, LAST_SUCCESS, fingerprint)
                assert env["last_success"] == first.env["last_success"]
        # Readiness follows the staleness rule (ages from the status page bracket its answer).
        if s.success_before == env["last_success"]:
            if s.ready == 200:
                assert s.reason is None
                assert s.age_before <= allowed + SLACK, f"ready at age {s.age_before:.3f}s > {allowed}s"
            else:
                assert s.reason == "environment document(s) stale.", s.reason
                assert env["age_seconds"] > allowed - SLACK, f"stale at age {env['age_seconds']:.3f}s <= {allowed}s"
                if stale_at is None:
                    stale_at, t_stale = env["age_seconds"], s.t
        if first is not None:
            max_age = max(max_age, env_metric(m, AGE, fingerprint))
        if fault.flapping:
            # Successes keep coming, so unready only if one came later than the limit allows.
            assert s.ready == 200 or env["age_seconds"] > allowed - SLACK, (
                f"a flapping upstream made the proxy unready at age {env['age_seconds']:.3f}s: {s.reason}")
        last = s
        if first is not None:
            n_failed = counted.get(fault.label, 0)
            asked = clients.count_after("fault", first.t) >= 2 * len(PROBES)
            if fault.flapping:
                done = (n_failed >= 3 and {0.0, 1.0} <= gauge_seen
                        and m.value(FETCHES, result="200") >= oks_at_first + 2 and errors_seen and asked)
            else:
                # Two failed polls, stale, and clients served a round of probes since then.
                done = (n_failed >= 2 and t_stale is not None and env["age_seconds"] > allowed + POLL
                        and asked and clients.count_after("fault", t_stale) >= len(PROBES))
            if done:
                break
        if time.monotonic() > deadline:
            raise AssertionError(
                f"the fault did not show in time: counted={counted} gauge_seen={gauge_seen} ready_seen={ready_seen} "
                f"errors={errors_seen} stale_at={stale_at} last status entry={env}")
        time.sleep(0.05)
    assert first is not None and last is not None
    if not fault.flapping:
        # The age grows while the fault lasts.
        age_first = env_metric(first.metrics, AGE, fingerprint)
        age_last = env_metric(last.metrics, AGE, fingerprint)
        assert age_last > age_first and age_last > allowed, (age_first, age_last)
    return {
        "first": first, "last": last, "t_first_failure": first.t, "samples": n,
        "counted": delta(failed0, failures(last.metrics)), "gauge_seen": gauge_seen,
        "errors": errors_seen, "stale_at": stale_at, "t_stale": t_stale, "ready_seen": ready_seen,
        "max_age": max_age,
        "oks": last.metrics.value(FETCHES, result="200") - oks_at_first,
    }


def describe(fault: Fault, seen: dict, n_fault: int, n_unready: int, n_recovery: int, took_new: float,
             fingerprint: str) -> dict[str, str]:
    first, last = seen["first"], seen["last"]
    counted = ", ".join(f'`result="{k}"` +{v:g}' for k, v in sorted(seen["counted"].items()))
    if fault.flapping:
        metrics = (f"{counted}, `result=\"200\"` +{seen['oks']:g} in between; `update_failed` "
                   f"alternates {'/'.join(str(int(g)) for g in sorted(seen['gauge_seen']))}; age at most "
                   f"{seen['max_age']:.2f} s")
    else:
        metrics = (f"{counted}; `update_failed` 1; age {env_metric(first.metrics, AGE, fingerprint):.1f} → "
                   f"{env_metric(last.metrics, AGE, fingerprint):.1f} s, revision stays 1")
    metrics += "; healed: `result=\"200\"`, `update_failed` 0, revision 2"
    errors = sorted(seen["errors"])
    shown = "; ".join(f'"{e}"' for e in errors[:2]) + (f" (+{len(errors) - 2} more)" if len(errors) > 2 else "")
    if fault.flapping:
        readiness = "readiness 200 throughout"
    else:
        readiness = (f"readiness 503 \"stale\" (first seen at age {seen['stale_at']:.3f} s; limit "
                     f"{POLL + fault.grace:.1f} s)")
    status = f"last_error {shown}; {readiness}; healed: last_error null, 200"
    unready = "" if fault.flapping else f", {n_unready} of them while readiness said stale"
    client = (f"{n_fault} answers during the fault{unready}: all 200, byte-equal to before (0 wrong); healed: "
              f"new revision served {took_new:.2f} s later, old → new once, never back ({n_recovery} answers)")
    return {"client": client, "metrics": metrics, "status": status}
