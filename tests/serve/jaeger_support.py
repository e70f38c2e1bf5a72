"""A real trace backend for the tracing tests: Jaeger (v2, built by scripts/test.sh into
.tools/bin from tests/serve/jaeger/go.mod) on free loopback ports, receiving OTLP over gRPC and
HTTP and answering its query API (`/api/traces/<trace id>`), and W3C trace context made by the
test acting as the client.

Jaeger stores what it receives before it answers the export (no batching in its pipeline), so
once a Flagpole process has exited (its spans flushed at the drain) everything it sent can be
read back: a span missing then was never sent. Its metrics pipeline prints what it receives
(the `debug` exporter), which is how the tests see OTLP metrics arrive.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from serve_harness import HOST, REPO, free_port, wait_until

VERSION = "v1.76.0"


def jaeger_binary() -> Path:
    return Path(os.environ.get("FLAGPOLE_JAEGER") or REPO / ".tools" / "bin" / "jaeger")


def require_jaeger() -> Path:
    path = jaeger_binary()
    if not path.is_file():
        pytest.skip(f"Jaeger {VERSION} is not built at {path} (scripts/test.sh builds it with Go)")
    return path


CONFIG = """
service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
    metrics:
      receivers: [otlp]
      exporters: [debug]
  telemetry:
    metrics:
      level: none
    traces:
      level: none
    logs:
      level: info
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: "{host}:{health}"
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: "{host}:{query}"
    grpc:
      endpoint: "{host}:{query_grpc}"
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: "{host}:{grpc}"
      http:
        endpoint: "{host}:{http}"
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
  debug:
    verbosity: detailed
"""


class Jaeger:
    """One Jaeger process; `start` again after `stop` reuses its ports (a collector back up)."""

    def __init__(self, workdir: Path) -> None:
        self.binary = require_jaeger()
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.grpc, self.http, self.query, self.query_grpc, self.health = (free_port() for _ in range(5))
        self.config_path = workdir / "jaeger.yaml"
        self.config_path.write_text(CONFIG.format(host=HOST, grpc=self.grpc, http=self.http, query=self.query,
                                                  query_grpc=self.query_grpc, health=self.health))
        self.log_path = workdir / "jaeger.log"
        self.proc: subprocess.Popen | None = None

    def endpoint(self, protocol: str) -> str:
        port = self.grpc if protocol == "grpc" else self.http
        return f"http://{HOST}:{port}"

    def start(self) -> "Jaeger":
        self._log = open(self.log_path, "ab")
        # Jaeger's own spans stay in (it would send them to localhost:4317).
        env = {**os.environ, "OTEL_TRACES_EXPORTER": "none", "OTEL_SDK_DISABLED": "true"}
        self.proc = subprocess.Popen([str(self.binary), "--config", f"file:{self.config_path}"],
                                     stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, env=env)

        def ready() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"jaeger exited with {self.proc.returncode}:\n{self.log()[-3000:]}")
            with urllib.request.urlopen(f"http://{HOST}:{self.health}/status", timeout=2) as r:
                return r.status == 200

        wait_until(ready, 60, f"jaeger never became healthy:\n{self.log()[-3000:]}", interval=0.2)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
            self._log.close()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def trace(self, trace_id: str) -> dict | None:
        """The trace as Jaeger's query API returns it, or None when it holds no span of it."""
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.query}/api/traces/{trace_id}", timeout=5) as r:
                data = json.loads(r.read())
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise
        traces = data.get("data") or []
        return traces[0] if traces else None

    def spans_of(self, service: str, operation: str | None = None) -> list["Span"]:
        """Every span Jaeger holds of `service` (of `operation` only, if given), across traces."""
        query = {"service": service, "limit": "1000", "lookback": "1h"}
        if operation:
            query["operation"] = operation
        url = f"http://{HOST}:{self.query}/api/traces?{urllib.parse.urlencode(query)}"
        with urllib.request.urlopen(url, timeout=10) as r:
            traces = json.loads(r.read()).get("data") or []
        spans = [Span.of(s, t) for t in traces for s in t.get("spans", [])]
        return [s for s in spans if s.service == service and (operation is None or s.name == operation)]

    def wait_span(self, trace_id: str, match, what: str, timeout: float = 60.0) -> "Span":
        """Waits for a span of `trace_id` that `match(span)` accepts."""
        def found() -> Span | None:
            trace = self.trace(trace_id)
            spans = [Span.of(s, trace) for s in (trace or {}).get("spans", [])]
            return next((s for s in spans if match(s)), None)
        return wait_until(found, timeout, f"jaeger never got {what} in trace {trace_id}", interval=0.2)


@dataclass
class Span:
    raw: dict
    service: str

    @staticmethod
    def of(raw: dict, trace: dict) -> "Span":
        process = trace.get("processes", {}).get(raw.get("processID"), {})
        return Span(raw, process.get("serviceName", ""))

    @property
    def name(self) -> str:
        return self.raw["operationName"]

    @property
    def span_id(self) -> str:
        return self.raw["spanID"]

    @property
    def trace_id(self) -> str:
        return self.raw["traceID"]

    @property
    def parent(self) -> str | None:
        refs = [r for r in self.raw.get("references", []) if r.get("refType") == "CHILD_OF"]
        return refs[0]["spanID"] if refs else None

    @property
    def tags(self) -> dict[str, Any]:
        return {t["key"]: t["value"] for t in self.raw.get("tags", [])}


@dataclass
class Caller:
    """The client's side of a trace: a span id inside a trace id, as `traceparent` carries it."""

    trace_id: str
    span_id: str
    sampled: bool = True

    @staticmethod
    def new(sampled: bool = True, trace_id: str | None = None) -> "Caller":
        return Caller(trace_id or secrets.token_hex(16), secrets.token_hex(8), sampled)

    @property
    def traceparent(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-{'01' if self.sampled else '00'}"

    def headers(self, **extra: str) -> dict[str, str]:
        return {"traceparent": self.traceparent, "tracestate": "vendor=test", "baggage": "team=flags", **extra}
