"""Unleash's official Node SDKs against Flagpole in offline mode (tests/unleash/node/sdk.mjs):
`unleash-client` 6.12.1 reads `/api/client/features` with a client token (registering and posting
metrics, both accepted), `unleash-proxy-client` 3.8.2 reads `/api/frontend` with a frontend token
and a context it then changes.
"""

from __future__ import annotations

import json
import shutil
import subprocess

from conftest import CLIENT_TOKEN, FRONTEND_TOKEN
from loopback import HOST


def test_official_node_sdks(edge, node_dir):
    proc = subprocess.run([shutil.which("node") or "node", "sdk.mjs", f"http://{HOST}:{edge.port}",
                           CLIENT_TOKEN, FRONTEND_TOKEN], cwd=node_dir, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["errors"] == [], out
    server = out["server"]
    assert server["names"] == ["alpha", "beta", "gamma", "off", "office"]
    assert (server["alpha"], server["betaU1"], server["betaU3"], server["off"]) == (True, True, False, False)
    assert server["gamma"]["name"] == "blue" and server["gamma"]["payload"] == {"type": "string", "value": "b"}
    assert server["registered"] and server["metricsSent"], server
    frontend = out["frontend"]
    assert frontend["u1"]["alpha"] and frontend["u1"]["beta"] and not frontend["u1"]["gamma"], frontend
    assert frontend["u1"]["alphaVariant"]["name"] == "disabled"
    assert frontend["u3"] == {"beta": False}
