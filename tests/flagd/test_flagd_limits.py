"""The flagd listener keeps the main listener's protections: the connection cap
(`flagpole.limits.max_connections`: at the cap new connections wait in the backlog and are served
when another closes) and the request-head size limit."""

from __future__ import annotations

import json
import socket

from fixture_files import write_documents
from flagd_support import ENVS, MAIN
from serve_harness import assert_connection_cap, free_port, local_config

UNARY = "/flagd.evaluation.v1.Service/ResolveString"


def connect_request(body: bytes, extra_headers: str = "") -> bytes:
    return (f"POST {UNARY} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"X-API-Key: {MAIN.server_key}\r\nContent-Length: {len(body)}\r\n{extra_headers}"
            f"Connection: close\r\n\r\n").encode() + body


def read_all(sock: socket.socket) -> bytes:
    chunks = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def test_connection_cap_and_head_limit(start_flagd, tmp_path):
    paths = write_documents(tmp_path / "docs", ENVS)
    port = free_port()
    config = local_config(paths, ENVS, flagpole={
        "grpc": {"port": port},
        "limits": {"max_connections": 2, "header_read_timeout_seconds": 30},
    })
    fp = start_flagd(config=config)
    body = json.dumps({"flagKey": "seg_feat", "context": {"targetingKey": "u1", "plan": "pro"}}).encode()
    answer = assert_connection_cap(port, 2, connect_request(body), read_all)
    assert b'"pro-value"' in answer, answer[:300]
    # A request head over the limit is refused, not buffered without bound.
    huge = socket.create_connection(("127.0.0.1", port), timeout=60)
    try:
        huge.sendall(connect_request(body, "X-Padding: " + "a" * 200_000 + "\r\n"))
    except OSError:
        pass  # the server may close while the head is still being sent: also a refusal
    try:
        answer = read_all(huge)
    except OSError:
        answer = b""
    assert not answer.startswith(b"HTTP/1.1 200"), answer[:200]
    huge.close()
    assert fp.proc.poll() is None, fp.stderr_tail()
