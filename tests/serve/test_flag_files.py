"""flagd flag files served by `flagpole serve --flags` and the `flags` list: OFREP answers as flagd
gives them (no key needed), hot reload, a broken file keeping the last good set, URL sources polled
with If-None-Match from a real local HTTP server, selectors, set tokens, readiness, metrics and
the OFREP change stream. Every test starts the real binary on loopback.
"""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import time
from pathlib import Path

import pytest

from loopback import EVENT_TIMEOUT, HOST, wait_until
from serve_harness import JsonHandler, ScriptedApi, binary_path, write_atomic

FLAG = "/ofrep/v1/evaluate/flags/"
BULK = "/ofrep/v1/evaluate/flags"

BASE = {
    "metadata": {"flagSetId": "shop", "team": "a", "version": 1},
    "flags": {
        "banner": {"state": "ENABLED", "variants": {"on": True, "off": False}, "defaultVariant": "on",
                   "metadata": {"version": 2, "owner": "web"}},
        "color": {"state": "ENABLED", "variants": {"red": "#c00", "blue": "#00c"}, "defaultVariant": "blue"},
        "limit": {"state": "ENABLED", "variants": {"low": 10, "high": 1.5}, "defaultVariant": "high"},
        "theme": {"state": "ENABLED", "variants": {"dark": {"bg": "#111"}}, "defaultVariant": "dark"},
        "legacy": {"state": "DISABLED", "variants": {"on": True}, "defaultVariant": "on"},
        "unset": {"state": "ENABLED", "variants": {"a": 1, "b": 2}, "defaultVariant": None},
    },
}


def write_json(path: Path, value) -> None:
    write_atomic(path, json.dumps(value))


def ofrep(fp, key: str | None = None, context: dict | None = None, headers: dict | None = None):
    path = FLAG + key if key else BULK
    return fp.post(path, {"context": context or {}}, headers=headers)


@pytest.fixture
def flags_file(tmp_path) -> Path:
    path = tmp_path / "flags.json"
    write_json(path, BASE)
    return path


def serve_flags(flagpole, *files: Path, config: dict | None = None):
    args = []
    for f in files:
        args += ["--flags", str(f)]
    fp = flagpole(config=config, extra_args=args)
    fp.wait_ready()
    return fp


def test_single_flags_answer_as_flagd_does(flagpole, flags_file):
    fp = serve_flags(flagpole, flags_file)
    r = ofrep(fp, "banner")
    assert r.status == 200, r
    # Flag metadata over set metadata, JSON types kept.
    assert r.json() == {"key": "banner", "value": True, "reason": "STATIC", "variant": "on",
                        "metadata": {"flagSetId": "shop", "team": "a", "version": 2, "owner": "web"}}
    assert r.header("ETag")
    limit = ofrep(fp, "limit").json()
    assert limit["value"] == 1.5 and isinstance(limit["value"], float)
    assert ofrep(fp, "theme").json()["value"] == {"bg": "#111"}
    # Disabled: no value, no variant, reason DISABLED (the caller's default applies).
    legacy = ofrep(fp, "legacy").json()
    assert legacy["reason"] == "DISABLED" and "value" not in legacy and "variant" not in legacy
    # No default variant: no value, reason DEFAULT.
    unset = ofrep(fp, "unset").json()
    assert unset["reason"] == "DEFAULT" and "value" not in unset and "variant" not in unset
    missing = ofrep(fp, "nope")
    assert missing.status == 404, missing
    assert missing.json()["errorCode"] == "FLAG_NOT_FOUND"
    assert missing.json()["key"] == "nope"


def test_bulk_answers_every_flag_with_etags(flagpole, flags_file):
    fp = serve_flags(flagpole, flags_file)
    r = ofrep(fp, context={"targetingKey": "alice"})
    assert r.status == 200, r
    body = r.json()
    assert [f["key"] for f in body["flags"]] == sorted(BASE["flags"])
    # The answer's own metadata is the selector the request named, as flagd answers it.
    assert body["metadata"] == {}
    assert all(f["metadata"]["flagSetId"] == "shop" for f in body["flags"]), body
    selected = fp.post(BULK, {"context": {}}, headers={"flagd-selector": "flagSetId=shop"})
    assert selected.json()["metadata"] == {"flagSetId": "shop"}, selected
    etag = r.header("ETag")
    again = fp.post(BULK, {"context": {"targetingKey": "alice"}}, headers={"If-None-Match": etag})
    assert again.status == 304, again
    other = fp.post(BULK, {"context": {"targetingKey": "bob"}}, headers={"If-None-Match": etag})
    assert other.status == 200 and other.header("ETag") != etag


def test_a_changed_file_is_served_and_a_broken_one_keeps_the_last_good(flagpole, flags_file):
    fp = serve_flags(flagpole, flags_file)
    etag = ofrep(fp).header("ETag")
    changed = json.loads(json.dumps(BASE))
    changed["flags"]["color"]["defaultVariant"] = "red"
    write_json(flags_file, changed)
    wait_until(lambda: ofrep(fp, "color").json().get("value") == "#c00", EVENT_TIMEOUT,
               "the edited flag file was never served")
    assert fp.post(BULK, {"context": {}}, headers={"If-None-Match": etag}).status == 200

    broken = json.loads(json.dumps(changed))
    broken["flags"]["color"]["state"] = "SOMETIMES"
    write_json(flags_file, broken)
    wait_until(lambda: "$.flags.color.state" in fp.stderr_text(), EVENT_TIMEOUT,
               "the refusal of the broken file was never logged with its JSON path")
    assert ofrep(fp, "color").json()["value"] == "#c00"
    assert str(flags_file) in [l for l in fp.stderr_text().splitlines() if "$.flags.color.state" in l][0]
    assert metric(fp, "flagpole_flag_sources_refused_loads_total") >= 1


def test_later_sources_win_and_selectors_pick(flagpole, tmp_path, flags_file):
    second = tmp_path / "second.json"
    write_json(second, {"metadata": {"flagSetId": "ads"}, "flags": {
        "color": {"state": "ENABLED", "variants": {"green": "#0a0"}, "defaultVariant": "green"},
        "slots": {"state": "ENABLED", "variants": {"n": 3}, "defaultVariant": "n"}}})
    fp = serve_flags(flagpole, flags_file, second)
    assert ofrep(fp, "color").json()["value"] == "#0a0"  # the later file wins
    shop = {"flagd-selector": "flagSetId=shop"}
    assert ofrep(fp, "color", headers=shop).json()["value"] == "#00c"
    assert ofrep(fp, "slots", headers=shop).status == 404
    keys = [f["key"] for f in ofrep(fp, headers={"flagd-selector": f"source={second}"}).json()["flags"]]
    assert keys == ["color", "slots"]
    bare = [f["key"] for f in ofrep(fp, headers={"flagd-selector": str(flags_file)}).json()["flags"]]
    assert bare == sorted(BASE["flags"])
    unknown = ofrep(fp, "color", headers={"flagd-selector": "flagSetId=nothing"})
    assert unknown.status == 404 and unknown.json()["errorCode"] == "FLAG_NOT_FOUND"


def test_set_tokens_guard_only_their_sets(flagpole, tmp_path, flags_file):
    guarded = tmp_path / "guarded.json"
    write_json(guarded, {"metadata": {"flagSetId": "secret"}, "flags": {
        "vault": {"state": "ENABLED", "variants": {"x": "y"}, "defaultVariant": "x"}}})
    config = {"flags": [{"uri": str(flags_file)},
                        {"uri": str(guarded), "name": "vault", "tokens": ["t0ken"]}]}
    fp = flagpole(config=config, extra_args=["--example"])
    fp.wait_ready()
    open_set = {"flagd-selector": "flagSetId=shop"}
    assert ofrep(fp, "banner", headers=open_set).status == 200
    vault = {"flagd-selector": "source=vault"}
    assert ofrep(fp, "vault", headers=vault).status == 401
    wrong = ofrep(fp, "vault", headers={**vault, "Authorization": "Bearer nope"})
    assert wrong.status == 403, wrong
    right = ofrep(fp, "vault", headers={**vault, "Authorization": "Bearer t0ken"})
    assert right.status == 200 and right.json()["value"] == "y"
    # A Flagsmith key still opens its environment.
    env = fp.post(FLAG + "new_checkout", {"context": {}}, headers={"X-API-Key": "example_client_key"})
    assert env.status == 200 and "flagsmithEnabled" in env.json()["metadata"]


class FlagServer(ScriptedApi):
    """A real HTTP server serving one flag file with an ETag, counting conditional requests."""

    def __init__(self, body: dict) -> None:
        super().__init__()
        self.body = json.dumps(body).encode()
        self.status = 200
        self.requests: list[dict[str, str]] = []
        api = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                with api.lock:
                    api.requests.append({k.lower(): v for k, v in self.headers.items()})
                    body, status = api.body, api.status
                if status != 200:
                    return self._send(status, b'{"error": "down"}')
                etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                if self.headers.get("If-None-Match") == etag:
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("ETag", etag)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.serve(Handler)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/flags.json"


@pytest.fixture
def flag_server():
    server = FlagServer(BASE)
    try:
        yield server
    finally:
        server.stop()


def test_url_sources_are_polled_with_if_none_match(flagpole, flag_server):
    config = {"flags": [{"uri": flag_server.url, "interval": 1, "authHeader": "Bearer fetch",
                         "headers": {"X-Tenant": "t1"}}]}
    fp = flagpole(config=config)
    fp.wait_ready()
    assert ofrep(fp, "color").json()["value"] == "#00c"
    wait_until(lambda: any("if-none-match" in r for r in list(flag_server.requests)), EVENT_TIMEOUT,
               "no conditional request was made")
    first = flag_server.requests[0]
    assert first["authorization"] == "Bearer fetch" and first["x-tenant"] == "t1"
    changed = json.loads(json.dumps(BASE))
    changed["flags"]["color"]["defaultVariant"] = "red"
    flag_server.set(body=json.dumps(changed).encode())
    wait_until(lambda: ofrep(fp, "color").json().get("value") == "#c00", EVENT_TIMEOUT,
               "the changed URL source was never served")
    # A broken answer keeps the last good flags.
    flag_server.set(body=b'{"flags": {"color": {"state": "ENABLED"}}}')
    wait_until(lambda: "$.flags.color.variants" in fp.stderr_text(), EVENT_TIMEOUT,
               "the broken answer's refusal was never logged")
    assert ofrep(fp, "color").json()["value"] == "#c00"


def test_url_sources_warm_start_from_the_snapshot_dir(flagpole, flag_server, tmp_path):
    config = {"flags": [{"uri": flag_server.url, "interval": 1}],
              "flagpole": {"snapshot_dir": str(tmp_path / "snapshots")}}
    first = flagpole(config=config, workdir=tmp_path / "first")
    first.wait_ready()
    assert ofrep(first, "color").json()["value"] == "#00c"
    assert first.stop() == 0
    flag_server.set(status=500)
    second = flagpole(config=config, workdir=tmp_path / "second")
    wait_until(lambda: second.get("/proxy/health/serving").status == 200, EVENT_TIMEOUT,
               "the warm-start copy was not served")
    assert ofrep(second, "color").json()["value"] == "#00c"
    assert "warm-start copy" in second.stderr_text()


def test_readiness_waits_for_flag_sources_and_staleness_fails_strict(flagpole, flag_server):
    flag_server.set(status=500)
    config = {"flags": [{"uri": flag_server.url, "interval": 1}], "api_poll_frequency_seconds": 1,
              "health_check": {"environment_update_grace_period_seconds": 1}}
    fp = flagpole(config=config)
    time.sleep(1.5)
    serving = fp.get("/proxy/health/serving")
    assert serving.status == 503 and "flag source" in serving.json()["reason"]
    assert ofrep(fp, "color").status == 503
    flag_server.set(status=200)
    fp.wait_ready()
    assert fp.get("/proxy/health/serving").status == 200
    flag_server.set(status=500)
    wait_until(lambda: fp.get("/proxy/health/readiness").status == 503, EVENT_TIMEOUT,
               "strict readiness never saw the stale flag source")
    assert fp.get("/proxy/health/serving").status == 200
    stale = ofrep(fp, "color").json()
    assert stale["reason"] == "STALE" and stale["value"] == "#00c"
    assert metric(fp, "flagpole_flag_sources_stale") == 1


def test_a_broken_file_stops_the_start_naming_file_and_path(tmp_path):
    broken = tmp_path / "broken.json"
    # No variants: flagd's reference refuses the file (a default variant naming no variant it
    # takes, failing each evaluation that falls back to it).
    write_json(broken, {"flags": {"x": {"state": "ENABLED", "variants": {}, "defaultVariant": "b"}}})
    for command in (["serve", "--port", "0", "--flags", str(broken)], ["check", "--flags", str(broken)]):
        proc = subprocess.run([str(binary_path()), *command], capture_output=True, text=True, timeout=30,
                              cwd=tmp_path)
        assert proc.returncode == 2, proc
        assert str(broken) in proc.stderr and "$.flags.x.variants" in proc.stderr, proc.stderr


def metric(fp, name: str) -> float:
    text = fp.get("/metrics").body.decode()
    values = [float(line.split()[-1]) for line in text.splitlines()
              if line.startswith(name + " ") or line.startswith(name + "{")]
    assert values, f"{name} not in /metrics"
    return sum(values)


def test_metrics_and_status_page_list_flag_sources(flagpole, flags_file):
    fp = serve_flags(flagpole, flags_file)
    assert metric(fp, "flagpole_flag_sources") == 1
    assert metric(fp, "flagpole_flag_sources_loaded") == 1
    assert metric(fp, "flagpole_flags") == len(BASE["flags"])
    assert metric(fp, "flagpole_flag_sources_last_update_seconds") > 1_600_000_000
    status = fp.get("/proxy/status", headers={"Accept": "application/json"})
    assert status.status == 200
    assert str(flags_file) in status.body.decode()


def read_event(sock: socket.socket, deadline: float) -> str:
    data = b""
    while time.time() < deadline:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
        if b"refetchEvaluation" in data:
            return data.decode()
    return data.decode()


def test_the_change_stream_follows_the_flag_set(flagpole, flags_file):
    fp = serve_flags(flagpole, flags_file)
    bulk = ofrep(fp, headers={"flagd-selector": "flagSetId=shop"}).json()
    uri = bulk["eventStreams"][0]["endpoint"]["requestUri"]
    assert "selector=flagSetId" in uri
    sock = socket.create_connection((HOST, fp.port), timeout=EVENT_TIMEOUT)
    try:
        sock.sendall(f"GET {uri} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".encode())
        head = sock.recv(4096).decode()
        assert " 200 " in head.splitlines()[0], head
        changed = json.loads(json.dumps(BASE))
        changed["flags"]["banner"]["defaultVariant"] = "off"
        write_json(flags_file, changed)
        text = read_event(sock, time.time() + EVENT_TIMEOUT)
        assert "refetchEvaluation" in text, text
    finally:
        sock.close()
