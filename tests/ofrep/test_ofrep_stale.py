"""Stale answers (docs/serve.md, "Stale answers"): an environment polled from an upstream that
stops answering is stale once its document is older than the readiness rule allows (here 1 s
poll + 1 s grace); meanwhile OFREP answers with a value say `STALE` (read through the Python
OFREP provider and on the wire, single and bulk), the bulk ETag changes so that no answer
cached either side of the switch is revalidated across it, the change stream sends an event for
the switch, and the Flagsmith endpoints answer exactly what they answered before (their
real-time stream sends nothing for it). When the
upstream answers again, everything is as it was (the fresh ETag included), and the stream says so.

Every step waits for the change stream's event (or the provider's answer) with a generous
deadline; nothing sleeps."""

from __future__ import annotations

import json

from openfeature import api
from openfeature.contrib.provider.ofrep import OFREPProvider
from openfeature.evaluation_context import EvaluationContext
from openfeature.flag_evaluation import Reason

from metrics_support import printed_fingerprints, scrape
from fixtures import make_document
from ofrep_support import BULK, MAIN, OfrepProcess, bulk, ok_bulk, ok_json, post, single, wait_serving
from serve_harness import Upstream, upstream_config, wait_until
from sse_support import event_id_of, seq_of

TIMINGS = {"api_poll_frequency_seconds": 1, "api_poll_timeout_seconds": 1,
           "health_check": {"environment_update_grace_period_seconds": 1}}
PRO = {"targetingKey": "u1", "plan": "pro"}
WAIT = 60.0


def flagsmith_bodies(fp) -> list[bytes]:
    """What the Flagsmith SDKs read: flags, an identity's flags, the environment document."""
    identity = {"identifier": "u1", "traits": [{"trait_key": "plan", "trait_value": "pro"}]}
    responses = [fp.get("/api/v1/flags/", MAIN.client_key),
                 fp.post("/api/v1/identities/", identity, MAIN.server_key),
                 fp.get("/api/v1/environment-document/", MAIN.server_key)]
    assert [r.status for r in responses] == [200, 200, 200], responses
    return [r.body for r in responses]


def test_answers_say_stale_while_the_upstream_is_away(tmp_path, open_stream):
    upstream = Upstream().start()
    upstream.set_document(MAIN.server_key, MAIN.document)
    fp = OfrepProcess(tmp_path, config=upstream_config(upstream, [MAIN], **TIMINGS)).start()
    try:
        wait_serving(fp)
        api.set_provider(OFREPProvider(fp.base_url, headers_factory=lambda: {"X-API-Key": MAIN.server_key},
                                       timeout=10.0), "ofrep-stale")
        client = api.get_client("ofrep-stale")

        def provider_answers() -> list[tuple]:
            out = []
            for name, ctx in (("Zeta", None), ("seg_feat", PRO), ("flag_off", None)):
                context = EvaluationContext(ctx["targetingKey"], {"plan": ctx["plan"]}) if ctx else None
                d = client.get_string_details(name, "x", context) if name != "flag_off" \
                    else client.get_boolean_details(name, True, context)
                out.append((d.value, d.reason, d.variant, d.error_code))
            return out

        fresh = provider_answers()
        assert [r[1] for r in fresh] == [Reason.STATIC, Reason.TARGETING_MATCH, Reason.DISABLED], fresh
        fresh_response = bulk(fp, PRO)
        fresh_bulk = ok_bulk(fresh_response)
        fresh_etag = fresh_response.header("etag")
        fresh_single = single(fp, "seg_feat", PRO)
        fresh_flagsmith = flagsmith_bodies(fp)
        stream_uri = ok_json(fresh_response)["eventStreams"][0]["endpoint"]["requestUri"]
        stream = open_stream(fp.port, stream_uri)
        stream.wait_preamble()
        fresh_id = stream_uri.split("since=")[1]
        # The Flagsmith SDKs' real-time stream: the current document at once, then one event per
        # new document (none for a stale switch).
        realtime = open_stream(fp.port, f"/sse/environments/{MAIN.client_key}/stream")
        assert realtime.wait_for(lambda s: len(s.events) == 1, WAIT), realtime

        upstream.stop()
        assert stream.wait_for(lambda s: any(e.id == f"{fresh_id}-stale" for e in s.events), WAIT), \
            f"no event for the switch to stale: {stream}\n{fp.stderr_tail()}"
        # Through the provider: the same values, `STALE`; the kill switch's `false` too (it has
        # a value).
        assert provider_answers() == [(v, Reason.STALE, variant, e) for v, _, variant, e in fresh]
        # On the wire: every flag with a value says STALE, the one without keeps DISABLED.
        stale_response = bulk(fp, PRO)
        stale_bulk = ok_bulk(stale_response)
        assert set(stale_bulk) == set(fresh_bulk)
        for name, item in fresh_bulk.items():
            want = dict(item, reason="STALE" if "value" in item else "DISABLED")
            assert stale_bulk[name] == want, name
        assert ok_json(single(fp, "seg_feat", PRO)) == dict(ok_json(fresh_single), reason="STALE")
        # A new ETag: the fresh one is not a match any more; the stale one is.
        stale_etag = stale_response.header("etag")
        assert stale_etag != fresh_etag
        assert bulk(fp, PRO, headers={"If-None-Match": fresh_etag}).status == 200
        assert bulk(fp, PRO, headers={"If-None-Match": stale_etag}).status == 304
        assert ok_json(stale_response)["eventStreams"][0]["endpoint"]["requestUri"].endswith("-stale")
        # The Flagsmith endpoints answer as the SDKs expect: bodies unchanged; readiness says stale.
        assert flagsmith_bodies(fp) == fresh_flagsmith
        readiness = fp.readiness()
        assert (readiness.status, readiness.json()["reason"]) == (503, "environment document(s) stale.")
        assert scrape(fp).get("flagpole_environment_stale", environment=printed_fingerprints(fp)[0]) == 1

        upstream = Upstream(upstream.port).start()
        upstream.set_document(MAIN.server_key, MAIN.document)
        assert stream.wait_for(lambda s: s.events and s.events[-1].id == fresh_id, WAIT), \
            f"no event for the switch back: {stream}\n{fp.stderr_tail()}"
        assert provider_answers() == fresh
        back = bulk(fp, PRO, headers={"If-None-Match": fresh_etag})
        assert back.status == 304, back  # what was cached before the upstream went away is current
        assert ok_bulk(bulk(fp, PRO)) == fresh_bulk
        assert post(fp, BULK, {"context": PRO}, key=MAIN.server_key,
                    headers={"If-None-Match": stale_etag}).status == 200
        wait_until(lambda: fp.readiness().status == 200, WAIT, "readiness never recovered")
        assert scrape(fp).get("flagpole_environment_stale", environment=printed_fingerprints(fp)[0]) == 0

        # A new document: its event is the Flagsmith stream's second, so neither switch was sent.
        newer = make_document(MAIN.client_key, env_id=MAIN.document["id"], revision=1)
        upstream.set_document(MAIN.server_key, newer)
        assert stream.wait_for(lambda s: s.events[-1].id == event_id_of(newer), WAIT), stream
        assert realtime.wait_for(lambda s: len(s.events) >= 2, WAIT), realtime
        assert [e.type for e in realtime.events] == ["environment_updated"] * 2, realtime.events
        assert json.loads(realtime.events[1].data)["updated_at"] == seq_of(newer) / 1000
    finally:
        upstream.stop()
        assert fp.stop() == 0, fp.stderr_tail()
