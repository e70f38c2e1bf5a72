"""Operations: the status page `GET /proxy/status`, as JSON (`Accept: application/json` or
`?format=json`) and as HTML for people, on real `flagpole serve` processes and a real upstream.

Per environment it shows the key fingerprint, source, revision and content revision, the last
successful update and its age, the last error, the document size, requests served per resource
and open streams; and never a key. The HTML page is opened in headless Chromium (playwright-core
and the system Chromium, see tests/browser_support.py; skipped without them): the values it shows
are checked against the JSON, and a screenshot is saved in the test's temporary directory.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime, timezone
from pathlib import Path

from documents import make_document
from metrics_support import FINGERPRINT, OpenStream, printed_fingerprints, scrape, status_json
from serve_harness import Env, local_config, wait_until, write_documents

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # browser_support

from browser_support import PLAYWRIGHT_NODE_DIR, chromium_or_skip, npm_ci, run_node_driver  # noqa: E402

UP = Env("status_up_client", "ser.status_up_server", make_document("status_up_client", name="Up", env_id=3101))
FILE = Env("status_file_client", "ser.status_file_server", make_document("status_file_client", name="File", env_id=3102))
PNG = b"\x89PNG\r\n\x1a\n"


# Seconds within which a timestamp counts as current, or a wait for an event must end: only a
# hang, not a busy machine, takes this long.
RECENT = WAIT = 60

def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def start_mixed(flagpole, upstream, tmp_path, envs_up=(UP,), envs_file=(FILE,), **extra):
    """`envs_up` polled from `upstream`, `envs_file` served from local files."""
    for e in envs_up:
        if e.document:
            upstream.set_document(e.server_key, e.document)
    paths = write_documents(tmp_path / "docs", list(envs_file))
    config = local_config(paths, [*envs_up, *envs_file], api_url=upstream.api_url,
                          api_poll_frequency_seconds=1, api_poll_timeout_seconds=1, **extra)
    return flagpole(config), paths


def by_fingerprint(status: dict) -> dict[str, dict]:
    return {e["environment"]: e for e in status["environments"]}


# ----------------------------------------------------------------------------------------
# JSON
# ----------------------------------------------------------------------------------------


def test_status_json_describes_each_environment(flagpole, upstream, tmp_path):
    fp, (file_path,) = start_mixed(flagpole, upstream, tmp_path)
    fp.wait_ready(WAIT)
    fp_up, fp_file = printed_fingerprints(fp)[::-1]  # files are listed first
    for _ in range(3):
        assert fp.get("/api/v1/flags/", UP.client_key).status == 200
    assert fp.post("/api/v1/identities/", {"identifier": "u"}, UP.server_key).status == 200
    assert fp.get("/api/v1/environment-document/", FILE.server_key).status == 200
    with OpenStream(fp.port, f"/sse/environments/{FILE.client_key}/stream"):
        status = status_json(fp)
    now = datetime.now(timezone.utc)

    assert status["version"] and status["uptime_seconds"] > 0
    # Consistent, and current (not the epoch, not a document's date); a busy machine may add seconds.
    assert abs((now - parse_time(status["started_at"])).total_seconds() - status["uptime_seconds"]) < RECENT
    assert status["open_streams"] == 1
    envs = by_fingerprint(status)
    assert set(envs) == {fp_up, fp_file} and all(FINGERPRINT.match(f) for f in envs), envs
    up, local = envs[fp_up], envs[fp_file]
    assert (up["source"], local["source"]) == ("upstream", "file")
    info = {s.labels["environment"]: s.labels["content_revision"]
            for s in scrape(fp).series("flagpole_environment_info")}
    for e in (up, local):
        assert e["loaded"] is True and e["revision"] == 1, e
        assert e["content_revision"] == info[e["environment"]], (e, info)
        assert e["last_error"] is None, e
        assert abs((now - parse_time(e["last_success"])).total_seconds()) < RECENT, e
        assert 0 <= e["age_seconds"] < RECENT, e
    assert up["document_bytes"] == len(json.dumps(UP.document).encode())
    assert local["document_bytes"] == file_path.stat().st_size
    assert up["requests"] == {"flags": 3, "identities": 1, "environment-document": 0}
    assert local["requests"] == {"flags": 0, "identities": 0, "environment-document": 1}
    assert (up["streams"], local["streams"]) == (0, 1)


def test_status_shows_the_last_upstream_error(flagpole, upstream, tmp_path):
    fp, _ = start_mixed(flagpole, upstream, tmp_path)
    fp.wait_ready(WAIT)
    fp_up = printed_fingerprints(fp)[-1]
    upstream.set_mode("500")

    def failing():
        e = by_fingerprint(status_json(fp))[fp_up]
        return e if e["last_error"] else None

    e = wait_until(failing, WAIT, "no last error after upstream answered 500")
    assert e["last_error"] == "upstream answered 500 Internal Server Error", e
    assert e["loaded"] is True and e["revision"] == 1, "the last good document is still served"
    html = fp.get("/proxy/status").body.decode()
    row = html.split(f'data-environment="{fp_up}"', 1)[1].split("</tr>", 1)[0]
    assert 'class="badge failing"' in row, row
    assert "upstream answered 500 Internal Server Error" in row, row
    assert scrape(fp).get("flagpole_environment_update_failed", environment=fp_up) == 1

    upstream.set_mode("ok")
    wait_until(lambda: by_fingerprint(status_json(fp))[fp_up]["last_error"] is None, WAIT,
               "the error stayed after recovery")
    assert 'class="badge failing"' not in fp.get("/proxy/status").body.decode()


def test_a_stale_environment_is_marked_on_the_page(flagpole, upstream, tmp_path):
    # Grace 1 s: stale once the last success is older than poll + grace × environments.
    fp, _ = start_mixed(flagpole, upstream, tmp_path,
                        health_check={"environment_update_grace_period_seconds": 1})
    fp.wait_ready(WAIT)
    fp_up, fp_file = printed_fingerprints(fp)[::-1]

    def row(fingerprint: str) -> str:
        html = fp.get("/proxy/status").body.decode()
        return html.split(f'data-environment="{fingerprint}"', 1)[1].split("</tr>", 1)[0]

    assert 'data-field="stale"' not in row(fp_up)
    upstream.set_mode("500")
    wait_until(lambda: by_fingerprint(status_json(fp))[fp_up]["stale"], WAIT, "never stale with upstream failing")
    marked = row(fp_up)
    assert 'class="badge stale" data-field="stale"' in marked and ">stale<" in marked, marked
    assert scrape(fp).get("flagpole_environment_stale", environment=fp_up) == 1
    # The page says what the JSON says, environment by environment.
    local_stale = by_fingerprint(status_json(fp))[fp_file]["stale"]
    assert ('data-field="stale"' in row(fp_file)) == local_stale

    upstream.set_mode("ok")
    wait_until(lambda: not by_fingerprint(status_json(fp))[fp_up]["stale"], WAIT, "still stale after recovery")
    assert 'data-field="stale"' not in row(fp_up)


def test_content_negotiation_and_headers(flagpole, tmp_path):
    paths = write_documents(tmp_path / "docs", [FILE])
    fp = flagpole(local_config(paths, [FILE]))
    fp.wait_ready(WAIT)
    browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    cases = [
        ("/proxy/status", {}, "text/html; charset=utf-8"),
        ("/proxy/status", {"Accept": browser}, "text/html; charset=utf-8"),
        ("/proxy/status", {"Accept": "*/*"}, "text/html; charset=utf-8"),
        ("/proxy/status", {"Accept": "application/json"}, "application/json"),
        ("/proxy/status?format=json", {}, "application/json"),
        ("/proxy/status?format=html", {"Accept": "application/json"}, "text/html; charset=utf-8"),
    ]
    for path, headers, content_type in cases:
        r = fp.get(path, headers=headers)
        assert r.status == 200 and r.header("content-type") == content_type, (path, headers, r)
        assert r.header("cache-control") == "no-store", r.headers
        if content_type == "application/json":
            assert json.loads(r.body)["environments"]
        else:
            assert r.body.startswith(b"<!doctype html>"), r.body[:100]
            assert r.header("content-security-policy") == "default-src 'none'; style-src 'unsafe-inline'"
    head = fp.request("HEAD", "/proxy/status")
    assert head.status == 200 and head.body == b"", head
    assert fp.post("/proxy/status", {}).status == 405


def test_keys_are_never_shown(flagpole, tmp_path):
    """Not even when an error message would carry one: here the configured api_url (on a port
    nothing listens on) has the server key in its path, and the error quotes the URL."""
    env = Env("redact_client_key", "ser.redact_server_key_123")
    fp = flagpole({"environment_key_pairs": [env.pair],
                   "api_url": f"http://127.0.0.1:9/{env.server_key}/api/v1",
                   "api_poll_frequency_seconds": 1, "api_poll_timeout_seconds": 1})
    (fingerprint,) = printed_fingerprints(fp)
    e = wait_until(lambda: by_fingerprint(status_json(fp))[fingerprint]["last_error"], WAIT, "no error yet")
    assert "127.0.0.1:9/ser…" in e, e  # the key's place, as its fingerprint
    assert e and e == by_fingerprint(status_json(fp))[fingerprint]["last_error"]
    for body in (fp.get("/proxy/status?format=json").body, fp.get("/proxy/status").body, fp.get("/metrics").body):
        text = body.decode()
        assert env.server_key not in text and env.client_key not in text, text[:2000]
    html = fp.get("/proxy/status").body.decode()
    assert 'class="badge failing"' in html and "not loaded" not in html  # an error wins over "loading"


def test_status_page_can_be_disabled(flagpole, tmp_path):
    paths = write_documents(tmp_path / "docs", [FILE])
    fp = flagpole(local_config(paths, [FILE], flagpole={"status_page": {"enabled": False}}))
    fp.wait_ready(WAIT)
    r = fp.get("/proxy/status")
    assert r.status == 404 and r.json()["status"] == "not_found", r
    assert fp.get("/metrics").status == 200


# ----------------------------------------------------------------------------------------
# The page in a browser
# ----------------------------------------------------------------------------------------

# A client key with markup in it: its fingerprint starts with "<b>", which the page must show as
# text (the key is the document's api_key, so it is served from a file).
MARKUP = Env("<b>&'\"_client_key", "ser.markup_server_key",
             make_document("<b>&'\"_client_key", name="Markup", env_id=3103))
MISSING = Env("status_missing_client", "ser.status_missing_server")  # upstream has no document: 401


def grouped(n: int) -> str:
    return f"{n:,}"


def shown_time(iso: str) -> str:
    return parse_time(iso).strftime("%Y-%m-%d %H:%M:%S UTC")


def test_status_page_in_a_browser(flagpole, upstream, tmp_path):
    chromium = chromium_or_skip()
    npm_ci(PLAYWRIGHT_NODE_DIR)
    fp, _ = start_mixed(flagpole, upstream, tmp_path, envs_up=(UP, MISSING), envs_file=(MARKUP,))
    fp_markup = printed_fingerprints(fp)[0]
    assert fp_markup.startswith("<b>"), fp_markup
    wait_until(lambda: all(e["loaded"] or e["last_error"] for e in status_json(fp)["environments"]), WAIT,
               "environments never settled")
    for _ in range(2):
        assert fp.get("/api/v1/flags/", UP.client_key).status == 200
    assert fp.get("/api/v1/identities/?identifier=x", MARKUP.client_key).status == 200

    screenshot = tmp_path / "status-page.png"
    request = {"url": f"{fp.base_url}/proxy/status", "screenshot": str(screenshot), "width": 1280, "height": 420}
    res = run_node_driver(HERE / "browser" / "status_page.js", request, tmp_path / "driver", chromium)
    status = status_json(fp)
    where = f"(screenshot: {screenshot})"

    assert res["status"] == 200 and res["contentType"] == "text/html; charset=utf-8", res
    assert res["pageErrors"] == [] and res["console"] == [], res
    assert res["requests"] == [request["url"]], "the page must load nothing else"
    assert res["injected"] == 0, "a value became markup"
    assert res["title"] == "Flagpole status"
    summary = res["summary"]
    assert summary["version"] == status["version"]
    assert summary["environment_count"] == "3" and summary["failing_count"] == "1", summary
    assert summary["open_streams"] == "0", summary
    assert summary["started_at"] == shown_time(status["started_at"]), summary
    assert re.fullmatch(r"\d+\.\d s|\d+ min \d+ s", summary["uptime"]), summary

    rows = {r["environment"]: r for r in res["rows"]}
    assert set(rows) == {e["environment"] for e in status["environments"]}, where
    for e in status["environments"]:
        cells, row = rows[e["environment"]]["cells"], rows[e["environment"]]
        assert cells["environment"] == e["environment"], where
        assert cells["source"] == e["source"], where
        assert cells["streams"] == str(e["streams"])
        assert cells["last_error"] == (e["last_error"] or "—"), where
        want_requests = {r: f"{'document' if r == 'environment-document' else r} {grouped(n)}"
                         for r, n in e["requests"].items()}
        assert row["requests"] == want_requests, (row, where)
        if e["loaded"]:
            assert cells["revision"] == str(e["revision"])
            assert cells["content_revision"] == e["content_revision"][:12]
            assert row["titles"]["content_revision"] == e["content_revision"]
            assert cells["document_bytes"] == f"{grouped(e['document_bytes'])} B"
            # Upstream is polled every second: the page may be some polls behind the JSON read after
            # it (never ahead).
            shown = datetime.strptime(cells["last_success"], "%Y-%m-%d %H:%M:%S UTC").replace(tzinfo=timezone.utc)
            assert 0 <= (parse_time(e["last_success"]) - shown).total_seconds() < RECENT, (cells, e)
            assert re.fullmatch(r"\d+\.\d s", cells["age"]), cells
        else:
            assert cells["revision"] == cells["document_bytes"] == cells["age"] == "—", cells
            assert cells["last_success"] == "never", cells
    by_state = {e["environment"]: rows[e["environment"]]["cells"]["state"] for e in status["environments"]}
    assert sorted(by_state.values()) == ["failing", "ok", "ok"], by_state
    missing = next(e for e in status["environments"] if not e["loaded"])
    assert missing["last_error"] == "upstream answered 401 Unauthorized", missing
    assert rows[fp_markup]["requests"]["identities"] == "identities 1"

    data = screenshot.read_bytes()
    assert data.startswith(PNG) and len(data) > 10_000, f"{screenshot}: {len(data)} bytes"
    print(f"status page: {res['browserVersion']}, screenshot {screenshot}")


def test_refused_requests_are_counted_apart_from_served_ones(flagpole, upstream, tmp_path):
    fp, _ = start_mixed(flagpole, upstream, tmp_path)
    fp.wait_ready(10)
    fp_up = printed_fingerprints(fp)[-1]
    for _ in range(2):
        assert fp.get("/api/v1/flags/", UP.client_key).status == 200
    # Refused with the environment's key: no identifier, an unknown feature, a bad OFREP context.
    assert fp.get("/api/v1/identities/", UP.client_key).status == 400
    assert fp.get("/api/v1/flags/?feature=no_such_feature", UP.client_key).status == 404
    assert fp.request("POST", "/ofrep/v1/evaluate/flags", UP.client_key,
                      {"X-API-Key": UP.client_key}, {"context": []}).status == 400
    # Refused before any environment: no key, an unknown key.
    assert fp.get("/api/v1/flags/").status == 401
    assert fp.get("/api/v1/flags/", "not-a-key-anywhere").status == 401

    status = status_json(fp)
    up = by_fingerprint(status)[fp_up]
    assert up["requests"] == {"flags": 2, "identities": 0, "environment-document": 0}, up
    assert up["rejected"] == 3, up
    assert status["unrecognised_keys"] == 2, status
    html = fp.get("/proxy/status").body.decode()
    row = html.split(f'data-environment="{fp_up}"', 1)[1].split("</tr>", 1)[0]
    assert 'data-field="rejected"' in row and ">3<" in row, row
    assert 'data-field="unrecognised_keys">2<' in html
