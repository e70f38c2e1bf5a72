#!/usr/bin/env bash
# Fleet benchmark: replicas sharing one Redis (`flagpole.fleet`) next to the same replicas each
# polling for itself, 100 environments on a scripted upstream: upstream requests per poll
# interval for 1, 3 and 5 replicas, the time for an upstream change to reach every replica's
# change stream (p50, p99), `/api/v1/flags/` RPS with and without the fleet (wrk), and a cold
# start from Redis with the upstream unreachable. Prints Markdown tables with ratios; writes
# bench/out/fleet.json. See bench/RESULTS.md ("Fleet"). The driver: bench/fleet/bench.py.
#
#   bench/fleet.sh                 about 3 minutes
#   bench/fleet.sh --changes 10 --window 5 --rps-runs 1
#
# Needs redis-server and redis-cli (Debian: apt-get install redis-server) and wrk (installed from
# Debian if missing, as bench/http.sh does). Everything is on 127.0.0.1; every wait is bounded.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

for tool in redis-server redis-cli; do
  command -v "$tool" >/dev/null 2>&1 || { echo "$tool is needed (apt-get install redis-server)" >&2; exit 1; }
done
# The load generator and the limits it needs (bench/lib/load.sh).
. bench/lib/load.sh
install_wrk
# Five replicas with 100 environments each, and 60 change streams.
lift_open_files

cargo build --release --quiet --locked -p flagpole --bin flagpole
# FLAGPOLE_BIN: another build to measure the same way.
exec python3 bench/fleet/bench.py --bin "${FLAGPOLE_BIN:-target/release/flagpole}" "$@"
