"""`flagpole config schema` and `flagpole check` give one answer (docs/serve.md, "Configuration": the
schema checks keys, types and ranges as you type, with the verdict `check` gives).

Many configurations are generated from the schema itself: a valid base, then one change at a
time at every key the schema declares, at any depth: values of every JSON type and around every
bound (0, 1, -1, fractions, large numbers, numeric strings, empty and blank strings, lists,
objects, null), an unknown key and a misspelt key in every section. Each is judged by the schema
(Python `jsonschema`, draft 2020-12, as an editor would) and by `flagpole check`, and the two
verdicts must be equal.

Unknown keys follow docs/serve.md, "Configuration": in Flagpole's own `flagpole` section (closed in the
schema, `additionalProperties: false`) every one is refused by both. Outside it (the Edge
Proxy's keys, whose configs must start on either peer) the schema is open and `check` loads the
config with a warning `unknown config key '…' ignored`, both accepting; the one documented
exception is a key close to a known one there (a likely typo), which the schema accepts and
`check` refuses saying "did you mean".

What a schema cannot say is left out, each for its stated reason (`CROSS_KEY`: rules between two
keys; `NEEDS_FILES`: keys naming files `check` reads), and `check`'s message must then name that
rule, so nothing else can hide behind it.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jsonschema

from serve_harness import CONFIG_ENV_KEYS, binary_path


BASE = {
    "environment_key_pairs": [{"server_side_key": "ser.schema_a", "client_side_key": "schema_a"}],
    "api_url": "http://127.0.0.1:9/api/v1",
}
# Values tried at every key: one of each JSON type, and for a number or a string those around
# every bound and pattern the schema states.
ANY = [True, None, [], ["a"], {"zz": 1}, "ten", "10", 2]
NUMBERS = [0, 1, -1, 0.05, 0.5, 3601, 8192, 70000]
STRINGS = ["", " ", "ser.x", "http://127.0.0.1:9/x", "ftp://127.0.0.1/x", "redis://127.0.0.1:9/0",
           "INFO", "json"]
VALUES = ANY + NUMBERS + STRINGS
# Keys naming files `check` reads (a schema cannot know whether they exist).
NEEDS_FILES = ("server.tls", "flagpole.documents", "unleash")
# Rules between keys, which a schema cannot state; a refusal the schema did not foresee must be
# one of these (the start of `check`'s message).
CROSS_KEY = (
    "error: health_check.environment_update_grace_period_seconds: ",  # at least the poll period
    "error: flagpole.fleet",  # redis_url or sentinels, not both, not neither
)
CROSS_KEY_PORTS = "two listeners cannot share a port"


def leaves(node: dict, path: tuple[str, ...] = ()):
    """Every key path the schema declares, sections included, with the node's own keys."""
    for alternative in [node, *node.get("anyOf", []), *node.get("oneOf", [])]:
        for name, child in (alternative.get("properties") or {}).items():
            yield path + (name,), child
            yield from leaves(child, path + (name,))


def set_at(config: dict, path: tuple[str, ...], value) -> dict:
    out = copy.deepcopy(config)
    node = out
    for name in path[:-1]:
        if not isinstance(node.get(name), dict):
            node[name] = {}
        node = node[name]
    node[path[-1]] = value
    return out


def generated(schema: dict) -> list[dict]:
    configs = [BASE]
    sections = [()]
    for path, node in leaves(schema):
        if path[0].startswith("$") or any(".".join(path).startswith(f) for f in NEEDS_FILES):
            continue
        if path[0] == "environment_key_pairs":
            continue  # a list: its element's keys are tried below
        types = json.dumps([node.get("type"), [a.get("type") for a in node.get("anyOf", [])]])
        tried = ANY + (NUMBERS if "number" in types or "integer" in types else []) \
            + (STRINGS if "string" in types else [])
        for value in tried:
            configs.append(set_at(BASE, path, value))
        if "properties" in node:
            sections.append(path)
    for path in sections:
        some_key = next(iter(_properties(schema, path)), "x")
        for key in (FAR_KEY, some_key + "s", some_key[:-1]):
            configs.append(set_at(BASE, path + (key,), 1) if path else {**BASE, key: 1})
    pair = BASE["environment_key_pairs"][0]
    for key in ("server_side_key", "client_side_key"):
        for value in VALUES:
            configs.append({**BASE, "environment_key_pairs": [{**pair, key: value}]})
    configs.append({**BASE, "environment_key_pairs": [{**pair, "client_side_kye": "a"}]})
    configs.append({**BASE, "environment_key_pairs": [{**pair, FAR_KEY: "a"}]})
    return configs


FAR_KEY = "not_a_setting_anywhere"  # close to no key of any section


def far_key_path(node, path: str = "") -> str | None:
    """Where `FAR_KEY` is in a config, as `check` writes key paths (`a.b[0].c`), if anywhere."""
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for name, child in children:
        at = f"{path}[{name}]" if isinstance(name, int) else f"{path}.{name}" if path else name
        if name == FAR_KEY:
            return at
        if (found := far_key_path(child, at)) is not None:
            return found
    return None


def typo_outside_flagpole(message: str) -> bool:
    """`check` refusing a likely typo of a key outside Flagpole's section (the schema is open
    there), with "did you mean"."""
    return (message.startswith("error: unknown key '") and "did you mean" in message
            and not message.startswith("error: unknown key 'flagpole."))


def _properties(schema: dict, path: tuple[str, ...]) -> dict:
    node = schema
    for name in path:
        node = next(a["properties"][name] for a in [node, *node.get("anyOf", [])]
                    if name in (a.get("properties") or {}))
    for alternative in [node, *node.get("anyOf", [])]:
        if alternative.get("properties"):
            return alternative["properties"]
    return {}


def check(config: dict, directory: Path) -> tuple[bool, str, str]:
    """`check`'s verdict, the last line of its stderr, and all of it."""
    env = {k: v for k, v in os.environ.items() if k.lower() not in CONFIG_ENV_KEYS}
    path = directory / f"{abs(hash(json.dumps(config, sort_keys=True)))}.json"
    path.write_text(json.dumps(config))
    done = subprocess.run([str(binary_path()), "check", "--config", str(path)], env=env, cwd=directory,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode in (0, 2), done.stderr
    last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    return done.returncode == 0, last, done.stderr


def test_schema_and_check_give_one_verdict(tmp_path):
    schema = json.loads(subprocess.run([str(binary_path()), "config", "schema"], capture_output=True,
                                       text=True, check=True, timeout=60).stdout)
    validator = jsonschema.Draft202012Validator(schema)
    configs = generated(schema)
    assert len(configs) > 800, len(configs)
    with ThreadPoolExecutor(max_workers=4) as pool:
        verdicts = list(pool.map(lambda c: check(c, tmp_path), configs))
    disagreements = []
    typos_outside, warned, refused_inside = 0, 0, 0
    for config, (accepted, message, stderr) in zip(configs, verdicts):
        errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
        valid = not errors
        far = far_key_path(config)
        if far is not None and far.startswith("flagpole."):
            refused_inside += 1
            if accepted or "not a setting" not in message:
                disagreements.append(f"check did not refuse {far}: {message}")
        elif far is not None:
            warned += 1
            if not accepted or f"unknown config key '{far}' ignored" not in stderr:
                disagreements.append(f"check did not load {far} with a warning: {stderr[-400:]}")
        if valid and not accepted and (message.startswith(CROSS_KEY) or CROSS_KEY_PORTS in message):
            continue  # a rule between keys: not the schema's to say
        if valid and not accepted and typo_outside_flagpole(message):
            typos_outside += 1
            continue  # the documented exception: a likely typo in an open section
        if valid != accepted:
            why = errors[0].message if errors else message
            disagreements.append(f"schema {'accepts' if valid else 'refuses'}, check "
                                 f"{'accepts' if accepted else 'refuses'}: {json.dumps(config)}: {why}")
    assert not disagreements, f"{len(disagreements)} of {len(configs)}:\n" + "\n".join(disagreements[:40])
    # Every kind was tried: far keys warned about outside `flagpole`, refused inside, typos outside.
    assert warned >= 5 and refused_inside >= 5 and typos_outside >= 10, (warned, refused_inside, typos_outside)
