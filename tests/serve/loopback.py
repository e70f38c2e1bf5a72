"""What every part of the serve harness shares: the loopback address everything listens on, a
free port on it, and the one way to wait for an event (poll until true, fail after a timeout).

Its own module so that the scripted upstream (`scripted_upstream.py`) and the process wrapper
(`serve_harness.py`) can both use it without importing each other.
"""

from __future__ import annotations

import http.client
import socket
import time
from typing import Any, Callable

HOST = "127.0.0.1"
# How long a wait for an event (a process listening, a request arriving) may take before it counts
# as a hang. Generous: a busy machine makes things slower, and the waits end as soon as they can.
EVENT_TIMEOUT = 60.0


# Ports this process has handed out. The kernel may give the port it just released to the next
# bind, so two calls in a row (an HTTP and a gRPC port for one server) could return the same one.
_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A loopback port nothing listens on now and this process has not handed out before."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((HOST, 0))
            port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def wait_until(pred: Callable[[], Any], timeout: float, message: str, interval: float = 0.05) -> Any:
    """Poll `pred` until it returns a truthy value; fail with `message` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while True:
        try:
            value = pred()
            if value:
                return value
        except (OSError, http.client.HTTPException, ValueError) as exc:  # not up yet, etc.
            last_exc = exc
        if time.monotonic() >= deadline:
            extra = f" (last error: {last_exc!r})" if last_exc else ""
            raise AssertionError(f"timed out after {timeout}s: {message}{extra}")
        time.sleep(interval)


class OnLoopback:
    """Something serving HTTP on a loopback port (`port`): its URLs."""

    port: int

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/v1"
