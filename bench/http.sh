#!/usr/bin/env bash
# HTTP benchmark: Flagpole vs the physical limit (a minimal hyper server returning the very same
# bytes per endpoint, no evaluation), side by side on loopback, driven by wrk. Prints Markdown
# tables; writes bench/out/http.json. See bench/RESULTS.md ("HTTP: proxy vs the physical limit").
#
#   bench/http.sh            the full matrix: 3 documents x 6 endpoints x c=10,64,200,500,
#                            median of 3 runs of 2 s per server (about 15 minutes)
#   bench/http.sh --quick    1 run of 1 s per cell (about 4 minutes)
#   bench/http.sh --docs small --endpoints identities_get,identities_post --conc 64 --no-memory
#   bench/http.sh --quick --docs small --zipf
#                            identities traffic whose identifiers repeat: GET and POST with
#                            identifiers drawn from a Zipf distribution (s = 1.0) over 100,000
#                            identities (bench/http/lua/zipf_identities.lua) next to the plain
#                            identities endpoints, then a table of RPS and the servers' RSS
#
# Other options (passed to the driver, bench/http/src/bin/http-bench/main.rs): --runs N,
# --duration S, --warmup S, --conc LIST, --docs LIST, --endpoints LIST, --source upstream|file
# (where the load-phase Flagpole gets its documents), --no-pin, --no-load,
# --no-memory, --out FILE, --identity-cache-bytes N (0: Flagpole without its identity cache).
# All traffic goes to 127.0.0.1; every run is bounded in time.
# Builds with the `profiling` profile (release + debug info, target/profiling/) for perf.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The load generator and the limits it needs (bench/lib/load.sh).
. bench/lib/load.sh
ensure_wrk
# c=500 needs 1,000+ descriptors across the two ends.
raise_open_files 2048 "c=500 may fail to connect"

cargo build --profile profiling --quiet -p flagpole --bin flagpole -p flagpole-bench --bin gen-docs \
  -p flagpole-http-bench --bin limit-server --bin http-bench --bin alloc-count
target/profiling/gen-docs --out bench/out/docs >/dev/null
exec target/profiling/http-bench "$@"
