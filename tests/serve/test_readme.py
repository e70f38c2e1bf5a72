"""The README's snippets, run as pasted, so that the README cannot rot.

README.md marks the blocks this test runs with an HTML comment (invisible once rendered) on the
line before the fence:

- `<!-- runnable -->`: a `sh`, `python` or `js` block, run against one `flagpole serve` on the
  bundled example (from the repository root). It passes when it exits 0 and prints something;
  `<!-- runnable: expect "TEXT" -->` also wants TEXT in what it printed (e.g. a status).
  Substitutions, the only ones: `localhost:8000` → the test server's address (a free port), and
  `cargo run --release --` → the binary under test ($FLAGPOLE_BIN).
- `<!-- config -->`: a `json` block that must be a configuration `flagpole serve --config`
  starts with. `API_URL` points at a closed local port, so nothing here reaches the internet.

Every other `json` block must at least parse. Python blocks need their imports (the bindings
wheel, the OpenFeature packages of tests/requirements.txt) and are skipped without them; the
`js` block runs with the locked packages of tests/ofrep/node (`npm ci`) and is skipped without
node.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from serve_harness import HOST, REPO, FlagpoleProcess, binary_path, free_port

sys.path.insert(0, str(REPO / "tests"))  # browser_support
from browser_support import npm_ci  # noqa: E402

README = REPO / "README.md"
OFREP_NODE_DIR = REPO / "tests" / "ofrep" / "node"
# Generous: a snippet does a few requests; the limit only stops a hang.
SNIPPET_TIMEOUT = 120

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```$", re.S | re.M)
MARKER = re.compile(r'<!-- (runnable|config)(?::\s*expect "([^"]*)")? -->')


@dataclass
class Snippet:
    kind: str  # "runnable", "config" or "" (unmarked)
    lang: str
    code: str
    expect: str | None
    line: int

    @property
    def id(self) -> str:
        return f"line{self.line}-{self.lang}"


def snippets(text: str) -> list[Snippet]:
    """Every fenced block, with the marker on the line right before it (if any)."""
    found = []
    for fence in FENCE.finditer(text):
        before = text[: fence.start()]
        previous_line = before.rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.fullmatch(previous_line.strip())
        found.append(Snippet(
            kind=marker.group(1) if marker else "",
            lang=fence.group(1),
            code=fence.group(2),
            expect=marker.group(2) if marker else None,
            line=before.count("\n") + 1,
        ))
    return found


ALL = snippets(README.read_text())
RUNNABLE = [s for s in ALL if s.kind == "runnable"]
CONFIGS = [s for s in ALL if s.kind == "config"]


def test_the_readme_has_marked_snippets_of_each_kind():
    assert {s.lang for s in RUNNABLE} >= {"sh", "python", "js"}, [s.id for s in RUNNABLE]
    assert len(CONFIGS) >= 2
    assert all(s.lang == "json" for s in CONFIGS)


@pytest.fixture(scope="module")
def example_server(tmp_path_factory):
    """`flagpole serve` with nothing configured: the bundled example, on a free port."""
    fp = FlagpoleProcess(tmp_path_factory.mktemp("readme"))
    fp.start(wait=True)
    fp.wait_ready()
    yield fp
    fp.stop()


def substitute(code: str, port: int) -> str:
    binary = shlex.quote(str(binary_path()))
    return code.replace("localhost:8000", f"{HOST}:{port}").replace("cargo run --release --", binary)


def require_imports(code: str) -> None:
    """Skips when a Python snippet imports a package this environment lacks."""
    for module in re.findall(r"^\s*(?:from|import)\s+([\w.]+)", code, re.M):
        top = module.split(".")[0]
        if importlib.util.find_spec(top) is None:
            pytest.skip(f"the snippet needs `{top}`, which is not installed here")


def command_for(snippet: Snippet, code: str, tmp_path: Path) -> list[str]:
    if snippet.lang == "sh":
        return ["bash", "-e", "-o", "pipefail", "-c", code]
    if snippet.lang == "python":
        require_imports(code)
        return [sys.executable, "-c", code]
    if snippet.lang == "js":
        node_dir = npm_ci(OFREP_NODE_DIR)
        # An ES module in a directory of its own whose node_modules are the suite's locked ones.
        (tmp_path / "node_modules").symlink_to(node_dir / "node_modules")
        script = tmp_path / "snippet.mjs"
        script.write_text(code)
        return ["node", str(script)]
    raise AssertionError(f"README line {snippet.line}: no runner for a `{snippet.lang}` block")


@pytest.mark.parametrize("snippet", RUNNABLE, ids=[s.id for s in RUNNABLE])
def test_runnable_snippet_prints_its_result(snippet: Snippet, example_server, tmp_path):
    code = substitute(snippet.code, example_server.port)
    cmd = command_for(snippet, code, tmp_path)
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=SNIPPET_TIMEOUT)
    where = f"README.md line {snippet.line} ({snippet.lang})"
    assert proc.returncode == 0, f"{where} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.strip(), f"{where} printed nothing; stderr:\n{proc.stderr}"
    if snippet.expect is not None:
        assert snippet.expect in proc.stdout, f"{where} did not print {snippet.expect!r}:\n{proc.stdout}"


@pytest.mark.parametrize("snippet", CONFIGS, ids=[s.id for s in CONFIGS])
def test_config_snippet_starts_the_proxy(snippet: Snippet, tmp_path):
    config = json.loads(snippet.code)
    closed = f"http://{HOST}:{free_port()}/api/v1"
    fp = FlagpoleProcess(tmp_path, config=config, env={"API_URL": closed})
    try:
        fp.start(wait=True)
        # Up and answering; with no upstream there is no document yet, so its keys get 503.
        assert fp.get("/proxy/health/liveness").status == 200
        key = config["environment_key_pairs"][0]["client_side_key"]
        assert fp.get("/api/v1/flags/", key).status == 503
    finally:
        assert fp.stop() == 0, fp.stderr_tail()


@pytest.mark.parametrize("snippet", [s for s in ALL if s.lang == "json"],
                         ids=[s.id for s in ALL if s.lang == "json"])
def test_json_snippet_parses(snippet: Snippet):
    json.loads(snippet.code)
