"""Every front door admits a key the same way (ARCHITECTURE.md: one authorisation step): the SDKs'
flag analytics (`POST /api/v1/analytics/flags/`) and the real-time stream
(`GET /sse/environments/{client key}/stream`) meet the same per-key rate limit as `/flags`
(`flagpole.limits.rate_limit_per_key_rps`: 429, `Retry-After`, the Flagsmith error body), and
their refusals are counted where `/flags`' are: an unknown or missing key in the process's
`unrecognised_keys`, a refusal of a known key in its environment's `rejected` (status page)."""

from __future__ import annotations

import socket

from metrics_support import printed_fingerprints, status_json
from serve_harness import HOST, local_config, standard_envs, write_documents

RPS = 5
# Requests are sent back to back until one is refused: however slow the machine, the rate is
# exceeded sooner or later; this only bounds a proxy that never refuses.
MAX_REQUESTS = 1000
ANALYTICS = "/api/v1/analytics/flags/"


def realtime_status(port: int, key: str) -> tuple[int, bytes]:
    """Opens the real-time stream of `key` and closes it once the response head has arrived:
    the status and the whole head."""
    with socket.create_connection((HOST, port), timeout=30) as s:
        s.sendall(f"GET /sse/environments/{key}/stream HTTP/1.1\r\nHost: x\r\n"
                  "Accept: text/event-stream\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            assert chunk, f"connection closed before a response head: {data!r}"
            data += chunk
    head = data.split(b"\r\n\r\n", 1)[0]
    return int(head.split(b" ", 2)[1]), data




def test_analytics_and_realtime_are_limited_and_counted_like_flags(flagpole, tmp_path):
    envs = standard_envs()
    paths = write_documents(tmp_path / "docs", envs)
    config = local_config(paths, envs, flagpole={"limits": {"rate_limit_per_key_rps": RPS}})
    fp = flagpole(config=config)
    a, b = envs
    fp.wait_ready(60)
    fingerprint_a, fingerprint_b = printed_fingerprints(fp)  # files in the order configured

    # The real-time stream, with A's client key: streams open until the key's bucket is empty.
    streams = []
    while len(streams) < MAX_REQUESTS:
        streams.append(realtime_status(fp.port, a.client_key))
        if streams[-1][0] == 429:
            break
    assert [s for s, _ in streams[:-1]] == [200] * (len(streams) - 1), streams
    status, refused = streams[-1]
    assert status == 429, f"no 429 after {MAX_REQUESTS} streams opened at {RPS}/s"
    head, _, body = refused.partition(b"\r\n\r\n")
    assert b"\r\nretry-after: " in head.lower(), head
    assert b'"too_many_requests"' in body and b"rate_limit_per_key_rps" in body, refused
    # A server key names no stream: refused (404), counted on its environment.
    assert realtime_status(fp.port, a.server_key)[0] == 404
    # An unknown key: refused, counted as unrecognised.
    assert realtime_status(fp.port, "no-such-key")[0] == 404

    # Flag analytics, with B's server key: the same bucket as its `/flags`.
    answers = []
    while len(answers) < MAX_REQUESTS:
        answers.append(fp.post(ANALYTICS, {"feature_a": 1}, key=b.server_key))
        if answers[-1].status == 429:
            break
    assert [r.status for r in answers[:-1]] == [200] * (len(answers) - 1), answers
    limited = answers[-1]
    assert limited.status == 429, answers[-1]
    assert int(limited.header("retry-after")) >= 1, limited
    assert limited.json()["status"] == "too_many_requests", limited
    assert "rate_limit_per_key_rps" in limited.json()["message"], limited
    assert fp.post(ANALYTICS, {"feature_a": 1}, key="no-such-key").status == 401
    assert fp.post(ANALYTICS, {"feature_a": 1}).status == 401  # no key at all

    status_doc = status_json(fp)
    by_env = {e["environment"]: e for e in status_doc["environments"]}
    # A: the stream's 429 and the server key's 404.
    assert by_env[fingerprint_a]["rejected"] == 2, by_env[fingerprint_a]
    # B: the analytics 429.
    assert by_env[fingerprint_b]["rejected"] == 1, by_env[fingerprint_b]
    # The stream's unknown key, the analytics post's unknown key and the one without a key.
    assert status_doc["unrecognised_keys"] == 3, status_doc
