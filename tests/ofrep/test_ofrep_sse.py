"""OFREP event streams (docs/ofrep.md, live changes): advertising, the stream's headers,
preamble and heartbeats, one event per revision, catch-up, and CORS on the stream. Tokens across
processes, logs, the connection cap and shutdown are in test_ofrep_sse_processes.py; the JS web
provider in test_ofrep_web_provider.py.

Most tests use the `sse` server (heartbeats every second, one environment per test that edits its
document); documents change by rewriting their file atomically."""

from __future__ import annotations

import json
import time

import pytest

import fixtures as fx
from ofrep_support import (
    EXPOSE,
    HIDE,
    MAIN,
    ORIGIN,
    OTHER_ORIGIN,
    assert_error,
    bulk,
    ok_bulk,
)
from serve_harness import Env, Upstream, http_request, upstream_config, wait_until, write_atomic
from sse_support import (
    EVENTS,
    PING,
    PREAMBLE,
    SSE_A,
    SSE_BURST,
    SSE_HEARTBEAT,
    SSE_ONE,
    SSE_RC,
    SSE_SAME,
    TOKEN,
    event_id,
    event_id_of,
    events_path,
    expected_data,
    ordered,
    seq_of,
    sse_token,
    wait_all,
)

PRO = {"targetingKey": "u1", "plan": "pro"}
SSE_UP = Env("ofrep_sse_up_client", "ser.ofrep_sse_up_server",
             fx.make_document("ofrep_sse_up_client", env_id=4110))
WWW_AUTH = 'Bearer realm="flagpole"'
EXPECTED_MEMBERS = ["flags", "eventStreams", "metadata"]


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def bulk_pairs(fp, key: str, context: dict | None = None):
    """A bulk 200 (checked as every bulk answer) and its body with member order kept."""
    r = bulk(fp, context, key=key)
    ok_bulk(r)
    return r, ordered(r.body)


def want_streams(token: str, since: str, *, inactivity: int = 120, base: str | None = None) -> list:
    """The bulk response's `eventStreams` member, as (name, value) pairs in wire order."""
    uri = events_path(token, since)
    where = ("url", base + uri) if base is not None else ("endpoint", [("requestUri", uri)])
    return [[("type", "sse"), where, ("inactivityDelaySec", inactivity)]]


def typed(value):
    """A pairs structure with every scalar tagged by type (so 1 ≠ 1.0 ≠ true)."""
    if isinstance(value, list):
        return [typed(v) for v in value]
    if isinstance(value, tuple):
        return tuple(typed(v) for v in value)
    return (type(value).__name__, value)


def advertised(fp, key: str) -> str:
    """The stream URI (`endpoint.requestUri`) a bulk answer advertises for `key`."""
    _, pairs = bulk_pairs(fp, key)
    streams = dict(pairs)["eventStreams"]
    assert len(streams) == 1, streams
    return dict(dict(streams[0])["endpoint"])["requestUri"]


def assert_event(ev, document: dict, where: str = "") -> None:
    """A refetchEvaluation event for `document`, framed exactly as the stream sends it."""
    lines = ev.block.split("\n")
    assert len(lines) == 3, f"{where}: {ev.block!r}"
    assert lines[0] == f"id: {event_id_of(document)}", f"{where}: {ev.block!r}"
    assert lines[1] == "event: message", f"{where}: {ev.block!r}"
    assert lines[2].startswith("data: "), f"{where}: {ev.block!r}"
    assert typed(ordered(lines[2][len("data: "):].encode())) == typed(expected_data(document)), \
        f"{where}: {ev.block!r}, want data {expected_data(document)}"


def edit(sse, env, revision: int) -> dict:
    """Rewrites `env`'s document file (atomically) at `revision`; returns the new document."""
    doc = fx.make_document(env.client_key, env_id=env.document["id"], revision=revision)
    write_atomic(sse.paths[env.client_key], json.dumps(doc, indent=1))
    return doc


def media_type(value: str | None) -> str:
    return (value or "").split(";")[0].strip().lower()


def tokens(value: str | None) -> set[str]:
    return {t.strip().lower() for t in (value or "").split(",") if t.strip()}


# --------------------------------------------------------------------------------------------
# Line 20: advertising
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("env", [pytest.param(MAIN, id="main"), pytest.param(HIDE, id="hide")])
def test_bulk_advertises_one_stream(srv, env):
    # Default settings: SSE on, the endpoint form, inactivityDelaySec 120, K = the server key.
    token = sse_token(env.client_key, env.server_key)
    assert TOKEN.match(token)
    want = want_streams(token, event_id_of(env.document))
    for key in (env.server_key, env.client_key):
        for ctx in (None, PRO, {"targetingKey": "someone-else", "plan": "free"}):
            _, pairs = bulk_pairs(srv, key, ctx)
            assert [k for k, _ in pairs] == EXPECTED_MEMBERS, f"{key} {ctx}: members {[k for k, _ in pairs]}"
            assert typed(dict(pairs)["eventStreams"]) == typed(want), \
                f"{key} {ctx}:\n got {dict(pairs)['eventStreams']}\nwant {want}"


def test_url_form_settings_and_off(srv, main_setup, start_flagpole, tmp_path):
    ref, ref_pairs = bulk_pairs(srv, MAIN.client_key, PRO)
    token = sse_token(MAIN.client_key, MAIN.server_key)
    since = event_id_of(MAIN.document)

    # public_base_url → an absolute `url`, and no `endpoint`; the inactivity delay is configurable.
    base = "https://flags.example.com"
    fp = start_flagpole(config=dict(main_setup.config, ofrep={"public_base_url": base,
                                                              "sse": {"inactivity_delay_sec": 45}}),
                        workdir=tmp_path / "url", serving_key=MAIN.server_key)
    r_url, pairs = bulk_pairs(fp, MAIN.client_key, PRO)
    assert [k for k, _ in pairs] == EXPECTED_MEMBERS
    assert typed(dict(pairs)["eventStreams"]) == typed(want_streams(token, since, inactivity=45, base=base)), pairs
    assert dict(pairs)["flags"] == dict(ref_pairs)["flags"]

    # A path prefix is kept (a trailing slash is not doubled); set through the OFREP variable.
    fp2 = start_flagpole(config=main_setup.config, workdir=tmp_path / "prefix", serving_key=MAIN.server_key,
                         env={"OFREP": json.dumps({"public_base_url": "https://flags.example.com/edge/"})})
    r_prefix, pairs = bulk_pairs(fp2, MAIN.client_key, PRO)
    assert typed(dict(pairs)["eventStreams"]) == \
        typed(want_streams(token, since, base="https://flags.example.com/edge")), pairs

    # SSE off → no eventStreams member at all (also through the OFREP variable).
    fp3 = start_flagpole(config=main_setup.config, workdir=tmp_path / "off", serving_key=MAIN.server_key,
                         env={"OFREP": json.dumps({"sse": {"enabled": False}})})
    r_off, pairs = bulk_pairs(fp3, MAIN.client_key, PRO)
    assert [k for k, _ in pairs] == ["flags", "metadata"], pairs
    assert dict(pairs)["flags"] == dict(ref_pairs)["flags"]
    assert dict(pairs)["metadata"] == dict(ref_pairs)["metadata"]

    # Only the inactivity delay changed.
    fp4 = start_flagpole(config=dict(main_setup.config, ofrep={"sse": {"inactivity_delay_sec": 45}}),
                         workdir=tmp_path / "delay", serving_key=MAIN.server_key)
    r_delay, pairs = bulk_pairs(fp4, MAIN.client_key, PRO)
    assert typed(dict(pairs)["eventStreams"]) == typed(want_streams(token, since, inactivity=45)), pairs

    # Each of these settings changes the body, so each must change the ETag: a 304
    # must never keep a client on a stream entry that no longer applies.
    etags = [x.header("etag") for x in (ref, r_url, r_prefix, r_off, r_delay)]
    assert len(set(etags)) == 5, etags
    r = bulk(fp3, PRO, key=MAIN.client_key, headers={"If-None-Match": ref.header("etag")})
    assert r.status == 200, r


# --------------------------------------------------------------------------------------------
# Line 22: the stream
# --------------------------------------------------------------------------------------------


def test_stream_headers_preamble_and_heartbeats(sse, open_stream):
    token = sse_token(SSE_A.client_key, SSE_A.server_key)
    since = event_id_of(SSE_A.document)
    uri = advertised(sse.fp, SSE_A.client_key)
    assert uri == events_path(token, since)

    s = open_stream(sse.fp.port, uri, {"Accept-Encoding": "gzip, deflate, br, zstd"})
    assert s.status == 200, s
    assert media_type(s.header("content-type")) == "text/event-stream", s
    assert s.header("cache-control") == "no-store", s
    assert s.header("x-accel-buffering") == "no", s
    assert s.header("content-encoding") is None, f"the stream must not be compressed: {s}"
    assert s.header("content-length") is None, s
    first = s.wait_preamble(60)
    assert s.text.startswith("retry: 5000\n"), s
    assert PREAMBLE.match(first + "\n") and first.count("\n") == 1, f"bad preamble {first!r}"

    # Heartbeats every heartbeat_sec (1 s here), nothing else: `since` is the current id.
    assert s.wait_pings(2, 60), f"fewer than 2 heartbeats: {s}"
    assert s.blocks[1:] == [PING] * (len(s.blocks) - 1), f"only heartbeats expected: {s.blocks}"
    assert s.text.endswith(f"{PING}\n\n"), s

    # A non-browser client may authenticate with a key header instead of `t`.
    for headers in ({"X-API-Key": SSE_A.client_key}, {"Authorization": f"Bearer {SSE_A.server_key}"},
                    {"X-Environment-Key": SSE_A.server_key}):
        h = open_stream(sse.fp.port, events_path(None, since), headers)
        assert h.status == 200 and media_type(h.header("content-type")) == "text/event-stream", (headers, h)
        assert PREAMBLE.match(h.wait_preamble(60) + "\n"), h


def test_flushed_at_once(srv, open_stream):
    # The main server keeps the default heartbeat (15 s). Without `since`, the current event
    # follows the preamble. Held back in a buffer, they would come out with the first heartbeat,
    # which would then be read with them; flushed at once, they come before any heartbeat.
    s = open_stream(srv.port, events_path(sse_token(MAIN.client_key, MAIN.server_key)))
    assert s.status == 200, s
    s.wait_events(1, 60)
    assert len(s.blocks) >= 2 and s.events, f"preamble and event never came: {s}"
    assert s.pings == 0, f"the preamble and event came only with a heartbeat: {s.blocks}"
    assert PREAMBLE.match(s.blocks[0] + "\n"), s
    assert_event(s.events[0], MAIN.document, "no Last-Event-ID, no since")
    assert s.blocks[1] == s.events[0].block


def test_bad_token(sse, open_stream):
    token = sse_token(SSE_A.client_key, SSE_A.server_key)
    since = event_id_of(SSE_A.document)
    flipped = ("B" if token[5] == "A" else "A").join((token[:5], token[6:]))
    bad = {
        "missing": None,
        "empty": "",
        "one character changed": flipped,
        "truncated": token[:-1],
        "extended": token + "A",
        "another secret": sse_token(SSE_A.client_key, "not-the-secret"),
        "keyed by the client key": sse_token(SSE_A.client_key, SSE_A.client_key),
        "the client key itself": SSE_A.client_key,
        "an unknown environment": sse_token("no_such_client", SSE_A.server_key),
    }
    for what, t in bad.items():
        s = open_stream(sse.fp.port, events_path(t, since))
        assert s.status == 401, f"{what}: {s}"
        assert_error(s.response(), 401, "GENERAL")
        assert s.header("www-authenticate") == WWW_AUTH, f"{what}: {s}"
    # An unknown key header is no better.
    s = open_stream(sse.fp.port, events_path(None, since), {"X-API-Key": "ser.not_a_key"})
    assert_error(s.response(), 401, "GENERAL")
    # The token is bound to its environment: another environment's token opens that one's stream.
    other = sse_token(SSE_ONE.client_key, SSE_ONE.server_key)
    assert other != token
    s = open_stream(sse.fp.port, events_path(other, event_id_of(SSE_A.document)))
    assert s.status == 200, s


def test_routing(sse, open_stream):
    token = sse_token(SSE_A.client_key, SSE_A.server_key)
    since = event_id_of(SSE_A.document)
    # Unknown query parameters are ignored, order does not matter, extra leading slashes are accepted.
    for path in (f"{EVENTS}?since={since}&t={token}", f"{EVENTS}?t={token}&since={since}&x=1&flagConfigEtag=y",
                 f"/{EVENTS}?t={token}&since={since}"):
        s = open_stream(sse.fp.port, path)
        assert s.status == 200, (path, s)
        assert PREAMBLE.match(s.wait_preamble(60) + "\n"), (path, s)
    # Other methods → 405 with Allow and a bulk-shaped error body.
    for method in ("POST", "PUT", "DELETE"):
        r = http_request(sse.fp.port, method, events_path(token, since), {"X-API-Key": SSE_A.client_key},
                         b"{}" if method != "DELETE" else None)
        assert_error(r, 405, "GENERAL")
        assert "GET" in {m.upper() for m in tokens(r.header("allow"))}, r


# --------------------------------------------------------------------------------------------
# Line 23: change notifications
# --------------------------------------------------------------------------------------------


def test_one_event_per_revision(sse, open_stream):
    env, token = SSE_ONE, sse_token(SSE_ONE.client_key, SSE_ONE.server_key)
    doc0 = env.document
    uri = advertised(sse.fp, env.client_key)
    assert uri == events_path(token, event_id_of(doc0))
    streams = [open_stream(sse.fp.port, uri) for _ in range(3)]
    # A key-header stream without `since` gets the current event at once, then the changes.
    keyed = open_stream(sse.fp.port, EVENTS, {"X-API-Key": env.server_key})
    # Another environment's stream hears nothing of this one.
    control = open_stream(sse.fp.port, advertised(sse.fp, SSE_A.client_key))
    everyone = streams + [keyed, control]
    assert all(s.status == 200 for s in everyone), everyone
    assert wait_all(everyone, lambda s: len(s.blocks) >= 1, 60), everyone
    assert keyed.wait_events(1, 60), keyed
    assert_event(keyed.events[0], doc0, "key header, no since")

    docs = [doc0]
    for n in (1, 2, 3):
        if n < 3:
            doc = edit(sse, env, n)
        else:
            # A document without updated_at: seq 0, so the event has no lastModified.
            doc = fx.make_document(env.client_key, env_id=env.document["id"], revision=n)
            del doc["updated_at"]
            write_atomic(sse.paths[env.client_key], json.dumps(doc))
            assert event_id_of(doc).startswith("0-") and len(expected_data(doc)) == 2
        docs.append(doc)
        assert wait_all(streams, lambda s: len(s.events) >= n, 60), \
            f"revision {n}: no event within 10s: {streams}"
        assert wait_all([keyed], lambda s: len(s.events) >= n + 1, 60), keyed
        for s in streams:
            assert_event(s.events[n - 1], doc, f"revision {n}")
        assert_event(keyed.events[n], doc, f"revision {n}, key header")
        assert advertised(sse.fp, env.client_key) == events_path(token, event_id_of(doc))

    # Exactly one event per revision: nothing more while two more heartbeats pass.
    marks = {id(s): s.pings for s in everyone}
    assert wait_all(everyone, lambda s: s.pings >= marks[id(s)] + 2, 60), everyone
    for s in streams:
        assert [e.id for e in s.events] == [event_id_of(d) for d in docs[1:]], s.events
    assert [e.id for e in keyed.events] == [event_id_of(d) for d in docs], keyed.events
    assert control.events == [], f"another environment's change reached this stream: {control.events}"
    for s in everyone:
        assert not s.eof, f"stream ended: {s}"
        assert all(b == PING or b in [e.block for e in s.events] for b in s.blocks[1:]), s.blocks


def last_successes(fp) -> dict:
    """Each environment's last successful load, as the status page shows it (milliseconds)."""
    return {e["environment"]: e["last_success"]
            for e in fp.get("/proxy/status?format=json").json()["environments"]}


def test_same_revision_no_event(sse, open_stream, start_flagpole, tmp_path):
    """A reload that yields the same `rev` is no new revision: no event."""
    # A local file rewritten with other bytes (indentation, member order), same content.
    env = SSE_SAME
    uri = advertised(sse.fp, env.client_key)
    s = open_stream(sse.fp.port, uri)
    assert s.status == 200 and PREAMBLE.match(s.wait_preamble(60) + "\n"), s
    before = last_successes(sse.fp)
    write_atomic(sse.paths[env.client_key], json.dumps(env.document, indent=3, sort_keys=True))
    # Reloaded (a success recorded, with no new revision) before the real change is written, so
    # that the two are two reloads, not one.
    wait_until(lambda: last_successes(sse.fp) != before, 60, "the rewritten file was never reloaded")
    # A real change afterwards proves the reload path is live: its event must be the only one.
    doc1 = edit(sse, env, 1)
    s.wait_for(lambda x: any(e.id == event_id_of(doc1) for e in x.events), 60)
    problems = []
    if [e.id for e in s.events] != [event_id_of(doc1)]:
        problems.append(f"local file: want only the event of the one new revision {event_id_of(doc1)} "
                        f"(a content-identical rewrite must send nothing), got {[e.id for e in s.events]}")

    # An upstream answering the same document with its members reordered (same rev).
    upstream = Upstream().start()
    try:
        env = SSE_UP
        upstream.set_document(env.server_key, env.document)
        fp = start_flagpole(config=upstream_config(upstream, [env], ofrep={"sse": {"heartbeat_sec": SSE_HEARTBEAT}}),
                            workdir=tmp_path / "upstream", serving_key=env.server_key)
        s = open_stream(fp.port, advertised(fp, env.client_key))
        assert s.status == 200 and PREAMBLE.match(s.wait_preamble(60) + "\n"), s
        reordered = json.loads(json.dumps(env.document), object_pairs_hook=lambda pairs: dict(reversed(pairs)))
        assert fx.revision_of(reordered) == fx.revision_of(env.document)
        upstream.set_document(env.server_key, reordered)
        upstream.wait_for_requests(2, env.server_key, timeout=10)
        s.pump(0.5)
        if s.events:
            problems.append(f"upstream: events without a new revision (members reordered): "
                            f"{[e.id for e in s.events]}")
        assert advertised(fp, env.client_key) == events_path(sse_token(env.client_key, env.server_key),
                                                             event_id_of(env.document))
    finally:
        upstream.stop()
    assert not problems, "\n".join(problems)


def test_burst_collapses(sse, open_stream):
    env = SSE_BURST
    uri = advertised(sse.fp, env.client_key)
    streams = [open_stream(sse.fp.port, uri) for _ in range(3)]
    assert all(s.status == 200 for s in streams), streams
    assert wait_all(streams, lambda s: len(s.blocks) >= 1, 60), streams

    docs = []
    for revision in range(1, 7):
        docs.append(edit(sse, env, revision))
        time.sleep(0.04)
    ids = [event_id_of(d) for d in docs]
    assert len(set(ids)) == len(ids)
    assert wait_all(streams, lambda s: bool(s.events) and s.events[-1].id == ids[-1], 60), \
        f"the last revision never arrived: {[[e.id for e in s.events] for s in streams]}"
    marks = {id(s): s.pings for s in streams}
    assert wait_all(streams, lambda s: s.pings >= marks[id(s)] + 2, 60), streams
    for s in streams:
        got = [e.id for e in s.events]
        assert all(i in ids for i in got), f"an event for a revision never written: {got}"
        order = [ids.index(i) for i in got]
        # At most one event per revision, never an older revision after a newer one, and the
        # last event is the current revision.
        assert order == sorted(set(order)), f"stale or repeated events: {got}"
        assert got[-1] == ids[-1], got
        for e in s.events:
            assert_event(e, docs[ids.index(e.id)], "burst")
    assert advertised(sse.fp, env.client_key).endswith(f"&since={ids[-1]}")


# --------------------------------------------------------------------------------------------
# Line 24: catch-up on (re)connect
# --------------------------------------------------------------------------------------------


def test_catch_up(sse, open_stream):
    env = SSE_RC
    token = sse_token(env.client_key, env.server_key)
    doc0 = env.document
    doc1 = edit(sse, env, 1)
    wait_until(lambda: advertised(sse.fp, env.client_key) == events_path(token, event_id_of(doc1)), 10,
               "the edited document was never served")
    seq0, seq1 = seq_of(doc0), seq_of(doc1)
    rev0, rev1 = fx.revision_of(doc0), fx.revision_of(doc1)
    id0, id1 = event_id(seq0, rev0), event_id(seq1, rev1)
    assert seq1 > seq0

    # (what, Last-Event-ID or None, since or None, an event at once?)
    cases = [
        ("old Last-Event-ID", id0, None, True),
        ("old since", None, id0, True),
        ("old Last-Event-ID beats the current since", id0, id1, True),
        ("another rev with a lower seq", f"{seq1 - 1}-{'0' * 32}", None, True),
        ("another rev with the same seq", f"{seq1}-{rev0}", None, True),
        ("unparseable Last-Event-ID", "not-an-event-id", None, True),
        ("unparseable since", None, "garbage", True),
        ("nothing", None, None, True),
        ("current Last-Event-ID", id1, None, False),
        ("current since", None, id1, False),
        ("current Last-Event-ID beats an old since", id1, id0, False),
        ("higher seq, Last-Event-ID", f"{seq1 + 1}-{'f' * 32}", None, False),
        ("higher seq, since", None, event_id(seq1 + 60_000, rev0), False),
    ]
    streams = []
    for what, last, since, _ in cases:
        headers = {"Last-Event-ID": last} if last is not None else {}
        streams.append(open_stream(sse.fp.port, events_path(token, since), headers))
    for (what, *_), s in zip(cases, streams):
        assert s.status == 200, f"{what}: {s}"
    catching_up = [s for (*_, at_once), s in zip(cases, streams) if at_once]
    assert wait_all(catching_up, lambda s: len(s.events) >= 1, 60), \
        [(c[0], s.blocks) for c, s in zip(cases, streams) if c[3]]
    # Then two heartbeats on every stream: an event "at once" comes before them.
    assert wait_all(streams, lambda s: s.pings >= 2, 60), streams
    problems = []
    for (what, last, since, at_once), s in zip(cases, streams):
        want = [s.blocks[0]] + ([s.events[0].block] if at_once and s.events else [])
        if at_once:
            if len(s.events) != 1 or s.blocks[1] != s.events[0].block:
                problems.append(f"{what}: want one event before any heartbeat, got {s.blocks}")
                continue
            try:
                assert_event(s.events[0], doc1, what)
            except AssertionError as exc:
                problems.append(str(exc))
        elif s.events:
            problems.append(f"{what}: want no event, got {[e.block for e in s.events]}")
        if s.blocks[:len(want)] != want or any(b != PING for b in s.blocks[len(want):]):
            problems.append(f"{what}: unexpected blocks {s.blocks}")
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------------------------
# CORS on the stream
# --------------------------------------------------------------------------------------------


def test_sse_cors(sse, open_stream):
    uri = advertised(sse.fp, SSE_A.client_key)
    s = open_stream(sse.fp.port, uri, {"Origin": ORIGIN})
    assert s.status == 200, s
    assert s.header("access-control-allow-origin") == ORIGIN, s
    assert s.header("access-control-expose-headers") == EXPOSE, s
    assert "origin" in tokens(", ".join(s.header_all("vary"))), s
    assert PREAMBLE.match(s.wait_preamble(60) + "\n"), s

    # A disallowed origin: the stream still opens (the browser hides it), without the header.
    s = open_stream(sse.fp.port, uri, {"Origin": OTHER_ORIGIN})
    assert s.status == 200 and s.header("access-control-allow-origin") is None, s

    # Errors carry CORS headers too, so a web provider can read the 401.
    s = open_stream(sse.fp.port, events_path("A" * 22), {"Origin": ORIGIN})
    assert s.status == 401, s
    assert s.header("access-control-allow-origin") == ORIGIN, s
    assert s.header("access-control-expose-headers") == EXPOSE, s

    # Preflight (an EventSource polyfill with headers sends one).
    requested = "last-event-id, cache-control, x-api-key, authorization"
    r = http_request(sse.fp.port, "OPTIONS", uri, {
        "Origin": ORIGIN, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": requested})
    assert r.status == 204, r
    assert r.header("access-control-allow-origin") == ORIGIN, r
    assert r.header("access-control-allow-methods") == "GET, POST, OPTIONS", r
    assert tokens(r.header("access-control-allow-headers")) >= tokens(requested), r
    r = http_request(sse.fp.port, "OPTIONS", uri, {
        "Origin": OTHER_ORIGIN, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": requested})
    assert r.header("access-control-allow-origin") is None, r
