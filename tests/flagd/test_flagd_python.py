"""The Python flagd provider (openfeature-provider-flagd 0.6.1, RPC mode: gRPC,
flagd.evaluation.v2) against Flagpole's flagd front door: every value compared with the
reference engine, targeting, splits, errors, client-key filtering, change events, reconnects,
several domain-scoped providers through changes and a restart, `STALE` answers while the
upstream is away (the provider, and `ResolveAll` over gRPC and Connect)."""

from __future__ import annotations

import base64
import itertools
import json
import threading

import grpc
import pytest
from openfeature import api
from openfeature.contrib.provider.flagd import FlagdProvider
from openfeature.contrib.provider.flagd.config import CacheType, ResolverType
from openfeature.evaluation_context import EvaluationContext
from openfeature.event import ProviderEvent
from openfeature.exception import ErrorCode
from openfeature.schemas.protobuf.flagd.evaluation.v1 import evaluation_pb2 as v1
from openfeature.schemas.protobuf.flagd.evaluation.v1 import evaluation_pb2_grpc as v1_grpc
from openfeature.schemas.protobuf.flagd.evaluation.v2 import evaluation_pb2 as v2
from openfeature.schemas.protobuf.flagd.evaluation.v2 import evaluation_pb2_grpc as v2_grpc

import fixtures as fx
from flagd_support import (
    LIVE,
    MAIN,
    DEFAULTS,
    Events,
    domains_case,
    flagd_config,
    flagd_expected,
    ofrep_expected,
    polled_flagd,
    resolver_for,
    stale_case,
)
from serve_harness import Upstream, wait_until

_domains = itertools.count()


def client_for(port: int, key: str, **kwargs):
    """A client of a fresh provider in its own domain (RPC mode, the key as the selector)."""
    domain = f"flagd-{next(_domains)}"
    provider = FlagdProvider(host="127.0.0.1", port=port, selector=key,
                             resolver_type=ResolverType.RPC, deadline_ms=5000, **kwargs)
    api.set_provider_and_wait(provider, domain)
    return api.get_client(domain), provider


def details(client, resolver: str, name: str, default, ctx: EvaluationContext | None):
    return getattr(client, f"get_{resolver}_details")(name, default, ctx)


def context_of(ctx: dict | None) -> EvaluationContext | None:
    if ctx is None:
        return None
    attrs = {k: v for k, v in ctx.items() if k != "targetingKey"}
    return EvaluationContext(ctx.get("targetingKey"), attrs)


CONTEXTS = [
    None,
    {"targetingKey": "u1", "plan": "pro"},
    {"targetingKey": "u1", "plan": "free"},
    {"targetingKey": fx.OVERRIDE_USER},
    {"targetingKey": "lvl", "level": 1},
]


@pytest.mark.parametrize("server", [True, False], ids=["server-key", "client-key"])
def test_every_flag_equals_the_reference(flagd_srv, server):
    key = MAIN.server_key if server else MAIN.client_key
    client, _ = client_for(flagd_srv.grpc_port, key, cache=CacheType.DISABLED)
    mv_users = fx.mv_identities(MAIN.document, 2)
    contexts = CONTEXTS + [{"targetingKey": u} for users in mv_users.values() for u in users]
    checked = set()
    for ctx in contexts:
        want = ofrep_expected(MAIN, ctx, server=server)
        for name, item in want.items():
            resolver = resolver_for(name, item)
            d = details(client, resolver, name, DEFAULTS[resolver], context_of(ctx))
            value, reason, variant = flagd_expected(item, resolver)
            got = (d.value, d.reason, d.variant, d.error_code)
            assert got == (value, reason, variant, None), (name, ctx, d)
            checked.add(reason)
    assert {"STATIC", "DEFAULT", "TARGETING_MATCH", "SPLIT", "DISABLED"} <= checked
    # Client keys do not see server-key-only features.
    d = client.get_string_details("secret", "x")
    if server:
        assert (d.value, d.error_code) == ("s3cret", None), d
    else:
        assert (d.value, d.error_code) == ("x", ErrorCode.FLAG_NOT_FOUND), d


def test_errors_map_to_the_provider_codes(flagd_srv):
    client, _ = client_for(flagd_srv.grpc_port, MAIN.server_key, cache=CacheType.DISABLED)
    d = client.get_boolean_details("nope", True)
    assert (d.value, d.error_code) == (True, ErrorCode.FLAG_NOT_FOUND), d
    d = client.get_boolean_details("text", False)  # a string flag read as a boolean
    assert (d.value, d.error_code) == (False, ErrorCode.TYPE_MISMATCH), d
    d = client.get_integer_details("ratio", 0)  # 2.5 is not an integer
    assert (d.value, d.error_code) == (0, ErrorCode.TYPE_MISMATCH), d
    d = client.get_float_details("num", 0.0)  # an integer reads as a float
    assert (d.value, d.error_code) == (10.0, None), d
    # A disabled flag with a real value: the caller's default, no error.
    d = client.get_string_details("text_off", "d")
    assert (d.value, d.reason, d.variant, d.error_code) == ("d", "DISABLED", None, None), d


def test_a_targeted_flag_is_never_cached_across_contexts(flagd_srv):
    """The provider caches STATIC answers by flag key: a segment-targeted flag read without a
    context must not be STATIC, or every later context would get that answer."""
    client, _ = client_for(flagd_srv.grpc_port, MAIN.server_key, cache=CacheType.LRU)
    d = client.get_string_details("seg_feat", "x")
    assert (d.value, d.reason) == ("default", "DEFAULT"), d
    d = client.get_string_details("seg_feat", "x", EvaluationContext("u7", {"plan": "pro"}))
    assert (d.value, d.reason) == ("pro-value", "TARGETING_MATCH"), d
    # The same targetingKey with another context is re-targeted.
    d = client.get_string_details("seg_feat", "x", EvaluationContext("u7", {"plan": "free"}))
    assert (d.value, d.reason) == ("default", "DEFAULT"), d
    # A flag nothing can change is STATIC, and then served from the provider's cache.
    d = client.get_boolean_details("flag_on", False)
    assert (d.value, d.reason) == (True, "STATIC"), d
    d = client.get_boolean_details("flag_on", False)
    assert (d.value, d.reason) == (True, "CACHED"), d


def _metadata_forms(key: str):
    basic = lambda s: "Basic " + base64.b64encode(s.encode()).decode()  # noqa: E731
    return [
        [("flagd-selector", key)],
        [("authorization", f"Bearer {key}")],
        [("authorization", basic(f"user:{key}"))],
        [("authorization", basic(f"{key}:"))],
        [("x-api-key", key)],
        [("x-environment-key", key)],
    ]


def test_keys_in_every_header_form_and_unauthenticated(flagd_srv):
    with grpc.insecure_channel(f"127.0.0.1:{flagd_srv.grpc_port}") as channel:
        stub = v2_grpc.ServiceStub(channel)
        request = v2.ResolveStringRequest(flag_key="text")
        for metadata in _metadata_forms(MAIN.server_key):
            r = stub.ResolveString(request, metadata=metadata, timeout=10)
            assert (r.value, r.reason, r.variant) == ("Hello", "DEFAULT", "enabled"), metadata
            assert r.metadata["flagsmithEnabled"] is True
        for metadata in ([], [("flagd-selector", "nope")],
                         [("flagd-selector", MAIN.server_key), ("x-api-key", LIVE.server_key)]):
            with pytest.raises(grpc.RpcError) as err:
                stub.ResolveString(request, metadata=metadata, timeout=10)
            assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED, metadata
            events = stub.EventStream(v2.EventStreamRequest(), metadata=metadata, timeout=10)
            if not metadata:
                # No key at all (the JS provider's stream): accepted, it follows the environments
                # its connection presents keys for (test_flagd_node.py sees their changes).
                assert next(iter(events)).type == "provider_ready"
                events.cancel()
                continue
            with pytest.raises(grpc.RpcError) as err:
                next(iter(events))
            assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED, metadata


def test_v1_and_resolve_all(flagd_srv):
    ctx = {"targetingKey": "u1", "plan": "pro"}
    want = ofrep_expected(MAIN, ctx, server=True)
    with grpc.insecure_channel(f"127.0.0.1:{flagd_srv.grpc_port}") as channel:
        meta = [("flagd-selector", MAIN.server_key)]
        stub1 = v1_grpc.ServiceStub(channel)
        r = stub1.ResolveString(v1.ResolveStringRequest(flag_key="seg_feat", context=_struct(v1, ctx)),
                                metadata=meta, timeout=10)
        assert (r.value, r.reason, r.variant) == ("pro-value", "TARGETING_MATCH", "enabled")
        for version in ("v1", "v2"):
            all_flags = _resolve_all(channel, version)(
                v1.ResolveAllRequest(context=_struct(v1, ctx)), metadata=meta, timeout=10)
            assert set(all_flags.flags) == set(want)
            for name, item in want.items():
                flag = all_flags.flags[name]
                assert flag.reason == item["reason"], name
                kind = flag.WhichOneof("value")
                if "value" not in item:
                    assert kind is None and flag.variant == "", name
                    continue
                assert flag.variant == item["variant"], name
                got = getattr(flag, kind)
                if kind == "object_value":
                    got = json.loads(json.dumps(dict(got), default=_plain))
                assert got == item["value"], name
        client_all = _resolve_all(channel, "v2")(
            v1.ResolveAllRequest(), metadata=[("flagd-selector", MAIN.client_key)], timeout=10)
        assert "secret" not in client_all.flags and "flag_on" in client_all.flags


def _resolve_all(channel, version: str):
    """`ResolveAll` of either version (the provider package's v2 stub leaves it out; the
    messages are the same on the wire)."""
    return channel.unary_unary(f"/flagd.evaluation.{version}.Service/ResolveAll",
                               request_serializer=v1.ResolveAllRequest.SerializeToString,
                               response_deserializer=v1.ResolveAllResponse.FromString)


def _plain(v):
    from google.protobuf.struct_pb2 import ListValue, Struct
    if isinstance(v, Struct):
        return dict(v)
    if isinstance(v, ListValue):
        return list(v)
    raise TypeError(v)


def _struct(module, ctx: dict):
    from google.protobuf.struct_pb2 import Struct
    s = Struct()
    s.update(ctx)
    return s


def test_document_change_is_a_configuration_change_event(flagd_srv):
    client, _ = client_for(flagd_srv.grpc_port, LIVE.server_key)
    changed: list = []
    got = threading.Event()

    def on_change(details):
        changed.append(details.flags_changed)
        got.set()

    client.add_handler(ProviderEvent.PROVIDER_CONFIGURATION_CHANGED, on_change)
    d = client.get_string_details("text", "x")
    assert d.value == "Hello", d
    path = flagd_srv.paths[1]
    try:
        path.write_text(json.dumps(fx.make_document(LIVE.client_key, env_id=5002, revision=1)))
        assert got.wait(15), "no configuration change event"
        assert "text" in changed[-1], changed
        wait_until(lambda: client.get_string_details("text", "x").value == "Hello r1", 15,
                   "the new value never arrived")
    finally:
        path.write_text(json.dumps(LIVE.document))


def test_reconnects_after_a_restart(start_flagd, tmp_path):
    from fixture_files import write_documents
    from serve_harness import free_port
    paths = write_documents(tmp_path / "docs", [MAIN, LIVE])
    grpc_port, http_port = free_port(), free_port()
    first = start_flagd(config=flagd_config(paths, grpc_port), port=http_port)
    client, _ = client_for(grpc_port, MAIN.server_key, cache=CacheType.DISABLED, retry_backoff_ms=200,
                           retry_backoff_max_ms=500)
    ready = threading.Event()
    client.add_handler(ProviderEvent.PROVIDER_READY, lambda _: ready.set())
    assert client.get_boolean_details("flag_on", False).value is True
    ready.clear()
    assert first.stop() == 0, first.stderr_tail()
    second = start_flagd(config=flagd_config(paths, grpc_port), port=http_port)
    assert ready.wait(30), f"the provider never reconnected\n{second.stderr_tail()}"
    d = client.get_string_details("seg_feat", "x", EvaluationContext("u1", {"plan": "pro"}))
    assert (d.value, d.reason, d.error_code) == ("pro-value", "TARGETING_MATCH", None), d


class Session:
    """Python providers as `domains_case` drives them: one per domain, in this process, with
    the default (LRU) cache."""

    def __init__(self, port: int, domains: dict[str, str]) -> None:
        self.events = Events()
        self.clients, self.providers = {}, []
        for name, key in domains.items():
            client, provider = client_for(port, key)
            self.clients[name] = client
            self.providers.append(provider)
            client.add_handler(ProviderEvent.PROVIDER_READY,
                               lambda _, name=name: self.events.add({"event": "ready", "provider": name}))
            client.add_handler(ProviderEvent.PROVIDER_CONFIGURATION_CHANGED,
                               lambda d, name=name: self.events.add({"event": "changed", "provider": name,
                                                                     "flags": d.flags_changed or []}))

    def evaluate(self, cases: list[dict]) -> list[dict]:
        out = []
        for c in cases:
            d = details(self.clients[c["provider"]], c["type"], c["flag"], c["default"],
                        context_of(c.get("context")))
            out.append({"value": d.value, "variant": d.variant, "reason": d.reason,
                        "errorCode": d.error_code})
        return out

    def close(self, check: bool = True) -> None:
        """Shuts the providers down (`check` is `DriverSession.close`'s: nothing to check here)."""
        for provider in self.providers:
            provider.shutdown()


def test_providers_of_one_process_follow_their_environments(start_flagd, tmp_path):
    domains_case(start_flagd, tmp_path, Session)


def test_answers_say_stale_while_the_upstream_is_away(start_flagd):
    stale_case(start_flagd, Session)


def _connect_resolve_all(port: int) -> dict:
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", "/flagd.evaluation.v2.Service/ResolveAll", b"{}",
                     {"Content-Type": "application/json", "X-API-Key": MAIN.server_key})
        response = conn.getresponse()
        assert response.status == 200
        return json.loads(response.read())["flags"]
    finally:
        conn.close()


def test_resolve_all_says_stale_over_grpc_and_connect(start_flagd):
    """`ResolveAll` (v1 and v2 over gRPC, Connect JSON) and a single resolver while the upstream
    is away: every flag with a value `STALE`, with the value it had; a flag on the caller's
    default keeps `DISABLED`; back to the usual reasons once the upstream answers again."""
    upstream = Upstream().start()
    upstream.set_document(MAIN.server_key, MAIN.document)
    fp = polled_flagd(start_flagd, upstream)
    want = ofrep_expected(MAIN, None, server=True)
    meta = [("flagd-selector", MAIN.server_key)]
    with grpc.insecure_channel(f"127.0.0.1:{fp.grpc_port}") as channel:
        def answers() -> dict[str, dict]:
            out = {}
            for version in ("v1", "v2"):
                flags = _resolve_all(channel, version)(v1.ResolveAllRequest(), metadata=meta, timeout=10).flags
                out[version] = {k: (f.reason, f.variant, f.WhichOneof("value")) for k, f in flags.items()}
            connect = _connect_resolve_all(fp.grpc_port)
            out["connect"] = {k: (f["reason"], f.get("variant", "")) for k, f in connect.items()}
            single = v2_grpc.ServiceStub(channel).ResolveString(v2.ResolveStringRequest(flag_key="text"),
                                                                metadata=meta, timeout=10)
            out["single"] = (single.value, single.reason, single.variant)
            return out

        fresh = answers()
        assert {k: r for k, (r, _, _) in fresh["v2"].items()} == {k: i["reason"] for k, i in want.items()}
        try:
            upstream.stop()
            wait_until(lambda: answers()["single"][1] == "STALE", 60,
                       f"the answers never said STALE\n{fp.stderr_tail()}")
            stale = answers()
            assert stale["single"] == ("Hello", "STALE", "enabled"), stale["single"]
            for version in ("v1", "v2", "connect"):
                for name, item in want.items():
                    reason = "DISABLED" if "value" not in item else "STALE"
                    assert stale[version][name] == (reason,) + fresh[version][name][1:], (version, name)
            upstream = Upstream(upstream.port).start()
            upstream.set_document(MAIN.server_key, MAIN.document)
            wait_until(lambda: answers() == fresh, 60, f"the usual reasons never came back\n{fp.stderr_tail()}")
        finally:
            upstream.stop()
