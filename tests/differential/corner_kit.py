"""How a corner case (corner_cases.py) is written and checked: ``Case(id, ctx, expect)``, the
builders of contexts, segments and conditions the catalogue is written with, the identifiers that
hash to a chosen bucket, and the check of a case's expectation against the reference's result."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Callable, Union


Expect = Union[str, Callable[[dict], bool], None]


@dataclass
class Case:
    id: str
    ctx: dict
    expect: Expect = None


ENV = {"key": "env", "name": "Test Environment"}
CASES: list[Case] = []


def add(id_: str, ctx: dict, expect: Expect = None) -> None:
    assert all(c.id != id_ for c in CASES), id_
    CASES.append(Case(id_, ctx, expect))


def ident(traits: Any = None, identifier: str = "user-1", **extra: Any) -> dict:
    out: dict = {"identifier": identifier}
    if traits is not None:
        out["traits"] = traits
    out.update(extra)
    return out


def feature(name: str = "f", value: Any = "default", key: str = "1", enabled: bool = True, **extra: Any) -> dict:
    fc = {"key": key, "name": name, "enabled": enabled, "value": value}
    fc.update(extra)
    return fc


def cond(prop: Any, op: str, value: Any) -> dict:
    return {"property": prop, "operator": op, "value": value}


def cond_ctx(traits: Any, prop: Any, op: str, value: Any, identity: Any = "default", env: dict = ENV,
             seg_key: str = "s1") -> dict:
    """Feature ``f`` + one segment ``s`` with a single ALL rule holding one condition."""
    ctx: dict = {"environment": env}
    if identity == "default":
        ctx["identity"] = ident(traits)
    elif identity != "absent":
        ctx["identity"] = identity
    ctx["features"] = {"f": feature()}
    ctx["segments"] = {seg_key: {
        "key": seg_key, "name": "s", "rules": [{"type": "ALL", "conditions": [cond(prop, op, value)]}],
        "overrides": [feature(value="override", key="2")],
    }}
    return ctx


def c(id_: str, traits: Any, prop: Any, op: str, value: Any, expect: Expect, **kw: Any) -> None:
    add(id_, cond_ctx(traits, prop, op, value, **kw), expect)


def rules_ctx(rules: list, traits: Any = None, segments_extra: dict | None = None) -> dict:
    ctx = {"environment": ENV, "identity": ident(traits or {"t": "yes", "n": 5}),
           "features": {"f": feature()},
           "segments": {"s1": {"key": "s1", "name": "s", "rules": rules,
                               "overrides": [feature(value="override", key="2")]}}}
    if segments_extra:
        ctx["segments"].update(segments_extra)
    return ctx


T = cond("t", "EQUAL", "yes")   # true condition
F = cond("t", "EQUAL", "no")    # false condition
BAD = cond("t", "REGEX", "(")  # raises when evaluated


def seg_names(res: dict) -> list:
    return [s["name"] for s in res["segments"]]


# --- hashing helpers ---------------------------------------------------------------------------

def _m(ids: list) -> int:
    return int(hashlib.md5(",".join(str(i) for i in ids).encode()).hexdigest(), 16) % 9999


def find_identifier(feature_key: str, env_key: str, target_m: int, prefix: str = "u") -> str:
    """An identifier whose implicit key hashes with ``feature_key`` to bucket ``target_m``."""
    for i in range(2_000_000):
        identifier = f"{prefix}{i}"
        if _m([feature_key, f"{env_key}_{identifier}"]) == target_m:
            return identifier
    raise RuntimeError("not found")  # pragma: no cover


def check_expectation(case: Case, out: dict) -> str | None:
    """None if the reference output agrees with ``case.expect``, else a description."""
    e = case.expect
    if e is None:
        return None
    if e == "error":
        return None if "error" in out else f"expected the reference to raise, got {out}"
    if "error" in out:
        return f"reference raised unexpectedly: {out['error']}"
    res = out["ok"]
    if e == "ok":
        return None
    if e in ("match", "nomatch"):
        matched = "s" in seg_names(res)
        if matched != (e == "match"):
            return f"expected {e}, reference segments={res['segments']}"
        return None
    try:
        ok = e(res)
    except Exception as exc:  # noqa: BLE001
        return f"expectation raised {type(exc).__name__}: {exc}; result={res}"
    return None if ok else f"expectation failed; reference result={res}"
