#!/usr/bin/env python3
"""Writes the toggles bench/unleash.sh serves: an Unleash client-features body (version 2, the
shape of `/api/client/features` and of Unleash Edge's bootstrap file) with N toggles in three
projects, seeded so every run serves the same bytes.

Most toggles carry what production toggles carry: a gradual rollout (`flexibleRollout`, sticky on
userId, sessionId or the default) behind constraints on the context fields the load sends
(`region`, `plan`, `age`, `appVersion`, `userId`), often a shared segment, and often variants
(on the toggle or on the strategy). A few are plain on/off, user lists, or disabled. As Unleash
sends them, every strategy and toggle has a `variants` list, empty when it has none (Unleash Edge's
engine treats a strategy without the key differently from one with an empty list: it skips it
when choosing a strategy variant).

    gen_features.py OUT.json [N] [SEGMENTS]
"""

import json
import random
import sys

REGIONS = ["eu-west", "eu-north", "us-east", "us-west", "ap-south", "ap-east", "sa-east"]
PLANS = ["free", "starter", "pro", "enterprise"]
PROJECTS = ["default"] * 6 + ["web", "mobile"]


def constraint(rng):
    kind = rng.randrange(7)
    inverted = rng.random() < 0.1
    if kind == 0:
        return {"contextName": "region", "operator": "IN", "values": rng.sample(REGIONS, rng.randint(1, 4)),
                "inverted": inverted, "caseInsensitive": False}
    if kind == 1:
        return {"contextName": "plan", "operator": "NOT_IN", "values": rng.sample(PLANS, 1),
                "inverted": inverted, "caseInsensitive": False}
    if kind == 2:
        return {"contextName": "age", "operator": rng.choice(["NUM_GT", "NUM_LTE"]),
                "value": str(rng.randint(18, 60)), "values": [], "inverted": inverted, "caseInsensitive": False}
    if kind == 3:
        return {"contextName": "appVersion", "operator": rng.choice(["SEMVER_GT", "SEMVER_LT"]),
                "value": f"2.{rng.randint(0, 9)}.{rng.randint(0, 9)}", "values": [],
                "inverted": inverted, "caseInsensitive": False}
    if kind == 4:
        return {"contextName": "userId", "operator": "STR_ENDS_WITH",
                "values": [str(d) for d in rng.sample(range(10), 3)], "inverted": inverted,
                "caseInsensitive": False}
    if kind == 5:
        return {"contextName": "currentTime", "operator": "DATE_AFTER", "value": "2024-01-01T00:00:00.000Z",
                "values": [], "inverted": inverted, "caseInsensitive": False}
    return {"contextName": "region", "operator": "STR_STARTS_WITH", "values": [rng.choice(["eu", "us", "ap"])],
            "inverted": inverted, "caseInsensitive": True}


def variants(rng, stickiness, strategy_level):
    count = rng.randint(2, 4)
    out = []
    for i in range(count):
        v = {"name": f"v{i}", "weight": 1000 // count, "weightType": "variable", "stickiness": stickiness}
        if rng.random() < 0.7:
            v["payload"] = rng.choice([
                {"type": "string", "value": f"variant-{i}"},
                {"type": "json", "value": json.dumps({"color": rng.choice(["red", "green", "blue"]), "size": i})},
                {"type": "number", "value": str(i * 10)},
            ])
        if not strategy_level and rng.random() < 0.15:
            v["overrides"] = [{"contextName": "userId", "values": [f"user-{rng.randrange(500)}"]}]
        out.append(v)
    # The weights add up to 1000.
    out[-1]["weight"] += 1000 - sum(v["weight"] for v in out)
    return out


def strategy(rng, segments, sid):
    r = rng.random()
    if r < 0.08:
        return {"name": "default", "parameters": {}, "constraints": [], "variants": []}
    if r < 0.14:
        return {"name": "userWithId",
                "parameters": {"userIds": ",".join(f"user-{rng.randrange(500)}" for _ in range(8))},
                "constraints": [], "variants": []}
    stickiness = rng.choice(["default", "userId", "userId", "sessionId"])
    s = {
        "name": "flexibleRollout",
        "parameters": {"rollout": str(rng.choice([5, 10, 25, 50, 75, 100])), "stickiness": stickiness,
                       "groupId": f"group-{sid}"},
        "constraints": [constraint(rng) for _ in range(rng.choice([0, 1, 1, 2, 2, 3]))],
    }
    if segments and rng.random() < 0.4:
        s["segments"] = rng.sample(range(1, segments + 1), rng.choice([1, 1, 2]))
    s["variants"] = variants(rng, stickiness, True) if rng.random() < 0.3 else []
    return s


def main():
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    nseg = int(sys.argv[3]) if len(sys.argv) > 3 else 12
    rng = random.Random(20261128)
    segments = [{"id": i, "name": f"segment-{i}", "constraints": [constraint(rng) for _ in range(rng.randint(1, 3))]}
                for i in range(1, nseg + 1)]
    features = []
    for i in range(n):
        name = f"{rng.choice(['checkout', 'search', 'profile', 'billing', 'feed', 'onboarding'])}-{i:03d}"
        f = {
            "name": name,
            "type": rng.choice(["release", "release", "experiment", "operational", "kill-switch"]),
            "description": f"Benchmark toggle {i}",
            "project": rng.choice(PROJECTS),
            "enabled": rng.random() > 0.1,
            "stale": False,
            "impressionData": rng.random() < 0.2,
            "strategies": [strategy(rng, nseg, f"{i}-{j}") for j in range(rng.choice([1, 1, 1, 2, 3]))],
        }
        f["variants"] = variants(rng, rng.choice(["default", "userId"]), False) if rng.random() < 0.25 else []
        features.append(f)
    body = {"version": 2, "features": features, "segments": segments,
            "query": {"environment": "development", "inlineSegmentConstraints": False}}
    with open(out, "w") as fh:
        json.dump(body, fh, separators=(",", ":"))


if __name__ == "__main__":
    main()
