"""Helpers of the flagd suite: the environments, a `flagpole serve` process with the flagd
listener, what the flagd providers should answer for a flag, computed from the reference
engine through the OFREP suite's expectations (the two front doors share one mapping), and the
scenarios every provider language runs: a document change, and several domain-scoped providers
through changes and a restart (drivers as `DriverSession`s, their events as `Events`)."""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import fixtures as fx
from fixture_files import write_documents
from serve_harness import Env, FlagpoleProcess, Upstream, free_port, local_config, upstream_config, wait_until

MAIN = Env("flagd_main_client", "ser.flagd_main_server", fx.make_document("flagd_main_client", env_id=5001))
LIVE = Env("flagd_live_client", "ser.flagd_live_server", fx.make_document("flagd_live_client", env_id=5002))
ENVS = [MAIN, LIVE]


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


def kind_of(value) -> str:
    """The resolver that reads a JSON value of this type."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    return "object"


def resolver_for(name: str, item: dict | None) -> str:
    """The resolver a caller would use: by the value's type, else by the document's value."""
    value = item["value"] if item and "value" in item else fx.FEATURES[name][2]
    return "boolean" if value is None or value == "" else kind_of(value)


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


def error_cases(no_error: Any = None) -> list[tuple[dict, dict]]:
    """(case, what its answer must hold) for the errors every provider language is checked on: a
    client key does not see a server-only flag, a server key does, a missing flag, a type
    mismatch. `no_error`: the provider's error code of an answer without error."""
    return [
        ({"provider": "client", "type": "string", "flag": "secret", "default": "x"},
         {"value": "x", "errorCode": "FLAG_NOT_FOUND"}),
        ({"provider": "server", "type": "string", "flag": "secret", "default": "x"},
         {"value": "s3cret", "errorCode": no_error}),
        ({"provider": "server", "type": "boolean", "flag": "nope", "default": True},
         {"value": True, "errorCode": "FLAG_NOT_FOUND"}),
        ({"provider": "server", "type": "boolean", "flag": "text", "default": False},
         {"value": False, "errorCode": "TYPE_MISMATCH"}),
    ]


def document_change_case(flagd_srv, open_session, revision: int) -> None:
    """A provider (`open_session(port, {"live": LIVE's server key})`, with an LRU cache) reads
    LIVE's `text`; the test rewrites LIVE's document at `revision`: a configuration change naming
    `text` arrives and the new value is served. LIVE's document is put back afterwards."""
    path = flagd_srv.paths[1]
    case = {"provider": "live", "type": "string", "flag": "text", "default": "x"}
    session = open_session(flagd_srv.grpc_port, {"live": LIVE.server_key})
    try:
        assert session.evaluate([case])[0]["value"] == "Hello"
        mark = session.events.mark()
        path.write_text(json.dumps(fx.make_document(LIVE.client_key, env_id=5002, revision=revision)))
        session.events.wait("changed", "live", mark, flag="text")
        wait_until(lambda: session.evaluate([case])[0]["value"] == f"Hello r{revision}", 60,
                   "the new value never arrived")
    except BaseException:
        session.close(check=False)
        raise
    finally:
        path.write_text(json.dumps(LIVE.document))
    session.close()


# --------------------------------------------------------------------------------------------
# Several domain-scoped providers in one process, through changes and a restart

# One provider per domain, as a service that talks to two environments would set them up: the
# server and client key of MAIN, and LIVE's server key.
DOMAINS = {"main_server": MAIN.server_key, "main_client": MAIN.client_key, "live": LIVE.server_key}
USES = {"main_server": MAIN, "main_client": MAIN, "live": LIVE}


class Events:
    """Provider events as they arrive, from any thread: `{"event": "ready"|"changed",
    "provider": NAME, "flags": [...]}`. Waits end as soon as the event is there."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.seen: list[dict] = []

    def add(self, event: dict) -> None:
        with self._cond:
            self.seen.append(event)
            self._cond.notify_all()

    def mark(self) -> int:
        with self._cond:
            return len(self.seen)

    def wait(self, kind: str, provider: str, since: int, timeout: float = 90.0, flag: str | None = None) -> dict:
        def found() -> dict | None:
            for e in self.seen[since:]:
                if e["event"] == kind and e["provider"] == provider and (flag is None or flag in e.get("flags", [])):
                    return e
            return None

        with self._cond:
            if not self._cond.wait_for(found, timeout):
                raise AssertionError(f"no {kind} event for {provider} within {timeout} s; events since: "
                                     f"{self.seen[since:]}")
            return found()


class DriverSession:
    """A provider driver (`argv`, run in `cwd`) in session mode: it reads one JSON line with
    `{"port", "providers": {NAME: options}}`, sets every provider in its own domain, answers
    `{"reply": "ready"}`, then prints each provider event as a line (see `Events`) and answers
    every `{"cases": [...]}` line with `{"reply": [results]}`; end of input closes it."""

    def __init__(self, argv: list[str], cwd: Path, port: int, providers: dict, timeout: float = 180.0) -> None:
        self.events = Events()
        self._replies: queue.Queue = queue.Queue()
        self._stderr: list[str] = []
        self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self._stderr.extend(self.proc.stderr), daemon=True).start()
        try:
            self._send({"port": port, "providers": providers})
            assert self._reply(timeout) == "ready"
        except BaseException:
            self.close(check=False)
            raise

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue  # a library's own output
            if isinstance(message, dict) and "event" in message:
                self.events.add(message)
            elif isinstance(message, dict) and "reply" in message:
                self._replies.put(message["reply"])
        self._replies.put(None)

    def _send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def _reply(self, timeout: float):
        try:
            reply = self._replies.get(timeout=timeout)
        except queue.Empty:
            reply = None
        assert reply is not None, f"the driver gave no answer:\n{self.stderr_tail()}"
        return reply

    def stderr_tail(self) -> str:
        return "".join(self._stderr[-60:])

    def evaluate(self, cases: list[dict]) -> list[dict]:
        self._send({"cases": cases})
        return self._reply(120)

    def close(self, check: bool = True) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                assert not check, f"the driver did not exit:\n{self.stderr_tail()}"
        assert not check or self.proc.returncode == 0, f"the driver failed:\n{self.stderr_tail()}"


def revised(env: Env, r: int) -> dict:
    """`env`'s document at revision `r`: `Zeta`, a flag nothing can vary (answered `STATIC`, so
    the providers cache it), reads `upper r<r>`."""
    document = fx.make_document(env.client_key, env_id=env.document["id"], revision=r)
    for state in document["feature_states"]:
        if state["feature"]["name"] == "Zeta" and r:
            state["feature_state_value"] = f"upper r{r}"
    return document


def domains_case(start_flagd, tmp_path: Path, open_session) -> None:
    """Three domain-scoped providers of one process (`DOMAINS`; one HTTP/2 connection when the
    language's gRPC stack shares it, as grpc-js does), with their default (LRU) cache.
    `open_session(port, DOMAINS)` returns a session (`evaluate`, `events`, `close`) of providers
    named as `DOMAINS`.

    A change of each environment reaches every provider that uses it (a configuration change
    naming `Zeta`) and they answer its new value; after a restart of Flagpole on the same port,
    during which both documents changed, each emits READY again and answers the new values (not
    what it cached before), and a change after it still reaches them."""
    paths = write_documents(tmp_path / "docs", ENVS)
    documents = {MAIN.client_key: paths[0], LIVE.client_key: paths[1]}
    grpc_port, http_port = free_port(), free_port()
    config = flagd_config(paths, grpc_port)
    first = start_flagd(config=config, port=http_port)
    revision = {MAIN.client_key: 0, LIVE.client_key: 0}

    def publish(env: Env, r: int) -> None:
        revision[env.client_key] = r
        documents[env.client_key].write_text(json.dumps(revised(env, r)))

    def want(name: str) -> str:
        r = revision[USES[name].client_key]
        return f"upper r{r}" if r else "upper"

    def zeta(session, name: str) -> Any:
        case = {"provider": name, "type": "string", "flag": "Zeta", "default": "x"}
        return session.evaluate([case])[0]["value"]

    def reaches(session, names: list[str], since: int) -> None:
        # The event, then the new value: a provider that kept a stale cached answer never has it.
        for name in names:
            session.events.wait("changed", name, since, flag="Zeta")
            wait_until(lambda: zeta(session, name) == want(name), 60,
                       f"{name} never answered {want(name)!r} after the change (last: {zeta(session, name)!r})")

    session = open_session(grpc_port, DOMAINS)
    try:
        for name in DOMAINS:
            # Twice: the second answer is the provider's cached one.
            assert [zeta(session, name), zeta(session, name)] == ["upper", "upper"], name
        r = 0
        for env in (MAIN, LIVE):
            r += 1
            mark = session.events.mark()
            publish(env, r)
            reaches(session, [n for n in DOMAINS if USES[n] is env], mark)

        mark = session.events.mark()
        assert first.stop() == 0, first.stderr_tail()
        publish(MAIN, r + 1)
        publish(LIVE, r + 2)
        r += 2
        second = start_flagd(config=config, port=http_port)
        for name in DOMAINS:
            session.events.wait("ready", name, mark)
            # Any answer cached before is dropped at the reconnect (by the provider, or on the
            # notice that follows `provider_ready`).
            wait_until(lambda: zeta(session, name) == want(name), 60,
                       f"{name} never answered {want(name)!r} after the restart (last: {zeta(session, name)!r})\n"
                       f"{second.stderr_tail()}")

        mark = session.events.mark()
        publish(MAIN, r + 1)
        publish(LIVE, r + 2)
        reaches(session, list(DOMAINS), mark)
    except BaseException:
        session.close(check=False)
        raise
    session.close()


# --------------------------------------------------------------------------------------------
# Stale answers: the upstream away past the grace period, then back

# Polled every second with a 1 s grace period (the shortest the configuration accepts beside
# that poll): one environment is stale 2 s after its last successful poll.
STALE_TIMINGS = {"api_poll_frequency_seconds": 1, "api_poll_timeout_seconds": 1,
                 "health_check": {"environment_update_grace_period_seconds": 1}}
# Zeta: nothing can vary it (STATIC, so the providers cache it); seg_feat: a segment match;
# text_off: disabled with a value a string read cannot carry (the caller's default applies).
STALE_CASES = [
    {"provider": "main", "type": "string", "flag": "Zeta", "default": "x"},
    {"provider": "main", "type": "string", "flag": "seg_feat", "default": "x",
     "context": {"targetingKey": "u1", "plan": "pro"}},
    {"provider": "main", "type": "string", "flag": "text_off", "default": "x"},
]
FRESH_REASONS = ["STATIC", "TARGETING_MATCH", "DISABLED"]


def polled_flagd(start_flagd, upstream: Upstream) -> FlagpoleProcess:
    """Flagpole polling MAIN from `upstream` with STALE_TIMINGS and a flagd port, serving."""
    config = upstream_config(upstream, [MAIN], flagpole={"grpc": {"port": free_port()}}, **STALE_TIMINGS)
    fp = start_flagd(config=config)
    fp.wait_ready()
    return fp


def stale_case(start_flagd, open_session) -> None:
    """One provider (`open_session(port, {"main": MAIN's server key})`, its default LRU cache)
    reads STALE_CASES from an environment polled from an upstream. The upstream stops: a
    configuration change naming `Zeta` arrives, then every read with a value says `STALE` with
    the value it had (`Zeta` too, on every read: nothing cached), and the flag on the caller's
    default keeps `DISABLED`. The upstream comes back: another configuration change, and the
    usual reasons again (`Zeta` `STATIC`, then served from the cache)."""
    upstream = Upstream().start()
    upstream.set_document(MAIN.server_key, MAIN.document)
    fp = polled_flagd(start_flagd, upstream)
    session = open_session(fp.grpc_port, {"main": MAIN.server_key})
    zeta = STALE_CASES[:1]
    try:
        fresh = session.evaluate(STALE_CASES)
        assert [r["reason"] for r in fresh] == FRESH_REASONS, fresh
        assert session.evaluate(zeta)[0]["reason"] == "CACHED"

        mark = session.events.mark()
        upstream.stop()
        session.events.wait("changed", "main", mark, flag="Zeta")
        for _ in range(2):  # the second read too: a STALE answer is not cached
            stale = session.evaluate(STALE_CASES)
            want = [dict(r, reason="STALE") for r in fresh[:2]] + [fresh[2]]
            assert stale == want, f"{stale}\n{fp.stderr_tail()}"

        mark = session.events.mark()
        upstream = Upstream(upstream.port).start()
        upstream.set_document(MAIN.server_key, MAIN.document)
        session.events.wait("changed", "main", mark, flag="Zeta")
        assert session.evaluate(STALE_CASES) == fresh
        assert session.evaluate(zeta)[0]["reason"] == "CACHED"
    except BaseException:
        session.close(check=False)
        raise
    finally:
        upstream.stop()
    session.close()
