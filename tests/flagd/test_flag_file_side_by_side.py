"""flagd and Flagpole serving the same flag file (flagfile_support.rich_flag_file: every operator,
`$ref`, metadata on the set and on flags, odd variant types, DISABLED, null and absent default
variants) answer every flag × a seeded set of contexts the same over every transport a client
uses: OFREP single and bulk, flagd evaluation gRPC v1 `ResolveX` (every resolver for every flag in
a few contexts: the type errors too) and `ResolveAll`, v1 and v2. Compared: value, variant,
reason, error code, metadata (error messages are prose and not compared).

Where flagd is older than the semantics Flagpole follows (the spec decides), a rule (`rule_for`)
names the rows and gives the spec's answer; Flagpole must give that one. What a flag evaluates
to (value, variant, reason) is the reference evaluator's, openfeature-flagd-core 1.0.0 (run in its
own venv), where flagd (Go) evaluates otherwise: the flagd built here buckets `fractional` by the
older percentage formula rather than `(hash × total) >> 32`, reads a missing variable in `cat` as
"" and some partial versions in `sem_ver` otherwise. Those flags are printed. The seed is printed;
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

from flagfile_support import contexts, evaluated, flag_type, rich_flag_file, write_flag_file

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
    # Flagpole's bulk answer names its change stream (OFREP's `eventStreams`); flagd has none.
    if isinstance(answer, dict):
        answer.pop("eventStreams", None)
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
# Where flagd (the version scripts/test.sh builds) answers otherwise than the spec (a DISABLED
# flag; a flag without a value is answered as flagd does: NOT_FOUND over v1, DEFAULT over v2).
# Each rule names its rows and gives the spec's answer
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
    """Bulk answers: flagd leaves DISABLED flags out; the spec lists them, reason DISABLED, no
    value. (ResolveAll also leaves out a flag without a default variant, as flagd does: its
    resolver is chosen by the default variant's type.)"""
    metadata = disabled_metadata(reference, row[3])
    answer = json.loads(json.dumps(reference[row]))
    if row[0] == "ofrep-bulk":
        flags = answer["body"]["flags"] + [{"key": DISABLED, "reason": "DISABLED", "metadata": metadata}]
        answer["body"]["flags"] = sorted(flags, key=lambda f: f["key"])
        return answer
    answer["ok"].setdefault("flags", {})[DISABLED] = {"reason": "DISABLED", "metadata": proto_numbers(metadata)}
    return answer


def rule_for(row: tuple, reference: dict):
    """The rule a row falls under, or None (the row answers as flagd)."""
    transport, flag = row[0], row[1]
    if transport in ("ofrep-bulk", "all-v1"):
        return with_disabled
    if flag == DISABLED:
        return disabled_single
    return None


def typed_value(value, resolver: str):
    """A value as MessageToDict reads it from a resolver's response."""
    if resolver == "integer":
        return str(int(value))
    if resolver == "float":
        return float(value)
    return proto_numbers(value) if resolver == "object" else value


def as_reference_evaluates(answer: dict, row: tuple, spec: dict, differ: set[str], flag_kind: dict) -> dict:
    """`answer` (flagd's shape) with what the reference evaluates each flag of `differ` to."""
    transport, flag, resolver, i = row
    answer = json.loads(json.dumps(answer))

    def patch(item: dict, key: str, field: str, convert) -> None:
        want = spec.get((key, i), {})
        if key in differ and field in item and "value" in want:
            item.update({field: convert(want["value"]), "variant": want["variant"], "reason": want["reason"]})

    if transport in PROTOS and answer == {"code": "INTERNAL"} and "value" in spec.get((flag, i), {}):
        # flagd (Go) failed to evaluate where the reference evaluates (`cat` of a missing variable).
        want = spec[(flag, i)]
        if resolver != flag_kind.get(flag):
            return answer
        return {"ok": {"value": typed_value(want["value"], resolver), "reason": want["reason"],
                       "variant": want["variant"], "metadata": proto_numbers(want["metadata"])}}
    if transport == "ofrep":
        patch(answer["body"], flag, "value", lambda v: v)
    elif transport in PROTOS and "ok" in answer:
        patch(answer["ok"], flag, "value", lambda v: typed_value(v, resolver))
    elif transport == "ofrep-bulk":
        for item in answer["body"]["flags"]:
            patch(item, item["key"], "value", lambda v: v)
    elif transport == "all-v1":
        for key, item in answer["ok"].get("flags", {}).items():
            field = next((k for k in item if k.endswith("_value")), "")
            patch(item, key, field, lambda v: float(v) if field == "double_value" else proto_numbers(v))
    return answer


def evaluated_otherwise(reference: dict, spec: dict) -> set[str]:
    """The flags flagd (Go) evaluates otherwise than the reference in some context (OFREP)."""
    out = set()
    for (transport, flag, _, i), answer in reference.items():
        if transport == "ofrep" and (flag, i) in spec:
            want = spec[(flag, i)]
            got = answer["body"]
            if "value" in want and "value" in got and (got["value"], got.get("variant")) != (want["value"], want["variant"]):
                out.add(flag)
    return out


# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def flag_file(tmp_path_factory):
    work = tmp_path_factory.mktemp("side-by-side")
    return rich_flag_file(), write_flag_file(work / "flags.json", rich_flag_file())


def difference(want, flagd_answer, flagpole_answer) -> str:
    """The rows' difference, told briefly: for bulk answers, the flags that differ."""
    def flags(answer):
        body = answer.get("body", answer.get("ok", {}))
        listed = body.get("flags") if isinstance(body, dict) else None
        if isinstance(listed, list):
            return {f.get("key"): f for f in listed}
        return listed if isinstance(listed, dict) else None

    if flags(want) is not None and flags(flagpole_answer) is not None:
        w, f, p = flags(want), flags(flagd_answer) or {}, flags(flagpole_answer)
        lines = [f"  {key}: want {w.get(key)}\n    flagd {f.get(key)}\n    flagpole {p.get(key)}"
                 for key in sorted(set(w) | set(p)) if w.get(key) != p.get(key)]
        rest = {k: v for k, v in want.items() if k not in ("body", "ok")}
        return "\n".join(lines) or f"  outside the flags: want {rest}, flagpole {flagpole_answer}"
    return f"  want:     {want}\n  flagd:    {flagd_answer}\n  flagpole: {flagpole_answer}"


def test_flagd_and_flagpole_answer_alike(flag_file, flagd, flagpole):
    document = flag_file[0]
    ctxs = contexts(seed(), N_CONTEXTS)
    reference = answers(flagd, document, ctxs)
    candidate = answers(flagpole, document, ctxs)
    assert reference.keys() == candidate.keys()
    spec = evaluated(flag_file[1], sorted(document["flags"]), ctxs)
    differ = evaluated_otherwise(reference, spec)
    kinds = {key: flag_type(flag) for key, flag in document["flags"].items()}
    print(f"flagd (Go) evaluates these flags otherwise than the reference: {sorted(differ)}")
    mismatches, ruled = [], {}
    for row in reference:
        rule = rule_for(row, reference)
        want = rule(row, reference) if rule else reference[row]
        if rule:
            ruled[rule.__name__] = ruled.get(rule.__name__, 0) + 1
        evaluated_as = as_reference_evaluates(want, row, spec, differ, kinds)
        if evaluated_as != want:
            ruled["as_reference_evaluates"] = ruled.get("as_reference_evaluates", 0) + 1
            want = evaluated_as
        if candidate[row] != want:
            mismatches.append(f"{row} context={ctxs[row[3]]} rule={rule and rule.__name__}\n"
                              + difference(want, reference[row], candidate[row]))
    print(f"{len(reference)} rows; answered by the spec where flagd differs: {ruled}")
    assert not mismatches, f"{len(mismatches)} of {len(reference)} rows differ:\n" + "\n".join(mismatches[:30])


def test_the_file_exercises_what_it_claims(flag_file, flagd):
    """flagd gives every reason and error code on the file, and the rules above name real rows:
    flagd answers the disabled flag FLAG_NOT_FOUND (when a newer flagd stops doing so, its rule
    goes) and a flag without a value FLAG_NOT_FOUND on v1 only, without a variant on v2."""
    ctxs = contexts(seed(), 8)
    got = answers(flagd, flag_file[0], ctxs)
    reasons = {a["body"].get("reason") for (t, *_), a in got.items() if t == "ofrep"}
    codes = {a.get("code") for (t, *_), a in got.items() if t in PROTOS}
    assert {"STATIC", "TARGETING_MATCH", "DEFAULT"} <= reasons, reasons
    assert {"NOT_FOUND", "INVALID_ARGUMENT"} <= codes, codes
    assert got[("ofrep", DISABLED, "", 0)]["body"]["errorCode"] == "FLAG_NOT_FOUND"
    assert got[("v1", "no-default-static", "string", 0)] == {"code": "NOT_FOUND"}
    assert got[("v2", "no-default-static", "string", 0)]["ok"]["reason"] == "DEFAULT"
    assert "variant" not in got[("v2", "no-default-static", "string", 0)]["ok"]
