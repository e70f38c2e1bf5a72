"""Redis for the suites that need it (the fleet's, and the tracing and Helm suites' fleet cases):
Debian's `redis-server` on a free loopback port with nothing saved to disk (also as the `redis`
fixture), the key an environment is stored under, a fleet configuration, and the leases a replica
holds. Without `redis-server` a test that needs it is skipped, except under CI=true, where that
is a failure."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from metrics_support import scrape
from serve_harness import free_port, upstream_config, wait_until

WAIT = 60  # seconds: how long redis-server may take to answer its first PING (and other waits)
LEASE_SECONDS = 3


class RedisServer:
    """One redis-server on 127.0.0.1, nothing persisted; `stop` kills it (SIGKILL), `start`
    brings it back empty on the same port."""

    def __init__(self, workdir: Path, tls: tuple[Path, Path, Path] | None = None,
                 extra: list[str] | None = None, password: str | None = None) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.tls = tls  # (CA, certificate, key): TLS only, no plain port
        self.extra = extra or []  # more redis-server arguments (`--replicaof`)
        self.password = password  # the default user's (`requirepass`); `cli` gives it
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        self.workdir.mkdir(parents=True, exist_ok=True)
        ports = ["--port", str(self.port)]
        if self.tls is not None:
            ca, cert, key = self.tls
            ports = ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", str(cert),
                     "--tls-key-file", str(key), "--tls-ca-cert-file", str(ca), "--tls-auth-clients", "no"]
        self.proc = subprocess.Popen(
            ["redis-server", *ports, "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.workdir), *self.extra,
             *(["--requirepass", self.password] if self.password else [])],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        wait_until(lambda: self.cli("PING") == "PONG", WAIT, "redis-server never answered PING")
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def cli(self, *args: str, stdin: bytes | None = None) -> str:
        """redis-cli with `args`; with `stdin`, those bytes are the last argument (`-x`: binary
        safe)."""
        tls = ["--tls", "--cacert", str(self.tls[0])] if self.tls is not None else []
        raw = ["-x"] if stdin is not None else []
        auth = ["--no-auth-warning", "-a", self.password] if self.password else []
        done = subprocess.run(["redis-cli", "-p", str(self.port), *tls, *auth, *raw, *args], capture_output=True,
                              input=stdin, timeout=10)
        return done.stdout.decode(errors="replace").strip()

    def get_bytes(self, key: str, field: str) -> bytes:
        """A hash field's bytes, exactly (redis-cli --raw adds one newline)."""
        done = subprocess.run(["redis-cli", "-p", str(self.port), "--raw", "HGET", key, field],
                              capture_output=True, timeout=10)
        return done.stdout[:-1]


def stored_text(server: RedisServer, key: str) -> str:
    """The document a stored value holds, as text ("" while there is none)."""
    raw = server.get_bytes(key, "body")
    return gzip.decompress(raw).decode() if raw else ""


def need_redis() -> None:
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("redis-server is not installed (apt-get install redis-server)")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")


def environment_id(client_key: str) -> str:
    """The digest an environment is known by in Redis (never its key)."""
    return hashlib.sha256(client_key.encode()).hexdigest()[:32]


def fleet_config(upstream_or_url, redis: RedisServer, envs) -> dict:
    config = upstream_config(upstream_or_url, envs)
    config["flagpole"] = {"fleet": {"redis_url": redis.url, "lease_seconds": LEASE_SECONDS}}
    return config


@pytest.fixture
def redis(tmp_path):
    """A fresh redis-server for one test."""
    need_redis()
    server = RedisServer(tmp_path / "redis").start()
    try:
        yield server
    finally:
        server.stop()


def leases(fp) -> float:
    """The leases a replica holds (its gauge)."""
    return scrape(fp).value("flagpole_fleet_leases_held")


def wait_leases_settled(replicas, envs, redis: RedisServer | None = None) -> None:
    """Every environment held by some replica (each lease is held once: Redis says so). On a
    timeout the message says what each replica believed and, given `redis`, who held what there,
    so that a failure on a loaded machine can be told from a lease nobody takes."""
    try:
        wait_until(lambda: sum(leases(fp) for fp in replicas) == len(envs), WAIT,
                   "the replicas never held one lease per environment between them")
    except AssertionError as failed:
        raise AssertionError(f"{failed}\n{fleet_picture(replicas, envs, redis)}") from None


def fleet_picture(replicas, envs, redis: RedisServer | None) -> str:
    """Each replica's leases, replicas alive and store reachability as its metrics say, its
    warnings; with `redis`, each lease key's holder (or `free`)."""
    lines = []
    for fp in replicas:
        try:
            m = scrape(fp)
            lines.append(f"replica on {fp.port}: leases {m.value('flagpole_fleet_leases_held'):.0f}, "
                         f"replicas alive {m.value('flagpole_fleet_replicas_alive'):.0f}, "
                         f"store reachable {m.value('flagpole_fleet_store_reachable'):.0f}")
        except (OSError, AssertionError) as exc:
            lines.append(f"replica on {fp.port}: no metrics ({exc!r})")
        warnings = [line for line in fp.stderr_text().splitlines() if " WARN " in line or " ERROR " in line]
        lines.extend(f"  {line}" for line in warnings[-10:])
    if redis is not None:
        holders: dict[str, int] = {}
        for env in envs:
            key = env if isinstance(env, str) else env.client_key
            value = redis.cli("GET", lease_key(key)) or "free"
            holders[value.split(":")[0]] = holders.get(value.split(":")[0], 0) + 1
        lines.append(f"lease keys by holder: {holders}")
        lines.append(f"member list: {redis.cli('ZRANGE', 'flagpole:replicas', '0', '-1')!r}")
    return "\n".join(lines)


def lease_key(client_key: str) -> str:
    return f"flagpole:env:{environment_id(client_key)}:lease"
