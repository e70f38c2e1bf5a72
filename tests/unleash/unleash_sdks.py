"""Unleash's official SDKs asked about a set of toggles for a set of contexts, against any base
URL (the Unleash server itself, or Flagpole in front of it), and the answer the Unleash server's
own frontend API gives for the same contexts, in one shape to compare:
per context, `{toggle: {"enabled": bool, "variant": {"name", "enabled"[, "payload"]}}}`.

- `node_sdks`: `unleash-client` and `unleash-proxy-client` (tests/unleash/node/evaluate.mjs).
- `python_sdk`: the Python `UnleashClient` (PyPI, in tests/requirements.txt), in this process.
- `server_frontend_answers`: the reference, from the server's `/api/frontend`.
- `SDK_TOGGLES`: toggles made once in the server that exercise what the SDKs evaluate (default,
  userWithId, flexibleRollout with a constraint, strategy variants with payloads, off).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from loopback import EVENT_TIMEOUT, wait_until

# Contexts with a userId or a sessionId, so that every rollout is sticky and the answers are
# the same on every evaluator (no random stickiness), and no remoteAddress (the frontend API
# would take the caller's address, which a server-side SDK never sees).
CONTEXTS = [
    {"userId": "u1"},
    {"userId": "u2", "properties": {"tier": "gold"}},
    {"userId": "u7", "properties": {"tier": "silver"}},
    {"sessionId": "s9", "properties": {"tier": "gold"}},
]


def sdk_toggles(prefix: str) -> dict[str, dict]:
    """Toggles by name: each its strategies in `development` and whether it is on there."""
    variants = [
        {"name": "blue", "weight": 500, "weightType": "variable", "stickiness": "default",
         "payload": {"type": "json", "value": '{"color": "blue"}'}},
        {"name": "green", "weight": 500, "weightType": "variable", "stickiness": "default",
         "payload": {"type": "string", "value": "green"}},
    ]
    return {
        f"{prefix}-everyone": {"on": True, "strategies": [{"strategy": "default"}]},
        f"{prefix}-users": {"on": True, "strategies": [
            {"strategy": "userWithId", "parameters": {"userIds": "u1,u7"}}]},
        f"{prefix}-rollout": {"on": True, "strategies": [
            {"strategy": "flexibleRollout",
             "parameters": {"rollout": "50", "stickiness": "default", "groupId": f"{prefix}-rollout"},
             "constraints": [{"contextName": "tier", "operator": "IN", "values": ["gold", "silver"]}]}]},
        f"{prefix}-variants": {"on": True, "strategies": [
            {"strategy": "flexibleRollout",
             "parameters": {"rollout": "100", "stickiness": "default", "groupId": f"{prefix}-variants"},
             "variants": variants}]},
        f"{prefix}-off": {"on": False, "strategies": [{"strategy": "default"}]},
        # Made last, and on for the first context: once an answer shows it, every change before
        # it shows too (see `settled_frontend_answers`).
        f"{prefix}-not-u2": {"on": True, "strategies": [
            {"strategy": "default",
             "constraints": [{"contextName": "userId", "operator": "NOT_IN", "values": ["u2"]}]}]},
    }


def make_toggles(server, toggles: dict[str, dict], environment: str = "development") -> None:
    for name, spec in toggles.items():
        server.create_toggle(name)
        for s in spec["strategies"]:
            server.add_strategy(name, environment, **s)
        if spec["on"]:
            server.enable(name, environment)


def server_frontend_answers(server, toggles, contexts=CONTEXTS, environment: str = "development") -> list[dict]:
    """What the server's own frontend API answers: a toggle it leaves out is off, with the
    `disabled` variant."""
    answers = []
    for context in contexts:
        enabled = server.frontend(context, environment)
        answers.append({
            name: {"enabled": name in enabled,
                   "variant": variant_of(enabled[name]["variant"]) if name in enabled
                   else {"name": "disabled", "enabled": False}}
            for name in toggles})
    return answers


def settled_frontend_answers(server, toggles, environment: str = "development") -> list[dict]:
    """The server's frontend answers once they show the last toggle `make_toggles` made (its
    frontend cache is renewed a moment after each change)."""
    last = list(toggles)[-1]

    def answers():
        a = server_frontend_answers(server, toggles, environment=environment)
        return a if a[0][last]["enabled"] else None

    return wait_until(answers, EVENT_TIMEOUT, f"the server's frontend API never showed {last}")


def variant_of(v: dict) -> dict:
    variant = {"name": v["name"], "enabled": v["enabled"]}
    if v.get("payload"):
        variant["payload"] = {"type": v["payload"]["type"], "value": v["payload"]["value"]}
    return variant


def node_sdks(node_dir: Path, url: str, client_token: str, frontend_token: str, toggles, app_name: str,
              contexts=CONTEXTS) -> dict:
    """evaluate.mjs's answer (see there); fails the test on an SDK error."""
    with tempfile.TemporaryDirectory() as tmp:
        inp = Path(tmp) / "in.json"
        inp.write_text(json.dumps({"url": url, "clientToken": client_token, "frontendToken": frontend_token,
                                   "appName": app_name, "toggles": sorted(toggles), "contexts": contexts}))
        proc = subprocess.run([shutil.which("node") or "node", "evaluate.mjs", str(inp)], cwd=node_dir,
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["errors"] == [], out
    return out


def python_sdk(url: str, client_token: str, toggles, app_name: str, contexts=CONTEXTS) -> list[dict]:
    """The Python UnleashClient's answers, once it holds every toggle asked about (its first
    fetch may still be under way when initialize_client returns)."""
    try:
        from UnleashClient import UnleashClient
    except ImportError:
        pytest.skip("the Python UnleashClient is not installed (tests/requirements.txt; scripts/test.sh "
                    "installs it into .venv)")
    with tempfile.TemporaryDirectory() as cache:
        client = UnleashClient(url=f"{url}/api", app_name=app_name, instance_id=f"{app_name}-python",
                               custom_headers={"Authorization": client_token}, refresh_interval=1,
                               disable_metrics=True, disable_registration=True, cache_directory=cache)
        try:
            client.initialize_client()
            wait_until(lambda: set(toggles) <= set(client.feature_definitions()), EVENT_TIMEOUT,
                       f"UnleashClient never held {sorted(toggles)}")
            return [{name: {"enabled": client.is_enabled(name, context),
                            "variant": variant_of(client.get_variant(name, context))}
                     for name in toggles} for context in contexts]
        finally:
            client.destroy()
