#!/usr/bin/env bash
# Python bindings benchmark: the `flagpole_python` package vs the Flagsmith Python SDK 6.3.0's
# local evaluation, per call and with 1 and 2 threads (GIL released when it pays, always, never).
# Prints Markdown tables; writes bench/out/python.json. Uses the repository's .venv (created by
# ./scripts/test.sh, or by `python3 -m venv .venv && .venv/bin/pip install -r
# tests/requirements.txt`); builds the wheel from bindings/python and installs it there. Extra
# arguments go to bench/python/bench.py.
#
# `bench/python.sh --sweep [ARGS]`: the thread part alone on generated documents from 5 to 400
# features (names f<features>s<segments>), to find where releasing the GIL starts to pay (the
# threshold in bindings/python/src/gil.rs); writes bench/out/python-sweep.json.
#
# `bench/python.sh --load [REF] [ARGS]`: document loads only (from_path, from_bytes, from_dict),
# before and after: the wheel of commit REF (default HEAD, i.e. without uncommitted changes;
# built from `git archive` in bench/out/python-load-base) is measured, then the working tree's,
# and the table shows both and their ratio; writes bench/out/python-load{-before,}.json.
#
# gen-docs builds with the `profiling` profile as in the other benches; the wheel with the
# bindings' own release profile.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
gen_docs=(cargo run --quiet --profile profiling --locked -p flagpole-bench --bin gen-docs --)
wheels=bindings/python/target/wheels
# Builds the wheel of the bindings at $1 (a bindings/python directory) and installs it.
install_wheel() {
  rm -f "$wheels"/*.whl
  CARGO_TARGET_DIR="$PWD/bindings/python/target" .venv/bin/maturin build --quiet --release \
    --locked -m "$1/Cargo.toml" --out "$wheels"
  .venv/bin/python -m pip install --quiet --force-reinstall --no-deps "$wheels"/flagpole_python-*.whl
}
if [ "${1:-}" = "--load" ]; then
  shift
  ref=HEAD
  if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
    ref=$1
    shift
  fi
  docs=bench/out/docs
  "${gen_docs[@]}" --out "$docs" >/dev/null
  base=bench/out/python-load-base
  rm -rf "$base"
  mkdir -p "$base"
  git archive "$ref" | tar -x -C "$base"
  install_wheel "$base/bindings/python"
  echo "before ($ref):" >&2
  .venv/bin/python bench/python/bench.py "$docs" --load --json-out bench/out/python-load-before.json "$@" >&2
  install_wheel bindings/python
  .venv/bin/python bench/python/bench.py "$docs" --load \
    --load-baseline bench/out/python-load-before.json --json-out bench/out/python-load.json "$@"
  exit 0
fi
if [ "${1:-}" = "--sweep" ]; then
  docs=bench/out/sweep-docs
  json=bench/out/python-sweep.json
  shapes=(f5s2:5:2 f20s5:20:5 f50s15:50:15 f75s20:75:20 f100s25:100:25 f125s30:125:30
          f150s40:150:40 f200s50:200:50 f300s50:300:50 f400s50:400:50)
  args=()
  names=()
  for shape in "${shapes[@]}"; do
    args+=(--shape "$shape")
    names+=("${shape%%:*}")
  done
  "${gen_docs[@]}" --out "$docs" "${args[@]}" >/dev/null
  set -- --names "$(IFS=,; echo "${names[*]}")" "$@"
else
  docs=bench/out/docs
  json=bench/out/python.json
  "${gen_docs[@]}" --out "$docs" >/dev/null
fi
install_wheel bindings/python
.venv/bin/python bench/python/bench.py "$docs" --json-out "$json" "$@"
