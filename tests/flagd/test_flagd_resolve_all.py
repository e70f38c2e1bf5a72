"""`ResolveAll` over gRPC and Connect (protobuf and JSON): the answer is the OFREP bulk
evaluation's flags, without per-flag metadata unless the call asks for it with
`flagpole-metadata: true`, and with it when it does (what it says per flag is checked against
the OFREP front door's metadata)."""

from __future__ import annotations

import http.client
import json

import grpc
import pytest
from openfeature.schemas.protobuf.flagd.evaluation.v1 import evaluation_pb2 as v1
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Struct

from flagd_support import MAIN, ofrep_expected

CONTEXT = {"targetingKey": "u1", "plan": "pro"}
ASK = ("flagpole-metadata", "true")


def grpc_all(port: int, version: str, key: str, extra: list) -> v1.ResolveAllResponse:
    context = Struct()
    context.update(CONTEXT)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary(f"/flagd.evaluation.{version}.Service/ResolveAll",
                                   request_serializer=v1.ResolveAllRequest.SerializeToString,
                                   response_deserializer=v1.ResolveAllResponse.FromString)
        return call(v1.ResolveAllRequest(context=context),
                    metadata=[("flagd-selector", key)] + extra, timeout=10)


def connect_all(port: int, version: str, codec: str, key: str, extra: list) -> dict:
    """The answer as plain data: {key: {"reason", "variant", "value"?, "metadata"?}}."""
    if codec == "json":
        body = json.dumps({"context": CONTEXT}).encode()
    else:
        context = Struct()
        context.update(CONTEXT)
        body = v1.ResolveAllRequest(context=context).SerializeToString()
    headers = {"Content-Type": f"application/{codec}", "X-API-Key": key, **dict(extra)}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", f"/flagd.evaluation.{version}.Service/ResolveAll", body, headers)
        response = conn.getresponse()
        raw = response.read()
        assert response.status == 200, raw
        assert response.getheader("content-type") == f"application/{codec}"
    finally:
        conn.close()
    if codec == "json":
        flags = json.loads(raw)["flags"]
        for flag in flags.values():
            for name in ("boolValue", "stringValue", "doubleValue", "objectValue"):
                if name in flag:
                    flag["value"] = flag.pop(name)
        return flags
    return plain(v1.ResolveAllResponse.FromString(raw))


def plain(message: v1.ResolveAllResponse) -> dict:
    out = {}
    for key, flag in message.flags.items():
        item = {"reason": flag.reason, "variant": flag.variant}
        kind = flag.WhichOneof("value")
        if kind == "object_value":
            item["value"] = MessageToDict(flag.object_value)
        elif kind is not None:
            item["value"] = getattr(flag, kind)
        if flag.HasField("metadata"):
            item["metadata"] = MessageToDict(flag.metadata)
        out[key] = item
    return out


def same_numbers(value):
    """protobuf carries one number type: compare integers as floats."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    return float(value)


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_metadata_only_when_asked(flagd_srv, version):
    port = flagd_srv.grpc_port
    want = ofrep_expected(MAIN, CONTEXT, server=True)
    answers = {
        "grpc": lambda extra: plain(grpc_all(port, version, MAIN.server_key, extra)),
        "proto": lambda extra: connect_all(port, version, "proto", MAIN.server_key, extra),
        "json": lambda extra: connect_all(port, version, "json", MAIN.server_key, extra),
    }
    for name, answer in answers.items():
        default, asked = answer([]), answer([ASK])
        assert set(default) == set(asked) == set(want), name
        for key, item in want.items():
            # The default answer has no metadata at all, not even an empty one.
            assert "metadata" not in default[key], (name, key, default[key])
            assert {k: v for k, v in asked[key].items() if k != "metadata"} == default[key], (name, key)
            assert default[key]["reason"] == item["reason"], (name, key)
            # Asked: the OFREP front door's metadata for the same flag.
            got = {k: same_numbers(v) for k, v in asked[key]["metadata"].items()}
            assert got == {k: same_numbers(v) for k, v in item["metadata"].items()}, (name, key)
    # Client keys are asked the same way, and get the client's view of the metadata.
    client = plain(grpc_all(port, version, MAIN.client_key, [ASK]))
    assert client and all("flagsmithReason" not in f["metadata"] for f in client.values())
    assert all("metadata" not in f for f in plain(grpc_all(port, version, MAIN.client_key, [])).values())
