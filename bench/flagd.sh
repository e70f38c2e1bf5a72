#!/usr/bin/env bash
# flagd front door benchmark: ResolveBoolean and ResolveAll (gRPC, flagd.evaluation.v1) on
# Flagpole, against OFREP single and bulk on the same Flagpole and document, and against flagd
# itself (tests/flagd/ref) on an equivalent flag set: N boolean flags, one targeted by a rule, in
# both formats (bench/flagd/gen_docs.py). Then the same definitions for both: Flagpole serving
# flagd's own file (config.json's `flags`) against flagd serving it, every call (OFREP too), and their
# resident memory per 1,000 flags. Each server is pinned to one core (the last), the load
# generator (bench/flagd/load, Go) to the others. gRPC calls are measured in two topologies: one
# HTTP/2 connection carrying 50 concurrent calls (the defaults of ghz, the load tool the issue
# measured with; one provider in a busy service), and 16 callers with a connection each (16
# providers). Also counts the server's write syscalls per unary response (strace), and what a caller
# pays to decode one ResolveAll answer of each server (saved bytes, decoded in Go, Node and
# Python, bench/flagd/decode). Prints Markdown tables; writes bench/out/flagd/results.json. See
# bench/RESULTS.md ("flagd").
#
#   bench/flagd.sh [--duration S] [--conc N] [--flags N] [--runs N]
#   (--conc: the callers of the one-connection-each topology and of OFREP; default 16)
#   FLAGPOLE_BIN=path bench/flagd.sh …   (another build of Flagpole, e.g. an earlier commit's)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The command line, the output directory and the cores (bench/lib/setup.sh).
. bench/lib/setup.sh
DURATION=10; CONC=16; FLAGS=100; RUNS=3
bench_options "duration conc flags runs" "$@"
command -v go >/dev/null || { echo "go is needed (the load generator and flagd)" >&2; exit 1; }
command -v taskset >/dev/null || { echo "taskset (util-linux) is needed" >&2; exit 1; }
bench_setup flagd

BIN="${FLAGPOLE_BIN:-target/release/flagpole}"
[ -n "${FLAGPOLE_BIN:-}" ] || cargo build --release --quiet -p flagpole
python3 bench/flagd/gen_docs.py "$OUT" "$FLAGS"
(cd bench/flagd/load && GOFLAGS=-mod=mod go build -o "../../../$OUT/flagd-load" .)
# flagd's modules are not all in the public checksum database: go.sum pins them instead. The flagd
# of the test suites (tests/flagd/ref: the newest the Go proxy builds); FLAGD_REF=bench/flagd/ref
# builds v0.11.2, the flagd of the earlier tables in bench/RESULTS.md.
FLAGD_REF="${FLAGD_REF:-tests/flagd/ref}"
(cd "$FLAGD_REF" && GOFLAGS=-mod=mod GONOSUMDB=github.com/open-feature,buf.build/gen/go \
  go build -o "$OLDPWD/$OUT/flagd" github.com/open-feature/flagd/flagd)

# Decoders: Node's protobufjs (bench/flagd/decode), Python's flagd provider (the project's test
# venv, or one made here).
if command -v node >/dev/null; then (cd bench/flagd/decode && npm ci --silent --no-audit --no-fund --ignore-scripts); fi
PY=.venv/bin/python
if ! "$PY" -c 'import openfeature.schemas.protobuf.flagd.evaluation.v1.evaluation_pb2' 2>/dev/null; then
  PY="$OUT/venv/bin/python"
  [ -x "$PY" ] || python3 -m venv "$OUT/venv"
  "$PY" -m pip install -q "$(grep '^openfeature-provider-flagd==' tests/requirements.txt)"
fi

wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; exit 1; }
RESULTS="$OUT/results.jsonl"; : > "$RESULTS"
# The gRPC topologies: name and load generator options.
SHARED="-conc 50 -conns 1"; SEPARATE="-conc $CONC"
load() {  # server mode addr key pid [topology]
  local topology="${6:-separate}" options="$SEPARATE"
  [ "$topology" = shared ] && options="$SHARED"
  for run in $(seq "$RUNS"); do
    # shellcheck disable=SC2086 # the options are words
    taskset -c "$LOAD_CPU" "$OUT/flagd-load" -mode "$2" -addr "$3" -key "$4" -pid "$5" \
      $options -duration "${DURATION}s" | python3 -c "import json,sys; d=json.load(sys.stdin); d.update(server='$1', flags=$FLAGS, topology='$topology'); print(json.dumps(d))" >> "$RESULTS"
  done
}
syscalls() {  # server mode addr key pid: write-family syscalls per call over 3 s
  local trace="$OUT/strace-$1-$2.txt"
  strace -f -c -e trace=write,writev,sendmsg,sendto -o "$trace" -p "$5" & local st=$!
  sleep 0.5
  local calls; calls=$(taskset -c "$LOAD_CPU" "$OUT/flagd-load" -mode "$2" -addr "$3" -key "$4" -pid "$5" \
    -conc "$CONC" -duration 3s -warmup 0s | python3 -c 'import json,sys; print(json.load(sys.stdin)["calls"])')
  sleep 0.5; kill -INT "$st"; wait "$st" 2>/dev/null || true
  python3 - "$trace" "$calls" "$1" "$2" >> "$RESULTS" <<'PY'
import json, sys
path, calls, server, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
total = 0
for line in open(path):
    parts = line.split()
    if len(parts) >= 5 and parts[-1] in ("write", "writev", "sendmsg", "sendto"):
        total += int(parts[3])
print(json.dumps({"server": server, "mode": mode, "syscalls_per_call": total / max(calls, 1),
                  "syscall_calls": calls}))
PY
}

# Flagpole: the document as a local file, the flagd listener on its own port.
GRPC=$(free_port); HTTP=$(free_port)
cat > "$OUT/flagpole.json" <<JSON
{"environment_key_pairs": [{"server_side_key": "ser.bench_flagd_server", "client_side_key": "bench_flagd_client"}],
 "api_url": "http://127.0.0.1:9/api/v1",
 "logging": {"log_level": "WARNING"},
 "flagpole": {"documents": [{"path": "$PWD/$OUT/flagsmith.json"}], "grpc": {"port": $GRPC}}}
JSON
taskset -c "$SERVER_CPU" "$BIN" serve --host 127.0.0.1 --port "$HTTP" --config "$OUT/flagpole.json" 2>"$OUT/flagpole.log" &
FP=$!
trap 'kill $FP 2>/dev/null || true; kill ${FD:-} 2>/dev/null || true' EXIT
wait_port "$GRPC"; wait_port "$HTTP"; sleep 0.5
for topology in shared separate; do
  for mode in grpc-bool grpc-all; do load flagpole "$mode" "127.0.0.1:$GRPC" ser.bench_flagd_server "$FP" "$topology"; done
done
for mode in ofrep-single ofrep-bulk; do load flagpole "$mode" "127.0.0.1:$HTTP" ser.bench_flagd_server "$FP"; done
if command -v strace >/dev/null; then
  syscalls flagpole grpc-bool "127.0.0.1:$GRPC" ser.bench_flagd_server "$FP"
fi
"$OUT/flagd-load" -mode capture -addr "127.0.0.1:$GRPC" -key ser.bench_flagd_server -out "$OUT/answer-flagpole.bin"
"$OUT/flagd-load" -mode capture -addr "127.0.0.1:$GRPC" -key ser.bench_flagd_server -metadata \
  -out "$OUT/answer-flagpole-metadata.bin"
kill "$FP"; wait "$FP" 2>/dev/null || true

# Flagpole serving flagd's own file (the `flags` list, keyless), the definitions flagd serves below.
start_flagpole_flags() {  # file: starts it, sets FP, GRPC, HTTP
  GRPC=$(free_port); HTTP=$(free_port)
  cat > "$OUT/flagpole-flags.json" <<JSON
{"logging": {"log_level": "WARNING"}, "flags": [{"uri": "$1"}], "flagpole": {"grpc": {"port": $GRPC}}}
JSON
  taskset -c "$SERVER_CPU" "$BIN" serve --host 127.0.0.1 --port "$HTTP" --config "$OUT/flagpole-flags.json" \
    2>"$OUT/flagpole-flags.log" &
  FP=$!
  wait_port "$GRPC"; wait_port "$HTTP"; sleep 0.5
}
start_flagpole_flags "$PWD/$OUT/flagd.json"
for topology in shared separate; do
  for mode in grpc-bool grpc-all; do load flagpole-flagd "$mode" "127.0.0.1:$GRPC" "" "$FP" "$topology"; done
done
for mode in ofrep-single ofrep-bulk; do load flagpole-flagd "$mode" "127.0.0.1:$HTTP" "" "$FP"; done
kill "$FP"; wait "$FP" 2>/dev/null || true

# flagd on the same flag file.
start_flagd() {  # file: starts it, sets FD, FGRPC, FOFREP
  FGRPC=$(free_port); FMGMT=$(free_port); FOFREP=$(free_port); FSYNC=$(free_port)
  taskset -c "$SERVER_CPU" "$OUT/flagd" start --uri "file:$1" --port "$FGRPC" \
    --management-port "$FMGMT" --ofrep-port "$FOFREP" --sync-port "$FSYNC" >"$OUT/flagd.log" 2>&1 &
  FD=$!
  wait_port "$FGRPC"; wait_port "$FOFREP"; sleep 1
}
start_flagd "$PWD/$OUT/flagd.json"
for topology in shared separate; do
  for mode in grpc-bool grpc-all; do load flagd "$mode" "127.0.0.1:$FGRPC" "" "$FD" "$topology"; done
done
for mode in ofrep-single ofrep-bulk; do load flagd "$mode" "127.0.0.1:$FOFREP" "" "$FD"; done
if command -v strace >/dev/null; then
  syscalls flagd grpc-bool "127.0.0.1:$FGRPC" "" "$FD"
fi
"$OUT/flagd-load" -mode capture -addr "127.0.0.1:$FGRPC" -key "" -out "$OUT/answer-flagd.bin"
kill "$FD"; wait "$FD" 2>/dev/null || true

# Memory per 1,000 flags: resident memory serving MEM_FLAGS + 1,000 flags less serving MEM_FLAGS,
# each after a few ResolveAll calls, for flagd and Flagpole on the flagd file.
MEM_FLAGS=10
python3 bench/flagd/gen_docs.py "$OUT/mem-small" "$MEM_FLAGS" >/dev/null
python3 bench/flagd/gen_docs.py "$OUT/mem-large" "$(( MEM_FLAGS + 1000 ))" >/dev/null
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
resident() {  # server file: KiB resident after 20 ResolveAll calls
  if [ "$1" = flagd ]; then start_flagd "$2"; local pid=$FD addr="127.0.0.1:$FGRPC"
  else start_flagpole_flags "$2"; local pid=$FP addr="127.0.0.1:$GRPC"; fi
  for _ in $(seq 20); do "$OUT/flagd-load" -mode capture -addr "$addr" -key "" -out /dev/null; done
  sleep 0.5; rss_kb "$pid"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}
for server in flagd flagpole-flagd; do
  small=$(resident "$server" "$PWD/$OUT/mem-small/flagd.json")
  large=$(resident "$server" "$PWD/$OUT/mem-large/flagd.json")
  echo "{\"server\": \"$server\", \"mode\": \"memory\", \"kib_small\": $small, \"kib_large\": $large, \"kib_per_1000_flags\": $(( large - small ))}" >> "$RESULTS"
done

# Decoding each saved answer, one core, nothing else of ours running. (With an earlier build of
# Flagpole, one that ignores `flagpole-metadata`, its two answers are the same.)
decoded() {  # answer: one JSON line from stdin into the results
  python3 -c "import json,sys; d=json.load(sys.stdin); d.update(answer='$1', mode='decode'); print(json.dumps(d))" >> "$RESULTS"
}
for run in $(seq "$RUNS"); do  # interleaved, so the machine's moods fall on every answer
  for answer in flagpole flagpole-metadata flagd; do
    saved="$OUT/answer-$answer.bin"
    taskset -c "$SERVER_CPU" "$OUT/flagd-load" -mode decode -in "$saved" | decoded "$answer"
    if command -v node >/dev/null; then
      taskset -c "$SERVER_CPU" node bench/flagd/decode/decode.js "$saved" crates/server/proto | decoded "$answer"
    fi
    taskset -c "$SERVER_CPU" "$PY" bench/flagd/decode/decode.py "$saved" | decoded "$answer"
  done
done

python3 - "$RESULTS" "$OUT/results.json" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
json.dump(rows, open(sys.argv[2], "w"), indent=1)
def med(server, mode, key, topology="separate"):
    vals = [r[key] for r in rows if r.get("server") == server and r["mode"] == mode
            and r.get("topology", "separate") == topology and key in r]
    return statistics.median(vals) if vals else None
def decode(answer, language, key="us_per_decode"):
    vals = [r[key] for r in rows if r.get("answer") == answer and r.get("language") == language]
    return statistics.median(vals) if vals else None
sys_fp = med("flagpole", "grpc-bool", "syscalls_per_call")
sys_fd = med("flagd", "grpc-bool", "syscalls_per_call")
errors = sum(r.get("errors", 0) for r in rows)
ratio = lambda a, b: f"{a / b:.2f}×" if a and b else "–"
print("| call | topology | Flagpole RPS | Flagpole CPU µs/call | flagd RPS | flagd CPU µs/call | RPS ratio | CPU: flagd / Flagpole |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for topology, label in (("shared", "1 connection, 50 calls in flight"), ("separate", "a connection per caller")):
    for call, mode in (("ResolveBoolean (gRPC)", "grpc-bool"), ("ResolveAll (gRPC)", "grpc-all")):
        fr, fc = med("flagpole", mode, "rps", topology), med("flagpole", mode, "cpu_us_per_call", topology)
        dr, dc = med("flagd", mode, "rps", topology), med("flagd", mode, "cpu_us_per_call", topology)
        if fr and fc:
            print(f"| {call} | {label} | {fr:,.0f} | {fc:.1f} | {dr or 0:,.0f} | {dc or 0:.1f} | {ratio(fr, dr)} | {ratio(dc, fc)} |")
for call, mode in (("OFREP single (HTTP/1.1), same Flagpole", "ofrep-single"), ("OFREP bulk (HTTP/1.1), same Flagpole", "ofrep-bulk")):
    orr, oc = med("flagpole", mode, "rps"), med("flagpole", mode, "cpu_us_per_call")
    print(f"| {call} | a connection per caller | {orr:,.0f} | {oc:.1f} | | | | |")
print("\nThe same definitions: Flagpole serving flagd's own flag file (config.json's `flags`, keyless) and flagd "
      "serving it:\n")
print("| call | topology | Flagpole RPS | Flagpole CPU µs/call | flagd RPS | flagd CPU µs/call | CPU: flagd / Flagpole |")
print("|---|---|---:|---:|---:|---:|---:|")
SAME = (("ResolveBoolean (gRPC)", "grpc-bool", ("shared", "separate")), ("ResolveAll (gRPC)", "grpc-all", ("shared", "separate")),
        ("OFREP single (HTTP/1.1)", "ofrep-single", ("separate",)), ("OFREP bulk (HTTP/1.1)", "ofrep-bulk", ("separate",)))
LABELS = {"shared": "1 connection, 50 calls in flight", "separate": "a connection per caller"}
for call, mode, topologies in SAME:
    for topology in topologies:
        fr, fc = med("flagpole-flagd", mode, "rps", topology), med("flagpole-flagd", mode, "cpu_us_per_call", topology)
        dr, dc = med("flagd", mode, "rps", topology), med("flagd", mode, "cpu_us_per_call", topology)
        if fr and fc:
            print(f"| {call} | {LABELS[topology]} | {fr:,.0f} | {fc:.1f} | {dr or 0:,.0f} | {dc or 0:.1f} | {ratio(dc, fc)} |")
memory = {r["server"]: r for r in rows if r["mode"] == "memory"}
if memory:
    print("\nResident memory per 1,000 flags (KiB; serving 1,010 flags less serving 10):\n")
    print("| server | 10 flags | 1,010 flags | per 1,000 flags |")
    print("|---|---:|---:|---:|")
    for server, label in (("flagpole-flagd", "Flagpole (flagd file)"), ("flagd", "flagd")):
        if server in memory:
            m = memory[server]
            print(f"| {label} | {m['kib_small']:,} | {m['kib_large']:,} | {m['kib_per_1000_flags']:,} |")
print("\nDecoding one ResolveAll answer (µs per decode, one core; Flagpole's default answer, with "
      "`flagpole-metadata: true`, flagd's):\n")
print("| decoder | Flagpole | Flagpole + metadata | flagd | Flagpole / flagd |")
print("|---|---:|---:|---:|---:|")
sizes = [decode(a, "go", "bytes") for a in ("flagpole", "flagpole-metadata", "flagd")]
if all(sizes):
    print(f"| answer bytes | {sizes[0]:,.0f} | {sizes[1]:,.0f} | {sizes[2]:,.0f} | {sizes[0] / sizes[2]:.2f}× |")
for language, label in (("go", "Go (google.golang.org/protobuf)"), ("node", "Node (protobufjs)"), ("python", "Python (provider's protobuf messages)")):
    fp, fm, fd = (decode(a, language) for a in ("flagpole", "flagpole-metadata", "flagd"))
    if fp and fd:
        print(f"| {label} | {fp:.1f} | {fm:.1f} | {fd:.1f} | {fp / fd:.2f}× |")
    if language == "go" and fp and fd:
        al = [decode(a, "go", "allocs_per_decode") for a in ("flagpole", "flagpole-metadata", "flagd")]
        print(f"| Go allocations per decode | {al[0]:,.0f} | {al[1]:,.0f} | {al[2]:,.0f} | {al[0] / al[2]:.2f}× |")
print()
def goal(label, value, op, target):
    met = value <= target if op == "≤" else value >= target
    print(f"- {label}: {value:.2f}× (goal {op} {target}×: {'met' if met else 'NOT met'})")
cpu = lambda server, mode, topology="separate": med(server, mode, "cpu_us_per_call", topology)
goal("ResolveAll CPU / OFREP bulk CPU, same Flagpole, a connection per caller", cpu("flagpole", "grpc-all") / cpu("flagpole", "ofrep-bulk"), "≤", 1.5)
for topology, label in (("shared", "1 connection, 50 calls in flight (ghz's defaults, the issue's load tool)"), ("separate", "a connection per caller")):
    goal(f"ResolveAll CPU, flagd / Flagpole, {label}", cpu("flagd", "grpc-all", topology) / cpu("flagpole", "grpc-all", topology), "≥", 10)
    goal(f"ResolveBoolean CPU, flagd / Flagpole, {label}", cpu("flagd", "grpc-bool", topology) / cpu("flagpole", "grpc-bool", topology), "≥", 9)
# The flagd file (issue: ≥ 9× below flagd on each call).
for call, mode, topologies in SAME:
    for topology in topologies:
        fd, fp = cpu("flagd", mode, topology), cpu("flagpole-flagd", mode, topology)
        if fd and fp:
            goal(f"{call} CPU on the flagd file, flagd / Flagpole, {LABELS[topology]}", fd / fp, "≥", 9)
if sys_fp is not None:
    print(f"\nwrite-family syscalls per ResolveBoolean response: Flagpole {sys_fp:.2f}, flagd {sys_fd:.2f}")
print(f"errors: {errors}")
# A run whose calls failed measured failures, not answers: name it and fail the bench.
for r in rows:
    if r.get("errors"):
        print(f"  {r['server']} {r['mode']} ({r.get('topology', 'separate')}): {r['errors']:,} of {r['calls']:,} calls failed")
sys.exit(1 if errors else 0)
PY
