"""OFREP evaluation (the OFREP specification's endpoints; the mapping of docs/ofrep.md):
values, reasons, variants, metadata and filtering, against the reference engine's answers
for the fixture documents.
"""

from __future__ import annotations

import hashlib
import re

import pytest

import fixtures as fx
from ofrep_support import (
    BULK,
    HIDE,
    MAIN,
    SINGLE,
    assert_error,
    assert_item,
    bulk,
    flag_path,
    ok_bulk,
    ok_single,
    post,
    single,
)
from serve_harness import http_request

KINDS = [pytest.param(True, id="server-key"), pytest.param(False, id="client-key")]


def key_of(env, server: bool) -> str:
    return env.server_key if server else env.client_key


# --------------------------------------------------------------------------------------------
# Line 1: booleans and disabled flags
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("server", KINDS)
def test_boolean_and_disabled_flags(srv, server):
    key = key_of(MAIN, server)
    on = ok_single(single(srv, "flag_on", key=key), "flag_on")
    assert (on["value"], on["reason"], on["variant"]) == (True, "STATIC", "enabled"), on
    off = ok_single(single(srv, "flag_off", key=key), "flag_off")
    assert (off["value"], off["reason"], off["variant"]) == (False, "DISABLED", "disabled"), off
    text_off = ok_single(single(srv, "text_off", key=key), "text_off")
    assert "value" not in text_off, f"a disabled string flag must have no value (ADR-0006): {text_off}"
    assert (text_off["reason"], text_off["variant"]) == ("DISABLED", "disabled"), text_off
    # The rest of the value rules: "" reads as true; a disabled boolean value reads as false; a
    # disabled number has no value; an enabled `false` stays false.
    want = fx.expected_items(MAIN.document, None, server=server)
    for name, value in [("empty_on", True), ("bool_off", False), ("num_off", None), ("bool_false_on", False)]:
        got = ok_single(single(srv, name, key=key), name)
        if value is None:
            assert "value" not in got, got
        else:
            assert got["value"] is value, got
        assert_item(got, want[name], name)
    for name in ("flag_on", "flag_off", "text_off"):
        assert_item(ok_single(single(srv, name, key=key), name), want[name], name)


# --------------------------------------------------------------------------------------------
# Line 2: JSON types; parse_json_strings
# --------------------------------------------------------------------------------------------


def test_values_keep_their_json_types(srv, opts_srv):
    got = {n: ok_single(single(srv, n), n)["value"] for n in ("text", "num", "ratio", "obj", "json_text")}
    assert got["text"] == "Hello" and isinstance(got["text"], str)
    assert got["num"] == 10 and type(got["num"]) is int, f"10 must stay a JSON integer: {got['num']!r}"
    assert got["ratio"] == 2.5 and type(got["ratio"]) is float
    assert got["obj"] == fx.FEATURES["obj"][2]
    assert got["json_text"] == '{"a":1}', "parse_json_strings is off by default"
    raw = single(srv, "num").body
    assert re.search(rb'"value":\s*10\s*,', raw), raw  # not 10.0

    # parse_json_strings: true (the options server also requires a targetingKey).
    ctx = {"targetingKey": "u1"}
    assert ok_single(single(opts_srv, "json_text", ctx), "json_text")["value"] == {"a": 1}
    assert ok_single(single(opts_srv, "json_list", ctx), "json_list")["value"] == [1, "x"]
    assert ok_single(single(opts_srv, "json_bad", ctx), "json_bad")["value"] == "{not json"
    assert ok_single(single(opts_srv, "text", ctx), "text")["value"] == "Hello"
    assert ok_single(single(opts_srv, "num", ctx), "num")["value"] == 10
    want = fx.expected_items(MAIN.document, ctx, server=True, parse_json_strings=True)
    items = ok_bulk(bulk(opts_srv, ctx))
    assert items.keys() == want.keys()
    for name, item in items.items():
        assert_item(item, want[name], name)


# --------------------------------------------------------------------------------------------
# Line 3: empty contexts evaluate at environment level
# --------------------------------------------------------------------------------------------

EMPTY_BODIES = [
    pytest.param(b'{"context":{}}', id="context-empty-object"),
    pytest.param(b"{}", id="no-context"),
    pytest.param(b'{"context":null}', id="context-null"),
    pytest.param(b"", id="empty-body"),
    pytest.param(None, id="no-body"),
    pytest.param(b'{"context":{"targetingKey":null}}', id="targetingKey-null"),
    pytest.param(b'{"context":{"targetingKey":""}}', id="targetingKey-empty"),
]


@pytest.mark.parametrize("raw", EMPTY_BODIES)
@pytest.mark.parametrize("server", KINDS)
def test_empty_context_is_environment_level(srv, raw, server):
    key = key_of(MAIN, server)
    headers = {"X-API-Key": key}
    want = fx.expected_items(MAIN.document, None, server=server)
    reference_bulk = bulk(srv, {}, key=key)
    resp = post(srv, BULK, headers=headers, raw=raw)
    items = ok_bulk(resp)
    assert items.keys() == want.keys()
    for name, item in items.items():
        assert_item(item, want[name], name)
    assert resp.body == reference_bulk.body
    assert resp.header("etag") == reference_bulk.header("etag")
    # Segments are not evaluated without an identity, even one that would match (env name).
    assert items["env_seg"]["value"] == "env-default"
    for name in ("seg_feat", "env_seg", "mv", "text"):
        r = post(srv, flag_path(name), headers=headers, raw=raw)
        assert_item(ok_single(r, name), want[name], name)
        assert r.header("etag") == single(srv, name, {}, key=key).header("etag")


# --------------------------------------------------------------------------------------------
# Line 4: targeting
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("server", KINDS)
def test_targeting(srv, server):
    key = key_of(MAIN, server)
    flat = {"targetingKey": "u1", "plan": "pro"}
    hit = ok_single(single(srv, "seg_feat", flat, key=key), "seg_feat")
    assert (hit["value"], hit["reason"]) == ("pro-value", "TARGETING_MATCH"), hit
    assert_item(hit, fx.expected_items(MAIN.document, flat, server=server)["seg_feat"])

    # Without a targetingKey, traits are ignored: environment level.
    no_id = ok_single(single(srv, "seg_feat", {"plan": "pro"}, key=key), "seg_feat")
    assert (no_id["value"], no_id["reason"]) == ("default", "DEFAULT"), no_id
    assert_item(no_id, fx.expected_items(MAIN.document, None, server=server)["seg_feat"])

    # `traits` holding an object: its scalar members are traits.
    nested = single(srv, "seg_feat", {"targetingKey": "u1", "traits": {"plan": "pro"}}, key=key)
    assert ok_single(nested, "seg_feat") == hit
    # Flat members win conflicts.
    conflict = single(srv, "seg_feat", {"targetingKey": "u1", "plan": "free", "traits": {"plan": "pro"}}, key=key)
    assert ok_single(conflict, "seg_feat")["value"] == "default"
    conflict2 = single(srv, "seg_feat", {"targetingKey": "u1", "plan": "pro", "traits": {"plan": "free"}}, key=key)
    assert ok_single(conflict2, "seg_feat")["value"] == "pro-value"
    # Objects, arrays and nulls are ignored (not rejected), in both endpoints.
    noisy = {"targetingKey": "u1", "plan": "pro", "address": {"city": "Paris"}, "tags": ["a", 1],
             "nothing": None, "traits": {"deep": {"x": 1}, "list": [1], "none": None}}
    assert single(srv, "seg_feat", noisy, key=key).body == single(srv, "seg_feat", flat, key=key).body
    assert bulk(srv, noisy, key=key).body == bulk(srv, flat, key=key).body
    # A null trait is "not set", not a value: plan null does not match plan == "pro".
    assert ok_single(single(srv, "seg_feat", {"targetingKey": "u1", "plan": None}, key=key),
                     "seg_feat")["value"] == "default"
    # Identity-only segments and identity overrides apply with an identity.
    assert ok_single(single(srv, "env_seg", {"targetingKey": "u1"}, key=key), "env_seg")["value"] == "env-segment"
    over = ok_single(single(srv, "text", {"targetingKey": fx.OVERRIDE_USER}, key=key), "text")
    assert (over["value"], over["reason"]) == ("Hi override", "TARGETING_MATCH"), over
    # The identifier is exact: no trimming, no case folding.
    assert ok_single(single(srv, "text", {"targetingKey": fx.OVERRIDE_USER.upper()}, key=key), "text")["value"] == "Hello"
    assert ok_single(single(srv, "text", {"targetingKey": f" {fx.OVERRIDE_USER}"}, key=key), "text")["value"] == "Hello"


# --------------------------------------------------------------------------------------------
# Line 5: multivariate
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mv_users():
    return fx.mv_identities(MAIN.document)


@pytest.mark.parametrize("server", KINDS)
def test_multivariate(srv, mv_users, server):
    key = key_of(MAIN, server)

    def mv(identifier):
        ctx = {"targetingKey": identifier}
        item = ok_single(single(srv, "mv", ctx, key=key), "mv")
        assert_item(item, fx.expected_items(MAIN.document, ctx, server=server)["mv"], identifier)
        return item

    for option, value in (("red", "red-value"), ("blue", "blue-value")):
        for identifier in mv_users[option]:
            item = mv(identifier)
            assert (item["value"], item["reason"], item["variant"]) == (value, "SPLIT", option), item
            if server:
                assert item["metadata"]["flagsmithReason"] == "SPLIT; weight=30", item
    for identifier in mv_users["control"]:
        item = mv(identifier)
        assert (item["value"], item["reason"], item["variant"]) == ("control-value", "DEFAULT", "control"), item
    unkeyed = "mv-" + hashlib.sha256(b'"green-value"').hexdigest()[:8]
    for identifier in mv_users["unkeyed"]:
        item = mv(identifier)
        assert (item["value"], item["reason"], item["variant"]) == ("green-value", "SPLIT", unkeyed), item
        assert re.fullmatch(r"mv-[0-9a-f]{8}", item["variant"])
    # Without an identity there is no split: the control value, variant "enabled".
    env = ok_single(single(srv, "mv", {}, key=key), "mv")
    assert (env["value"], env["reason"], env["variant"]) == ("control-value", "DEFAULT", "enabled"), env


# --------------------------------------------------------------------------------------------
# Line 9: unknown flags
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("server", KINDS)
def test_unknown_flag_is_404(srv, server):
    key = key_of(MAIN, server)
    for name, ctx in [("nope", None), ("nope", {"targetingKey": "u1", "plan": "pro"}),
                      ("FLAG_ON", None), ("Flag_On", None), ("flag_on ", None)]:
        assert_error(single(srv, name, ctx, key=key), 404, "FLAG_NOT_FOUND", key=name)


# --------------------------------------------------------------------------------------------
# Line 10: server-key-only features
# --------------------------------------------------------------------------------------------


def test_server_only_feature(srv):
    for ctx in (None, {"targetingKey": "u1", "plan": "pro"}):
        assert_error(single(srv, "secret", ctx, key=MAIN.client_key), 404, "FLAG_NOT_FOUND", key="secret")
        assert "secret" not in ok_bulk(bulk(srv, ctx, key=MAIN.client_key))
        got = ok_single(single(srv, "secret", ctx, key=MAIN.server_key), "secret")
        assert got["value"] == "s3cret", got
        assert ok_bulk(bulk(srv, ctx, key=MAIN.server_key))["secret"] == got


# --------------------------------------------------------------------------------------------
# Line 11: hide_disabled_flags
# --------------------------------------------------------------------------------------------


def test_hide_disabled_flags_affects_client_keys_only(srv):
    disabled = ["flag_off", "text_off", "num_off", "bool_off", "pro_only"]
    client = ok_bulk(bulk(srv, key=HIDE.client_key))
    server = ok_bulk(bulk(srv, key=HIDE.server_key))
    for name in disabled:
        assert name not in client, name
        assert_error(single(srv, name, key=HIDE.client_key), 404, "FLAG_NOT_FOUND", key=name)
        assert server[name]["reason"] == "DISABLED", server[name]
        assert ok_single(single(srv, name, key=HIDE.server_key), name) == server[name]
    assert client["flag_on"]["value"] is True
    assert "secret" not in client and "secret" in server
    # Filtering follows the evaluation: pro_only is enabled for a pro identity, so it is visible.
    pro = {"targetingKey": "u1", "plan": "pro"}
    assert ok_bulk(bulk(srv, pro, key=HIDE.client_key))["pro_only"]["value"] == "pro-feature"
    assert ok_single(single(srv, "pro_only", pro, key=HIDE.client_key), "pro_only")["reason"] == "TARGETING_MATCH"
    # The same features in a document without hide_disabled_flags reach client keys.
    main_client = ok_bulk(bulk(srv, key=MAIN.client_key))
    for name in disabled:
        assert main_client[name]["reason"] == "DISABLED", name
    for is_server, items in ((False, client), (True, server)):
        want = fx.expected_items(HIDE.document, None, server=is_server)
        assert items.keys() == want.keys()
        for name, item in items.items():
            assert_item(item, want[name], name)


# --------------------------------------------------------------------------------------------
# Line 12: routing
# --------------------------------------------------------------------------------------------


def test_routing(srv):
    want = ok_single(single(srv, "a/b"), "a/b")
    assert want["value"] == "slash"
    for path in (SINGLE + "a/b", SINGLE + "a%2Fb", SINGLE + "a%2fb", "//ofrep/v1/evaluate/flags/a/b"):
        r = post(srv, path, {}, key=MAIN.server_key)
        assert ok_single(r, "a/b") == want, path
    cafe = ok_single(post(srv, SINGLE + "caf%C3%A9", {}, key=MAIN.server_key), "café")
    assert cafe["value"] == "unicode"
    # Invalid UTF-8 after percent-decoding → 404.
    assert post(srv, SINGLE + "caf%C3", {}, key=MAIN.server_key).status == 404
    assert post(srv, SINGLE + "%FF", {}, key=MAIN.server_key).status == 404

    reference = bulk(srv)
    ok_bulk(reference)
    for path in ("//ofrep/v1/evaluate/flags", "///ofrep/v1/evaluate/flags", BULK + "/",
                 BULK + "?flagConfigEtag=x&unknown=1", "//ofrep/v1/evaluate/flags/"):
        r = post(srv, path, {}, key=MAIN.server_key)
        ok_bulk(r)
        assert r.body == reference.body, path
        assert r.header("etag") == reference.header("etag"), path
    r = post(srv, "//ofrep/v1/evaluate/flags/flag_on?utm=1", {}, key=MAIN.server_key)
    assert ok_single(r, "flag_on")["value"] is True

    # Other methods → 405 with Allow.
    for path in (BULK, SINGLE + "flag_on"):
        for method in ("GET", "PUT", "DELETE", "PATCH"):
            r = http_request(srv.port, method, path, {"X-API-Key": MAIN.server_key})
            assert r.status == 405, (method, path, r)
            allow = {m.strip().upper() for m in (r.header("allow") or "").split(",")}
            assert "POST" in allow and method not in allow, (method, path, r)


# --------------------------------------------------------------------------------------------
# Line 18: reasons, variants, metadata; agreement with the reference on many contexts
# --------------------------------------------------------------------------------------------


def sweep_contexts(mv_users) -> list[dict | None]:
    contexts: list[dict | None] = [None, {"plan": "pro"}, {"targetingKey": fx.OVERRIDE_USER},
                                   {"targetingKey": "u1", "plan": "pro"}, {"targetingKey": "u2", "plan": "free"},
                                   {"targetingKey": "u3", "traits": {"plan": "pro"}, "age": 31, "beta": True}]
    for users in mv_users.values():
        contexts.append({"targetingKey": users[0]})
    return contexts


@pytest.mark.parametrize("env", [pytest.param(MAIN, id="main"), pytest.param(HIDE, id="hide-disabled")])
@pytest.mark.parametrize("server", KINDS)
def test_reasons_variants_metadata(srv, mv_users, env, server):
    key = key_of(env, server)
    seen_reasons = set()
    for ctx in sweep_contexts(mv_users):
        want = fx.expected_items(env.document, ctx, server=server)
        got = ok_bulk(bulk(srv, ctx, key=key))
        assert got.keys() == want.keys(), (ctx, sorted(got), sorted(want))
        for name, item in got.items():
            where = f"{name} in {ctx}"
            assert item["reason"] in fx.OFREP_REASONS, where
            assert isinstance(item.get("variant"), str) and item["variant"], where
            meta = item["metadata"]
            assert all(isinstance(v, (str, int, float, bool)) for v in meta.values()), where
            if server:
                assert list(meta)[:3] == ["flagsmithFeatureId", "flagsmithEnabled", "flagsmithReason"], where
                assert ("flagsmithSegment" in meta) == (item["reason"] == "TARGETING_MATCH"
                                                        and meta["flagsmithReason"].startswith("TARGETING_MATCH")), where
            else:
                assert list(meta) == ["flagsmithFeatureId", "flagsmithEnabled"], where
            assert list(item) == [k for k in ("key", "value", "reason", "variant", "metadata") if k in item], where
            assert_item(item, want[name], where)
            seen_reasons.add(item["reason"])
        # The single-flag endpoint agrees with bulk, item for item.
        for name in ("seg_feat", "mv", "text", "pro_only", "flag_off"):
            if name in want:
                assert ok_single(single(srv, name, ctx, key=key), name) == got[name], (name, ctx)
    hidden = not server and env.document["project"]["hide_disabled_flags"]
    assert {"STATIC", "DEFAULT", "TARGETING_MATCH", "SPLIT"} | (set() if hidden else {"DISABLED"}) == seen_reasons


def test_client_keys_never_see_segment_names(srv):
    ctx = {"targetingKey": fx.OVERRIDE_USER, "plan": "pro"}
    for env in (MAIN, HIDE):
        raw = bulk(srv, ctx, key=env.client_key).body
        assert b"flagsmithSegment" not in raw and b"flagsmithReason" not in raw
        assert b"identity_overrides" not in raw and b"this_env" not in raw and b'"pro"' not in raw
        server_items = ok_bulk(bulk(srv, ctx, key=env.server_key))
        assert server_items["seg_feat"]["metadata"]["flagsmithSegment"] == "pro"
        assert server_items["text"]["metadata"]["flagsmithSegment"] == "identity_overrides"
