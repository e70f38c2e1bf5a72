#!/usr/bin/env python3
"""Fails when ARCHITECTURE.md's code map does not name a module file, or names a path under
crates/ that does not exist.

The code map is how a reader finds where something lives; a file it leaves out is a file
nobody is told about, and a path it names that was moved or deleted sends the reader nowhere.
Both drift silently as code moves, so this check keeps the map whole. It lists every `.rs`
file under `crates/*/src/` (files named `tests.rs` and anything under a `tests/`, `examples/`
or `benches/` folder are not modules of the map and are skipped) and looks for each in
ARCHITECTURE.md.

A file is named when either
  * its path relative to its crate's `src/` (`api/ops/health.rs`) appears anywhere in
    ARCHITECTURE.md, possibly after more folders (`crates/server/src/api/ops/health.rs`); or
  * the code-map section of its crate (the `## ` section whose heading names `crates/<crate>`;
    the whole document when there is none) mentions the file's name, either bare
    (`health.rs`) or after its parent folder (`ops/health.rs`); a bare mention of a file not
    directly in `src/` counts only when that section also names the parent folder (`ops/`).

Paths are compared on whole components: `flags.rs` in `config/flags.rs` names no file in
another folder.

Usage: scripts/check_architecture.py; exit status 1 when a file is not named or a named
`crates/…` path does not exist.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = ROOT / "ARCHITECTURE.md"
SKIPPED_FOLDERS = {"tests", "examples", "benches"}

# A path-like token: components of word characters, dots and dashes separated by slashes; a
# folder is written with a final slash (`ops/`).
TOKEN = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w.-]+/?)")


def module_files() -> list[tuple[str, Path]]:
    """(crate folder name, path relative to its src/) of every module file."""
    out = []
    for src in sorted(ROOT.glob("crates/*/src")):
        for f in sorted(src.rglob("*.rs")):
            rel = f.relative_to(src)
            if f.name == "tests.rs" or SKIPPED_FOLDERS & set(rel.parts[:-1]):
                continue
            out.append((src.parent.name, rel))
    return out


def sections(text: str) -> dict[str, str]:
    """Crate folder name → the text of the `## ` section whose heading names `crates/<name>`."""
    out: dict[str, str] = {}
    parts = re.split(r"(?m)^(?=## )", text)
    for part in parts:
        heading = part.splitlines()[0] if part else ""
        m = re.match(r"## .*`crates/([\w.-]+)`", heading)
        if m:
            out[m.group(1)] = part
    return out


def tokens(text: str) -> list[list[str]]:
    """Every path-like token, as its components (a folder's last component is empty)."""
    return [m.group(1).split("/") for m in TOKEN.finditer(text)]


def is_named(rel: Path, doc_tokens: list[list[str]], section_tokens: list[list[str]]) -> bool:
    parts = list(rel.parts)
    if len(parts) > 1 and any(t[-len(parts):] == parts for t in doc_tokens):
        return True
    parent = parts[-2] if len(parts) > 1 else None
    for t in section_tokens:
        if t[-1] != rel.name:
            continue
        if len(t) > 1 and t[-2] == parent:
            return True
        if len(t) == 1 and (parent is None or any(parent in u[:-1] for u in section_tokens)):
            return True
    return False


def missing_paths(text: str) -> list[str]:
    """`crates/…` paths named in backticks that do not exist (globs: that match nothing)."""
    out = []
    for path in sorted(set(re.findall(r"`(crates/[^`\s]+)`", text))):
        if any(c in path for c in "*?["):
            exists = any(ROOT.glob(path.rstrip("/")))
        else:
            exists = (ROOT / path).exists()
        if not exists:
            out.append(path)
    return out


def main() -> int:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    by_crate = sections(text)
    doc_tokens = tokens(text)
    files = module_files()
    unnamed = []
    for crate, rel in files:
        section_tokens = tokens(by_crate.get(crate, text))
        if not is_named(rel, doc_tokens, section_tokens):
            unnamed.append(f"crates/{crate}/src/{rel.as_posix()}")
    absent = missing_paths(text)
    for path in unnamed:
        print(f"not named in ARCHITECTURE.md: {path}")
    for path in absent:
        print(f"named in ARCHITECTURE.md but missing: {path}")
    if unnamed:
        print(f"{len(unnamed)} of {len(files)} module files not named in ARCHITECTURE.md: "
              f"add each, with a few words on what it holds, to its crate's code map")
    if absent:
        print(f"{len(absent)} path(s) named in ARCHITECTURE.md do not exist: "
              f"correct or remove them")
    if unnamed or absent:
        return 1
    print(f"{len(files)} module files, all named in ARCHITECTURE.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
