"""OpenFeature's doors on Unleash toggles: OFREP (one flag and bulk) and the flagd API over gRPC
(`ResolveBoolean`, `ResolveString`, `ResolveAll`), an Unleash token presented as the key. Every
answer is checked against what `/api/frontend` answers for the same context and token: whether
the toggle is enabled (the boolean), the variant's name, and its payload typed by its `type`.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import grpc
import pytest
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Struct
from openfeature.schemas.protobuf.flagd.evaluation.v1 import evaluation_pb2 as v1

from conftest import CLIENT_TOKEN, FRONTEND_TOKEN, unleash_args, write_toggles
from loopback import EVENT_TIMEOUT, wait_until
from serve_harness import FlagpoleProcess, free_port

FEATURES = {
    "version": 2,
    "features": [
        {"name": "plain", "project": "default", "enabled": True,
         "strategies": [{"name": "default", "parameters": {}}]},
        {"name": "off", "project": "default", "enabled": False, "strategies": []},
        {"name": "users", "project": "default", "enabled": True,
         "strategies": [{"name": "userWithId", "parameters": {"userIds": "u1,u2"}}]},
        {"name": "plan", "project": "default", "enabled": True,
         "strategies": [{"name": "default", "parameters": {},
                         "constraints": [{"contextName": "plan", "operator": "IN", "values": ["gold"]}]}]},
        {"name": "text", "project": "default", "enabled": True,
         "strategies": [{"name": "default", "parameters": {}}],
         "variants": [{"name": "blue", "weight": 1000, "weightType": "variable", "stickiness": "default",
                       "payload": {"type": "string", "value": "#00f"}}]},
        {"name": "count", "project": "default", "enabled": True,
         "strategies": [{"name": "default", "parameters": {}}],
         "variants": [{"name": "ten", "weight": 1000, "weightType": "variable", "stickiness": "default",
                       "payload": {"type": "number", "value": "10"}}]},
        {"name": "object", "project": "default", "enabled": True,
         "strategies": [{"name": "userWithId", "parameters": {"userIds": "u1"}}],
         "variants": [{"name": "obj", "weight": 1000, "weightType": "variable", "stickiness": "default",
                       "payload": {"type": "json", "value": "{\"size\": 3, \"tags\": [\"a\"]}"}}]},
        {"name": "split", "project": "default", "enabled": True,
         "strategies": [{"name": "flexibleRollout",
                         "parameters": {"rollout": "100", "stickiness": "default", "groupId": "split"}}],
         "variants": [{"name": "left", "weight": 500, "weightType": "variable", "stickiness": "userId",
                       "payload": {"type": "string", "value": "L"}},
                      {"name": "right", "weight": 500, "weightType": "variable", "stickiness": "userId",
                       "payload": {"type": "string", "value": "R"}}]},
        {"name": "elsewhere", "project": "other", "enabled": True,
         "strategies": [{"name": "default", "parameters": {}}]},
    ],
}
IN_DEFAULT = sorted(f["name"] for f in FEATURES["features"] if f["project"] == "default")

# OpenFeature contexts; each has a targetingKey, so no answer depends on a random draw.
CONTEXTS = [
    {"targetingKey": "u1"},
    {"targetingKey": "u2", "plan": "gold"},
    {"targetingKey": "u3", "sessionId": "s3", "properties": {"plan": "gold"}},
    {"targetingKey": "u4", "appName": "shop", "plan": "lead"},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    directory = tmp_path_factory.mktemp("unleash-openfeature")
    path = directory / "features.json"
    write_toggles(path, FEATURES)
    fp = FlagpoleProcess(directory / "fp", config={"flagpole": {"grpc": {"port": free_port()}}},
                         extra_args=unleash_args(path))
    fp.grpc_port = fp.config["flagpole"]["grpc"]["port"]
    fp.start()

    def accepting() -> bool:
        try:
            socket.create_connection(("127.0.0.1", fp.grpc_port), timeout=1).close()
            return True
        except OSError:
            return False

    wait_until(accepting, EVENT_TIMEOUT, f"the flagd port never accepted\n{fp.stderr_tail()}")
    yield fp
    assert fp.stop() == 0, fp.stderr_tail()


def frontend_context(context: dict) -> dict:
    """The same context as Unleash's frontend API takes it."""
    out: dict = {"userId": context["targetingKey"], "properties": dict(context.get("properties", {}))}
    for name, value in context.items():
        if name in ("targetingKey", "properties"):
            continue
        if name in ("sessionId", "appName", "environment", "remoteAddress", "currentTime"):
            out[name] = value
        else:
            out["properties"][name] = value
    return out


def expected(server, context: dict, token: str = FRONTEND_TOKEN) -> dict[str, dict]:
    """Per toggle of the token's projects: enabled, variant name and typed payload, from
    /api/frontend (which lists only enabled toggles)."""
    r = server.post("/api/frontend", frontend_context(context), headers={"Authorization": token})
    assert r.status == 200, r
    enabled = {t["name"]: t for t in r.json()["toggles"]}
    out = {}
    for name in IN_DEFAULT:
        toggle = enabled.get(name)
        variant = toggle["variant"] if toggle else {"name": "disabled", "enabled": False}
        payload = variant.get("payload")
        typed = None
        if payload is not None:
            typed = payload["value"] if payload["type"] in ("string", "csv") else json.loads(payload["value"])
        out[name] = {"enabled": toggle is not None, "variant": variant["name"], "payload": typed}
    return out


def ofrep(server, path: str, context: dict, token: str = FRONTEND_TOKEN, headers: dict | None = None):
    return server.post(path, {"context": context},
                       headers={"Authorization": f"Bearer {token}", **(headers or {})})


def check_ofrep_flag(item: dict, want: dict) -> None:
    value = want["payload"] if want["enabled"] and want["payload"] is not None else want["enabled"]
    assert item["value"] == value, (item, want)
    assert item["variant"] == want["variant"], (item, want)
    assert item["metadata"]["unleashEnabled"] is want["enabled"], item


@pytest.mark.parametrize("context", CONTEXTS)
def test_ofrep_single_flags_answer_as_the_frontend_api(server, context):
    want = expected(server, context)
    for name in IN_DEFAULT:
        r = ofrep(server, f"/ofrep/v1/evaluate/flags/{name}", context)
        assert r.status == 200, (name, r)
        item = r.json()
        assert item["key"] == name
        check_ofrep_flag(item, want[name])
        if name == "off":
            assert item["reason"] == "DISABLED"
        elif not want[name]["enabled"]:
            assert item["reason"] == "DEFAULT"
        elif name == "plain":
            # Nothing can vary. A payload never says STATIC: caching providers would answer
            # its boolean (the enabled bit) from a cached payload, or the other way round.
            assert item["reason"] == "STATIC"
        else:
            assert item["reason"] == "TARGETING_MATCH"


@pytest.mark.parametrize("context", CONTEXTS)
def test_ofrep_bulk_lists_the_tokens_toggles(server, context):
    want = expected(server, context)
    r = ofrep(server, "/ofrep/v1/evaluate/flags", context)
    assert r.status == 200, r
    body = r.json()
    assert [f["key"] for f in body["flags"]] == IN_DEFAULT
    for item in body["flags"]:
        check_ofrep_flag(item, want[item["key"]])
    assert "eventStreams" not in body
    etag = r.header("etag")
    assert etag
    again = ofrep(server, "/ofrep/v1/evaluate/flags", context, headers={"If-None-Match": etag})
    assert again.status == 304, again
    # Another token's projects: another answer, another tag.
    every = ofrep(server, "/ofrep/v1/evaluate/flags", context, token=CLIENT_TOKEN)
    assert every.status == 200 and every.header("etag") != etag
    assert [f["key"] for f in every.json()["flags"]] == sorted(IN_DEFAULT + ["elsewhere"])


def test_ofrep_refusals(server):
    r = ofrep(server, "/ofrep/v1/evaluate/flags/elsewhere", CONTEXTS[0])
    assert r.status == 404 and r.json()["errorCode"] == "FLAG_NOT_FOUND", r
    r = ofrep(server, "/ofrep/v1/evaluate/flags/nope", CONTEXTS[0])
    assert r.status == 404 and r.json()["errorCode"] == "FLAG_NOT_FOUND", r
    assert ofrep(server, "/ofrep/v1/evaluate/flags/elsewhere", CONTEXTS[0], token=CLIENT_TOKEN).status == 200
    r = ofrep(server, "/ofrep/v1/evaluate/flags/plain", CONTEXTS[0], token="default:development.wrong")
    assert r.status == 401, r


def struct(context: dict) -> Struct:
    s = Struct()
    s.update(context)
    return s


def resolve(server, method: str, request, response_type, token: str = FRONTEND_TOKEN):
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        call = channel.unary_unary(f"/flagd.evaluation.v1.Service/{method}",
                                   request_serializer=type(request).SerializeToString,
                                   response_deserializer=response_type.FromString)
        return call(request, metadata=[("authorization", f"Bearer {token}")], timeout=10)


@pytest.mark.parametrize("context", CONTEXTS)
def test_flagd_resolve_boolean_is_enabled(server, context):
    want = expected(server, context)
    for name in IN_DEFAULT:
        answer = resolve(server, "ResolveBoolean", v1.ResolveBooleanRequest(flag_key=name, context=struct(context)),
                         v1.ResolveBooleanResponse)
        assert answer.value is want[name]["enabled"], (name, answer)
        # A toggle with a payload is still a boolean: its enabled bit.
        if want[name]["enabled"]:
            assert answer.variant == want[name]["variant"], (name, answer)


@pytest.mark.parametrize("context", CONTEXTS)
def test_flagd_resolve_string_is_the_payload(server, context):
    want = expected(server, context)
    for name in ("text", "split"):
        answer = resolve(server, "ResolveString", v1.ResolveStringRequest(flag_key=name, context=struct(context)),
                         v1.ResolveStringResponse)
        assert (answer.value, answer.variant) == (want[name]["payload"], want[name]["variant"]), answer
    # Off for the context: the caller's default (no variant); on, it has no string: a mismatch.
    if want["users"]["enabled"]:
        with pytest.raises(grpc.RpcError) as mismatch:
            resolve(server, "ResolveString", v1.ResolveStringRequest(flag_key="users", context=struct(context)),
                    v1.ResolveStringResponse)
        assert mismatch.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    else:
        answer = resolve(server, "ResolveString", v1.ResolveStringRequest(flag_key="users", context=struct(context)),
                         v1.ResolveStringResponse)
        assert (answer.variant, answer.reason) == ("", "DEFAULT"), answer
    # A number payload is not a string.
    with pytest.raises(grpc.RpcError) as refused:
        resolve(server, "ResolveString", v1.ResolveStringRequest(flag_key="count", context=struct(context)),
                v1.ResolveStringResponse)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as missing:
        resolve(server, "ResolveString", v1.ResolveStringRequest(flag_key="elsewhere", context=struct(context)),
                v1.ResolveStringResponse)
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize("context", CONTEXTS)
def test_flagd_resolve_all_lists_the_tokens_toggles(server, context):
    want = expected(server, context)
    answer = resolve(server, "ResolveAll", v1.ResolveAllRequest(context=struct(context)), v1.ResolveAllResponse)
    assert sorted(answer.flags) == IN_DEFAULT
    for name, flag in answer.flags.items():
        w = want[name]
        kind = flag.WhichOneof("value")
        value = MessageToDict(flag.object_value) if kind == "object_value" else getattr(flag, kind)
        if w["enabled"] and w["payload"] is not None:
            expected_value = w["payload"]
            if isinstance(expected_value, dict):
                expected_value = json.loads(json.dumps(expected_value), parse_int=float)
            elif isinstance(expected_value, (int, float)):
                expected_value = float(expected_value)
            assert value == expected_value, (name, flag)
        else:
            assert value is w["enabled"], (name, flag)
        assert flag.variant == w["variant"], (name, flag)


PROVIDER_SCRIPT = """
import sys, time
from openfeature import api
from openfeature.contrib.provider.flagd import FlagdProvider
from openfeature.contrib.provider.flagd.config import ResolverType
from openfeature.evaluation_context import EvaluationContext
api.set_provider(FlagdProvider(resolver_type=ResolverType.RPC, host="127.0.0.1", port=int(sys.argv[1]),
                               selector=sys.argv[2], deadline_ms=5000))
client = api.get_client()
deadline = time.monotonic() + 30
while str(client.get_provider_status()) != "ProviderStatus.READY" and time.monotonic() < deadline:
    time.sleep(0.05)
context = EvaluationContext(targeting_key="u1")
boolean = client.get_boolean_details("text", False, context)
text = client.get_string_details("text", "fallback", context)
number = client.get_float_details("count", 0.0, context)
print(boolean.value, text.value, text.variant, number.value)
"""


def test_the_python_flagd_provider_with_a_token_as_its_selector(server):
    """The flagd Python provider (RPC) gets ready on an Unleash token, and one toggle read as a
    boolean and then as a string gives both: a cached answer of one type never stands in for
    the other."""
    out = subprocess.run([sys.executable, "-c", PROVIDER_SCRIPT, str(server.grpc_port), FRONTEND_TOKEN],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "#00f", "blue", "10.0"], out
