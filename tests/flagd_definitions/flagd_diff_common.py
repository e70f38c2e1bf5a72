"""What the flagd definitions suite's files share: seed, sizes, the report (a module of its own
name, so that no other suite's `conftest` or `common` shadows it)."""

from __future__ import annotations

import os
import random
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: Seed of the random files and contexts (FLAGPOLE_FLAGD_DIFF_SEED, default random). Always printed.
SEED: int = int(os.environ.get("FLAGPOLE_FLAGD_DIFF_SEED") or random.SystemRandom().randrange(2**32))
#: Number of random flag files (FLAGPOLE_FLAGD_DIFF_FILES, default 300).
N_FILES: int = int(os.environ.get("FLAGPOLE_FLAGD_DIFF_FILES") or 300)
REPORT: list[str] = []
