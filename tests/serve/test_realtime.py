"""The Flagsmith real-time stream (`GET /sse/environments/{client key}/stream`): the Flagsmith
Python SDK's real-time mode, pointed at Flagpole (`realtime_api_url`), learns of a document change
at once instead of polling."""

from __future__ import annotations

import json
import socket
import time

import pytest
from flagsmith import Flagsmith

from documents import make_document, updated_at_for
from serve_harness import FlagpoleProcess, local_config, wait_until, write_atomic, Env

CLIENT = "rt_client_key"
SERVER = "ser.rt_server_key"


def doc(revision: int) -> dict:
    return make_document(CLIENT, name="Realtime Env", revision=revision)


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    work = tmp_path_factory.mktemp("realtime")
    path = work / "env.json"
    path.write_text(json.dumps(doc(1)))
    env = Env(CLIENT, SERVER, doc(1))
    fp = FlagpoleProcess(work, config=local_config([path], [env])).start()
    try:
        fp.wait_ready(60)
        yield fp, path
    finally:
        assert fp.stop() == 0


def read_stream_head(port: int, path: str, want: bytes, timeout: float = 5.0) -> bytes:
    """The response of a GET until `want` appears (bounded by `timeout`)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".encode())
        data = b""
        end = time.monotonic() + timeout
        while want not in data and time.monotonic() < end:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            data += chunk
        return data


def test_stream_announces_the_current_document(srv):
    fp, _ = srv
    data = read_stream_head(fp.port, f"/sse/environments/{CLIENT}/stream", b"updated_at")
    head, _, body = data.partition(b"\r\n\r\n")
    assert b" 200 " in head.split(b"\r\n")[0], head
    assert b"content-type: text/event-stream" in head.lower(), head
    assert b"event: environment_updated" in body, body
    payload = body.split(b"data: ", 1)[1].split(b"\n", 1)[0]
    assert json.loads(payload)["updated_at"] == pytest.approx(updated_at_for(1).timestamp())


def test_unknown_or_server_keys_are_404(srv):
    fp, _ = srv
    for key in ["nope", SERVER]:
        data = read_stream_head(fp.port, f"/sse/environments/{key}/stream", b"}")
        assert b" 404 " in data.split(b"\r\n")[0], data


def test_python_sdk_realtime_mode_sees_a_change_at_once(srv):
    fp, path = srv
    client = Flagsmith(environment_key=SERVER, api_url=f"{fp.base_url}/api/v1/",
                       enable_local_evaluation=True, enable_realtime_updates=True,
                       realtime_api_url=f"{fp.base_url}/",
                       environment_refresh_interval_seconds=3600)
    try:
        value = lambda: client.get_environment_flags().get_feature_value("plain_string")  # noqa: E731
        assert value() == "hello-r1"
        # No polling (refresh interval one hour): only the stream can bring the change.
        write_atomic(path, json.dumps(doc(2)))
        wait_until(lambda: value() == "hello-r2", 60, "the SDK never saw the change")
    finally:
        client.event_stream_thread.stop()
