"""OFREP event streams across processes (docs/ofrep.md, `ofrep.sse.secret`): the stream
token on replicas and after a secret change, what the logs never show, the connection cap (503) and
the end of the streams on SIGTERM."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

from fixtures import make_document
from ofrep_support import EXPOSE, ORIGIN, assert_error, bulk, ok_bulk
from serve_harness import Env, local_config
from sse_support import (
    EVENTS,
    PREAMBLE,
    SseStream,
    TOKEN,
    event_id_of,
    events_path,
    ordered,
    sse_token,
    wait_all,
)

# Keys and secrets are distinctive strings, so that a search of the logs finds nothing by chance
# and misses nothing. Document files are named neutrally (their path is logged).
TOK = Env("sse_tok_client_q7vx", "ser.sse_tok_server_k4mw", make_document("sse_tok_client_q7vx", env_id=4201))
# Two pairs for one client key: the first configured server key is the HMAC key.
TWO = Env("sse_two_client_w2hd", "ser.sse_two_first_m3zt", make_document("sse_two_client_w2hd", env_id=4202))
TWO_SECOND_KEY = "ser.sse_two_second_p9rj"
# No pair at all: only the client key reaches it (and keys its token).
SOLO = Env("sse_solo_client_z5kb", "", make_document("sse_solo_client_z5kb", env_id=4203))
SECRET = "sse-secret-v8nq-1"
OTHER_SECRET = "sse-secret-r6yc-2"


def write_docs(directory: Path, envs: list[Env]) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, e in enumerate(envs, 1):
        p = directory / f"env-{i}.json"
        p.write_text(json.dumps(e.document, indent=1))
        paths.append(p)
    return paths


def token_config(paths: list[Path], secret: str | None) -> dict:
    config = local_config(paths, [TOK, TWO], ofrep={"sse": {"secret": secret}},
                          logging={"enable_access_log": True})
    config["environment_key_pairs"].append({"server_side_key": TWO_SECOND_KEY, "client_side_key": TWO.client_key})
    return config


def advertised_token(fp, key: str) -> tuple[str, str, str]:
    """(token, since, ETag) from a bulk answer for `key`."""
    r = bulk(fp, {"targetingKey": "u1"}, key=key)
    ok_bulk(r)
    streams = dict(ordered(r.body))["eventStreams"]
    assert len(streams) == 1, streams
    uri = dict(dict(streams[0])["endpoint"])["requestUri"]
    assert uri.startswith(EVENTS + "?t="), uri
    query = dict(part.split("=", 1) for part in uri.split("?", 1)[1].split("&"))
    assert list(query) == ["t", "since"], uri
    assert TOKEN.match(query["t"]), uri
    return query["t"], query["since"], r.header("etag")


def stream_status(fp, token: str, since: str | None = None, headers=None) -> int:
    with SseStream(fp.port, events_path(token, since), headers) as s:
        if s.status == 200:
            assert PREAMBLE.match(s.wait_preamble(60) + "\n"), s
        return s.status


# --------------------------------------------------------------------------------------------
# Line 21: tokens
# --------------------------------------------------------------------------------------------


def test_tokens_replicas_secrets_and_logs(start_flagpole, tmp_path):
    paths = write_docs(tmp_path / "docs", [TOK, TWO, SOLO])
    with_secret = token_config(paths, SECRET)
    # Replica 1 logs at debug level, replica 2 at the default level.
    r1 = start_flagpole(config=with_secret, workdir=tmp_path / "r1", serving_key=TOK.server_key,
                        env={"RUST_LOG": "debug"})
    r2 = start_flagpole(config=with_secret, workdir=tmp_path / "r2", serving_key=TOK.server_key)
    other = start_flagpole(config=token_config(paths, OTHER_SECRET), workdir=tmp_path / "other",
                           serving_key=TOK.server_key)
    keyless = start_flagpole(config=token_config(paths, None), workdir=tmp_path / "keyless",
                             serving_key=TOK.server_key)
    procs = [r1, r2, other, keyless]

    # With a secret, K is the secret for every environment, whichever key asks. Without one: the
    # first server key of the pairs, else the client key.
    cases = [
        (TOK, [TOK.client_key, TOK.server_key], TOK.server_key),
        (TWO, [TWO.client_key, TWO.server_key, TWO_SECOND_KEY], TWO.server_key),
        (SOLO, [SOLO.client_key], SOLO.client_key),
    ]
    seen: dict[str, list] = {}
    for env, env_keys, hmac_key in cases:
        for key in env_keys:
            for fp, secret in ((r1, SECRET), (r2, SECRET), (other, OTHER_SECRET)):
                token, since, etag = advertised_token(fp, key)
                assert token == sse_token(env.client_key, secret), (fp.port, key)
                assert since == event_id_of(env.document)
                seen.setdefault(key, []).append(etag)
            token, _, etag = advertised_token(keyless, key)
            assert token == sse_token(env.client_key, hmac_key), key
            seen[key].append(etag)
        assert sse_token(env.client_key, SECRET) != sse_token(env.client_key, OTHER_SECRET)
    # Replicas agree on ETags; another secret (another token in the body) gives other ETags.
    for key, (e1, e2, e_other, e_keyless) in seen.items():
        assert e1 == e2, key
        assert len({e1, e_other, e_keyless}) == 3, key

    # Replicas accept each other's tokens; a rotated secret refuses the old one.
    tok1 = sse_token(TOK.client_key, SECRET)
    since = event_id_of(TOK.document)
    assert stream_status(r2, tok1, since) == 200
    assert stream_status(r1, tok1, since) == 200
    assert stream_status(other, tok1, since) == 401
    assert stream_status(other, sse_token(TOK.client_key, OTHER_SECRET), since) == 200
    assert stream_status(keyless, sse_token(SOLO.client_key, SOLO.client_key), event_id_of(SOLO.document)) == 200
    assert stream_status(keyless, sse_token(TWO.client_key, TWO_SECOND_KEY)) == 401
    assert stream_status(r1, None, since, {"X-API-Key": TOK.client_key}) == 200
    assert stream_status(r1, None, None, {"Authorization": f"Bearer {TOK.server_key}"}) == 200
    assert stream_status(r1, "x" * 22, since) == 401

    # Logs never show a token, a key or a secret (stopping flushes them).
    for fp in procs:
        assert fp.stop() == 0, fp.stderr_tail()
    secrets = {SECRET, OTHER_SECRET, TOK.client_key, TOK.server_key, TWO.client_key, TWO.server_key,
               TWO_SECOND_KEY, SOLO.client_key}
    for env in (TOK, TWO, SOLO):
        for k in (SECRET, OTHER_SECRET, env.client_key, env.server_key, TWO_SECOND_KEY):
            if k:
                secrets.add(sse_token(env.client_key, k))
    assert "x" * 22 not in secrets
    leaks = []
    for fp in procs:
        logs = fp.stderr_text() + fp.stdout_path.read_text(errors="replace")
        assert logs.strip(), f"no log output from port {fp.port}: the check would be vacuous"
        for s in sorted(secrets):
            if s in logs:
                line = next(ln for ln in logs.splitlines() if s in ln)
                leaks.append(f"port {fp.port}: {s!r} in {line[:300]!r}")
    assert not leaks, "\n".join(leaks)


# --------------------------------------------------------------------------------------------
# The connection cap
# --------------------------------------------------------------------------------------------

CAP_A = Env("ofrep_cap_a_client", "ser.ofrep_cap_a_server", make_document("ofrep_cap_a_client", env_id=4301))
CAP_B = Env("ofrep_cap_b_client", "ser.ofrep_cap_b_server", make_document("ofrep_cap_b_client", env_id=4302))


def test_sse_max_connections(start_flagpole, tmp_path, open_stream):
    paths = write_docs(tmp_path / "docs", [CAP_A, CAP_B])
    config = local_config(paths, [CAP_A, CAP_B], allow_origins=[ORIGIN],
                          ofrep={"sse": {"max_connections": 2, "heartbeat_sec": 1}})
    fp = start_flagpole(config=config, workdir=tmp_path / "cap", serving_key=CAP_A.server_key)
    uri_a = events_path(sse_token(CAP_A.client_key, CAP_A.server_key), event_id_of(CAP_A.document))

    # The cap counts streams of every environment, however they authenticate.
    s1 = open_stream(fp.port, uri_a)
    s2 = open_stream(fp.port, EVENTS, {"X-API-Key": CAP_B.client_key})
    assert (s1.status, s2.status) == (200, 200), (s1, s2)
    assert wait_all([s1, s2], lambda s: len(s.blocks) >= 1, 60), (s1, s2)

    for headers in ({"Origin": ORIGIN}, {"X-API-Key": CAP_A.client_key}):
        s3 = open_stream(fp.port, EVENTS if "X-API-Key" in headers else uri_a, headers)
        assert_error(s3.response(), 503, "GENERAL")
        assert s3.header("retry-after") == "30", s3
        if "Origin" in headers:
            assert s3.header("access-control-allow-origin") == ORIGIN, s3
            assert s3.header("access-control-expose-headers") == EXPOSE, s3
    # Evaluation is not capped.
    assert bulk(fp, None, key=CAP_A.client_key).status == 200

    # A closed stream frees its slot (noticed at the latest on the next heartbeat write).
    s1.close()
    deadline = time.monotonic() + 60
    while True:
        s = open_stream(fp.port, uri_a)
        if s.status == 200:
            break
        assert s.status == 503, s
        assert time.monotonic() < deadline, "the slot of a closed stream was never freed"
        time.sleep(0.2)
    assert open_stream(fp.port, uri_a).status == 503
    assert not s2.eof and wait_all([s, s2], lambda x: x.pings >= 1, 60), (s, s2)


# --------------------------------------------------------------------------------------------
# Shutdown
# --------------------------------------------------------------------------------------------


def test_sse_streams_end_on_sigterm(start_flagpole, tmp_path, open_stream):
    paths = write_docs(tmp_path / "docs", [CAP_A, CAP_B])
    timeout = 60  # far longer than the shutdown takes, so that running into it would show
    config = local_config(paths, [CAP_A, CAP_B], flagpole={"shutdown_timeout_seconds": timeout})
    fp = start_flagpole(config=config, workdir=tmp_path / "term", serving_key=CAP_A.server_key)
    streams = [
        open_stream(fp.port, events_path(sse_token(CAP_A.client_key, CAP_A.server_key), event_id_of(CAP_A.document))),
        open_stream(fp.port, events_path(sse_token(CAP_B.client_key, CAP_B.server_key))),
        open_stream(fp.port, EVENTS, {"Authorization": f"Bearer {CAP_A.server_key}"}),
    ]
    assert all(s.status == 200 for s in streams), streams
    assert wait_all(streams, lambda s: len(s.blocks) >= 1, 60), streams
    assert all(not s.eof for s in streams)

    fp.send_signal(signal.SIGTERM)
    # The streams are closed by the shutdown itself, not cut when the drain times out (which
    # would be logged).
    assert wait_all(streams, lambda s: s.eof, timeout + 5), \
        f"streams still open after SIGTERM: {[s for s in streams if not s.eof]}"
    code = fp.proc.wait(timeout=timeout + 5)
    assert code == 0, f"exit code {code}; stderr:\n{fp.stderr_tail()}"
    assert "shutdown timeout reached" not in fp.stderr_text(), fp.stderr_tail()
