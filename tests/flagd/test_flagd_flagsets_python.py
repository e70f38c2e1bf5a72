"""The Python flagd provider (openfeature-provider-flagd 0.6.1) against Flagpole serving a flagd
flag file (`flags` in config.json), keyless as flagd serves it: in RPC mode (Flagpole evaluates,
flagd.evaluation.v2 over gRPC) and in IN_PROCESS mode (the provider takes the definitions from
flagd's sync service, `flagd.sync.v1.FlagSyncService`, and evaluates them itself), on the sync
service's own port and on the flagd port with a selector. Both modes answer every flag alike:
values, variants, reasons, metadata and errors; a change of the file reaches both (a
configuration change naming the keys that changed, then the new values). The sync service is
also called directly: its messages and selectors."""

from __future__ import annotations

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
from openfeature.schemas.protobuf.flagd.sync.v1 import sync_pb2, sync_pb2_grpc

from flagsets_support import FLAG_SET_ID, FLAGS, changed, flagsets_process, write_flags
from serve_harness import wait_until

_domains = itertools.count()

# (resolver, flag, caller's default, context) → (value, variant, reason, error code)
CASES = [
    (("boolean", "new-checkout", False, None), (True, "on", "STATIC", None)),
    (("string", "banner", "x", None), ("Hello", "plain", "DEFAULT", None)),
    (("string", "banner", "x", {"plan": "pro"}), ("Hello, pro!", "fancy", "TARGETING_MATCH", None)),
    (("integer", "retries", -1, None), (3, "few", "STATIC", None)),
    (("float", "ratio", -1.0, None), (0.75, "high", "STATIC", None)),
    (("object", "theme", {}, None), ({"bg": "#fff", "depth": 1}, "light", "STATIC", None)),
    (("boolean", "retired", False, None), (False, None, "DISABLED", None)),
    (("string", "unset", "mine", None), ("mine", None, "DEFAULT", None)),
    (("boolean", "nowhere", False, None), (False, None, "ERROR", ErrorCode.FLAG_NOT_FOUND)),
    (("string", "new-checkout", "x", None), ("x", None, "ERROR", ErrorCode.TYPE_MISMATCH)),
]


@pytest.fixture
def served(tmp_path):
    flags_path = write_flags(tmp_path / "flags" / "shop.flagd.json", FLAGS)
    fp = flagsets_process(tmp_path / "srv", flags_path)
    fp.start()
    fp.wait_grpc()
    fp.flags_path = flags_path
    yield fp
    assert fp.stop() == 0, fp.stderr_tail()


MODES = {
    # RPC: Flagpole evaluates; keyless, as flagd serves its flags.
    "rpc": lambda fp: dict(port=fp.grpc_port, resolver_type=ResolverType.RPC, cache=CacheType.DISABLED),
    # In-process on the sync service's own port (flagd's 8015).
    "in-process": lambda fp: dict(port=fp.sync_port, resolver_type=ResolverType.IN_PROCESS),
    # In-process on the flagd port, the set picked by its flagSetId.
    "in-process-selector": lambda fp: dict(port=fp.grpc_port, resolver_type=ResolverType.IN_PROCESS,
                                           selector=f"flagSetId={FLAG_SET_ID}"),
}


def client_for(**options):
    domain = f"flagsets-{next(_domains)}"
    provider = FlagdProvider(host="127.0.0.1", deadline_ms=5000, retry_backoff_ms=200, **options)
    api.set_provider_and_wait(provider, domain)
    return api.get_client(domain), provider


def evaluate(client, resolver, flag, default, ctx):
    context = EvaluationContext("user-1", ctx) if ctx is not None else None
    return getattr(client, f"get_{resolver}_details")(flag, default, context)


@pytest.mark.parametrize("mode", MODES)
def test_every_flag_answers_as_flagd(served, mode):
    client, provider = client_for(**MODES[mode](served))
    try:
        for (resolver, flag, default, ctx), (value, variant, reason, error) in CASES:
            d = evaluate(client, resolver, flag, default, ctx)
            got = (d.value, d.variant, d.reason, d.error_code)
            assert got == (value, variant, reason, error), f"{mode} {resolver} {flag} {ctx}: {d}"
            if resolver == "integer":
                assert type(d.value) is int, d
            if resolver == "float":
                assert type(d.value) is float, d
        # Metadata: the set's under the flag's (the flag's `team` wins).
        meta = dict(client.get_boolean_details("new-checkout", False).flag_metadata)
        assert meta.get("team") == "checkout" and meta.get("owner") == "ana", meta
        assert meta.get("flagSetId") == FLAG_SET_ID and meta.get("version") == 3, meta
    finally:
        provider.shutdown()


@pytest.mark.parametrize("mode", MODES)
def test_a_file_change_reaches_the_provider(served, mode):
    client, provider = client_for(**MODES[mode](served))
    changes: list[list[str]] = []
    got = threading.Event()

    def on_change(details):
        changes.append(list(details.flags_changed or []))
        if "banner" in changes[-1]:
            got.set()

    client.add_handler(ProviderEvent.PROVIDER_CONFIGURATION_CHANGED, on_change)
    try:
        assert client.get_string_details("banner", "x").value == "Hello"
        write_flags(served.flags_path, changed(FLAGS))
        assert got.wait(30), f"no configuration change naming banner: {changes}\n{served.stderr_tail()}"
        # The keys that changed: one edited, one added, one removed; nothing else.
        named = next(c for c in changes if "banner" in c)
        assert {"banner", "limits", "ratio"} <= set(named), named
        assert "new-checkout" not in named, named
        wait_until(lambda: client.get_string_details("banner", "x").value == "Hello again", 15,
                   "the new value never arrived")
        d = client.get_integer_details("limits", -1)
        assert (d.value, d.variant) == (9, "high"), d
        d = client.get_float_details("ratio", -1.0)
        assert (d.value, d.error_code) == (-1.0, ErrorCode.FLAG_NOT_FOUND), d
    finally:
        provider.shutdown()


def _sync_stub(port: int):
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    return channel, sync_pb2_grpc.FlagSyncServiceStub(channel)


def test_the_sync_service_answers_as_flagd(served):
    for port in (served.sync_port, served.grpc_port):
        channel, stub = _sync_stub(port)
        with channel:
            everything = json.loads(stub.FetchAllFlags(sync_pb2.FetchAllFlagsRequest(), timeout=10)
                                    .flag_configuration)
            assert set(everything["flags"]) == set(FLAGS["flags"]), everything
            # `$ref`s resolved, so a reader needs no `$evaluators`.
            assert "$ref" not in json.dumps(everything["flags"]["banner"]["targeting"]), everything
            # The selector: the header wins over the (deprecated) field.
            by_header = stub.FetchAllFlags(sync_pb2.FetchAllFlagsRequest(selector="source=elsewhere"),
                                           metadata=[("flagd-selector", f"flagSetId={FLAG_SET_ID}")],
                                           timeout=10)
            assert set(json.loads(by_header.flag_configuration)["flags"]) == set(FLAGS["flags"])
            by_field = stub.FetchAllFlags(sync_pb2.FetchAllFlagsRequest(selector="source=shop-file"),
                                          timeout=10)
            assert set(json.loads(by_field.flag_configuration)["flags"]) == set(FLAGS["flags"])
            # A selector naming nothing: no flags, as flagd's store answers it.
            nothing = stub.FetchAllFlags(sync_pb2.FetchAllFlagsRequest(),
                                         metadata=[("flagd-selector", "source=elsewhere")], timeout=10)
            assert json.loads(nothing.flag_configuration) == {"flags": {}}
            metadata = stub.GetMetadata(sync_pb2.GetMetadataRequest(), timeout=10)
            assert metadata.HasField("metadata") and dict(metadata.metadata) == {}
            # SyncFlags: the whole configuration at once, with a sync context.
            stream = stub.SyncFlags(sync_pb2.SyncFlagsRequest(provider_id="test"), timeout=10)
            first = next(stream)
            assert json.loads(first.flag_configuration) == everything
            assert first.HasField("sync_context")
            stream.cancel()


def test_sync_only_port_serves_no_evaluation(served):
    from openfeature.schemas.protobuf.flagd.evaluation.v2 import evaluation_pb2 as v2
    from openfeature.schemas.protobuf.flagd.evaluation.v2 import evaluation_pb2_grpc as v2_grpc
    with grpc.insecure_channel(f"127.0.0.1:{served.sync_port}") as channel:
        stub = v2_grpc.ServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.ResolveBoolean(v2.ResolveBooleanRequest(flag_key="new-checkout"), timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
