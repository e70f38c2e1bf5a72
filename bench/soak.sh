#!/usr/bin/env bash
# Soak test (by hand, not in CI): one Flagpole serving a seeded document as a local file, first
# a short wrk run to measure the peak RPS of a mixed load (/flags, identities GET and POST, OFREP
# bulk), then that mix at 80 % of the peak for N minutes from an open-loop driver, the document
# rewritten every 10 s; every 10 s a sample of the server's RSS, errors and p99 latency. Prints a
# Markdown table and a summary (RSS first/last/max and drift, errors, p99 first vs last); writes
# bench/out/soak.json. All traffic goes to 127.0.0.1; the run is bounded in time.
#
#   bench/soak.sh                 30 minutes
#   bench/soak.sh --minutes 2     a quick check
#
# Other options (passed to the driver, bench/http/src/bin/soak/main.rs): --fraction F,
# --rps R (skip the peak run), --conns N, --threads N, --peak-seconds S, --interval S,
# --rewrite S, --doc tiny|small|medium, --out FILE.
# Builds with the `profiling` profile (release + debug info, target/profiling/) for perf.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

minutes=30
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  [ "${args[$i]}" = "--minutes" ] && minutes="${args[$((i + 1))]:-30}"
done

# The peak is measured with wrk 4.1.0 from Debian (installed if missing; bench/lib/load.sh).
. bench/lib/load.sh
install_wrk
lift_open_files

cargo build --profile profiling --quiet -p flagpole --bin flagpole -p flagpole-bench --bin gen-docs \
  -p flagpole-http-bench --bin soak
target/profiling/gen-docs --out bench/out/docs >/dev/null
# Bounded: the soak itself plus 5 minutes for start-up, the peak run and the report. Should the
# driver be stopped, the Flagpole it started is stopped too (by the id it wrote).
work=bench/out/soak
for ((i = 0; i < ${#args[@]}; i++)); do
  [ "${args[$i]}" = "--work" ] && work="${args[$((i + 1))]}"
done
stop_server() {
  local pid
  pid=$(cat "$work/flagpole.pid" 2>/dev/null) || return 0
  if grep -q flagpole "/proc/$pid/cmdline" 2>/dev/null; then kill "$pid" 2>/dev/null || true; fi
  rm -f "$work/flagpole.pid"
}
trap stop_server EXIT
limit=$(awk -v m="$minutes" 'BEGIN { printf "%d", m * 60 + 300 }')
timeout --kill-after=10 "$limit" target/profiling/soak "$@"
