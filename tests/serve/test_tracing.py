"""OpenTelemetry against a real backend: Jaeger receives what Flagpole exports over OTLP (gRPC and
HTTP/protobuf) and the tests read it back through Jaeger's query API.

The test is the client: it sends `traceparent` (and `tracestate`, `baggage`) and expects
Flagpole's server span in the same trace with the client's span as its parent, on every front
door (Flagsmith API, OFREP, flagd over gRPC and Connect, a change stream's opening); the
upstream fetch is a client span whose `traceparent` the scripted upstream received; the sampler
decides what is kept; a collector that is gone costs requests nothing and the drops are counted;
`OTEL_SDK_DISABLED=true` sends nothing. Flagpole flushes its spans while it drains, so once it
has exited what Jaeger lacks was never sent (see jaeger_support).
"""

from __future__ import annotations

import json
import socket

import grpc
import pytest

from documents import make_document
from jaeger_support import Caller, Jaeger
from metrics_support import FINGERPRINT, scrape
from serve_harness import (HOST, Env, free_port, http_request, local_config, standard_envs, upstream_config,
                           wait_until, write_documents)

from openfeature.schemas.protobuf.flagd.evaluation.v1 import evaluation_pb2 as v1
from openfeature.schemas.protobuf.flagd.evaluation.v1 import evaluation_pb2_grpc as v1_grpc

PROTOCOLS = ["grpc", "http/protobuf"]
SERVICE = "flagpole-under-test"


@pytest.fixture
def jaeger(tmp_path):
    j = Jaeger(tmp_path / "jaeger").start()
    try:
        yield j
    finally:
        j.stop()


def otel_env(jaeger: Jaeger, protocol: str, **extra: str) -> dict[str, str]:
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": jaeger.endpoint(protocol),
        "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
        "OTEL_SERVICE_NAME": SERVICE,
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test",
        "OTEL_METRIC_EXPORT_INTERVAL": "1000",
        **extra,
    }


def start_local(flagpole, tmp_path, env: dict[str, str], grpc_port: int | None = None, **flagpole_keys):
    envs = standard_envs()
    paths = write_documents(tmp_path / "docs", envs)
    extra = {"grpc": {"port": grpc_port}} if grpc_port else {}
    extra.update(flagpole_keys)
    fp = flagpole(config=local_config(paths, envs, flagpole=extra), env=env)
    fp.wait_ready()
    return fp, envs


def assert_no_key(trace: dict, *keys: str) -> None:
    text = json.dumps(trace)
    for key in keys:
        assert key not in text, f"a key is in the trace: {key}"


def open_stream_head(port: int, path: str, headers: dict[str, str]) -> bytes:
    """Opens a change stream, reads its response head and hangs up."""
    with socket.create_connection((HOST, port), timeout=10) as s:
        lines = [f"GET {path} HTTP/1.1", f"Host: {HOST}:{port}", "Accept: text/event-stream"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
        return head


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_front_door_joins_the_callers_trace(tmp_path, flagpole, jaeger, protocol):
    grpc_port = free_port()
    fp, envs = start_local(flagpole, tmp_path, otel_env(jaeger, protocol), grpc_port)
    env = envs[0]
    calls: dict[str, Caller] = {}

    def traced(name: str) -> Caller:
        calls[name] = Caller.new()
        return calls[name]

    r = fp.get("/api/v1/flags/", env.client_key, headers=traced("GET /api/v1/flags/").headers())
    assert r.status == 200, r
    r = fp.get("/api/v1/identities/?identifier=user-1", env.client_key,
               headers=traced("GET /api/v1/identities/").headers())
    assert r.status == 200, r
    r = fp.post("/ofrep/v1/evaluate/flags/bool_value", {"context": {"targetingKey": "user-1"}}, env.client_key,
                headers=traced("POST /ofrep/v1/evaluate/flags/{key}").headers())
    assert r.status == 200, r
    head = open_stream_head(fp.port, f"/sse/environments/{env.client_key}/stream",
                            traced("GET /sse/environments/{key}/stream").headers())
    assert head.startswith(b"HTTP/1.1 200"), head
    caller = traced("flagd.evaluation.v1.Service/ResolveBoolean")
    with grpc.insecure_channel(f"{HOST}:{grpc_port}") as channel:
        answer = v1_grpc.ServiceStub(channel).ResolveBoolean(
            v1.ResolveBooleanRequest(flag_key="bool_value"),
            metadata=[("x-environment-key", env.client_key), ("traceparent", caller.traceparent)],
            timeout=10,
        )
    assert answer.value is True
    caller = traced("connect flagd.evaluation.v1.Service/ResolveString")
    r = http_request(grpc_port, "POST", "/flagd.evaluation.v1.Service/ResolveString",
                     caller.headers(**{"X-Environment-Key": env.client_key}), {"flagKey": "plain_string"})
    assert r.status == 200, r
    assert fp.stop() == 0

    spans = {}
    for name, caller in calls.items():
        span = jaeger.wait_span(caller.trace_id, lambda s, c=caller: s.parent == c.span_id,
                                f"Flagpole's span under the caller's ({name})")
        assert span.service == SERVICE
        assert span.tags["span.kind"] == "server", span.tags
        assert FINGERPRINT.match(span.tags["flagpole.environment_key.fingerprint"]), span.tags
        trace = jaeger.trace(caller.trace_id)
        assert_no_key(trace, env.client_key, env.server_key)
        assert "user-1" not in json.dumps(trace), "an identifier is on a span without record_identifier"
        spans[name] = span

    flags = spans["GET /api/v1/flags/"]
    assert flags.name == "GET /api/v1/flags/"
    assert flags.tags["http.route"] == "/api/v1/flags/"
    assert flags.tags["http.request.method"] == "GET"
    assert flags.tags["http.response.status_code"] == 200
    assert spans["GET /api/v1/identities/"].name == "GET /api/v1/identities/"
    ofrep = spans["POST /ofrep/v1/evaluate/flags/{key}"]
    assert ofrep.name == "POST /ofrep/v1/evaluate/flags/{key}"
    assert ofrep.tags["feature_flag.key"] == "bool_value"
    assert ofrep.tags["feature_flag.provider.name"] == "flagpole"
    assert ofrep.tags["feature_flag.result.reason"] in ("STATIC", "DEFAULT", "TARGETING_MATCH", "SPLIT")
    assert ofrep.tags["feature_flag.result.variant"]
    stream = spans["GET /sse/environments/{key}/stream"]
    assert stream.tags["http.route"] == "/sse/environments/{key}/stream"
    assert env.client_key not in stream.tags["url.path"]
    rpc = spans["flagd.evaluation.v1.Service/ResolveBoolean"]
    assert rpc.name == "flagd.evaluation.v1.Service/ResolveBoolean"
    assert (rpc.tags["rpc.system"], rpc.tags["rpc.service"], rpc.tags["rpc.method"]) == \
        ("grpc", "flagd.evaluation.v1.Service", "ResolveBoolean")
    assert rpc.tags["rpc.grpc.status_code"] == 0
    assert rpc.tags["feature_flag.key"] == "bool_value"
    connect = spans["connect flagd.evaluation.v1.Service/ResolveString"]
    assert connect.name == "flagd.evaluation.v1.Service/ResolveString"
    assert connect.tags["rpc.system"] == "connect_rpc"
    assert connect.tags["feature_flag.key"] == "plain_string"


def test_the_identifier_is_recorded_only_when_the_option_says_so(tmp_path, flagpole, jaeger):
    fp, envs = start_local(flagpole, tmp_path, otel_env(jaeger, "http/protobuf"),
                           telemetry={"record_identifier": True})
    caller = Caller.new()
    r = fp.post("/ofrep/v1/evaluate/flags/bool_value", {"context": {"targetingKey": "user-7"}},
                envs[0].client_key, headers=caller.headers())
    assert r.status == 200, r
    assert fp.stop() == 0
    span = jaeger.wait_span(caller.trace_id, lambda s: s.parent == caller.span_id, "the OFREP span")
    assert span.tags["feature_flag.context.id"] == "user-7"
    assert_no_key(jaeger.trace(caller.trace_id), envs[0].client_key, envs[0].server_key)


def test_otlp_metrics_arrive(tmp_path, flagpole, jaeger):
    fp, envs = start_local(flagpole, tmp_path, otel_env(jaeger, "grpc"))
    assert fp.get("/api/v1/flags/", envs[0].client_key).status == 200
    wait_until(lambda: "http.server.request.duration" in jaeger.log(), 60,
               f"no OTLP metrics reached the collector:\n{jaeger.log()[-2000:]}")
    assert "/api/v1/flags/" in jaeger.log()
    # /metrics is Prometheus as before.
    assert scrape(fp).value("flagpole_http_requests_total", route="flags", status="200") >= 1


def test_the_upstream_fetch_is_a_client_span_sending_traceparent(tmp_path, flagpole, jaeger, upstream):
    env = Env("traced_client", "ser.traced_server", make_document("traced_client"))
    upstream.set_document(env.server_key, env.document)
    fp = flagpole(config=upstream_config(upstream, [env]), env=otel_env(jaeger, "http/protobuf"))
    fp.wait_ready()
    first = upstream.requests_for(env.server_key)[0]
    traceparent = first.headers.get("traceparent")
    assert traceparent, f"the upstream got no traceparent: {first.headers}"
    version, trace_id, span_id, flags = traceparent.split("-")
    assert (version, flags) == ("00", "01")
    assert fp.stop() == 0

    span = jaeger.wait_span(trace_id, lambda s: s.span_id == span_id, "the upstream fetch span")
    assert span.name == "GET /environment-document/"
    assert span.tags["span.kind"] == "client"
    assert span.tags["http.response.status_code"] == 200
    assert span.tags["url.full"].endswith("/api/v1/environment-document/")
    assert_no_key(jaeger.trace(trace_id), env.server_key, env.client_key)


def test_a_parent_based_sampler_follows_the_caller(tmp_path, flagpole, jaeger):
    fp, envs = start_local(flagpole, tmp_path,
                           otel_env(jaeger, "grpc", OTEL_TRACES_SAMPLER="parentbased_always_off"))
    unsampled, sampled = Caller.new(sampled=False), Caller.new(sampled=True)
    for caller in (unsampled, sampled):
        assert fp.get("/api/v1/flags/", envs[0].client_key, headers=caller.headers()).status == 200
    assert fp.stop() == 0
    jaeger.wait_span(sampled.trace_id, lambda s: s.parent == sampled.span_id, "the sampled request's span")
    assert jaeger.trace(unsampled.trace_id) is None, "a span the caller did not sample was exported"


def test_a_ratio_sampler_keeps_the_traces_its_ratio_selects(tmp_path, flagpole, jaeger):
    fp, envs = start_local(flagpole, tmp_path, otel_env(
        jaeger, "http/protobuf", OTEL_TRACES_SAMPLER="traceidratio", OTEL_TRACES_SAMPLER_ARG="0.5"))
    # The ratio sampler reads the trace id's low 64 bits: small ones fall within the ratio.
    kept = Caller.new(trace_id="5a" * 8 + "00000000000000ff")
    dropped = Caller.new(trace_id="5a" * 8 + "ffffffffffffff00")
    for caller in (dropped, kept):
        assert fp.get("/api/v1/flags/", envs[0].client_key, headers=caller.headers()).status == 200
    assert fp.stop() == 0
    jaeger.wait_span(kept.trace_id, lambda s: s.parent == kept.span_id, "the span the ratio keeps")
    assert jaeger.trace(dropped.trace_id) is None, "a trace outside the ratio was exported"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_collector_that_is_gone_costs_requests_nothing(tmp_path, flagpole, jaeger, protocol):
    fp, envs = start_local(flagpole, tmp_path, otel_env(jaeger, protocol, OTEL_EXPORTER_OTLP_TIMEOUT="2000"))
    key = envs[0].client_key
    jaeger.stop()
    sent = 0
    for wave in range(2):
        for _ in range(20):
            r = fp.get("/api/v1/flags/", key, headers=Caller.new().headers())
            assert r.status == 200, r
            sent += 1
        wait_until(lambda: scrape(fp).value("flagpole_otel_spans_dropped_total") >= sent, 60,
                   f"wave {wave}: the dropped spans were not counted")
    outage = "spans cannot be exported"
    assert fp.stderr_text().count(outage) == 1, fp.stderr_tail()

    jaeger.start()
    caller = Caller.new()
    wait_until(lambda: fp.get("/api/v1/flags/", key, headers=caller.headers()).status == 200
               and "the collector takes spans again" in fp.stderr_text(), 60,
               f"the export never recovered:\n{fp.stderr_tail()}", interval=1.0)
    assert fp.stderr_text().count(outage) == 1, fp.stderr_tail()


def test_sdk_disabled_sends_nothing(tmp_path, flagpole, jaeger):
    fp, envs = start_local(flagpole, tmp_path, otel_env(jaeger, "grpc", OTEL_SDK_DISABLED="true"))
    caller = Caller.new()
    assert fp.get("/api/v1/flags/", envs[0].client_key, headers=caller.headers()).status == 200
    assert "OpenTelemetry: exporting" not in fp.stderr_text()
    assert scrape(fp).get("flagpole_otel_spans_dropped_total") is None
    assert fp.stop() == 0
    # The same request with export on reaches Jaeger: its absence above is the switch's doing.
    on, _ = start_local(flagpole, tmp_path / "on", otel_env(jaeger, "grpc"))
    marker = Caller.new()
    assert on.get("/api/v1/flags/", envs[0].client_key, headers=marker.headers()).status == 200
    assert on.stop() == 0
    jaeger.wait_span(marker.trace_id, lambda s: s.parent == marker.span_id, "the enabled process's span")
    assert jaeger.trace(caller.trace_id) is None, "OTEL_SDK_DISABLED=true and a span was sent"
