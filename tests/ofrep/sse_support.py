"""Helpers of the OFREP event-stream tests (docs/ofrep.md, live changes): the expected stream token, event ids
and event blocks, and a small streaming client that reads `GET /ofrep/v1/events` incrementally
from a raw socket. Every wait is bounded: nothing here blocks past the deadline it is given."""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import hmac
import json
import re
import socket
import time
from typing import Any, Iterable

from serve_harness import HOST, HeaderLookup, Response

EVENTS = "/ofrep/v1/events"
TOKEN_LABEL = b"flagpole-ofrep-sse/1\n"
TOKEN = re.compile(r"^[A-Za-z0-9_-]{22}$")
# The start of every stream: the reconnection delay, a comment, the end of the block.
PREAMBLE = re.compile(r"^retry: 5000\n(?::[^\n]*\n)+$")
PING = ": ping"
SSE_DEFAULTS = {"enabled": True, "secret": None, "inactivity_delay_sec": 120, "heartbeat_sec": 15,
                "max_connections": 10000}


# --------------------------------------------------------------------------------------------
# What the server must send
# --------------------------------------------------------------------------------------------


def sse_token(client_key: str, secret: str) -> str:
    """The stream token: the first 22 characters of unpadded base64url(HMAC-SHA256(K, label + client key))."""
    mac = hmac.new(secret.encode(), TOKEN_LABEL + client_key.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()[:22]


def seq_of(document: dict) -> int:
    """The document's `updated_at` in Unix milliseconds (0 when missing)."""
    text = document.get("updated_at")
    if not text:
        return 0
    when = _dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=_dt.timezone.utc)
    return (when - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)) // _dt.timedelta(milliseconds=1)


def event_id(seq: int, rev: str) -> str:
    return f"{seq}-{rev}"


def event_id_of(document: dict) -> str:
    from fixtures import revision_of

    return event_id(seq_of(document), revision_of(document))


def expected_data(document: dict) -> list[tuple[str, Any]]:
    """The `data` member pairs of a refetchEvaluation event, in wire order."""
    from fixtures import revision_of

    pairs: list[tuple[str, Any]] = [("type", "refetchEvaluation"), ("etag", revision_of(document))]
    seq = seq_of(document)
    if seq:
        pairs.append(("lastModified", seq // 1000))
    return pairs


def events_path(token: str | None, since: str | None = None) -> str:
    query = []
    if token is not None:
        query.append(f"t={token}")
    if since is not None:
        query.append(f"since={since}")
    return EVENTS + ("?" + "&".join(query) if query else "")


def ordered(body: bytes) -> Any:
    """JSON with every object as a list of (name, value) pairs, so member order can be checked."""
    return json.loads(body, object_pairs_hook=list)


# --------------------------------------------------------------------------------------------
# A streaming client
# --------------------------------------------------------------------------------------------


class Event:
    """One dispatched SSE event, as the server framed it."""

    def __init__(self, block: str, at: float) -> None:
        self.block = block
        self.at = at
        self.fields: dict[str, str] = {}
        for line in block.split("\n"):
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            self.fields[name] = value[1:] if value.startswith(" ") else value

    @property
    def id(self) -> str | None:
        return self.fields.get("id")

    @property
    def type(self) -> str | None:
        return self.fields.get("event")

    @property
    def data(self) -> str | None:
        return self.fields.get("data")

    def data_pairs(self) -> Any:
        return ordered(self.data.encode())

    def __repr__(self) -> str:
        return f"<Event {self.block!r}>"


class SseStream(HeaderLookup):
    """`GET path` over HTTP/1.1 on a raw socket, the response read incrementally.

    After construction `status` and `headers` are known. A non-200 response is read to its end
    (`body`); a 200 is parsed as it arrives into `blocks` (the text of each block, without the
    blank line that ends it), `events` (blocks carrying `data:`) and `pings` (`: ping` blocks).
    `pump(seconds)` and the `wait_*` methods read for at most the time they are given."""

    MAX_BODY = 1 << 20

    def __init__(self, port: int, path: str, headers: dict | Iterable[tuple[str, str]] | None = None,
                 timeout: float = 10.0) -> None:
        self.port = port
        self.path = path
        self.opened_at = time.monotonic()
        self.raw = b""  # bytes after the header block, not yet de-chunked
        self.data = b""  # de-chunked body bytes, not yet parsed into blocks
        self.text = ""  # the whole decoded body so far
        self.blocks: list[str] = []
        self.block_times: list[float] = []
        self.events: list[Event] = []
        self.pings = 0
        self.eof = False  # the connection ended (EOF, reset, or the final chunk)
        self.clean_end = False  # the body ended with the final chunk (or its Content-Length)
        self.status = 0
        self.headers: list[tuple[str, str]] = []
        self.body = b""
        self._pos = 0  # where the next block starts in `text`
        self._chunked = False
        self._length: int | None = None
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        try:
            hdrs = list(headers.items() if isinstance(headers, dict) else headers or [])
            lines = [f"GET {path} HTTP/1.1", f"Host: {HOST}:{port}"]
            if not any(k.lower() == "accept" for k, _ in hdrs):
                lines.append("Accept: text/event-stream")
            lines += [f"{k}: {v}" for k, v in hdrs]
            self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
            self._read_head(time.monotonic() + timeout)
            if self.status != 200:
                self._read_whole_body(time.monotonic() + timeout)
        except BaseException:
            self.close()
            raise

    # -- response head -----------------------------------------------------------------------

    def _recv(self, deadline: float) -> bool:
        """Reads what is available before `deadline` into `raw`; False on timeout or EOF."""
        if self.eof:
            return False
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            return False
        except OSError:
            self.eof = True
            return False
        if not chunk:
            self.eof = True
            return False
        self.raw += chunk
        return True

    def _read_head(self, deadline: float) -> None:
        while b"\r\n\r\n" not in self.raw:
            if not self._recv(deadline):
                raise AssertionError(f"GET {self.path}: no complete response head "
                                     f"({'connection closed' if self.eof else 'timed out'}): {self.raw[:300]!r}")
        head, _, self.raw = self.raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        assert parts[0] == "HTTP/1.1", lines[0]
        self.status = int(parts[1])
        for line in lines[1:]:
            name, _, value = line.partition(":")
            self.headers.append((name.strip(), value.strip()))
        te = (self.header("transfer-encoding") or "").lower()
        self._chunked = "chunked" in te
        cl = self.header("content-length")
        self._length = int(cl) if cl is not None and not self._chunked else None

    def _read_whole_body(self, deadline: float) -> None:
        while True:
            self._decode()
            if self.clean_end or self.eof or len(self.data) > self.MAX_BODY:
                break
            if not self._recv(deadline):
                if not self.eof:
                    raise AssertionError(f"GET {self.path}: {self.status} body not complete in time")
        self._decode()
        self.body = self.data
        self.close()

    def response(self) -> Response:
        return Response(self.status, self.headers, self.body)

    # -- body ------------------------------------------------------------------------------

    def _decode(self) -> None:
        """Moves complete body bytes from `raw` to `data` (chunked, Content-Length or close)."""
        if self._chunked:
            while not self.clean_end:
                line_end = self.raw.find(b"\r\n")
                if line_end < 0:
                    return
                size = int(self.raw[:line_end].split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.clean_end = True  # trailers, if any, are ignored
                    self.raw = b""
                    return
                if len(self.raw) < line_end + 2 + size + 2:
                    return
                start = line_end + 2
                self.data += self.raw[start:start + size]
                assert self.raw[start + size:start + size + 2] == b"\r\n", "bad chunk framing"
                self.raw = self.raw[start + size + 2:]
        else:
            self.data += self.raw
            self.raw = b""
            if self._length is not None and len(self.data) >= self._length:
                self.clean_end = True

    def _parse(self) -> None:
        now = time.monotonic()
        if self.data:
            self.text += self.data.decode("utf-8")
            self.data = b""
        while True:
            # Blocks end with a blank line; the server frames with "\n" only.
            end = self.text.find("\n\n", self._pos)
            if end < 0:
                return
            block = self.text[self._pos:end]
            self._pos = end + 2
            self.blocks.append(block)
            self.block_times.append(now)
            if block == PING:
                self.pings += 1
            elif any(line.startswith("data:") for line in block.split("\n")):
                self.events.append(Event(block, now))

    def pump(self, seconds: float = 0.0) -> None:
        """Reads and parses for up to `seconds` (at least what is already buffered)."""
        deadline = time.monotonic() + seconds
        while True:
            self._decode()
            self._parse()
            if self.clean_end:
                self.eof = True
            if self.eof or not self._recv(deadline):
                self._decode()
                self._parse()
                if self.clean_end:
                    self.eof = True
                return

    def wait_for(self, pred, timeout: float) -> bool:
        """Reads until `pred(self)` holds, the stream ends, or `timeout` passes."""
        deadline = time.monotonic() + timeout
        while True:
            self.pump(0)
            if pred(self):
                return True
            if self.eof or time.monotonic() >= deadline:
                return bool(pred(self))
            self.pump(min(0.2, max(0.0, deadline - time.monotonic())))

    def wait_preamble(self, timeout: float = 60.0) -> str:
        assert self.wait_for(lambda s: len(s.blocks) >= 1, timeout), \
            f"no first block within {timeout}s on {self.path}: {self.text!r}"
        return self.blocks[0]

    def wait_events(self, n: int, timeout: float) -> list[Event]:
        self.wait_for(lambda s: len(s.events) >= n, timeout)
        return self.events

    def wait_pings(self, n: int, timeout: float) -> bool:
        return self.wait_for(lambda s: s.pings >= n, timeout)

    def wait_closed(self, timeout: float) -> bool:
        return self.wait_for(lambda s: s.eof, timeout)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> "SseStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<SseStream {self.status} {self.path} headers={self.headers} text={self.text[-500:]!r}>"


def wait_all(streams: list[SseStream], pred, timeout: float) -> bool:
    """Reads every stream until `pred(stream)` holds for all of them or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while True:
        for s in streams:
            s.pump(0)
        pending = [s for s in streams if not pred(s)]
        if not pending:
            return True
        if time.monotonic() >= deadline or all(s.eof for s in pending):
            return False
        slice_ = min(0.1, max(0.0, deadline - time.monotonic()) / len(pending))
        for s in pending:
            s.pump(slice_)


# --------------------------------------------------------------------------------------------
# The event-stream server of the suite (conftest `sse`)
# --------------------------------------------------------------------------------------------

def _env(name: str, env_id: int):
    from fixtures import make_document
    from serve_harness import Env

    client = f"ofrep_sse_{name}_client"
    return Env(client, f"ser.ofrep_sse_{name}_server", make_document(client, env_id=env_id))


# One environment per test that edits its document, so tests stay independent.
SSE_A = _env("a", 4101)  # never edited
SSE_ONE = _env("one", 4102)  # one revision at a time
SSE_BURST = _env("burst", 4103)  # a burst of revisions
SSE_RC = _env("rc", 4104)  # reconnections
SSE_SAME = _env("same", 4105)  # rewritten with the same content
SSE_ENVS = [SSE_A, SSE_ONE, SSE_BURST, SSE_RC, SSE_SAME]
SSE_HEARTBEAT = 1  # seconds, so that heartbeats show within a test
