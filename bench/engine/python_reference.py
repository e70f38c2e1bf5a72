#!/usr/bin/env python3
"""Times the Python reference engine on the benchmark documents.

The reference is flagsmith-flag-engine 11.1.1 driven the way the Flagsmith Python SDK 6.3.0 drives
it in local evaluation: ``flagsmith.mappers.map_environment_document_to_context`` once per
document, then per evaluation ``map_context_and_identity_data_to_context`` (adding the identity)
and ``flag_engine.engine.get_evaluation_result``.

Usage::

    python_reference.py DOCS_DIR [--names tiny,small,medium] [--identifier ID]
                        [--traits JSON] [--min-seconds S] [--flags-out PATH]

DOCS_DIR holds ``<name>.json`` documents (``gen-docs --out DOCS_DIR`` writes them). Prints one
JSON object on stdout: ``{"tiny": ns_per_evaluation, ...}``. ``--flags-out`` also writes the
evaluated flags (``{"tiny": {"segments": [...], "flags": {name: [enabled, value]}}, ...}``) so
the caller can check that every engine computed the same thing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

from flag_engine.engine import get_evaluation_result
from flagsmith.mappers import (
    map_context_and_identity_data_to_context,
    map_environment_document_to_context,
)

# The benchmark identity of bench/engine/src/docgen.rs (the Rust side passes it explicitly).
DEFAULT_IDENTIFIER = "bench-user"
DEFAULT_TRAITS = {"plan": "enterprise", "age": 42, "app_version": "2.4.1"}


def evaluate(context: dict, identifier: str, traits: dict) -> dict:
    return get_evaluation_result(
        map_context_and_identity_data_to_context(context, identifier, traits)
    )


def time_document(context: dict, identifier: str, traits: dict, min_seconds: float) -> float:
    """Median ns per evaluation over batches, at least ``min_seconds`` of timed work in total."""
    # Warm up and size a batch to ~1/10 of the budget.
    iterations = 1
    while True:
        start = time.perf_counter_ns()
        for _ in range(iterations):
            evaluate(context, identifier, traits)
        elapsed = time.perf_counter_ns() - start
        if elapsed >= min_seconds * 1e9 / 10 or iterations >= 1 << 24:
            break
        iterations *= 2
    samples = []
    total = 0
    while total < min_seconds * 1e9 or len(samples) < 5:
        start = time.perf_counter_ns()
        for _ in range(iterations):
            evaluate(context, identifier, traits)
        elapsed = time.perf_counter_ns() - start
        total += elapsed
        samples.append(elapsed / iterations)
    samples.sort()
    return samples[len(samples) // 2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs_dir", type=Path)
    parser.add_argument("--names", default="tiny,small,medium")
    parser.add_argument("--identifier", default=DEFAULT_IDENTIFIER)
    parser.add_argument("--traits", default=json.dumps(DEFAULT_TRAITS))
    parser.add_argument("--min-seconds", type=float, default=1.0)
    parser.add_argument("--flags-out", type=Path)
    args = parser.parse_args()

    traits = json.loads(args.traits)
    timings: dict[str, float] = {}
    flags_out: dict[str, dict] = {}
    warnings.simplefilter("ignore")
    for name in [n for n in args.names.split(",") if n]:
        document = json.loads((args.docs_dir / f"{name}.json").read_text(encoding="utf-8"))
        context = map_environment_document_to_context(document)
        result = evaluate(context, args.identifier, traits)
        flags_out[name] = {
            "segments": [s["name"] for s in result["segments"]],
            "flags": {k: [f["enabled"], f["value"]] for k, f in result["flags"].items()},
        }
        timings[name] = time_document(context, args.identifier, traits, args.min_seconds)
        print(f"python: {name}: {timings[name]:.0f} ns/eval", file=sys.stderr)
    if args.flags_out:
        args.flags_out.write_text(json.dumps(flags_out), encoding="utf-8")
    print(json.dumps(timings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
