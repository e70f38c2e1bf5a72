"""pytest configuration of the flagd suite (tests/flagd): Flagpole's flagd-compatible front door
driven by the official flagd providers in RPC mode.

Reuses the serve suite's harness (process wrapper) and the OFREP suite's fixture documents and
reference expectations (tests/ofrep/fixtures.py), and provides:

- `flagd_srv` (session): one server with MAIN (never changed) and LIVE (rewritten by the tests)
  as local documents, `flagpole.grpc.port` set.
- `start_flagd`: a factory for further processes (stopped at teardown).
- `node_flagd_dir` (session): tests/flagd/node with `npm ci` done when its lock file changed.
- `go_driver`, `java_driver` (session): the Go and Java provider drivers, built.
- `flagd`, `flagpole` (module): flagd itself and Flagpole serving the module's `flag_file`
  (the flag-file suites, test_flag_file_*.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "serve"))
sys.path.insert(0, str(HERE.parent / "ofrep"))
sys.path.insert(0, str(HERE.parent))  # browser_support

from browser_support import npm_ci  # noqa: E402
from fixture_files import write_documents  # noqa: E402
from flagd_support import ENVS, FlagdProcess, flagd_config  # noqa: E402
from serve_harness import free_port, required_binary, stop_expecting_zero  # noqa: E402
from flagfile_support import SERVERS  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def flagd_binary() -> str:
    return required_binary()


@pytest.fixture(scope="session")
def flagd_srv(tmp_path_factory):
    work = tmp_path_factory.mktemp("flagd")
    paths = write_documents(work / "docs", ENVS)
    fp = FlagdProcess(work, config=flagd_config(paths, free_port()), grpc_port=None)
    fp.start()
    fp.wait_grpc()
    fp.paths = paths
    yield fp
    stop_expecting_zero(fp)


@pytest.fixture
def start_flagd(tmp_path):
    started: list[FlagdProcess] = []

    def start(**kwargs) -> FlagdProcess:
        fp = FlagdProcess(tmp_path / f"p{len(started)}", **kwargs)
        started.append(fp)
        fp.start()
        fp.wait_grpc()
        return fp

    yield start
    for fp in started:
        if fp.proc and fp.proc.poll() is None:
            fp.stop()


@pytest.fixture(scope="session")
def node_flagd_dir() -> Path:
    node = HERE / "node"
    npm_ci(node)
    return node


@pytest.fixture(scope="session")
def go_driver(tmp_path_factory) -> Path:
    """tests/flagd/go built: the Go provider's driver."""
    go = shutil.which("go")
    if not go:
        pytest.skip("go is not installed")
    out = tmp_path_factory.mktemp("go") / "flagd-go-driver"
    # go.sum pins every module; the checksum database is not needed to verify them.
    env = dict(os.environ, GOFLAGS="-mod=mod", GONOSUMDB="*")
    proc = subprocess.run([go, "build", "-o", str(out), "."], cwd=HERE / "go", env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"go build failed:\n{proc.stdout}\n{proc.stderr}"
    return out


@pytest.fixture(scope="session")
def java_driver(tmp_path_factory) -> list[str]:
    """tests/flagd/java compiled: the command that runs the Java provider's driver."""
    java, javac, mvn = shutil.which("java"), shutil.which("javac"), shutil.which("mvn")
    if not (java and javac and mvn):
        pytest.skip("java, javac and mvn are needed")
    work = tmp_path_factory.mktemp("java")
    classpath = work / "classpath.txt"
    proc = subprocess.run([mvn, "-q", "-B", "dependency:build-classpath", f"-Dmdep.outputFile={classpath}"],
                          cwd=HERE / "java", capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"mvn failed:\n{proc.stdout}\n{proc.stderr}"
    cp = classpath.read_text().strip()
    classes = work / "classes"
    proc = subprocess.run([javac, "-cp", cp, "-d", str(classes),
                           str(HERE / "java/src/main/java/flagpole/Main.java")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"javac failed:\n{proc.stdout}\n{proc.stderr}"
    return [java, "-cp", f"{classes}:{cp}", "flagpole.Main"]


# The flag-file suites (test_flag_file_*.py): flagd and Flagpole each serving the module's own
# `flag_file` fixture, `(document, path)`, for the whole module.


def _serving(name: str, flag_file, tmp_path_factory):
    server = SERVERS[name](tmp_path_factory.mktemp(name), flag_file[1]).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def flagd(flag_file, tmp_path_factory):
    """flagd itself serving the module's flag file."""
    yield from _serving("flagd", flag_file, tmp_path_factory)


@pytest.fixture(scope="module")
def flagpole(flag_file, tmp_path_factory):
    """Flagpole serving the module's flag file (config.json's `flags`, keyless)."""
    yield from _serving("flagpole", flag_file, tmp_path_factory)
