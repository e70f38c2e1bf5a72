#!/usr/bin/env python3
"""Fails when source files of a Rust crate import each other in a loop, or when a module of the
server crate imports from a layer above its own.

The layering in ARCHITECTURE.md ("Invariants") says each module depends only on the layers
below it. Two checks keep it true. Layers: the numbered list under "The modules form layers"
in ARCHITECTURE.md is read (each item names the server's top-level modules in backticks, as
`name.rs` or `name/`; a module belongs to the first item naming it), every top-level module of
`crates/server/src` must be in it, and a file may import only from its own layer or an earlier
one. Cycles: a cycle between files is the first sign that the layering stopped being true. This reads
every crate under the given folders (default: crates/ and bindings/), resolves each
`use crate::…`, `use super::…`, `use self::…`, `use <child module>::…` and each inline
`crate::…::name` / `super::…::name` path to the file that defines the module, and reports
every strongly connected group of more than one file. Re-exports (`pub use …`) are a
module's public face, not a dependency of its code, and are not counted.

Usage: scripts/check_cycles.py [FOLDER ...]; exit status 1 when a cycle or an import against
the layers is found.
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


ARCHITECTURE = ROOT / "ARCHITECTURE.md"
LAYERED_CRATE = ROOT / "crates" / "server" / "src"


def layers_listed(text: str) -> list[tuple[str, set[str]]]:
    """The numbered layer list of ARCHITECTURE.md: (item title, names in backticks) per item."""
    start = text.index("The modules form layers")
    items: list[list[str]] = []
    for line in text[start:].splitlines()[1:]:
        numbered = re.match(r"\d+\. (.*)", line)
        if numbered:
            items.append([numbered.group(1)])
        elif items and line.startswith("   "):
            items[-1].append(line)
        elif items and line.strip():
            break
    out = []
    for lines in items:
        item = " ".join(lines)
        title = re.match(r"\*\*(.*?)\*\*", item)
        names = set(re.findall(r"`(\w+)(?:\.rs|/)`", item))
        out.append((title.group(1) if title else item[:40], names))
    return out


def layer_of_modules(src: Path, listed: list[tuple[str, set[str]]]) -> tuple[dict[str, int], list[str]]:
    """Each top-level module's layer index (the crate root is the last layer), and the modules
    the list does not place."""
    top = {f.stem for f in src.glob("*.rs")} | {d.name for d in src.iterdir() if d.is_dir()}
    top -= {"lib", "main"}
    layer: dict[str, int] = {"lib": len(listed) - 1}
    for i, (_, names) in enumerate(listed):
        for name in names & top:
            layer.setdefault(name, i)
    return layer, sorted(top - set(layer))


def layering(src: Path, graph: dict[Path, set[Path]]) -> int:
    """Prints every import from a later layer; returns how many there are."""
    listed = layers_listed(ARCHITECTURE.read_text(encoding="utf-8"))
    layer, unplaced = layer_of_modules(src, listed)
    for name in unplaced:
        print(f"layering: module `{name}` is in no layer of ARCHITECTURE.md's list")

    def top(file: Path) -> str:
        path = module_path(src, file)
        return path[0] if path else "lib"

    found = len(unplaced)
    for f in sorted(graph):
        for g in sorted(graph[f]):
            a, b = top(f), top(g)
            if a in layer and b in layer and layer[b] > layer[a]:
                found += 1
                print(f"layering: {f.relative_to(ROOT)} ({listed[layer[a]][0]}) imports "
                      f"{g.relative_to(ROOT)} ({listed[layer[b]][0]}), a later layer")
    return found


def main(folders: list[str]) -> int:
    found = 0
    crates = 0
    misplaced = 0
    for folder in folders or ["crates", "bindings"]:
        for manifest in sorted((ROOT / folder).rglob("Cargo.toml")):
            src = manifest.parent / "src"
            if not src.is_dir() or "target" in manifest.parts:
                continue
            crates += 1
            graph = crate_graph(src)
            if src == LAYERED_CRATE:
                misplaced += layering(src, graph)
            for group in cycles(graph):
                found += 1
                names = [str(p.relative_to(ROOT)) for p in group]
                print(f"import cycle: {' <-> '.join(names)}")
                for a in group:
                    for b in sorted(graph[a] & set(group)):
                        print(f"  {a.relative_to(ROOT)} -> {b.relative_to(ROOT)}")
    print(f"{crates} crates checked, {found} import cycle(s), {misplaced} import(s) against the layers")
    return 1 if found or misplaced else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
