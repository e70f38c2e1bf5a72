#!/usr/bin/env bash
# Many environments in one proxy: for 1, 100 and 1,000 copies of the bundled example document
# (distinct api_keys, listed in flagpole.documents) and 100 copies of the generated 0.97 MB
# document, start `flagpole serve` and print, side by side: the time until readiness, resident
# memory once ready, memory per environment over the one-environment run, OS threads, inotify
# instances, the most threads at once and the peak RSS during start-up (readiness and 2 s after),
# and `/api/v1/flags/` requests a second with a random environment's key
# (wrk, bench/http/lua/random_env_key.lua). Then what one environment holds, per component
# (bench/http/src/bin/env-memory.rs: a counting allocator). See bench/RESULTS.md.
#
#   bench/many.sh              all of it (about 2 minutes)
#   bench/many.sh --no-load    without the wrk runs
#
# Everything is on 127.0.0.1; every run is bounded in time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
LOAD=1
[ "${1:-}" = "--no-load" ] && LOAD=0
command -v wrk >/dev/null 2>&1 || { [ "$LOAD" = 0 ] || { echo "wrk is needed (apt-get install wrk), or --no-load" >&2; exit 1; }; }

cargo build --release --quiet -p flagpole --bin flagpole -p flagpole-bench --bin gen-docs \
  -p flagpole-http-bench --bin env-memory
# FLAGPOLE_BIN: another build to measure the same way (e.g. the main branch's, for a before/after).
BIN=${FLAGPOLE_BIN:-target/release/flagpole}
OUT=bench/out/many
mkdir -p "$OUT"
target/release/gen-docs --out bench/out/docs >/dev/null

# N copies of a document, keys many_00000…, and a config listing them. With "distinct", every
# copy's segment rules differ (a REGEX condition's pattern names the copy), as the environments
# of different projects would: no rule set is shared between them.
make_set() { # name source count [distinct]
  python3 - "$OUT/$1" "$2" "$3" "${4:-}" <<'PY'
import json, os, sys
out, source, n, distinct = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "distinct"
os.makedirs(out, exist_ok=True)
doc = json.load(open(source))
paths = []
def conditions(rules):
    for rule in rules:
        yield from rule.get("conditions") or []
        yield from conditions(rule.get("rules") or [])
original = json.dumps(doc)
for i in range(n):
    if distinct:
        doc = json.loads(original)
        for segment in doc["project"]["segments"]:
            for c in conditions(segment["rules"]):
                if c["operator"] == "REGEX":
                    c["value"] = f"{c['value']}|copy{i}"
    doc["api_key"] = f"many_{i:05d}"
    path = os.path.abspath(f"{out}/env_{i:05d}.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    paths.append(path)
json.dump({"flagpole": {"documents": paths}, "logging": {"log_level": "WARNING"}},
          open(f"{out}/config.json", "w"))
PY
}

PORT=18911
run_set() { # name count document_bytes
  local name=$1 count=$2 start ready pid rss threads inotify rps="-" peak_threads=0 now hwm
  start=$(date +%s%N)
  $BIN serve --config "$OUT/$name/config.json" --host 127.0.0.1 --port $PORT >"$OUT/$name.log" 2>&1 &
  pid=$!
  # Until ready, and for 2 s after (what start-up leaves to run in the background), the most
  # OS threads seen at once (sampled every 10 ms).
  for _ in $(seq 1 3000); do
    now=$(awk '/^Threads/ {print $2}' /proc/$pid/status 2>/dev/null || echo 0)
    [ "${now:-0}" -gt "$peak_threads" ] && peak_threads=$now
    curl -fs -o /dev/null "http://127.0.0.1:$PORT/proxy/health/readiness" && break
    sleep 0.01
  done
  ready=$(( ($(date +%s%N) - start) / 1000000 ))
  for _ in $(seq 1 200); do
    now=$(awk '/^Threads/ {print $2}' /proc/$pid/status 2>/dev/null || echo 0)
    [ "${now:-0}" -gt "$peak_threads" ] && peak_threads=$now
    sleep 0.01
  done
  rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
  hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
  threads=$(ls /proc/$pid/task | wc -l)
  inotify=$(find /proc/$pid/fd -lname 'anon_inode:inotify' 2>/dev/null | wc -l)
  if [ "$LOAD" = 1 ]; then
    rps=$(wrk -t2 -c64 -d5s -s bench/http/lua/random_env_key.lua "http://127.0.0.1:$PORT" -- "$count" \
      | awk '/Requests\/sec/ {printf "%d", $2}')
  fi
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo "$name $count $ready $rss $threads $inotify $rps $3 $peak_threads $hwm"
}

make_set example-1 examples/environment.json 1
make_set example-100 examples/environment.json 100
make_set example-1000 examples/environment.json 1000
make_set distinct-100 examples/environment.json 100 distinct
make_set distinct-1000 examples/environment.json 1000 distinct
make_set generated-100 bench/out/docs/small.json 100
ex=$(wc -c <"$OUT/example-1/env_00000.json"); big=$(wc -c <"$OUT/generated-100/env_00000.json")
rows=()
rows+=("$(run_set example-1 1 "$ex")")
rows+=("$(run_set example-100 100 "$ex")")
rows+=("$(run_set example-1000 1000 "$ex")")
rows+=("$(run_set distinct-100 100 "$(wc -c <"$OUT/distinct-100/env_00000.json")")")
rows+=("$(run_set distinct-1000 1000 "$(wc -c <"$OUT/distinct-1000/env_00000.json")")")
rows+=("$(run_set generated-100 100 "$big")")
base=$(echo "${rows[0]}" | awk '{print $4}')
base100=$(echo "${rows[1]}" | awk '{print $4}')
distinct100=$(echo "${rows[3]}" | awk '{print $4}')

# "Over 1" divides what N environments add to one by N - 1: it includes what loading many
# documents at all adds once (the allocator's arenas and the threads that built them, ~2-3 MiB).
# "100 → 1,000" is what each environment adds beyond that: the per-environment cost itself.
echo
echo "| documents | environments | ready (ms) | RSS (MiB) | RSS per environment over 1 (KiB) | per environment, 100 → 1,000 (KiB) | budget: 2 × document + 16 KiB (KiB) | threads | threads, most at once in start-up | RSS peak (MiB) | inotify instances | /flags RPS, random key |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for row in "${rows[@]}"; do
  set -- $row
  per="-" marginal="-"
  [ "$2" -gt 1 ] && per=$(( ($4 - base) / ($2 - 1) ))
  [ "$1" = example-1000 ] && marginal=$(( ($4 - base100) / 900 ))
  [ "$1" = distinct-1000 ] && marginal=$(( ($4 - distinct100) / 900 ))
  budget=$(( (2 * $8 + 16384) / 1024 ))
  printf "| %s (%s B each) | %s | %s | %.1f | %s | %s | %s | %s | %s | %.1f | %s | %s |\n" \
    "${1%-*}" "$8" "$2" "$3" "$(echo "$4 / 1024" | bc -l)" "$per" "$marginal" "$budget" "$5" "$9" \
    "$(echo "${10} / 1024" | bc -l)" "$6" "$7"
done
echo
echo "What one environment holds (live heap bytes, counting allocator, 200 copies):"
target/release/env-memory examples/environment.json 200
echo "The same with distinct segment rules (every copy's regex differs):"
target/release/env-memory examples/environment.json 200 distinct
target/release/env-memory bench/out/docs/small.json 20
