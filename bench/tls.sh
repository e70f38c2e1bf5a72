#!/usr/bin/env bash
# TLS benchmark: the cost of HTTPS termination. Two Flagpoles on the bundled example environment,
# one plain and one with `server.tls` (a fresh self-signed P-256 certificate), each pinned to the
# same CPU, driven in turn by wrk on the same run: GET /api/v1/flags/ and GET /api/v1/identities/
# (identifiers drawn from a Zipf distribution, bench/http/lua/zipf_identities.lua), on keep-alive
# connections and with a new connection per request (`Connection: close`: a handshake each).
# Prints a Markdown table per mode: RPS, the server's CPU time per request (steadier than RPS on
# a busy machine) and p99 latency, each with the TLS/plain ratio.
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
declare -A PORT PID
for side in plain tls; do
  PORT[$side]=$(free_port)
  taskset -c "$SERVER_CPU" "$BIN" serve --example --host 127.0.0.1 --port "${PORT[$side]}" \
    --config "$WORK/$side.json" >"$WORK/$side.log" 2>&1 &
  PID[$side]=$!
  PIDS+=("$!")
done
url_of() { if [ "$1" = plain ]; then echo "http://127.0.0.1:${PORT[plain]}"; else echo "https://127.0.0.1:${PORT[tls]}"; fi; }
for side in plain tls; do
  url=$(url_of "$side")
  for _ in $(seq 100); do
    curl -sfk "$url/proxy/health/readiness" >/dev/null && break
    sleep 0.1
  done
  curl -sfk "$url/proxy/health/readiness" >/dev/null || { echo "no server at $url" >&2; cat "$WORK"/*.log >&2; exit 1; }
done
# CPU time a process has used, in clock ticks (user + system).
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TICK_US=$((1000000 / $(getconf CLK_TCK)))

KEY="X-Environment-Key: example_client_key"
# One wrk run: prints "RPS P99_MS REQUESTS" (p99 from wrk --latency, in ms).
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
      / requests in / { requests = $1 }
      /^ +99%/ { v = $2; if (v ~ /us$/) { sub(/us/, "", v); v /= 1000 }
                 else if (v ~ /ms$/) { sub(/ms/, "", v) }
                 else if (v ~ /s$/) { sub(/s/, "", v); v *= 1000 }
                 p99 = v }
      /Non-2xx|Socket errors/ { errors = errors $0 " " }
      END { printf "%d %.2f %d %s\n", rps, p99, requests, (errors == "" ? "" : "ERRORS:" errors) }'
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

echo "TLS vs plain: Flagpole on CPU $SERVER_CPU, wrk (1 thread, c=$CONC) on CPU $CLIENT_CPU," \
  "median of $RUNS runs of ${DURATION}s; $(nproc) CPUs, $(uname -m)"
echo "server CPU: the serving process's CPU time (user + system) per request answered"
echo
echo "| endpoint | connections | plain RPS | TLS RPS | TLS / plain | plain CPU µs/req | TLS CPU µs/req | TLS / plain | plain p99 ms | TLS p99 ms |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for endpoint in flags identities; do
  for connection in keep-alive close; do
    for side in plain tls; do : >"$WORK/$side.rps"; : >"$WORK/$side.p99"; : >"$WORK/$side.cpu"; done
    for _ in $(seq "$RUNS"); do
      # Alternating, so a disturbance on the machine falls on both sides alike.
      for side in plain tls; do
        before=$(ticks "${PID[$side]}")
        read -r rps p99 requests errors < <(run "$(url_of "$side")" "$endpoint" "$connection")
        after=$(ticks "${PID[$side]}")
        [ -n "${errors:-}" ] && echo "warning: $side $endpoint $connection: $errors" >&2
        echo "$rps" >>"$WORK/$side.rps"
        echo "$p99" >>"$WORK/$side.p99"
        awk -v t=$((after - before)) -v us="$TICK_US" -v n="$requests" \
          'BEGIN { printf "%.1f\n", (n > 0 ? t * us / n : 0) }' >>"$WORK/$side.cpu"
      done
    done
    p=$(median <"$WORK/plain.rps"); t=$(median <"$WORK/tls.rps")
    pc=$(median <"$WORK/plain.cpu"); tc=$(median <"$WORK/tls.cpu")
    pl=$(median <"$WORK/plain.p99"); tl=$(median <"$WORK/tls.p99")
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
    echo "| $endpoint | $connection | $p | $t | $(ratio "$t" "$p") | $pc | $tc | $(ratio "$tc" "$pc") | $pl | $tl |"
  done
done
