"""Connection and rate limits. The connection cap (`flagpole.limits.max_connections`): at the
cap the proxy stops accepting, and a waiting connection is served as soon as another closes.
Per-key rate limits (optional; docs/serve.md, limits, and docs/ofrep.md): over
`flagpole.limits.rate_limit_per_key_rps` the Flagsmith API answers 429 with `Retry-After` and its
JSON error body; over `ofrep.rate_limit_per_key_rps` OFREP answers 429 `GENERAL`. Each key has its
own bucket, the two APIs are counted apart, and the bucket refills."""

from __future__ import annotations

import time

from serve_harness import assert_connection_cap, local_config, standard_envs, wait_until, write_documents

RPS = 5
# Requests are sent back to back until one is refused: however slow the machine, the rate is
# exceeded sooner or later; this only bounds a proxy that never refuses.
MAX_REQUESTS = 1000


def _until_refused(send) -> list:
    """Sends until the first 429 (included), at most MAX_REQUESTS."""
    answers = []
    while len(answers) < MAX_REQUESTS:
        answers.append(send())
        if answers[-1].status == 429:
            break
    return answers


def test_per_key_rate_limits(flagpole, tmp_path):
    envs = standard_envs()
    paths = write_documents(tmp_path / "docs", envs)
    config = local_config(paths, envs, flagpole={"limits": {"rate_limit_per_key_rps": RPS}},
                          ofrep={"rate_limit_per_key_rps": RPS})
    fp = flagpole(config=config)
    a, b = envs
    wait_until(lambda: fp.get("/api/v1/flags/", key=a.client_key).status == 200, 60, "serving")
    time.sleep(1.2)  # the readiness probe above spent part of the burst

    answers = _until_refused(lambda: fp.get("/api/v1/flags/", key=a.client_key))
    refused = [r for r in answers if r.status == 429]
    # The burst first: its tokens only come back with time, never go.
    assert [r.status for r in answers[:RPS - 1]] == [200] * (RPS - 1), answers
    assert refused, f"no 429 after {MAX_REQUESTS} back-to-back requests at {RPS}/s"
    r = refused[0]
    assert r.header("retry-after") is not None and int(r.header("retry-after")) >= 1, r
    assert r.json()["status"] == "too_many_requests" and "rate_limit_per_key_rps" in r.json()["message"], r

    # Another key of the same environment and another environment have buckets of their own.
    assert fp.get("/api/v1/flags/", key=a.server_key).status == 200
    assert fp.get("/api/v1/flags/", key=b.client_key).status == 200
    # OFREP is counted apart from the Flagsmith API, with its own error shape.
    ofrep = _until_refused(lambda: fp.post("/ofrep/v1/evaluate/flags", {"context": {}},
                                           headers={"X-API-Key": a.client_key}))
    assert ofrep[0].status == 200, ofrep[0]
    limited = [r for r in ofrep if r.status == 429]
    assert limited, [r.status for r in ofrep]
    assert limited[0].json()["errorCode"] == "GENERAL", limited[0]
    assert int(limited[0].header("retry-after")) >= 1, limited[0]

    # The bucket refills.
    time.sleep(1.1)
    assert fp.get("/api/v1/flags/", key=a.client_key).status == 200


def test_rate_limit_config_errors(flagpole, tmp_path):
    envs = standard_envs()
    paths = write_documents(tmp_path / "docs", envs)
    for bad in ({"flagpole": {"limits": {"rate_limit_per_key_rps": 0}}},
                {"ofrep": {"rate_limit_per_key_rps": "fast"}}):
        config = local_config(paths, envs, **bad)
        fp = flagpole(config=config, wait=False)
        code = fp.proc.wait(timeout=10)
        assert code != 0, f"{bad}: started anyway"
        assert "rate_limit_per_key_rps" in fp.stderr_text(), fp.stderr_text()
        fp.expect_clean_exit = False


def test_connection_cap(flagpole, tmp_path):
    envs = standard_envs()
    paths = write_documents(tmp_path / "docs", envs)
    config = local_config(paths, envs, flagpole={"limits": {"max_connections": 3,
                                                            "header_read_timeout_seconds": 30}})
    fp = flagpole(config=config)
    a = envs[0]
    wait_until(lambda: fp.get("/api/v1/flags/", key=a.client_key).status == 200, 60, "serving")
    request = (f"GET /api/v1/flags/ HTTP/1.1\r\nHost: x\r\nX-Environment-Key: {a.client_key}\r\n"
               f"Connection: close\r\n\r\n").encode()
    assert_connection_cap(fp.port, 3, request, lambda sock: sock.recv(65536))
