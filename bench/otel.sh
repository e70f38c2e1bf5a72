#!/usr/bin/env bash
# OpenTelemetry's cost per request: Flagpole's CPU time per request (user + system, from
# /proc/<pid>/stat) for GET /api/v1/flags/ and GET /api/v1/identities/ (a new identifier each
# request, so no identity-cache hit) with telemetry off (nothing configured), with traces
# exported at 100 % (the default sampler, every request a root span) and at 1 %
# (traceidratio 0.01), into a real Jaeger (.tools/bin/jaeger, built by scripts/test.sh). Prints a
# Markdown table with the ratios to "off"; results in bench/RESULTS.md ("OpenTelemetry").
#
#   bench/otel.sh               3 rounds of 5 s per cell, the lowest CPU per request kept
#   bench/otel.sh --quick       1 round of 2 s per cell
#   bench/otel.sh --baseline B  also the binary B (built before OpenTelemetry) with nothing
#                               configured: "off" should cost what it did
#   bench/otel.sh --against B   also the binary B (an earlier build) tracing at 100 %, measured
#                               in the same rounds: what a change to the span path saved
#
# All traffic goes to 127.0.0.1 (wrk 4.1.0, 2 threads, 32 connections); every run is bounded.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ROUNDS=3 DURATION=5 BASELINE= AGAINST=
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) ROUNDS=1 DURATION=2 ;;
    --baseline) BASELINE=$2; shift ;;
    --against) AGAINST=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
MODES="off on100 on1"
[ -n "$BASELINE" ] && MODES="base $MODES"
[ -n "$AGAINST" ] && MODES="$MODES against100"
command -v wrk >/dev/null 2>&1 || { echo "wrk is needed (apt-get install wrk)" >&2; exit 1; }
JAEGER=${FLAGPOLE_JAEGER:-.tools/bin/jaeger}
[ -x "$JAEGER" ] || { echo "no Jaeger at $JAEGER: scripts/test.sh builds it" >&2; exit 1; }
# FLAGPOLE_BIN: a binary already built (else the release build here).
BIN=${FLAGPOLE_BIN:-target/release/flagpole}
[ -n "${FLAGPOLE_BIN:-}" ] || cargo build --release --quiet -p flagpole
OUT=bench/out/otel
mkdir -p "$OUT"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 1 300); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.1; done; echo "no answer from $1" >&2; return 1; }

OTLP=$(free_port) QUERY=$(free_port) QGRPC=$(free_port) HEALTH=$(free_port) HTTP4318=$(free_port)
cat > "$OUT/jaeger.yaml" <<EOF
service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    traces:
      level: none
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: "127.0.0.1:$HEALTH"
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: "127.0.0.1:$QUERY"
    grpc:
      endpoint: "127.0.0.1:$QGRPC"
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 20000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: "127.0.0.1:$OTLP"
      http:
        endpoint: "127.0.0.1:$HTTP4318"
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
EOF
OTEL_SDK_DISABLED=true "$JAEGER" --config "file:$OUT/jaeger.yaml" >"$OUT/jaeger.log" 2>&1 &
JAEGER_PID=$!
FLAGPOLE_PID=
cleanup() {
  [ -n "$FLAGPOLE_PID" ] && kill "$FLAGPOLE_PID" 2>/dev/null || true
  kill "$JAEGER_PID" 2>/dev/null || true
}
trap cleanup EXIT
wait_http "http://127.0.0.1:$HEALTH/status"

cat > "$OUT/identities.lua" <<'EOF'
request = function()
  return wrk.format("GET", "/api/v1/identities/?identifier=user-" .. math.random(1, 1000000000))
end
EOF

# cpu_ticks PID: user + system time of the process, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK_US=$((1000000 / $(getconf CLK_TCK)))

# measure MODE ENDPOINT → µs of CPU per request (one round).
measure() {
  local mode=$1 endpoint=$2 port env=() bin=$BIN
  port=$(free_port)
  case "$mode" in
    base) bin=$BASELINE ;;
    off) ;;
    on100) env=(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$OTLP" OTEL_EXPORTER_OTLP_PROTOCOL=grpc) ;;
    against100) bin=$AGAINST
                env=(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$OTLP" OTEL_EXPORTER_OTLP_PROTOCOL=grpc) ;;
    on1) env=(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$OTLP" OTEL_EXPORTER_OTLP_PROTOCOL=grpc
              OTEL_TRACES_SAMPLER=traceidratio OTEL_TRACES_SAMPLER_ARG=0.01) ;;
  esac
  env "${env[@]}" RUST_LOG=warn "$bin" serve --example --host 127.0.0.1 --port "$port" \
    >"$OUT/flagpole-$mode.log" 2>&1 &
  FLAGPOLE_PID=$!
  wait_http "http://127.0.0.1:$port/proxy/health/readiness"
  local url=http://127.0.0.1:$port/api/v1/flags/ script=()
  if [ "$endpoint" = identities ]; then script=(-s "$OUT/identities.lua"); url=http://127.0.0.1:$port; fi
  # Warm-up, then the measured run.
  wrk -t2 -c32 -d1s -H 'X-Environment-Key: example_client_key' "${script[@]}" "$url" >/dev/null
  local before after requests
  before=$(cpu_ticks "$FLAGPOLE_PID")
  requests=$(wrk -t2 -c32 -d"${DURATION}s" -H 'X-Environment-Key: example_client_key' "${script[@]}" "$url" |
    awk '/requests in/ {print $1}')
  after=$(cpu_ticks "$FLAGPOLE_PID")
  kill "$FLAGPOLE_PID"; wait "$FLAGPOLE_PID" 2>/dev/null || true; FLAGPOLE_PID=
  python3 -c "print(f'{($after - $before) * $TICK_US / $requests:.2f} {$requests / $DURATION:.0f}')"
}

declare -A best rps
for round in $(seq 1 "$ROUNDS"); do
  for endpoint in flags identities; do
    for mode in $MODES; do
      read -r us r < <(measure "$mode" "$endpoint")
      key="$endpoint/$mode"
      if [ -z "${best[$key]:-}" ] || python3 -c "import sys; sys.exit(0 if $us < ${best[$key]} else 1)"; then
        best[$key]=$us rps[$key]=$r
      fi
    done
  done
done

echo
if [ -n "$BASELINE" ]; then
  for endpoint in flags identities; do
    python3 -c "print(f'/api/v1/$endpoint/: before OpenTelemetry ${best[$endpoint/base]} µs, off ${best[$endpoint/off]} µs: {${best[$endpoint/off]}/${best[$endpoint/base]}:.2f}×')"
  done
fi
if [ -n "$AGAINST" ]; then
  for endpoint in flags identities; do
    python3 -c "off=${best[$endpoint/off]}; a=${best[$endpoint/against100]}; b=${best[$endpoint/on100]}; print(f'/api/v1/$endpoint/ traced at 100 %: earlier build {a} µs (+{a - off:.2f} over off), this build {b} µs (+{b - off:.2f}): {b/a:.2f}×')"
  done
fi
echo "| endpoint | telemetry off: µs CPU/request | traces 100 %: µs | ratio | traces 1 %: µs | ratio |"
echo "|---|---:|---:|---:|---:|---:|"
for endpoint in flags identities; do
  off=${best[$endpoint/off]} on100=${best[$endpoint/on100]} on1=${best[$endpoint/on1]}
  python3 -c "print(f'| /api/v1/$endpoint/ | $off | $on100 | {$on100/$off:.2f}× | $on1 | {$on1/$off:.2f}× |')"
done
echo
echo "(wrk -t2 -c32, ${DURATION} s per run, lowest of $ROUNDS rounds; requests/s at that run: \
flags ${rps[flags/off]} / ${rps[flags/on100]} / ${rps[flags/on1]}, \
identities ${rps[identities/off]} / ${rps[identities/on100]} / ${rps[identities/on1]})"
