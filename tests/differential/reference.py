"""The reference side: flagsmith-flag-engine 11.1.1 ``get_evaluation_result``.

``evaluate(text)`` parses the case's JSON text with ``json.loads`` (so ints and floats keep the
kind of their JSON spelling) and returns ``{"ok": result}`` or
``{"error": "<ExceptionType>: message"}``.

``record_conditions(counter)`` instruments the engine so that every evaluated condition is
counted per (operator, outcome) with outcome in {"T", "F", "raised"}.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections import Counter
from typing import Any, Iterator

from flag_engine import engine
from flag_engine.segments import evaluator

KNOWN_OPERATORS = {
    "EQUAL", "NOT_EQUAL", "GREATER_THAN", "GREATER_THAN_INCLUSIVE", "LESS_THAN",
    "LESS_THAN_INCLUSIVE", "CONTAINS", "NOT_CONTAINS", "REGEX", "PERCENTAGE_SPLIT", "MODULO",
    "IS_SET", "IS_NOT_SET", "IN",
}


def _one_line(msg: str) -> str:
    return " ".join(str(msg).split())[:300]


def evaluate_obj(ctx: Any) -> dict:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = engine.get_evaluation_result(ctx)
        # Plain JSON data (drops the lazy-flags dict subclass, keeps int/float kinds).
        return {"ok": json.loads(json.dumps(result, allow_nan=True))}
    except Exception as exc:  # noqa: BLE001 - any exception is "the reference raises"
        return {"error": _one_line(f"{type(exc).__name__}: {exc}")}


def evaluate(text: str) -> dict:
    return evaluate_obj(json.loads(text))


def evaluate_many(texts: list[str]) -> list[dict]:
    return [evaluate(t) for t in texts]


@contextlib.contextmanager
def record_conditions(counter: Counter) -> Iterator[Counter]:
    """Count every condition evaluation as counter[(operator, outcome)]."""
    original = evaluator.context_matches_condition

    def wrapped(context, condition, segment_key):
        op = condition.get("operator") if isinstance(condition, dict) else None
        label = op if op in KNOWN_OPERATORS else "(unknown operator)"
        try:
            res = original(context=context, condition=condition, segment_key=segment_key)
        except Exception:
            counter[(label, "raised")] += 1
            raise
        counter[(label, "T" if res else "F")] += 1
        return res

    evaluator.context_matches_condition = wrapped
    try:
        yield counter
    finally:
        evaluator.context_matches_condition = original
