"""The Go flagd provider (go-sdk-contrib/providers/flagd v0.3.2, RPC mode: Connect over HTTP/1.1,
application/proto, flagd.evaluation.v1) against Flagpole's flagd front door. Its only way to carry
a key is user-info in its host setting, which Go's HTTP client sends as `Authorization: Basic`.
Every value compared with the reference engine; errors; client keys; a document change; several
domain-scoped providers through changes and a restart; `STALE` answers (not cached) while the
upstream is away, announced both ways."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import fixtures as fx
from flagd_support import (MAIN, DriverSession, document_change_case, domains_case, error_cases, reference_cases,
                           stale_case)

# The Go provider (0.3.2) returns the wire value of a DISABLED answer without a variant rather
# than the caller's default (Python and JS return the default): the type's zero value.
ZERO = {"boolean": False, "string": "", "integer": 0, "float": 0.0, "object": {}}
CONTEXTS = [
    None,
    {"targetingKey": "u1", "plan": "pro"},
    {"targetingKey": "u1", "plan": "free"},
    {"targetingKey": fx.OVERRIDE_USER},
]


def run_driver(driver: Path, workdir: Path, request: dict, timeout: float = 120) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    inp, out = workdir / "in.json", workdir / "out.json"
    inp.write_text(json.dumps(request))
    proc = subprocess.run([str(driver), str(inp), str(out)], cwd=workdir, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"go driver failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(out.read_text())


def sessions(driver: Path, workdir: Path):
    """Opens a session of Go providers, one per domain with its key in the host, LRU cache."""
    def open_session(port: int, domains: dict[str, str]) -> DriverSession:
        providers = {name: {"host": host(key), "cache": "lru"} for name, key in domains.items()}
        return DriverSession([str(driver), "--session"], workdir, port, providers)

    return open_session


def host(key: str) -> str:
    return f"{key}@127.0.0.1"


def test_go_provider_equals_the_reference(flagd_srv, go_driver, tmp_path):
    providers = {"server": {"host": host(MAIN.server_key), "cache": "disabled"},
                 "client": {"host": host(MAIN.client_key), "cache": "disabled"}}
    mv_users = fx.mv_identities(MAIN.document, 1)
    contexts = CONTEXTS + [{"targetingKey": u} for users in mv_users.values() for u in users]
    cases, expected = reference_cases(MAIN, contexts, {"server": True, "client": False}, zero=ZERO)
    extra = error_cases(no_error="")
    cases += [c for c, _ in extra]
    out = run_driver(go_driver, tmp_path, {"port": flagd_srv.grpc_port, "providers": providers,
                                           "cases": cases})
    got = out["results"]
    assert len(got) == len(cases)
    for case, want, result in zip(cases, expected, got):
        assert result == dict(want, errorCode=""), (case, result)
    for (case, want), result in zip(extra, got[len(expected):]):
        assert {k: result[k] for k in want} == want, (case, result)


def test_go_provider_sees_a_document_change(flagd_srv, go_driver, tmp_path):
    document_change_case(flagd_srv, sessions(go_driver, tmp_path), 3)


def test_go_providers_of_one_process_follow_their_environments(start_flagd, go_driver, tmp_path):
    domains_case(start_flagd, tmp_path, sessions(go_driver, tmp_path))


def test_go_provider_says_stale_while_the_upstream_is_away(start_flagd, go_driver, tmp_path):
    stale_case(start_flagd, sessions(go_driver, tmp_path))
