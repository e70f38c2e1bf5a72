"""The JS web provider against flagpole (it follows the change stream):
`@openfeature/web-sdk` 1.10 with `@openfeature/ofrep-web-provider` 0.4.3 in Node, `eventsource` 4
as the EventSource, through node/web.js: reads, a change delivered by the event stream, polling
revalidation (304s), a context change, and a bad key."""

from __future__ import annotations

import json
import shutil
import subprocess
from urllib.parse import parse_qs, urlsplit

import fixtures as fx
from fixture_files import write_documents
from serve_harness import Env, local_config
from sse_support import event_id_of, events_path, seq_of, sse_token

WEB = Env("ofrep_web_client", "ser.ofrep_web_server", fx.make_document("ofrep_web_client", env_id=4401))
CONTEXT = {"targetingKey": "web-user", "plan": "free"}
NEW_CONTEXT = {"targetingKey": "web-user", "plan": "pro"}
READS = [
    ["boolean", "flag_on", False],
    ["boolean", "flag_off", True],
    ["string", "text_off", "d"],
    ["string", "text", "x"],
    ["number", "num", 0],
    ["number", "ratio", 0],
    ["object", "obj", {}],
    ["string", "seg_feat", "x"],
    ["string", "pro_only", "x"],
    ["string", "mv", "x"],
    ["boolean", "empty_on", False],
    ["string", "secret", "fallback"],  # server-key only: absent for a client key
    ["boolean", "nope", True],
    ["number", "text", 0],  # a string read as a number
]
# How long a wait for an event may take in the driver: only a hang takes that long. What is
# asserted is what happened (the change came through the stream: one refetch carrying the event's
# `flagConfigEtag`), not how fast.
WAIT_MS = 60_000
POLLS = 3


def expected_reads(document: dict, context: dict) -> list[dict]:
    """What the web SDK returns for READS: the provider caches the bulk answer and reads from it
    (a missing key → FLAG_NOT_FOUND, another JSON type → TYPE_MISMATCH, no value → the default)."""
    items = fx.expected_items(document, context, server=False)
    kinds = {bool: "boolean", str: "string", int: "number", float: "number", dict: "object", list: "object"}
    out = []
    for typ, flag, default in READS:
        item = items.get(flag)
        if item is None:
            want = {"value": default, "variant": None, "reason": "ERROR", "errorCode": "FLAG_NOT_FOUND"}
        elif "value" not in item:
            want = {"value": default, "variant": item["variant"], "reason": item["reason"], "errorCode": None}
        elif kinds[type(item["value"])] != typ:
            want = {"value": default, "variant": None, "reason": "ERROR", "errorCode": "TYPE_MISMATCH"}
        else:
            want = {"value": item["value"], "variant": item["variant"], "reason": item["reason"], "errorCode": None}
        out.append(dict(flag=flag, **want))
    return out


def diff(got: list[dict], want: list[dict], what: str) -> list[str]:
    return [f"{what} {w['flag']}: got {g}, want {w}" for g, w in zip(got, want) if g != w]


def query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def test_js_web_provider(start_flagpole, node_ofrep_dir, tmp_path):
    paths = write_documents(tmp_path / "docs", [WEB])
    fp = start_flagpole(config=local_config(paths, [WEB]), workdir=tmp_path / "web", serving_key=WEB.server_key)
    doc0 = WEB.document
    doc1 = fx.make_document(WEB.client_key, env_id=WEB.document["id"], revision=1)
    rev0, rev1 = fx.revision_of(doc0), fx.revision_of(doc1)
    token = sse_token(WEB.client_key, WEB.server_key)

    request = {
        "baseUrl": fp.base_url,
        "headers": [["X-API-Key", WEB.client_key]],
        "badHeaders": [["X-API-Key", "not_a_key"]],
        "context": CONTEXT,
        "newContext": NEW_CONTEXT,
        "reads": READS,
        "docPath": str(paths[0]),
        "nextDocument": json.dumps(doc1, indent=1),
        "changedFlag": "text",
        "changedValue": "Hello r1",
        "waitMs": WAIT_MS,
        "polls": POLLS,
        "settleMs": 600,
    }
    inp, out = tmp_path / "in.json", tmp_path / "out.json"
    inp.write_text(json.dumps(request))
    proc = subprocess.run([shutil.which("node"), str(node_ofrep_dir / "web.js"), str(inp), str(out)],
                          cwd=node_ofrep_dir, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"node run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    res = json.loads(out.read_text())
    fetches = res["fetches"]
    bulk_url = fp.base_url + "/ofrep/v1/evaluate/flags"

    def of(provider: str, start: float = 0, end: float = float("inf")) -> list[dict]:
        return [f for f in fetches if f["provider"] == provider and start <= f["at"] <= end]

    # A bad key: initialisation fails for good (401 → PROVIDER_FATAL).
    bad = res["bad"]
    assert bad["initError"] is not None, bad
    assert bad["details"]["errorCode"] == "PROVIDER_FATAL" and bad["details"]["value"] is False, bad
    assert [f["status"] for f in of("bad")] == [401], of("bad")

    # Reads as the JS server provider's (client key), except that text_off is the default with DISABLED and no error.
    problems = diff(res["initial"], expected_reads(doc0, CONTEXT), "initial")
    text_off = res["initial"][2]
    assert (text_off["value"], text_off["reason"], text_off["errorCode"]) == ("d", "DISABLED", None), text_off

    # Init: one bulk POST (200), then the advertised stream, opened with `since` = the current id.
    web = of("web")
    assert web and web[0]["url"] == bulk_url and web[0]["status"] == 200 and web[0]["ifNoneMatch"] is None, web
    etag0 = web[0]["etag"]
    assert res["sseOpened"], res["eventSources"]
    first_es = res["eventSources"][0]
    assert first_es["url"] == fp.base_url + events_path(token, event_id_of(doc0)), first_es

    # The edit: ConfigurationChanged and the new value, through a bulk POST carrying
    # flagConfigEtag (and flagConfigLastModified) from the event, revalidating with the old ETag.
    edit = res["edit"]
    assert edit.get("changedAt") is not None and edit.get("valueAt") is not None, \
        f"no change seen within {request['waitMs']} ms: {edit} {res['configurationChanged']}"
    assert "text" in (res["configurationChanged"]["web"][0]["flagsChanged"] or []), res["configurationChanged"]
    refetches = [f for f in of("web", edit["at"]) if f["at"] <= res["poll"]["from"]]
    assert len(refetches) == 1, refetches
    r = refetches[0]
    assert r["url"].startswith(bulk_url + "?"), r
    assert query(r["url"]) == {"flagConfigEtag": rev1, "flagConfigLastModified": str(seq_of(doc1) // 1000)}, r
    assert (r["ifNoneMatch"], r["status"]) == (etag0, 200) and r["etag"] != etag0, r
    assert first_es["messages"] >= 1, res["eventSources"]
    problems += diff(res["afterEdit"], expected_reads(doc1, CONTEXT), "after the edit")
    # Nothing before the edit: connecting with the current `since` sends no event (catch-up only sends what is newer).
    assert [f for f in of("web", 0, edit["at"]) if f is not web[0]] == [], of("web", 0, edit["at"])

    # Polling (no change): every poll revalidates with the ETag and gets a 304; nothing changes.
    # Answered ones (closing the provider may cut one short).
    polls = [f for f in of("poll") if "status" in f]
    assert len(polls) > POLLS, polls
    assert polls[0]["status"] == 200 and polls[0]["ifNoneMatch"] is None, polls
    for p in polls[1:]:
        assert p["url"] == bulk_url, p
        assert (p["ifNoneMatch"], p["status"]) == (polls[0]["etag"], 304), p
    assert res["configurationChanged"]["poll"] == [], res["configurationChanged"]["poll"]
    problems += diff(res["poll"]["initial"], expected_reads(doc1, CONTEXT), "polling, initial")
    problems += diff(res["poll"]["after"], expected_reads(doc1, CONTEXT), "polling, after")
    assert len(res["eventSources"]) >= 1 and all(e["url"] == first_es["url"] or "since" in e["url"]
                                                 for e in res["eventSources"])

    # setContext, same targetingKey: the old ETag is sent, and the new context gets a 200 with
    # re-targeted values (the ETag covers the context).
    cc = res["contextChange"]
    changes = of("web", cc["from"], cc["to"])
    assert len(changes) == 1, changes
    c = changes[0]
    assert c["url"] == bulk_url and c["ifNoneMatch"] == r["etag"] and c["status"] == 200, c
    problems += diff(cc["reads"], expected_reads(doc1, NEW_CONTEXT), "after setContext")
    seg = cc["reads"][READS.index(["string", "seg_feat", "x"])]
    assert (seg["value"], seg["reason"]) == ("pro-value", "TARGETING_MATCH"), seg
    # The provider reconnected to the stream advertised now (since = the current id); that
    # connection sent nothing at once, so no further refetch.
    assert res["eventSources"][-1]["url"] == fp.base_url + events_path(token, event_id_of(doc1)), res["eventSources"]
    assert len([f for f in fetches if "flagConfigEtag" in f["url"]]) == 1, fetches
    assert not problems, "\n".join(problems)
    assert rev0 != rev1
