"""Process life cycle of `flagpole serve` (README: `flagpole serve`; `deploy/README.md`:
shutdown): local document reload, tiering one Flagpole behind another, signals and the drain,
configuration sources (environment variables, paths, unknown and invalid keys), the bundled
example. Helpers and timings are the upstream suite's (upstream_support.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import time

import pytest

import serve_expect as ex
from documents import (
    mixed_identities,
)
from metrics_support import scrape, status_json
from serve_harness import (
    HOST,
    REPO,
    local_config,
    read_head,
    standard_envs,
    wait_until,
    write_atomic,
    write_documents,
)
from upstream_support import (
    CLIENT,
    SERVER,
    ENV,
    WAIT,
    doc,
    rev_of,
    wait_rev,
    readiness,
    assert_serves,
)


def test_document_file_reload(flagpole, tmp_path):
    path = tmp_path / "env.json"
    path.write_text(json.dumps(doc(0)))
    fp = flagpole(documents=[path], env={
        "ENVIRONMENT_KEY_PAIRS": json.dumps([ENV.pair]),
        "API_URL": "http://127.0.0.1:9/api/v1",
        "OFREP": json.dumps({"sse": {"heartbeat_sec": 1}}),  # the clock of step 5
    })
    fp.wait_ready(WAIT)
    assert_serves(fp, doc(0))
    assert fp.get("/api/v1/environment-document/", SERVER).status == 200

    # 1. An atomic replace is picked up within a few seconds.
    write_atomic(path, json.dumps(doc(1)))
    wait_rev(fp, 1)
    assert_serves(fp, doc(1))

    def status(field: str):
        (env,) = status_json(fp)["environments"]
        return env[field]

    def last_error() -> str | None:
        return status("last_error")

    def refused(what: str, rev: int, seen: str | None = None, needle: str = "") -> str:
        """Waits until flagpole has read the file and refused it (its status shows a new error,
        containing `needle`), then checks the good document is still the one served."""
        error = wait_until(lambda: (e := last_error()) and e != seen and needle in e and e, WAIT,
                           f"{what}: never refused (last error {last_error()!r})")
        assert rev_of(fp) == f"hello-r{rev}", what
        assert rev_of(fp, CLIENT) == f"hello-r{rev}", what
        return error

    # 2. A half-written file (in place, not atomic) never replaces the good document...
    data = json.dumps(doc(2)).encode()
    half = data[: len(data) // 2]
    with open(path, "r+b") as f:
        f.truncate(0)
        f.write(half)
        f.flush()
        os.fsync(f.fileno())
        # serde_json names where the input ended: the column of the half file's last byte.
        refused("a half-written file", 1, needle=f"column {len(half)}")
        # ...and once completed, it is loaded.
        f.write(data[len(data) // 2:])
        f.flush()
    wait_rev(fp, 2)

    # 3. Valid JSON that is not a valid document, garbage, an empty file: all ignored (each is
    # refused for another reason, so each refusal shows as a new error).
    bad = doc(3)
    bad["feature_states"] = "oops"
    error = last_error()
    for content in [json.dumps(bad), "\x00\xff garbage", "", "[]"]:
        write_atomic(path, content)
        error = refused(f"the file {content[:20]!r}", 2, seen=error)
    assert fp.running()

    # 4. A good document again.
    write_atomic(path, json.dumps(doc(4)))
    wait_rev(fp, 4)
    assert_serves(fp, doc(4))

    # 5. Once loaded, the proxy goes idle: reading the file must not count as a change (a
    # reload loop would burn a core for as long as the process lives). Every load records a
    # success, so a loop would move `last_success`; the clock that shows it does not is the
    # process's own: the heartbeats of an OFREP change stream, one a second.
    write_atomic(path, json.dumps(doc(5)))
    wait_rev(fp, 5)
    with ChangeStream(fp.port, CLIENT) as stream:
        stream.wait_heartbeats(1)  # the write's own file events are over by now
        loaded = status("last_success")
        stream.wait_heartbeats(4)
    assert status("last_success") == loaded, "the file keeps being reloaded with nothing changed"


class ChangeStream:
    """An OFREP change stream (`/ofrep/v1/events`) on a raw socket, for its heartbeats."""

    def __init__(self, port: int, key: str) -> None:
        self.sock = socket.create_connection((HOST, port), timeout=WAIT)
        self.sock.sendall(f"GET /ofrep/v1/events HTTP/1.1\r\nHost: x\r\nX-API-Key: {key}\r\n"
                          "Accept: text/event-stream\r\n\r\n".encode())
        self.data = b""

    def wait_heartbeats(self, n: int) -> None:
        """Until `n` heartbeats (`: ping`) have come since the stream opened."""
        while self.data.count(b": ping") < n:
            chunk = self.sock.recv(65536)
            assert chunk, f"the change stream ended: {self.data[-300:]!r}"
            self.data += chunk

    def __enter__(self) -> "ChangeStream":
        return self

    def __exit__(self, *exc) -> None:
        self.sock.close()


def test_tiering_second_flagpole_behind_the_first(flagpole, tmp_path):
    envs = standard_envs()
    paths = write_documents(tmp_path / "docs", envs)
    front = flagpole(local_config(paths, envs))
    front.wait_ready(WAIT)
    edge = flagpole({
        "environment_key_pairs": [e.pair for e in envs],
        "api_url": f"{front.base_url}/api/v1",
        "api_poll_frequency_seconds": 1,
        "api_poll_timeout_seconds": 2,
    })
    edge.wait_ready(WAIT)
    for e in envs:
        for key in (e.client_key, e.server_key):
            assert edge.flags(key) == front.flags(key), key
            for path in ("/api/v1/flags/?feature=mv_feature", "/api/v1/flags/?feature=server_only_secret"):
                a, b = edge.get(path, key), front.get(path, key)
                assert (a.status, a.json()) == (b.status, b.json()), (path, key)
            for identifier, traits in mixed_identities(10):
                assert edge.identity(key, identifier, traits) == front.identity(key, identifier, traits)
        a = edge.get("/api/v1/environment-document/", e.server_key)
        b = front.get("/api/v1/environment-document/", e.server_key)
        assert a.status == b.status == 200
        pairs = lambda body: json.loads(body, object_pairs_hook=lambda p: p)  # noqa: E731
        assert pairs(a.body) == pairs(b.body)
        assert edge.get("/api/v1/environment-document/", e.client_key).status == 401
    # The edge keeps polling the front (with conditional requests) and stays ready: two more
    # successful polls per environment, counted by the edge.
    def polls() -> float:
        return sum(s.value for s in scrape(edge).series("flagpole_upstream_fetches_total")
                   if s.labels.get("result") in ("200", "304"))

    done = polls()
    wait_until(lambda: polls() >= done + 2 * len(envs), WAIT, "the edge stopped polling the front")
    assert readiness(edge)[0] == 200


# ----------------------------------------------------------------------------------------
# Signals
# ----------------------------------------------------------------------------------------


# Far longer than any shutdown here may take, so waiting for it would show.
SHUTDOWN_TIMEOUT = 60


def _local_flagpole(flagpole, tmp_path):
    envs = standard_envs()[:1]
    paths = write_documents(tmp_path / "docs", envs)
    fp = flagpole(local_config(paths, envs, flagpole={"shutdown_timeout_seconds": SHUTDOWN_TIMEOUT}))
    fp.wait_ready(WAIT)
    return fp, envs[0]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_exits_0_promptly_despite_idle_keepalive(flagpole, tmp_path, sig):
    import http.client

    fp, env = _local_flagpole(flagpole, tmp_path)
    conn = http.client.HTTPConnection(HOST, fp.port, timeout=10)
    try:
        conn.request("GET", "/api/v1/flags/", headers={"X-Environment-Key": env.client_key})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 200
        fp.send_signal(sig)
        code = fp.proc.wait(timeout=SHUTDOWN_TIMEOUT + 30)
    finally:
        conn.close()
    assert code == 0, f"exit code {code}"
    # Waiting on the idle connection would have run into the shutdown timeout, which is logged.
    assert "shutdown timeout reached" not in fp.stderr_text(), fp.stderr_tail()


def test_sigterm_lets_in_flight_request_finish(flagpole, tmp_path):
    fp, env = _local_flagpole(flagpole, tmp_path)
    body = json.dumps({"identifier": "late-user", "traits": [{"trait_key": "plan", "trait_value": "pro"}]}).encode()
    s = socket.create_connection((HOST, fp.port), timeout=10)
    try:
        s.sendall((f"POST /api/v1/identities/ HTTP/1.1\r\nHost: {HOST}\r\nX-Environment-Key: {env.client_key}\r\n"
                   f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
                  + body[:10])
        # No event says the head was read; a second is long for that, even on a busy machine.
        time.sleep(1.0)
        fp.send_signal(signal.SIGTERM)
        # (Still running: the answer below could not come otherwise.) Once the signal is handled,
        # new connections are refused or told "not ready"; a probe may still land before that.
        deadline = time.monotonic() + 10
        last = None
        while time.monotonic() < deadline:
            try:
                last = fp.get("/proxy/health/readiness", timeout=1.5)
            except OSError:
                break
            if last.status == 503:
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"readiness after SIGTERM never left 200: {last}")
        s.sendall(body[10:])
        data = read_head(s)
        assert data.startswith(b"HTTP/1.1 200"), data[:200]
    finally:
        s.close()
    assert fp.proc.wait(timeout=SHUTDOWN_TIMEOUT + 30) == 0


# ----------------------------------------------------------------------------------------
# Configuration sources and the bundled example
# ----------------------------------------------------------------------------------------


def test_env_vars_override_config_file(flagpole, upstream):
    upstream.set_document(SERVER, doc(0))
    config = {
        "environment_key_pairs": [{"server_side_key": "ser.wrong", "client_side_key": "wrong"}],
        "api_url": "http://127.0.0.1:9/api/v1",
        "api_poll_frequency_seconds": 60,
        "api_poll_timeout_seconds": 1,
    }
    fp = flagpole(config, env={
        "API_URL": upstream.api_url,
        "environment_key_pairs": json.dumps([ENV.pair]),
        "Api_Poll_Frequency_Seconds": "1",
    })
    fp.wait_ready(WAIT)
    assert rev_of(fp) == "hello-r0"
    upstream.set_document(SERVER, doc(1))
    wait_rev(fp, 1)  # polled every second, not every minute
    assert fp.get("/api/v1/flags/", "wrong").status == 401


def test_config_path_env_and_cwd_config(flagpole, tmp_path):
    envs = standard_envs()[:1]
    paths = write_documents(tmp_path / "docs", envs)
    cfg = local_config(paths, envs)
    # CONFIG_PATH
    other = tmp_path / "elsewhere" / "my-config.json"
    other.parent.mkdir()
    other.write_text(json.dumps(cfg))
    fp = flagpole(env={"CONFIG_PATH": str(other)}, workdir=tmp_path / "cwd1")
    fp.wait_ready(WAIT)
    assert fp.get("/api/v1/flags/", envs[0].client_key).status == 200
    # ./config.json in the working directory
    cwd = tmp_path / "cwd2"
    cwd.mkdir()
    (cwd / "config.json").write_text(json.dumps(cfg))
    fp2 = flagpole(workdir=cwd)
    fp2.wait_ready(WAIT)
    assert fp2.get("/api/v1/flags/", envs[0].server_key).status == 200


def test_unknown_config_keys_are_not_fatal_outside_flagpoles_section(flagpole, tmp_path):
    # The Edge Proxy's keys Flagpole has no use for, and keys no peer reads (a newer peer's),
    # load with a warning outside the `flagpole` section; inside it an unknown key is refused,
    # as the published schema refuses it (additionalProperties: false there).
    envs = standard_envs()[:1]
    paths = write_documents(tmp_path / "docs", envs)
    cfg = local_config(paths, envs)
    cfg.update({
        "some_future_key": {"x": 1},
        "endpoint_caches": {"flags": {"use_cache": True}},
        "logging": {"log_level": "DEBUG", "log_format": "json", "colours": False, "override": {}},
        "server": {"proxy_headers": False, "reload": False, "timeout_keep_alive": 5},
    })
    fp = flagpole(cfg)
    fp.wait_ready(WAIT)
    assert fp.get("/api/v1/flags/", envs[0].client_key).status == 200
    assert "unknown config key 'some_future_key' ignored" in fp.stderr_text(), fp.stderr_tail()
    refused = flagpole({**cfg, "flagpole": {**cfg["flagpole"], "some_future_key": 1}}, start=False)
    refused.expect_clean_exit = False
    refused.start(wait=False)
    assert refused.proc.wait(timeout=WAIT) == 2
    assert "unknown key 'flagpole.some_future_key': not a setting" in refused.stderr_text(), \
        refused.stderr_tail()


@pytest.mark.parametrize("bad", [
    {"api_poll_frequency_seconds": "often"},
    {"environment_key_pairs": [{"server_side_key": "not-ser-prefixed", "client_side_key": "a"}]},
    {"environment_key_pairs": [{"server_side_key": "ser.x", "client_side_key": "  "}]},
    {"api_url": 42},
])
def test_invalid_config_values_stop_startup(flagpole, tmp_path, bad):
    cfg = {"api_url": "http://127.0.0.1:9/api/v1"}
    cfg.update(bad)
    fp = flagpole(cfg, start=False)
    fp.expect_clean_exit = False
    fp.start(wait=False)
    try:
        code = fp.proc.wait(timeout=10)
    except Exception:
        pytest.fail(f"flagpole started with invalid config {bad}")
    assert code != 0
    key = next(iter(bad))
    assert key in fp.stderr_text(), f"error message does not name {key!r}:\n{fp.stderr_tail()}"


def test_bundled_example_environment(flagpole, tmp_path):
    example = json.loads((REPO / "examples" / "environment.json").read_text())
    fp = flagpole(workdir=tmp_path / "empty")
    fp.wait_ready(WAIT)
    assert ex.typed(fp.flags("example_client_key")) == ex.typed(ex.env_flags(example, client=True))
    assert ex.typed(fp.flags("ser.example_server_key")) == ex.typed(ex.env_flags(example, client=False))
    traits = {"email": "alice@example.com", "plan": "enterprise", "seats": 120, "app_version": "2.3.1"}
    got = fp.identity("example_client_key", "alice", traits)["flags"]
    assert ex.typed(got) == ex.typed(ex.identity_flags(example, "alice", traits, client=True))
    r = fp.get("/api/v1/environment-document/", "ser.example_server_key")
    assert r.status == 200 and r.json() == example
    assert fp.get("/api/v1/environment-document/", "example_client_key").status == 401


@pytest.mark.parametrize("what, document, path", [
    ("the right api_key and nothing else", {"api_key": "near_empty_client", "hello": 1}, "$.feature_states"),
    ("no project", {"api_key": "near_empty_client", "feature_states": []}, "$.project"),
    ("no segments", {"api_key": "near_empty_client", "feature_states": [], "project": {}}, "$.project.segments"),
])
def test_a_document_file_that_is_not_a_document_stops_the_start(flagpole, tmp_path, what, document, path):
    # Served, it would answer every request with no flags at all; refused, nothing starts.
    file = tmp_path / "near-empty.json"
    file.write_text(json.dumps(document))
    fp = flagpole(documents=[file], start=False)
    fp.expect_clean_exit = False
    fp.start(wait=False)
    try:
        code = fp.proc.wait(timeout=WAIT)
    except Exception:
        pytest.fail(f"flagpole started serving a document with {what}")
    assert code == 2, fp.stderr_tail()
    assert path in fp.stderr_text() and str(file) in fp.stderr_text(), fp.stderr_tail()
