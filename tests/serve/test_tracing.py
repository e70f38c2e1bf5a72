"""OpenTelemetry against a real backend: Jaeger receives what Flagpole exports over OTLP (gRPC and
HTTP/protobuf) and the tests read it back through Jaeger's query API.

The test is the client: it sends `traceparent` (and `tracestate`, `baggage`) and expects
Flagpole's server span in the same trace with the client's span as its parent, on every front
door (Flagsmith API, OFREP, flagd over gRPC and Connect, a change stream's opening), over
each OTLP protocol (gRPC, HTTP/protobuf, HTTP/JSON, chosen per signal); the upstream fetch and a
shadow verification's post are client spans whose `traceparent` the scripted API received; the
fleet store's Redis commands are client spans with the database conventions and no key (that
background work only with `background_spans`: an idle replica makes no trace by default); the
server spans carry the connection's attributes (`url.scheme`, `client.address`,
`user_agent.original`) and a failed flag evaluation its `error.type`; each process has its own
`service.instance.id`; the sampler decides what is kept; a collector that is gone costs requests
nothing and the drops are counted; an export refused (404) is counted per signal and logged once
a minute; `OTEL_SDK_DISABLED=true` sends nothing. Flagpole flushes its spans while it drains, so once it
has exited what Jaeger lacks was never sent (see jaeger_support).
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl

import grpc
import pytest

from documents import make_document
from jaeger_support import Caller, Jaeger
from metrics_support import FINGERPRINT, scrape
from serve_harness import (HOST, Env, JsonHandler, ScriptedApi, free_port, http_request, local_config,
                           standard_envs, upstream_config, wait_until, write_documents)
from fleet_support import RedisServer, environment_id, fleet_config, need_redis
from tls_certs import Authority

from openfeature.schemas.protobuf.flagd.evaluation.v1 import evaluation_pb2 as v1
from openfeature.schemas.protobuf.flagd.evaluation.v1 import evaluation_pb2_grpc as v1_grpc

PROTOCOLS = ["grpc", "http/protobuf", "http/json"]
SERVICE = "flagpole-under-test"
AGENT = "tracing-test/1.0 (+flagpole)"
BACKGROUND = {"telemetry": {"background_spans": True}}


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

    r = fp.get("/api/v1/flags/", env.client_key,
               headers=traced("GET /api/v1/flags/").headers(**{"User-Agent": AGENT}))
    assert r.status == 200, r
    r = fp.get("/api/v1/identities/?identifier=user-1", env.client_key,
               headers=traced("GET /api/v1/identities/").headers())
    assert r.status == 200, r
    r = fp.post("/ofrep/v1/evaluate/flags/bool_value", {"context": {"targetingKey": "user-1"}}, env.client_key,
                headers=traced("POST /ofrep/v1/evaluate/flags/{key}").headers())
    assert r.status == 200, r
    r = fp.post("/ofrep/v1/evaluate/flags/no_such_flag", {"context": {}}, env.client_key,
                headers=traced("OFREP 404").headers())
    assert r.status == 404, r
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
    caller = traced("flagd NOT_FOUND")
    with grpc.insecure_channel(f"{HOST}:{grpc_port}") as channel:
        with pytest.raises(grpc.RpcError) as refused:
            v1_grpc.ServiceStub(channel).ResolveBoolean(
                v1.ResolveBooleanRequest(flag_key="no_such_flag"),
                metadata=[("x-environment-key", env.client_key), ("traceparent", caller.traceparent)],
                timeout=10,
            )
    assert refused.value.code() == grpc.StatusCode.NOT_FOUND
    caller = traced("connect flagd.evaluation.v1.Service/ResolveString")
    r = http_request(grpc_port, "POST", "/flagd.evaluation.v1.Service/ResolveString",
                     caller.headers(**{"X-Environment-Key": env.client_key}), {"flagKey": "plain_string"})
    assert r.status == 200, r
    caller = traced("connect NOT_FOUND")
    r = http_request(grpc_port, "POST", "/flagd.evaluation.v1.Service/ResolveString",
                     caller.headers(**{"X-Environment-Key": env.client_key}), {"flagKey": "no_such_flag"})
    assert r.status == 404, r
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
    # The HTTP server conventions' connection attributes.
    assert flags.tags["url.scheme"] == "http", flags.tags
    assert flags.tags["client.address"] == HOST, flags.tags
    assert isinstance(flags.tags["client.port"], int), flags.tags
    assert flags.tags["user_agent.original"] == AGENT, flags.tags
    assert "error.type" not in flags.tags, flags.tags
    missing = spans["OFREP 404"]
    assert missing.tags["http.response.status_code"] == 404, missing.tags
    assert missing.tags["feature_flag.key"] == "no_such_flag", missing.tags
    assert missing.tags["error.type"] == "flag_not_found", missing.tags
    assert "user_agent.original" not in missing.tags, missing.tags
    assert spans["GET /api/v1/identities/"].name == "GET /api/v1/identities/"
    ofrep = spans["POST /ofrep/v1/evaluate/flags/{key}"]
    assert ofrep.name == "POST /ofrep/v1/evaluate/flags/{key}"
    assert ofrep.tags["feature_flag.key"] == "bool_value"
    assert ofrep.tags["feature_flag.provider.name"] == "flagpole"
    assert ofrep.tags["feature_flag.result.reason"] in ("STATIC", "DEFAULT", "TARGETING_MATCH", "SPLIT")
    assert ofrep.tags["feature_flag.result.variant"]
    assert "error.type" not in ofrep.tags, ofrep.tags
    stream = spans["GET /sse/environments/{key}/stream"]
    assert stream.tags["http.route"] == "/sse/environments/{key}/stream"
    assert env.client_key not in stream.tags["url.path"]
    rpc = spans["flagd.evaluation.v1.Service/ResolveBoolean"]
    assert rpc.name == "flagd.evaluation.v1.Service/ResolveBoolean"
    assert (rpc.tags["rpc.system"], rpc.tags["rpc.service"], rpc.tags["rpc.method"]) == \
        ("grpc", "flagd.evaluation.v1.Service", "ResolveBoolean")
    assert rpc.tags["rpc.grpc.status_code"] == 0
    assert rpc.tags["client.address"] == HOST, rpc.tags
    assert rpc.tags["feature_flag.key"] == "bool_value"
    connect = spans["connect flagd.evaluation.v1.Service/ResolveString"]
    assert connect.name == "flagd.evaluation.v1.Service/ResolveString"
    assert connect.tags["rpc.system"] == "connect_rpc"
    assert connect.tags["feature_flag.key"] == "plain_string"
    # A flag that is not there, over gRPC and Connect: the flag and the conventions' error.type.
    for name, code in (("flagd NOT_FOUND", 5), ("connect NOT_FOUND", None)):
        missing = spans[name]
        assert missing.tags["feature_flag.key"] == "no_such_flag", (name, missing.tags)
        assert missing.tags["error.type"] == "flag_not_found", (name, missing.tags)
        if code is not None:
            assert missing.tags["rpc.grpc.status_code"] == code, missing.tags


def test_flag_set_evaluations_join_the_callers_trace(tmp_path, flagpole, jaeger):
    """A flagd flag file served keyless: OFREP, flagd gRPC and Connect evaluations are server
    spans under the caller's, with the flag, its reason and variant, a missing flag's error.type,
    and no environment-key fingerprint (there is no key)."""
    flags = tmp_path / "flags.json"
    flags.write_text(json.dumps({"flags": {
        "shown": {"state": "ENABLED", "variants": {"on": True, "off": False}, "defaultVariant": "off",
                  "targeting": {"if": [{"==": [{"var": "plan"}, "pro"]}, "on"]}}}}))
    grpc_port = free_port()
    envs = standard_envs()
    paths = write_documents(tmp_path / "docs", envs)
    config = local_config(paths, envs, flagpole={"grpc": {"port": grpc_port}})
    config["flags"] = [{"uri": str(flags)}]
    fp = flagpole(config=config, env=otel_env(jaeger, "grpc"))
    fp.wait_ready()
    calls = {name: Caller.new() for name in ("ofrep", "ofrep 404", "grpc", "connect")}
    r = fp.post("/ofrep/v1/evaluate/flags/shown", {"context": {"plan": "pro"}},
                headers=calls["ofrep"].headers())
    assert r.status == 200 and r.json()["value"] is True, r
    r = fp.post("/ofrep/v1/evaluate/flags/gone", {"context": {}}, headers=calls["ofrep 404"].headers())
    assert r.status == 404, r
    with grpc.insecure_channel(f"{HOST}:{grpc_port}") as channel:
        answer = v1_grpc.ServiceStub(channel).ResolveBoolean(
            v1.ResolveBooleanRequest(flag_key="shown"), metadata=[("traceparent", calls["grpc"].traceparent)],
            timeout=10)
    assert (answer.value, answer.reason) == (False, "DEFAULT")
    r = http_request(grpc_port, "POST", "/flagd.evaluation.v1.Service/ResolveBoolean", calls["connect"].headers(),
                     {"flagKey": "shown", "context": {"plan": "pro"}})
    assert r.status == 200, r
    assert fp.stop() == 0

    spans = {name: jaeger.wait_span(c.trace_id, lambda s, c=c: s.parent == c.span_id,
                                    f"Flagpole's span under the caller's ({name})") for name, c in calls.items()}
    for name, span in spans.items():
        assert span.tags["span.kind"] == "server", (name, span.tags)
        assert "flagpole.environment_key.fingerprint" not in span.tags, (name, span.tags)
    assert spans["ofrep"].tags["feature_flag.key"] == "shown"
    assert (spans["ofrep"].tags["feature_flag.result.reason"], spans["ofrep"].tags["feature_flag.result.variant"]) \
        == ("TARGETING_MATCH", "on"), spans["ofrep"].tags
    assert spans["ofrep 404"].tags["error.type"] == "flag_not_found", spans["ofrep 404"].tags
    assert spans["grpc"].name == "flagd.evaluation.v1.Service/ResolveBoolean"
    assert (spans["grpc"].tags["feature_flag.key"], spans["grpc"].tags["feature_flag.result.reason"]) \
        == ("shown", "DEFAULT"), spans["grpc"].tags
    assert spans["connect"].tags["rpc.system"] == "connect_rpc", spans["connect"].tags
    assert spans["connect"].tags["feature_flag.result.variant"] == "on", spans["connect"].tags


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


@pytest.mark.parametrize("metrics_protocol", ["grpc", "http/json"])
def test_otlp_metrics_arrive(tmp_path, flagpole, jaeger, metrics_protocol):
    # Spans over HTTP/protobuf, metrics over their own protocol (the per-signal variable wins); over
    # HTTP the shared endpoint serves both, gRPC is Jaeger's other port.
    extra = {"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": metrics_protocol}
    if metrics_protocol == "grpc":
        extra["OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"] = jaeger.endpoint("grpc")
    fp, envs = start_local(flagpole, tmp_path, otel_env(jaeger, "http/protobuf", **extra))
    caller = Caller.new()
    assert fp.get("/api/v1/flags/", envs[0].client_key, headers=caller.headers()).status == 200
    wait_until(lambda: "http.server.request.duration" in jaeger.log(), 60,
               f"no OTLP metrics reached the collector:\n{jaeger.log()[-2000:]}")
    assert "/api/v1/flags/" in jaeger.log()
    # /metrics is Prometheus as before.
    metrics = scrape(fp)
    assert metrics.value("flagpole_http_requests_total", route="flags", status="200") >= 1
    # Exports that work leave the failure counter at 0, present from the start.
    for signal in ("traces", "metrics"):
        assert metrics.get("flagpole_otel_export_failures_total", signal=signal) == 0, signal
    assert fp.stop() == 0
    jaeger.wait_span(caller.trace_id, lambda s: s.parent == caller.span_id, "the span sent over HTTP/protobuf")


def test_an_unknown_protocol_stops_the_start_naming_the_variable(tmp_path, flagpole, jaeger):
    envs = standard_envs()
    paths = write_documents(tmp_path / "docs", envs)
    fp = flagpole(config=local_config(paths, envs), start=False,
                  env=otel_env(jaeger, "grpc", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="http/xml"))
    fp.expect_clean_exit = False
    fp.start(wait=False)
    wait_until(lambda: not fp.running(), 60, "Flagpole started with OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/xml")
    assert fp.proc.returncode != 0
    assert "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" in fp.stderr_text(), fp.stderr_tail()


def test_the_upstream_fetch_is_a_client_span_sending_traceparent(tmp_path, flagpole, jaeger, upstream):
    env = Env("traced_client", "ser.traced_server", make_document("traced_client"))
    upstream.set_document(env.server_key, env.document)
    # Polls are background work: traced with the switch on only.
    fp = flagpole(config=upstream_config(upstream, [env], flagpole=BACKGROUND), env=otel_env(jaeger, "http/protobuf"))
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


class ShadowApi(ScriptedApi):
    """The Flagsmith API a shadow verification asks: `env`'s document, and identities answered
    with no flags (a disagreement, which the comparison counts); each post's headers kept."""

    def __init__(self, env: Env) -> None:
        super().__init__()
        self.posts: list[dict[str, str]] = []
        api = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:  # noqa: N802
                if self.headers.get("X-Environment-Key") != env.server_key:
                    return self._send(401, b'{"detail":"Invalid key"}')
                self._send(200, json.dumps(env.document).encode())

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                with api.lock:
                    api.posts.append({k.lower(): v for k, v in self.headers.items()})
                self._send(200, json.dumps({"identifier": body["identifier"], "traits": [], "flags": []}).encode())

        self.serve(Handler)


def test_a_shadow_post_is_a_client_span_sending_traceparent(flagpole, jaeger):
    env = Env("shadow_traced_client", "ser.shadow_traced_server", make_document("shadow_traced_client"))
    api = ShadowApi(env)
    try:
        config = {"environment_key_pairs": [env.pair], "api_url": api.api_url, "api_poll_frequency_seconds": 3600,
                  "flagpole": {"shadow": {"sample_rate": 1, "max_per_second": 1000}}}
        fp = flagpole(config=config, env=otel_env(jaeger, "http/protobuf"))
        fp.wait_ready()
        assert fp.get("/api/v1/identities/?identifier=shadowed-user", env.server_key).status == 200
        wait_until(lambda: sum(s.value for s in scrape(fp).series("flagpole_shadow_comparisons_total")) >= 1,
                   60, "the shadow comparison never finished")
        assert fp.stop() == 0
        with api.lock:
            post = api.posts[0]
    finally:
        api.stop()
    traceparent = post.get("traceparent")
    assert traceparent, f"the shadow post sent no traceparent: {post}"
    version, trace_id, span_id, flags = traceparent.split("-")
    assert (version, flags) == ("00", "01")
    span = jaeger.wait_span(trace_id, lambda s: s.span_id == span_id, "the shadow post's span")
    assert span.name == "POST /identities/"
    assert span.tags["span.kind"] == "client"
    assert span.tags["http.request.method"] == "POST"
    assert span.tags["http.response.status_code"] == 200
    assert span.tags["url.full"] == f"{api.api_url}/identities/"
    assert FINGERPRINT.match(span.tags["flagpole.environment_key.fingerprint"]), span.tags
    trace = jaeger.trace(trace_id)
    assert_no_key(trace, env.server_key, env.client_key)
    assert "shadowed-user" not in json.dumps(trace), "the identifier is on the shadow span"


def test_the_fleet_stores_redis_commands_are_client_spans(tmp_path, flagpole, jaeger, upstream):
    need_redis()
    redis = RedisServer(tmp_path / "redis").start()
    env = Env("traced_fleet_client", "ser.traced_fleet_server", make_document("traced_fleet_client"))
    upstream.set_document(env.server_key, env.document)
    try:
        config = fleet_config(upstream, redis, [env])
        config["flagpole"].update(BACKGROUND)
        fp = flagpole(config=config, env=otel_env(jaeger, "grpc"))
        fp.wait_ready()
        key = f"flagpole:env:{environment_id(env.client_key)}:document"
        wait_until(lambda: redis.cli("HEXISTS", key, "body") == "1", 60, f"{key} never written")
        assert fp.stop() == 0
        names = redis.cli("KEYS", "*").split()
    finally:
        redis.stop()
    spans = wait_until(lambda: [s for s in jaeger.spans_of(SERVICE) if s.tags.get("db.system.name") == "redis"],
                       60, "no Redis span reached Jaeger")
    operations = {s.name for s in spans}
    assert operations & {"EVALSHA", "EVAL"}, operations  # leases and writes are scripts
    for span in spans:
        assert span.tags["span.kind"] == "client", span.tags
        assert span.tags["db.operation.name"] == span.name, span.tags
        assert span.name.replace("BATCH", "").strip().isalpha(), span.name
        assert (span.tags["server.address"], span.tags["server.port"]) == ("127.0.0.1", redis.port), span.tags
        assert span.tags["db.namespace"] == "0", span.tags
        text = json.dumps(span.raw)
        for secret in (env.client_key, env.server_key, environment_id(env.client_key), *names):
            assert secret not in text, f"{secret} is on a Redis span: {span.tags}"


def assert_exported_with_defaults(flagpole, tmp_path, jaeger, key: str, what: str) -> None:
    """The control of a "nothing was exported" test: the same request, to a process with the
    default settings, does reach Jaeger, so an absence seen before it is the setting's doing (by
    the time this span has arrived, any span of the earlier process would have too)."""
    on, _ = start_local(flagpole, tmp_path / "defaults", otel_env(jaeger, "grpc"))
    marker = Caller.new()
    assert on.get("/api/v1/flags/", key, headers=marker.headers()).status == 200
    assert on.stop() == 0
    jaeger.wait_span(marker.trace_id, lambda s: s.parent == marker.span_id, what)


def test_always_off_exports_nothing_even_under_a_sampled_parent(tmp_path, flagpole, jaeger):
    fp, envs = start_local(flagpole, tmp_path, otel_env(jaeger, "grpc", OTEL_TRACES_SAMPLER="always_off"))
    sampled = Caller.new(sampled=True)
    assert fp.get("/api/v1/flags/", envs[0].client_key, headers=sampled.headers()).status == 200
    assert fp.stop() == 0
    assert_exported_with_defaults(flagpole, tmp_path, jaeger, envs[0].client_key, "the default sampler's span")
    assert jaeger.trace(sampled.trace_id) is None, "always_off exported a span"


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


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
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
    metrics = scrape(fp)
    assert metrics.get("flagpole_otel_spans_dropped_total") is None
    assert not metrics.series("flagpole_otel_export_failures_total")
    assert fp.stop() == 0
    assert_exported_with_defaults(flagpole, tmp_path, jaeger, envs[0].client_key, "the enabled process's span")
    assert jaeger.trace(caller.trace_id) is None, "OTEL_SDK_DISABLED=true and a span was sent"


def test_a_span_over_tls_says_https(tmp_path, flagpole, jaeger):
    ca = Authority(tmp_path)
    pair = ca.issue()
    cert, key = tmp_path / "server.crt", tmp_path / "server.key"
    cert.write_bytes(pair.cert_pem)
    key.write_bytes(pair.key_pem)
    envs = standard_envs()
    paths = write_documents(tmp_path / "docs", envs)
    config = local_config(paths, envs, server={"tls": {"cert_path": str(cert), "key_path": str(key)}})
    fp = flagpole(config=config, env=otel_env(jaeger, "http/protobuf"), start=False)
    fp.start(wait=False)
    context = ssl.create_default_context(cafile=str(ca.ca_path))
    caller = Caller.new()

    def get() -> int:
        if not fp.running():
            raise AssertionError(f"flagpole exited:\n{fp.stderr_tail()}")
        conn = http.client.HTTPSConnection(HOST, fp.port, context=context, timeout=10)
        try:
            conn.request("GET", "/api/v1/flags/",
                         headers=caller.headers(**{"X-Environment-Key": envs[0].client_key, "User-Agent": AGENT}))
            return conn.getresponse().status
        except OSError:
            return 0
        finally:
            conn.close()

    wait_until(lambda: get() == 200, 60, f"no answer over HTTPS:\n{fp.stderr_tail()}", interval=0.2)
    assert fp.stop() == 0
    span = jaeger.wait_span(caller.trace_id, lambda s: s.parent == caller.span_id and s.tags.get(
        "http.response.status_code") == 200, "the HTTPS request's span")
    assert span.tags["url.scheme"] == "https", span.tags
    assert span.tags["client.address"] == HOST, span.tags
    assert span.tags["user_agent.original"] == AGENT, span.tags


def process_tags(jaeger: Jaeger, caller: Caller) -> dict:
    """The resource attributes of the process whose span is under `caller`'s."""
    jaeger.wait_span(caller.trace_id, lambda s: s.parent == caller.span_id, "the request's span")
    trace = jaeger.trace(caller.trace_id)
    span = next(s for s in trace["spans"] if any(r.get("spanID") == caller.span_id for r in s.get("references", [])))
    process = trace["processes"][span["processID"]]
    return {t["key"]: t["value"] for t in process.get("tags", [])}


def test_each_process_has_its_own_service_instance_id(tmp_path, flagpole, jaeger):
    ids = []
    for n, extra in enumerate([{}, {}, {"OTEL_RESOURCE_ATTRIBUTES": "service.instance.id=replica-c"}]):
        fp, envs = start_local(flagpole, tmp_path / f"p{n}", otel_env(jaeger, "http/protobuf", **extra))
        caller = Caller.new()
        assert fp.get("/api/v1/flags/", envs[0].client_key, headers=caller.headers()).status == 200
        assert fp.stop() == 0
        ids.append(process_tags(jaeger, caller).get("service.instance.id"))
    first, second, named = ids
    assert first and second and first != second, ids
    assert len(first) == 36 and first.count("-") == 4, f"not a UUID: {first}"
    assert named == "replica-c", "OTEL_RESOURCE_ATTRIBUTES' service.instance.id is not the one used"


class RefusingCollector(ScriptedApi):
    """An HTTP server that answers every OTLP export 404 (a trace-only backend's metrics path, a
    wrong path), keeping the paths posted to."""

    def __init__(self) -> None:
        super().__init__()
        self.paths: list[str] = []
        collector = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with collector.lock:
                    collector.paths.append(self.path)
                self._send(404, b'{"detail":"Not found"}')

        self.serve(Handler)


def test_failed_exports_are_logged_and_counted(tmp_path, flagpole):
    collector = RefusingCollector()
    try:
        endpoint = f"http://{HOST}:{collector.port}"
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
               "OTEL_SERVICE_NAME": SERVICE, "OTEL_METRIC_EXPORT_INTERVAL": "300"}
        fp, envs = start_local(flagpole, tmp_path, env)
        first = scrape(fp)
        for signal in ("traces", "metrics"):
            assert first.get("flagpole_otel_export_failures_total", signal=signal) is not None, signal

        def failures(signal: str) -> float:
            return scrape(fp).value("flagpole_otel_export_failures_total", signal=signal)

        for _ in range(3):
            assert fp.get("/api/v1/flags/", envs[0].client_key, headers=Caller.new().headers()).status == 200
        wait_until(lambda: failures("traces") >= 1 and failures("metrics") >= 4, 60,
                   f"the refused exports were not counted:\n{fp.stderr_tail()}")
        assert fp.get("/api/v1/flags/", envs[0].client_key, headers=Caller.new().headers()).status == 200
        wait_until(lambda: failures("traces") >= 2, 60, "the second refused span export was not counted")
        log = fp.stderr_text()
        with collector.lock:
            assert {"/v1/traces", "/v1/metrics"} <= set(collector.paths), collector.paths
        for what, path in (("spans", "/v1/traces"), ("metrics", "/v1/metrics")):
            lines = [line for line in log.splitlines() if f"OpenTelemetry: {what} cannot be exported" in line]
            # Logged once however many exports failed (at most a line a minute), at WARN, saying
            # where and why.
            assert len(lines) == 1, "\n".join(lines) or fp.stderr_tail()
            assert "WARN" in lines[0] and f"{endpoint}{path}" in lines[0] and "404" in lines[0], lines[0]
        assert fp.stop() == 0
    finally:
        collector.stop()


def test_background_work_makes_no_spans_by_default(tmp_path, flagpole, jaeger, upstream):
    # An idle fleet replica polls upstream and renews its lease in Redis every second or so; none
    # of that is traced unless flagpole.telemetry.background_spans is on (the Redis test above
    # turns it on and sees those spans).
    need_redis()
    redis = RedisServer(tmp_path / "redis").start()
    env = Env("idle_fleet_client", "ser.idle_fleet_server", make_document("idle_fleet_client"))
    upstream.set_document(env.server_key, env.document)
    service = f"{SERVICE}-idle"
    try:
        fp = flagpole(config=fleet_config(upstream, redis, [env]),
                      env=otel_env(jaeger, "grpc", OTEL_SERVICE_NAME=service))
        fp.wait_ready()
        # A fixed window of idle work: several polls and lease renewals.
        wait_until(lambda: len(upstream.requests_for(env.server_key)) >= 4, 60, "the replica did not poll")
        caller = Caller.new()
        assert fp.get("/api/v1/flags/", env.client_key, headers=caller.headers()).status == 200
        assert fp.stop() == 0
    finally:
        redis.stop()
    # Flushed at the drain: once the request's span is there, every span sent is.
    jaeger.wait_span(caller.trace_id, lambda s: s.parent == caller.span_id, "the request's span")
    spans = jaeger.spans_of(service)
    # (The harness's readiness probes are requests: server spans, traced as any.)
    stray = [(s.name, s.tags.get("span.kind")) for s in spans if s.tags.get("span.kind") != "server"]
    assert not stray, f"background work made spans by default: {stray[:10]}"
    sent = [r.headers.get("traceparent") for r in upstream.requests_for(env.server_key)]
    assert not any(sent), "an untraced poll sent a traceparent"
