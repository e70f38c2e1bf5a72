"""The Connect protocol on the flagd listener with JSON (the Go provider test covers
`application/proto`): unary calls and their errors, and `EventStream` as a server stream."""

from __future__ import annotations

import http.client
import json
import struct

from flagd_support import MAIN
from metrics_support import scrape


def call(port: int, path: str, body: bytes, headers: dict) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", path, body, headers)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def test_unary_json_and_errors(flagd_srv):
    port = flagd_srv.grpc_port
    headers = {"Content-Type": "application/json", "X-API-Key": MAIN.server_key}
    body = json.dumps({"flagKey": "seg_feat", "context": {"targetingKey": "u1", "plan": "pro"}}).encode()
    status, h, raw = call(port, "/flagd.evaluation.v1.Service/ResolveString", body, headers)
    assert (status, h["content-type"]) == (200, "application/json"), raw
    got = json.loads(raw)
    assert (got["value"], got["reason"], got["variant"]) == ("pro-value", "TARGETING_MATCH", "enabled")
    assert got["metadata"]["flagsmithSegment"] == "pro"
    status, _, raw = call(port, "/flagd.evaluation.v2.Service/ResolveInt",
                          json.dumps({"flagKey": "num"}).encode(), headers)
    assert (status, json.loads(raw)["value"]) == (200, "10"), raw  # int64 is a string in JSON
    for path, payload, want_status, want_code in (
        ("/flagd.evaluation.v2.Service/ResolveBoolean", {"flagKey": "nope"}, 404, "not_found"),
        ("/flagd.evaluation.v2.Service/ResolveBoolean", {"flagKey": "text"}, 400, "invalid_argument"),
        ("/flagd.evaluation.v2.Service/Nope", {}, 404, "unimplemented"),
    ):
        status, _, raw = call(port, path, json.dumps(payload).encode(), headers)
        assert (status, json.loads(raw)["code"]) == (want_status, want_code), (path, raw)
    status, _, raw = call(port, "/flagd.evaluation.v2.Service/ResolveBoolean", b"{}",
                          {"Content-Type": "application/json"})
    assert (status, json.loads(raw)["code"]) == (401, "unauthenticated"), raw


def read_envelopes(response, n: int) -> list[tuple[int, dict]]:
    out = []
    for _ in range(n):
        head = response.read(5)
        flags, length = struct.unpack(">BI", head)
        out.append((flags, json.loads(response.read(length))))
        if flags & 2:
            break
    return out


def test_event_stream_over_connect_json(flagd_srv):
    conn = http.client.HTTPConnection("127.0.0.1", flagd_srv.grpc_port, timeout=10)
    body = struct.pack(">BI", 0, 2) + b"{}"
    conn.request("POST", "/flagd.evaluation.v2.Service/EventStream", body,
                 {"Content-Type": "application/connect+json", "X-API-Key": MAIN.server_key})
    response = conn.getresponse()
    assert (response.status, response.getheader("Content-Type")) == (200, "application/connect+json")
    assert read_envelopes(response, 1) == [(0, {"type": "provider_ready"})]
    conn.close()
    # A refused stream is one end-of-stream envelope carrying the error.
    conn = http.client.HTTPConnection("127.0.0.1", flagd_srv.grpc_port, timeout=10)
    conn.request("POST", "/flagd.evaluation.v1.Service/EventStream", body,
                 {"Content-Type": "application/connect+json", "X-API-Key": "nope"})
    response = conn.getresponse()
    (flags, end), = read_envelopes(response, 1)
    assert flags == 2 and end["error"]["code"] == "unauthenticated", end
    conn.close()


def test_calls_counted_by_method_and_code(flagd_srv):
    """gRPC answers every call with HTTP 200; the outcome is in `flagpole_flagd_calls_total`."""
    def counts() -> tuple[float, float, float]:
        m = scrape(flagd_srv)
        name = "flagpole_flagd_calls_total"
        return (m.get(name, method="resolve_string", code="ok") or 0.0,
                m.get(name, method="resolve_boolean", code="not_found") or 0.0,
                m.get(name, method="resolve_boolean", code="unauthenticated") or 0.0)

    before = counts()
    headers = {"Content-Type": "application/json", "X-API-Key": MAIN.server_key}
    call(flagd_srv.grpc_port, "/flagd.evaluation.v1.Service/ResolveString",
         json.dumps({"flagKey": "seg_feat"}).encode(), headers)
    for _ in range(2):
        call(flagd_srv.grpc_port, "/flagd.evaluation.v2.Service/ResolveBoolean",
             json.dumps({"flagKey": "nope"}).encode(), headers)
    call(flagd_srv.grpc_port, "/flagd.evaluation.v2.Service/ResolveBoolean", b"{}",
         {"Content-Type": "application/json"})
    after = counts()
    assert tuple(b - a for a, b in zip(before, after)) == (1.0, 2.0, 1.0), (before, after)
    m = scrape(flagd_srv)
    assert (m.get("flagpole_flagd_call_duration_seconds_count", method="resolve_boolean") or 0) >= 3
