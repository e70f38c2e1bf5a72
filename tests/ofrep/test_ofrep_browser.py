"""The OFREP web provider in a real browser: `@openfeature/web-sdk` 1.10 with
`@openfeature/ofrep-web-provider` 0.4.3 as ES modules in headless Chromium (playwright-core,
browser/drive.js), on the demo page browser/index.html served from another origin than flagpole's,
so every request is cross-origin (the change stream and CORS; the browser's own fetch and
EventSource).

The page shows some flags; the document is edited so `flag_on` flips (and `text` changes), and the
page must show the new values, through the event stream (how fast is printed, not asserted). A screenshot is saved in the
test's temporary directory. Skipped without node or Chromium (browser_support)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import fixtures as fx
from browser_support import StaticServer, chromium_or_skip, run_node_driver
from fixture_files import write_documents
from serve_harness import Env, local_config
from sse_support import event_id_of, seq_of

HERE = Path(__file__).resolve().parent

BROWSER = Env("ofrep_browser_client", "ser.ofrep_browser_server",
              fx.make_document("ofrep_browser_client", env_id=4501))
CONTEXT = {"targetingKey": "browser-user", "plan": "pro"}
FLAGS = [("text", "string"), ("flag_on", "boolean"), ("num", "number"), ("seg_feat", "string"),
         ("mv", "string")]
# How long a wait for an event may take in the driver: only a hang takes that long. What is
# asserted is that the page followed the edit through the stream, not how fast.
WAIT_MS = 60_000
PNG = b"\x89PNG\r\n\x1a\n"


def flipped_document() -> dict:
    """Revision 1 (`text` → "Hello r1", a later `updated_at`) with `flag_on` disabled."""
    doc = fx.make_document(BROWSER.client_key, env_id=BROWSER.document["id"], revision=1)
    doc = copy.deepcopy(doc)
    (fs,) = [f for f in doc["feature_states"] if f["feature"]["name"] == "flag_on"]
    fs["enabled"] = False
    return doc


def shown(document: dict) -> dict[str, dict]:
    """What the page shows per flag: .value (a string as is, else JSON) and .meta (reason, variant)."""
    items = fx.expected_items(document, CONTEXT, server=False)
    out = {}
    for flag, _ in FLAGS:
        item = items[flag]
        value = item["value"]
        meta = [item["reason"]] + ([f"variant {item['variant']}"] if item.get("variant") else [])
        out[flag] = {"value": value if isinstance(value, str) else json.dumps(value, separators=(",", ":")),
                     "json": json.dumps(value, separators=(",", ":")), "meta": " · ".join(meta)}
    return out


def test_browser_demo_page_follows_a_change(start_flagpole, node_ofrep_dir, tmp_path):
    chromium = chromium_or_skip()
    doc0, doc1 = BROWSER.document, flipped_document()
    before, after = shown(doc0), shown(doc1)
    assert (before["flag_on"]["value"], after["flag_on"]["value"]) == ("true", "false"), (before, after)
    assert (before["text"]["value"], after["text"]["value"]) == ("Hello", "Hello r1"), (before, after)

    with StaticServer(HERE) as static:
        paths = write_documents(tmp_path / "docs", [BROWSER])
        config = local_config(paths, [BROWSER], allow_origins=[static.origin])
        fp = start_flagpole(config=config, workdir=tmp_path / "fp", serving_key=BROWSER.server_key)
        query = urlencode({"baseUrl": fp.base_url, "key": BROWSER.client_key,
                           "flags": ",".join(f"{n}:{t}" for n, t in FLAGS), "context": json.dumps(CONTEXT)})
        screenshot = tmp_path / "browser-demo.png"
        request = {
            "pageUrl": f"{static.origin}/browser/index.html?{query}",
            "apiOrigin": fp.base_url,
            "before": {f: v["value"] for f, v in before.items()},
            "after": {f: v["value"] for f, v in after.items()},
            "docPath": str(paths[0]),
            "nextDocument": json.dumps(doc1, indent=1),
            "waitMs": WAIT_MS,
            "screenshot": str(screenshot),
        }
        res = run_node_driver(HERE / "browser" / "drive.js", request, tmp_path / "driver", chromium)
        served = list(static.served)

    where = f"(screenshot: {screenshot}; driver output: {tmp_path / 'driver' / 'driver-out.json'})"
    # The page and its modules came from the static server, every one of them.
    assert [s for s in served if s[1] != 200] == [], served
    assert res["pageErrors"] == [], res["pageErrors"]
    assert [c for c in res["console"] if c["type"] in ("error", "warning")] == [], res["console"]
    assert res["failed"] == [], res["failed"]

    # Initial render: every flag as the reference engine evaluates it.
    assert res["ready"]["at"] is not None, f"the page never showed {request['before']}: {res['ready']} {where}"
    assert res["ready"]["flags"] == before, where
    assert res["streamOpen"], res["requests"]

    # The edit reaches the page through the stream.
    edit = res["edit"]
    assert edit["seenAt"] is not None, f"no change on the page within {request['waitMs']} ms: {edit} {where}"
    assert res["after"]["flags"] == after, where
    assert res["status"] == "READY", res["status"]
    changes = [e for e in res["demo"]["events"] if e["event"] == "ConfigurationChanged"]
    assert len(changes) == 1, res["demo"]["events"]
    assert {"flag_on", "text"} <= set(changes[0]["flagsChanged"] or []), changes

    # What the browser sent and got, cross-origin: the bulk POST at init, the stream, one refetch.
    origin = static.origin
    reqs = res["requests"]
    bulk_url = fp.base_url + "/ofrep/v1/evaluate/flags"
    posts = [r for r in reqs if r["method"] == "POST"]
    streams = [r for r in reqs if r["type"] == "eventsource"]
    assert [r["method"] for r in reqs if r not in posts + streams] == [], reqs
    assert len(posts) == 2 and len(streams) >= 1, reqs
    init, refetch = posts
    for r in reqs:
        assert r["headers"].get("origin") == origin, r
        assert r.get("status") is not None, r
        rh = r["responseHeaders"]
        assert rh.get("access-control-allow-origin") == origin, r
        assert "origin" in rh.get("vary", "").lower(), r
    assert init["url"] == bulk_url and init["status"] == 200, init
    assert init["headers"].get("x-api-key") == BROWSER.client_key, init
    assert "if-none-match" not in init["headers"], init
    etag0 = init["responseHeaders"]["etag"]
    assert init["responseHeaders"]["access-control-expose-headers"] == "ETag, Retry-After", init
    # The stream: advertised as `endpoint` (resolved against baseUrl), opened with since = the current id.
    stream = streams[0]
    assert stream["method"] == "GET" and stream["status"] == 200, stream
    assert stream["url"].startswith(fp.base_url + "/ofrep/v1/events?"), stream
    assert parse_qs(urlsplit(stream["url"]).query)["since"] == [event_id_of(doc0)], stream
    assert stream["responseHeaders"]["content-type"].startswith("text/event-stream"), stream
    # The refetch came after the edit, carried the event's revision and the ETag the page could read
    # (exposed by CORS), and got a new 200.
    assert refetch["at"] >= edit["at"], (refetch, edit)
    assert refetch["url"].startswith(bulk_url + "?"), refetch
    assert parse_qs(urlsplit(refetch["url"]).query) == {
        "flagConfigEtag": [fx.revision_of(doc1)], "flagConfigLastModified": [str(seq_of(doc1) // 1000)]}, refetch
    assert refetch["headers"].get("if-none-match") == etag0, refetch
    assert refetch["status"] == 200 and refetch["responseHeaders"]["etag"] != etag0, refetch

    data = screenshot.read_bytes()
    assert data.startswith(PNG) and len(data) > 10_000, f"{screenshot}: {len(data)} bytes"
    took = edit["seenAt"] - edit["at"]
    print(f"browser demo: {res['browserVersion']}, change shown after {took} ms, screenshot {screenshot}")
