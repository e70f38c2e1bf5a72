"""How a change stream's connection is opened, whichever way the request arrives: a new
connection's first request (served straight on the socket), a request head split over many
packets or larger than one read, a stream opened on a keep-alive connection that already served
another request (served by the HTTP stack), and heads the server must refuse the usual way."""

from __future__ import annotations

import json
import socket
import time

from serve_harness import HOST
from sse_support import PREAMBLE, SSE_A, event_id_of, events_path, sse_token

WAIT = 60  # seconds: the deadline of a wait for the server's answer (a hang, not a slow machine)


def _path() -> str:
    return events_path(sse_token(SSE_A.client_key, SSE_A.server_key), event_id_of(SSE_A.document))


def _read_until(sock: socket.socket, marker: bytes, deadline: float, have: bytes = b"") -> bytes:
    data = have
    while marker not in data:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            raise AssertionError(f"timed out waiting for {marker!r}; got {data[:400]!r}")
        if not chunk:
            raise AssertionError(f"connection closed before {marker!r}; got {data[:400]!r}")
        data += chunk
    return data


def _stream_opened(sock: socket.socket, deadline: float) -> tuple[str, bytes]:
    """Reads a stream's response head and its first chunk (the preamble)."""
    data = _read_until(sock, b"\r\n\r\n", deadline)
    head, _, rest = data.partition(b"\r\n\r\n")
    rest = _read_until(sock, b"\n\n", deadline, rest)
    return head.decode("latin-1"), rest


def _assert_stream_head(head: str) -> None:
    lines = head.split("\r\n")
    assert lines[0] == "HTTP/1.1 200 OK", head
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert fields["content-type"].startswith("text/event-stream"), head
    assert fields.get("transfer-encoding") == "chunked", head
    assert "content-length" not in fields, head
    assert "date" in fields, head


def _preamble(rest: bytes) -> str:
    size, _, body = rest.partition(b"\r\n")
    text = body[: int(size, 16)].decode()
    return text.split("\n\n")[0] + "\n"


def test_request_head_split_over_many_packets(sse):
    with socket.create_connection((HOST, sse.fp.port), timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        request = f"GET {_path()} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".encode()
        for i in range(0, len(request), 7):
            sock.sendall(request[i:i + 7])
            time.sleep(0.01)
        head, rest = _stream_opened(sock, time.monotonic() + WAIT)
    _assert_stream_head(head)
    assert PREAMBLE.match(_preamble(rest)), rest


def test_large_request_head_with_cookies(sse):
    # Browsers send cookies and long user agents: a head far larger than one small read.
    cookie = "; ".join(f"c{i}={'v' * 60}" for i in range(60))
    with socket.create_connection((HOST, sse.fp.port), timeout=10) as sock:
        sock.sendall(f"GET {_path()} HTTP/1.1\r\nHost: x\r\nCookie: {cookie}\r\n"
                     f"Origin: http://app.example\r\n\r\n".encode())
        head, rest = _stream_opened(sock, time.monotonic() + WAIT)
    _assert_stream_head(head)
    assert PREAMBLE.match(_preamble(rest)), rest


def test_stream_on_a_reused_keep_alive_connection(sse):
    with socket.create_connection((HOST, sse.fp.port), timeout=10) as sock:
        sock.sendall(f"GET /api/v1/flags/ HTTP/1.1\r\nHost: x\r\nX-Environment-Key: {SSE_A.client_key}\r\n\r\n"
                     .encode())
        data = _read_until(sock, b"\r\n\r\n", time.monotonic() + WAIT)
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        length = int(next(line.split(b":", 1)[1] for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:")))
        while len(body) < length:
            body += sock.recv(65536)
        assert isinstance(json.loads(body[:length]), list)
        sock.sendall(f"GET {_path()} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        head, rest = _stream_opened(sock, time.monotonic() + WAIT)
    _assert_stream_head(head)
    assert PREAMBLE.match(_preamble(rest)), rest


def test_refused_heads_get_the_usual_answers(sse):
    # Over the header limit (16 KiB by default): 431 with the JSON error body.
    with socket.create_connection((HOST, sse.fp.port), timeout=10) as sock:
        sock.sendall(f"GET {_path()} HTTP/1.1\r\nHost: x\r\nX-Big: {'a' * 20000}\r\n\r\n".encode())
        data = _read_until(sock, b"\r\n\r\n", time.monotonic() + WAIT)
        assert data.startswith(b"HTTP/1.1 431"), data[:200]
    # A bad token on the socket path: 401 with the OFREP error body, then the connection closes.
    with socket.create_connection((HOST, sse.fp.port), timeout=10) as sock:
        sock.sendall(f"GET {events_path('A' * 22)} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        sock.settimeout(5)
        while chunk := sock.recv(65536):
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 401"), head
        assert json.loads(body)["errorCode"] == "GENERAL", body
    # Not HTTP at all: the connection is answered with a 400 or closed, never a stream.
    with socket.create_connection((HOST, sse.fp.port), timeout=10) as sock:
        sock.sendall(b"GET /ofrep/v1/events\x00\x01 garbage\r\n\r\n")
        sock.settimeout(5)
        data = sock.recv(65536)
        assert data == b"" or data.startswith(b"HTTP/1.1 400"), data[:200]
