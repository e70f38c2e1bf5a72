"""Random flagd flag files and evaluation contexts for the differential test (seeded).

Everything flagd's targeting has: every JSONLogic operation the reference knows, `fractional`
(with and without a bucketing expression, missing, zero, negative and fractional weights,
nested rules as variant names), `sem_ver` with every operator and odd versions,
`starts_with`/`ends_with`, `$flagd` and `targetingKey`, `$evaluators` referenced by `$ref`,
metadata on the set and on flags, variants of every JSON type, boolean variant names, absent,
null, unknown and boolean default variants, DISABLED flags.

Not generated, with the reason: empty objects in a condition (datalogic's truthiness makes
`{}` false, Python's makes it true; a rule never writes one) and lists compared with `==`
(the reference compares them by identity).
"""

from __future__ import annotations

import random
from typing import Any

ATTRS = ["email", "plan", "age", "version", "score", "country", "beta", "tags", "count", "nested"]
NAMES = ["on", "off", "red", "blue", "green", "true", "false", "a", "b", "1", "2.5"]
SEMVER_OPS = ["=", "!=", "<", "<=", ">", ">=", "^", "~"]
VERSIONS = ["1.2.3", "v1.2.3", "V2", "1.2", "1", "2.0.0-alpha", "2.0.0-alpha.1", "2.0.0-beta+build.5",
            "1.10.0", "1.2.3.4", "x.y", "", "01.2.3", 1, 1.5, 2.0]
WORDS = ["ada@example.com", "bob@test.org", "pro", "free", "enterprise", "de", "fr", "us", "", " pro ",
         "10", "9", "1e2", "abc", "Pro"]


def attribute_value(r: random.Random, name: str) -> Any:
    pick = r.random()
    if pick < 0.08:
        return None
    if name == "email":
        return r.choice(["ada@example.com", "bob@test.org", "eve@example.org", "x"])
    if name == "plan":
        return r.choice(["pro", "free", "enterprise", "Pro", "on", "red", "blue"])
    if name == "age":
        return r.choice([0, 17, 18, 21, 65, 30.5, -1, "21", True])
    if name == "version":
        return r.choice(VERSIONS)
    if name == "score":
        return r.choice([0.0, 0.5, 1.25, 99.9, 100, -3, "7.5"])
    if name == "country":
        return r.choice(["de", "fr", "us", "", "DE"])
    if name == "beta":
        return r.choice([True, False, 1, 0, "yes"])
    if name == "tags":
        return r.choice([["a", "b"], [], ["pro"], [1, 2]])
    if name == "count":
        return r.choice(["3", "0", "x", 3, "1_000", " 4 "])
    return r.choice([{"tier": "gold"}, {"tier": 3}, {"tier": None}])


def context(r: random.Random) -> dict:
    ctx: dict[str, Any] = {}
    if r.random() < 0.8:
        ctx["targetingKey"] = r.choice(["user-1", "user-2", "abc", "ada", "u" + str(r.randrange(1000)), ""])
    for name in ATTRS:
        if r.random() < 0.6:
            ctx[name] = attribute_value(r, name)
    return ctx


def literal(r: random.Random) -> Any:
    return r.choice([0, 1, 2, 18, 21, -1, 2.5, 0.0, "pro", "de", "", "10", "abc", True, False, None])


def operand(r: random.Random, depth: int) -> Any:
    pick = r.random()
    if pick < 0.45:
        name = r.choice(ATTRS[:-1] + ["nested.tier", "targetingKey", "$flagd.flagKey", "$flagd.timestamp"])
        if r.random() < 0.15:
            return {"var": [name, literal(r)]}
        return {"var": name}
    if pick < 0.7 or depth <= 0:
        return literal(r)
    op = r.choice(["+", "-", "*", "/", "%", "min", "max", "cat", "substr", "if"])
    if op == "substr":
        args = [operand(r, depth - 1), r.choice([0, 1, -2, 3, 10, -10, 1.7])]
        if r.random() < 0.5:
            args.append(r.choice([1, 2, -1, 0, 5]))
        return {"substr": args}
    if op == "if":
        return {"if": [condition(r, depth - 1), operand(r, depth - 1), operand(r, depth - 1)]}
    n = r.choice([1, 2, 2, 3])
    return {op: [operand(r, depth - 1) for _ in range(n)]}


def condition(r: random.Random, depth: int) -> Any:
    pick = r.random()
    if depth <= 0 or pick < 0.55:
        op = r.choice(["==", "!=", "===", "!==", "<", "<=", ">", ">=", "in", "starts_with", "ends_with",
                       "sem_ver", "!", "!!"])
        if op in ("!", "!!"):
            return {op: [operand(r, depth - 1)]}
        if op == "in":
            haystack = r.choice([["pro", "enterprise"], ["de", "fr"], [1, 21, "21"], {"var": "email"},
                                 "example.com", {"var": "tags"}])
            return {"in": [operand(r, depth - 1), haystack]}
        if op in ("starts_with", "ends_with"):
            return {op: [operand(r, depth - 1), r.choice(["ada", "@example.com", ".org", "", "p", 1])]}
        if op == "sem_ver":
            left = r.choice([{"var": "version"}, r.choice(VERSIONS)])
            return {"sem_ver": [left, r.choice(SEMVER_OPS + ["=="]), r.choice(VERSIONS)]}
        args = [operand(r, depth - 1), operand(r, depth - 1)]
        if op in ("<", "<=") and r.random() < 0.2:
            args.append(operand(r, depth - 1))
        return {op: args}
    op = r.choice(["and", "or", "if"])
    if op == "if":
        return {"if": [condition(r, depth - 1), condition(r, depth - 1), condition(r, depth - 1)]}
    return {op: [condition(r, depth - 1) for _ in range(r.choice([1, 2, 3]))]}


def variant_ref(r: random.Random, names: list[str], depth: int) -> Any:
    """A variant name, or something that evaluates to one (or to no variant)."""
    pick = r.random()
    if pick < 0.7 or depth <= 0:
        return r.choice(names + ([None] if r.random() < 0.1 else []) + (["nope"] if r.random() < 0.05 else []))
    if pick < 0.85:
        return {"if": [condition(r, depth - 1), r.choice(names), r.choice(names)]}
    return {"var": "plan"}


def fractional(r: random.Random, names: list[str], depth: int) -> Any:
    args: list[Any] = []
    shape = r.random()
    if shape < 0.4:
        args.append(r.choice([{"cat": [{"var": "$flagd.flagKey"}, {"var": "email"}]}, {"var": "email"},
                              {"var": "targetingKey"}, "fixed-key"]))
    for _ in range(r.choice([1, 2, 3, 4])):
        name = variant_ref(r, names, depth - 1)
        w = r.random()
        if w < 0.25:
            args.append([name])
        elif w < 0.9:
            args.append([name, r.choice([0, 1, 5, 10, 25, 50, 100, -5])])
        else:
            args.append([name, r.choice([1.5, "10", True])])
    return {"fractional": args}


def targeting(r: random.Random, names: list[str], evaluators: list[str]) -> Any:
    pick = r.random()
    if pick < 0.1:
        return r.choice([None, {}])
    if pick < 0.35:
        return {"if": [condition(r, 3), variant_ref(r, names, 2), condition(r, 2), variant_ref(r, names, 1),
                       variant_ref(r, names, 1)][: r.choice([2, 3, 5])]}
    if pick < 0.55:
        return fractional(r, names, 2)
    if pick < 0.65:
        return {"if": [condition(r, 2), fractional(r, names, 1), variant_ref(r, names, 1)]}
    if pick < 0.75:
        return condition(r, 2)
    if pick < 0.9 and evaluators:
        ref = {"$ref": r.choice(evaluators)}
        return r.choice([ref, {"if": [ref, r.choice(names), r.choice(names)]}])
    return {"var": r.choice(["plan", "country", "targetingKey"])}


def variant_value(r: random.Random) -> Any:
    return r.choice([True, False, 0, 1, 42, -7, 2.5, 1.0, "text", "", {"a": 1, "b": [1, 2]}, [1, "x"], None])


def metadata(r: random.Random) -> dict:
    keys = ["owner", "team", "version", "weight", "live"]
    return {k: r.choice(["ops", "web", 2, 1.5, True, False, "x"]) for k in r.sample(keys, r.randrange(0, 4))}


def flag_file(r: random.Random) -> dict:
    evaluators = {f"ev{i}": condition(r, 2) for i in range(r.choice([0, 1, 2]))}
    flags: dict[str, Any] = {}
    for i in range(r.randrange(3, 9)):
        if r.random() < 0.15:
            names = ["true", "false"]
            variants: dict[str, Any] = {"true": True, "false": False}
        else:
            names = r.sample(NAMES, r.randrange(1, 5))
            variants = {n: variant_value(r) for n in names}
        flag: dict[str, Any] = {"state": "DISABLED" if r.random() < 0.1 else "ENABLED", "variants": variants}
        d = r.random()
        if d < 0.7:
            flag["defaultVariant"] = r.choice(names)
        elif d < 0.8:
            flag["defaultVariant"] = None
        elif d < 0.85:
            flag["defaultVariant"] = "nope"
        elif d < 0.9:
            flag["defaultVariant"] = r.choice([True, False, ""])
        t = targeting(r, names, list(evaluators))
        if t is not None or r.random() < 0.5:
            flag["targeting"] = t
        if r.random() < 0.4:
            flag["metadata"] = metadata(r)
        flags[f"flag-{i}"] = flag
    out: dict[str, Any] = {"flags": flags}
    if evaluators:
        out["$evaluators"] = evaluators
    if r.random() < 0.5:
        out["metadata"] = metadata(r)
    return out
