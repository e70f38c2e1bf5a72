"""The README's snippets, run as pasted, so that the README cannot rot.

README.md marks the blocks this test runs with an HTML comment (invisible once rendered) on the
line before the fence:

- `<!-- runnable -->`: a `sh`, `python`, `js`, `go` or `java` block, run against one `flagpole serve
  --example --flags examples/flags.json` (from the repository root) with the flagd port set as the README's flagd section says
  (`FLAGPOLE='{"grpc": {"port": 8013}}'`). It passes when it exits 0 on its own and prints
  something; `<!-- runnable: expect "TEXT" -->` also wants TEXT in what it printed. Every `python`,
  `js`, `go` and `java` block must be marked runnable: a snippet in a programming language is a
  program a reader will paste.
  Substitutions, the only ones: `localhost:8000` → the test server's address (a free port), `8013`
  → its flagd port (a free port), and `cargo run --release --` or a command line starting with
  `flagpole ` → the binary under test ($FLAGPOLE_BIN).
- `<!-- config -->`: a `json` block that must be a configuration `flagpole serve --config`
  starts with. `API_URL` points at a closed local port, so nothing here reaches the internet.

Every other `json` block must at least parse. How each language runs, with what it states:
- `python`: this interpreter (the bindings wheel and the OpenFeature packages of
  tests/requirements.txt);
- `js`: an ES module, with the locked packages of the suite's Node project whose dependencies
  include every package it imports (tests/ofrep/node or tests/flagd/node; `npm ci`);
- `go`: `main.go` in a module with the go.mod/go.sum of tests/flagd/go, whose versions must be the
  ones the snippet's `go get` line names;
- `java`: `java -cp CLASSPATH Main.java`, the class path resolved by Maven from exactly the
  `group:artifact:version` coordinates the snippet's comment names.
A tool missing (node, go, java/javac/mvn, a Python package) skips, which under CI=true is a failure
(tests/conftest.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from serve_harness import HOST, REPO, FlagpoleProcess, binary_path, free_port

sys.path.insert(0, str(REPO / "tests"))  # browser_support
from browser_support import npm_ci  # noqa: E402

README = REPO / "README.md"
NODE_DIRS = [REPO / "tests" / "ofrep" / "node", REPO / "tests" / "flagd" / "node"]
GO_MODULE_DIR = REPO / "tests" / "flagd" / "go"
# Generous: a snippet does a few requests; the limit only stops a hang (or a snippet that never
# exits, which is a failure: every snippet must end on its own).
SNIPPET_TIMEOUT = 120
# Building the Go provider or resolving the Java one the first time downloads modules.
BUILD_TIMEOUT = 900
# How the README's flagd section starts Flagpole for its snippets.
FLAGD_START = """FLAGPOLE='{"grpc": {"port": 8013}}' flagpole serve --example"""
PROGRAM_LANGS = {"python", "js", "go", "java"}

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
    assert {s.lang for s in RUNNABLE} >= {"sh"} | PROGRAM_LANGS, [s.id for s in RUNNABLE]
    assert len(CONFIGS) >= 2
    assert all(s.lang == "json" for s in CONFIGS)


def test_every_program_snippet_is_run():
    unrun = [s.id for s in ALL if s.lang in PROGRAM_LANGS and s.kind != "runnable"]
    assert not unrun, f"README blocks in a programming language not marked <!-- runnable -->: {unrun}"
    unsaid = [s.id for s in RUNNABLE if s.lang in PROGRAM_LANGS and not s.expect]
    assert not unsaid, f"README programs that do not say (expect) what they print: {unsaid}"


def test_the_flagd_section_says_how_to_start_flagpole():
    assert f"`{FLAGD_START}`" in README.read_text(), f"the README should show `{FLAGD_START}`"


@pytest.fixture(scope="module")
def example_server(tmp_path_factory):
    """`flagpole serve --example --flags examples/flags.json` with the flagd port set as the
    README says, on free ports."""
    grpc_port = free_port()
    flags = str(REPO / "examples" / "flags.json")
    fp = FlagpoleProcess(tmp_path_factory.mktemp("readme"),
                         extra_args=["--example", "--flags", flags],
                         env={"FLAGPOLE": json.dumps({"grpc": {"port": grpc_port}})})
    fp.grpc_port = grpc_port
    fp.start(wait=True)
    fp.wait_ready()
    yield fp
    assert fp.stop() == 0, fp.stderr_tail()


def substitute(code: str, server: FlagpoleProcess) -> str:
    binary = shlex.quote(str(binary_path()))
    code = code.replace("localhost:8000", f"{HOST}:{server.port}").replace("8013", str(server.grpc_port))
    code = re.sub(r"^flagpole ", lambda _: f"{binary} ", code, flags=re.M)
    return code.replace("cargo run --release --", binary)


def require_imports(code: str) -> None:
    """Skips when a Python snippet imports a package this environment lacks."""
    for module in re.findall(r"^\s*(?:from|import)\s+([\w.]+)", code, re.M):
        top = module.split(".")[0]
        if importlib.util.find_spec(top) is None:
            pytest.skip(f"the snippet needs `{top}`, which is not installed here")


def require_tools(*names: str) -> list[str]:
    """The paths of `names`; skips (a failure under CI=true) when one is missing."""
    paths = [shutil.which(n) for n in names]
    missing = [n for n, p in zip(names, paths) if p is None]
    if missing:
        pytest.skip(f"the snippet needs {', '.join(missing)}, not installed here")
    return paths


def node_dir_for(code: str) -> Path:
    """The suite's Node project that has every package the module imports."""

    def package(spec: str) -> str:  # `@scope/name/sub` → `@scope/name`, `name/sub` → `name`
        parts = spec.split("/")
        return "/".join(parts[:2]) if spec.startswith("@") else parts[0]

    imported = {package(m) for m in re.findall(r"""^import .* from ['"]([^'"./][^'"]*)['"]""", code, re.M)}
    for node_dir in NODE_DIRS:
        deps = json.loads((node_dir / "package.json").read_text())["dependencies"]
        if imported <= deps.keys():
            return node_dir
    raise AssertionError(f"no Node project of the suite has all of {sorted(imported)}")


def go_program(snippet: Snippet, code: str, tmp_path: Path) -> list[str]:
    """Builds the snippet as `main.go` in a module pinned like tests/flagd/go's; returns the binary."""
    (go,) = require_tools("go")
    named = dict(re.findall(r"(\S+)@(v[\w.\-+]+)", code.split("package main", 1)[0]))
    assert named, f"README line {snippet.line}: the Go snippet's `go get` line names no versions"
    go_mod = (GO_MODULE_DIR / "go.mod").read_text()
    for module, version in named.items():
        assert re.search(rf"^\s*{re.escape(module)} {re.escape(version)}$", go_mod, re.M), (
            f"README line {snippet.line} names {module}@{version}; tests/flagd/go/go.mod differs")
    work = tmp_path / "go"
    work.mkdir()
    shutil.copy(GO_MODULE_DIR / "go.mod", work / "go.mod")
    shutil.copy(GO_MODULE_DIR / "go.sum", work / "go.sum")
    (work / "main.go").write_text(code)
    # go.sum pins every module; the checksum database is not needed to verify them.
    env = dict(os.environ, GOFLAGS="-mod=mod", GONOSUMDB="*")
    proc = subprocess.run([go, "build", "-o", str(work / "snippet"), "."], cwd=work, env=env,
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    assert proc.returncode == 0, f"README line {snippet.line}: go build failed:\n{proc.stdout}\n{proc.stderr}"
    return [str(work / "snippet")]


POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>flagpole.readme</groupId><artifactId>snippet</artifactId><version>0</version>
  <dependencies>{}</dependencies>
</project>
"""


def java_program(snippet: Snippet, code: str, tmp_path: Path) -> list[str]:
    """`java -cp CLASSPATH Main.java`, the class path from the coordinates the comment names."""
    java, javac, mvn = require_tools("java", "javac", "mvn")
    comment = "\n".join(line for line in code.splitlines() if line.lstrip().startswith("//"))
    coordinates = re.findall(r"\b([a-z][\w.\-]*\.[\w.\-]+):([\w.\-]+):(\d[\w.\-]*\w)", comment)
    assert coordinates, f"README line {snippet.line}: the Java snippet names no group:artifact:version"
    work = tmp_path / "java"
    work.mkdir()
    (work / "pom.xml").write_text(POM.format("".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in coordinates)))
    classpath = work / "classpath.txt"
    proc = subprocess.run([mvn, "-q", "-B", "dependency:build-classpath", f"-Dmdep.outputFile={classpath}"],
                          cwd=work, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    assert proc.returncode == 0, f"README line {snippet.line}: mvn failed:\n{proc.stdout}\n{proc.stderr}"
    (work / "Main.java").write_text(code)
    return [java, "-cp", classpath.read_text().strip(), str(work / "Main.java")]


def command_for(snippet: Snippet, code: str, tmp_path: Path) -> list[str]:
    if snippet.lang == "sh":
        if re.search(r"\bcurl\b", code):
            require_tools("curl")
        return ["bash", "-e", "-o", "pipefail", "-c", code]
    if snippet.lang == "python":
        require_imports(code)
        return [sys.executable, "-c", code]
    if snippet.lang == "js":
        require_tools("node", "npm")
        node_dir = npm_ci(node_dir_for(code))
        # An ES module in a directory of its own whose node_modules are the suite's locked ones.
        (tmp_path / "node_modules").symlink_to(node_dir / "node_modules")
        script = tmp_path / "snippet.mjs"
        script.write_text(code)
        return ["node", str(script)]
    if snippet.lang == "go":
        return go_program(snippet, code, tmp_path)
    if snippet.lang == "java":
        return java_program(snippet, code, tmp_path)
    raise AssertionError(f"README line {snippet.line}: no runner for a `{snippet.lang}` block")


@pytest.mark.parametrize("snippet", RUNNABLE, ids=[s.id for s in RUNNABLE])
def test_runnable_snippet_prints_its_result(snippet: Snippet, example_server, tmp_path):
    code = substitute(snippet.code, example_server)
    cmd = command_for(snippet, code, tmp_path)
    where = f"README.md line {snippet.line} ({snippet.lang})"
    try:
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=SNIPPET_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{where} did not exit within {SNIPPET_TIMEOUT} s (a snippet must end on its own); "
                    f"it printed:\n{e.stdout}\n{e.stderr}", pytrace=False)
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
