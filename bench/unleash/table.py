#!/usr/bin/env python3
"""The tables of bench/unleash.sh, from its results.jsonl: per endpoint, each server's run with
the median RPS; then start-up and memory.

    table.py RESULTS.jsonl NOTE
"""

import json
import statistics
import sys

SERVERS = [("flagpole", "Flagpole"), ("edge", "Edge"), ("proxy", "Proxy")]
ENDPOINTS = [
    ("frontend", "/api/frontend (Proxy: /proxy), 1 of N users"),
    ("client", "/api/client/features (Proxy: /proxy/client/features)"),
    ("client_gzip", "/api/client/features, gzip"),
]


def fmt(x: float) -> str:
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    note = sys.argv[2] if len(sys.argv) > 2 else ""
    runs = [r for r in rows if "endpoint" in r]
    pick = {}
    for endpoint, _ in ENDPOINTS:
        for server, _ in SERVERS:
            mine = [r for r in runs if r["endpoint"] == endpoint and r["server"] == server]
            if not mine:
                continue
            for r in mine:
                secs = r["duration_us"] / 1e6
                r["rps"] = r["requests"] / secs
                r["cpu_per_req"] = r["cpu_us"] / max(r["requests"], 1)
                r["per_cpu_s"] = 1e6 / r["cpu_per_req"] if r["cpu_per_req"] else float("nan")
                r["busy"] = r["cpu_us"] / r["duration_us"]
            mine.sort(key=lambda r: r["rps"])
            med = mine[len(mine) // 2]
            med["rps_spread"] = (mine[0]["rps"], mine[-1]["rps"])
            med["cpu_median"] = statistics.median(r["cpu_per_req"] for r in mine)
            pick[(endpoint, server)] = med

    print(f"({note})")
    print()
    head = ["endpoint"]
    head += [f"{n} RPS" for _, n in SERVERS]
    head += ["RPS × Edge", "RPS × Proxy"]
    head += [f"{n} req/CPU-s" for _, n in SERVERS]
    head += ["per core × Edge", "per core × Proxy"]
    head += [f"{n} p50 ms" for _, n in SERVERS] + [f"{n} p99 ms" for _, n in SERVERS]
    head += [f"{n} CPU µs/req" for _, n in SERVERS]
    head += ["server core busy F/E/P", "errors F/E/P"]
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    for endpoint, label in ENDPOINTS:
        got = {s: pick.get((endpoint, s)) for s, _ in SERVERS}
        f = got["flagpole"]
        if f is None:
            continue
        cells = [label]
        cells += [fmt(got[s]["rps"]) if got[s] else "–" for s, _ in SERVERS]
        cells += [f"{fmt(f['rps'] / got[s]['rps'])}×" if got[s] else "–" for s in ("edge", "proxy")]
        cells += [fmt(got[s]["per_cpu_s"]) if got[s] else "–" for s, _ in SERVERS]
        cells += [f"{fmt(f['per_cpu_s'] / got[s]['per_cpu_s'])}×" if got[s] else "–" for s in ("edge", "proxy")]
        cells += [fmt(got[s]["p50_us"] / 1000) if got[s] else "–" for s, _ in SERVERS]
        cells += [fmt(got[s]["p99_us"] / 1000) if got[s] else "–" for s, _ in SERVERS]
        cells += [fmt(got[s]["cpu_per_req"]) if got[s] else "–" for s, _ in SERVERS]
        cells.append(" / ".join(f"{got[s]['busy'] * 100:.0f} %" if got[s] else "–" for s, _ in SERVERS))
        cells.append(" / ".join(str(got[s]["errors"] + got[s]["status_errors"]) if got[s] else "–"
                                for s, _ in SERVERS))
        print("| " + " | ".join(cells) + " |")

    print()
    print("RPS spread over the runs (lowest–highest): " + "; ".join(
        f"{endpoint} {s} {fmt(p['rps_spread'][0])}–{fmt(p['rps_spread'][1])}"
        for (endpoint, s), p in pick.items()))
    print()
    start = {r["server"]: r for r in rows if r.get("kind") == "start"}
    end = {r["server"]: r for r in rows if r.get("kind") == "end"}
    print("| server | ready after start (s) | RSS when ready (MiB) | RSS after the runs (MiB) | peak RSS (MiB) |")
    print("|---|---:|---:|---:|---:|")
    for s, n in SERVERS:
        if s not in start:
            continue
        e = end.get(s, {})
        print(f"| {n} | {start[s]['ready_s']:.2f} | {start[s]['rss_kib'] / 1024:.1f} | "
              f"{e.get('rss_kib', 0) / 1024:.1f} | {e.get('hwm_kib', 0) / 1024:.1f} |")


if __name__ == "__main__":
    main()
