"""Differential test: `flagpole eval context --batch --lenient` vs flagsmith-flag-engine 11.1.1.

- ``test_random_contexts``: FLAGPOLE_DIFF_CASES (default 2000) seeded random contexts
  (FLAGPOLE_DIFF_SEED, default random, always printed), one CLI process for the whole batch. The
  first mismatching contexts (FLAGPOLE_DIFF_SHRINK, default 3) are shrunk to minimal ones.
- ``test_generator_coverage``: the generator exercises every operator with both outcomes and
  its injected error kinds really raise (reference only, no binary needed).
- ``test_corner_reference[...]``: each hand-written corner does what its case says in the
  reference (no binary needed); ``test_corner[...]``: CLI == reference on each of them.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from typing import Any

import pytest

import common
import compare
import corner_cases
import corner_kit
import coverage_check
import gen_context
import spelled_json
import reference
import shrink

N_SHRINK = int(os.environ.get("FLAGPOLE_DIFF_SHRINK") or 3)


# ------------------------------------------------------------------------------------------------
# fixtures
# ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def random_cases() -> dict:
    t0 = time.time()
    texts = gen_context.generate(common.SEED, common.N_CASES)
    counter: Counter = Counter()
    with reference.record_conditions(counter):
        refs = [reference.evaluate(t) for t in texts]
    common.REPORT.append(
        f"random contexts: {len(texts)} generated + evaluated by the reference in {time.time() - t0:.1f}s; "
        f"{sum('error' in r for r in refs)} raise in the reference"
    )
    common.REPORT.append("conditions evaluated by the reference (per operator: TRUE / FALSE / raised):")
    common.REPORT.extend("  " + line for line in coverage_check.format_table(counter).splitlines())
    return {"texts": texts, "refs": refs, "counter": counter}


@pytest.fixture(scope="module")
def corner_outputs(flagpole_bin) -> list:
    texts = [spelled_json.dumps(c.ctx) for c in corner_cases.CASES]
    return common.run_cli([flagpole_bin, *common.CONTEXT_ARGS], texts)


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------

def _cli(bin_: str, texts: list[str]) -> list[Any]:
    return common.run_cli([bin_, *common.CONTEXT_ARGS], texts)


def _shrink_case(bin_: str, text: str, ref: dict, ours: Any) -> tuple[dict, dict, Any]:
    sig = compare.signature(ref, ours)

    def still_fails(cands: list[dict]) -> list[bool]:
        ctexts = [spelled_json.dumps(c) for c in cands]
        crefs = [reference.evaluate(t) for t in ctexts]
        couts = _cli(bin_, ctexts)
        return [bool(compare.compare_eval(r, o)) and compare.signature(r, o) == sig for r, o in zip(crefs, couts)]

    minimal = shrink.shrink(spelled_json.loads_spelled(text), still_fails)
    mtext = spelled_json.dumps(minimal)
    return minimal, reference.evaluate(mtext), _cli(bin_, [mtext])[0]


def _fmt(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, allow_nan=True)


# ------------------------------------------------------------------------------------------------
# tests
# ------------------------------------------------------------------------------------------------

def test_random_contexts(flagpole_bin, random_cases):
    texts, refs = random_cases["texts"], random_cases["refs"]
    t0 = time.time()
    outs = _cli(flagpole_bin, texts)
    common.REPORT.append(f"CLI evaluated {len(texts)} random contexts in {time.time() - t0:.2f}s (one process)")
    assert len(outs) == len(texts)

    failing = []
    for i, (ref, ours) in enumerate(zip(refs, outs)):
        d = compare.compare_eval(ref, ours)
        if d:
            failing.append((i, d))
    classes = Counter(compare.signature(refs[i], outs[i]) for i, _ in failing)
    common.REPORT.append(
        f"random contexts: {len(texts) - len(failing)} / {len(texts)} match"
        + (f"; mismatch classes (reference, ours): {dict(classes)}" if failing else "")
    )
    if not failing:
        return

    report = [
        f"{len(failing)} of {len(texts)} random contexts differ "
        f"(replay: FLAGPOLE_DIFF_SEED={common.SEED} FLAGPOLE_DIFF_CASES={common.N_CASES}).",
        f"failing case indices (first 30): {[i for i, _ in failing[:30]]}",
    ]
    seen: set[str] = set()
    shrunk = 0
    for i, diffs in failing:
        if shrunk >= N_SHRINK:
            break
        minimal, mref, mours = _shrink_case(flagpole_bin, texts[i], refs[i], outs[i])
        key = spelled_json.dumps(minimal)
        if key in seen:
            continue
        seen.add(key)
        shrunk += 1
        report += [
            "",
            f"--- case #{i}: {'; '.join(diffs[:5])}",
            f"minimal context ({shrink.size(minimal)} chars, shrunk from {len(texts[i])}):",
            f"  {key}",
            f"reference: {_fmt(mref)}",
            f"ours:      {_fmt(mours)}",
            f"differences: {compare.compare_eval(mref, mours)[:8]}",
        ]
    text = "\n".join(report)
    common.REPORT.append(report[0] + " Minimal repros: see the failure of test_random_contexts.")
    pytest.fail(text, pytrace=False)


def test_generator_coverage(random_cases):
    problems = coverage_check.check(random_cases["counter"]) + coverage_check.check_error_kinds()
    raised = sum("error" in r for r in random_cases["refs"])
    n = len(random_cases["refs"])
    if n >= 500:
        if not 0.01 * n <= raised <= 0.15 * n:
            problems.append(f"{raised} of {n} contexts raise in the reference (expected roughly 5%)")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("case", corner_cases.CASES, ids=[c.id for c in corner_cases.CASES])
def test_corner_reference(case):
    """The corner really is what its case says it is, in the reference."""
    out = reference.evaluate(spelled_json.dumps(case.ctx))
    problem = corner_kit.check_expectation(case, out)
    assert problem is None, problem


@pytest.mark.parametrize("idx", range(len(corner_cases.CASES)), ids=[c.id for c in corner_cases.CASES])
def test_corner(idx, corner_outputs):
    case = corner_cases.CASES[idx]
    text = spelled_json.dumps(case.ctx)
    ref = reference.evaluate(text)
    ours = corner_outputs[idx]
    diffs = compare.compare_eval(ref, ours)
    assert not diffs, (
        f"corner {case.id}\ncontext:   {text}\nreference: {_fmt(ref)}\nours:      {_fmt(ours)}\n"
        + "\n".join(diffs)
    )
