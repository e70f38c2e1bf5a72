"""Every case of Unleash's client specification (npm @unleash/client-specification 6.1.0, in
tests/unleash/node) answered right through Flagpole: by the official Node SDK (`unleash-client`)
fed each file's state by Flagpole's client API (nothing the SDK needs lost on the way), and by
Flagpole's frontend API: each file's state served with
`--unleash-features`, each case's context POSTed to `/api/frontend/features/{name}` with a
frontend token for every project. `tests` expect the toggle's `enabled`; `variantTests` its
variant (name, enabled, payload) and, where stated, whether the toggle is enabled. A toggle the
state does not hold is a 404, which SDKs read as disabled.

The frontend API fills a context's missing `remoteAddress` with the caller's address, as Unleash
does; the spec's case of a missing address (and a toggle for 127.0.0.1) would then be answered for
the caller. So the requests come from 127.0.0.2, an address no case names.
"""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
import urllib.parse

from conftest import write_toggles

TOKEN = "*:development.spec-frontend-secret"
CLIENT_TOKEN = "*:development.spec-client-secret"
CALLER = "127.0.0.2"


def post_from_caller(port: int, path: str, body: dict) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(CALLER, 0))
    try:
        conn.request("POST", path, json.dumps(body).encode(),
                     {"Authorization": TOKEN, "Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def body_from_events(events: list[dict]) -> dict:
    """The delta API's events applied in order, as an SDK applies them."""
    features: list[dict] = []
    segments: list[dict] = []

    def upsert(items: list[dict], item: dict, key: str) -> None:
        for i, existing in enumerate(items):
            if existing[key] == item[key]:
                items[i] = item
                return
        items.append(item)

    for event in events:
        kind = event["type"]
        if kind == "hydration":
            features, segments = list(event.get("features", [])), list(event.get("segments", []))
        elif kind == "feature-updated":
            upsert(features, event["feature"], "name")
        elif kind == "feature-removed":
            features = [f for f in features if f["name"] != event["featureName"]]
        elif kind == "segment-updated":
            upsert(segments, event["segment"], "id")
        elif kind == "segment-removed":
            segments = [s for s in segments if s["id"] != event["segmentId"]]
        else:
            raise AssertionError(f"unknown delta event type {kind!r}")
    return {"version": 1, "features": features, "segments": segments}


def test_every_case_through_the_frontend_api(tmp_path, node_dir, serve_unleash):
    spec_dir = node_dir / "node_modules" / "@unleash" / "client-specification" / "specifications"
    files = json.loads((spec_dir / "index.json").read_text())
    assert files, "index.json lists no file"
    cases, wrong = 0, []
    for name in files:
        spec = json.loads((spec_dir / name).read_text())
        state = spec["state"]
        body = body_from_events(state["events"]) if "events" in state else state
        path = tmp_path / f"{name}.features.json"
        write_toggles(path, body)
        fp = serve_unleash(path, client=(), frontend=(TOKEN,))
        for case in spec.get("tests", []) + spec.get("variantTests", []):
            cases += 1
            toggle = urllib.parse.quote(case["toggleName"], safe="")
            status, data = post_from_caller(fp.port, f"/api/frontend/features/{toggle}",
                                            case.get("context", {}))
            assert status in (200, 404), (name, case["description"], status, data)
            got = json.loads(data) if status == 200 else {"enabled": False,
                                                          "variant": {"name": "disabled", "enabled": False}}
            expected = case["expectedResult"]
            if isinstance(expected, bool):
                actual = got["enabled"]
            else:
                actual = dict(got["variant"])
                if "feature_enabled" in expected:
                    actual["feature_enabled"] = got["enabled"]
            if actual != expected:
                wrong.append(f"{name}: {case['description']}: expected {expected}, got {actual}")
        fp.stop()
    assert cases >= 279, cases  # 6.1.0 has 279
    assert not wrong, f"{len(wrong)} of {cases} cases answered wrong:\n" + "\n".join(wrong[:40])


def spec_files(node_dir):
    spec_dir = node_dir / "node_modules" / "@unleash" / "client-specification" / "specifications"
    files = json.loads((spec_dir / "index.json").read_text())
    assert files, "index.json lists no file"
    return [(name, spec_dir / name) for name in files]


def test_every_case_through_the_node_sdk_fed_by_flagpole(tmp_path, node_dir, serve_unleash):
    node = shutil.which("node") or "node"
    cases, wrong = 0, []
    for name, path in spec_files(node_dir):
        spec = json.loads(path.read_text())
        state = spec["state"]
        features = tmp_path / f"{name}.features.json"
        write_toggles(features, body_from_events(state["events"]) if "events" in state else state)
        fp = serve_unleash(features, client=(CLIENT_TOKEN,), frontend=())
        run = subprocess.run([node, "spec_sdk.mjs", f"http://127.0.0.1:{fp.port}", CLIENT_TOKEN, str(path)],
                             cwd=node_dir, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, (name, run.stderr[-2000:])
        out = json.loads(run.stdout.strip().splitlines()[-1])
        assert out["errors"] == [], (name, out["errors"])
        for case in out["cases"]:
            cases += 1
            if case["actual"] != case["expected"]:
                wrong.append(f"{name}: {case['description']}: expected {case['expected']}, got {case['actual']}")
        fp.stop()
    assert cases >= 279, cases  # 6.1.0 has 279
    assert not wrong, f"{len(wrong)} of {cases} cases answered wrong:\n" + "\n".join(wrong[:40])
