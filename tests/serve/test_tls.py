"""HTTPS termination (`server.tls`): the API over TLS to curl (HTTP/2 and HTTP/1.1 by ALPN) and
to the Flagsmith Python SDK, change streams on the decrypted stream, the plain-HTTP port for
probes, a bad pair refused at start naming the file, and a certificate rotation under load with
no failed request (a broken pair in between keeps the one in use). Certificates are made here
(tls_certs.py); clients trust the test CA only.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import shutil
import ssl
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from flagsmith import Flagsmith

from serve_harness import (
    EVENT_TIMEOUT,
    HOST,
    FlagpoleProcess,
    Response,
    binary_path,
    free_port,
    http_request,
    local_config,
    standard_envs,
    wait_until,
    write_atomic,
    write_documents,
)
from tls_certs import Authority

ENVS = standard_envs()
ENV = ENVS[0]


class TlsFlagpole(FlagpoleProcess):
    """`flagpole serve` with `server.tls`: requests over HTTPS, trusting `ca_path` only."""

    def __init__(self, workdir: Path, ca_path: Path, config: dict, plain_port: int | None = None):
        super().__init__(workdir, config=config)
        self.ca_path = ca_path
        self.plain_port = plain_port

    @property
    def base_url(self) -> str:
        return f"https://{HOST}:{self.port}"

    def https(self, method: str, path: str, key: str | None = None, body: dict | None = None,
              conn: http.client.HTTPSConnection | None = None) -> tuple[int, bytes, str]:
        """One request (on `conn` if given, else a new connection): status, body and the
        SHA-256 of the certificate the server presented."""
        own = conn is None
        if own:
            ctx = ssl.create_default_context(cafile=str(self.ca_path))
            conn = http.client.HTTPSConnection(HOST, self.port, context=ctx, timeout=10)
        headers = {"X-Environment-Key": key} if key else {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            payload = resp.read()
            der = conn.sock.getpeercert(binary_form=True)
            return resp.status, payload, hashlib.sha256(der).hexdigest()
        finally:
            if own:
                conn.close()

    def request(self, method: str, path: str, key: str | None = None, headers: dict | None = None,
                body: Any = None, timeout: float = 10.0) -> Response:
        """The harness's requests (`get`, `wait_ready`, …) over HTTPS."""
        ctx = ssl.create_default_context(cafile=str(self.ca_path))
        conn = http.client.HTTPSConnection(HOST, self.port, context=ctx, timeout=timeout)
        hdrs = dict(headers or {})
        if key is not None:
            hdrs["X-Environment-Key"] = key
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        try:
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            return Response(resp.status, list(resp.getheaders()), resp.read(), resp.reason)
        finally:
            conn.close()

    def wait_live(self, timeout: float = EVENT_TIMEOUT) -> None:
        def live() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"flagpole exited with {self.proc.returncode}:\n{self.stderr_tail()}")
            return self.https("GET", "/proxy/health/liveness")[0] == 200

        wait_until(live, timeout, f"flagpole (https) on port {self.port} never became live\n{self.stderr_tail()}")


def tls_config(paths: list[Path], cert: Path, key: Path, **tls) -> dict:
    return local_config(paths, ENVS, server={"tls": {"cert_path": str(cert), "key_path": str(key), **tls}})


@pytest.fixture
def pki(tmp_path):
    """A CA, and its first server pair written where the config points."""
    ca = Authority(tmp_path)
    pair = ca.issue()
    cert, key = tmp_path / "server.crt", tmp_path / "server.key"
    cert.write_bytes(pair.cert_pem)
    key.write_bytes(pair.key_pem)
    return ca, pair, cert, key


@pytest.fixture
def tls_flagpole(tmp_path):
    started: list[TlsFlagpole] = []

    def make(config: dict, ca_path: Path, plain_port: int | None = None) -> TlsFlagpole:
        fp = TlsFlagpole(tmp_path / "fp", ca_path, config, plain_port)
        started.append(fp)
        return fp.start()

    yield make
    for fp in started:
        if fp.proc is not None:
            was_running = fp.running()
            code = fp.stop()
            assert not was_running or code == 0, f"exit {code} after SIGTERM:\n{fp.stderr_tail()}"


def curl(fp: TlsFlagpole, *args: str) -> tuple[str, bytes]:
    """curl trusting the test CA only: (HTTP version, body)."""
    out = subprocess.run(
        ["curl", "-sS", "--cacert", str(fp.ca_path), "-o", "-", "-w", "\n%{http_version}", *args],
        capture_output=True, timeout=30, check=True,
    ).stdout
    body, _, version = out.rpartition(b"\n")
    return version.decode(), body


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_http2_and_http1_over_tls_and_the_plain_port(tmp_path, pki, tls_flagpole):
    ca, pair, cert, key = pki
    paths = write_documents(tmp_path / "docs", ENVS)
    plain = free_port()
    fp = tls_flagpole(tls_config(paths, cert, key, plain_port=plain), ca.ca_path, plain)
    fp.wait_ready()
    url = f"{fp.base_url}/api/v1/flags/"
    header = f"X-Environment-Key: {ENV.client_key}"
    v2, flags2 = curl(fp, "--http2", "-H", header, url)
    v1, flags1 = curl(fp, "--http1.1", "-H", header, url)
    assert (v2, v1) == ("2", "1.1")
    assert json.loads(flags2) == json.loads(flags1) and json.loads(flags1), flags1
    status, body, seen = fp.https("POST", "/api/v1/identities/", ENV.client_key,
                                  {"identifier": "alice", "traits": []})
    assert status == 200 and "flags" in json.loads(body) and seen == pair.fingerprint
    # A change stream is served on the decrypted stream like on a socket: its first event.
    ctx = ssl.create_default_context(cafile=str(ca.ca_path))
    conn = http.client.HTTPSConnection(HOST, fp.port, context=ctx, timeout=10)
    try:
        conn.request("GET", f"/sse/environments/{ENV.client_key}/stream")
        resp = conn.getresponse()
        assert resp.status == 200 and resp.getheader("content-type", "").startswith("text/event-stream")
        seen_bytes = b""
        while b"environment_updated" not in seen_bytes:
            chunk = resp.read1(4096)
            assert chunk, seen_bytes
            seen_bytes += chunk
    finally:
        conn.close()
    # The plain port: probes, metrics and the status page; nothing an SDK reads.
    assert http_request(plain, "GET", "/proxy/health/readiness").status == 200
    assert http_request(plain, "GET", "/proxy/health/serving").status == 200
    assert http_request(plain, "GET", "/metrics").status == 200
    refused = http_request(plain, "GET", "/api/v1/flags/", {"X-Environment-Key": ENV.client_key})
    assert refused.status == 404 and "HTTPS" in json.loads(refused.body)["message"], refused
    # The container probe finds the plain port in the configuration by itself.
    probe = subprocess.run([str(binary_path()), "health"], capture_output=True, text=True, timeout=30,
                           env={**fp.child_env(), "CONFIG_PATH": str(fp.config_path)})
    assert probe.returncode == 0, probe.stdout + probe.stderr
    # Plain HTTP on the TLS port gets no answer.
    with pytest.raises((OSError, http.client.HTTPException)):
        http_request(fp.port, "GET", "/proxy/health/liveness", timeout=5)


def summary(flags) -> dict:
    return {f.feature_name: (f.enabled, f.value) for f in flags.all_flags()}


def test_python_sdk_over_https(tmp_path, pki, tls_flagpole, monkeypatch):
    ca, _, cert, key = pki
    paths = write_documents(tmp_path / "docs", ENVS)
    fp = tls_flagpole(tls_config(paths, cert, key), ca.ca_path)
    fp.wait_ready()
    # requests (under the SDK) trusts this bundle instead of the system's.
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca.ca_path))
    api_url = f"{fp.base_url}/api/v1/"
    remote = Flagsmith(environment_key=ENV.server_key, api_url=api_url)
    status, body, _ = fp.https("GET", "/api/v1/flags/", ENV.server_key)
    assert status == 200
    direct = {f["feature"]["name"]: (f["enabled"], f["feature_state_value"]) for f in json.loads(body)}
    flags = remote.get_environment_flags()
    assert direct and summary(flags) == direct
    # Local evaluation from the environment document, fetched over HTTPS with the server key,
    # agrees with the proxy's own identity answers.
    local = Flagsmith(environment_key=ENV.server_key, api_url=api_url, enable_local_evaluation=True,
                      environment_refresh_interval_seconds=3600)
    try:
        assert local._evaluation_context is not None, "the SDK could not load the document over HTTPS"
        for identifier in ("alice", "bob", "carol"):
            a = remote.get_identity_flags(identifier, {"plan": "pro"})
            b = local.get_identity_flags(identifier, {"plan": "pro"})
            assert summary(a) and summary(a) == summary(b)
    finally:
        local.environment_data_polling_manager_thread.stop()


def test_bad_pair_at_start_is_an_error_naming_the_file(tmp_path, pki):
    ca, _, cert, key = pki
    paths = write_documents(tmp_path / "docs", ENVS)
    other = ca.issue()
    wrong_key = tmp_path / "other.key"
    wrong_key.write_bytes(other.key_pem)
    garbage = tmp_path / "garbage.crt"
    garbage.write_text("not a certificate\n")
    cases = [
        (tls_config(paths, cert, wrong_key), ["server.tls.key_path", "other.key", "does not match"]),
        (tls_config(paths, garbage, key), ["server.tls.cert_path", "garbage.crt", "no certificate"]),
        (tls_config(paths, tmp_path / "absent.crt", key), ["server.tls.cert_path", "absent.crt"]),
    ]
    for config, words in cases:
        fp = FlagpoleProcess(tmp_path / "bad", config=config).start(wait=False)
        try:
            assert fp.proc.wait(timeout=30) != 0
        finally:
            fp.kill()
        err = fp.stderr_text()
        assert all(w in err for w in words), err
        # `flagpole check` refuses it the same way.
        fp.config_path.write_text(json.dumps(config))
        checked = subprocess.run([str(binary_path()), "check", "--config", str(fp.config_path)],
                                 capture_output=True, text=True, timeout=30, cwd=fp.workdir)
        assert checked.returncode == 2 and all(w in checked.stderr for w in words), checked.stderr


def test_rotation_under_load_fails_no_request(tmp_path, pki, tls_flagpole):
    ca, first, cert, key = pki
    paths = write_documents(tmp_path / "docs", ENVS)
    plain = free_port()
    fp = tls_flagpole(tls_config(paths, cert, key, reload_interval_seconds=0.2, plain_port=plain),
                      ca.ca_path, plain)
    fp.wait_ready()

    stop = threading.Event()
    lock = threading.Lock()
    seen: dict[str, int] = {}
    failures: list[str] = []

    def load(keep_alive: bool) -> None:
        ctx = ssl.create_default_context(cafile=str(ca.ca_path))
        conn = http.client.HTTPSConnection(HOST, fp.port, context=ctx, timeout=10) if keep_alive else None
        while not stop.is_set():
            try:
                path = "/api/v1/flags/" if keep_alive else "/api/v1/identities/?identifier=load"
                status, body, fingerprint = fp.https("GET", path, ENV.client_key, conn=conn)
                ok = status == 200 and json.loads(body)
            except Exception as exc:  # any failure at all is what this test looks for
                ok, fingerprint = False, repr(exc)
            with lock:
                if ok:
                    seen[fingerprint] = seen.get(fingerprint, 0) + 1
                else:
                    failures.append(fingerprint)
        if conn is not None:
            conn.close()

    threads = [threading.Thread(target=load, args=(i == 0,), daemon=True) for i in range(4)]
    for t in threads:
        t.start()

    def new_connections_see(fingerprint: str) -> bool:
        return fp.https("GET", "/proxy/health/liveness")[2] == fingerprint

    def served_since(fingerprint: str, n: int) -> int:
        with lock:
            return seen.get(fingerprint, 0) >= n

    try:
        wait_until(lambda: served_since(first.fingerprint, 50), EVENT_TIMEOUT, "no load served")
        # Rotation as a deploy tool does it: each file replaced whole, the certificate first (so
        # for a moment the pair does not match: the old one must stay in use).
        second = ca.issue()
        write_atomic(cert, second.cert_pem)
        write_atomic(key, second.key_pem)
        wait_until(lambda: new_connections_see(second.fingerprint), EVENT_TIMEOUT, "never rotated")
        wait_until(lambda: served_since(second.fingerprint, 50), EVENT_TIMEOUT, "no load after rotation")
        # A broken pair: logged, and the certificate in use stays.
        refusals = fp.stderr_text().count("TLS certificate not reloaded")
        write_atomic(key, ca.issue().key_pem)
        wait_until(lambda: fp.stderr_text().count("TLS certificate not reloaded") > refusals,
                   EVENT_TIMEOUT, "a mismatched pair was not reported")
        with lock:
            before = seen.get(second.fingerprint, 0)
        wait_until(lambda: served_since(second.fingerprint, before + 50), EVENT_TIMEOUT, "no load on the kept pair")
        assert new_connections_see(second.fingerprint)
        # Repaired: the next pair is taken.
        third = ca.issue()
        write_atomic(cert, third.cert_pem)
        write_atomic(key, third.key_pem)
        wait_until(lambda: new_connections_see(third.fingerprint), EVENT_TIMEOUT, "never rotated again")
        wait_until(lambda: served_since(third.fingerprint, 50), EVENT_TIMEOUT, "no load after the second rotation")
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
    assert failures == [], failures[:5]
    assert "TLS certificate reloaded" in fp.stderr_text()
    metrics = http_request(plain, "GET", "/metrics").body.decode()
    counts = {result: float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
              for result in ("success", "failure")
              if line.startswith(f'flagpole_tls_reloads_total{{result="{result}"}}')}
    assert counts.get("success", 0) >= 2 and counts.get("failure", 0) >= 1, metrics
