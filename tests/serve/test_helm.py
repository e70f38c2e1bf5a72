"""The Helm chart (`deploy/helm/flagpole`): `helm lint` and `helm template` with the default
values and with every option on, and what users rely on in what they render: the configuration
is one Flagpole accepts (`flagpole check`) and serves with, as the pod would run it; the Redis URL
comes from the named Secret; the image's user, a read-only root filesystem and a writable
snapshot directory; the probes answer; a mistake in the values is refused by name.

"As the pod would run it": the rendered Deployment's container is started here as `flagpole
serve` with its environment (a Secret reference resolved to a value the test gives, `$(NAME)`
expanded as Kubernetes expands it), its arguments, and its mounts (the configuration Secret's
file, the snapshot directory) placed under the test's directory.

Helm is a Go program: scripts/test.sh installs it into .tools/bin (`go install
helm.sh/helm/v3/cmd/helm@v3.22.0`); FLAGPOLE_HELM names another. Without it these tests skip
(under CI=true, fail).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from documents import make_document
from serve_harness import CONFIG_ENV_KEYS, REPO, binary_path, free_port, http_request, wait_until
from fleet_support import RedisServer, environment_id, need_redis

CHART = REPO / "deploy" / "helm" / "flagpole"
WAIT = 60  # seconds: the deadline of every wait for an event
RELEASE = "edge"
# `helm template` renders for Kubernetes 1.20 unless told; the chart needs 1.30 (preStop.sleep).
KUBE = ("--kube-version", "1.30.0")


def helm_binary() -> str:
    for candidate in (os.environ.get("FLAGPOLE_HELM"), str(REPO / ".tools" / "bin" / "helm"), shutil.which("helm")):
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.skip("helm is not installed (scripts/test.sh installs it: "
                "GOBIN=$PWD/.tools/bin go install helm.sh/helm/v3/cmd/helm@v3.22.0)")


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([helm_binary(), *args], capture_output=True, text=True, timeout=120)
    if check:
        assert done.returncode == 0, f"helm {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


def values_file(tmp_path: Path, values: dict | None, name: str = "values.json") -> list[str]:
    """`--values FILE` for these values (JSON is YAML), or nothing for the defaults."""
    if values is None:
        return []
    path = tmp_path / name
    path.write_text(json.dumps(values))
    return ["--values", str(path)]


def render(tmp_path: Path, values: dict | None = None) -> dict[str, list[dict]]:
    return by_kind(helm("template", RELEASE, str(CHART), *KUBE, *values_file(tmp_path, values)).stdout)


def by_kind(rendered: str) -> dict[str, list[dict]]:
    docs: dict[str, list[dict]] = {}
    for doc in yaml.safe_load_all(rendered):
        if doc:
            docs.setdefault(doc["kind"], []).append(doc)
    return docs


def one(docs: dict[str, list[dict]], kind: str) -> dict:
    assert len(docs.get(kind, [])) == 1, f"{kind}: {docs.get(kind)}"
    return docs[kind][0]


def container(docs) -> dict:
    spec = one(docs, "Deployment")["spec"]["template"]["spec"]
    assert len(spec["containers"]) == 1
    return spec["containers"][0]


def rendered_config(docs) -> dict:
    secret = one(docs, "Secret")
    return json.loads(base64.b64decode(secret["data"]["config.json"]))


def full_values(api_url: str, grpc_port: int = 8013) -> dict:
    return {
        "replicaCount": 3,
        "image": {"repository": "registry.example/flagpole", "tag": "1.2.3"},
        "config": {
            "environment_key_pairs": [{"server_side_key": "ser.helm_server", "client_side_key": "helm_client"}],
            "api_url": api_url,
            "api_poll_frequency_seconds": 1,
            "api_poll_timeout_seconds": 1,
            "health_check": {"environment_update_grace_period_seconds": 5},
            "ofrep": {"sse": {"secret": "a-long-shared-stream-secret"}},
            "flagpole": {"shutdown_timeout_seconds": 5, "grpc": {"port": grpc_port}},
        },
        "fleet": {"redisUrlSecret": {"name": "flagpole-redis", "key": "url"}, "leaseSeconds": 5},
        "autoscaling": {"enabled": True, "minReplicas": 3, "maxReplicas": 12, "targetCPUUtilizationPercentage": 65},
        "podDisruptionBudget": {"enabled": True, "minAvailable": 2},
        "serviceMonitor": {"enabled": True, "interval": "15s", "labels": {"release": "prometheus"}},
        "prometheusRule": {"enabled": True, "for": "2m", "labels": {"release": "prometheus"}},
        "resources": {"requests": {"cpu": "500m", "memory": "128Mi"}, "limits": {"memory": "1Gi"}},
        "extraEnv": [{"name": "RUST_LOG", "value": "info"}],
        "podAnnotations": {"team": "flags"},
    }


# ------------------------------------------------------------------------------------------
# The pod, run here as Kubernetes would run it
# ------------------------------------------------------------------------------------------

REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def expand(value: str, defined: dict[str, str]) -> str:
    """Kubernetes' expansion of an env value: `$(NAME)` of a variable declared earlier in the
    list is replaced, `$$` is one `$`, anything else is left as written."""
    def one_reference(m: re.Match) -> str:
        if m.group(0) == "$$":
            return "$"
        return defined.get(m.group(1), m.group(0))
    return REFERENCE.sub(one_reference, value)


class Pod:
    """The rendered container's command line, environment and files, placed under `root`.
    `secrets` answers its Secret references: {(secret name, key): value}."""

    def __init__(self, docs, root: Path, secrets: dict[tuple[str, str], str] | None = None,
                 config_text: str | None = None) -> None:
        c = container(docs)
        pod = one(docs, "Deployment")["spec"]["template"]["spec"]
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert "emptyDir" in volumes["snapshots"], volumes["snapshots"]
        # Mount paths → directories here, in the file and in every variable.
        self.places = {mounts["config"]: root / "config", mounts["snapshots"]: root / "snapshots"}
        for here in self.places.values():
            here.mkdir(parents=True, exist_ok=True)
        if config_text is None:
            config_text = base64.b64decode(one(docs, "Secret")["data"]["config.json"]).decode()
        (self.places[mounts["config"]] / "config.json").write_text(self.relocate(config_text))
        self.env: dict[str, str] = {}
        for var in c.get("env", []):
            if "valueFrom" in var:
                ref = var["valueFrom"]["secretKeyRef"]
                value = (secrets or {})[(ref["name"], ref["key"])]
            else:
                value = expand(var["value"], self.env)
            self.env[var["name"]] = self.relocate(value)
        self.args = c.get("args", [])

    def relocate(self, text: str) -> str:
        for mounted, here in self.places.items():
            text = text.replace(mounted, str(here))
        return text

    def check(self) -> subprocess.CompletedProcess:
        """`flagpole check --config <the mounted file>` with the pod's variables."""
        env = {k: v for k, v in os.environ.items() if k.lower() not in CONFIG_ENV_KEYS}
        return subprocess.run([str(binary_path()), "check", "--config", self.env["CONFIG_PATH"]],
                              env={**env, **self.env}, capture_output=True, text=True, timeout=WAIT)

    def start(self, flagpole, workdir: Path):
        fp = flagpole(env=self.env, extra_args=self.args, workdir=workdir, wait=True)
        fp.wait_ready(WAIT)
        return fp


def assert_probes_answer(fp, c: dict) -> None:
    for probe in ("livenessProbe", "readinessProbe"):
        get = c[probe]["httpGet"]
        assert get["port"] == "http", get
        assert http_request(fp.port, "GET", get["path"], timeout=5).status == 200, (probe, get)


# ------------------------------------------------------------------------------------------
# Tests
# ------------------------------------------------------------------------------------------


def test_lint_with_default_and_full_values(tmp_path):
    helm("lint", "--strict", str(CHART))
    helm("lint", "--strict", str(CHART), *values_file(tmp_path, full_values("https://flags.example/api/v1")))


def test_default_values_render_a_pod_that_serves(tmp_path, flagpole):
    docs = render(tmp_path)
    assert sorted(docs) == ["Deployment", "PodDisruptionBudget", "Secret", "Service"], sorted(docs)
    deployment = one(docs, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    c = container(docs)

    # The image's user, a read-only root filesystem, nothing to escalate to.
    assert pod["securityContext"]["runAsUser"] == 65532 and pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["fsGroup"] == 65532
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert pod["automountServiceAccountToken"] is False
    # The only writable place is the snapshot directory, an emptyDir, and Flagpole writes there.
    config = rendered_config(docs)
    snapshot_mount = next(m for m in c["volumeMounts"] if m["name"] == "snapshots")
    assert config["flagpole"]["snapshot_dir"] == snapshot_mount["mountPath"] == "/var/lib/flagpole"
    assert config["server"]["port"] == c["ports"][0]["containerPort"] == 8000
    assert c["image"] == "flagpole:0.1.0"
    # A grace period longer than preStop's sleep plus Flagpole's own shutdown bound.
    assert pod["terminationGracePeriodSeconds"] > c["lifecycle"]["preStop"]["sleep"]["seconds"] \
        + config["flagpole"]["shutdown_timeout_seconds"]
    service = one(docs, "Service")
    assert service["spec"]["ports"] == [{"name": "http", "port": 8000, "targetPort": "http"}]
    assert one(docs, "PodDisruptionBudget")["spec"]["minAvailable"] == 1

    # No environment configured: the pod runs `serve --example` and serves the bundled example
    # (`flagpole check` has no such flag: it would say that the file names no environment).
    assert c["args"] == ["--example"]
    # Ready means "can serve": stale documents do not take the pod out of the Service.
    assert c["readinessProbe"]["httpGet"]["path"] == "/proxy/health/serving"
    pod_here = Pod(docs, tmp_path / "pod")
    fp = pod_here.start(flagpole, tmp_path / "run")
    assert_probes_answer(fp, c)
    assert fp.get("/api/v1/flags/", "example_client_key").status == 200


def test_full_values_with_the_redis_url_from_a_secret(tmp_path, flagpole, upstream):
    need_redis()
    redis = RedisServer(tmp_path / "redis").start()
    try:
        grpc_port = free_port()  # the pod runs here: a free port, not the default one
        values = full_values(upstream.api_url, grpc_port)
        docs = render(tmp_path, values)
        assert sorted(docs) == ["Deployment", "HorizontalPodAutoscaler", "PodDisruptionBudget",
                                "PrometheusRule", "Secret", "Service", "ServiceMonitor"], sorted(docs)
        deployment = one(docs, "Deployment")
        assert "replicas" not in deployment["spec"], "the autoscaler owns the replica count"
        hpa = one(docs, "HorizontalPodAutoscaler")["spec"]
        assert (hpa["minReplicas"], hpa["maxReplicas"]) == (3, 12)
        assert hpa["metrics"] == [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 65}}}]
        assert hpa["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
        assert one(docs, "PodDisruptionBudget")["spec"]["minAvailable"] == 2
        monitor = one(docs, "ServiceMonitor")
        assert monitor["metadata"]["labels"]["release"] == "prometheus"
        assert monitor["spec"]["endpoints"] == [{"port": "http", "path": "/metrics", "interval": "15s",
                                                 "scrapeTimeout": "10s"}]
        rule = one(docs, "PrometheusRule")
        assert rule["metadata"]["labels"]["release"] == "prometheus"
        (alert,) = rule["spec"]["groups"][0]["rules"]
        assert alert["alert"] == "FlagpoleEnvironmentStale" and alert["for"] == "2m", alert
        assert "flagpole_environment_stale" in alert["expr"] and "$labels.environment" in alert["annotations"]["summary"]
        c = container(docs)
        assert c["image"] == "registry.example/flagpole:1.2.3"
        assert c["resources"] == values["resources"]
        assert {"name": "grpc", "containerPort": grpc_port} in c["ports"]
        assert {"name": "grpc", "port": grpc_port, "targetPort": "grpc"} in one(docs, "Service")["spec"]["ports"]
        assert deployment["spec"]["template"]["metadata"]["annotations"]["team"] == "flags"
        assert "args" not in c, "environments are configured: no bundled example"

        # The Redis URL: only a reference to the Secret, never in the rendered objects.
        env = {v["name"]: v for v in c["env"]}
        assert env["FLAGPOLE_FLEET_REDIS_URL"]["valueFrom"] == {
            "secretKeyRef": {"name": "flagpole-redis", "key": "url"}}
        assert "FLAGPOLE" not in env, "a whole-section variable would replace the file's section"
        config = rendered_config(docs)
        assert config["flagpole"]["fleet"] == {"lease_seconds": 5}, "the URL is merged in by Flagpole"
        assert config["flagpole"]["grpc"] == {"port": grpc_port}
        assert config["environment_key_pairs"] == values["config"]["environment_key_pairs"]

        # Kubernetes resolves the Secret; Flagpole accepts what results and shows the URL redacted.
        url = f"redis://flagpole:s3cret-pass@127.0.0.1:{redis.port}/0"
        redis.cli("ACL", "SETUSER", "flagpole", "on", ">s3cret-pass", "~flagpole:*", "&flagpole:*", "+@all")
        pod = Pod(docs, tmp_path / "pod", secrets={("flagpole-redis", "url"): url})
        checked = pod.check()
        assert checked.returncode == 0, checked.stderr
        shown = json.loads(checked.stdout)["flagpole"]["fleet"]
        assert shown["redis_url"] == f"redis://flagpole:redacted@127.0.0.1:{redis.port}/0", shown
        assert "s3cret-pass" not in checked.stdout + checked.stderr

        # The pod serves the upstream's environment and shares it through that Redis.
        upstream.set_document("ser.helm_server", make_document("helm_client", revision=4))
        fp = pod.start(flagpole, tmp_path / "run")
        assert_probes_answer(fp, c)
        r = fp.get("/api/v1/flags/?feature=plain_string", "helm_client")
        assert r.status == 200 and r.json()["feature_state_value"] == "hello-r4", r
        key = f"flagpole:env:{environment_id('helm_client')}:document"
        wait_until(lambda: redis.cli("HEXISTS", key, "body") == "1", WAIT, "the document never reached Redis")
        # The warm-start copy goes to the snapshot directory (the emptyDir; the rest is read-only).
        snapshots = pod.places[next(m["mountPath"] for m in c["volumeMounts"] if m["name"] == "snapshots")]
        wait_until(lambda: any(snapshots.iterdir()), WAIT, "nothing was written to the snapshot directory")

        # An upstream outage: the document goes stale (the Edge Proxy's readiness says 503), and
        # the chart's readiness probe keeps the pod in the Service, serving the last good flags.
        upstream.set_mode("500")
        wait_until(lambda: fp.get("/proxy/health/readiness").status == 503, WAIT, "never stale")
        wait_until(lambda: re.search(rb"^flagpole_environment_stale\{[^}]*\} 1$", fp.get("/metrics").body, re.M),
                   WAIT, "flagpole_environment_stale never said so")
        assert_probes_answer(fp, c)
        assert fp.get("/api/v1/flags/?feature=plain_string", "helm_client").json()["feature_state_value"] == "hello-r4"
    finally:
        redis.stop()


def test_config_from_an_existing_secret(tmp_path, flagpole):
    docs = render(tmp_path, {"existingConfigSecret": {"name": "my-flagpole-config", "key": "flagpole.json"}})
    assert "Secret" not in docs, "the chart renders no configuration of its own"
    pod_spec = one(docs, "Deployment")["spec"]["template"]["spec"]
    volume = next(v for v in pod_spec["volumes"] if v["name"] == "config")
    assert volume["secret"] == {"secretName": "my-flagpole-config",
                                "items": [{"key": "flagpole.json", "path": "config.json"}]}
    assert "args" not in container(docs), "the Secret names the environments: no bundled example"
    # What that Secret holds is what the pod serves.
    document = REPO / "examples" / "environment.json"
    mine = {"environment_key_pairs": [{"server_side_key": "ser.mine", "client_side_key": "example_client_key"}],
            "flagpole": {"documents": [str(document)], "snapshot_dir": "/var/lib/flagpole"}}
    pod = Pod(docs, tmp_path / "pod", config_text=json.dumps(mine))
    assert pod.check().returncode == 0
    fp = pod.start(flagpole, tmp_path / "run")
    assert fp.get("/api/v1/environment-document/", "ser.mine").status == 200


def test_the_fleet_url_is_merged_into_an_existing_config_secret(tmp_path, flagpole):
    """existingConfigSecret plus fleet.redisUrlSecret: the URL joins the file's own `flagpole`
    section; every other setting of that file stays as written."""
    need_redis()
    redis = RedisServer(tmp_path / "redis").start()
    try:
        docs = render(tmp_path, {"existingConfigSecret": {"name": "mine", "key": "config.json"},
                                 "fleet": {"redisUrlSecret": {"name": "flagpole-redis", "key": "url"}}})
        document = REPO / "examples" / "environment.json"
        mine = {"environment_key_pairs": [{"server_side_key": "ser.mine", "client_side_key": "example_client_key"}],
                "flagpole": {"documents": [str(document)], "snapshot_dir": "/var/lib/flagpole",
                             "metrics": {"enabled": False}, "identity_cache": {"max_bytes": 0},
                             "fleet": {"lease_seconds": 3}}}
        url = f"redis://127.0.0.1:{redis.port}/0"
        pod = Pod(docs, tmp_path / "pod", secrets={("flagpole-redis", "url"): url}, config_text=json.dumps(mine))
        checked = pod.check()
        assert checked.returncode == 0, checked.stderr
        effective = json.loads(checked.stdout)["flagpole"]
        assert effective["metrics"]["enabled"] is False, effective["metrics"]
        assert effective["identity_cache"]["max_bytes"] == 0, effective["identity_cache"]
        assert effective["fleet"]["redis_url"] == url and effective["fleet"]["lease_seconds"] == 3, effective
        assert "FLAGPOLE_FLEET_REDIS_URL" in checked.stderr, checked.stderr  # named as a source
        fp = pod.start(flagpole, tmp_path / "run")
        assert fp.get("/metrics").status == 404, "the file's metrics.enabled: false was lost"
    finally:
        redis.stop()


def test_a_changed_configuration_rolls_the_pods(tmp_path):
    def checksum(values):
        deployment = one(render(tmp_path, values), "Deployment")
        return deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    first = checksum({"config": {"api_poll_frequency_seconds": 10}})
    assert checksum({"config": {"api_poll_frequency_seconds": 10}}) == first
    assert checksum({"config": {"api_poll_frequency_seconds": 30}}) != first


@pytest.mark.parametrize("values, named", [
    ({"port": "http"}, "port"),
    ({"replicas": 3}, "replicas"),  # replicaCount misspelt
    ({"fleet": {"leaseSeconds": 0}}, "leaseSeconds"),
    ({"image": {"repository": ""}}, "repository"),
])
def test_values_that_do_not_fit_are_refused_by_name(tmp_path, values, named):
    done = helm("template", RELEASE, str(CHART), *KUBE, *values_file(tmp_path, values), check=False)
    assert done.returncode != 0, done.stdout[:500]
    assert "schema" in done.stderr and named in done.stderr, done.stderr


def test_config_values_are_checked_by_flagpoles_own_schema(tmp_path):
    """values.schema.json's `config` is `flagpole config schema` (one source: the script that
    copies it, run here as a check), so helm refuses what `flagpole check` would."""
    copied = subprocess.run([sys.executable, str(REPO / "scripts" / "chart_schema.py"), "--check",
                             "--flagpole", str(binary_path())], capture_output=True, text=True, timeout=WAIT)
    assert copied.returncode == 0, copied.stderr
    # Flagpole's schema is open outside `flagpole` (check only warns about a far unknown key
    # there); the chart's copy closes its top level, so a misspelt top-level key fails helm too.
    for bad, named in [
        ('config.enviroment_key_pairs=[{"server_side_key": "ser.a", "client_side_key": "a"}]',
         "enviroment_key_pairs"),
        ('config.flagpole={"identity_cach": {"max_bytes": 0}}', "identity_cach"),
        ('config.environment_key_pairs=[{"server_side_key": 1, "client_side_key": "a"}]',
         "server_side_key"),
        ('config.api_poll_frequency_seconds=0', "api_poll_frequency_seconds"),
        ('config.flagpole={"metrics": {"enabeld": false}}', "enabeld"),
        ('config.api_url="not a url"', "api_url"),
    ]:
        for command in (["template", RELEASE, str(CHART), *KUBE], ["lint", "--strict", str(CHART)]):
            done = helm(*command, "--set-json", bad, check=False)
            assert done.returncode != 0, (command, bad, done.stdout[:300])
            assert named in done.stdout + done.stderr, (command, bad, done.stdout, done.stderr)
    good = 'config.flagpole={"metrics": {"enabled": false}, "fleet": {"redis_url": "redis://r:6379/0"}}'
    helm("template", RELEASE, str(CHART), *KUBE, "--set-json", good)


def test_the_chart_needs_kubernetes_1_30(tmp_path):
    # preStop.sleep, the drain before SIGTERM, exists from Kubernetes 1.30.
    done = helm("template", RELEASE, str(CHART), "--kube-version", "1.29.9", check=False)
    assert done.returncode != 0 and "kubeVersion" in done.stderr, done.stderr
    helm("template", RELEASE, str(CHART), "--kube-version", "1.30.0")


def test_the_guide_install_command_renders(tmp_path):
    """docs/deploying.md "Install with Helm": its `helm install` line, run as `helm template`."""
    guide = (REPO / "docs" / "deploying.md").read_text()
    block = guide.split("## Install with Helm", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    line = block.replace("\\\n", " ")
    args = shlex.split(line)
    assert args[:3] == ["helm", "install", "flagpole"], args
    out = subprocess.run([helm_binary(), "template", *args[2:], *KUBE], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    docs = by_kind(out.stdout)
    assert "HorizontalPodAutoscaler" in docs
    assert container(docs)["image"] == "registry.example/flagpole:0.1.0"
    assert rendered_config(docs)["environment_key_pairs"] == [
        {"server_side_key": "ser.abc123", "client_side_key": "abc123"}]
