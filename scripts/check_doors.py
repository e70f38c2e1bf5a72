#!/usr/bin/env python3
"""Fails when an OpenFeature front door names an engine.

Every OpenFeature front door (OFREP: `crates/server/src/api/ofrep/`; flagd's evaluation API:
`crates/server/src/flagd/`) resolves through the vendor-neutral OpenFeature layer
(`crates/server/src/openfeature/`: `Target`, `Resolution`, `Encoded`, `changes`), so that an
engine can be added or changed behind it without touching a door, and no door answers one
engine's flags differently from another's by accident. This check reads each door file (tests
left out: `tests.rs` files and inline `mod … { }` blocks, which are tests there) and fails on any mention of

  * an engine crate: `flagpole_engine`, `flagpole_flagd`, `flagpole_unleash`;
  * what a snapshot holds for an engine: `crate::snapshot` (the per-source tables, the ETag
    memo, the compiled environment), a flag set's compiled `FlagView`, `.env.` reads of a
    snapshot's environment;

except where `ALLOWED` names the file and the phrase with the reason.

Usage: scripts/check_doors.py; exit status 1 when a door names an engine.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_cycles import without_inline_modules  # noqa: E402  (the scripts' shared reading)

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "crates" / "server" / "src"
DOORS = [SERVER / "api" / "ofrep", SERVER / "flagd"]
FORBIDDEN = [
    "flagpole_engine",
    "flagpole_flagd",
    "flagpole_unleash",
    "crate::snapshot",
    "FlagView",
    "snapshot.env",
]
# (file relative to crates/server/src, phrase): why it may stand there.
ALLOWED = {
    ("flagd/sync.rs", "FlagView"): "flagd's sync service serves flagd definitions themselves "
    "(the providers' in-process mode evaluates them): the format is its subject",
    ("flagd/peers.rs", "crate::snapshot"): "a connection remembers which snapshot of an "
    "environment a key was answered from, as a handle it never reads",
}


def main() -> int:
    found = 0
    checked = 0
    for door in DOORS:
        for path in sorted(door.rglob("*.rs")):
            rel = path.relative_to(SERVER).as_posix()
            if path.name == "tests.rs" or "/tests/" in rel:
                continue
            checked += 1
            text = without_inline_modules(path.read_text(encoding="utf-8"))
            for n, line in enumerate(text.splitlines(), 1):
                code = line.split("//", 1)[0]
                for phrase in FORBIDDEN:
                    if phrase in code and (rel, phrase) not in ALLOWED:
                        print(f"{rel}:{n}: an OpenFeature front door names `{phrase}`: "
                              "resolve through crate::openfeature instead")
                        found += 1
    print(f"{checked} front-door files checked, {found} mention(s) of an engine")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
