#!/usr/bin/env bash
# TLS benchmark: the cost of HTTPS termination. Two Flagpoles on the bundled example environment,
# one plain and one with `server.tls` (a fresh self-signed P-256 certificate), each pinned to the
# same CPU, driven in turn by wrk on the same run: GET /api/v1/flags/ and GET /api/v1/identities/
# (identifiers drawn from a Zipf distribution, bench/http/lua/zipf_identities.lua), on keep-alive
# connections and with a new connection per request (`Connection: close`: a handshake each).
# Prints a Markdown table of RPS and p99 latency per mode, and the TLS/plain ratio.
#
#   bench/tls.sh                      3 runs of 3 s per cell, c=64 (about 3 minutes)
#   bench/tls.sh --runs 1 --duration 2 --conc 10
#
# All traffic goes to 127.0.0.1; every run is bounded in time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

RUNS=3 DURATION=3 CONC=64 SERVER_CPU=0 CLIENT_CPU=1
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --conc) CONC="$2"; shift 2 ;;
    --server-cpu) SERVER_CPU="$2"; shift 2 ;;
    --client-cpu) CLIENT_CPU="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
for tool in wrk openssl taskset curl; do
  command -v "$tool" >/dev/null 2>&1 || { echo "$tool is needed" >&2; exit 1; }
done
ulimit -n 65536 2>/dev/null || true

cargo build --release --quiet -p flagpole
BIN=target/release/flagpole
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
  -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
  -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
printf '{"server": {"tls": {"cert_path": "%s", "key_path": "%s"}}}\n' \
  "$WORK/cert.pem" "$WORK/key.pem" >"$WORK/tls.json"
echo '{}' >"$WORK/plain.json"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start() { # name config → port
  local port; port=$(free_port)
  taskset -c "$SERVER_CPU" "$BIN" serve --example --host 127.0.0.1 --port "$port" \
    --config "$WORK/$2.json" >"$WORK/$1.log" 2>&1 &
  PIDS+=($!)
  echo "$port"
}
PLAIN_PORT=$(start plain plain)
TLS_PORT=$(start tls tls)
for url in "http://127.0.0.1:$PLAIN_PORT" "https://127.0.0.1:$TLS_PORT"; do
  for _ in $(seq 100); do
    curl -sfk "$url/proxy/health/readiness" >/dev/null && break
    sleep 0.1
  done
  curl -sfk "$url/proxy/health/readiness" >/dev/null || { echo "no server at $url" >&2; cat "$WORK"/*.log >&2; exit 1; }
done

KEY="X-Environment-Key: example_client_key"
# One wrk run: prints "RPS P99_MS" (p99 from wrk --latency, in ms).
run() { # url endpoint connection
  local extra=() target="$1/api/v1/flags/"
  if [ "$2" = identities ]; then
    extra=(-s bench/http/lua/zipf_identities.lua)
    target="$1/"
  fi
  [ "$3" = close ] && extra=(-H "Connection: close" "${extra[@]}")
  local args=()
  [ "$2" = identities ] && args=(-- get)
  taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONC" -d"${DURATION}s" --latency -H "$KEY" "${extra[@]}" \
    "$target" "${args[@]}" 2>&1 | awk '
      /Requests\/sec/ { rps = $2 }
      /^ +99%/ { v = $2; if (v ~ /us$/) { sub(/us/, "", v); v /= 1000 }
                 else if (v ~ /ms$/) { sub(/ms/, "", v) }
                 else if (v ~ /s$/) { sub(/s/, "", v); v *= 1000 }
                 p99 = v }
      /Non-2xx|Socket errors/ { errors = errors $0 " " }
      END { printf "%d %.2f %s\n", rps, p99, (errors == "" ? "" : "ERRORS:" errors) }'
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

echo "TLS vs plain: Flagpole on CPU $SERVER_CPU, wrk (1 thread, c=$CONC) on CPU $CLIENT_CPU," \
  "median of $RUNS runs of ${DURATION}s; $(nproc) CPUs, $(uname -m)"
echo
echo "| endpoint | connections | plain RPS | TLS RPS | TLS / plain | plain p99 ms | TLS p99 ms |"
echo "|---|---|---:|---:|---:|---:|---:|"
for endpoint in flags identities; do
  for connection in keep-alive close; do
    : >"$WORK/plain.rps"; : >"$WORK/tls.rps"; : >"$WORK/plain.p99"; : >"$WORK/tls.p99"
    for _ in $(seq "$RUNS"); do
      # Alternating, so a disturbance on the machine falls on both sides alike.
      for side in plain tls; do
        if [ "$side" = plain ]; then url="http://127.0.0.1:$PLAIN_PORT"; else url="https://127.0.0.1:$TLS_PORT"; fi
        read -r rps p99 errors < <(run "$url" "$endpoint" "$connection")
        [ -n "${errors:-}" ] && echo "warning: $side $endpoint $connection: $errors" >&2
        echo "$rps" >>"$WORK/$side.rps"
        echo "$p99" >>"$WORK/$side.p99"
      done
    done
    p=$(median <"$WORK/plain.rps"); t=$(median <"$WORK/tls.rps")
    pl=$(median <"$WORK/plain.p99"); tl=$(median <"$WORK/tls.p99")
    ratio=$(awk -v t="$t" -v p="$p" 'BEGIN { printf "%.2f", (p > 0 ? t / p : 0) }')
    echo "| $endpoint | $connection | $p | $t | $ratio | $pl | $tl |"
  done
done
