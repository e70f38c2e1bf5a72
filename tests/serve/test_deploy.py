"""Deployment (issue "operations"): what an orchestrator relies on.

- `flagpole health`, the probe the Docker image's HEALTHCHECK runs: exit 0 when the proxy can
  serve (`/proxy/health/serving`; `--strict`: the Edge Proxy's readiness) answers 200, 1 when it
  does not, when nothing listens, or when nothing answers in time.
- Replicas behind one load balancer: two processes on the same document answer every endpoint
  with the same bytes and the same ETag, before and after the same edit, with and without gzip
  (so a client's conditional request may land on either replica).
- SIGTERM under load, as a rolling update sends it (`deploy/README.md`): requests already received
  finish with complete answers, idle keep-alive connections are closed at once, new connections
  are refused, the process exits 0 without running into the shutdown timeout.

Nothing here is timed: "at once" is shown by order (an idle connection is closed while a request
is still being answered, so before the drain could have ended), "without waiting for the
timeout" by the absence of the line the process logs when it reaches it.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from documents import OVERRIDDEN_USER, make_document
from serve_harness import (
    CONFIG_ENV_KEYS,
    HOST,
    binary_path,
    free_port,
    local_config,
    standard_envs,
    wait_until,
    write_atomic,
    write_documents,
)


# --------------------------------------------------------------------------------------------
# flagpole health
# --------------------------------------------------------------------------------------------


WAIT = 60  # seconds: the deadline of every wait for an event (a hang, not a slow machine)
# A probe timeout far longer than an answer takes, so that waiting for it would show.
PROBE_TIMEOUT = 30


def health_env(env: dict | None = None) -> dict:
    child_env = {k: v for k, v in os.environ.items() if k.lower() not in CONFIG_ENV_KEYS}
    child_env.update(env or {})
    return child_env


def health(*args: str, env: dict | None = None, cwd: Path | None = None) -> tuple[int, str]:
    """Runs `flagpole health ARGS`; returns (exit code, stdout + stderr)."""
    p = subprocess.run([str(binary_path()), "health", *args], capture_output=True, text=True,
                       env=health_env(env), cwd=cwd, timeout=PROBE_TIMEOUT * 2)
    return p.returncode, (p.stdout + p.stderr).strip()


def _local_flagpole(start, tmp_path, **config_extra):
    envs = standard_envs()[:1]
    paths = write_documents(tmp_path / "docs", envs)
    fp = start(local_config(paths, envs, **config_extra))
    fp.wait_ready(WAIT)
    return fp, envs[0], paths[0]


def test_health_ready_exits_0(flagpole, tmp_path):
    fp, _, _ = _local_flagpole(flagpole, tmp_path)
    for url in (fp.base_url, fp.base_url + "/", f"{HOST}:{fp.port}",
                fp.base_url + "/proxy/health/readiness", fp.base_url + "/proxy/health/liveness"):
        code, out = health("--url", url)
        assert code == 0, (url, out)
        assert out.startswith("ready: 200") and len(out.splitlines()) == 1, out
    # Without --url: the port `serve` would use, from $SERVER, $CONFIG_PATH or ./config.json.
    code, out = health(env={"SERVER": json.dumps({"port": fp.port})}, cwd=tmp_path)
    assert code == 0 and f":{fp.port}/proxy/health/serving" in out, out
    code, out = health("--strict", env={"SERVER": json.dumps({"port": fp.port})}, cwd=tmp_path)
    assert code == 0 and f":{fp.port}/proxy/health/readiness" in out, out
    conf = tmp_path / "probe"
    conf.mkdir()
    (conf / "config.json").write_text(json.dumps({"server": {"host": "0.0.0.0", "port": fp.port}}))
    code, out = health(cwd=conf)
    assert code == 0 and f"127.0.0.1:{fp.port}" in out, out
    code, out = health(env={"CONFIG_PATH": str(conf / "config.json")}, cwd=tmp_path)
    assert code == 0, out


def test_health_not_ready_exits_1(flagpole, tmp_path):
    # An environment whose upstream is down: live, never ready.
    envs = standard_envs()[:1]
    fp = flagpole({"environment_key_pairs": [envs[0].pair],
                   "api_url": f"http://{HOST}:{free_port()}/api/v1",
                   "api_poll_frequency_seconds": 1, "api_poll_timeout_seconds": 1})
    assert fp.readiness().status == 503
    # The answer decides, not a timeout: what it prints is the 503 and its reason.
    code, out = health("--url", fp.base_url, "--timeout", str(PROBE_TIMEOUT))
    assert code == 1, out
    assert out.startswith("not ready: 503") and "not updated" in out, out
    # A full URL is probed as given.
    assert health("--url", fp.base_url + "/proxy/health/liveness")[0] == 0


def test_health_fails_without_an_answer(tmp_path):
    # Nothing listening: the refusal decides (it says so), not the (long) timeout.
    code, out = health("--url", f"http://{HOST}:{free_port()}", "--timeout", str(PROBE_TIMEOUT))
    assert code == 1 and out.startswith("unhealthy:") and "refused" in out.lower(), out
    # Something accepts connections but never answers: bounded by the timeout.
    with socket.socket() as silent:
        silent.bind((HOST, 0))
        silent.listen(8)
        code, out = health("--url", f"http://{HOST}:{silent.getsockname()[1]}", "--timeout", "1")
    assert code == 1 and "timed out" in out, out
    # Not something a local probe speaks; and no config needed for any of this.
    code, out = health("--url", "https://127.0.0.1:8443", cwd=tmp_path)
    assert code == 1 and "http://" in out, out


def test_health_timeout_option_is_applied():
    """`--timeout` replaces the default (3 s), shown by order rather than by a clock: a probe with
    a long `--timeout` is still waiting when one with the default has given up on a server that
    does not answer; it then gets its answer."""
    with socket.socket() as slow, socket.socket() as silent:
        for server in (slow, silent):
            server.bind((HOST, 0))
            server.listen(8)
        patient = subprocess.Popen([str(binary_path()), "health", "--url",
                                    f"http://{HOST}:{slow.getsockname()[1]}", "--timeout", str(PROBE_TIMEOUT * 4)],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=health_env())
        try:
            slow.settimeout(WAIT)
            conn, _ = slow.accept()  # the patient probe has connected (and started its clock)
            with conn:
                code, out = health("--url", f"http://{HOST}:{silent.getsockname()[1]}")
                assert code == 1 and "timed out" in out, out
                assert patient.poll() is None, f"--timeout was not applied: {patient.communicate()[0]}"
                conn.settimeout(WAIT)
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = conn.recv(4096)
                    assert chunk, "the probe closed its connection"
                    head += chunk
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
            out, _ = patient.communicate(timeout=WAIT)
        finally:
            if patient.poll() is None:
                patient.kill()
                patient.wait()
    assert patient.returncode == 0 and out.startswith("ready: 200"), out


# --------------------------------------------------------------------------------------------
# Replicas answer identically
# --------------------------------------------------------------------------------------------


def _requests(envs) -> list[tuple[str, str, str, dict, object]]:
    """(label, method, path, headers, JSON body) over every endpoint a client may call."""
    out = []
    traits = [{"trait_key": "plan", "trait_value": "pro"}, {"trait_key": "age", "trait_value": 42},
              {"trait_key": "country", "trait_value": "DE"}]
    for e in envs:
        for kind, key in (("client", e.client_key), ("server", e.server_key)):
            k = {"X-Environment-Key": key}
            tag = f"{e.client_key}/{kind}"
            out += [
                (f"{tag} flags", "GET", "/api/v1/flags/", k, None),
                (f"{tag} flags?feature", "GET", "/api/v1/flags/?feature=long_text", k, None),
                (f"{tag} identity GET", "GET", "/api/v1/identities/?identifier=alice", k, None),
                (f"{tag} identity POST", "POST", "/api/v1/identities/", k,
                 {"identifier": "bob", "traits": traits}),
                (f"{tag} identity override", "POST", "/api/v1/identities/", k,
                 {"identifier": OVERRIDDEN_USER, "traits": []}),
                (f"{tag} ofrep bulk", "POST", "/ofrep/v1/evaluate/flags", {"X-API-Key": key},
                 {"context": {"targetingKey": "carol", "plan": "pro", "age": 42}}),
                (f"{tag} ofrep bulk no identity", "POST", "/ofrep/v1/evaluate/flags", {"X-API-Key": key},
                 {"context": {}}),
                (f"{tag} ofrep single", "POST", "/ofrep/v1/evaluate/flags/mv_feature", {"X-API-Key": key},
                 {"context": {"targetingKey": "carol"}}),
            ]
        out.append((f"{e.client_key} environment-document", "GET", "/api/v1/environment-document/",
                    {"X-Environment-Key": e.server_key}, None))
    return out


def _answers(fp, requests, encoding: str) -> dict[str, tuple[int, list, bytes]]:
    out = {}
    for label, method, path, headers, body in requests:
        r = fp.request(method, path, headers={**headers, "Accept-Encoding": encoding}, body=body)
        assert r.status == 200, (label, r)
        # Everything but the clock must match.
        hdrs = sorted((k.lower(), v) for k, v in r.headers if k.lower() != "date")
        out[label] = (r.status, hdrs, r.body)
    return out


def _compare(a: dict, b: dict, what: str) -> None:
    problems = [f"{label}: {a[label][:2]} {a[label][2][:120]!r}\n  vs {b[label][:2]} {b[label][2][:120]!r}"
                for label in a if a[label] != b[label]]
    assert not problems, f"{what}:\n" + "\n".join(problems)


def _etag(answer) -> str | None:
    return dict(answer[1]).get("etag")


def test_replicas_answer_identically(flagpole, tmp_path):
    envs = standard_envs()
    paths = write_documents(tmp_path / "docs", envs)  # one file, watched by both replicas
    config = local_config(paths, envs, ofrep={"sse": {"secret": "shared-by-every-replica"}})
    a = flagpole(config, workdir=tmp_path / "a")
    b = flagpole(config, workdir=tmp_path / "b")
    a.wait_ready(WAIT)
    b.wait_ready(WAIT)
    requests = _requests(envs)
    before = {}
    for enc in ("identity", "gzip"):
        before[enc] = _answers(a, requests, enc)
        _compare(before[enc], _answers(b, requests, enc), f"replicas disagree (Accept-Encoding: {enc})")
    ident = before["identity"]
    for label in ident:
        if "flags" in label or "ofrep" in label or "environment-document" in label:
            assert _etag(ident[label]), f"{label}: no ETag"
    # gzip really was used where it applies, and decodes to the identity bytes.
    zipped = [label for label, ans in before["gzip"].items() if dict(ans[1]).get("content-encoding") == "gzip"]
    assert any("environment-document" in z for z in zipped) and any("identity" in z for z in zipped), zipped
    for label in zipped:
        assert gzip.decompress(before["gzip"][label][2]) == ident[label][2], label

    # The same edit reaches both replicas: the same new answers, new ETags.
    old = _etag(ident[f"{envs[0].client_key}/client flags"])
    doc = make_document(envs[0].client_key, name="Env A", env_id=1001, revision=1)
    write_atomic(paths[0], json.dumps(doc, indent=1))

    def reloaded(fp):
        r = fp.get("/api/v1/flags/", envs[0].client_key, headers={"Accept-Encoding": "identity"})
        return r.status == 200 and r.header("etag") != old

    wait_until(lambda: reloaded(a) and reloaded(b), WAIT, "both replicas reload the edited document")
    for enc in ("identity", "gzip"):
        after = _answers(a, requests, enc)
        _compare(after, _answers(b, requests, enc), f"replicas disagree after the edit ({enc})")
        changed = [label for label in after if after[label] != before[enc][label]]
        assert f"{envs[0].client_key}/server ofrep bulk" in changed, changed
        assert not any(label.startswith(envs[1].client_key) for label in changed), changed


# --------------------------------------------------------------------------------------------
# SIGTERM under load
# --------------------------------------------------------------------------------------------

# Far longer than a shutdown here takes; reaching it is logged ("shutdown timeout reached").
SHUTDOWN_TIMEOUT = 30
TIMEOUT_REACHED = "shutdown timeout reached"
WORKERS = 16
LOAD_BEFORE_SIGNAL = 200  # requests answered before SIGTERM (counted, not timed)
# What graceful shutdown promises a keep-alive client: a request the server has read is answered
# in full; a connection with no request being read is idle and is closed at once, so a request
# sent just before the signal may still sit unread in the socket and be lost with the connection
# (zero response bytes: RFC 9112 §9.6's race, which clients retry): one per connection at most.


class Closed(Exception):
    """The connection ended; `received` response bytes had arrived."""

    def __init__(self, received: int, why: str):
        super().__init__(f"{why} after {received} response byte(s)")
        self.received = received


def read_response(sock: socket.socket) -> tuple[int, dict, bytes, bytes]:
    """One HTTP/1.1 response (Content-Length or chunked): (status, headers, body, raw bytes)."""
    raw = bytearray()

    def more() -> None:
        nonlocal raw
        try:
            chunk = sock.recv(65536)
        except OSError as e:  # reset, timeout
            raise Closed(len(raw), type(e).__name__) from None
        if not chunk:
            raise Closed(len(raw), "EOF")
        raw += chunk

    while b"\r\n\r\n" not in raw:
        more()
    head = bytes(raw[: raw.index(b"\r\n\r\n")])
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:])}
    start = len(head) + 4
    if "content-length" in headers:
        end = start + int(headers["content-length"])
        while len(raw) < end:
            more()
        return status, headers, bytes(raw[start:end]), bytes(raw)
    assert headers.get("transfer-encoding") == "chunked", headers
    body, pos = b"", start
    while True:
        while raw.find(b"\r\n", pos) < 0:
            more()
        size_end = raw.index(b"\r\n", pos)
        size = int(raw[pos:size_end].split(b";")[0], 16)
        while len(raw) < size_end + 2 + size + 2:
            more()
        body += raw[size_end + 2:size_end + 2 + size]
        pos = size_end + 2 + size + 2
        if size == 0:
            return status, headers, body, bytes(raw)


def http_bytes(method: str, path: str, key: str, body: bytes | None = None) -> bytes:
    """A keep-alive request, uncompressed answer."""
    head = (f"{method} {path} HTTP/1.1\r\nHost: {HOST}\r\nX-Environment-Key: {key}\r\n"
            f"Accept-Encoding: identity\r\n")
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return (head + "\r\n").encode() + (body or b"")


@dataclass
class Outcome:
    worker: int
    n_on_conn: int  # 0 = first request on its connection
    sent_at: float  # when the request's last byte was handed to the kernel (for order only)
    connecting_at: float  # when its connection was asked for (for order only)
    status: int | None = None
    ok: bool = False  # a complete 200 with exactly the expected body
    received: int = 0  # response bytes, when the connection ended early
    error: str = ""


@dataclass
class Load:
    outcomes: list[Outcome] = field(default_factory=list)
    refused_after: list[float] = field(default_factory=list)  # new connections refused (noted after)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, o: Outcome) -> None:
        with self.lock:
            self.outcomes.append(o)

    def answered(self) -> int:
        with self.lock:
            return sum(o.ok for o in self.outcomes)


def _worker(i: int, port: int, requests: list[tuple[bytes, bytes]], load: Load, stop: threading.Event) -> None:
    sock, n, connecting_at = None, 0, 0.0
    k = i
    while not stop.is_set():
        if sock is None:
            connecting_at = time.monotonic()
            try:
                sock = socket.create_connection((HOST, port), timeout=WAIT)
            except ConnectionRefusedError:
                load.refused_after.append(time.monotonic())
                return
            n = 0
        request, expected = requests[k % len(requests)]
        k += 1
        o = Outcome(i, n, 0.0, connecting_at)
        n += 1
        try:
            sock.sendall(request)
            o.sent_at = time.monotonic()
            status, headers, body, _ = read_response(sock)
            o.status, o.ok = status, status == 200 and body == expected
            if headers.get("connection", "").lower() == "close":
                sock.close()
                sock = None
        except Closed as e:
            o.sent_at = o.sent_at or time.monotonic()
            o.received, o.error = e.received, str(e)
            sock.close()
            sock = None
        except OSError as e:  # sending into a connection the server already closed
            o.sent_at = time.monotonic()
            o.error = f"send: {type(e).__name__}"
            sock.close()
            sock = None
        load.add(o)
    if sock is not None:
        sock.close()


def test_sigterm_under_load(flagpole, tmp_path):
    fp, env, _ = _local_flagpole(flagpole, tmp_path, flagpole={"shutdown_timeout_seconds": SHUTDOWN_TIMEOUT,
                                                               "limits": {"max_body_bytes": 16 << 20}})
    key = env.client_key

    # Expected bodies, taken before the load.
    flags_req = http_bytes("GET", "/api/v1/flags/", key)
    requests = [(flags_req, fp.get("/api/v1/flags/", key, headers={"Accept-Encoding": "identity"}).body)]
    for u in range(4):
        body = json.dumps({"identifier": f"load-user-{u}",
                           "traits": [{"trait_key": "plan", "trait_value": "pro"},
                                      {"trait_key": "age", "trait_value": 20 + u}]}).encode()
        want = fp.post("/api/v1/identities/", json.loads(body), key, headers={"Accept-Encoding": "identity"})
        requests.append((http_bytes("POST", "/api/v1/identities/", key, body), want.body))
    assert all(want for _, want in requests)

    # Probes set up before the signal, one per state a connection can be in:
    # - in flight: head and part of the body received; the rest comes after the signal.
    body = requests[1][0].split(b"\r\n\r\n", 1)[1]
    in_flight = socket.create_connection((HOST, fp.port), timeout=10)
    in_flight.sendall(requests[1][0][: -len(body) + 5])
    # - a long answer still being written: larger than what the kernel buffers between the two
    #   ends (4 MiB sender buffer at most, a 4 KiB receive buffer), read only after the signal.
    big_traits = [{"trait_key": f"t{j:04d}", "trait_value": "x" * 1000} for j in range(8000)]
    big_body = json.dumps({"identifier": "big", "traits": big_traits}).encode()
    big_want = fp.post("/api/v1/identities/", json.loads(big_body), key,
                       headers={"Accept-Encoding": "identity"}).body
    assert len(big_want) > 8_000_000
    slow_reader = socket.socket()
    slow_reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow_reader.settimeout(10)
    slow_reader.connect((HOST, fp.port))
    slow_reader.sendall(http_bytes("POST", "/api/v1/identities/", key, big_body))
    # - idle keep-alive: one request answered, then nothing.
    idle = socket.create_connection((HOST, fp.port), timeout=10)
    idle.sendall(flags_req)
    assert read_response(idle)[0] == 200

    load = Load()
    stop = threading.Event()
    threads = [threading.Thread(target=_worker, args=(i, fp.port, requests, load, stop), daemon=True)
               for i in range(WORKERS)]
    for t in threads:
        t.start()
    wait_until(lambda: load.answered() >= LOAD_BEFORE_SIGNAL, WAIT,
               f"{LOAD_BEFORE_SIGNAL} requests answered before the signal")
    assert fp.running()
    signalled_at = time.monotonic()
    fp.send_signal(signal.SIGTERM)
    try:
        # Idle keep-alive connections are closed at once: while the in-flight request below is
        # still waiting for the rest of its body, so before the drain could end.
        idle.settimeout(WAIT)
        try:
            closed = idle.recv(1) == b""
        except ConnectionResetError:
            closed = True
        assert closed, "the idle connection got data after SIGTERM"
        # New connections: refused, or (if one slips in before the listener closes) never ready.
        try:
            r = fp.get("/proxy/health/readiness", timeout=2)
            assert r.status == 503, f"readiness after SIGTERM: {r}"
        except OSError:
            pass

        # The in-flight request finishes, in full.
        in_flight.sendall(body[5:])
        status, headers, got, _ = read_response(in_flight)
        assert (status, got) == (200, requests[1][1]), (status, got[:200])
        # The long answer is not cut (and, unless this kernel buffers 8 MB per socket, keeps the
        # process up until it is read).
        status, headers, got, _ = read_response(slow_reader)
        assert status == 200 and got == big_want, (status, len(got), len(big_want), headers)
    finally:
        for s in (in_flight, slow_reader, idle):
            s.close()
    # The workers go on until the closed listener refuses them (each stops at its first refusal).
    for t in threads:
        t.join(timeout=WAIT)
    stop.set()
    assert not any(t.is_alive() for t in threads), "workers never refused after SIGTERM"
    code = fp.proc.wait(timeout=SHUTDOWN_TIMEOUT + 30)
    assert code == 0, f"exit code {code}; stderr:\n{fp.stderr_tail()}"
    assert TIMEOUT_REACHED not in fp.stderr_text(), fp.stderr_tail()

    outcomes = load.outcomes
    before = [o for o in outcomes if o.sent_at < signalled_at]
    assert len(before) >= LOAD_BEFORE_SIGNAL, f"too little load to mean anything: {len(before)} requests"
    problems = []
    for o in outcomes:
        when = (f"worker {o.worker} request #{o.n_on_conn} sent "
                f"{'before' if o.sent_at < signalled_at else 'after'} SIGTERM")
        if "Timeout" in o.error:
            problems.append(f"{when}: no answer and no close within {WAIT} s")
        elif o.status is not None and not o.ok:
            problems.append(f"{when}: wrong answer (status {o.status})")
        elif o.status is None and o.received:
            problems.append(f"{when}: truncated answer ({o.error})")
    # A connection loses at most the one request the server had not read when it closed it.
    lost = [o for o in outcomes if o.status is None]
    lost_before = [o.worker for o in lost if o.sent_at < signalled_at]
    if len(lost_before) != len(set(lost_before)):
        problems.append(f"a worker lost more than one request sent before SIGTERM: {sorted(lost_before)}")
    # After the signal the listener is gone: a connection asked for after one was refused (noted
    # after the refusal, so surely later) can never have been served.
    first_refusal = min(load.refused_after, default=float("inf"))
    late_answers = [o for o in outcomes if o.ok and o.connecting_at > first_refusal]
    if late_answers:
        problems.append(f"{len(late_answers)} connection(s) opened after the listener closed were served")
    served = sum(o.ok for o in outcomes)
    print(f"\n{len(outcomes)} requests, {served} answered; {len(lost)} lost unread with an idle connection "
          f"({len(lost_before)} of them sent before SIGTERM); {len(load.refused_after)} reconnects refused")
    assert not problems, "\n".join(problems[:20])


def test_sigterm_closes_new_idle_connections_at_once(flagpole, tmp_path):
    """Idle keep-alive connections close at once (`deploy/README.md`): a connection accepted
    before the signal that has not sent a request is idle too; it must not hold the shutdown up."""
    fp, _, _ = _local_flagpole(flagpole, tmp_path, flagpole={"shutdown_timeout_seconds": SHUTDOWN_TIMEOUT})
    silent = socket.create_connection((HOST, fp.port), timeout=10)
    try:
        # Accepted by now: a request on a second connection is answered after the first was
        # accepted (one listener, accepted in order).
        assert fp.get("/proxy/health/liveness").status == 200
        fp.send_signal(signal.SIGTERM)
        # Closed by the shutdown (not when the process exits after its timeout).
        silent.settimeout(WAIT)
        try:
            assert silent.recv(1) == b""
        except ConnectionResetError:
            pass
        code = fp.proc.wait(timeout=SHUTDOWN_TIMEOUT + 10)
    finally:
        silent.close()
    assert code == 0
    # Waiting for the idle connection would have run into the shutdown timeout, which is logged.
    assert TIMEOUT_REACHED not in fp.stderr_text(), fp.stderr_tail()
