"""Harness of the `flagpole serve` integration suite: a real flagpole process, a small raw HTTP
client, and the configurations the tests use. The real (and misbehaving on demand) upstream
Flagsmith API is in `scripted_upstream.py`; its names are importable from here too.

Everything listens on 127.0.0.1 only, and everything stops by itself: processes are killed at
teardown, upstream handlers never block longer than `Upstream.MAX_HANG_SECONDS`.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import pytest

from documents import make_document
from loopback import EVENT_TIMEOUT, HOST, OnLoopback, free_port, wait_until
# The scripted upstream lives in its own module; its names stay importable from here.
from scripted_upstream import (  # noqa: F401
    DOC_PATH,
    MOVED_PREFIX,
    JsonHandler,
    RecordedRequest,
    ScriptedApi,
    Upstream,
)

REPO = Path(__file__).resolve().parents[2]

# Config keys (the Edge Proxy's `config.json`) and their aliases: any environment variable with one of these names
# (case-insensitive) would override the test's config, so they are scrubbed from the child's env.
CONFIG_ENV_KEYS = {
    "environment_key_pairs",
    "api_url",
    "api_poll_frequency_seconds",
    "api_poll_frequency",
    "api_poll_timeout_seconds",
    "api_poll_timeout",
    "allow_origins",
    "endpoint_caches",
    "logging",
    "server",
    "health_check",
    "proxy_key",
    "flagpole",
    "unleash",
    "config_path",
}


def binary_path() -> Path:
    return Path(os.environ.get("FLAGPOLE_BIN") or REPO / "target" / "release" / "flagpole")


# --------------------------------------------------------------------------------------------
# HTTP client
# --------------------------------------------------------------------------------------------


class HeaderLookup:
    """Reading response headers by name, whatever their case, from `headers` (name, value pairs
    in the order received): for a whole `Response` and for a stream read as it arrives
    (tests/ofrep/sse_support.py) alike."""

    headers: list[tuple[str, str]]

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def header_all(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name.lower()]


@dataclass
class Response(HeaderLookup):
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    reason: str = ""

    def json(self) -> Any:
        return json.loads(self.body)

    def __repr__(self) -> str:
        body = self.body[:300]
        return f"<Response {self.status} headers={self.headers} body={body!r}>"


def http_request(
    port: int,
    method: str,
    path: str,
    headers: dict[str, str] | Iterable[tuple[str, str]] | None = None,
    body: bytes | str | dict | list | None = None,
    timeout: float = 10.0,
) -> Response:
    """One request on a fresh connection. No redirects are followed, nothing is decompressed.

    `body` may be bytes/str (sent as is) or a dict/list (sent as JSON with a JSON content type)."""
    hdrs: list[tuple[str, str]] = list(headers.items() if isinstance(headers, dict) else headers or [])
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
        if not any(k.lower() == "content-type" for k, _ in hdrs):
            hdrs.append(("Content-Type", "application/json"))
    elif isinstance(body, str):
        body = body.encode()
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        skip_ae = any(k.lower() == "accept-encoding" for k, _ in hdrs)
        conn.putrequest(method, path, skip_accept_encoding=skip_ae)
        for k, v in hdrs:
            conn.putheader(k, v)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        data = resp.read()
        return Response(resp.status, list(resp.getheaders()), data, resp.reason)
    finally:
        conn.close()


def read_head(sock: socket.socket) -> bytes:
    """What a raw socket receives up to the end of a response head (or to EOF, if it closes first)."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return received


# --------------------------------------------------------------------------------------------
# flagpole serve
# --------------------------------------------------------------------------------------------


class FlagpoleProcess(OnLoopback):
    """One `flagpole serve` process on a port of its own, run from `workdir`."""

    _counter = 0

    def __init__(
        self,
        workdir: Path,
        config: dict | None = None,
        documents: list[Path] | None = None,
        env: dict[str, str] | None = None,
        extra_args: list[str] | None = None,
        port: int | None = None,
        use_config_flag: bool = True,
    ) -> None:
        FlagpoleProcess._counter += 1
        self.n = FlagpoleProcess._counter
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config = config
        self.documents = documents or []
        self.extra_env = env or {}
        self.extra_args = extra_args or []
        self.port = port or free_port()
        self.use_config_flag = use_config_flag
        self.proc: subprocess.Popen | None = None
        self.expect_clean_exit = True  # the `flagpole` fixture checks SIGTERM → exit 0 at teardown
        self.signalled = False  # set once the harness sent a signal (an exit before that is a crash)
        self.stderr_path = self.workdir / f"flagpole-{self.n}.stderr"
        self.stdout_path = self.workdir / f"flagpole-{self.n}.stdout"
        self.config_path = self.workdir / f"config-{self.n}.json"

    def command(self) -> list[str]:
        cmd = [str(binary_path()), "serve", "--host", HOST, "--port", str(self.port)]
        if self.config is not None and self.use_config_flag:
            cmd += ["--config", str(self.config_path)]
        for d in self.documents:
            cmd += ["--document", str(d)]
        return cmd + self.extra_args

    def child_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k.lower() not in CONFIG_ENV_KEYS}
        env.setdefault("RUST_LOG", "info")
        env.update(self.extra_env)
        return env

    def start(self, wait: bool = True, timeout: float = EVENT_TIMEOUT) -> "FlagpoleProcess":
        if self.config is not None:
            self.config_path.write_text(json.dumps(self.config, indent=2))
        self._stderr = open(self.stderr_path, "ab")
        self._stdout = open(self.stdout_path, "ab")
        self.proc = subprocess.Popen(
            self.command(),
            cwd=self.workdir,
            env=self.child_env(),
            stdin=subprocess.DEVNULL,
            stdout=self._stdout,
            stderr=self._stderr,
        )
        if wait:
            self.wait_live(timeout)
        return self

    def wait_live(self, timeout: float = EVENT_TIMEOUT) -> None:
        def live() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(
                    f"flagpole exited with {self.proc.returncode} before listening; stderr:\n{self.stderr_tail()}"
                )
            return http_request(self.port, "GET", "/proxy/health/liveness", timeout=2).status == 200

        try:
            wait_until(live, timeout, f"flagpole on port {self.port} never became live")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nstderr:\n{self.stderr_tail()}") from None

    def wait_ready(self, timeout: float = EVENT_TIMEOUT) -> None:
        try:
            wait_until(lambda: self.get("/proxy/health/readiness").status == 200, timeout,
                       f"flagpole on port {self.port} never became ready")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nstderr:\n{self.stderr_tail()}") from None

    def stderr_text(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stderr_tail(self, n: int = 40) -> str:
        return "\n".join(self.stderr_text().splitlines()[-n:])

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def send_signal(self, sig: int) -> None:
        assert self.proc is not None
        self.signalled = True
        self.proc.send_signal(sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int | None:
        """Send `sig` and wait; kill after `timeout`. Returns the exit code (None if killed)."""
        if self.proc is None:
            return None
        code: int | None
        if self.proc.poll() is None:
            self.signalled = True
            self.proc.send_signal(sig)
            try:
                code = self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
                code = None
        else:
            code = self.proc.returncode
        for f in (self._stderr, self._stdout):
            f.close()
        return code

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)

    # -- requests ----------------------------------------------------------------------

    def request(self, method: str, path: str, key: str | None = None, headers: dict | None = None,
                body: Any = None, timeout: float = 10.0) -> Response:
        hdrs = dict(headers or {})
        if key is not None:
            hdrs["X-Environment-Key"] = key
        return http_request(self.port, method, path, hdrs, body, timeout)

    def get(self, path: str, key: str | None = None, headers: dict | None = None, **kw: Any) -> Response:
        return self.request("GET", path, key, headers, **kw)

    def post(self, path: str, body: Any, key: str | None = None, headers: dict | None = None) -> Response:
        return self.request("POST", path, key, headers, body)

    def flags(self, key: str) -> Any:
        r = self.get("/api/v1/flags/", key)
        assert r.status == 200, r
        return r.json()

    def identity(self, key: str, identifier: str, traits: dict | None = None) -> Any:
        body = {"identifier": identifier,
                "traits": [{"trait_key": k, "trait_value": v} for k, v in (traits or {}).items()]}
        r = self.post("/api/v1/identities/", body, key)
        assert r.status == 200, r
        return r.json()

    def readiness(self) -> Response:
        return self.get("/proxy/health/readiness")


IMF_FIXDATE = re.compile(
    r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
    r"\d{4} \d{2}:\d{2}:\d{2} GMT$"
)


def stop_all(started: Iterable[FlagpoleProcess]) -> None:
    """Stops every process a fixture started and fails the test when one did not end as a proxy
    should: a process still running must exit 0 on SIGTERM (the drain), and one that is gone
    must have been stopped by the test (`signalled`), not have died on its own. A process whose
    test expects another end (`expect_clean_exit = False`) is only stopped."""
    problems = []
    for fp in started:
        if fp.proc is None:
            continue
        was_running, signalled = fp.running(), fp.signalled
        code = fp.stop(timeout=15)
        if not fp.expect_clean_exit:
            continue
        if was_running and code != 0:
            problems.append(f"flagpole on port {fp.port} exited with {code} after SIGTERM; stderr:\n"
                            f"{fp.stderr_tail()}")
        elif not was_running and not signalled:
            problems.append(f"flagpole on port {fp.port} died on its own during the test (exit code "
                            f"{code}); stderr:\n{fp.stderr_tail()}")
    assert not problems, "\n".join(problems)


def stop_expecting_zero(fp: FlagpoleProcess) -> None:
    """Stops a fixture's one process: it must exit 0 on SIGTERM (the drain)."""
    code = fp.stop()
    assert code == 0, f"flagpole exit code {code} after SIGTERM; stderr:\n{fp.stderr_tail()}"


def required_binary() -> str:
    """The flagpole binary (`binary_path`); missing or not executable, the test fails saying how
    to build it: a suite never skips itself for want of it."""
    path = binary_path()
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail(
            f"flagpole binary not found (or not executable) at {path}. Build it with "
            "`cargo build --release -p flagpole` from the repository root, or point FLAGPOLE_BIN at it.",
            pytrace=False,
        )
    return str(path)


def assert_connection_cap(port: int, cap: int, request: bytes,
                          read_answer: Callable[[socket.socket], bytes]) -> bytes:
    """A listener on `port` capped at `cap` connections: with `cap` idle ones open, one more
    (done in the backlog) sends `request` and gets no answer; once an idle one closes it is
    served (read with `read_answer`), HTTP/1.1 200. Returns that answer."""
    # No event tells when the server has closed the probe's connection or accepted the idle ones:
    # a second is long for either, even on a busy machine.
    time.sleep(1.0)
    idle = [socket.create_connection((HOST, port), timeout=5) for _ in range(cap)]
    try:
        time.sleep(1.0)
        waiting = socket.create_connection((HOST, port), timeout=5)  # completes in the backlog
        waiting.sendall(request)
        waiting.settimeout(1.0)
        try:
            early = waiting.recv(65536)
        except socket.timeout:
            early = b""
        assert early == b"", f"connection {cap + 1} was served over a cap of {cap}: {early[:80]!r}"
        idle.pop().close()
        waiting.settimeout(60)
        answer = read_answer(waiting)
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        waiting.close()
    finally:
        for s in idle:
            s.close()
    return answer


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write then rename, as a deploy tool would."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp-write")
    tmp.write_bytes(data.encode() if isinstance(data, str) else data)
    os.replace(tmp, path)


@dataclass
class Env:
    """An environment as the tests see it: its document and its two keys."""

    client_key: str
    server_key: str
    document: dict = field(default_factory=dict)

    @property
    def pair(self) -> dict:
        return {"server_side_key": self.server_key, "client_side_key": self.client_key}


# --------------------------------------------------------------------------------------------
# Configurations used by the tests
# --------------------------------------------------------------------------------------------

# Short timings for upstream tests: poll every second, 1 s timeout per fetch, 2 s grace →
# stale after 1 + 2 × n_envs seconds without a successful update.
POLL_SECONDS = 1
TIMEOUT_SECONDS = 1
GRACE_SECONDS = 2


def upstream_config(upstream: Upstream, envs: list[Env], **overrides) -> dict:
    config = {
        "environment_key_pairs": [e.pair for e in envs],
        "api_url": upstream.api_url,
        "api_poll_frequency_seconds": POLL_SECONDS,
        "api_poll_timeout_seconds": TIMEOUT_SECONDS,
        "health_check": {"environment_update_grace_period_seconds": GRACE_SECONDS},
    }
    config.update(overrides)
    if "health_check" not in overrides:
        # A longer poll period: the grace period may not be shorter (Flagpole refuses that).
        grace = max(GRACE_SECONDS, config["api_poll_frequency_seconds"])
        config["health_check"] = {"environment_update_grace_period_seconds": grace}
    return config


def write_documents(directory: Path, envs: list[Env]) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for e in envs:
        p = directory / f"{e.client_key}.json"
        p.write_text(json.dumps(e.document, indent=1))
        paths.append(p)
    return paths


def local_config(paths: list[Path], envs: list[Env], **extra) -> dict:
    """Config serving local document files (offline), server keys from environment_key_pairs."""
    flagpole = {"documents": [{"path": str(p)} for p in paths]}
    flagpole.update(extra.pop("flagpole", {}))
    config = {
        "environment_key_pairs": [e.pair for e in envs],
        # Nothing listens on port 9: should flagpole try to poll these keys, it fails fast.
        "api_url": "http://127.0.0.1:9/api/v1",
        "flagpole": flagpole,
    }
    config.update(extra)
    return config


def standard_envs() -> list[Env]:
    """Two environments: A shows disabled flags to client keys, B hides them."""
    return [
        Env("env_a_client_key", "ser.env_a_server_key",
            make_document("env_a_client_key", name="Env A", env_id=1001, hide_disabled_flags=False)),
        Env("env_b_client_key", "ser.env_b_server_key",
            make_document("env_b_client_key", name="Env B", env_id=1002, hide_disabled_flags=True)),
    ]
