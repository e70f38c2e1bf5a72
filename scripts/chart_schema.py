#!/usr/bin/env python3
"""Keeps the Helm chart's `config` schema what Flagpole's is: `properties.config` of
deploy/helm/flagpole/values.schema.json is the output of `flagpole config schema` (its keys,
types, bounds and closed sections; its top level closed too, see `config_schema`), so `helm install` refuses a misspelt or mistyped `config`
value as `flagpole check` would, and the two cannot drift.

    scripts/chart_schema.py [--flagpole BIN]          rewrite the chart's schema
    scripts/chart_schema.py --check [--flagpole BIN]  exit 1 when it differs (a test runs this)

BIN defaults to $FLAGPOLE_BIN, else target/release/flagpole, else target/debug/flagpole.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHART_SCHEMA = REPO / "deploy" / "helm" / "flagpole" / "values.schema.json"
DESCRIPTION = ("Flagpole's config.json as values: `flagpole config schema` (scripts/chart_schema.py "
               "copies it here); rendered into a Secret.")


def flagpole_binary(given: str | None) -> str:
    for candidate in (given, os.environ.get("FLAGPOLE_BIN"), REPO / "target" / "release" / "flagpole",
                      REPO / "target" / "debug" / "flagpole"):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    sys.exit("no flagpole binary: build it (cargo build) or pass --flagpole BIN")


def config_schema(binary: str) -> dict:
    """Flagpole's schema as a subschema: without the root-only `$schema`."""
    out = subprocess.run([binary, "config", "schema"], capture_output=True, text=True, check=True).stdout
    schema = json.loads(out)
    schema.pop("$schema", None)
    schema.pop("title", None)
    schema["description"] = DESCRIPTION
    # One difference, the chart's own: its top level is closed too. `check` only warns about an
    # unknown top-level key far from every known one (a file written for a newer peer still
    # starts), but chart values are written for this chart, where such a key is a typo
    # (`enviroment_key_pairs`) that would otherwise render and leave the pod exiting 2. A file
    # given with `existingConfigSecret` is not values, and keeps `check`'s rule.
    schema["additionalProperties"] = False
    return schema


def expected(binary: str) -> str:
    chart = json.loads(CHART_SCHEMA.read_text())
    chart["properties"]["config"] = config_schema(binary)
    return json.dumps(chart, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the chart's schema differs")
    parser.add_argument("--flagpole", help="the flagpole binary")
    args = parser.parse_args()
    text = expected(flagpole_binary(args.flagpole))
    if args.check:
        if CHART_SCHEMA.read_text() != text:
            print(f"{CHART_SCHEMA.relative_to(REPO)} differs from `flagpole config schema`; "
                  "regenerate it: scripts/chart_schema.py", file=sys.stderr)
            return 1
        return 0
    CHART_SCHEMA.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
