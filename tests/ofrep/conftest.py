"""pytest configuration of the OFREP suite (tests/ofrep, see README.md).

Reuses the serve suite's harness (tests/serve: the process wrapper, the HTTP client, the fake
upstream) and provides:

- `ofrep_binary` (session, autouse): the flagpole binary must exist ($FLAGPOLE_BIN, default
  target/release/flagpole).
- `srv` (session): the main server, shared by every module: MAIN, HIDE and BROKEN as local
  documents, UNLOADED on an unreachable upstream, `allow_origins` = [ORIGIN], default `ofrep`.
- `opts_srv` (session): the main configuration with `ofrep` = OPTIONS (parse_json_strings,
  require_targeting_key, client keys disabled).
- `start_flagpole`: a factory for further processes (stopped at teardown; each must exit 0).
- `sse` (session): a server for the event-stream tests: the SSE_* environments as local documents
  the tests rewrite, `allow_origins` = [ORIGIN], heartbeats every SSE_HEARTBEAT seconds.
- `open_stream`: opens `GET /ofrep/v1/events` streams (sse_support.SseStream), closed at teardown.
- `node_ofrep_dir` (session): tests/ofrep/node with `npm ci` done when its lock file changed
  (browser_support.npm_ci; the browser test's playwright-core is pinned there too).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "serve"))
sys.path.insert(0, str(HERE.parent))  # browser_support

from browser_support import npm_ci  # noqa: E402
from fixture_files import write_documents  # noqa: E402
from ofrep_support import (  # noqa: E402
    LOADED_ENVS,
    OPTIONS,
    ORIGIN,
    OfrepProcess,
    main_config,
    wait_serving,
)
from serve_harness import local_config, required_binary, stop_all, stop_expecting_zero  # noqa: E402
from sse_support import SSE_ENVS, SSE_HEARTBEAT, SseStream  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def ofrep_binary() -> str:
    return required_binary()


class Main:
    """The main server and what is needed to start replicas of it."""

    def __init__(self, fp: OfrepProcess, config: dict, paths: list[Path]) -> None:
        self.fp = fp
        self.config = config
        self.paths = paths


@pytest.fixture(scope="session")
def main_setup(tmp_path_factory):
    work = tmp_path_factory.mktemp("ofrep-main")
    paths = write_documents(work / "docs", LOADED_ENVS)
    config = main_config(paths)
    fp = OfrepProcess(work, config=config).start()
    try:
        wait_serving(fp)
        yield Main(fp, config, paths)
    finally:
        stop_expecting_zero(fp)


@pytest.fixture(scope="session")
def srv(main_setup) -> OfrepProcess:
    return main_setup.fp


@pytest.fixture(scope="session")
def opts_srv(main_setup, tmp_path_factory) -> OfrepProcess:
    """The main configuration with `ofrep` = OPTIONS: parse_json_strings, require_targeting_key,
    client keys disabled."""
    work = tmp_path_factory.mktemp("ofrep-options")
    fp = OfrepProcess(work, config=dict(main_setup.config, ofrep=dict(OPTIONS))).start(wait=False)
    try:
        wait_serving(fp, context={"targetingKey": "probe"})
        yield fp
    finally:
        stop_expecting_zero(fp)


class SseServer:
    """The event-stream server: its process, its config and the document file of each client key."""

    def __init__(self, fp: OfrepProcess, config: dict, paths: dict[str, Path]) -> None:
        self.fp = fp
        self.config = config
        self.paths = paths


@pytest.fixture(scope="session")
def sse(tmp_path_factory):
    work = tmp_path_factory.mktemp("ofrep-sse")
    paths = write_documents(work / "docs", SSE_ENVS)
    config = local_config(paths, SSE_ENVS, allow_origins=[ORIGIN],
                          ofrep={"sse": {"heartbeat_sec": SSE_HEARTBEAT}})
    fp = OfrepProcess(work, config=config).start()
    try:
        wait_serving(fp, SSE_ENVS[0].server_key)
        yield SseServer(fp, config, {e.client_key: p for e, p in zip(SSE_ENVS, paths)})
    finally:
        stop_expecting_zero(fp)


@pytest.fixture
def open_stream():
    """Factory: open_stream(port, path, headers=None) → an SseStream (any status), closed at teardown."""
    opened: list[SseStream] = []

    def make(port: int, path: str, headers=None, timeout: float = 10.0) -> SseStream:
        s = SseStream(port, path, headers, timeout=timeout)
        opened.append(s)
        return s

    yield make
    for s in opened:
        s.close()


@pytest.fixture
def start_flagpole(tmp_path):
    """Factory: start_flagpole(config=..., env={...}, workdir=..., serving_key=..., port=...) → a process
    serving OFREP (waited for with `serving_key`, unless None)."""
    started: list[OfrepProcess] = []

    def make(config: dict | None = None, env: dict | None = None, workdir: Path | None = None,
             serving_key: str | None = None, documents: list[Path] | None = None,
             port: int | None = None) -> OfrepProcess:
        fp = OfrepProcess(workdir or tmp_path / "fp", config=config, env=env, documents=documents, port=port)
        started.append(fp)
        fp.start(wait=False)
        if serving_key is not None:
            wait_serving(fp, serving_key)
        else:
            fp.wait_live()
        return fp

    yield make
    stop_all(started)


@pytest.fixture(scope="session")
def node_ofrep_dir() -> Path:
    """tests/ofrep/node with its locked dependencies installed (`npm ci`, once per lock file)."""
    return npm_ci(HERE / "node")
