"""Keys in what `flagpole serve` writes at start (ARCHITECTURE.md: the server never logs a key).
With `logging.log_format = "json"` every line is a log event and none carries a key, not even the
start-up lines for a `--document` (they name it by fingerprint and show where the key goes in the
requests to try). The plain start-up lines are for a person trying the proxy: a `--document`'s
client-side key (public by design) and curl lines using it, a configured server-side key only as
its fingerprint, and the bundled example's keys (public, in the repository) in full."""

from __future__ import annotations

import json
import re

from documents import make_document

CLIENT = "startup_keys_client"
SERVER = "ser.startup_keys_secret_server"
PAIR = {"server_side_key": SERVER, "client_side_key": CLIENT}


def serve_document(flagpole, tmp_path, logging: dict, extra_args: list[str] | None = None):
    # Not named after the key: the start-up lines show the file's path.
    path = tmp_path / "env.json"
    path.write_text(json.dumps(make_document(CLIENT, name="Start-up keys")))
    config = {"environment_key_pairs": [PAIR], "api_url": "http://127.0.0.1:9/api/v1",
              "logging": logging}
    fp = flagpole(config=config, documents=[path], extra_args=extra_args)
    fp.wait_ready(60)
    return fp


def test_json_lines_carry_no_key(flagpole, tmp_path):
    fp = serve_document(flagpole, tmp_path, {"log_format": "json", "enable_access_log": True})
    assert fp.get("/api/v1/flags/", key=CLIENT).status == 200
    assert fp.get("/api/v1/flags/", key=SERVER).status == 200
    assert fp.stop() == 0
    text = fp.stderr_text()
    events = [json.loads(line) for line in text.splitlines()]
    messages = [e["fields"]["message"] for e in events]
    assert any(m.startswith("try: curl -H 'X-Environment-Key: <client-side key>'") for m in messages), text
    assert any(m.startswith("serving ") and m.endswith("env.json") for m in messages), text
    assert CLIENT not in text and SERVER not in text, text


def test_plain_lines_show_public_keys_and_fingerprint_secrets(flagpole, tmp_path):
    fp = serve_document(flagpole, tmp_path, {}, extra_args=["--example"])
    text = fp.stderr_text()
    assert f"client-side key: {CLIENT}" in text, text
    assert f"curl -H 'X-Environment-Key: {CLIENT}' http://" in text, text
    assert SERVER not in text, text
    assert re.search(r"server-side key: ser…[0-9a-f]{8}\n", text), text
    # The bundled example's keys are public: shown whole, to be copied.
    assert "client-side key: example_client_key" in text, text
    assert "server-side key: ser.example_server_key" in text, text
