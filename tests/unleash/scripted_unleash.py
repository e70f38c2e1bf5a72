"""A scripted Unleash server for the edge-mode suites (a real HTTP server in the test, for what the
real Unleash server cannot be made to do on cue): `/api/client/features` per client token, with
an ETag and a 304 on a match, and the bulk metrics endpoint, recording what arrives and which
Flagpole instance asked (its `UNLEASH-INSTANCEID` header)."""

from __future__ import annotations

import json

import pytest

from conftest import TOGGLES
from serve_harness import JsonHandler, ScriptedApi

CLIENT = "*:development.edge-client-secret"
REFUSED = "*:production.edge-wrong-secret"
FRONTEND = "default:development.edge-frontend-secret"


class UnleashApi(ScriptedApi):
    """`/api/client/features` per token (with an ETag, 304 on a match) and the bulk metrics
    endpoint, recording what arrives; `mode` "ok", "down" (503) or "garbage" (a 200 that is not
    a features body)."""

    def __init__(self) -> None:
        super().__init__()
        self.features = {CLIENT: TOGGLES}
        self.mode = "ok"
        self.metrics_status = 202
        self.fetches: list[tuple[str, str | None]] = []
        self.askers: list[tuple[str, str]] = []  # (token, instance id) per fetch
        self.bulk: list[dict] = []
        api = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:  # noqa: N802
                token = self.headers.get("Authorization")
                with api.lock:
                    api.fetches.append((token, self.headers.get("If-None-Match")))
                    api.askers.append((token, self.headers.get("UNLEASH-INSTANCEID") or "?"))
                    mode, features = api.mode, api.features.get(token)
                if self.path != "/api/client/features":
                    return self._send(404, b"{}")
                if mode == "down":
                    return self._send(503, b"{}")
                if features is None:
                    return self._send(401, b'{"message":"invalid token"}')
                body = b"{not json" if mode == "garbage" else json.dumps(features).encode()
                etag = f'"{hash(body) & 0xffffffff:x}"'
                if self.headers.get("If-None-Match") == etag:
                    return self._send(304, b"")
                self.send_response(200)
                self.send_header("ETag", etag)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with api.lock:
                    status = api.metrics_status
                    if self.path == "/api/client/metrics/bulk" and status < 300:
                        api.bulk.append({"token": self.headers.get("Authorization"), **json.loads(body)})
                self._send(status, b"")

        self.serve(Handler)

    def fetch_count(self, token: str) -> int:
        with self.lock:
            return sum(1 for t, _ in self.fetches if t == token)

    def askers_since(self, token: str, since: int) -> list[str]:
        """The instances that fetched with `token` since fetch number `since` (one per fetch)."""
        with self.lock:
            return [who for t, who in self.askers[since:] if t == token]

    def evaluations(self, app: str) -> int:
        with self.lock:
            return sum(m["yes"] + m["no"] for b in self.bulk for m in b["metrics"] if m["appName"] == app)


@pytest.fixture
def api():
    a = UnleashApi()
    yield a
    a.stop()


def edge_args(api: UnleashApi, *extra: str, client=(CLIENT,)) -> list[str]:
    args = ["--unleash-upstream", f"http://127.0.0.1:{api.port}", "--unleash-refresh-interval", "0.3",
            "--unleash-metrics-interval", "0.5", "--unleash-frontend-token", FRONTEND]
    for t in client:
        args += ["--unleash-client-token", t]
    return args + list(extra)


def auth(token: str) -> dict:
    return {"Authorization": token}


def names(response) -> list[str]:
    return [f["name"] for f in response.json()["features"]]
