#!/usr/bin/env bash
# Engine benchmark: evaluation per identity (Flagpole vs the official flagsmith-flag-engine crate
# vs the Python reference). Prints one Markdown table; writes bench/out/engine.json.
#
# Python column: set FLAGPOLE_BENCH_PYTHON to a python with flagsmith-flag-engine==11.1.1 and
# flagsmith==6.3.0 installed (pip install -r tests/requirements.txt), or create .venv in the repo
# root; otherwise the column reads "python: skipped".
# Builds with the `profiling` profile (release + debug info, target/profiling/) for perf.
set -euo pipefail
# The bench runs in its own directory: a relative path to the Python is made absolute here, from
# where this script was started (a bare name is looked up on PATH as it is).
if [[ "${FLAGPOLE_BENCH_PYTHON:-}" == */* && "$FLAGPOLE_BENCH_PYTHON" != /* ]]; then
  FLAGPOLE_BENCH_PYTHON="$PWD/$FLAGPOLE_BENCH_PYTHON"
  export FLAGPOLE_BENCH_PYTHON
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo bench --profile profiling -p flagpole-bench --bench engine "$@"
