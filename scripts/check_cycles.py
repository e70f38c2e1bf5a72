#!/usr/bin/env python3
"""Fails when source files of a Rust crate import each other in a loop.

The layering in ARCHITECTURE.md ("Invariants") says each module depends only on the layers
below it; a cycle between files is the first sign that this stopped being true. This reads
every crate under the given folders (default: crates/ and bindings/), resolves each
`use crate::…`, `use super::…`, `use self::…`, `use <child module>::…` and each inline
`crate::…::name` / `super::…::name` path to the file that defines the module, and reports
every strongly connected group of more than one file. Re-exports (`pub use …`) are a
module's public face, not a dependency of its code, and are not counted.

Usage: scripts/check_cycles.py [FOLDER ...]; exit status 1 when a cycle is found.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def strip_comments_and_strings(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'r(#*)"(?:.|\n)*?"\1', '""', text)
    text = re.sub(r'b?"(?:\\.|[^"\\])*"', '""', text)
    text = re.sub(r"'(?:\\.|[^'\\])'", "' '", text)
    return text


def without_inline_modules(text: str) -> str:
    """Drops `mod name { … }` blocks (test modules): their `super` is the file's own module."""
    out, i = [], 0
    for m in re.finditer(r"\bmod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        depth, j = 0, m.end() - 1
        while j < len(text):
            depth += text[j] == "{"
            depth -= text[j] == "}"
            j += 1
            if depth == 0:
                break
        out.append(text[i:m.start()])
        i = j
    out.append(text[i:])
    return "".join(out)


def module_path(src: Path, file: Path) -> tuple[str, ...]:
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts in (["lib"], ["main"]):
        return ()
    if parts[-1] == "mod":
        parts = parts[:-1]
    return tuple(parts)


def expand_use(tree: str) -> list[str]:
    """`a::{b, c::{d, e}}` → [`a::b`, `a::c::d`, `a::c::e`]."""
    tree = re.sub(r"\s+", "", tree)
    depth, start = 0, None
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                prefix, inner, rest = tree[:start], tree[start + 1:i], tree[i + 1:]
                items, d, last = [], 0, 0
                for j, c in enumerate(inner):
                    d += c == "{"
                    d -= c == "}"
                    if c == "," and d == 0:
                        items.append(inner[last:j])
                        last = j + 1
                items.append(inner[last:])
                out = []
                for item in items:
                    if item:
                        out.extend(expand_use(prefix + item + rest))
                return out
    return [re.sub(r"\bas\b.*$", "", tree)]


def references(text: str, children: set[str]) -> list[list[str]]:
    paths = []
    for m in re.finditer(r"(?m)^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", text):
        if m.group(1):
            continue  # a re-export
        for p in expand_use(m.group(2)):
            paths.append([s for s in re.sub(r"\bas\s+\w+$", "", p).split("::") if s])
    for m in re.finditer(r"\b((?:crate|super|self)(?:::\w+)+)", text):
        paths.append(m.group(1).split("::"))
    return [p for p in paths if p and (p[0] in ("crate", "super", "self") or p[0] in children)]


def resolve(here: tuple[str, ...], path: list[str], modules: dict) -> tuple[str, ...] | None:
    base = list(here)
    segs = list(path)
    if segs[0] == "crate":
        base, segs = [], segs[1:]
    else:
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                if not base:
                    return None
                base.pop()
            segs = segs[1:]
    full = base + segs
    for n in range(len(full), -1, -1):
        if tuple(full[:n]) in modules:
            return tuple(full[:n])
    return None


def crate_graph(src: Path) -> dict[Path, set[Path]]:
    files = [f for f in src.rglob("*.rs")]
    modules = {module_path(src, f): f for f in files}
    graph: dict[Path, set[Path]] = {f: set() for f in files}
    for f in files:
        here = module_path(src, f)
        text = without_inline_modules(strip_comments_and_strings(f.read_text(encoding="utf-8")))
        children = set(re.findall(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text))
        for path in references(text, children):
            target = resolve(here, path, modules)
            if target is not None and modules[target] != f:
                graph[f].add(modules[target])
    return graph


def cycles(graph: dict[Path, set[Path]]) -> list[list[Path]]:
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v: Path) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def main(folders: list[str]) -> int:
    found = 0
    crates = 0
    for folder in folders or ["crates", "bindings"]:
        for manifest in sorted((ROOT / folder).rglob("Cargo.toml")):
            src = manifest.parent / "src"
            if not src.is_dir() or "target" in manifest.parts:
                continue
            crates += 1
            graph = crate_graph(src)
            for group in cycles(graph):
                found += 1
                names = [str(p.relative_to(ROOT)) for p in group]
                print(f"import cycle: {' <-> '.join(names)}")
                for a in group:
                    for b in sorted(graph[a] & set(group)):
                        print(f"  {a.relative_to(ROOT)} -> {b.relative_to(ROOT)}")
    print(f"{crates} crates checked, {found} import cycle(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
