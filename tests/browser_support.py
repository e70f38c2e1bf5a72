"""Browser tests: a headless system Chromium driven by playwright-core from Node, and a static file
server on loopback for the pages they open.

- `find_chromium()` / `chromium_or_skip()`: the system Chromium ($FLAGPOLE_CHROMIUM, else the first
  of CHROMIUM_NAMES on PATH) that actually starts; without one a test skips, saying why (a
  failure under CI=true: tests/conftest.py).
  scripts/test.sh installs the Debian `chromium` package when it is missing and it can.
- `npm_ci(node_dir)`: a Node project's locked dependencies, installed once per lock file.
  PLAYWRIGHT_NODE_DIR is the project that pins `playwright-core` (tests/ofrep/node), whose
  `chromium.js` launches the browser; playwright-core never downloads one of its own.
- `run_node_driver(...)`: runs a Node script with an input and an output JSON file, the browser
  in $FLAGPOLE_CHROMIUM.
- `StaticServer`: serves a directory on 127.0.0.1 (its own origin, so pages talk to flagpole
  cross-origin, as a real web app does), no caching, and records what it served.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent
PLAYWRIGHT_NODE_DIR = TESTS / "ofrep" / "node"
CHROMIUM_ENV = "FLAGPOLE_CHROMIUM"
CHROMIUM_NAMES = ["chromium", "chromium-browser", "google-chrome-stable", "google-chrome"]
HOST = "127.0.0.1"


# --------------------------------------------------------------------------------------------
# Chromium
# --------------------------------------------------------------------------------------------


def _version(path: str) -> tuple[str | None, str]:
    """(the version line, "") when `path --version` names a Chromium/Chrome; else (None, why not)."""
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{path} --version failed: {exc}"
    out = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0 or "chrom" not in out.lower():
        return None, f"{path} --version exited with {proc.returncode}: {out[-300:]!r}"
    return proc.stdout.strip(), ""


@functools.lru_cache(maxsize=None)
def find_chromium() -> tuple[str | None, str]:
    """(path, version) of a Chromium that starts, or (None, the reason there is none)."""
    explicit = os.environ.get(CHROMIUM_ENV)
    if explicit:
        candidates = [explicit]
    else:
        candidates = [p for p in (shutil.which(n) for n in CHROMIUM_NAMES) if p]
        if not candidates:
            return None, (f"no Chromium: none of {', '.join(CHROMIUM_NAMES)} is on PATH and "
                          f"{CHROMIUM_ENV} is not set (Debian: apt-get install chromium; "
                          "scripts/test.sh does it when run as root)")
    problems = []
    for path in candidates:
        version, problem = _version(path)
        if version is not None:
            return path, version
        problems.append(problem)
    return None, "no working Chromium: " + "; ".join(problems)


def chromium_or_skip() -> str:
    path, why = find_chromium()
    if path is None:
        pytest.skip(why)
    return path


# --------------------------------------------------------------------------------------------
# Node
# --------------------------------------------------------------------------------------------


def npm_ci(node_dir: Path) -> Path:
    """`npm ci` in `node_dir` when its lock file changed since the last run (skips without node;
    a failure under CI=true)."""
    npm = shutil.which("npm")
    if not npm or not shutil.which("node"):
        pytest.skip("node/npm not installed")
    want = hashlib.sha256((node_dir / "package-lock.json").read_bytes()).hexdigest()
    stamp = node_dir / "node_modules" / ".flagpole-lock.sha"
    if not stamp.is_file() or stamp.read_text().strip() != want:
        env = dict(os.environ, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1")
        proc = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=node_dir, capture_output=True,
                              text=True, timeout=300, env=env)
        if proc.returncode != 0:
            pytest.fail(f"npm ci failed in {node_dir}:\n{proc.stdout}\n{proc.stderr}", pytrace=False)
        stamp.write_text(want)
    return node_dir


def run_node_driver(script: Path, request: dict, workdir: Path, chromium: str,
                    timeout: float = 300) -> dict:
    """node SCRIPT IN.json OUT.json with the browser in $FLAGPOLE_CHROMIUM; returns OUT."""
    workdir.mkdir(parents=True, exist_ok=True)
    inp, out = workdir / "driver-in.json", workdir / "driver-out.json"
    inp.write_text(json.dumps(request))
    env = dict(os.environ, **{CHROMIUM_ENV: chromium, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"})
    proc = subprocess.run([shutil.which("node") or "node", str(script), str(inp), str(out)],
                          cwd=script.parent, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (f"{script.name} failed ({proc.returncode}):\n"
                                  f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(out.read_text())


# --------------------------------------------------------------------------------------------
# Static files
# --------------------------------------------------------------------------------------------


class StaticServer:
    """Serves `root` on 127.0.0.1 (a port of its own), with `Cache-Control: no-store`."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.served: list[tuple[str, int]] = []  # (path, status)
        served = self.served

        class Handler(SimpleHTTPRequestHandler):
            extensions_map = {**SimpleHTTPRequestHandler.extensions_map,
                              ".js": "text/javascript", ".mjs": "text/javascript",
                              ".html": "text/html; charset=utf-8", ".json": "application/json"}

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, directory=str(root), **kwargs)

            def end_headers(self) -> None:
                self.send_header("Cache-Control", "no-store")
                super().end_headers()

            def log_request(self, code: Any = "-", size: Any = "-") -> None:
                served.append((self.path, int(code) if str(code).isdigit() else 0))

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        self.server = ThreadingHTTPServer((HOST, 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def origin(self) -> str:
        return f"http://{HOST}:{self.port}"

    def __enter__(self) -> "StaticServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
