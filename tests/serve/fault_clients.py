"""What the fault cases (test_faults.py) serve and ask: the documents upstream sends (good,
bad, another environment's), the requests a client makes during a fault (each checked against
the reference engine), and the client thread that keeps asking them, tagged by phase. Apart from
the cases themselves so that the table of faults reads on its own."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import serve_expect as ex
from documents import OVERRIDDEN_USER, make_document, override_features
from serve_harness import http_request, wait_until

CLIENT = "fault_env_client_key"
SERVER = "ser.fault_env_server_key"
OTHER_CLIENT = "fault_other_client_key"  # an environment this proxy does not serve
PAGE_USERS = [f"page-user-{i}" for i in range(1, 7)]  # 2 built-in overrides + 6: pages of 3, 3, 2
WAIT = 60  # seconds: the deadline of every wait for an event (a hang, not a slow machine)

# ----------------------------------------------------------------------------------------
# Documents
# ----------------------------------------------------------------------------------------


def doc(rev: int, paginated: bool = False) -> dict:
    extra = [(u, override_features(f"{u}-r{rev}")) for u in PAGE_USERS] if paginated else None
    return make_document(CLIENT, name="Fault Env", env_id=5101, revision=rev, extra_identity_overrides=extra)


def bad_segment_doc(rev: int) -> dict:
    """Valid JSON, an environment document in every respect but one segment (rules not a list)."""
    d = doc(rev)
    d["project"]["segments"][0]["rules"] = {"type": "ALL", "conditions": []}
    return d


def foreign_doc(rev: int) -> dict:
    """A perfectly valid document, of another environment (a mixed-up key upstream)."""
    return make_document(OTHER_CLIENT, name="Other Env", env_id=5102, revision=rev)


# ----------------------------------------------------------------------------------------
# What clients ask
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Probe:
    name: str
    method: str
    path: str
    headers: dict
    body: Any = None
    # (document, response JSON) -> None: checks an answer against the reference engine.
    check: Callable[[dict, Any], None] | None = None


def _identity_body(identifier: str, traits: dict) -> dict:
    return {"identifier": identifier, "traits": [{"trait_key": k, "trait_value": v} for k, v in traits.items()]}


def _flags_check(client: bool):
    def check(document: dict, got: Any) -> None:
        assert ex.typed(got) == ex.typed(ex.env_flags(document, client))
    return check


def _identity_check(identifier: str, traits: dict, client: bool):
    def check(document: dict, got: Any) -> None:
        assert got["identifier"] == identifier
        want = ex.identity_flags(document, identifier, traits, client)
        assert ex.typed(got["flags"]) == ex.typed(want)
    return check


def _ofrep_check(document: dict, got: Any) -> None:
    values = {f["key"]: f.get("value") for f in got["flags"]}
    assert values["plain_string"] == next(fs["feature_state_value"] for fs in document["feature_states"]
                                          if fs["feature"]["name"] == "plain_string")


PRO = {"plan": "pro", "age": 30}
PROBES = [
    Probe("flags (client key)", "GET", "/api/v1/flags/", {"X-Environment-Key": CLIENT}, check=_flags_check(True)),
    Probe("flags (server key)", "GET", "/api/v1/flags/", {"X-Environment-Key": SERVER}, check=_flags_check(False)),
    Probe("flags ?feature=", "GET", "/api/v1/flags/?feature=plain_string", {"X-Environment-Key": CLIENT}),
    Probe("identities GET", "GET", "/api/v1/identities/?identifier=user-1", {"X-Environment-Key": CLIENT},
          check=_identity_check("user-1", {}, True)),
    Probe("identities POST (override)", "POST", "/api/v1/identities/", {"X-Environment-Key": SERVER},
          _identity_body(OVERRIDDEN_USER, PRO), check=_identity_check(OVERRIDDEN_USER, PRO, False)),
    Probe("identities POST (page-3 override)", "POST", "/api/v1/identities/", {"X-Environment-Key": CLIENT},
          _identity_body(PAGE_USERS[-1], PRO), check=_identity_check(PAGE_USERS[-1], PRO, True)),
    Probe("OFREP bulk", "POST", "/ofrep/v1/evaluate/flags", {"X-API-Key": SERVER},
          {"context": {"targetingKey": "user-2", "plan": "pro", "age": 30}}, check=_ofrep_check),
    Probe("OFREP bulk (no targeting key)", "POST", "/ofrep/v1/evaluate/flags", {"X-API-Key": CLIENT},
          {"context": {}}, check=_ofrep_check),
    Probe("environment document", "GET", "/api/v1/environment-document/", {"X-Environment-Key": SERVER}),
]


def ask(port: int, probe: Probe) -> tuple[int, bytes]:
    r = http_request(port, probe.method, probe.path, probe.headers, probe.body, timeout=5)
    return r.status, r.body


def answers(port: int) -> dict[str, bytes]:
    """One answer per probe; every one must be a 200."""
    out = {}
    for probe in PROBES:
        status, body = ask(port, probe)
        assert status == 200, (probe.name, status, body[:300])
        out[probe.name] = body
    return out


def check_answers(got: dict[str, bytes], document: dict, pages: list[bytes]) -> None:
    """The answers are the reference engine's for `document`; the environment document is the
    one upstream sent (byte for byte for a single page; all pages merged, key order kept, else)."""
    for probe in PROBES:
        if probe.check is not None:
            try:
                probe.check(document, json.loads(got[probe.name]))
            except AssertionError as exc:
                raise AssertionError(f"{probe.name}: wrong answer for revision {document['updated_at']}") from exc
    served = got["environment document"]
    if len(pages) == 1:
        assert served == pages[0], "the environment document is not byte-equal to what upstream sent"
    else:
        pairs = lambda b: json.loads(b, object_pairs_hook=lambda p: p)  # noqa: E731
        assert pairs(served) == pairs(json.dumps(document).encode()), "pages were not merged in order"


class Clients:
    """A client thread asking every probe over and over and recording each answer, tagged with the
    phase that was current when the request *started*."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.phase = "fault"
        self.records: list[tuple[str, str, int, str, float]] = []  # phase, probe, status, sha, t
        self.bodies: dict[str, bytes] = {}  # sha -> body (for messages)
        self.started: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for probe in PROBES:
                phase = self.phase
                self.started[phase] = self.started.get(phase, 0) + 1
                try:
                    status, body = ask(self.port, probe)
                except OSError as exc:
                    status, body = -1, repr(exc).encode()
                sha = hashlib.sha256(body).hexdigest()
                self.bodies.setdefault(sha, body)
                self.records.append((phase, probe.name, status, sha, time.monotonic()))
            time.sleep(0.01)

    def start(self) -> "Clients":
        self._thread.start()
        return self

    def switch(self, phase: str) -> None:
        """From now on requests count for `phase`; returns once the first one has started (so no
        request of the previous phase is still in flight)."""
        self.phase = phase
        wait_until(lambda: self.started.get(phase, 0) > 0, WAIT, f"the client never started a request in {phase}")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        assert not self._thread.is_alive(), "the client thread did not stop"

    def of(self, phase: str) -> list[tuple[str, str, int, str, float]]:
        return [r for r in self.records if r[0] == phase]

    def count_after(self, phase: str, t: float) -> int:
        """Answers recorded for `phase` after the monotonic time `t`."""
        return sum(1 for r in list(self.records) if r[0] == phase and r[4] > t)

    def show(self, sha: str) -> bytes:
        return self.bodies.get(sha, b"")[:300]


def stale_form(body: bytes) -> Any:
    """An OFREP bulk answer as it reads while the document is stale (docs/serve.md: Stale answers),
    parsed: every flag with a value says `STALE`, the stream's `since` is marked."""
    answer = json.loads(body)
    for flag in answer["flags"]:
        if "value" in flag:
            flag["reason"] = "STALE"
    for stream in answer.get("eventStreams", []):
        stream["endpoint"]["requestUri"] += "-stale"
    return answer


def same_answer(name: str, body: bytes, last_good: bytes) -> bool:
    """`body` is `last_good` byte for byte, or, for an OFREP answer, its stale form."""
    if body == last_good:
        return True
    if not name.startswith("OFREP"):
        return False
    try:
        return json.loads(body) == stale_form(last_good)
    except ValueError:
        return False
