#!/usr/bin/env bash
# Python bindings benchmark: the `flagpole` package vs the Flagsmith Python SDK 6.3.0's local
# evaluation, per call and with 1 and 2 threads (GIL released vs held). Prints Markdown tables;
# writes bench/out/python.json. Uses the repository's .venv (created by ./scripts/test.sh, or by
# `python3 -m venv .venv && .venv/bin/pip install -r tests/requirements.txt`); builds the wheel
# from bindings/python and installs it there. Extra arguments go to bench/python/bench.py.
# gen-docs builds with the `profiling` profile as in the other benches; the wheel with the
# bindings' own release profile.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo run --quiet --profile profiling --locked -p flagpole-bench --bin gen-docs -- --out bench/out/docs >/dev/null
wheels=bindings/python/target/wheels
rm -f "$wheels"/*.whl
.venv/bin/maturin build --quiet --release --locked -m bindings/python/Cargo.toml --out "$wheels"
.venv/bin/python -m pip install --quiet --force-reinstall --no-deps "$wheels"/flagpole_python-*.whl
.venv/bin/python bench/python/bench.py bench/out/docs --json-out bench/out/python.json "$@"
