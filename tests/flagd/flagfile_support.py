"""Helpers of the flag-file suites (test_flag_file_*.py): a rich flagd flag file, seeded contexts
for it, and the two servers that serve it — flagd itself (the reference, built by scripts/test.sh
into .tools/bin) and Flagpole (`flagpole serve --flags PATH`) — each with the ports a provider
needs (flagd evaluation gRPC, OFREP, sync)."""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from flagd_support import FlagdProcess, kind_of
from serve_harness import free_port, wait_until

ROOT = Path(__file__).resolve().parents[2]

SEMVER_OPS = {"eq": "=", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "caret": "^", "tilde": "~"}


def yes_no(rule) -> dict:
    """A string flag whose targeting names `yes` or `no` (default `no`)."""
    return {"state": "ENABLED", "variants": {"yes": "yes", "no": "no"}, "defaultVariant": "no",
            "targeting": {"if": [rule, "yes", "no"]}}


def rich_flag_file(revision: int = 0) -> dict:
    """Every construct the flagd schema allows, one flag each where it can. `revision` changes
    `banner` only (the change the providers must see)."""
    flags = {
        "static-bool": {"state": "ENABLED", "variants": {"on": True, "off": False}, "defaultVariant": "on"},
        "empty-targeting": {"state": "ENABLED", "variants": {"on": True, "off": False}, "defaultVariant": "off",
                            "targeting": {}},
        "bool-named": {"state": "ENABLED", "variants": {"true": True, "false": False}, "defaultVariant": "false",
                       "targeting": {"==": [{"var": "plan"}, "pro"]}},
        "disabled": {"state": "DISABLED", "variants": {"a": "A", "b": "B"}, "defaultVariant": "a"},
        "null-default": {"state": "ENABLED", "variants": {"pro": "pro-value", "other": "other"},
                         "defaultVariant": None,
                         "targeting": {"if": [{"==": [{"var": "plan"}, "pro"]}, "pro", None]}},
        "absent-default": {"state": "ENABLED", "variants": {"pro": "pro-value", "other": "other"},
                           "targeting": {"if": [{"==": [{"var": "plan"}, "pro"]}, "pro", None]}},
        "no-default-static": {"state": "ENABLED", "variants": {"a": "A"}, "defaultVariant": None},
        "unknown-variant": {"state": "ENABLED", "variants": {"a": "A", "b": "B"}, "defaultVariant": "a",
                            "targeting": {"if": [{"==": [{"var": "plan"}, "pro"]}, "nope", "b"]}},
        "fractional-short": {"state": "ENABLED", "variants": {"a": "A", "b": "B", "c": "C"}, "defaultVariant": "a",
                             "targeting": {"fractional": [["a", 50], ["b", 30], ["c", 20]]}},
        "fractional-expr": {"state": "ENABLED", "variants": {"red": "#f00", "blue": "#00f", "green": "#0f0"},
                            "defaultVariant": "red",
                            "targeting": {"fractional": [{"cat": [{"var": "$flagd.flagKey"}, {"var": "email"}]},
                                                         ["red", 25], ["blue", 25], ["green", 50]]}},
        "fractional-unweighted": {"state": "ENABLED", "variants": {"x": 1, "y": 2}, "defaultVariant": "x",
                                  "targeting": {"fractional": [{"var": "targetingKey"}, ["x"], ["y"]]}},
        "fractional-nested": {
            "state": "ENABLED", "variants": {"gold": "G", "silver": "S", "bronze": "B"}, "defaultVariant": "bronze",
            "targeting": {"if": [{"in": [{"var": "plan"}, ["pro", "team"]]},
                                 {"fractional": [{"var": "targetingKey"}, ["gold", 10], ["silver", 90]]},
                                 {"fractional": [["silver", 1], ["bronze", 3]]}]}},
        # JSONLogic as a variant's name and as a weight (flagd warns: the schema has neither).
        "fractional-computed": {
            "state": "ENABLED", "variants": {"gold": "G", "silver": "S", "bronze": "B"}, "defaultVariant": "bronze",
            "targeting": {"fractional": [{"var": "targetingKey"},
                                         [{"if": [{"==": [{"var": "plan"}, "pro"]}, "gold", "silver"]}, 50],
                                         ["bronze", {"if": [{"==": [{"var": "plan"}, "free"]}, 150, 50]}]]}},
        "starts-ends": {"state": "ENABLED", "variants": {"internal": "internal", "admin": "admin", "none": "none"},
                        "defaultVariant": "none",
                        "targeting": {"if": [{"ends_with": [{"var": "email"}, "@example.com"]}, "internal",
                                             {"starts_with": [{"var": "email"}, "admin"]}, "admin", None]}},
        "ref-flag": {"state": "ENABLED", "variants": {"pro": 10, "free": 0}, "defaultVariant": "free",
                     "targeting": {"if": [{"$ref": "isPro"}, "pro", None]}},
        "ref-nested": {"state": "ENABLED", "variants": {"hit": 1.5, "miss": 0.25}, "defaultVariant": "miss",
                       "targeting": {"if": [{"and": [{"$ref": "isPro"}, {"$ref": "internalEmail"}]}, "hit", "miss"]}},
        "int-flag": {"state": "ENABLED", "variants": {"seven": 7, "minus": -3, "zero": 0, "big": 9007199254740991},
                     "defaultVariant": "seven",
                     "targeting": {"if": [{">": [{"var": "age"}, 60]}, "big", {"<": [{"var": "age"}, 18]}, "minus",
                                          {"==": [{"var": "age"}, 30]}, "zero", None]}},
        "float-flag": {"state": "ENABLED", "variants": {"one": 1.0, "half": 0.5, "neg": -2.75}, "defaultVariant": "one",
                       "targeting": {"if": [{"<=": [{"var": "age"}, 20]}, "half", {">=": [{"var": "age"}, 50]}, "neg",
                                            None]}},
        "object-flag": {"state": "ENABLED",
                        "variants": {"dark": {"theme": "dark", "size": 3, "tags": ["a", "b"], "nested": {"x": None}},
                                     "light": {"theme": "light", "ratio": 0.5}},
                        "defaultVariant": "light",
                        "targeting": {"if": [{"in": ["dark", {"var": "prefs"}]}, "dark", None]},
                        "metadata": {"team": "ui", "weight": 3, "beta": True}},
        "unicode": {"state": "ENABLED", "variants": {"fr": "Bonjour à tous", "ja": "こんにちは", "emoji": "🚩"},
                    "defaultVariant": "fr",
                    "targeting": {"if": [{"==": [{"substr": [{"var": "locale"}, 0, 2]}, "ja"]}, "ja",
                                         {"==": [{"var": "locale"}, "xx"]}, "emoji", None]}},
        "context-vars": {"state": "ENABLED", "variants": {"key": "by-key", "time": "by-time", "none": "none"},
                         "defaultVariant": "none",
                         "targeting": {"if": [{"==": [{"var": "$flagd.flagKey"}, "context-vars-nope"]}, "key",
                                              {">": [{"var": "$flagd.timestamp"}, 1000]}, "time", "none"]}},
        "var-default": {"state": "ENABLED", "variants": {"pro": "p", "free": "f"}, "defaultVariant": "free",
                        "targeting": {"if": [{"==": [{"var": ["plan", "pro"]}, "pro"]}, "pro", "free"]}},
        "cat-missing": {"state": "ENABLED", "variants": {"ab": "ab", "other": "other"}, "defaultVariant": "other",
                        "targeting": {"if": [{"==": [{"cat": [{"var": "plan"}, {"var": "missing"}]}, "pro"]},
                                             "ab", "other"]}},
        "banner": {"state": "ENABLED", "variants": {"r0": "Hello", "r1": "Hello r1", "r2": "Hello r2"},
                   "defaultVariant": f"r{revision}", "metadata": {"revision": revision}},
    }
    for name, op in SEMVER_OPS.items():
        flags[f"semver-{name}"] = yes_no({"sem_ver": [{"var": "version"}, op, "1.2.3"]})
    return {
        "$schema": "https://flagd.dev/schema/v0/flags.json",
        "metadata": {"flagSetId": "rich", "version": "7", "team": "core", "owner": "flagpole-tests"},
        "$evaluators": {"isPro": {"==": [{"var": "plan"}, "pro"]},
                        "internalEmail": {"ends_with": [{"var": "email"}, "@example.com"]}},
        "flags": flags,
    }


def flag_type(flag: dict) -> str:
    """The resolver a caller uses for a flag: by its variants' JSON type."""
    return kind_of(next(iter(flag["variants"].values())))


VERSIONS = ["1.2.3", "v1.2.3", "1.2.4", "1.3.0", "2.0.0", "1.2.2", "0.9.9", "1.2", "1.2.3-beta.1",
            "1.2.3+build.7", "V1.2.3", "not-a-version", 1.2, 1]
EMAILS = ["ann@example.com", "admin@corp.io", "bob@corp.io", "administrator@example.com", "", None]


def contexts(seed: int, n: int) -> list[dict]:
    """`n` evaluation contexts (a few fixed ones, then random ones from `seed`)."""
    rng = random.Random(seed)
    out: list[dict] = [{}, {"targetingKey": "u1"}, {"targetingKey": "u1", "plan": "pro", "email": "ann@example.com"}]
    while len(out) < n:
        ctx: dict = {}
        if rng.random() < 0.9:
            ctx["targetingKey"] = f"user-{rng.randrange(10**6)}"
        for key, choices in (("plan", ["pro", "free", "team", 3, None]), ("email", EMAILS),
                             ("version", VERSIONS), ("age", [10, 18, 20, 30, 50, 61, 30.0, "30"]),
                             ("locale", ["ja-JP", "fr", "xx", "j"]),
                             ("prefs", [["dark"], ["light", "dark"], [], "dark"])):
            if rng.random() < 0.7:
                value = rng.choice(choices)
                if value is not None:
                    ctx[key] = value
        out.append(ctx)
    return out


# --------------------------------------------------------------------------------------------
# The reference evaluator


def reference_python() -> str:
    """The reference evaluator's venv (scripts/test.sh makes it)."""
    path = Path(os.environ.get("FLAGPOLE_FLAGD_REFERENCE_PYTHON")
                or ROOT / ".venv-flagd-reference" / "bin" / "python")
    if not path.is_file():
        pytest.skip(f"the reference's venv is missing ({path}): scripts/test.sh makes it")
    return str(path)


def evaluated(flag_path: Path, flags: list[str], ctxs: list[dict]) -> dict[tuple[str, int], dict]:
    """What the reference evaluator (openfeature-flagd-core 1.0.0, the spec's semantics where flagd
    (Go) is older) answers for each flag in each context: {(flag, context index): answer}."""
    runner = ROOT / "tests" / "flagd_definitions" / "reference_runner.py"
    order = [(flag, i) for flag in sorted(flags) for i in range(len(ctxs))]
    lines = "".join(json.dumps({"flag": flag, "context": ctxs[i]}) + "\n" for flag, i in order)
    proc = subprocess.run([reference_python(), str(runner), str(flag_path), str(int(time.time()))],
                          input=lines, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    answers_ = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(answers_) == len(order), proc.stdout[:2000]
    return dict(zip(order, answers_))


# --------------------------------------------------------------------------------------------
# The servers


def wait_port(port: int, what: str, log) -> None:
    def accepting() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False
    wait_until(accepting, 30, f"{what}: port {port} never accepted\n{log()}")


def flagd_binary() -> str:
    """flagd as scripts/test.sh installs it (or FLAGD_BIN)."""
    path = os.environ.get("FLAGD_BIN") or str(ROOT / ".tools/bin/flagd")
    if not os.access(path, os.X_OK):
        path = shutil.which("flagd") or ""
    if not path:
        pytest.skip("flagd is not installed (scripts/test.sh builds it into .tools/bin)")
    return path


class FlagdServer:
    """flagd itself serving one flag file: evaluation gRPC (`grpc_port`), OFREP (`ofrep_port`),
    sync (`sync_port`)."""

    name = "flagd"

    def __init__(self, workdir: Path, flag_file: Path) -> None:
        self.workdir, self.flag_file = workdir, flag_file
        self.grpc_port, self.ofrep_port, self.sync_port, self.mgmt_port = (free_port() for _ in range(4))
        self.log = workdir / "flagd.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> "FlagdServer":
        self.workdir.mkdir(parents=True, exist_ok=True)
        argv = [flagd_binary(), "start", "--uri", f"file:{self.flag_file}", "--port", str(self.grpc_port),
                "--ofrep-port", str(self.ofrep_port), "--sync-port", str(self.sync_port),
                "--management-port", str(self.mgmt_port)]
        self.proc = subprocess.Popen(argv, cwd=self.workdir, stdin=subprocess.DEVNULL,
                                     stdout=open(self.log, "ab"), stderr=subprocess.STDOUT)
        for port in (self.grpc_port, self.ofrep_port, self.sync_port):
            wait_port(port, "flagd", self.tail)
        return self

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class FlagpoleServer:
    """Flagpole serving one flag file (the `flags` list of config.json, keyless, no environment)
    on the ports flagd has: its flagd listener (evaluation), the sync service's own port (as
    flagd's 8015: no selector needed) and its HTTP port (OFREP)."""

    name = "flagpole"

    def __init__(self, workdir: Path, flag_file: Path) -> None:
        self.grpc_port, self.sync_port = free_port(), free_port()
        config = {"flags": [{"uri": str(flag_file)}],
                  "flagpole": {"grpc": {"port": self.grpc_port, "sync_port": self.sync_port}}}
        self.process = FlagdProcess(workdir, config=config)
        self.ofrep_port = self.process.port

    def start(self) -> "FlagpoleServer":
        self.process.start()
        self.process.wait_grpc()
        return self

    def tail(self) -> str:
        return self.process.stderr_tail()

    def stop(self) -> None:
        if self.process.proc and self.process.proc.poll() is None:
            assert self.process.stop() == 0, self.process.stderr_tail()


SERVERS = {"flagd": FlagdServer, "flagpole": FlagpoleServer}


def write_flag_file(path: Path, document: dict) -> Path:
    """Written whole under another name, then renamed: a watcher never reads half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(document, indent=1, ensure_ascii=False))
    tmp.replace(path)
    return path
