"""pytest configuration of the flagd suite (tests/flagd): Flagpole's flagd-compatible front door
driven by the official flagd providers in RPC mode.

Reuses the serve suite's harness (process wrapper) and the OFREP suite's fixture documents and
reference expectations (tests/ofrep/fixtures.py), and provides:

- `flagd_srv` (session): one server with MAIN (never changed) and LIVE (rewritten by the tests)
  as local documents, `flagpole.grpc.port` set.
- `start_flagd`: a factory for further processes (stopped at teardown).
- `node_flagd_dir` (session): tests/flagd/node with `npm ci` done when its lock file changed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "serve"))
sys.path.insert(0, str(HERE.parent / "ofrep"))
sys.path.insert(0, str(HERE.parent))  # browser_support

from browser_support import npm_ci  # noqa: E402
from flagd_support import ENVS, FlagdProcess, flagd_config, write_documents  # noqa: E402
from serve_harness import binary_path, free_port  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def flagd_binary() -> str:
    path = binary_path()
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail(f"flagpole binary not found at {path}: `cargo build --release -p flagpole` "
                    "or point FLAGPOLE_BIN at it.", pytrace=False)
    return str(path)


@pytest.fixture(scope="session")
def flagd_srv(tmp_path_factory):
    work = tmp_path_factory.mktemp("flagd")
    paths = write_documents(work / "docs", ENVS)
    fp = FlagdProcess(work, config=flagd_config(paths, free_port()), grpc_port=None)
    fp.start()
    fp.wait_grpc()
    fp.paths = paths
    yield fp
    assert fp.stop() == 0, fp.stderr_tail()


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
