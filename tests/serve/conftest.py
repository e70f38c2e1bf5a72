"""Fixtures of the `flagpole serve` integration suite (see README.md in this directory).

- `serve_binary` (session, autouse): the flagpole binary ($FLAGPOLE_BIN, default
  target/release/flagpole). A missing binary, or one whose `serve --help` does not exit 0, fails
  every test, saying how to build it: the suite never skips itself.
- `upstream`: a real HTTP server on 127.0.0.1 standing in for the Flagsmith API, switchable at
  runtime between good and bad behaviours (serve_harness.Upstream).
- `flagpole`: a factory starting `flagpole serve` processes (config written to a tmp dir, a free
  port each); all of them are stopped at teardown.
- `srv` (module): one flagpole serving the two standard local documents
  (`serve_harness.standard_envs`); a module that needs another set-up defines its own `srv`.
- `node_sdk_dir` (session): tests/serve/node with `npm ci` done once per session.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from serve_harness import (
    FlagpoleProcess,
    Upstream,
    binary_path,
    local_config,
    required_binary,
    standard_envs,
    stop_all,
    stop_expecting_zero,
    write_documents,
)

HERE = Path(__file__).resolve().parent


def pytest_report_header(config):
    return [f"flagpole serve suite: binary={binary_path()}"]


@pytest.fixture(scope="session", autouse=True)
def serve_binary() -> str:
    path = required_binary()
    try:
        probe = subprocess.run([path, "serve", "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        pytest.fail(f"`{path} serve --help` did not run: {error}", pytrace=False)
    if probe.returncode != 0:
        pytest.fail(f"`{path} serve --help` exited {probe.returncode}, so no serve test can run; "
                    f"rebuild with `cargo build --release -p flagpole`. Its output:\n"
                    f"{probe.stdout[-2000:]}{probe.stderr[-2000:]}", pytrace=False)
    return str(path)


@pytest.fixture
def upstream():
    up = Upstream().start()
    try:
        yield up
    finally:
        up.stop()


@pytest.fixture
def flagpole(tmp_path):
    """Factory: flagpole(config=..., documents=[...], env={...}, start=True, wait=True)."""
    started: list[FlagpoleProcess] = []

    def make(config: dict | None = None, documents: list[Path] | None = None, env: dict | None = None,
             extra_args: list[str] | None = None, start: bool = True, wait: bool = True,
             workdir: Path | None = None, port: int | None = None) -> FlagpoleProcess:
        fp = FlagpoleProcess(workdir or tmp_path / "fp", config=config, documents=documents, env=env,
                             extra_args=extra_args, port=port)
        started.append(fp)
        if start:
            fp.start(wait=wait)
        return fp

    yield make
    stop_all(started)


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    """One flagpole per module serving the two standard documents (env A shows disabled flags to
    client keys, env B hides them), from local files: no upstream."""
    work = tmp_path_factory.mktemp("standard")
    envs = standard_envs()
    paths = write_documents(work / "docs", envs)
    fp = FlagpoleProcess(work, config=local_config(paths, envs)).start()
    try:
        fp.wait_ready(60)
        yield fp
    finally:
        stop_expecting_zero(fp)


@pytest.fixture(scope="session")
def node_sdk_dir() -> Path:
    """tests/serve/node with its locked dependencies installed (`npm ci`, once per session)."""
    node_dir = HERE / "node"
    npm = shutil.which("npm")
    if not npm or not shutil.which("node"):
        pytest.skip("node/npm not installed")
    lock = (node_dir / "package-lock.json").read_bytes()
    want = hashlib.sha256(lock).hexdigest()
    stamp = node_dir / "node_modules" / ".flagpole-lock.sha"
    if not stamp.is_file() or stamp.read_text().strip() != want:
        proc = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=node_dir, capture_output=True,
                              text=True, timeout=300)
        if proc.returncode != 0:
            pytest.fail(f"npm ci failed in {node_dir}:\n{proc.stdout}\n{proc.stderr}", pytrace=False)
        stamp.write_text(want)
    return node_dir
