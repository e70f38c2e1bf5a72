#!/usr/bin/env bash
# The whole test suite: formatting and lints, Rust unit/integration tests, then the Python suites
# (differential tests against the reference engine and the Flagsmith SDK) in a venv this script
# creates and owns (.venv). Safe to run repeatedly; the venv is reused when requirements match.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo build --release"
cargo build --release --locked -p flagpole

echo "== cargo test"
cargo test --workspace --locked

# The Python bindings are their own workspace (a PyO3 extension module; see bindings/python).
echo "== bindings/python: fmt, clippy, test"
cargo fmt --manifest-path bindings/python/Cargo.toml -- --check
cargo clippy --manifest-path bindings/python/Cargo.toml --all-targets --locked -- -D warnings
cargo test --manifest-path bindings/python/Cargo.toml --locked

echo "== python venv (.venv)"
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.requirements.sha
want=$(sha256sum tests/requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -r tests/requirements.txt
  echo "$want" > "$stamp"
fi

echo "== python bindings wheel (bindings/python, installed into .venv)"
wheels=bindings/python/target/wheels
rm -f "$wheels"/flagpole-*.whl
.venv/bin/maturin build --release --locked -m bindings/python/Cargo.toml --out "$wheels"
.venv/bin/python -m pip install --quiet --force-reinstall --no-deps "$wheels"/flagpole-*.whl

echo "== pytest"
export FLAGPOLE_BIN="$PWD/target/release/flagpole"
.venv/bin/python -m pytest tests -q "$@"
