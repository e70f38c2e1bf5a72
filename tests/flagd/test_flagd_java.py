"""The Java flagd provider (dev.openfeature.contrib.providers:flagd 0.11.15, RPC mode: gRPC,
flagd.evaluation.v1) against Flagpole's flagd front door. It sends no selector in RPC mode; the key
goes in a gRPC client interceptor (`clientInterceptors`), as docs/flagd.md shows. Every value compared
with the reference engine; errors; client keys; several domain-scoped providers through changes
and a restart; `STALE` answers (not cached) while the upstream is away, announced both ways."""

from __future__ import annotations

import json
import subprocess

import fixtures as fx
from flagd_support import MAIN, DriverSession, domains_case, error_cases, reference_cases, stale_case

ZERO = {"boolean": False, "string": "", "integer": 0, "float": 0.0, "object": None}


def test_java_provider_equals_the_reference(flagd_srv, java_driver, tmp_path):
    mv_users = fx.mv_identities(MAIN.document, 1)
    contexts = [None, {"targetingKey": "u1", "plan": "pro"}, {"targetingKey": "u1", "plan": "free"},
                {"targetingKey": fx.OVERRIDE_USER}] + [{"targetingKey": u} for us in mv_users.values() for u in us]
    cases, expected = reference_cases(MAIN, contexts, {"server": True, "client": False}, zero=ZERO)
    extra = error_cases()
    request = {"port": flagd_srv.grpc_port,
               "providers": {"server": {"key": MAIN.server_key}, "client": {"key": MAIN.client_key}},
               "cases": cases + [c for c, _ in extra]}
    inp, out = tmp_path / "in.json", tmp_path / "out.json"
    inp.write_text(json.dumps(request))
    proc = subprocess.run(java_driver + [str(inp), str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"java driver failed:\n{proc.stdout}\n{proc.stderr}"
    got = json.loads(out.read_text())["results"]
    assert len(got) == len(request["cases"])
    for case, want, result in zip(cases, expected, got):
        assert result == dict(want, errorCode=None), (case, result)
    for (case, want), result in zip(extra, got[len(expected):]):
        assert {k: result[k] for k in want} == want, (case, result)


def java_sessions(java_driver: list[str], workdir):
    """Opens a session of Java providers, one per domain with its key in an interceptor, LRU
    cache."""
    def open_session(port, domains):
        providers = {name: {"key": key, "cache": "lru"} for name, key in domains.items()}
        return DriverSession(java_driver + ["--session"], workdir, port, providers)

    return open_session


def test_java_providers_of_one_process_follow_their_environments(start_flagd, java_driver, tmp_path):
    domains_case(start_flagd, tmp_path, java_sessions(java_driver, tmp_path))


def test_java_provider_says_stale_while_the_upstream_is_away(start_flagd, java_driver, tmp_path):
    stale_case(start_flagd, java_sessions(java_driver, tmp_path))
