"""The scripted Flagsmith API of the serve suites: `Upstream`, a real HTTP server serving
environment documents that misbehaves on demand (its modes), and `ScriptedApi` with `JsonHandler`,
the base of the smaller APIs a test scripts itself (analytics, shadow, discovery).

Everything listens on 127.0.0.1 only and stops by itself: upstream handlers never block longer
than `Upstream.MAX_HANG_SECONDS`. `serve_harness` re-exports every name here.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from loopback import EVENT_TIMEOUT, HOST, OnLoopback, wait_until

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


class ScriptedApi(OnLoopback):
    """A Flagsmith API a test scripts: a subclass keeps its state (under `lock`), writes a
    `JsonHandler` subclass and hands it to `serve`; it listens on a free port of 127.0.0.1."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer((HOST, 0), handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def set(self, **values: Any) -> None:
        """Changes the script (attributes of this object) between requests."""
        with self.lock:
            for k, v in values.items():
                setattr(self, k, v)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Upstream(OnLoopback):
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

        class Handler(JsonHandler):
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
