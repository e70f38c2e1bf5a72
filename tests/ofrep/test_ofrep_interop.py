"""Official OpenFeature providers against flagpole: the Python provider
`openfeature-provider-ofrep` 0.3.0 (openfeature-sdk 0.10.0) in-process, and the JS server provider
`@openfeature/ofrep-provider` 0.1.3 (@openfeature/server-sdk 1.x) through node/evaluate.js."""

from __future__ import annotations

import json
import shutil
import subprocess

from openfeature import api
from openfeature.contrib.provider.ofrep import OFREPProvider
from openfeature.evaluation_context import EvaluationContext
from openfeature.flag_evaluation import ErrorCode, Reason

import fixtures as fx
from ofrep_support import MAIN


def py_client(srv, domain: str, headers: dict[str, str]):
    api.set_provider(OFREPProvider(srv.base_url, headers_factory=lambda: dict(headers), timeout=10.0), domain)
    return api.get_client(domain)


def test_python_provider(srv):
    client = py_client(srv, "flagpole-ofrep-python", {"X-API-Key": MAIN.server_key})

    d = client.get_boolean_details("flag_on", False)
    assert (d.value, d.reason, d.variant, d.error_code) == (True, Reason.STATIC, "enabled", None), d
    assert d.flag_metadata["flagsmithFeatureId"] == fx.FEATURES["flag_on"][0], d
    d = client.get_boolean_details("flag_off", True)  # the kill switch beats the code default
    assert (d.value, d.reason, d.error_code) == (False, Reason.DISABLED, None), d
    d = client.get_string_details("text_off", "d")
    assert (d.value, d.reason, d.variant, d.error_code) == ("d", Reason.DISABLED, "disabled", None), d

    d = client.get_string_details("text", "x")
    assert (d.value, d.reason, d.error_code) == ("Hello", Reason.DEFAULT, None), d  # it has an identity override
    d = client.get_integer_details("num", 0)
    assert (d.value, d.error_code) == (10, None), d
    assert type(d.value) is int
    d = client.get_object_details("obj", {})
    assert (d.value, d.error_code) == (fx.FEATURES["obj"][2], None), d
    d = client.get_float_details("num", 1.5)
    assert (d.value, d.error_code) == (1.5, ErrorCode.TYPE_MISMATCH), d
    d = client.get_float_details("ratio", 0.0)
    assert (d.value, d.error_code) == (2.5, None), d

    d = client.get_string_details("seg_feat", "x", EvaluationContext("u1", {"plan": "pro"}))
    assert (d.value, d.reason, d.error_code) == ("pro-value", Reason.TARGETING_MATCH, None), d
    assert d.flag_metadata["flagsmithSegment"] == "pro", d
    d = client.get_string_details("seg_feat", "x", EvaluationContext(None, {"plan": "pro"}))
    assert (d.value, d.reason) == ("default", Reason.DEFAULT), d
    mv_users = fx.mv_identities(MAIN.document, 1)
    d = client.get_string_details("mv", "x", EvaluationContext(mv_users["red"][0]))
    assert (d.value, d.reason, d.variant) == ("red-value", Reason.SPLIT, "red"), d
    # The provider does not encode keys: slashes still reach the right flag.
    d = client.get_string_details("a/b", "x")
    assert (d.value, d.error_code) == ("slash", None), d

    d = client.get_boolean_details("nope", True)
    assert (d.value, d.error_code) == (True, ErrorCode.FLAG_NOT_FOUND), d

    bad = py_client(srv, "flagpole-ofrep-python-bad-key", {"X-API-Key": "ser.not_a_key"})
    d = bad.get_boolean_details("flag_on", False)
    assert (d.value, d.error_code) == (False, ErrorCode.GENERAL), d

    # A client key: the server-only feature does not exist.
    public = py_client(srv, "flagpole-ofrep-python-client-key", {"X-API-Key": MAIN.client_key})
    d = public.get_string_details("secret", "fallback")
    assert (d.value, d.error_code) == ("fallback", ErrorCode.FLAG_NOT_FOUND), d


def run_node(node_dir, tmp_path, request: dict) -> list[dict]:
    inp, out = tmp_path / "in.json", tmp_path / "out.json"
    inp.write_text(json.dumps(request))
    proc = subprocess.run([shutil.which("node"), str(node_dir / "evaluate.js"), str(inp), str(out)],
                          cwd=node_dir, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"node run failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    results = json.loads(out.read_text())
    assert len(results) == len(request["cases"])
    return results


def test_js_server_provider(srv, node_ofrep_dir, tmp_path):
    mv_users = fx.mv_identities(MAIN.document, 1)
    bearer = [["Authorization", f"Bearer {MAIN.server_key}"]]
    providers = {
        "server": {"baseUrl": srv.base_url, "headers": bearer},
        # A trailing slash makes the provider request //ofrep/v1/…
        "slash": {"baseUrl": srv.base_url + "/", "headers": bearer},
        "bad": {"baseUrl": srv.base_url, "headers": [["Authorization", "Bearer ser.not_a_key"]]},
        "client": {"baseUrl": srv.base_url, "headers": [["X-API-Key", MAIN.client_key]]},
    }
    # (provider, type, flag, default, context) → expected (value, reason, variant, errorCode)
    cases = [
        (("server", "boolean", "flag_on", False, {}), (True, "STATIC", "enabled", None)),
        (("server", "boolean", "flag_off", True, {}), (False, "DISABLED", "disabled", None)),
        # @openfeature/ofrep-provider 0.1.3 reads a 200 without `value` as malformed.
        (("server", "string", "text_off", "d", {}), ("d", "ERROR", None, "GENERAL")),
        (("server", "string", "text", "x", {}), ("Hello", "DEFAULT", "enabled", None)),
        (("server", "number", "num", 0, {}), (10, "STATIC", "enabled", None)),
        (("server", "object", "obj", {}, {}), (fx.FEATURES["obj"][2], "STATIC", "enabled", None)),
        (("server", "string", "seg_feat", "x", {"targetingKey": "u1", "plan": "pro"}),
         ("pro-value", "TARGETING_MATCH", "enabled", None)),
        (("server", "string", "seg_feat", "x", {"plan": "pro"}), ("default", "DEFAULT", "enabled", None)),
        (("server", "string", "mv", "x", {"targetingKey": mv_users["blue"][0]}), ("blue-value", "SPLIT", "blue", None)),
        (("server", "string", "a/b", "x", {}), ("slash", "STATIC", "enabled", None)),
        (("server", "boolean", "nope", True, {}), (True, "ERROR", None, "FLAG_NOT_FOUND")),
        (("server", "number", "text", 0, {}), (0, "ERROR", None, "TYPE_MISMATCH")),
        (("slash", "boolean", "flag_on", False, {}), (True, "STATIC", "enabled", None)),
        (("bad", "boolean", "flag_on", False, {}), (False, "ERROR", None, "GENERAL")),
        (("client", "string", "secret", "fallback", {}), ("fallback", "ERROR", None, "FLAG_NOT_FOUND")),
        (("client", "string", "text", "x", {"targetingKey": fx.OVERRIDE_USER}),
         ("Hi override", "TARGETING_MATCH", "enabled", None)),
    ]
    request = {
        "providers": providers,
        "cases": [dict(zip(("provider", "type", "flag", "default", "context"), c)) for c, _ in cases],
    }
    results = run_node(node_ofrep_dir, tmp_path, request)
    problems = []
    for (case, want), got in zip(cases, results):
        have = (got["value"], got["reason"], got["variant"], got["errorCode"])
        if have != want:
            problems.append((case, want, have, got.get("errorMessage")))
    assert not problems, "\n".join(map(repr, problems))
    # Metadata reaches the application (server key: the raw reason too).
    seg = results[6]["flagMetadata"]
    assert seg["flagsmithFeatureId"] == fx.FEATURES["seg_feat"][0] and seg["flagsmithSegment"] == "pro", seg
