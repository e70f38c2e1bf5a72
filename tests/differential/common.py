"""Shared helpers: binary location, seed, CLI batch runner, end-of-run report lines."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DEFAULT_BIN = REPO / "target" / "release" / "flagpole"

#: Seed of the random differential cases (FLAGPOLE_DIFF_SEED, default random). Always printed.
SEED: int = int(os.environ.get("FLAGPOLE_DIFF_SEED") or random.SystemRandom().randrange(2**32))
#: Number of random contexts (FLAGPOLE_DIFF_CASES, default 2000).
N_CASES: int = int(os.environ.get("FLAGPOLE_DIFF_CASES") or 2000)

#: Lines printed at the end of the pytest run (coverage summary, seed).
REPORT: list[str] = []

CONTEXT_ARGS = ["eval", "context", "--batch", "--lenient"]


def binary_path() -> Path:
    env = os.environ.get("FLAGPOLE_BIN")
    return Path(env) if env else DEFAULT_BIN


def _run(cmd: list[str], lines: list[str], timeout: float) -> tuple[int, list[bytes], bytes]:
    data = ("\n".join(lines) + "\n").encode("utf-8") if lines else b""
    proc = subprocess.run(cmd, input=data, capture_output=True, timeout=timeout)
    out = proc.stdout.split(b"\n")
    if out and out[-1] == b"":
        out.pop()
    return proc.returncode, out, proc.stderr


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {"malformed": line.decode("utf-8", "replace")[:500]}


def run_cli(cmd: list[str], lines: list[str], timeout: float = 120.0) -> list[Any]:
    """Run ONE process for the whole batch; one parsed JSON output per input line.

    If the process dies or the line count is off, the batch is re-run in chunks (then one case
    at a time) so the culprit gets ``{"crash": "..."}`` and the other cases still get compared.
    """
    if not lines:
        return []
    rc, out, err = _run(cmd, lines, timeout)
    if rc == 0 and len(out) == len(lines):
        return [_parse(x) for x in out]
    if len(lines) == 1:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
        return [{"crash": f"exit status {rc}, {len(out)} output lines for 1 input; stderr: {' | '.join(tail)}"}]
    step = max(1, len(lines) // 8)
    results: list[Any] = []
    for i in range(0, len(lines), step):
        results += run_cli(cmd, lines[i:i + step], timeout)
    return results
