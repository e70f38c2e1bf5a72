#!/usr/bin/env bash
# Unleash benchmark: Flagpole serving Unleash toggles offline (`serve --unleash-features`) beside
# Unleash Edge in its offline mode (`unleash-edge offline --bootstrap-file`) and the open-source
# Unleash Proxy (@unleash/proxy, Node), all three on the same toggles and tokens, on loopback,
# driven by wrk. Measures, per server: `/api/frontend` (the Proxy's `/proxy`) with a few hundred
# distinct users, each with its own context (bench/unleash/load.lua), and `/api/client/features`
# (the Proxy's `/proxy/client/features`, its experimental server-side SDK endpoint) plain and
# with `Accept-Encoding: gzip`: requests a second, requests per CPU-second of the server, p50 and
# p99, the server's CPU per request (user + system from /proc, every thread), and resident
# memory. Each server is pinned to the last core, wrk to the others. Before any load, the three
# answers are compared for a sample of users. Prints a Markdown table; writes
# bench/out/unleash/results.jsonl (every run). See bench/RESULTS.md ("Unleash").
#
#   bench/unleash.sh [--duration S] [--runs N] [--conns N] [--users N] [--toggles N]
#   (defaults: 10 s a run, 3 runs (the median by RPS is shown), 32 connections, 500 users,
#   200 toggles with 12 segments: bench/unleash/gen_features.py)
#
# The contenders:
# - Flagpole: FLAGPOLE_BIN, else target/release/flagpole (built when missing).
# - Unleash Edge: UNLEASH_EDGE_BIN, else .tools/bin/unleash-edge, installed when missing with
#   `cargo install unleash-edge --locked --version $UNLEASH_EDGE_VERSION` (default below: the newest
#   crates.io served when the table in bench/RESULTS.md was taken; a long build).
# - Unleash Proxy: bench/unleash/proxy (package.json and its lock; `npm ci` here), started by
#   bench/unleash/proxy/start.js on 127.0.0.1. It has no offline mode: its upstream is a second
#   Flagpole (on the load generator's cores, idle once the Proxy has fetched) serving the same
#   toggles at `/api/client/features` with the client token; the Proxy is measured only once it
#   answers `/proxy` (it answers 503 until its first fetch). Its fetch and metrics intervals are
#   set past the end of the run, so no background traffic falls inside a measurement.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The command line, the output directory and the cores (bench/lib/setup.sh).
. bench/lib/setup.sh
DURATION=10; RUNS=3; CONNS=32; USERS=500; TOGGLES=200
bench_options "duration runs conns users toggles" "$@"

. bench/lib/load.sh
ensure_wrk
raise_open_files 1024 "wrk may fail to connect"
command -v node >/dev/null && command -v npm >/dev/null || { echo "node and npm are needed (the Unleash Proxy)" >&2; exit 1; }

bench_setup unleash

BIN="${FLAGPOLE_BIN:-target/release/flagpole}"
[ -x "$BIN" ] || cargo build --release --quiet -p flagpole
UNLEASH_EDGE_VERSION="${UNLEASH_EDGE_VERSION:-20.1.0}"
EDGE="${UNLEASH_EDGE_BIN:-.tools/bin/unleash-edge}"
if [ ! -x "$EDGE" ]; then
  echo "installing unleash-edge $UNLEASH_EDGE_VERSION into .tools (cargo install; a long build)…" >&2
  cargo install unleash-edge --locked --version "$UNLEASH_EDGE_VERSION" --root .tools
  EDGE=.tools/bin/unleash-edge
fi
(cd bench/unleash/proxy && npm ci --silent --no-audit --no-fund --ignore-scripts)
PROXY_VERSION=$(node -p 'require("./bench/unleash/proxy/node_modules/@unleash/proxy/package.json").version')
# Edge has no --version: the version cargo recorded when it installed it here.
EDGE_VERSION=$(sed -n 's/^"unleash-edge \([^ ]*\) .*/\1/p' .tools/.crates.toml 2>/dev/null || true)
[ "$EDGE" = .tools/bin/unleash-edge ] && [ -n "$EDGE_VERSION" ] || EDGE_VERSION="($EDGE)"

FEATURES="$PWD/$OUT/features.json"
python3 bench/unleash/gen_features.py "$FEATURES" "$TOGGLES"
CLIENT_TOKEN='*:development.bench-client-secret'
FRONTEND_TOKEN='*:development.bench-frontend-secret'

# wait_ok URL TOKEN NAME PID: until URL answers 200 with that Authorization (at most 60 s).
wait_ok() {
  local start; start=$(date +%s.%N)
  for _ in $(seq 600); do
    kill -0 "$4" 2>/dev/null || { echo "$3 exited; its log:" >&2; cat "$OUT/$3.log" >&2; exit 1; }
    if [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: $2" "$1")" = 200 ]; then
      python3 -c "import time; print(f'{time.time() - $start:.2f}')"; return 0
    fi
    sleep 0.1
  done
  echo "$3 never answered $1; its log:" >&2; cat "$OUT/$3.log" >&2; exit 1
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }
TICK_US=$(( 1000000 / $(getconf CLK_TCK) ))

PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
declare -A PID PORT PATH_FRONTEND PATH_CLIENT READY

# Flagpole, measured.
PORT[flagpole]=$(free_port)
RUST_LOG=warn taskset -c "$SERVER_CPU" "$BIN" serve --host 127.0.0.1 --port "${PORT[flagpole]}" \
  --unleash-features "$FEATURES" --unleash-client-token "$CLIENT_TOKEN" \
  --unleash-frontend-token "$FRONTEND_TOKEN" >"$OUT/flagpole.log" 2>&1 &
PID[flagpole]=$!; PIDS+=("$!")
PATH_FRONTEND[flagpole]=/api/frontend; PATH_CLIENT[flagpole]=/api/client/features
READY[flagpole]=$(wait_ok "http://127.0.0.1:${PORT[flagpole]}/api/client/features" "$CLIENT_TOKEN" flagpole "${PID[flagpole]}")

# Unleash Edge, offline.
PORT[edge]=$(free_port)
RUST_LOG=warn taskset -c "$SERVER_CPU" "$EDGE" --port "${PORT[edge]}" --interface 127.0.0.1 offline \
  --bootstrap-file "$FEATURES" --client-tokens "$CLIENT_TOKEN" --frontend-tokens "$FRONTEND_TOKEN" \
  >"$OUT/edge.log" 2>&1 &
PID[edge]=$!; PIDS+=("$!")
PATH_FRONTEND[edge]=/api/frontend; PATH_CLIENT[edge]=/api/client/features
READY[edge]=$(wait_ok "http://127.0.0.1:${PORT[edge]}/api/client/features" "$CLIENT_TOKEN" edge "${PID[edge]}")

# The Proxy's upstream (not measured), then the Proxy.
UPSTREAM=$(free_port)
RUST_LOG=warn taskset -c "$LOAD_CPU" "$BIN" serve --host 127.0.0.1 --port "$UPSTREAM" \
  --unleash-features "$FEATURES" --unleash-client-token "$CLIENT_TOKEN" \
  --unleash-frontend-token "$FRONTEND_TOKEN" >"$OUT/upstream.log" 2>&1 &
UPSTREAM_PID=$!; PIDS+=("$!")
wait_ok "http://127.0.0.1:$UPSTREAM/api/client/features" "$CLIENT_TOKEN" upstream "$UPSTREAM_PID" >/dev/null
PORT[proxy]=$(free_port)
(cd bench/unleash/proxy && exec env NODE_ENV=production PORT="${PORT[proxy]}" \
  UNLEASH_URL="http://127.0.0.1:$UPSTREAM/api" UNLEASH_API_TOKEN="$CLIENT_TOKEN" \
  UNLEASH_PROXY_CLIENT_KEYS="$FRONTEND_TOKEN" EXP_SERVER_SIDE_SDK_CONFIG_TOKENS="$CLIENT_TOKEN" \
  UNLEASH_APP_NAME=bench-proxy UNLEASH_FETCH_INTERVAL=3600000 UNLEASH_METRICS_INTERVAL=3600000 \
  LOG_LEVEL=warn DO_NOT_TRACK=1 SCARF_ANALYTICS=false \
  taskset -c "$SERVER_CPU" node start.js) >"$OUT/proxy.log" 2>&1 &
PID[proxy]=$!; PIDS+=("$!")
PATH_FRONTEND[proxy]=/proxy; PATH_CLIENT[proxy]=/proxy/client/features
READY[proxy]=$(wait_ok "http://127.0.0.1:${PORT[proxy]}/proxy" "$FRONTEND_TOKEN" proxy "${PID[proxy]}")
SERVERS="flagpole edge proxy"

# The same answers: enabled toggles and variants for a sample of users, and the toggle names
# of /api/client/features.
python3 bench/unleash/compare.py "$USERS" "$CLIENT_TOKEN" "$FRONTEND_TOKEN" \
  "flagpole=http://127.0.0.1:${PORT[flagpole]}${PATH_FRONTEND[flagpole]}|http://127.0.0.1:${PORT[flagpole]}${PATH_CLIENT[flagpole]}" \
  "edge=http://127.0.0.1:${PORT[edge]}${PATH_FRONTEND[edge]}|http://127.0.0.1:${PORT[edge]}${PATH_CLIENT[edge]}" \
  "proxy=http://127.0.0.1:${PORT[proxy]}${PATH_FRONTEND[proxy]}|http://127.0.0.1:${PORT[proxy]}${PATH_CLIENT[proxy]}" \
  | tee "$OUT/compare.txt" >&2

RESULTS="$OUT/results.jsonl"; : > "$RESULTS"
for server in $SERVERS; do
  printf '{"server":"%s","kind":"start","ready_s":%s,"rss_kib":%s}\n' "$server" "${READY[$server]}" \
    "$(rss_kib "${PID[$server]}" VmRSS)" >> "$RESULTS"
done

# one SERVER ENDPOINT SECONDS [record]: a wrk run; with `record`, its figures into $RESULTS.
one() {
  local server=$1 endpoint=$2 seconds=$3 url="http://127.0.0.1:${PORT[$1]}" args headers
  case "$endpoint" in
    frontend) args=(context "${PATH_FRONTEND[$server]}" "$USERS"); headers=(-H "Authorization: $FRONTEND_TOKEN") ;;
    client) args=(plain "${PATH_CLIENT[$server]}"); headers=(-H "Authorization: $CLIENT_TOKEN") ;;
    client_gzip) args=(plain "${PATH_CLIENT[$server]}")
                 headers=(-H "Authorization: $CLIENT_TOKEN" -H "Accept-Encoding: gzip") ;;
  esac
  local before after line
  before=$(cpu_ticks "${PID[$server]}")
  line=$(taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d"${seconds}s" --latency "${headers[@]}" \
    -s bench/unleash/load.lua "$url" -- "${args[@]}" | sed -n 's/^BENCH_WRK //p')
  after=$(cpu_ticks "${PID[$server]}")
  [ "${4:-}" = record ] || return 0
  python3 -c "import json,sys; d=json.loads(sys.argv[1]); d.update(server='$server', endpoint='$endpoint', run=$run, cpu_us=($after - $before) * $TICK_US); print(json.dumps(d))" "$line" >> "$RESULTS"
}

ENDPOINTS="frontend client client_gzip"
for endpoint in $ENDPOINTS; do for server in $SERVERS; do run=0 one "$server" "$endpoint" 2; done; done
for run in $(seq "$RUNS"); do
  for endpoint in $ENDPOINTS; do
    # A different server first each run.
    order=$(echo $SERVERS | tr ' ' '\n' | awk -v r="$run" '{a[NR]=$0} END {for (i = 0; i < NR; i++) print a[(i + r - 1) % NR + 1]}')
    for server in $order; do
      one "$server" "$endpoint" "$DURATION" record
      echo "run $run $endpoint $server: $(tail -1 "$RESULTS" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.0f RPS" % (d["requests"] * 1e6 / d["duration_us"]))')" >&2
    done
  done
done
for server in $SERVERS; do
  printf '{"server":"%s","kind":"end","rss_kib":%s,"hwm_kib":%s}\n' "$server" \
    "$(rss_kib "${PID[$server]}" VmRSS)" "$(rss_kib "${PID[$server]}" VmHWM)" >> "$RESULTS"
done

python3 bench/unleash/table.py "$RESULTS" \
  "Flagpole $("$BIN" --version 2>/dev/null | awk '{print $NF}'), Unleash Edge $EDGE_VERSION, Unleash Proxy $PROXY_VERSION (Node $(node --version)); $TOGGLES toggles, $USERS users, wrk -t1 -c$CONNS, $DURATION s a run, median of $RUNS; servers on CPU $SERVER_CPU, wrk on CPU $LOAD_CPU"
