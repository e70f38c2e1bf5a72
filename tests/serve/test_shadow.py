"""Shadow verification (docs/analytics-and-shadow.md): with `flagpole.shadow.sample_rate`, sampled
identity requests are also asked of the Flagsmith API and compared per feature. The scripted
Flagsmith API here serves the environment document and answers `POST /api/v1/identities/` with
the Flagsmith Python SDK's own local evaluation of that document (the reference), filtered for
client keys as the API filters; it can be told to disagree on one feature, to serve a newer
document than Flagpole holds, or to fail. Counted in `flagpole_shadow_comparisons_total{result}`;
a mismatch is logged once per (feature, revision) with the identity's fingerprint and Flagpole's
explanation.
"""

from __future__ import annotations

import json
import re

import pytest
from flagsmith import Flagsmith

from documents import make_document, mixed_identities
from serve_harness import JsonHandler, ScriptedApi, standard_envs, wait_until

ENVS = standard_envs()
ENV = ENVS[0]
IDENTITIES = mixed_identities(12)


class FlagsmithApi(ScriptedApi):
    """Documents by server key; identities answered by the Python SDK's local evaluation."""

    def __init__(self) -> None:
        super().__init__()
        self.document = ENV.document
        self.evaluated_document = ENV.document
        self.disagree_on: str | None = None
        self.identities_status = 200
        self.identity_posts: list[dict] = []
        self.document_gets = 0
        self.conditional = False  # answer 304 to a document request with If-Modified-Since
        self.conditional_gets = 0
        self.sdk = None
        api = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:  # noqa: N802
                if self.path.split("?")[0] != "/api/v1/environment-document/":
                    return self._send(404, b'{"detail":"Not found."}')
                if self.headers.get("X-Environment-Key") != ENV.server_key:
                    return self._send(401, b'{"detail":"Invalid key"}')
                with api.lock:
                    api.document_gets += 1
                    doc = api.document
                    not_modified = api.conditional and self.headers.get("If-Modified-Since")
                    api.conditional_gets += bool(not_modified)
                if not_modified:
                    self.send_response(304)
                    self.end_headers()
                    return None
                self._send(200, json.dumps(doc).encode())

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                key = self.headers.get("X-Environment-Key")
                with api.lock:
                    api.identity_posts.append(body)
                    status = api.identities_status
                if self.path != "/api/v1/identities/" or key not in (ENV.client_key, ENV.server_key):
                    return self._send(404, b'{"detail":"Not found."}')
                if status != 200:
                    return self._send(status, b'{"detail":"upstream says no"}')
                self._send(200, json.dumps(api.answer(body, client=key == ENV.client_key)).encode())

        self.serve(Handler)
        # The reference: the SDK in local evaluation on the document this API serves.
        self.sdk = Flagsmith(environment_key=ENV.server_key, api_url=f"{self.api_url}/",
                             enable_local_evaluation=True, environment_refresh_interval_seconds=3600)

    def answer(self, body: dict, client: bool) -> dict:
        assert body.get("transient") is True, "shadow requests must not make Flagsmith store identities"
        traits = {t["trait_key"]: t["trait_value"] for t in body.get("traits", [])}
        flags = self.sdk.get_identity_flags(body["identifier"], traits=traits)
        project = ENV.document["project"]
        out = []
        for f in flags.all_flags():
            if client and (f.feature_id in project["server_key_only_feature_ids"]
                           or (project["hide_disabled_flags"] and not f.enabled)):
                continue
            enabled = (not f.enabled) if f.feature_name == self.disagree_on else f.enabled
            out.append({"feature": {"id": f.feature_id, "name": f.feature_name, "type": "STANDARD"},
                        "enabled": enabled, "feature_state_value": f.value})
        return {"identifier": body["identifier"], "traits": body.get("traits", []), "flags": out}

    def stop(self) -> None:
        self.sdk.environment_data_polling_manager_thread.stop()
        super().stop()


@pytest.fixture
def api():
    server = FlagsmithApi()
    yield server
    server.stop()


def start(flagpole, api, **shadow):
    config = {
        "environment_key_pairs": [ENV.pair],
        "api_url": api.api_url,
        # Flagpole keeps the document it loaded first: the tests change upstream's under it.
        "api_poll_frequency_seconds": 3600,
        "flagpole": {"shadow": {"sample_rate": 1, "max_per_second": 1000, **shadow}},
    }
    fp = flagpole(config=config)
    fp.wait_ready(60)
    return fp


def comparisons(fp) -> dict:
    text = fp.get("/metrics").body.decode()
    out = {r: 0.0 for r in ("match", "mismatch", "skipped", "error")}
    for result, value in re.findall(r'^flagpole_shadow_comparisons_total\{result="(\w+)"\} (\S+)$', text, re.M):
        out[result] = float(value)
    return out


def dropped(fp, reason: str) -> float:
    text = fp.get("/metrics").body.decode()
    m = re.search(rf'^flagpole_shadow_dropped_total\{{reason="{reason}"\}} (\S+)$', text, re.M)
    return float(m.group(1)) if m else 0.0


def ask(fp, key: str, identifier: str, traits: dict) -> None:
    if traits:
        body = {"identifier": identifier, "traits": [{"trait_key": k, "trait_value": v} for k, v in traits.items()]}
        r = fp.post("/api/v1/identities/", body, key=key)
    else:
        r = fp.get(f"/api/v1/identities/?identifier={identifier}", key=key)
    assert r.status == 200, r


def expect(fp, want: dict, message: str) -> None:
    wait_until(lambda: comparisons(fp) == want, 60, f"{message}: {comparisons(fp)} != {want}")


def test_answers_match_then_a_disagreement_is_found_and_logged_once(flagpole, api):
    fp = start(flagpole, api)
    n = 0
    for key in (ENV.server_key, ENV.client_key):
        for identifier, traits in IDENTITIES:
            ask(fp, key, identifier, traits)
            n += 1
    expect(fp, {"match": n, "mismatch": 0, "skipped": 0, "error": 0}, "every answer should match")

    # Upstream says the document is unchanged since Flagpole's (304): the same revision.
    api.set(conditional=True)
    ask(fp, ENV.server_key, "conditional-user", {"plan": "pro"})
    n += 1
    expect(fp, {"match": n, "mismatch": 0, "skipped": 0, "error": 0}, "a 304 proves the same revision")
    assert api.conditional_gets >= 1

    api.set(disagree_on="integer_feature")
    for identifier, traits in IDENTITIES[:5]:
        ask(fp, ENV.server_key, identifier, traits)
    expect(fp, {"match": n, "mismatch": 5, "skipped": 0, "error": 0}, "the disagreement should be found")
    lines = [line for line in fp.stderr_text().splitlines() if "shadow mismatch" in line]
    assert len(lines) == 1, lines  # once per (feature, revision)
    line = lines[0]
    assert "integer_feature" in line and "decided by" in line and "identity=" in line
    assert IDENTITIES[0][0] not in line, "the identity is shown by fingerprint only"
    assert ENV.server_key not in fp.stderr_text() and ENV.client_key not in fp.stderr_text()


def test_different_revisions_are_skipped_and_failures_are_errors(flagpole, api):
    fp = start(flagpole, api)
    ask(fp, ENV.server_key, "u1", {"plan": "pro"})
    expect(fp, {"match": 1, "mismatch": 0, "skipped": 0, "error": 0}, "first comparison")

    # Upstream moved on (Flagpole polls hourly here): comparing now would prove nothing.
    api.set(document=make_document(ENV.client_key, name="Env A", env_id=1001, revision=7))
    ask(fp, ENV.server_key, "u2", {"plan": "pro"})
    ask(fp, ENV.client_key, "u3", {})
    expect(fp, {"match": 1, "mismatch": 0, "skipped": 2, "error": 0}, "different revisions are skipped")

    api.set(document=ENV.document, identities_status=500)
    ask(fp, ENV.server_key, "u4", {})
    expect(fp, {"match": 1, "mismatch": 0, "skipped": 2, "error": 1}, "a failing upstream is an error")


def test_rate_limit_and_sampling_bound_what_goes_upstream(flagpole, api):
    fp = start(flagpole, api, max_per_second=1, queue_size=2, max_concurrency=1)
    for i in range(30):
        ask(fp, ENV.server_key, f"user-{i}", {})
    def settled():
        c = comparisons(fp)
        return sum(c.values()) + dropped(fp, "rate_limited") + dropped(fp, "queue_full") == 30
    wait_until(settled, 60, "every sample compared or dropped")
    assert dropped(fp, "rate_limited") >= 1
    assert len(api.identity_posts) == sum(comparisons(fp).values()) < 30


def test_off_by_default(flagpole, api):
    fp = flagpole(config={"environment_key_pairs": [ENV.pair], "api_url": api.api_url})
    fp.wait_ready(60)
    for i in range(10):
        ask(fp, ENV.server_key, f"user-{i}", {"plan": "pro"})
    assert api.identity_posts == []
    assert "flagpole_shadow_comparisons_total" not in fp.get("/metrics").body.decode()
