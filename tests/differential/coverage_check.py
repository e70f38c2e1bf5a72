"""Validate the context generator against the reference alone (no CLI needed).

    python tests/differential/coverage_check.py [N] [SEED]

Prints, per operator, how often a condition evaluated TRUE / FALSE / raised, plus how many
contexts raised (and with what exception type). ``check(...)`` returns the list of problems
(an operator without both outcomes, an error kind that does not raise) and is also run as a test.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections import Counter

import gen_context
import spelled_json
import reference

EXPECTED_OPERATORS = gen_context.OPERATORS + ["(unknown operator)"]


def run(seed: int, n: int) -> tuple[Counter, Counter, list[str]]:
    texts = gen_context.generate(seed, n)
    cond_counter: Counter = Counter()
    errors: Counter = Counter()
    with reference.record_conditions(cond_counter):
        outs = [reference.evaluate(t) for t in texts]
    for o in outs:
        if "error" in o:
            errors[o["error"].split(":")[0]] += 1
    return cond_counter, errors, texts


def format_table(cond_counter: Counter) -> str:
    lines = [f"{'operator':<24}{'TRUE':>8}{'FALSE':>8}{'raised':>8}"]
    for op in EXPECTED_OPERATORS:
        lines.append(f"{op:<24}{cond_counter[(op, 'T')]:>8}{cond_counter[(op, 'F')]:>8}{cond_counter[(op, 'raised')]:>8}")
    return "\n".join(lines)


def check(cond_counter: Counter) -> list[str]:
    problems = []
    for op in gen_context.OPERATORS:
        if not cond_counter[(op, "T")]:
            problems.append(f"{op} never TRUE")
        if not cond_counter[(op, "F")]:
            problems.append(f"{op} never FALSE")
    return problems


def check_error_kinds() -> list[str]:
    """Every injected error kind must make the reference raise, on many random contexts."""
    problems = []
    for kind in gen_context.ERROR_KINDS:
        for i in range(40):
            r = random.Random(f"err:{kind}:{i}")
            ctx = gen_context.gen_context(r, raise_rate=0.0)
            gen_context.inject_error(ctx, r, kind)
            out = reference.evaluate(spelled_json.dumps(ctx))
            if "error" not in out:
                problems.append(f"{kind} did not raise: {spelled_json.dumps(ctx)[:400]}")
                break
    return problems


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else random.randrange(2**32)
    t0 = time.time()
    cond_counter, errors, texts = run(seed, n)
    dt = time.time() - t0
    print(f"seed={seed} n={n} reference time {dt:.2f}s, avg ctx size {sum(map(len, texts)) / n:.0f} chars")
    print(format_table(cond_counter))
    print(f"contexts raising: {sum(errors.values())} / {n}: {dict(errors)}")
    problems = check(cond_counter) + check_error_kinds()
    print("problems:", json.dumps(problems, indent=1, ensure_ascii=False) if problems else "none")


if __name__ == "__main__":
    main()
