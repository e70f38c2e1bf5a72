"""A flagd flag file and a Flagpole serving it (the `flags` list of config.json), for the suites
that drive the flagd providers against flag sets rather than Flagsmith environments.

`FLAGS` covers what the answers depend on: every value type, targeting (a match and a `null`
result), set and flag metadata (the flag's wins), a disabled flag and one without a default
variant. `changed(FLAGS)` is the same set after an edit (one value changed, one flag added, one
removed), so a test sees which keys a change names."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from fixture_files import write_documents
from flagd_support import ENVS, FlagdProcess, flagd_config
from serve_harness import free_port

FLAG_SET_ID = "shop"

FLAGS = {
    "$schema": "https://flagd.dev/schema/v0/flags.json",
    "metadata": {"flagSetId": FLAG_SET_ID, "team": "web", "version": 3},
    "$evaluators": {"is_pro": {"==": [{"var": "plan"}, "pro"]}},
    "flags": {
        "new-checkout": {
            "state": "ENABLED",
            "variants": {"on": True, "off": False},
            "defaultVariant": "on",
            "metadata": {"team": "checkout", "owner": "ana"},
        },
        "banner": {
            "state": "ENABLED",
            "variants": {"plain": "Hello", "fancy": "Hello, pro!"},
            "defaultVariant": "plain",
            "targeting": {"if": [{"$ref": "is_pro"}, "fancy", None]},
        },
        "retries": {"state": "ENABLED", "variants": {"few": 3, "many": 10}, "defaultVariant": "few"},
        "ratio": {"state": "ENABLED", "variants": {"low": 0.25, "high": 0.75}, "defaultVariant": "high"},
        "theme": {
            "state": "ENABLED",
            "variants": {"dark": {"bg": "#000", "depth": 2}, "light": {"bg": "#fff", "depth": 1}},
            "defaultVariant": "light",
        },
        "retired": {"state": "DISABLED", "variants": {"on": True, "off": False}, "defaultVariant": "on"},
        "unset": {"state": "ENABLED", "variants": {"a": "A", "b": "B"}, "defaultVariant": None},
    },
}


def changed(flags: dict) -> dict:
    """`flags` edited: `banner`'s plain value changed, `limits` added, `ratio` removed."""
    edited = copy.deepcopy(flags)
    edited["flags"]["banner"]["variants"]["plain"] = "Hello again"
    edited["flags"]["limits"] = {"state": "ENABLED", "variants": {"low": 1, "high": 9}, "defaultVariant": "high"}
    del edited["flags"]["ratio"]
    return edited


def write_flags(path: Path, flags: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(flags, indent=1))
    return path


def flagsets_process(workdir: Path, flags_path: Path, *, sync_port: bool = True) -> FlagdProcess:
    """A Flagpole with the flagd listener (and, with `sync_port`, the sync service's own port)
    serving `flags_path` as a flag set, beside the flagd suite's environments."""
    paths = write_documents(workdir / "docs", ENVS)
    config = flagd_config(paths, free_port())
    if sync_port:
        config["flagpole"]["grpc"]["sync_port"] = free_port()
    config["flags"] = [{"uri": str(flags_path), "name": "shop-file"}]
    fp = FlagdProcess(workdir, config=config)
    fp.sync_port = config["flagpole"]["grpc"].get("sync_port")
    return fp
