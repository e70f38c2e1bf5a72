"""`flagpole.Flagpole` following a real HTTP upstream (a Python http.server on 127.0.0.1): first
load, conditional requests (304 keeps the document), `Link` pages, failures that keep the last
good document (500, a body that is not JSON, a document that does not compile, no server at
all), the background refresh thread, and threads evaluating while documents are swapped seeing
only whole documents."""

from __future__ import annotations

import threading
import time

import pytest

import flagpole_python as flagpole
from pybind_support import make_document

KEY = "ser.test-key"


def _letters(flags: flagpole.Flags) -> set:
    return {(f.enabled, f.value) for f in flags.all_flags()}


def _wait_for(predicate, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_loads_then_refreshes_conditionally(upstream):
    upstream.set_document(make_document("A"))
    with flagpole.Flagpole(KEY, upstream.url, refresh_interval_seconds=0) as client:
        assert _letters(client.get_environment_flags()) == {(True, "A")}
        assert upstream.requests[0]["headers"]["x-environment-key"] == KEY
        assert upstream.requests[0]["path"] == "/api/v1/environment-document/"
        assert client.refresh() is False  # 304
        assert "if-none-match" in upstream.requests[-1]["headers"]
        upstream.set_document(make_document("B"))
        assert client.refresh() is True
        assert _letters(client.get_identity_flags("u", {"plan": "x"})) == {(False, "B")}
        assert client.environment.name == "doc B"
        assert client.last_error is None and client.last_success is not None


def test_an_unchanged_document_without_validators_is_recognised(upstream):
    # No ETag or Last-Modified: the same document again is not a new document.
    upstream.mode = "alternate"
    upstream.documents = [make_document("A")]
    with flagpole.Flagpole(KEY, upstream.url, refresh_interval_seconds=0) as client:
        assert client.refresh() is False
        assert "if-none-match" not in upstream.requests[-1]["headers"]
        assert _letters(client.get_environment_flags()) == {(True, "A")}
        upstream.documents = [make_document("B")]
        assert client.refresh() is True
        assert _letters(client.get_environment_flags()) == {(False, "B")}
        assert client.refresh() is False


def test_a_failing_upstream_keeps_the_last_good_document(upstream):
    upstream.set_document(make_document("A"))
    client = flagpole.Flagpole(KEY, upstream.url, refresh_interval_seconds=0)
    for mode, message in [("500", "500"), ("garbage", "invalid JSON")]:
        upstream.mode = mode
        with pytest.raises(flagpole.UpstreamError, match=message):
            client.refresh()
        assert message in client.last_error
        assert _letters(client.get_identity_flags("u")) == {(True, "A")}
    upstream.mode = "ok"
    upstream.set_document({"api_key": "k", "name": "broken", "feature_states": "nope"})
    with pytest.raises(flagpole.UpstreamError, match="invalid environment document"):
        client.refresh()
    assert _letters(client.get_environment_flags()) == {(True, "A")}
    assert client.refresh_counts == (4, 3)
    upstream.set_document(make_document("B"))
    assert client.refresh() is True and client.last_error is None
    assert _letters(client.get_environment_flags()) == {(False, "B")}
    client.close()


def test_unreachable_upstream(upstream):
    # Nothing listens on the discard port: the first load fails.
    dead = "http://127.0.0.1:9/api/v1/"
    with pytest.raises(flagpole.UpstreamError, match="cannot load the environment document"):
        flagpole.Flagpole(KEY, dead, refresh_interval_seconds=0, request_timeout_seconds=2)
    # With a fallback environment, the client serves it and keeps trying.
    fallback = flagpole.Environment.from_dict(make_document("B"))
    upstream.mode = "500"
    client = flagpole.Flagpole(KEY, upstream.url, environment=fallback, refresh_interval_seconds=0)
    assert "500" in client.last_error
    assert _letters(client.get_environment_flags()) == {(False, "B")}
    upstream.mode = "ok"
    upstream.set_document(make_document("A"))
    assert client.refresh() is True
    assert _letters(client.get_environment_flags()) == {(True, "A")}


def test_link_pages_are_merged(upstream):
    doc = make_document("A")
    override = lambda ident, value: {  # noqa: E731
        "identifier": ident, "identity_uuid": ident, "environment_api_key": "client-key",
        "identity_features": [{"django_id": None, "featurestate_uuid": f"uuid-{ident}",
                               "feature": {"id": 1, "name": "feature_0", "type": "STANDARD"},
                               "enabled": True, "feature_state_value": value,
                               "multivariate_feature_state_values": []}]}
    doc["identity_overrides"] = [override("first", "page 1")]
    upstream.set_document(doc)
    upstream.pages = [{"identity_overrides": [override("second", "page 2")]},
                      {"identity_overrides": [override("third", "page 3")]}]
    client = flagpole.Flagpole(KEY, upstream.url, refresh_interval_seconds=0)
    for ident, value in [("first", "page 1"), ("second", "page 2"), ("third", "page 3"), ("x", "A")]:
        assert client.get_identity_flags(ident).get_feature_value("feature_0") == value
    assert [r["path"] for r in upstream.requests][-2:] == [
        "/api/v1/environment-document/?page=2", "/api/v1/environment-document/?page=3"]


def test_background_refresh_picks_up_new_documents(upstream):
    upstream.set_document(make_document("A"))
    with flagpole.Flagpole(KEY, upstream.url, refresh_interval_seconds=0.02) as client:
        upstream.set_document(make_document("B"))
        _wait_for(lambda: _letters(client.get_environment_flags()) == {(False, "B")})
        upstream.mode = "500"
        _wait_for(lambda: client.last_error is not None)
        assert _letters(client.get_environment_flags()) == {(False, "B")}
    served = upstream.served
    time.sleep(0.1)
    assert upstream.served == served, "close() stops the refresh thread"


# Driven by counts, not by time: the property is that every evaluation sees one whole document,
# whatever the machine's speed. The run lasts until this many refreshes have happened and every
# thread has seen both documents; the deadline only stops a hang.
REFRESHES = 50
DEADLINE_SECONDS = 120


def test_threads_evaluating_during_refreshes_see_whole_documents(upstream):
    upstream.documents = [make_document("A", 40), make_document("B", 40)]
    upstream.mode = "alternate"
    client = flagpole.Flagpole(KEY, upstream.url, refresh_interval_seconds=0.001)
    seen = {"A": 0, "B": 0}
    per_thread = [{"A": 0, "B": 0} for _ in range(4)]
    torn: list = []
    lock = threading.Lock()
    stop = threading.Event()

    def hammer(n: int) -> None:
        i = 0
        while not stop.is_set():
            i += 1
            flags = (client.get_identity_flags(f"user-{n}-{i}", {"plan": "x"}) if i % 2
                     else client.get_environment_flags())
            letters = _letters(flags)
            with lock:
                if letters == {(True, "A")}:
                    seen["A"] += 1
                    per_thread[n]["A"] += 1
                elif letters == {(False, "B")}:
                    seen["B"] += 1
                    per_thread[n]["B"] += 1
                else:
                    torn.append(letters)

    def done() -> bool:
        with lock:
            every_thread_saw_both = all(c["A"] and c["B"] for c in per_thread)
        return client.refresh_counts[0] >= REFRESHES and every_thread_saw_both

    threads = [threading.Thread(target=hammer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + DEADLINE_SECONDS
    try:
        # Refreshes also race with explicit ones from this thread.
        while not done() and not torn and time.monotonic() < deadline:
            try:
                client.refresh()
            except flagpole.UpstreamError:
                pass
    finally:
        stop.set()
        for t in threads:
            t.join()
        client.close()
    assert not torn, f"torn results: {torn[:3]}"
    assert done(), (f"after {DEADLINE_SECONDS} s: {client.refresh_counts[0]} refreshes of "
                    f"{REFRESHES}, per thread {per_thread}")
