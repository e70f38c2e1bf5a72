#!/usr/bin/env bash
# What flag analytics and shadow verification cost on the request path, side by side in one
# run: requests a second (wrk, one connection pool, Flagpole pinned to CPU 0 and wrk to CPU 1)
# for `GET /api/v1/flags/` (the cheapest request, the baseline), `POST /api/v1/analytics/flags/`
# (an SDK's analytics post: validated, added to sharded counts), and one identity
# (`GET /api/v1/identities/`) with shadow verification off, at `sample_rate` 0.01, and at 1.0
# (every request sampled; `max_per_second` 10 admits a few, the rest are dropped as over the rate).
# The shadow target is a closed port, so each admitted comparison fails fast: what is measured is
# the request path's share (sampling, the rate limit, queueing), not upstream's latency.
# Prints a Markdown table; see bench/RESULTS.md ("Flag analytics and shadow verification").
#
#   bench/edge_features.sh [--duration SECONDS] [--connections N]
#
# FLAGPOLE_BIN selects the binary (default: built here with `--profile profiling`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DURATION=10
CONNS=32
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) DURATION="$2"; shift 2 ;;
    --connections) CONNS="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
command -v wrk >/dev/null 2>&1 || { echo "wrk is needed (apt-get install wrk)" >&2; exit 1; }
command -v taskset >/dev/null 2>&1 || { echo "taskset (util-linux) is needed" >&2; exit 1; }
if [ -z "${FLAGPOLE_BIN:-}" ]; then
  cargo build --profile profiling --quiet -p flagpole --bin flagpole
  FLAGPOLE_BIN=target/profiling/flagpole
fi

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# start NAME PORT SHADOW_JSON: the bundled example, offline, with this shadow section.
start() {
  local name="$1" port="$2" shadow="$3"
  cat >"$WORK/$name.json" <<JSON
{"flagpole": {"documents": ["examples/environment.json"],
              "shadow": $shadow},
 "environment_key_pairs": [{"server_side_key": "ser.example_server_key", "client_side_key": "example_client_key"}],
 "api_url": "http://127.0.0.1:9/api/v1", "logging": {"log_level": "ERROR"}}
JSON
  taskset -c 0 "$FLAGPOLE_BIN" serve --config "$WORK/$name.json" --port "$port" --host 127.0.0.1 \
    >"$WORK/$name.log" 2>&1 &
  PIDS+=("$!")
  for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$port/proxy/health/readiness" >/dev/null 2>&1 && return
    sleep 0.1
  done
  echo "flagpole $name did not start:" >&2; cat "$WORK/$name.log" >&2; exit 1
}

start off 18301 '{"sample_rate": 0}'
start low 18302 '{"sample_rate": 0.01, "api_url": "http://127.0.0.1:9/api/v1"}'
start all 18303 '{"sample_rate": 1, "max_per_second": 10, "api_url": "http://127.0.0.1:9/api/v1"}'

# rps PORT PATH [LUA]: requests a second over DURATION seconds (after a 2 s warm-up).
rps() {
  local port="$1" path="$2" lua="${3:-}"
  local args=(-t1 "-c$CONNS" -H "X-Environment-Key: example_client_key")
  [ -n "$lua" ] && args+=(-s "$lua")
  taskset -c 1 wrk "${args[@]}" -d2s "http://127.0.0.1:$port$path" >/dev/null
  taskset -c 1 wrk "${args[@]}" "-d${DURATION}s" "http://127.0.0.1:$port$path" \
    | awk '/^Requests\/sec/ {print int($2)}'
}

IDENTITY="/api/v1/identities/?identifier=alice"
base=$(rps 18301 /api/v1/flags/)
analytics=$(rps 18301 /api/v1/analytics/flags/ bench/http/lua/post_analytics.lua)
id_off=$(rps 18301 "$IDENTITY")
id_low=$(rps 18302 "$IDENTITY")
id_all=$(rps 18303 "$IDENTITY")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

echo "| request | requests/s | vs /flags | vs identity, shadow off |"
echo "|---|---:|---:|---:|"
echo "| GET /api/v1/flags/ | $base | 1.00 | |"
echo "| POST /api/v1/analytics/flags/ (5 features) | $analytics | $(ratio "$analytics" "$base") | |"
echo "| GET identity, shadow off | $id_off | $(ratio "$id_off" "$base") | 1.00 |"
echo "| GET identity, shadow sample_rate 0.01 | $id_low | $(ratio "$id_low" "$base") | $(ratio "$id_low" "$id_off") |"
echo "| GET identity, shadow sample_rate 1, max_per_second 10 | $id_all | $(ratio "$id_all" "$base") | $(ratio "$id_all" "$id_off") |"
received=$(curl -fsS "http://127.0.0.1:18301/proxy/status?format=json" \
  | python3 -c 'import json,sys; print(sum(a["received"] for a in json.load(sys.stdin)["analytics"]))')
echo
echo "Evaluations counted by the analytics run: $received (wrk ${DURATION}s + 2 s warm-up, $CONNS connections)."
