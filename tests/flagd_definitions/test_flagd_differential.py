"""Flagpole's flagd engine against flagd's reference evaluator (openfeature-flagd-core 1.0.0).

Random flag files (gen.py) × random contexts, and the hand-written corner cases: every flag of
every file evaluated by `flagpole eval flagd --batch` and by the reference (reference_runner.py,
in the reference's own venv), at one fixed `$flagd.timestamp`. Both must refuse the same files;
on the others every answer must agree on value (JSON type included), variant, reason, error code
and, without an error, metadata. A disagreement prints the file, the context and both answers;
FLAGPOLE_FLAGD_DIFF_SEED replays a run.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import flagd_corner_cases as corner_cases
import flagd_diff_common as common
import gen_flagd_files as gen

HERE = Path(__file__).resolve().parent
NOW = 1_764_000_000
CONTEXTS_PER_FILE = 12


def typed(v):
    """A JSON value with Python's int/float/bool distinction made visible to `==`."""
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int):
        return ("int", v)
    if isinstance(v, float):
        return ("float", v)
    if isinstance(v, list):
        return ("list", [typed(x) for x in v])
    if isinstance(v, dict):
        return ("dict", sorted((k, typed(x)) for k, x in v.items()))
    return (type(v).__name__, v)


def comparable(answer: dict) -> dict:
    out = {k: answer.get(k) for k in ("variant", "reason", "errorCode")}
    out["has_value"] = "value" in answer
    out["value"] = typed(answer.get("value"))
    if "errorCode" not in answer:
        out["metadata"] = typed(answer.get("metadata") or {})
    return out


def run(cmd: list[str], lines: list[str]) -> tuple[int, list[dict], str]:
    proc = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=300)
    return proc.returncode, [json.loads(x) for x in proc.stdout.splitlines() if x.strip()], proc.stderr


def compare_file(flagpole_bin: str, reference_python: str, tmp_path: Path, name: str, file: dict,
                 contexts: list[dict]) -> tuple[int, list[str]]:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(file))
    keys = list(file.get("flags", {})) + ["no-such-flag"]
    lines = [json.dumps({"flag": k, "context": c}) for k in keys for c in contexts]
    rc_ref, ref, ref_err = run([reference_python, str(HERE / "reference_runner.py"), str(path), str(NOW)], lines)
    assert rc_ref == 0, f"the reference runner failed: {ref_err[-2000:]}"
    rc, ours, err = run([flagpole_bin, "eval", "flagd", "--flags", str(path), "--now", str(NOW), "--batch"], lines)
    if ref and "loadError" in ref[0]:
        if rc == 2:
            return 0, []
        return 1, [f"{name}: the reference refuses the file ({ref[0]['loadError']}), Flagpole takes it\n"
                   f"  file: {json.dumps(file)}"]
    if rc != 0:
        return 1, [f"{name}: Flagpole refuses a file the reference takes: {err.strip()}\n  file: {json.dumps(file)}"]
    assert len(ours) == len(lines) == len(ref), (len(ours), len(lines), len(ref))
    problems = []
    for line, a, b in zip(lines, ours, ref):
        if comparable(a) != comparable(b):
            problems.append(f"{name}: {line}\n  flagpole:  {json.dumps(a)}\n  reference: {json.dumps(b)}")
    if problems:
        problems[0] += f"\n  file {name}: {json.dumps(file)}"
    return len(lines), problems


def test_corner_cases_agree_with_the_reference(flagpole_bin, reference_python, tmp_path):
    problems, compared = [], 0
    for i, (file, contexts) in enumerate(corner_cases.CASES):
        n, p = compare_file(flagpole_bin, reference_python, tmp_path, f"corner-{i}", file, contexts)
        compared += n
        problems += p
    common.REPORT.append(f"corner cases: {compared} answers compared, {len(problems)} disagreements")
    assert not problems, "\n".join(problems[:10])


def test_random_definitions_agree_with_the_reference(flagpole_bin, reference_python, tmp_path):
    problems, compared, refused = [], 0, 0
    for i in range(common.N_FILES):
        r = random.Random(f"{common.SEED}-{i}")
        file = gen.flag_file(r)
        contexts = [gen.context(r) for _ in range(CONTEXTS_PER_FILE)]
        n, p = compare_file(flagpole_bin, reference_python, tmp_path, f"random-{i}", file, contexts)
        refused += n == 0 and not p
        compared += n
        problems += p
    common.REPORT.append(f"random: {common.N_FILES} files ({refused} refused by both), {compared} answers "
                           f"compared, {len(problems)} disagreements")
    assert compared > 0
    assert not problems, f"{len(problems)} disagreements; first:\n" + "\n".join(problems[:5])
