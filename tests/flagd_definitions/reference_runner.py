"""Runs flagd's reference evaluator (openfeature-flagd-core 1.0.0) over JSON Lines.

Run with the reference venv's Python: `reference_runner.py FLAG_FILE NOW` reads lines
`{"flag": KEY, "context": {...}}` on standard input and writes one answer per line, in the shape
`flagpole eval flagd --batch` writes: key, value (when a variant was resolved), variant, reason,
errorCode, metadata. A file the reference refuses gives one line `{"loadError": ...}`.
"""

from __future__ import annotations

import importlib
import json
import sys

from openfeature.evaluation_context import EvaluationContext
from openfeature.exception import OpenFeatureError
from openfeature.contrib.tools.flagd.core import FlagdCore


class _Clock:
    """`$flagd.timestamp` at a fixed time, so both sides read the same."""

    def __init__(self, now: int) -> None:
        self.now = now

    def time(self) -> float:
        return float(self.now)


def main() -> None:
    path, now = sys.argv[1], int(sys.argv[2])
    # The module, not the function of the same name its package exports.
    targeting_module = importlib.import_module("openfeature.contrib.tools.flagd.core.targeting.targeting")
    targeting_module.time = _Clock(now)
    core = FlagdCore()
    try:
        with open(path, encoding="utf-8") as f:
            core.set_flags(f.read())
    except Exception as e:  # noqa: BLE001 - any refusal is a refusal
        print(json.dumps({"loadError": f"{type(e).__name__}: {e}"}))
        return
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        key = request["flag"]
        context = dict(request.get("context") or {})
        targeting_key = context.pop("targetingKey", None)
        answer: dict = {"key": key}
        try:
            ctx = EvaluationContext(targeting_key=targeting_key, attributes=context)
            details = core._resolve(key, None, ctx, None)
            if details.variant is not None:
                answer["value"] = details.value
                answer["variant"] = details.variant
            answer["reason"] = str(getattr(details.reason, "value", details.reason))
            answer["metadata"] = dict(details.flag_metadata or {})
        except OpenFeatureError as e:
            answer["reason"] = "ERROR"
            answer["errorCode"] = e.error_code.value
            answer["errorMessage"] = str(e)
        except Exception as e:  # noqa: BLE001 - what the OpenFeature SDK reports as GENERAL
            answer["reason"] = "ERROR"
            answer["errorCode"] = "GENERAL"
            answer["errorMessage"] = f"{type(e).__name__}: {e}"
        out.write(json.dumps(answer) + "\n")


if __name__ == "__main__":
    main()
