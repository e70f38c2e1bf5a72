"""Helpers of the Python bindings suite: a fake upstream (a real HTTP server on 127.0.0.1 that
serves an environment document the way Flagpole and the Flagsmith API do: ETag, conditional
requests, Link pages; it can be told to fail) and documents whose flags are recognisable
all-or-nothing.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

class Upstream:
    """State of the fake upstream. ``document`` may be replaced at any time; ``mode`` is
    ``"ok"``, ``"500"``, ``"garbage"`` (200 with a body that is not JSON) or ``"alternate"``
    (each request serves the next of ``documents``, without validators)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.document: dict = {}
        self.documents: list[dict] = []
        self.pages: list[dict] = []  # extra pages (Link: rel="next"), identity_overrides only
        self.mode = "ok"
        self.served = 0
        self.requests: list[dict] = []  # {"path", "headers"}
        self.url = ""

    def set_document(self, doc: dict) -> None:
        with self.lock:
            self.document = doc

    def etag(self, body: bytes) -> str:
        return '"' + hashlib.sha256(body).hexdigest()[:16] + '"'


def _handler(state: Upstream) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, body: bytes = b"", headers: Optional[dict] = None) -> None:
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            with state.lock:
                state.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}})
                mode, doc, pages = state.mode, state.document, state.pages
                if mode == "alternate":
                    doc = state.documents[state.served % len(state.documents)]
                state.served += 1
            if not self.path.startswith("/api/v1/environment-document/"):
                return self._send(404, b'{"detail": "not found"}')
            if mode == "500":
                return self._send(500, b'{"detail": "boom"}')
            if mode == "garbage":
                return self._send(200, b"<html>not json", {"Content-Type": "text/html"})
            if "page=" in self.path:
                n = int(self.path.rsplit("page=", 1)[1])
                body = json.dumps(pages[n - 2]).encode()
                headers = {"Content-Type": "application/json"}
                if n - 1 < len(pages):
                    headers["Link"] = f'</api/v1/environment-document/?page={n + 1}>; rel="next"'
                return self._send(200, body, headers)
            body = json.dumps(doc).encode()
            headers = {"Content-Type": "application/json"}
            if pages:
                headers["Link"] = '</api/v1/environment-document/?page=2>; rel="next"'
            if mode != "alternate":
                etag = state.etag(body)
                headers["ETag"] = etag
                if self.headers.get("If-None-Match") == etag:
                    return self._send(304, b"", {"ETag": etag})
            return self._send(200, body, headers)

    return Handler



def serve() -> tuple[Upstream, ThreadingHTTPServer]:
    state = Upstream()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/api/v1/"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return state, server


def make_document(letter: str, n_features: int = 12, api_key: str = "client-key") -> dict:
    """A document whose flags are recognisable all-or-nothing: every feature is enabled with
    value ``letter`` when ``letter == "A"``, disabled otherwise, and one segment override per
    feature agrees (so identities see the same letter)."""
    enabled = letter == "A"
    states = [
        {
            "django_id": 100 + i,
            "feature": {"id": i + 1, "name": f"feature_{i}", "type": "STANDARD"},
            "enabled": enabled,
            "feature_state_value": letter,
            "multivariate_feature_state_values": [],
        }
        for i in range(n_features)
    ]
    segment = {
        "id": 7,
        "name": "everyone",
        "rules": [{"type": "ALL", "rules": [], "conditions": [
            {"operator": "IS_SET", "property_": "plan", "value": None}]}],
        "feature_states": [
            {**states[0], "django_id": 999, "feature_state_value": letter,
             "feature_segment": {"priority": 0}}
        ],
    }
    return {
        "api_key": api_key,
        "name": f"doc {letter}",
        "feature_states": states,
        "project": {"id": 1, "name": "p", "segments": [segment], "hide_disabled_flags": False,
                    "organisation": {"id": 1, "name": "o"}},
        "identity_overrides": [],
    }
