#!/usr/bin/env python3
"""Fails when a task of the server is started anywhere but `Tasks::spawn`.

Every task the server starts must be on a tracker someone waits for (`crates/server/src/
tasks.rs`), so that the shutdown can wait for it instead of cutting it off mid-write. Clippy's
`disallowed-methods` (crates/server/clippy.toml) refuses `tokio::spawn` and its kin, but a
module allowed one disallowed method (the blocking pool's `spawn_blocking`, in `background.rs`)
is allowed them all by the same attribute: a `tokio::spawn` there went unnoticed once. This
check reads every server source file and fails on a spawn of a task outside `tasks.rs`.

Usage: scripts/check_spawns.py; exit status 1 when a task is spawned elsewhere.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "crates" / "server" / "src"
ALLOWED = {"tasks.rs"}
SPAWN = re.compile(
    r"\btokio::spawn\s*\(|\btokio::task::spawn\s*\(|\bHandle::current\(\)\s*\.\s*spawn\s*\("
    r"|\btokio::task::spawn_local\s*\(|\.spawn_on\s*\("
)


def main() -> int:
    found = 0
    checked = 0
    for path in sorted(SERVER.rglob("*.rs")):
        rel = path.relative_to(SERVER).as_posix()
        if rel in ALLOWED:
            continue
        checked += 1
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("//", 1)[0]
            if SPAWN.search(code):
                print(f"crates/server/src/{rel}:{n}: a task spawned outside `Tasks::spawn`")
                found += 1
    print(f"{checked} server files checked, {found} task(s) spawned outside crate::tasks")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
