"""The test environments' documents written as the files `flagpole serve` reads, one file per
client key, non-ASCII text kept as it is: one writer for the flagd and OFREP suites, which serve
the same fixture documents (tests/ofrep/fixtures.py)."""

from __future__ import annotations

import json
from pathlib import Path


def write_documents(directory: Path, envs: list) -> list[Path]:
    """Writes each `Env`'s document to `directory`/<client key>.json; returns the paths in order."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for e in envs:
        p = directory / f"{e.client_key}.json"
        p.write_text(json.dumps(e.document, indent=1, ensure_ascii=False))
        paths.append(p)
    return paths
