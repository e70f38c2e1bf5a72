"""Official SDKs against `flagpole serve` (the drop-in promise of the README): the Flagsmith
Python SDK 6.3.0 and the Node SDK (flagsmith-nodejs 8.x) in REMOTE mode must agree, flag by flag
(enabled, value and the value's type), with the Python SDK in LOCAL-evaluation mode fed
flagpole's own `/api/v1/environment-document/` (server key).

Client keys are compared with the local answers filtered as the proxy must filter them
(server-key-only features dropped; disabled flags dropped when `project.hide_disabled_flags`).
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from flagsmith import Flagsmith

import serve_expect as ex
from documents import mixed_identities
from serve_harness import standard_envs

ENVS = standard_envs()
IDENTITIES = mixed_identities(60)  # 63 identities: overrides, near-misses and 60 with mixed traits
assert len(IDENTITIES) >= 50


def sdk_api_url(fp) -> str:
    return f"{fp.base_url}/api/v1/"


@pytest.fixture(scope="module")
def local_answers(srv):
    """env → {"env": summary, "identities": [summary...]} from the Python SDK in local evaluation,
    using the document flagpole serves."""
    answers = {}
    for env in ENVS:
        client = Flagsmith(environment_key=env.server_key, api_url=sdk_api_url(srv),
                           enable_local_evaluation=True, environment_refresh_interval_seconds=3600)
        try:
            assert client._evaluation_context is not None, "local SDK could not load flagpole's environment document"
            answers[env.client_key] = {
                "env": summarise(client.get_environment_flags()),
                "identities": [summarise(client.get_identity_flags(i, t)) for i, t in IDENTITIES],
            }
        finally:
            client.environment_data_polling_manager_thread.stop()
    return answers


def summarise(flags) -> dict:
    return {f.feature_name: {"id": f.feature_id, "enabled": f.enabled, "value": ex.typed(f.value)}
            for f in flags.all_flags()}


def filtered(env, summary: dict, client: bool) -> dict:
    if not client:
        return summary
    server_only = set(env.document["project"]["server_key_only_feature_ids"])
    hide = env.document["project"]["hide_disabled_flags"]
    return {name: f for name, f in summary.items()
            if f["id"] not in server_only and not (hide and not f["enabled"])}


def diff(got: dict, want: dict) -> list:
    out = []
    for name in sorted(set(got) | set(want)):
        if got.get(name) != want.get(name):
            out.append((name, got.get(name), want.get(name)))
    return out


KEYS = [(env, key, client) for env in ENVS for key, client in ((env.client_key, True), (env.server_key, False))]
KEY_IDS = [f"{env.document['name']}-{'client' if client else 'server'}" for env, _, client in KEYS]


def test_local_sdk_sees_the_documents_we_served(srv, local_answers):
    """Sanity: the local-evaluation answers are the reference engine's answers on our documents."""
    for env in ENVS:
        want_env = {f["feature"]["name"]: f for f in ex.env_flags(env.document, client=False)}
        got_env = local_answers[env.client_key]["env"]
        assert {n: (f["enabled"], f["value"]) for n, f in got_env.items()} == {
            n: (f["enabled"], ex.typed(f["feature_state_value"])) for n, f in want_env.items()}


@pytest.mark.parametrize("env,key,client", KEYS, ids=KEY_IDS)
def test_python_sdk_remote_matches_local_evaluation(srv, local_answers, env, key, client):
    remote = Flagsmith(environment_key=key, api_url=sdk_api_url(srv))
    want = local_answers[env.client_key]
    problems = []
    d = diff(summarise(remote.get_environment_flags()), filtered(env, want["env"], client))
    if d:
        problems.append(("environment flags", d))
    for (identifier, traits), want_id in zip(IDENTITIES, want["identities"]):
        d = diff(summarise(remote.get_identity_flags(identifier, traits)), filtered(env, want_id, client))
        if d:
            problems.append((identifier, traits, d))
    assert not problems, f"{len(problems)} disagreement(s), first ones: {problems[:5]}"


JS_TYPES = {"str": "string", "int": "number", "float": "number", "bool": "boolean", "null": "null"}


def to_js(summary: dict) -> dict:
    out = {}
    for name, f in summary.items():
        pytype, value = f["value"]
        out[name] = {"id": f["id"], "enabled": f["enabled"], "value": value, "type": JS_TYPES[pytype]}
    return out


@pytest.mark.parametrize("env,key,client", KEYS, ids=KEY_IDS)
def test_node_sdk_remote_matches_local_evaluation(srv, local_answers, node_sdk_dir, tmp_path, env, key, client):
    node = shutil.which("node")
    request = {
        "api_url": sdk_api_url(srv),
        "key": key,
        "identities": [{"identifier": i, "traits": t} for i, t in IDENTITIES],
    }
    inp, out = tmp_path / "in.json", tmp_path / "out.json"
    inp.write_text(json.dumps(request))
    proc = subprocess.run([node, str(node_sdk_dir / "remote_flags.js"), str(inp), str(out)],
                          cwd=node_sdk_dir, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"node SDK run failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    got = json.loads(out.read_text())
    want = local_answers[env.client_key]
    problems = []
    d = diff(got["env"], to_js(filtered(env, want["env"], client)))
    if d:
        problems.append(("environment flags", d))
    assert len(got["identities"]) == len(IDENTITIES)
    for (identifier, traits), got_id, want_id in zip(IDENTITIES, got["identities"], want["identities"]):
        d = diff(got_id, to_js(filtered(env, want_id, client)))
        if d:
            problems.append((identifier, traits, d))
    assert not problems, f"{len(problems)} disagreement(s), first ones: {problems[:5]}"
