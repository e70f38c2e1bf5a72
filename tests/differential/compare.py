"""Type-strict comparison of a reference output with a CLI output line.

- bool, int and float are distinct types (Python's ``True == 1 == 1.0`` must NOT pass);
- floats compare by value, with the sign of zero, and NaN equals NaN;
- dict key order is irrelevant; list order matters (so ``segments`` order matters);
- flags are compared as a dict keyed by name; an extra ``feature_key`` on our side is ignored;
- an error on one side only is a mismatch; errors on both sides match (messages not compared).
"""

from __future__ import annotations

import json
import math
from typing import Any

IGNORED_FLAG_KEYS = {"feature_key"}


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "str"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "dict"
    return type(v).__name__


def _show(v: Any) -> str:
    try:
        return json.dumps(v, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        return repr(v)


def diff_values(a: Any, b: Any, path: str = "$") -> list[str]:
    """Differences between reference value ``a`` and ours ``b`` (empty list = strictly equal)."""
    ka, kb = _kind(a), _kind(b)
    if ka != kb:
        return [f"{path}: type {ka} {_show(a)} (reference) vs {kb} {_show(b)} (ours)"]
    if ka == "float":
        if math.isnan(a) and math.isnan(b):
            return []
        if a == b and math.copysign(1.0, a) == math.copysign(1.0, b):
            return []
        return [f"{path}: {a!r} (reference) vs {b!r} (ours)"]
    if ka == "list":
        out = []
        if len(a) != len(b):
            out.append(f"{path}: list length {len(a)} (reference) vs {len(b)} (ours): {_show(a)} vs {_show(b)}")
            return out
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff_values(x, y, f"{path}[{i}]")
        return out
    if ka == "dict":
        out = []
        for k in a.keys() - b.keys():
            out.append(f"{path}.{k}: missing on our side (reference: {_show(a[k])})")
        for k in b.keys() - a.keys():
            out.append(f"{path}.{k}: unexpected on our side ({_show(b[k])})")
        for k in a.keys() & b.keys():
            out += diff_values(a[k], b[k], f"{path}.{k}")
        return out
    if a != b:
        return [f"{path}: {_show(a)} (reference) vs {_show(b)} (ours)"]
    return []


def _strip_flag_extras(flags: Any) -> Any:
    if not isinstance(flags, dict):
        return flags
    return {
        name: ({k: v for k, v in f.items() if k not in IGNORED_FLAG_KEYS} if isinstance(f, dict) else f)
        for name, f in flags.items()
    }


def status(out: Any) -> str:
    if isinstance(out, dict) and set(out) == {"ok"}:
        return "ok"
    if isinstance(out, dict) and set(out) == {"error"}:
        return "error"
    return "malformed"


def compare_eval(ref: dict, ours: Any) -> list[str]:
    """Compare two ``{"ok": result} | {"error": msg}`` outputs; returns the differences."""
    rs, os_ = status(ref), status(ours)
    if os_ == "malformed":
        return [f"our output is not {{\"ok\": ...}} or {{\"error\": ...}}: {_show(ours)[:500]}"]
    if rs == "error" and os_ == "error":
        return []
    if rs != os_:
        return [f"reference {rs} ({_show(ref.get(rs))[:300]}) vs ours {os_} ({_show(ours.get(os_))[:300]})"]
    a, b = ref["ok"], ours["ok"]
    if not isinstance(b, dict):
        return [f"our result is not an object: {_show(b)[:300]}"]
    b = dict(b)
    if "flags" in b:
        b["flags"] = _strip_flag_extras(b["flags"])
    return diff_values(a, b, "$")


def signature(ref: dict, ours: Any) -> tuple[str, str]:
    """Coarse class of a mismatch, kept constant while shrinking."""
    return status(ref), status(ours)
