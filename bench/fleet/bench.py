#!/usr/bin/env python3
"""The fleet benchmark (bench/fleet.sh): replicas sharing one Redis (`flagpole.fleet`) next to
the same replicas each polling for itself, on 100 environments, all on 127.0.0.1.

1. Upstream load: requests the upstream receives per poll interval with 1, 3 and 5 replicas
   (the goal: constant in the replica count with a fleet).
2. Change propagation, 3 replicas: a document changed upstream, one environment at a time; the
   time until every replica's change stream (`/sse/environments/{key}/stream`) has announced
   it, from the change and from the first upstream answer carrying it; p50 and p99.
3. Hot path: `/api/v1/flags/` requests a second on one replica (wrk), with and without the fleet
   (requests never touch Redis: no difference beyond noise is the goal).
4. Cold start: a replica with an empty directory and the upstream unreachable, Redis holding
   the 100 environments: time until readiness answers 200 (the goal: within 2 s). Next to it, a
   replica without a fleet and the upstream up (what a new pod costs today), and one without a
   fleet and the upstream down (never ready).

The upstream is a scripted Flagsmith API (a Python HTTP server): one document per server key,
`ETag` and `If-None-Match` answered with 304 as the real API does, every request counted.
Documents are the serve suite's (tests/serve/documents.py), `revision` telling versions apart.

Usage: bench.py --bin PATH [--window S] [--changes N] [--rps-seconds S] [--out FILE]
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "serve"))
from documents import make_document, updated_at_for  # noqa: E402

HOST = "127.0.0.1"
ENVIRONMENTS = 100
POLL_SECONDS = 1
LEASE_SECONDS = 5
WAIT = 60  # seconds: the bound of every wait for an event
UNREACHABLE = "http://127.0.0.1:9/api/v1"  # nothing listens on port 9: refused at once


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def wait_until(pred, timeout: float, what: str, interval: float = 0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = pred()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(what)


def keys(i: int) -> tuple[str, str]:
    return f"fleet_bench_{i:03d}", f"ser.fleet_bench_{i:03d}"


# ------------------------------------------------------------------------------------------
# The scripted upstream
# ------------------------------------------------------------------------------------------


class Upstream:
    """100 environment documents by server key; counts requests; remembers when each revision
    was first answered with a 200 (the moment a replica could first know of it)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.docs: dict[str, tuple[bytes, str, int]] = {}  # server key -> (body, etag, revision)
        self.requests = 0
        self.times: dict[str, list[float]] = {}  # server key -> when each request came
        self.first_answer: dict[tuple[str, int], float] = {}
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                key = self.headers.get("X-Environment-Key", "")
                with upstream.lock:
                    upstream.requests += 1
                    upstream.times.setdefault(key, []).append(time.monotonic())
                    entry = upstream.docs.get(key)
                if entry is None or not self.path.split("?")[0].endswith("/environment-document/"):
                    return self._send(404, b'{"detail":"Not found."}', None)
                body, etag, revision = entry
                if self.headers.get("If-None-Match") == etag:
                    return self._send(304, b"", etag)
                with upstream.lock:
                    upstream.first_answer.setdefault((key, revision), time.monotonic())
                self._send(200, body, etag)

            def _send(self, status: int, body: bytes, etag: str | None) -> None:
                self.send_response(status)
                if etag:
                    self.send_header("ETag", etag)
                if status != 304:
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if body:
                    self.wfile.write(body)

        self.server = ThreadingHTTPServer((HOST, 0), Handler)
        self.server.daemon_threads = True
        self.api_url = f"http://{HOST}:{self.server.server_address[1]}/api/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def set_revision(self, i: int, revision: int) -> None:
        client, server = keys(i)
        body = json.dumps(make_document(client, name=f"Bench {i}", env_id=5000 + i, revision=revision)).encode()
        with self.lock:
            self.docs[server] = (body, f'"{client}-r{revision}"', revision)

    def count(self) -> int:
        with self.lock:
            return self.requests

    def longest_gaps(self, t0: float, t1: float) -> list[float]:
        """Per environment, the longest time within [t0, t1] without a request for it."""
        gaps = []
        with self.lock:
            for i in range(ENVIRONMENTS):
                times = [t for t in self.times.get(keys(i)[1], []) if t0 <= t <= t1]
                edges = [t0, *times, t1]
                gaps.append(max(b - a for a, b in zip(edges, edges[1:])))
        return gaps

    def answered(self, i: int, revision: int) -> float | None:
        with self.lock:
            return self.first_answer.get((keys(i)[1], revision))


# ------------------------------------------------------------------------------------------
# Redis and Flagpole processes
# ------------------------------------------------------------------------------------------


class Redis:
    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        workdir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", HOST, "--save", "", "--appendonly", "no",
             "--dir", str(workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(lambda: self.cli("PING") == "PONG", WAIT, "redis-server never answered")

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}/0"

    def cli(self, *args: str) -> str:
        done = subprocess.run(["redis-cli", "-p", str(self.port), *args], capture_output=True, text=True, timeout=10)
        return done.stdout.strip()

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


# Variables Flagpole would read as configuration: never passed on to the replicas.
CONFIG_VARIABLES = {"environment_key_pairs", "api_url", "api_poll_frequency_seconds", "api_poll_frequency",
                    "api_poll_timeout_seconds", "api_poll_timeout", "allow_origins", "endpoint_caches", "logging",
                    "server", "health_check", "proxy_key", "flagpole", "config_path", "ofrep"}


class Replica:
    def __init__(self, binary: str, workdir: Path, api_url: str, redis_url: str | None) -> None:
        self.port = free_port()
        workdir.mkdir(parents=True)
        flagpole: dict = {"snapshot_dir": str(workdir / "snapshots")}
        if redis_url:
            flagpole["fleet"] = {"redis_url": redis_url, "lease_seconds": LEASE_SECONDS}
        config = {
            "environment_key_pairs": [
                {"server_side_key": keys(i)[1], "client_side_key": keys(i)[0]} for i in range(ENVIRONMENTS)],
            "api_url": api_url,
            "api_poll_frequency_seconds": POLL_SECONDS,
            "api_poll_timeout_seconds": 2,
            "health_check": {"environment_update_grace_period_seconds": 2},
            "logging": {"log_level": "ERROR"},
            "flagpole": flagpole,
        }
        (workdir / "config.json").write_text(json.dumps(config))
        env = {k: v for k, v in os.environ.items() if k.lower() not in CONFIG_VARIABLES}
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [binary, "serve", "--config", str(workdir / "config.json"), "--host", HOST, "--port", str(self.port)],
            cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=open(workdir / "stderr.log", "wb"))

    def get(self, path: str, key: str | None = None) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection(HOST, self.port, timeout=5)
        try:
            conn.request("GET", path, headers={"X-Environment-Key": key} if key else {})
            r = conn.getresponse()
            return r.status, r.read()
        except OSError:
            return 0, b""
        finally:
            conn.close()

    def ready(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"flagpole on {self.port} exited with {self.proc.returncode}")
        return self.get("/proxy/health/readiness")[0] == 200

    def metric(self, name: str) -> float:
        status, body = self.get("/metrics")
        for line in body.decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return 0.0

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Fleet:
    """N replicas, with or without Redis, started and ready (leases settled with Redis)."""

    def __init__(self, binary: str, workdir: Path, upstream: Upstream, n: int, redis: Redis | None) -> None:
        self.replicas: list[Replica] = []
        try:
            for r in range(n):
                self.replicas.append(Replica(binary, workdir / f"replica-{r}", upstream.api_url,
                                             redis.url if redis else None))
            for fp in self.replicas:
                wait_until(fp.ready, WAIT, f"replica on {fp.port} never ready")
            if redis:
                # The leases spread (the first replica to start took them all), then a lease period
                # for the hand-overs to settle.
                def spread() -> bool:
                    held = [fp.metric("flagpole_fleet_leases_held") for fp in self.replicas]
                    return sum(held) > 0 and (n == 1 or max(held) < ENVIRONMENTS)
                wait_until(spread, WAIT, "leases never spread", interval=0.25)
                time.sleep(LEASE_SECONDS)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for fp in self.replicas:
            fp.stop()


# ------------------------------------------------------------------------------------------
# 1. Upstream load
# ------------------------------------------------------------------------------------------


def upstream_load(binary: str, work: Path, upstream: Upstream, redis: Redis, window: float) -> list[dict]:
    rows = []
    for fleet in (False, True):
        for n in (1, 3, 5):
            redis.cli("FLUSHALL")
            f = Fleet(binary, work / f"load-{'fleet' if fleet else 'alone'}-{n}", upstream, n, redis if fleet else None)
            try:
                before, t0 = upstream.count(), time.monotonic()
                held = []  # environments with a lease holder, sampled every second
                while time.monotonic() - t0 < window:
                    time.sleep(min(1.0, window - (time.monotonic() - t0)))
                    if fleet:
                        held.append(sum(fp.metric("flagpole_fleet_leases_held") for fp in f.replicas))
                got, elapsed = upstream.count() - before, time.monotonic() - t0
                gaps = upstream.longest_gaps(t0, t0 + elapsed)
            finally:
                f.stop()
            per_interval = got / (elapsed / POLL_SECONDS)
            rows.append({"fleet": fleet, "replicas": n, "requests_per_interval": per_interval,
                         "leases_held": held, "longest_gap": max(gaps),
                         "environments_unpolled_2_intervals": sum(g > 2 * POLL_SECONDS for g in gaps)})
            print(f"  load: {'fleet' if fleet else 'alone'} x{n}: {per_interval:.1f} requests per interval"
                  + (f", leases held {min(held):.0f}-{max(held):.0f}" if held else ""), file=sys.stderr)
    return rows


# ------------------------------------------------------------------------------------------
# 2. Change propagation (change streams)
# ------------------------------------------------------------------------------------------


class Streams:
    """One change stream per (replica, environment); the first time each revision was
    announced on each."""

    def __init__(self, replicas: list[Replica], envs: list[int]) -> None:
        self.lock = threading.Lock()
        self.seen: dict[tuple[int, int, int], float] = {}  # (replica, env, revision) -> time
        self.socks: list[socket.socket] = []
        for r, fp in enumerate(replicas):
            for i in envs:
                s = socket.create_connection((HOST, fp.port), timeout=WAIT)
                s.sendall(f"GET /sse/environments/{keys(i)[0]}/stream HTTP/1.1\r\nHost: b\r\n"
                          f"Accept: text/event-stream\r\n\r\n".encode())
                self.socks.append(s)
                threading.Thread(target=self._read, args=(s, r, i), daemon=True).start()

    def _read(self, s: socket.socket, r: int, i: int) -> None:
        base = updated_at_for(0).timestamp()
        buf = b""
        s.settimeout(None)
        while True:
            try:
                chunk = s.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            now = time.monotonic()
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.startswith(b"data: {"):
                    updated_at = json.loads(line[6:])["updated_at"]
                    revision = round((updated_at - base) / 60)
                    with self.lock:
                        self.seen.setdefault((r, i, revision), now)

    def all_seen(self, n: int, i: int, revision: int) -> list[float] | None:
        with self.lock:
            times = [self.seen.get((r, i, revision)) for r in range(n)]
        return None if None in times else times

    def close(self) -> None:
        for s in self.socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def percentile(values: list[float], p: float) -> float:
    """Nearest rank: of 20 values, p50 is the 10th and p99 the largest."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def propagation(f: Fleet, upstream: Upstream, changes: int, first_revision: int) -> dict:
    envs = list(range(changes))
    streams = Streams(f.replicas, envs)
    try:
        for i in envs:  # every stream has announced the current revision
            wait_until(lambda i=i: streams.all_seen(len(f.replicas), i, first_revision - 1), WAIT,
                       "a stream never opened")
        from_change, from_answer = [], []
        for i in envs:
            t0 = time.monotonic()
            upstream.set_revision(i, first_revision)
            times = wait_until(lambda i=i: streams.all_seen(len(f.replicas), i, first_revision), WAIT,
                               f"a replica never announced revision {first_revision} of environment {i}")
            from_change.append(max(times) - t0)
            from_answer.append(max(times) - upstream.answered(i, first_revision))
            time.sleep(0.1 + (i % 7) / 10)  # changes at different phases of the poll period
    finally:
        streams.close()
    return {"from_change": from_change, "from_answer": from_answer}


# ------------------------------------------------------------------------------------------
# 3. Hot path
# ------------------------------------------------------------------------------------------


def rps(fp: Replica, seconds: int) -> float:
    out = subprocess.run(
        ["wrk", "-t2", "-c64", f"-d{seconds}s", "-H", f"X-Environment-Key: {keys(0)[0]}",
         f"http://{HOST}:{fp.port}/api/v1/flags/"], capture_output=True, text=True, check=True).stdout
    errors = [line for line in out.splitlines() if "Non-2xx" in line or "Socket errors" in line]
    if errors:
        raise RuntimeError(f"wrk saw errors: {errors}")
    return float(next(line.split()[1] for line in out.splitlines() if line.startswith("Requests/sec")))


# ------------------------------------------------------------------------------------------
# 4. Cold start
# ------------------------------------------------------------------------------------------


def cold_start(binary: str, work: Path, api_url: str, redis: Redis | None, bound: float) -> float | None:
    fp = Replica(binary, work, api_url, redis.url if redis else None)
    try:
        try:
            wait_until(fp.ready, bound, "not ready", interval=0.005)
        except TimeoutError:
            return None
        return time.monotonic() - fp.started
    finally:
        fp.stop()


# ------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--window", type=float, default=10.0, help="seconds of upstream load counted per run")
    ap.add_argument("--changes", type=int, default=20)
    ap.add_argument("--rps-seconds", type=int, default=5)
    ap.add_argument("--rps-runs", type=int, default=3)
    ap.add_argument("--cold-runs", type=int, default=5)
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "fleet.json"))
    args = ap.parse_args()
    args.bin = str(Path(args.bin).resolve())  # replicas run in directories of their own
    if shutil.which("wrk") is None:
        sys.exit("wrk is needed (apt-get install wrk)")

    work = Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    upstream = Upstream()
    for i in range(ENVIRONMENTS):
        upstream.set_revision(i, 1)
    redis = Redis(work / "redis")
    results: dict = {"environments": ENVIRONMENTS, "poll_seconds": POLL_SECONDS, "lease_seconds": LEASE_SECONDS}
    try:
        print("1. upstream load", file=sys.stderr)
        results["load"] = upstream_load(args.bin, work, upstream, redis, args.window)

        print("2-3. change propagation and hot path, 3 replicas", file=sys.stderr)
        results["propagation"], results["rps"] = {}, {"alone": [], "fleet": []}
        revision = 2
        fleets = {}
        try:
            for mode in ("alone", "fleet"):
                redis.cli("FLUSHALL")
                fleets[mode] = Fleet(args.bin, work / f"change-{mode}", upstream, 3, redis if mode == "fleet" else None)
                results["propagation"][mode] = propagation(fleets[mode], upstream, args.changes, revision)
                revision += 1
                fleets[mode].stop()
            # The hot path, the two kinds alternating on one replica each (the others idle but running).
            for mode in ("alone", "fleet"):
                redis.cli("FLUSHALL")
                fleets[mode] = Fleet(args.bin, work / f"rps-{mode}", upstream, 3, redis if mode == "fleet" else None)
            for _ in range(args.rps_runs):
                for mode in ("alone", "fleet"):
                    results["rps"][mode].append(rps(fleets[mode].replicas[-1], args.rps_seconds))
        finally:
            for f in fleets.values():
                f.stop()

        print("4. cold start", file=sys.stderr)
        # Redis holds the 100 documents (the fleet above wrote them); no replica runs.
        held = len([k for k in redis.cli("KEYS", "flagpole:env:*:document").split() if k])
        assert held == ENVIRONMENTS, f"Redis holds {held} documents"
        cold = {"fleet_upstream_down": [], "alone_upstream_up": [], "alone_upstream_down": []}
        for run in range(args.cold_runs):
            cold["fleet_upstream_down"].append(cold_start(args.bin, work / f"cold-fleet-{run}", UNREACHABLE, redis, WAIT))
            cold["alone_upstream_up"].append(cold_start(args.bin, work / f"cold-alone-{run}", upstream.api_url, None, WAIT))
        cold["alone_upstream_down"].append(cold_start(args.bin, work / "cold-down", UNREACHABLE, None, 5.0))
        results["cold_start"] = cold
    finally:
        redis.stop()
        shutil.rmtree(work, ignore_errors=True)

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1))
    report(results, args)


def report(res: dict, args) -> None:
    n_env = res["environments"]
    print(f"\n### Upstream requests per poll interval ({n_env} environments, poll every {res['poll_seconds']} s)\n")
    print("| replicas | each polls alone | fleet (one Redis) | fleet / alone | fleet / fleet with 1 replica "
          "| fleet: environments with a lease holder (min–max) | fleet: environments unpolled for > 2 intervals "
          "| fleet: longest an environment went unpolled (s) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    load = {(r["fleet"], r["replicas"]): r for r in res["load"]}
    one = load[(True, 1)]["requests_per_interval"]
    for n in (1, 3, 5):
        alone, fleet = load[(False, n)]["requests_per_interval"], load[(True, n)]["requests_per_interval"]
        held = load[(True, n)]["leases_held"]
        row = load[(True, n)]
        print(f"| {n} | {alone:.0f} | {fleet:.0f} | {fleet / alone:.2f}× | {fleet / one:.2f}× | "
              f"{min(held):.0f}–{max(held):.0f} | {row['environments_unpolled_2_intervals']} | "
              f"{row['longest_gap']:.1f} |")

    print(f"\n### A change upstream reaching every replica's change stream (3 replicas, {args.changes} changes)\n")
    print("| measured from | alone p50 (ms) | alone p99 (ms) | fleet p50 (ms) | fleet p99 (ms) | fleet / alone p50 |")
    print("|---|---:|---:|---:|---:|---:|")
    prop = res["propagation"]
    for what, label in (("from_change", "the change upstream"), ("from_answer", "the first upstream answer with it")):
        a, f = [x * 1000 for x in prop["alone"][what]], [x * 1000 for x in prop["fleet"][what]]
        pa, pf = percentile(a, 50), percentile(f, 50)
        print(f"| {label} | {pa:.0f} | {percentile(a, 99):.0f} | {pf:.0f} | {percentile(f, 99):.0f} | "
              f"{pf / pa:.2f}× |")

    print(f"\n### Hot path: `/api/v1/flags/` on one of 3 replicas (wrk -t2 -c64, {args.rps_runs} × "
          f"{args.rps_seconds} s, alternating)\n")
    print("| | alone | fleet (one Redis) | fleet / alone |")
    print("|---|---:|---:|---:|")
    a, f = statistics.median(res["rps"]["alone"]), statistics.median(res["rps"]["fleet"])
    print(f"| requests/s, median | {a:,.0f} | {f:,.0f} | {f / a:.2f}× |")
    print(f"| requests/s, runs | {' / '.join(f'{x:,.0f}' for x in res['rps']['alone'])} | "
          f"{' / '.join(f'{x:,.0f}' for x in res['rps']['fleet'])} | |")

    cold = res["cold_start"]
    print(f"\n### Cold start: empty snapshot directory to readiness 200, {n_env} environments\n")
    print("| replica | runs | median (ms) | max (ms) | / fleet |")
    print("|---|---:|---:|---:|---:|")
    fleet_median = statistics.median(cold["fleet_upstream_down"]) * 1000
    for key, label in (("fleet_upstream_down", "fleet, upstream unreachable, Redis holds them"),
                       ("alone_upstream_up", "alone, upstream up"),
                       ("alone_upstream_down", "alone, upstream unreachable")):
        runs = cold[key]
        if None in runs:
            print(f"| {label} | {len(runs)} | not ready after 5 s | | |")
            continue
        med = statistics.median(runs) * 1000
        print(f"| {label} | {len(runs)} | {med:.0f} | {max(runs) * 1000:.0f} | {med / fleet_median:.2f}× |")


if __name__ == "__main__":
    main()
