"""When a document is a new revision (docs/many-environments.md: upstream polls): only when its
content changes. A real `flagpole serve` polls a scripted upstream on loopback:

- one that sends the same document in another byte layout on every fetch (indented, compact,
  members sorted or reversed; as one body or as three `Link` pages): the revision, the ETag and
  the content revision stay put, and the real-time stream announces nothing, however many
  fetches go by; a real change afterwards is one new revision and one announcement;
- one that changes the document between two page requests of one fetch (pages 1 and 2 of the
  old version, page 3 of the new): the pages are never merged into a document upstream never
  had; the fetch starts again from page 1 and the new version is the next revision, announced
  once, with no failure counted.

Every wait is for an event (fetches the upstream served, a revision, an announcement) with a
generous deadline that only stops a hang. A poll publishes before the next one starts, so once
the upstream has seen the first page of fetch n + 1, fetch n has been decided.
"""

from __future__ import annotations

import json
import socket
import threading
from urllib.parse import parse_qs, urlsplit

import pytest

from documents import make_document, override_features, paginate
from metrics_support import scrape, status_json
from serve_harness import DOC_PATH, Env, Upstream, upstream_config, wait_until

CLIENT = "revisions_client_key"
SERVER = "ser.revisions_server_key"
ENV = Env(CLIENT, SERVER)
WAIT = 60  # seconds: the deadline of every wait for an event (a hang, not a slow machine)
PAGE_USERS = [f"page-user-{i}" for i in range(1, 7)]  # 2 built-in overrides + 6: pages of 3, 3, 2
ANNOUNCEMENT = b"event: environment_updated"


def doc(rev: int) -> dict:
    extra = [(u, override_features(f"{u}-r{rev}")) for u in PAGE_USERS]
    return make_document(CLIENT, name="Revisions Env", env_id=5301, revision=rev, extra_identity_overrides=extra)


def reversed_members(value):
    if isinstance(value, dict):
        return {k: reversed_members(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [reversed_members(v) for v in value]
    return value


# The same JSON value, written four ways.
LAYOUTS = [
    lambda d: json.dumps(d).encode(),
    lambda d: json.dumps(d, indent=2).encode(),
    lambda d: json.dumps(d, separators=(",", ":"), sort_keys=True).encode(),
    lambda d: json.dumps(reversed_members(d), indent="\t").encode(),
]


def page_of(path: str) -> int:
    return int(parse_qs(urlsplit(path).query).get("page", ["1"])[0])


class LayoutUpstream(Upstream):
    """Sends its document (as `n_pages` pages) in the next layout of LAYOUTS on every fetch."""

    def __init__(self, n_pages: int) -> None:
        super().__init__()
        self.n_pages = n_pages
        self.document: dict = {}
        self.fetches = 0

    def serve(self, document: dict) -> None:
        with self.lock:
            self.document = document

    def _handle(self, h) -> None:
        if urlsplit(h.path).path == DOC_PATH and page_of(h.path) == 1:
            with self.lock:
                layout = LAYOUTS[self.fetches % len(LAYOUTS)]
                self.fetches += 1
                pages = paginate(self.document, self.n_pages) if self.n_pages > 1 else [self.document]
                self.docs[SERVER] = [layout(p) for p in pages]
        super()._handle(h)


class TearingUpstream(Upstream):
    """Serves `old` in three pages; once `tear(new)` is called, the next fetch gets pages 1 and 2
    of `old` and page 3 of `new` (the document changed between its page requests), and every
    fetch after that gets `new`."""

    def __init__(self, old: dict) -> None:
        super().__init__()
        self.set_pages(SERVER, paginate(old, 3))
        self.new: list[bytes] | None = None
        self.state = "steady"  # → armed → torn (page 3 of `new` is out) → steady on `new`

    def tear(self, new: dict) -> None:
        with self.lock:
            self.new = [json.dumps(p).encode() for p in paginate(new, 3)]
            self.state = "armed"

    def _handle(self, h) -> None:
        if urlsplit(h.path).path == DOC_PATH:
            page = page_of(h.path)
            with self.lock:
                if self.state == "armed" and page == 2:
                    # Page 2 still of the old version, whenever page 3 is asked: of the new one.
                    self.docs[SERVER] = self.docs[SERVER][:2] + self.new[2:]
                    self.state = "torn"
                elif self.state == "torn" and page == 1:
                    self.docs[SERVER] = list(self.new)
                    self.state = "steady"
        super()._handle(h)


class Announcements:
    """The Flagsmith real-time stream of CLIENT, read on a thread: `count` announcements so far."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        self.sock.sendall(f"GET /sse/environments/{CLIENT}/stream HTTP/1.1\r\nHost: x\r\n"
                          "Accept: text/event-stream\r\n\r\n".encode())
        self.data = b""
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            with self.lock:
                self.data += chunk

    @property
    def count(self) -> int:
        with self.lock:
            return self.data.count(ANNOUNCEMENT)

    def wait_for(self, n: int) -> None:
        wait_until(lambda: self.count >= n, WAIT, f"the stream never made {n} announcement(s): {self.data[-300:]!r}")

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def revision_seen(fp) -> tuple[int, str, float]:
    """(revision, content revision) from the status page, and the revision metric."""
    (env,) = status_json(fp)["environments"]
    metric = scrape(fp).get("flagpole_environment_revision", environment=env["environment"])
    return env["revision"], env["content_revision"], metric


def fetches_decided(up: Upstream, n: int) -> None:
    """Waits until `n` more fetches have been published or turned away: the first page of the
    fetch after them has been asked for (a poll publishes before the next one starts)."""
    up.wait_for_requests(n + 1, SERVER, page=1, timeout=WAIT)


def served_document(fp) -> dict:
    return fp.get("/api/v1/environment-document/", SERVER).json()


def updates_logged(fp) -> int:
    return fp.stderr_text().count("environment document updated")


def start(flagpole, up: Upstream):
    fp = flagpole(upstream_config(up, [ENV], api_poll_frequency_seconds=1, api_poll_timeout_seconds=2))
    fp.wait_ready(WAIT)
    return fp


@pytest.mark.parametrize("n_pages", [1, 3], ids=["one_body", "three_pages"])
def test_the_same_document_in_another_layout_is_not_a_new_revision(flagpole, n_pages):
    up = LayoutUpstream(n_pages).start()
    stream = None
    try:
        up.serve(doc(0))
        fp = start(flagpole, up)
        stream = Announcements(fp.port)
        stream.wait_for(1)  # the current revision, sent on connect
        first = revision_seen(fp)
        assert first[0] == 1 and first[2] == 1, first
        etag = fp.get("/api/v1/environment-document/", SERVER).header("etag")

        # Every layout at least twice over, each fetch in another one than the last.
        fetches_decided(up, 2 * len(LAYOUTS))
        assert revision_seen(fp) == first, "the same content in another layout made a new revision"
        assert fp.get("/api/v1/environment-document/", SERVER).header("etag") == etag
        assert updates_logged(fp) == 1, fp.stderr_tail(10)

        # A real change: one new revision, announced once (the announcement is the event waited
        # for; the count after it shows that none came for the layouts before it).
        up.serve(doc(1))
        stream.wait_for(2)
        wait_until(lambda: revision_seen(fp)[0] == 2, WAIT, "the changed document was never served")
        assert served_document(fp) == doc(1)
        changed = revision_seen(fp)
        assert changed[2] == 2 and changed[1] != first[1], changed
        fetches_decided(up, len(LAYOUTS))
        assert revision_seen(fp) == changed
        assert stream.count == 2, stream.data.decode(errors="replace")
        assert updates_logged(fp) == 2, fp.stderr_tail(10)
    finally:
        if stream is not None:
            stream.close()
        up.stop()


def test_pages_of_two_versions_are_never_merged(flagpole):
    old, new = doc(0), doc(1)
    up = TearingUpstream(old).start()
    stream = None
    try:
        fp = start(flagpole, up)
        stream = Announcements(fp.port)
        stream.wait_for(1)
        first = revision_seen(fp)
        assert first[0] == 1 and served_document(fp) == old

        up.tear(new)
        wait_until(lambda: up.state == "steady", WAIT, "the upstream never sent the torn fetch")
        fetches_decided(up, 1)  # the fetch after the torn one (or its own second start)
        wait_until(lambda: revision_seen(fp)[0] >= 2, WAIT, "the new document was never served")
        assert served_document(fp) == new
        changed = revision_seen(fp)
        # One new revision, the new document's: nothing published in between.
        assert changed[0] == 2 and changed[2] == 2 and changed[1] != first[1], changed
        stream.wait_for(2)
        fetches_decided(up, 2)
        assert revision_seen(fp) == changed
        assert stream.count == 2, stream.data.decode(errors="replace")
        assert updates_logged(fp) == 2, fp.stderr_tail(10)
        # The torn fetch started again at once: no failed fetch was counted.
        m = scrape(fp)
        failed = {s.labels["result"]: s.value for s in m.series("flagpole_upstream_fetches_total")
                  if s.labels["result"] not in ("200", "304")}
        assert not failed, failed
    finally:
        if stream is not None:
            stream.close()
        up.stop()
