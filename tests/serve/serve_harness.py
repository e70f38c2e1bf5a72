"""Harness of the `flagpole serve` integration suite: a real flagpole process, a real (and
misbehaving on demand) upstream Flagsmith API, and a small raw HTTP client.

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
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import parse_qs, urlsplit

from documents import make_document

REPO = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
# How long a wait for an event (a process listening, a request arriving) may take before it counts
# as a hang. Generous: a busy machine makes things slower, and the waits end as soon as they can.
EVENT_TIMEOUT = 60.0

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
    "config_path",
}


def binary_path() -> Path:
    return Path(os.environ.get("FLAGPOLE_BIN") or REPO / "target" / "release" / "flagpole")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def wait_until(pred: Callable[[], Any], timeout: float, message: str, interval: float = 0.05) -> Any:
    """Poll `pred` until it returns a truthy value; fail with `message` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while True:
        try:
            value = pred()
            if value:
                return value
        except (OSError, http.client.HTTPException, ValueError) as exc:  # not up yet, etc.
            last_exc = exc
        if time.monotonic() >= deadline:
            extra = f" (last error: {last_exc!r})" if last_exc else ""
            raise AssertionError(f"timed out after {timeout}s: {message}{extra}")
        time.sleep(interval)


# --------------------------------------------------------------------------------------------
# HTTP client
# --------------------------------------------------------------------------------------------


@dataclass
class Response:
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    reason: str = ""

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def header_all(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name.lower()]

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
# Upstream (a fake Flagsmith API that can misbehave)
# --------------------------------------------------------------------------------------------

DOC_PATH = "/api/v1/environment-document/"
MOVED_PREFIX = "/moved"  # mode "redirect": 307 from DOC_PATH to MOVED_PREFIX + DOC_PATH


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    at: float
    page: int
    server_port: int = 0


class JsonHandler(BaseHTTPRequestHandler):
    """Base of the request handlers of scripted Flagsmith APIs: HTTP/1.1, quiet, JSON answers."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes, *, close: bool = False) -> None:
        """Answers `body` (JSON, typed only when not empty); `close` ends the connection after."""
        self.send_response(status)
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)


class ScriptedApi:
    """A Flagsmith API a test scripts: a subclass keeps its state (under `lock`), writes a
    `JsonHandler` subclass and hands it to `serve`; it listens on a free port of 127.0.0.1."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer((HOST, 0), handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def api_url(self) -> str:
        return f"http://{HOST}:{self.server.server_address[1]}/api/v1"

    def set(self, **values: Any) -> None:
        """Changes the script (attributes of this object) between requests."""
        with self.lock:
            for k, v in values.items():
                setattr(self, k, v)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Upstream:
    """A real HTTP server standing in for the Flagsmith API (`{api_url}/environment-document/`).

    Documents are registered per server key (`set_document`, `set_pages`); `mode` switches the
    behaviour at runtime:

    ok           200 with the document (pages linked with `Link: <…>; rel="next"`)
    conditional  like ok, but 304 when If-None-Match matches `etag`
    304          always 304 Not Modified
    500, 401     that status with a small JSON body
    garbage      200 with a body that is not JSON
    not_document 200 with valid JSON that is not an environment document
    truncated    200 with Content-Length larger than what is sent, then the connection is closed
    slow         waits `slow_seconds` (longer than flagpole's timeout), then sends the document
    endless      200, chunked, sends the start of the document then whitespace forever
                 (bounded by MAX_HANG_SECONDS and by the client going away)
    redirect     307 to the same document under MOVED_PREFIX (same origin)
    """

    MAX_HANG_SECONDS = 20.0

    def __init__(self, port: int = 0) -> None:
        self.lock = threading.Lock()
        self.docs: dict[str, list[bytes]] = {}  # server key -> pages (serialised)
        self.mode = "ok"
        self.etag: str | None = None
        self.slow_seconds = 4.0
        self.failing_page: int | None = None  # this page answers 500 (in mode ok/conditional)
        self.cross_origin_next: str | None = None  # absolute URL used as page 1's rel="next"
        self.requests: list[RecordedRequest] = []
        self._stop = threading.Event()
        self._conns: set[socket.socket] = set()
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def setup(self) -> None:
                super().setup()
                with upstream.lock:
                    upstream._conns.add(self.connection)

            def finish(self) -> None:
                with upstream.lock:
                    upstream._conns.discard(self.connection)
                try:
                    super().finish()
                except OSError:
                    pass

            def do_GET(self) -> None:  # noqa: N802
                upstream._handle(self)

            def do_HEAD(self) -> None:  # noqa: N802
                self.send_response(405)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer((HOST, port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.daemon = True

    # -- control -------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/v1"

    def start(self) -> "Upstream":
        self.thread.start()
        return self

    def stop(self) -> None:
        """Stop listening AND cut every open (keep-alive) connection: the upstream is really gone."""
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()
        with self.lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.thread.join(timeout=5)

    def set_document(self, server_key: str, document: dict) -> None:
        self.set_pages(server_key, [document])

    def set_pages(self, server_key: str, pages: list[dict]) -> None:
        with self.lock:
            self.docs[server_key] = [json.dumps(p).encode() for p in pages]

    def set_mode(self, mode: str) -> None:
        with self.lock:
            self.mode = mode

    def requests_for(self, server_key: str | None = None, page: int | None = None) -> list[RecordedRequest]:
        with self.lock:
            return [
                r
                for r in self.requests
                if (server_key is None or r.headers.get("x-environment-key") == server_key)
                and (page is None or r.page == page)
            ]

    def count(self, server_key: str | None = None, page: int | None = None) -> int:
        return len(self.requests_for(server_key, page))

    def wait_for_requests(self, n_more: int, server_key: str | None = None, page: int | None = None,
                          timeout: float = EVENT_TIMEOUT) -> None:
        """Wait until `n_more` further requests (from now) have been *completed or started*."""
        start = self.count(server_key, page)
        wait_until(lambda: self.count(server_key, page) >= start + n_more, timeout,
                   f"upstream did not get {n_more} more request(s) for {server_key} page={page}")

    # -- request handling ------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        split = urlsplit(h.path)
        query = parse_qs(split.query)
        try:
            page = int(query.get("page", ["1"])[0])
        except ValueError:
            page = 0
        headers = {k.lower(): v for k, v in h.headers.items()}
        with self.lock:
            self.requests.append(RecordedRequest("GET", h.path, headers, time.monotonic(), page, self.port))
            mode = self.mode
            key = headers.get("x-environment-key", "")
            pages = self.docs.get(key)
            etag = self.etag
            failing_page = self.failing_page
            cross = self.cross_origin_next

        path = split.path
        if mode == "redirect" and path == DOC_PATH:
            location = f"{MOVED_PREFIX}{DOC_PATH}" + (f"?{split.query}" if split.query else "")
            return self._send(h, 307, b"", extra=[("Location", location)])
        if path == f"{MOVED_PREFIX}{DOC_PATH}":
            path, mode = DOC_PATH, "ok"
        if path != DOC_PATH:
            return self._send(h, 404, b'{"detail":"Not found."}')
        if pages is None:
            return self._send(h, 401, b'{"detail":"Invalid or missing X-Environment-Key"}')
        if not 1 <= page <= len(pages):
            return self._send(h, 404, b'{"detail":"Invalid page."}')
        body = pages[page - 1]

        if mode in ("ok", "conditional"):
            if mode == "conditional" and etag and h.headers.get("If-None-Match") == etag and page == 1:
                return self._send(h, 304, b"", extra=[("ETag", etag)])
            if failing_page == page:
                return self._send(h, 500, b'{"detail":"page failed"}')
            extra = []
            if etag:
                extra.append(("ETag", etag))
            if page < len(pages):
                if page == 1 and cross:
                    nxt = cross
                elif page == 1:
                    nxt = f"{DOC_PATH}?page={page + 1}"  # relative
                else:
                    nxt = f"{self.base_url}{DOC_PATH}?page={page + 1}"  # absolute, same origin
                extra.append(("Link", f'<{nxt}>; rel="next"'))
            return self._send(h, 200, body, extra=extra)
        if mode == "304":
            return self._send(h, 304, b"")
        if mode in ("500", "401", "503"):
            return self._send(h, int(mode), b'{"detail":"upstream says no"}')
        if mode == "garbage":
            return self._send(h, 200, b"<html><body>502 Bad Gateway</body></html>\x00\xff{{{")
        if mode == "not_document":
            return self._send(h, 200, b'{"detail": "this is JSON but not an environment document"}')
        if mode == "truncated":
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(body) + 5000))
            h.end_headers()
            h.wfile.write(body[: len(body) // 2])
            h.wfile.flush()
            h.close_connection = True
            try:
                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return None
        if mode == "slow":
            if self._stop.wait(self.slow_seconds):
                return None
            try:
                return self._send(h, 200, body)
            except OSError:
                return None
        if mode == "endless":
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            h.close_connection = True
            deadline = time.monotonic() + self.MAX_HANG_SECONDS
            try:
                self._chunk(h, body[: len(body) // 2])
                while time.monotonic() < deadline and not self._stop.is_set():
                    self._chunk(h, b" " * 64)
                    time.sleep(0.05)
            except OSError:
                pass  # the client gave up: what we wanted
            return None
        raise AssertionError(f"unknown upstream mode {mode!r}")

    @staticmethod
    def _chunk(h: BaseHTTPRequestHandler, data: bytes) -> None:
        h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        h.wfile.flush()

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, body: bytes, extra: list | None = None) -> None:
        h.send_response(status)
        if status != 304:
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(body)))
        for k, v in extra or []:
            h.send_header(k, v)
        h.end_headers()
        if status != 304 and body:
            h.wfile.write(body)


# --------------------------------------------------------------------------------------------
# flagpole serve
# --------------------------------------------------------------------------------------------


class FlagpoleProcess:
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

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/v1"

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
