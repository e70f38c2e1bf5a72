"""Fixture documents of the OFREP suite and the answers expected for them.

Documents are Flagsmith environment documents in the wire format (as the Edge Proxy serves them at
`/api/v1/environment-document/`). Expected OFREP results are computed from the reference engine
(flagsmith-flag-engine 11.1.1, through the Flagsmith Python SDK's document mapper, as
tests/serve/serve_expect.py does) and the mapping docs/ofrep.md describes
(values, reasons, variants, metadata).

Features of the main document (ids deliberately not in document order, names not sorted):

| name | enabled | value | what for |
|---|---|---|---|
| flag_on / flag_off | on / off | null | boolean flags (no value: the enabled state) |
| text / text_off | on / off | "Hello" / "Hi" | a disabled string has no value |
| num, ratio, obj | on | 10, 2.5, an object | JSON types kept |
| num_off | off | 10 | a disabled number has no value |
| empty_on | on | "" | an empty value reads as true |
| bool_off, bool_false_on | off / on | true / false | a disabled boolean reads false |
| mv | on | "control-value" | two keyed options (30 % each) and one without a key (20 %): 20 % miss |
| seg_feat | on | "default" | overridden by segment `pro` (`plan == "pro"`) |
| pro_only | off | "pro-feature" | enabled by segment `pro` (filtered after evaluation) |
| env_seg | on | "env-default" | segment on `$.environment.name`: only with an identity |
| secret | on | "s3cret" | in `project.server_key_only_feature_ids` |
| Zeta, a/b, café | on | strings | byte-order sorting, slashes and UTF-8 in keys |
| json_text, json_list, json_bad | on | JSON-looking strings | `parse_json_strings` |
| typed_trait | on | "other" | "int-one" when trait `level` is the integer 1 (not 1.0, not true) |

`text` has an identity override for OVERRIDE_USER.
"""

from __future__ import annotations

import copy
import datetime as _dt
import hashlib
import json
import math
import uuid
from typing import Any

from flag_engine import engine
from flagsmith.mappers import (
    map_context_and_identity_data_to_context,
    map_environment_document_to_context,
)

OVERRIDE_USER = "override-user"
ENV_NAME = "OFREP Env"
UPDATED_AT = _dt.datetime(2025, 2, 20, 21, 28, 18, 654321, tzinfo=_dt.timezone.utc)

# name -> (feature id, enabled, value)
FEATURES: dict[str, tuple[int, bool, Any]] = {
    "text": (103, True, "Hello"),
    "flag_on": (101, True, None),
    "Zeta": (120, True, "upper"),
    "flag_off": (102, False, None),
    "text_off": (104, False, "Hi"),
    "num": (105, True, 10),
    "ratio": (106, True, 2.5),
    "obj": (107, True, {"theme": "dark", "sizes": [1, 2], "nested": {"on": True, "label": None}}),
    "num_off": (122, False, 10),
    "mv": (108, True, "control-value"),
    "seg_feat": (109, True, "default"),
    "pro_only": (110, False, "pro-feature"),
    "secret": (111, True, "s3cret"),
    "env_seg": (112, True, "env-default"),
    "empty_on": (113, True, ""),
    "bool_off": (114, False, True),
    "bool_false_on": (115, True, False),
    "a/b": (116, True, "slash"),
    "café": (117, True, "unicode"),
    "json_text": (118, True, '{"a":1}'),
    "json_list": (119, True, '[1,"x"]'),
    "json_bad": (121, True, "{not json"),
    "typed_trait": (123, True, "other"),
}
SECRET_ID = FEATURES["secret"][0]

# mv options: (mv value id, weight, value, key or None)
MV_OPTIONS = [
    (802, 30, "blue-value", "blue"),  # ids out of document order: sorted by id, red comes first
    (801, 30, "red-value", "red"),
    (803, 20, "green-value", None),
]

OFREP_REASONS = {"STATIC", "DEFAULT", "TARGETING_MATCH", "SPLIT", "DISABLED", "UNKNOWN"}


def _uuid(n: int) -> str:
    return str(uuid.UUID(int=(0x0000_0000_0000_4000_8000_0000_0000_0000 | n)))


def _fs(fid: int, name: str, enabled: bool, value: Any, django_id: int, *, priority: int | None = None,
        mv: list | None = None) -> dict:
    return {
        "feature": {"id": fid, "name": name, "type": "MULTIVARIATE" if mv else "STANDARD"},
        "enabled": enabled,
        "feature_state_value": copy.deepcopy(value),
        "django_id": django_id,
        "featurestate_uuid": _uuid(django_id),
        "feature_segment": None if priority is None else {"priority": priority},
        "multivariate_feature_state_values": mv or [],
    }


def _mv_values() -> list:
    out = []
    for mv_id, weight, value, key in MV_OPTIONS:
        option: dict = {"id": mv_id + 100, "value": value}
        if key is not None:
            option["key"] = key
        out.append({
            "id": mv_id,
            "mv_fs_value_uuid": _uuid(600000 + mv_id),
            "percentage_allocation": weight,
            "multivariate_feature_option": option,
        })
    return out


def _segment(sid: int, name: str, conditions: list, feature_states: list) -> dict:
    return {"id": sid, "name": name, "rules": [{"type": "ALL", "conditions": conditions, "rules": []}],
            "feature_states": feature_states}


def _cond(operator: str, prop: str, value: str | None) -> dict:
    return {"operator": operator, "property_": prop, "value": value}


def make_document(api_key: str, *, env_id: int, name: str = ENV_NAME, hide_disabled_flags: bool = False,
                  revision: int = 0) -> dict:
    """The main fixture document. `revision` > 0 changes `text`'s value and `updated_at` only."""
    feature_states = []
    for i, (fname, (fid, enabled, value)) in enumerate(FEATURES.items()):
        if fname == "text" and revision:
            value = f"Hello r{revision}"
        feature_states.append(_fs(fid, fname, enabled, value, 5000 + i, mv=_mv_values() if fname == "mv" else None))
    segments = [
        _segment(201, "pro", [_cond("EQUAL", "plan", "pro")], [
            _fs(109, "seg_feat", True, "pro-value", 6001, priority=0),
            _fs(110, "pro_only", True, "pro-feature", 6002, priority=0),
        ]),
        _segment(202, "this_env", [_cond("EQUAL", "$.environment.name", name)], [
            _fs(112, "env_seg", True, "env-segment", 6003, priority=1),
        ]),
        # Python's str(): an int 1 matches "^1$", a float 1.0 ("1.0") and a bool True do not.
        _segment(203, "level_is_int_1", [_cond("REGEX", "level", "^1$")], [
            _fs(123, "typed_trait", True, "int-one", 6004, priority=2),
        ]),
    ]
    overrides = [{
        "identifier": OVERRIDE_USER,
        "identity_uuid": _uuid(900001),
        "created_date": "2025-01-01T00:00:00.000000Z",
        "environment_api_key": api_key,
        "django_id": None,
        "identity_features": [_fs(103, "text", True, "Hi override", 7001)],
        "identity_traits": [],
    }]
    updated = UPDATED_AT + _dt.timedelta(minutes=revision)
    return {
        "id": env_id,
        "api_key": api_key,
        "name": name,
        "updated_at": updated.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "allow_client_traits": True,
        "hide_sensitive_data": False,
        "hide_disabled_flags": None,
        "use_identity_composite_key_for_hashing": True,
        "use_identity_overrides_in_local_eval": True,
        "project": {
            "id": 88,
            "name": "OFREP Project",
            "hide_disabled_flags": hide_disabled_flags,
            "enable_realtime_updates": False,
            "server_key_only_feature_ids": [SECRET_ID],
            "organisation": {"id": 8, "name": "OFREP Org", "feature_analytics": False,
                             "stop_serving_flags": False, "persist_trait_data": True},
            "segments": segments,
        },
        "feature_states": feature_states,
        "identity_overrides": overrides,
        "segment_overrides": [],
    }


def make_broken_document(api_key: str, *, env_id: int) -> dict:
    """A document the reference engine cannot evaluate for an identity with an `email` trait: the
    segment overriding `guarded` has an invalid regular expression (the reference raises)."""
    return {
        "id": env_id,
        "api_key": api_key,
        "name": "OFREP Broken",
        "updated_at": UPDATED_AT.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "allow_client_traits": True,
        "hide_sensitive_data": False,
        "hide_disabled_flags": None,
        "use_identity_composite_key_for_hashing": True,
        "use_identity_overrides_in_local_eval": True,
        "project": {
            "id": 89, "name": "OFREP Broken Project", "hide_disabled_flags": False,
            "enable_realtime_updates": False, "server_key_only_feature_ids": [],
            "organisation": {"id": 8, "name": "OFREP Org", "feature_analytics": False,
                             "stop_serving_flags": False, "persist_trait_data": True},
            "segments": [_segment(301, "bad_regex", [_cond("REGEX", "email", "([unclosed")],
                                  [_fs(2, "guarded", False, "off", 8002, priority=0)])],
        },
        "feature_states": [_fs(1, "plain", True, "fine", 8000), _fs(2, "guarded", True, "on", 8001)],
        "identity_overrides": [],
    }


# --------------------------------------------------------------------------------------------
# RFC 8785 (JCS) and the document revision (what ETags and stream events carry)
# --------------------------------------------------------------------------------------------


def _jcs_number(n: int | float) -> str:
    if isinstance(n, bool):
        raise TypeError
    if isinstance(n, int):
        return str(n)
    if not math.isfinite(n):
        raise ValueError("JCS has no NaN/Infinity")
    if n == int(n) and abs(n) < 1e21:
        return str(int(n))
    r = repr(n)
    if "e" in r or abs(n) < 1e-6:
        raise ValueError(f"the fixtures do not use numbers like {r}")
    return r


def jcs(value: Any) -> str:
    """RFC 8785 canonical JSON (for the values the fixtures use)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return _jcs_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(jcs(v) for v in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(f"{jcs(k)}:{jcs(value[k])}" for k in keys) + "}"
    raise TypeError(type(value))


def revision_of(document: dict) -> str:
    """`rev`: lowercase hex of the first 16 bytes of SHA-256 over JCS(document)."""
    return hashlib.sha256(jcs(document).encode()).hexdigest()[:32]


def last_modified_of(document: dict) -> int:
    when = _dt.datetime.strptime(document["updated_at"], "%Y-%m-%dT%H:%M:%S.%fZ")
    return int(when.replace(tzinfo=_dt.timezone.utc).timestamp())


# --------------------------------------------------------------------------------------------
# Expected OFREP results (context → identity and traits, flag → OFREP item)
# --------------------------------------------------------------------------------------------


def engine_flags(document: dict, identifier: str | None, traits: dict | None) -> dict:
    """The reference engine's result per feature name. No identity → environment level: the
    document's own feature states, segments not evaluated (as the SDK's get_environment_flags)."""
    context = map_environment_document_to_context(copy.deepcopy(document))
    if identifier is None:
        context = dict(context)
        context["segments"] = {}
    else:
        scalar = {k: v for k, v in (traits or {}).items() if isinstance(v, (str, int, float, bool))}
        context = map_context_and_identity_data_to_context(context, identifier, scalar)
    return engine.get_evaluation_result(context=context)["flags"]


def context_inputs(context: dict | None) -> tuple[str | None, dict]:
    """(identifier or None, traits) from an OFREP context (docs/ofrep.md)."""
    context = context or {}
    tk = context.get("targetingKey")
    identifier = tk if isinstance(tk, str) and tk else None
    traits: dict = {}
    nested = context.get("traits")
    if isinstance(nested, dict):
        traits.update({k: v for k, v in nested.items() if isinstance(v, (str, int, float, bool))})
    for k, v in context.items():
        if k in ("targetingKey", "traits"):
            continue
        if isinstance(v, (str, int, float, bool)):
            traits[k] = v
    return identifier, traits


def mv_variant_name(value: Any) -> str:
    return "mv-" + hashlib.sha256(jcs(value).encode()).hexdigest()[:8]


def can_vary(document: dict, name: str) -> bool:
    """Whether a feature can answer differently by context (the spec's section 4.2): multivariate
    options, a segment override or an identity override. Only the others are STATIC."""
    for fs in document.get("feature_states") or []:
        if fs.get("feature", {}).get("name") == name and fs.get("multivariate_feature_state_values"):
            return True
    for segment in (document.get("project") or {}).get("segments") or []:
        if any(fs.get("feature", {}).get("name") == name for fs in segment.get("feature_states") or []):
            return True
    for override in document.get("identity_overrides") or []:
        if any(fs.get("feature", {}).get("name") == name for fs in override.get("identity_features") or []):
            return True
    return False


def ofrep_item(name: str, r: dict, *, server: bool, parse_json_strings: bool = False,
               varies: bool = False) -> dict:
    """One OFREP success item from one engine flag result, members in wire order; `varies` is
    can_vary() of the feature."""
    enabled, value, reason, variant = r["enabled"], r["value"], r["reason"], r["variant"]
    item: dict = {"key": name}
    if enabled:
        if value is None or value == "":
            item["value"] = True
        elif parse_json_strings and isinstance(value, str) and value[:1] in ("{", "["):
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = None
            item["value"] = parsed if isinstance(parsed, (dict, list)) else value
        else:
            item["value"] = value
    elif value is None or value == "" or isinstance(value, bool):
        item["value"] = False
    if not enabled:
        item["reason"] = "DISABLED"
    elif reason in ("DEFAULT", "STATIC"):
        item["reason"] = "DEFAULT" if varies else "STATIC"
    elif reason.startswith("TARGETING_MATCH"):
        item["reason"] = "TARGETING_MATCH"
    elif reason.startswith("SPLIT"):
        item["reason"] = "SPLIT"
    else:
        item["reason"] = "UNKNOWN"
    if not enabled:
        item["variant"] = "disabled"
    elif variant is not None:
        item["variant"] = variant
    elif reason.startswith("SPLIT"):
        item["variant"] = mv_variant_name(value)
    else:
        item["variant"] = "enabled"
    meta: dict = {"flagsmithFeatureId": r["metadata"]["id"], "flagsmithEnabled": enabled}
    if server:
        meta["flagsmithReason"] = reason
        if reason.startswith("TARGETING_MATCH; segment="):
            meta["flagsmithSegment"] = reason[len("TARGETING_MATCH; segment="):]
    item["metadata"] = meta
    return item


def visible(document: dict, name: str, item: dict, *, server: bool) -> bool:
    """Client-key filters (server-only features, `hide_disabled_flags`), applied after evaluation."""
    if server:
        return True
    project = document["project"]
    fid = item["metadata"]["flagsmithFeatureId"]
    if fid in (project.get("server_key_only_feature_ids") or []):
        return False
    hide = document.get("hide_disabled_flags")
    if hide is None:
        hide = project.get("hide_disabled_flags")
    return not (hide and not item["metadata"]["flagsmithEnabled"])


def expected_items(document: dict, context: dict | None, *, server: bool,
                   parse_json_strings: bool = False) -> dict[str, dict]:
    """name -> expected OFREP item for every feature visible to this key kind."""
    identifier, traits = context_inputs(context)
    out = {}
    for name, r in engine_flags(document, identifier, traits).items():
        item = ofrep_item(name, r, server=server, parse_json_strings=parse_json_strings,
                          varies=can_vary(document, name))
        if visible(document, name, item, server=server):
            out[name] = item
    return out


def mv_identities(document: dict, wanted: int = 2) -> dict[str, list[str]]:
    """Identifiers by `mv` outcome: 'red', 'blue' (keyed options), 'unkeyed', 'control' (a miss)."""
    found: dict[str, list[str]] = {"red": [], "blue": [], "unkeyed": [], "control": []}
    for i in range(2000):
        identifier = f"mv-user-{i}"
        r = engine_flags(document, identifier, {})["mv"]
        if r["variant"] in ("red", "blue", "control"):
            bucket = r["variant"]
        else:
            assert r["variant"] is None and r["reason"].startswith("SPLIT"), r
            bucket = "unkeyed"
        if len(found[bucket]) < wanted:
            found[bucket].append(identifier)
        if all(len(v) >= wanted for v in found.values()):
            return found
    raise AssertionError(f"could not find identities in every mv bucket: {found}")
