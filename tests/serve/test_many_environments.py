"""Many environments in one proxy: a thousand local document files, every one hot-reloaded by
one watcher (one inotify instance, not one per file, so the per-user limit of 128 instances does
not cut hot reload off after the 128th file); readiness reports loading progress."""

from __future__ import annotations

import json
import os
from pathlib import Path

from documents import make_document
from serve_harness import EVENT_TIMEOUT, wait_until, write_atomic

COUNT = 1000
WAIT = EVENT_TIMEOUT


def plain_value(fp, key: str) -> str | None:
    r = fp.get("/api/v1/flags/?feature=plain_string", key)
    if r.status != 200:
        return None
    return r.json()["feature_state_value"]


def test_a_thousand_files_are_each_reloaded_when_they_change(flagpole, tmp_path):
    # Two directories (one watch each), 500 documents in each.
    paths = []
    for i in range(COUNT):
        directory = tmp_path / ("docs-a" if i % 2 == 0 else "docs-b")
        directory.mkdir(exist_ok=True)
        path = directory / f"env-{i:04d}.json"
        path.write_text(json.dumps(make_document(f"many_{i:04d}", revision=0)))
        paths.append(path)
    config = {
        "api_url": "http://127.0.0.1:9/api/v1",
        "flagpole": {"documents": [{"path": str(p)} for p in paths]},
    }
    fp = flagpole(config, wait=False)
    fp.wait_ready(WAIT)
    ready = fp.get("/proxy/health/readiness").json()
    assert ready["status"] == "ok", ready
    assert ready.get("progress") == f"{COUNT}/{COUNT} environments loaded", ready
    for i in (0, COUNT // 2, COUNT - 1, 137):
        assert plain_value(fp, f"many_{i:04d}") == "hello-r0"

    # One inotify instance for all of them (Linux), whatever the file count.
    fds = Path(f"/proc/{fp.proc.pid}/fd")
    if fds.exists():
        inotify = [fd for fd in fds.iterdir() if "inotify" in os.readlink(fd)]
        assert len(inotify) <= 1, inotify

    # The first, the middle and the last file change; each new value is served, the others
    # keep theirs.
    changed = {0: 1, COUNT // 2: 2, COUNT - 1: 3}
    for i, revision in changed.items():
        write_atomic(paths[i], json.dumps(make_document(f"many_{i:04d}", revision=revision)))
    for i, revision in changed.items():
        key = f"many_{i:04d}"
        wait_until(lambda: plain_value(fp, key) == f"hello-r{revision}", WAIT,
                   f"{key} reloaded to revision {revision}")
    for i in (1, COUNT // 2 + 1, COUNT - 2):
        assert plain_value(fp, f"many_{i:04d}") == "hello-r0"

    # A file written in place (not replaced) is picked up too.
    i = 777
    with open(paths[i], "w") as f:
        f.write(json.dumps(make_document(f"many_{i:04d}", revision=9)))
    wait_until(lambda: plain_value(fp, f"many_{i:04d}") == "hello-r9", WAIT, "in-place write reloaded")
