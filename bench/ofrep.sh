#!/usr/bin/env bash
# OFREP benchmark: (1) revalidation throughput, OFREP bulk with a repeated context and
# If-None-Match (304) vs GET /api/v1/flags/, side by side on one Flagpole, driven by wrk;
# (2) change streams, 10,000 idle GET /ofrep/v1/events connections: the server's memory per
# connection and the time a document change takes to reach all of them. Prints Markdown tables;
# writes bench/out/ofrep.json. See bench/RESULTS.md ("OFREP").
#
#   bench/ofrep.sh                     both parts (about 2 minutes)
#   bench/ofrep.sh --no-rps --conns 2000
#
# Other options (passed to the driver, bench/http/src/bin/ofrep-bench/main.rs): --rounds N,
# --sse-doc NAME, --runs N, --duration S, --warmup S, --conc LIST, --docs LIST, --no-pin,
# --no-sse, --out FILE. All traffic goes to 127.0.0.1; every step is bounded in time.
# Builds with the `profiling` profile (release + debug info, target/profiling/) for perf.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The load generator and the limits it needs (bench/lib/load.sh).
. bench/lib/load.sh
ensure_wrk
# 10,000 streams need 10,000+ descriptors in the client and in the server (separate processes,
# each inherits this limit).
raise_open_files 11000 "10,000 streams will not all open (try --conns)"

cargo build --profile profiling --quiet -p flagpole --bin flagpole -p flagpole-bench --bin gen-docs \
  -p flagpole-http-bench --bin ofrep-bench
target/profiling/gen-docs --out bench/out/docs >/dev/null
# At most 5 minutes (the harness and everything it started get SIGTERM, then SIGKILL).
exec timeout --kill-after=10 300 target/profiling/ofrep-bench "$@"
