"""Generates the two equivalent flag sets bench/flagd.sh serves: N boolean flags, the first of
which is targeted by one rule (`plan == "pro"` turns it off), as a Flagsmith environment document
(for Flagpole) and as a flagd flag configuration (for flagd).

    python3 bench/flagd/gen_docs.py OUT_DIR [N]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

CLIENT_KEY = "bench_flagd_client"


def feature_state(i: int, name: str, enabled: bool, priority: int | None = None) -> dict:
    return {
        "feature": {"id": 1000 + i, "name": name, "type": "STANDARD"},
        "enabled": enabled,
        "feature_state_value": None,
        "django_id": 5000 + i + (10000 if priority is not None else 0),
        "featurestate_uuid": f"00000000-0000-4000-8000-{i + (10000 if priority is not None else 0):012d}",
        "feature_segment": None if priority is None else {"priority": priority},
        "multivariate_feature_state_values": [],
    }


def flagsmith(n: int) -> dict:
    names = [f"flag_{i:03d}" for i in range(n)]
    return {
        "id": 77, "api_key": CLIENT_KEY, "name": "bench",
        "updated_at": "2026-01-01T00:00:00.000000Z",
        "allow_client_traits": True, "hide_sensitive_data": False, "hide_disabled_flags": None,
        "use_identity_composite_key_for_hashing": True, "use_identity_overrides_in_local_eval": True,
        "project": {
            "id": 7, "name": "bench", "hide_disabled_flags": False, "enable_realtime_updates": False,
            "server_key_only_feature_ids": [],
            "organisation": {"id": 1, "name": "bench", "feature_analytics": False,
                             "stop_serving_flags": False, "persist_trait_data": True},
            "segments": [{
                "id": 1, "name": "pro",
                "rules": [{"type": "ALL", "rules": [], "conditions": [
                    {"operator": "EQUAL", "property_": "plan", "value": "pro"}]}],
                "feature_states": [feature_state(0, names[0], False, priority=0)],
            }],
        },
        "feature_states": [feature_state(i, name, True) for i, name in enumerate(names)],
        "identity_overrides": [],
        "segment_overrides": [],
    }


def flagd(n: int) -> dict:
    flags = {}
    for i in range(n):
        flag = {"state": "ENABLED", "variants": {"on": True, "off": False}, "defaultVariant": "on"}
        if i == 0:
            flag["targeting"] = {"if": [{"==": [{"var": "plan"}, "pro"]}, "off", "on"]}
        flags[f"flag_{i:03d}"] = flag
    return {"$schema": "https://flagd.dev/schema/v0/flags.json", "flags": flags}


def main() -> None:
    out = Path(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    out.mkdir(parents=True, exist_ok=True)
    (out / "flagsmith.json").write_text(json.dumps(flagsmith(n)))
    (out / "flagd.json").write_text(json.dumps(flagd(n)))


if __name__ == "__main__":
    main()
