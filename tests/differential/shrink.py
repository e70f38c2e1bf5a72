"""Greedy shrinking of a failing evaluation context.

Each round builds every "one deletion smaller" variant of the current context (delete one
segment, feature, override, rule, condition, trait, variant, IN item, optional key, ...),
evaluates all of them in ONE batch on each side, and keeps the first one that still shows a
mismatch of the same class (same ok/error status on each side). Stops when no candidate fails.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Callable, Iterator

# Keys that must stay for the object to remain schema-shaped (deleting them changes the
# question being asked rather than shrinking it).
_REQUIRED = {
    "top": {"environment"},
    "environment": {"key", "name"},
    "identity": {"identifier"},
    "feature": {"key", "name", "enabled", "value"},
    "variant": {"value", "weight", "priority"},
    "segment": {"key", "name", "rules"},
    "rule": {"type"},
    "condition": {"property", "operator", "value"},
}


def _kind(path: tuple) -> str | None:
    if path == ():
        return "top"
    if path == ("environment",):
        return "environment"
    if path == ("identity",):
        return "identity"
    if len(path) == 2 and path[0] == "features":
        return "feature"
    if len(path) == 2 and path[0] == "segments":
        return "segment"
    if len(path) >= 2 and isinstance(path[-1], int):
        return {"variants": "variant", "overrides": "feature", "rules": "rule", "conditions": "condition"}.get(path[-2])
    return None


def _walk(obj: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _walk(v, path + (i,))


def _get(obj: Any, path: tuple) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def candidates(ctx: dict) -> Iterator[dict]:
    """All contexts with one element deleted, shallow deletions first."""
    spots: list[tuple[int, tuple, Any]] = []
    for path, node in _walk(ctx):
        if isinstance(node, dict):
            req = _REQUIRED.get(_kind(path) or "", set())
            for k in node:
                if k not in req:
                    spots.append((len(path), path, k))
        elif isinstance(node, list):
            for i in range(len(node)):
                spots.append((len(path), path, i))
    spots.sort(key=lambda s: s[0])
    for _, path, k in spots:
        new = copy.deepcopy(ctx)
        parent = _get(new, path)
        if isinstance(parent, dict):
            del parent[k]
        else:
            del parent[k]
        yield new
    # Simplifications: replace a rule that has sub-rules by one of its sub-rules.
    for path, node in _walk(ctx):
        if _kind(path) == "rule" and isinstance(node, dict) and node.get("rules"):
            for sub in node["rules"]:
                new = copy.deepcopy(ctx)
                parent = _get(new, path[:-1])
                parent[path[-1]] = copy.deepcopy(sub)
                yield new


def shrink(
    ctx: dict,
    still_fails: Callable[[list[dict]], list[bool]],
    max_rounds: int = 300,
) -> dict:
    """Greedily shrink ``ctx`` while ``still_fails`` (batch predicate) holds."""
    current = ctx
    for _ in range(max_rounds):
        cands = list(candidates(current))
        if not cands:
            break
        verdicts = still_fails(cands)
        for cand, bad in zip(cands, verdicts):
            if bad:
                current = cand
                break
        else:
            break
    return current


def size(ctx: Any) -> int:
    return len(json.dumps(ctx, ensure_ascii=False))
