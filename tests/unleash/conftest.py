"""pytest configuration of the Unleash suite (tests/unleash): Flagpole serving Unleash toggles in
Unleash Edge's offline mode (`flagpole serve --unleash-features FILE` with client and frontend
tokens), driven over raw HTTP and by Unleash's official Node SDKs (tests/unleash/node).

Reuses the serve suite's harness (process wrapper, HTTP client) and provides:

- `features_file` (module): the toggles every test starts from, in a directory of its own.
- `edge` (module): one Flagpole serving `features_file` with the tokens below (never changed by
  a test; tests that rewrite a file start their own process with `serve_unleash`).
- `serve_unleash`: a factory for further processes (stopped at teardown).
- `node_dir` (session): tests/unleash/node with `npm ci` done when its lock file changed.
- `unleash_server` (session): a real Unleash server on a throwaway PostgreSQL
  (unleash_server.py), running whenever a test starts (a test that stopped it has it started
  again), for the tests of Flagpole polling it (test_upstream*.py).
- `serve_upstream`: a factory of Flagpole processes polling that server (stopped at teardown).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "serve"))
sys.path.insert(0, str(HERE.parent))  # browser_support

from browser_support import npm_ci  # noqa: E402
from loopback import EVENT_TIMEOUT, wait_until  # noqa: E402
from serve_harness import FlagpoleProcess, binary_path, write_atomic  # noqa: E402
from unleash_server import Unavailable, start_stack  # noqa: E402

CLIENT_TOKEN = "*:development.unleash-client-secret"
PROJECT_TOKEN = "other:development.unleash-other-secret"
FRONTEND_TOKEN = "default:development.unleash-frontend-secret"

TOGGLES = {
    "version": 2,
    "features": [
        {"name": "alpha", "project": "default", "enabled": True, "impressionData": True,
         "strategies": [{"name": "default", "parameters": {}}]},
        {"name": "beta", "project": "default", "enabled": True,
         "strategies": [{"name": "userWithId", "parameters": {"userIds": "u1,u2"}}]},
        {"name": "gamma", "project": "other", "enabled": True,
         "strategies": [{"name": "default", "parameters": {}}],
         "variants": [{"name": "blue", "weight": 1000, "weightType": "variable", "stickiness": "default",
                       "payload": {"type": "string", "value": "b"}}]},
        {"name": "off", "project": "default", "enabled": False, "strategies": []},
        {"name": "office", "project": "default", "enabled": True,
         "strategies": [{"name": "remoteAddress", "parameters": {"IPs": "10.1.2.3"}}]},
    ],
}


def write_toggles(path: Path, body) -> None:
    write_atomic(path, body if isinstance(body, (str, bytes)) else json.dumps(body))


def unleash_args(*files: Path, client=(CLIENT_TOKEN, PROJECT_TOKEN), frontend=(FRONTEND_TOKEN,)) -> list[str]:
    args: list[str] = []
    for f in files:
        args += ["--unleash-features", str(f)]
    for t in client:
        args += ["--unleash-client-token", t]
    for t in frontend:
        args += ["--unleash-frontend-token", t]
    return args


@pytest.fixture(scope="session", autouse=True)
def flagpole_binary() -> str:
    path = binary_path()
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail(f"flagpole binary not found at {path}: `cargo build --release -p flagpole` "
                    "or point FLAGPOLE_BIN at it.", pytrace=False)
    return str(path)


@pytest.fixture(scope="module")
def features_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("unleash") / "features.json"
    write_toggles(path, TOGGLES)
    return path


@pytest.fixture(scope="module")
def edge(tmp_path_factory, features_file):
    fp = FlagpoleProcess(tmp_path_factory.mktemp("edge"), extra_args=unleash_args(features_file))
    fp.start()
    yield fp
    assert fp.stop() == 0, fp.stderr_tail()


@pytest.fixture
def serve_unleash(tmp_path):
    started: list[FlagpoleProcess] = []

    def make(*files: Path, wait: bool = True, **tokens) -> FlagpoleProcess:
        fp = FlagpoleProcess(tmp_path / f"fp{len(started)}", extra_args=unleash_args(*files, **tokens))
        started.append(fp)
        fp.start(wait=wait)
        return fp

    yield make
    for fp in started:
        fp.stop()


@pytest.fixture(scope="session")
def node_dir() -> Path:
    return npm_ci(HERE / "node")


@pytest.fixture(scope="session")
def unleash_server_session(tmp_path_factory):
    try:
        cluster, server = start_stack(tmp_path_factory.mktemp("unleash-server"))
    except Unavailable as exc:
        pytest.skip(str(exc))
    yield server
    try:
        server.stop()
    finally:
        cluster.stop()


@pytest.fixture
def unleash_server(unleash_server_session):
    if not unleash_server_session.running():
        unleash_server_session.start()
    return unleash_server_session


def upstream_args(server, client=None, frontend=None, refresh: float = 0.5, metrics: float = 1) -> list[str]:
    """Flagpole's options to poll `server`: by default with every client and frontend token it
    knows, a refresh every half second and metrics forwarded every second."""
    args = ["--unleash-upstream", server.url, "--unleash-refresh-interval", str(refresh),
            "--unleash-metrics-interval", str(metrics)]
    for t in client if client is not None else server.client_tokens.values():
        args += ["--unleash-client-token", t]
    for t in frontend if frontend is not None else server.frontend_tokens.values():
        args += ["--unleash-frontend-token", t]
    return args


@pytest.fixture
def serve_upstream(tmp_path, unleash_server):
    started: list[FlagpoleProcess] = []

    def make(wait_ready: bool = True, **options) -> FlagpoleProcess:
        fp = FlagpoleProcess(tmp_path / f"fp{len(started)}", extra_args=upstream_args(unleash_server, **options))
        started.append(fp)
        fp.start()
        if wait_ready:
            wait_backstage_ready(fp)
        return fp

    yield make
    for fp in started:
        fp.stop()


def wait_backstage_ready(fp: FlagpoleProcess, timeout: float = EVENT_TIMEOUT) -> None:
    """Until Unleash Edge's readiness probe says ready: every client token's toggles fetched."""
    try:
        wait_until(lambda: fp.get("/internal-backstage/ready").status == 200, timeout,
                   f"flagpole on port {fp.port} never became ready")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nstderr:\n{fp.stderr_tail()}") from None
