"""Helpers for the observability tests (test_metrics.py, test_status_page.py): scraping and
parsing `/metrics`, the status page as JSON, key fingerprints as flagpole prints them, and an
open change stream."""

from __future__ import annotations

import re
import socket
import time
from typing import Iterator

from prometheus_client.parser import text_string_to_metric_families

from serve_harness import HOST, FlagpoleProcess, wait_until

# `abc…` + 8 hex digits (crates/server/src/logging.rs).
FINGERPRINT = re.compile(r"^.{1,3}…[0-9a-f]{8}$")
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """One scrape: samples by (name, labels)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.families = {f.name: f for f in text_string_to_metric_families(text)}
        self.samples = [s for f in self.families.values() for s in f.samples]

    def get(self, name: str, **labels: str) -> float | None:
        """The value of the one sample `name` whose labels include `labels` (None if none)."""
        found = [s.value for s in self.samples if s.name == name and labels.items() <= s.labels.items()]
        assert len(found) <= 1, f"{name}{labels} matches {len(found)} samples"
        return found[0] if found else None

    def value(self, name: str, **labels: str) -> float:
        """Like `get`, 0 when absent (a counter not yet registered)."""
        v = self.get(name, **labels)
        return 0.0 if v is None else v

    def label_values(self, name: str, label: str) -> set[str]:
        return {s.labels[label] for s in self.samples if s.name == name and label in s.labels}

    def series(self, name: str) -> list:
        return [s for s in self.samples if s.name == name]


def scrape(fp: FlagpoleProcess) -> Metrics:
    r = fp.get("/metrics")
    assert r.status == 200, r
    assert r.header("content-type") == METRICS_CONTENT_TYPE, r.headers
    return Metrics(r.body.decode())


def status_json(fp: FlagpoleProcess) -> dict:
    r = fp.get("/proxy/status", headers={"Accept": "application/json"})
    assert r.status == 200, r
    assert r.header("content-type") == "application/json", r.headers
    return r.json()


def printed_fingerprints(fp: FlagpoleProcess) -> list[str]:
    """The fingerprints flagpole printed at start (`environment <fp> from …`), in order."""
    found = re.findall(r"^environment (\S+) from ", fp.stderr_text(), re.M)
    assert found, fp.stderr_tail()
    return found


def wait_metric(fp: FlagpoleProcess, pred, timeout: float, message: str) -> Metrics:
    """Scrape until `pred(metrics)` holds; returns that scrape."""
    return wait_until(lambda: (lambda m: m if pred(m) else None)(scrape(fp)), timeout, message, interval=0.2)


class OpenStream:
    """A change stream held open on a raw socket (closed on exit)."""

    def __init__(self, port: int, path: str) -> None:
        self.sock = socket.create_connection((HOST, port), timeout=60)
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".encode())
        data = b""
        deadline = time.monotonic() + 60  # a hang, not a slow machine
        while b"\r\n\r\n" not in data and time.monotonic() < deadline:
            data += self.sock.recv(65536)
        self.head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")

    def __enter__(self) -> "OpenStream":
        return self

    def __exit__(self, *exc) -> None:
        self.sock.close()


def lines_with(text: str, needle: str) -> Iterator[str]:
    return (line for line in text.splitlines() if needle in line)
