"""Helpers of the flagd suite: the environments, a `flagpole serve` process with the flagd
listener, and what the flagd providers should answer for a flag, computed from the reference
engine through the OFREP suite's expectations (the two front doors share one mapping)."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import fixtures as fx
from serve_harness import Env, FlagpoleProcess, local_config, wait_until

MAIN = Env("flagd_main_client", "ser.flagd_main_server", fx.make_document("flagd_main_client", env_id=5001))
LIVE = Env("flagd_live_client", "ser.flagd_live_server", fx.make_document("flagd_live_client", env_id=5002))
ENVS = [MAIN, LIVE]


def write_documents(directory: Path, envs: list[Env]) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for e in envs:
        p = directory / f"{e.client_key}.json"
        p.write_text(json.dumps(e.document, indent=1, ensure_ascii=False))
        paths.append(p)
    return paths


def flagd_config(paths: list[Path], grpc_port: int) -> dict:
    return local_config(paths, ENVS, flagpole={"grpc": {"port": grpc_port}})


class FlagdProcess(FlagpoleProcess):
    """A flagpole process whose flagd listener port is in its config."""

    def __init__(self, workdir: Path, *, config: dict, grpc_port: int | None = None, **kwargs) -> None:
        super().__init__(workdir, config=config, **kwargs)
        self.grpc_port = config["flagpole"]["grpc"]["port"] if grpc_port is None else grpc_port

    def wait_grpc(self, timeout: float = 30.0) -> None:
        def accepting() -> bool:
            try:
                socket.create_connection(("127.0.0.1", self.grpc_port), timeout=1).close()
                return True
            except OSError:
                return False
        self.wait_live(timeout)
        wait_until(accepting, timeout, f"the flagd port {self.grpc_port} never accepted\n{self.stderr_tail()}")


def ofrep_expected(env: Env, context: dict | None, *, server: bool) -> dict[str, dict]:
    return fx.expected_items(env.document, context, server=server)


def resolver_for(name: str, item: dict | None) -> str:
    """The resolver a caller would use: by the value's type, else by the document's value."""
    value = item["value"] if item and "value" in item else fx.FEATURES[name][2]
    if isinstance(value, bool) or value is None or value == "":
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    return "object"


DEFAULTS = {"boolean": True, "string": "code-default", "integer": -1, "float": -1.5,
            "object": {"code": "default"}}


def flagd_expected(item: dict, resolver: str) -> tuple[Any, str, str | None]:
    """(value, reason, variant) a flagd provider returns for this OFREP item: a disabled flag
    without a value answers the caller's default with no variant."""
    if "value" not in item:
        return DEFAULTS[resolver], item["reason"], None
    return item["value"], item["reason"], item["variant"]


def reference_cases(env: Env, contexts: list, providers: dict[str, bool], zero: dict | None = None,
                    type_name=lambda resolver: resolver) -> tuple[list[dict], list[dict]]:
    """Driver cases for every visible flag of `env` in every context, per provider (name →
    server key?), and the answers the reference gives: (cases, expected). `zero`: the provider
    returns the type's zero value, not the caller's default, for a DISABLED answer without a
    variant (Go and Java)."""
    cases, expected = [], []
    for provider, server in providers.items():
        for ctx in contexts:
            for name, item in ofrep_expected(env, ctx, server=server).items():
                resolver = resolver_for(name, item)
                cases.append({"provider": provider, "type": type_name(resolver), "flag": name,
                              "default": DEFAULTS[resolver], "context": ctx})
                value, reason, variant = flagd_expected(item, resolver)
                if variant is None and zero is not None:
                    value, variant = zero[resolver], ""
                expected.append({"value": value, "variant": variant, "reason": reason})
    return cases, expected


def document_change_case(flagd_srv, tmp_path: Path, provider: dict, revision: int, run) -> None:
    """A provider driver (`run(request, during)`) reads LIVE's `text`, then waits for the change
    event while the test rewrites LIVE's document at `revision`, and reads `text` again: the
    event names the flag and the new value is served. LIVE's document is put back afterwards."""
    ready = tmp_path / "ready"
    path = flagd_srv.paths[1]
    case = {"provider": "live", "type": "string", "flag": "text", "default": "x"}
    request = {
        "port": flagd_srv.grpc_port,
        "providers": {"live": {**provider, "cache": "lru"}},
        "cases": [case],
        "change": {"provider": "live", "ready": str(ready), "timeoutMs": 20000, "cases": [case]},
    }

    def change() -> None:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert time.monotonic() < deadline, "the driver never got ready"
            time.sleep(0.05)
        path.write_text(json.dumps(fx.make_document(LIVE.client_key, env_id=5002, revision=revision)))

    try:
        out = run(request, during=change)
    finally:
        path.write_text(json.dumps(LIVE.document))
    assert out["results"][0]["value"] == "Hello", out
    assert "text" in out["changed"], out
    assert out["after"][0]["value"] == f"Hello r{revision}", out
