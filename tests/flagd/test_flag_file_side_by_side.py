"""flagd and Flagpole serving the same flag file (flagfile_support.rich_flag_file: every operator,
`$ref`, metadata on the set and on flags, odd variant types, DISABLED, null and absent default
variants) answer every flag × a seeded set of contexts the same over every transport a client
uses: OFREP single and bulk, flagd evaluation gRPC v1 `ResolveX` (every resolver for every flag in
a few contexts: the type errors too) and `ResolveAll`, v1 and v2. Compared: value, variant,
reason, error code, metadata (error messages are prose and not compared).

Where flagd is older than the semantics Flagpole follows (the spec decides), a rule (`rule_for`)
names the rows and gives the spec's answer; Flagpole must give that one. The seed is printed;
`FLAGD_SIDE_BY_SIDE_SEED=N` replays a run."""

from __future__ import annotations

import http.client
import json
import os
import random

import grpc
import pytest
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Struct
from openfeature.schemas.protobuf.flagd.evaluation.v1 import evaluation_pb2 as v1
from openfeature.schemas.protobuf.flagd.evaluation.v2 import evaluation_pb2 as v2

from flagfile_support import SERVERS, contexts, flag_type, rich_flag_file, write_flag_file

PROTOS = {"v1": v1, "v2": v2}
RESOLVERS = {"boolean": "Boolean", "string": "String", "integer": "Int", "float": "Float", "object": "Object"}
N_CONTEXTS = 40
# Every resolver for every flag in the first few contexts: the TYPE_MISMATCH answers.
CROSS_TYPED = 3


def seed() -> int:
    value = int(os.environ.get("FLAGD_SIDE_BY_SIDE_SEED") or random.randrange(2**31))
    print(f"side-by-side seed: {value} (FLAGD_SIDE_BY_SIDE_SEED={value} replays it)")
    return value


# ------------------------------------------------------------------------------------------
# Transports, each answer reduced to plain data


def ofrep(port: int, path: str, context: dict) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", path, json.dumps({"context": context}), {"Content-Type": "application/json"})
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    answer = json.loads(body) if body else {}
    return {"status": response.status, "body": without_details(answer)}


def without_details(answer):
    """The error message is prose: everything but it is compared."""
    if isinstance(answer, dict):
        return {k: without_details(v) for k, v in answer.items() if k != "errorDetails"}
    if isinstance(answer, list):
        return [without_details(v) for v in answer]
    return answer


def ofrep_bulk(port: int, context: dict) -> dict:
    answer = ofrep(port, "/ofrep/v1/evaluate/flags", context)
    flags = answer["body"].get("flags")
    if isinstance(flags, list):
        answer["body"]["flags"] = sorted(flags, key=lambda f: f.get("key", ""))
    return answer


def struct(context: dict) -> Struct:
    s = Struct()
    s.update(context)
    return s


def grpc_call(channel, version: str, method: str, request, response_type) -> dict:
    call = channel.unary_unary(f"/flagd.evaluation.{version}.Service/{method}",
                               request_serializer=type(request).SerializeToString,
                               response_deserializer=response_type.FromString)
    try:
        return {"ok": MessageToDict(call(request, timeout=10), preserving_proto_field_name=True)}
    except grpc.RpcError as err:
        return {"code": err.code().name}


def grpc_resolve(channel, version: str, resolver: str, flag: str, context: dict) -> dict:
    pb, name = PROTOS[version], RESOLVERS[resolver]
    request = getattr(pb, f"Resolve{name}Request")(flag_key=flag, context=struct(context))
    return grpc_call(channel, version, f"Resolve{name}", request, getattr(pb, f"Resolve{name}Response"))


def grpc_all(channel, version: str, context: dict) -> dict:
    pb = PROTOS[version]
    return grpc_call(channel, version, "ResolveAll", pb.ResolveAllRequest(context=struct(context)),
                     pb.ResolveAllResponse)


def answers(server, document: dict, ctxs: list[dict]) -> dict[tuple, dict]:
    """Every row's answer from one server: {(transport, flag, resolver, context index): answer}."""
    out: dict[tuple, dict] = {}
    flags = sorted(document["flags"]) + ["no-such-flag"]
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        for i, ctx in enumerate(ctxs):
            out[("ofrep-bulk", "*", "", i)] = ofrep_bulk(server.ofrep_port, ctx)
            # (v2 has no ResolveAll.)
            out[("all-v1", "*", "", i)] = grpc_all(channel, "v1", ctx)
            for flag in flags:
                out[("ofrep", flag, "", i)] = ofrep(server.ofrep_port, f"/ofrep/v1/evaluate/flags/{flag}", ctx)
                own = flag_type(document["flags"][flag]) if flag in document["flags"] else "string"
                for resolver in (RESOLVERS if i < CROSS_TYPED else [own]):
                    for version in PROTOS:
                        out[(version, flag, resolver, i)] = grpc_resolve(channel, version, resolver, flag, ctx)
    return out


# ------------------------------------------------------------------------------------------
# Where flagd (the version scripts/test.sh builds) answers otherwise than the spec (issue 39: a
# DISABLED flag, a flag without a value). Each rule names its rows and gives the spec's answer
# for a row from flagd's answers; Flagpole must give that answer. Any other row: flagd's answer.

DISABLED = "disabled"


def proto_numbers(value):
    """A Struct carries one number type: what a JSON value reads as after the trip."""
    if isinstance(value, dict):
        return {k: proto_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [proto_numbers(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def disabled_metadata(reference: dict, i: int) -> dict:
    """The metadata flagd gives the disabled flag (on its error answer): the spec returns it."""
    return reference[("ofrep", DISABLED, "", i)]["body"]["metadata"]


def disabled_single(row, reference):
    """DISABLED: flagd (all versions up to the one built here) answers FLAG_NOT_FOUND; the spec
    answers reason DISABLED without a value or variant (the caller's default applies)."""
    metadata = disabled_metadata(reference, row[3])
    if row[0] == "ofrep":
        return {"status": 200, "body": {"key": DISABLED, "reason": "DISABLED", "metadata": metadata}}
    return {"ok": {"reason": "DISABLED", "metadata": proto_numbers(metadata)}}


def with_disabled(row, reference):
    """Bulk answers: flagd leaves DISABLED flags out; the spec lists them, reason DISABLED. On
    ResolveAll (v1) flagd also leaves out the flags without a value (its old-proto fallback); the
    spec lists them as OFREP bulk does: reason DEFAULT, no value, no variant."""
    i = row[3]
    metadata = disabled_metadata(reference, i)
    answer = json.loads(json.dumps(reference[row]))
    if row[0] == "ofrep-bulk":
        flags = answer["body"]["flags"] + [{"key": DISABLED, "reason": "DISABLED", "metadata": metadata}]
        answer["body"]["flags"] = sorted(flags, key=lambda f: f["key"])
        return answer
    flags = answer["ok"].setdefault("flags", {})
    flags[DISABLED] = {"reason": "DISABLED", "metadata": proto_numbers(metadata)}
    for item in reference[("ofrep-bulk", "*", "", i)]["body"]["flags"]:
        if "value" not in item and item["key"] not in flags:
            flags[item["key"]] = {"reason": item["reason"], "metadata": proto_numbers(item["metadata"])}
    return answer


def v1_as_v2(row, reference):
    """No value (no default variant, targeting null): flagd answers v1 FLAG_NOT_FOUND on purpose
    (its old-proto fallback); the spec has every provider return the caller's default with reason
    DEFAULT, which is flagd's v2 answer."""
    return reference[("v2",) + row[1:]]


def rule_for(row: tuple, reference: dict):
    """The rule a row falls under, or None (the row answers as flagd)."""
    transport, flag = row[0], row[1]
    if transport in ("ofrep-bulk", "all-v1"):
        return with_disabled
    if flag == DISABLED:
        return disabled_single
    if transport == "v1" and reference[row] == {"code": "NOT_FOUND"} and flag != "no-such-flag" \
            and reference[("v2",) + row[1:]] != {"code": "NOT_FOUND"}:
        return v1_as_v2
    return None


# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def flag_file(tmp_path_factory):
    work = tmp_path_factory.mktemp("side-by-side")
    return rich_flag_file(), write_flag_file(work / "flags.json", rich_flag_file())


def serving(name: str, flag_file, tmp_path_factory):
    server = SERVERS[name](tmp_path_factory.mktemp(name), flag_file[1]).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def flagd(flag_file, tmp_path_factory):
    yield from serving("flagd", flag_file, tmp_path_factory)


@pytest.fixture(scope="module")
def flagpole(flag_file, tmp_path_factory):
    yield from serving("flagpole", flag_file, tmp_path_factory)


def test_flagd_and_flagpole_answer_alike(flag_file, flagd, flagpole):
    document = flag_file[0]
    ctxs = contexts(seed(), N_CONTEXTS)
    reference = answers(flagd, document, ctxs)
    candidate = answers(flagpole, document, ctxs)
    assert reference.keys() == candidate.keys()
    mismatches, ruled = [], {}
    for row in reference:
        rule = rule_for(row, reference)
        want = rule(row, reference) if rule else reference[row]
        if rule:
            ruled[rule.__name__] = ruled.get(rule.__name__, 0) + 1
        if candidate[row] != want:
            mismatches.append(f"{row} context={ctxs[row[3]]} rule={rule and rule.__name__}\n"
                              f"  want:     {want}\n  flagd:    {reference[row]}\n  flagpole: {candidate[row]}")
    print(f"{len(reference)} rows; answered by the spec where flagd differs: {ruled}")
    assert not mismatches, f"{len(mismatches)} of {len(reference)} rows differ:\n" + "\n".join(mismatches[:30])


def test_the_file_exercises_what_it_claims(flag_file, flagd):
    """flagd gives every reason and error code on the file, and the rules above name real rows:
    flagd answers the disabled flag FLAG_NOT_FOUND and a flag without a value FLAG_NOT_FOUND on v1
    only (when a newer flagd stops doing so, its rule goes)."""
    ctxs = contexts(seed(), 8)
    got = answers(flagd, flag_file[0], ctxs)
    reasons = {a["body"].get("reason") for (t, *_), a in got.items() if t == "ofrep"}
    codes = {a.get("code") for (t, *_), a in got.items() if t in PROTOS}
    assert {"STATIC", "TARGETING_MATCH", "DEFAULT"} <= reasons, reasons
    assert {"NOT_FOUND", "INVALID_ARGUMENT"} <= codes, codes
    assert got[("ofrep", DISABLED, "", 0)]["body"]["errorCode"] == "FLAG_NOT_FOUND"
    assert got[("v1", "no-default-static", "string", 0)] == {"code": "NOT_FOUND"}
    assert got[("v2", "no-default-static", "string", 0)]["ok"]["reason"] == "DEFAULT"
