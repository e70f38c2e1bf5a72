#!/usr/bin/env bash
# The Flagsmith Edge Proxy beside Flagpole: the Python Edge Proxy (Flagsmith/edge-proxy 2.23.0,
# run from its source) and Flagpole on this machine, reading the same config.json, loading the
# same seeded documents from the same local upstream, under the same wrk load: `/flags`,
# `/identities` GET and POST (repeated identities, and identities that never repeat),
# `/environment-document` plain and gzipped. Prints RPS, p99 and server CPU per request side by
# side with ratios, start-up and memory; writes bench/out/peers.json. See bench/RESULTS.md
# ("The Flagsmith Edge Proxy beside Flagpole").
#
# The Edge Proxy's source is not part of this repository: check it out once, anywhere, and
# name it in EDGE_PROXY_SRC:
#
#   git clone https://github.com/Flagsmith/edge-proxy && git -C edge-proxy checkout v2.23.0
#   EDGE_PROXY_SRC=$PWD/edge-proxy bench/peers.sh
#
# Its Python requirements (its requirements.lock, from PyPI) go into a venv of their own,
# bench/out/peers-venv (PEERS_PYTHON: another python3 to make it with). Without EDGE_PROXY_SRC,
# Flagpole alone is measured.
#
#   bench/peers.sh                  the load table (about 5 minutes)
#   bench/peers.sh --rate           then latency at 80 % of each proxy's peak rate: `/flags` and
#                                   `/identities` under a constant-rate open-loop load
#   bench/peers.sh --rate-only      the constant-rate table alone
#
# Other options (passed to the driver, bench/http/src/bin/peers-bench/main.rs): --docs LIST,
# --endpoints LIST, --conc LIST, --runs N, --duration S, --warmup S, --rate-fraction F,
# --rate-seconds S, --rate-docs LIST, --no-pin, --out FILE.
# All traffic goes to 127.0.0.1; every run is bounded in time. Proxies on CPU 1, the load
# generators on CPU 0 (when there are two CPUs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v wrk >/dev/null 2>&1; then
  echo "installing wrk (apt-get)…" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq >/dev/null
  $SUDO apt-get install -y -qq wrk >/dev/null
fi
command -v taskset >/dev/null 2>&1 || { echo "taskset (util-linux) is needed" >&2; exit 1; }
ulimit -n 65536 2>/dev/null || true

args=()
if [ -n "${EDGE_PROXY_SRC:-}" ]; then
  src=$(cd "$EDGE_PROXY_SRC" && pwd)
  [ -f "$src/src/edge_proxy/main.py" ] && [ -f "$src/requirements.lock" ] || {
    echo "EDGE_PROXY_SRC=$EDGE_PROXY_SRC is not a checkout of Flagsmith/edge-proxy" >&2; exit 1; }
  tag=$(git -C "$src" describe --tags 2>/dev/null || echo unknown)
  [ "$tag" = v2.23.0 ] || echo "warning: the Edge Proxy checkout is at $tag; the results in bench/RESULTS.md are of v2.23.0" >&2
  venv=bench/out/peers-venv
  if [ ! -x "$venv/bin/python" ] || ! cmp -s "$src/requirements.lock" "$venv/requirements.lock"; then
    echo "installing the Edge Proxy's requirements into $venv (pip)…" >&2
    rm -rf "$venv"
    "${PEERS_PYTHON:-python3}" -m venv "$venv"
    # The lock's pinned packages; the project itself runs from its source tree.
    grep -v -e '^-e' -e '^#' -e '^ ' "$src/requirements.lock" | grep . >"$venv/requirements.txt"
    "$venv/bin/pip" install --quiet -r "$venv/requirements.txt"
    cp "$src/requirements.lock" "$venv/requirements.lock"
  fi
  args+=(--edge-proxy-src "$src" --python "$PWD/$venv/bin/python")
fi

cargo build --release --quiet --locked -p flagpole --bin flagpole -p flagpole-bench --bin gen-docs \
  -p flagpole-http-bench --bin peers-bench
target/release/gen-docs --out bench/out/docs >/dev/null
pin=()
[ "$(nproc)" -ge 2 ] && [[ " $* " != *" --no-pin "* ]] && pin=(taskset -c 0)
exec "${pin[@]}" target/release/peers-bench "${args[@]}" "$@"
