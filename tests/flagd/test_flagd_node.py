"""The JS flagd provider (@openfeature/flagd-provider 0.16.1, RPC mode: grpc-js,
flagd.evaluation.v2) against Flagpole's flagd front door: every value compared with the reference
engine, targeting, splits, errors, client-key filtering, a document change seen as the
provider's ConfigurationChanged event, and several domain-scoped providers on one connection
(their event streams carry no key) through changes and a restart; `STALE` answers (not cached)
while the upstream is away, announced both ways."""

from __future__ import annotations

import json
import shutil
import subprocess

import fixtures as fx
from flagd_support import (MAIN, DriverSession, document_change_case, domains_case, error_cases, reference_cases,
                           stale_case)

# JS has one number type: integers and floats are both read with getNumberDetails.
JS_TYPE = {"boolean": "boolean", "string": "string", "integer": "number", "float": "number",
           "object": "object"}
CONTEXTS = [
    None,
    {"targetingKey": "u1", "plan": "pro"},
    {"targetingKey": "u1", "plan": "free"},
    {"targetingKey": fx.OVERRIDE_USER},
]


def run_driver(node_dir, workdir, request: dict, timeout: float = 120) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    inp, out = workdir / "in.json", workdir / "out.json"
    inp.write_text(json.dumps(request))
    proc = subprocess.run([shutil.which("node") or "node", "evaluate.js", str(inp), str(out)],
                          cwd=node_dir, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"node driver failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(out.read_text())


def sessions(node_dir):
    """Opens a session of JS providers, one per domain with its key as the selector (default
    LRU cache)."""
    def open_session(port: int, domains: dict[str, str]) -> DriverSession:
        providers = {name: {"selector": key} for name, key in domains.items()}
        return DriverSession([shutil.which("node") or "node", "evaluate.js", "--session"], node_dir, port,
                             providers)

    return open_session


def test_js_provider_equals_the_reference(flagd_srv, node_flagd_dir, tmp_path):
    providers = {"server": {"selector": MAIN.server_key, "cache": "disabled"},
                 "client": {"selector": MAIN.client_key, "cache": "disabled"},
                 "cached": {"selector": MAIN.server_key, "cache": "lru"}}
    mv_users = fx.mv_identities(MAIN.document, 1)
    contexts = CONTEXTS + [{"targetingKey": u} for users in mv_users.values() for u in users]
    cases, expected = reference_cases(MAIN, contexts, {"server": True, "client": False},
                                      type_name=JS_TYPE.get)
    extra = error_cases() + [
        # A segment-targeted flag read without context is DEFAULT, so the cache keeps nothing.
        ({"provider": "cached", "type": "string", "flag": "seg_feat", "default": "x"},
         {"value": "default", "reason": "DEFAULT"}),
        ({"provider": "cached", "type": "string", "flag": "seg_feat", "default": "x",
          "context": {"targetingKey": "u9", "plan": "pro"}},
         {"value": "pro-value", "reason": "TARGETING_MATCH"}),
        ({"provider": "cached", "type": "string", "flag": "seg_feat", "default": "x",
          "context": {"targetingKey": "u9", "plan": "free"}},
         {"value": "default", "reason": "DEFAULT"}),
    ]
    cases += [c for c, _ in extra]
    out = run_driver(node_flagd_dir, tmp_path, {"port": flagd_srv.grpc_port, "providers": providers,
                                                "cases": cases})
    got = out["results"]
    assert len(got) == len(cases)
    for case, want, result in zip(cases, expected, got):
        # No variant (a disabled flag): v2 leaves the field out, as flagd does, and JS says None.
        assert result == dict(want, errorCode=None), (case, result)
    for (case, want), result in zip(extra, got[len(expected):]):
        assert {k: result[k] for k in want} == want, (case, result)


def test_js_provider_sees_a_document_change(flagd_srv, node_flagd_dir):
    document_change_case(flagd_srv, sessions(node_flagd_dir), 2)


def test_js_providers_of_one_connection_follow_their_environments(start_flagd, node_flagd_dir, tmp_path):
    # grpc-js shares one HTTP/2 connection between the providers' channels; none of their event
    # streams carries a key.
    domains_case(start_flagd, tmp_path, sessions(node_flagd_dir))


def test_js_provider_with_an_unknown_key(flagd_srv, node_flagd_dir, tmp_path):
    # Its event stream carries no key, so it reports ready; every evaluation is refused.
    request = {"port": flagd_srv.grpc_port, "providers": {"unknown": {"selector": "ser.no_such_key"}},
               "cases": [{"provider": "unknown", "type": "string", "flag": "text", "default": "x"}]}
    result = run_driver(node_flagd_dir, tmp_path, request)["results"][0]
    assert (result["value"], result["errorCode"]) == ("x", "GENERAL"), result


def test_js_provider_says_stale_while_the_upstream_is_away(start_flagd, node_flagd_dir):
    # The provider's stream carries no key: it follows the environment its calls present.
    stale_case(start_flagd, sessions(node_flagd_dir))
