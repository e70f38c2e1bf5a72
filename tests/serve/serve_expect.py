"""Expected proxy answers, computed with the reference engine (flagsmith-flag-engine, through the
official Python SDK's document mapper), plus the proxy's filtering rules for client keys
(server-only features and `hide_disabled_flags`, as docs/serve.md says).

All flag lists use the Edge Proxy's flag shape
`{"feature": {"id", "name", "type"}, "enabled", "feature_state_value"}` in the document's
`feature_states` order.
"""

from __future__ import annotations

import copy
from typing import Any

from flag_engine import engine
from flagsmith.mappers import (
    map_context_and_identity_data_to_context,
    map_environment_document_to_context,
)


def _feature_index(document: dict) -> list[dict]:
    return [fs["feature"] for fs in document["feature_states"]]


def _filter(document: dict, flags: list[dict], client: bool) -> list[dict]:
    if not client:
        return flags
    project = document["project"]
    server_only = set(project.get("server_key_only_feature_ids") or [])
    hide_disabled = bool(project.get("hide_disabled_flags"))
    return [
        f
        for f in flags
        if f["feature"]["id"] not in server_only and not (hide_disabled and not f["enabled"])
    ]


def env_flags(document: dict, client: bool) -> list[dict]:
    """GET /api/v1/flags/: environment defaults, no segments."""
    flags = [
        {
            "feature": {
                "id": fs["feature"]["id"],
                "name": fs["feature"]["name"],
                "type": fs["feature"].get("type") or "STANDARD",
            },
            "enabled": fs["enabled"],
            "feature_state_value": fs["feature_state_value"],
        }
        for fs in document["feature_states"]
    ]
    return _filter(document, flags, client)


def identity_flags(document: dict, identifier: str, traits: dict | None, client: bool) -> list[dict]:
    """Identity flags as /api/v1/identities/ returns them (null traits dropped, like the SDKs)."""
    traits = {k: v for k, v in (traits or {}).items() if v is not None}
    context = map_environment_document_to_context(copy.deepcopy(document))
    context = map_context_and_identity_data_to_context(context, identifier, traits)
    result = engine.get_evaluation_result(context=context)
    by_name = result["flags"]
    flags = []
    for feature in _feature_index(document):
        r = by_name[feature["name"]]
        flags.append(
            {
                "feature": {
                    "id": feature["id"],
                    "name": feature["name"],
                    "type": feature.get("type") or "STANDARD",
                },
                "enabled": r["enabled"],
                "feature_state_value": r["value"],
            }
        )
    return _filter(document, flags, client)


def typed(value: Any) -> Any:
    """A structure where every scalar carries its JSON type, so that 1 != 1.0 != True compare unequal."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [typed(v) for v in value]
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", value)
    if value is None:
        return ("null", None)
    return (type(value).__name__, value)


def by_name(flags: list[dict]) -> dict[str, dict]:
    return {f["feature"]["name"]: f for f in flags}
