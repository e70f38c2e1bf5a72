#!/usr/bin/env python3
"""Benchmark of the `flagpole_python` package (bindings/python) against the Flagsmith Python SDK
6.3.0's local evaluation, and of its thread scaling with and without releasing the GIL.

Why: the package exists to make in-process evaluation cheap and to let threads evaluate in
parallel. This measures both claims on the seeded benchmark documents (`gen-docs`, see
bench/engine) and prints one Markdown table per part; nothing here is a test.

Usage::

    bench.py DOCS_DIR [--names tiny,small,medium] [--seconds S] [--threads 1,2] [--rounds R]
             [--sweep | --load [--load-baseline PATH]] [--quiet PCT [--quiet-wait S]]
             [--json-out PATH]

Part 1, per call (one thread): `get_identity_flags(identifier, traits)` followed by
`all_flags()` (the whole evaluation, every flag materialised as a Python object, both sides), and
followed by one `is_feature_enabled(name)` (both evaluate lazily: only that feature, and only the
segments that override it). The SDK is `Flagsmith(environment_key="ser.x", offline_mode=True,
offline_handler=LocalFileHandler(path))`. Identities: 256 `bench-user-<i>` with the engine
bench's traits, cycled.

Part 2, threads: identities evaluated per second with N threads, relative to 1 thread:
`get_identity_flags` + `all_flags()` as shipped (the whole evaluation runs with the GIL released
only when the document's estimated evaluation cost, `Environment._evaluation_cost_ns`, reaches
`_GIL_RELEASE_THRESHOLD_NS`), the same always releasing (`_get_identity_flags_gil(.., gil="release")`,
the behaviour before the threshold) and never releasing (`gil="hold"`),
`get_identity_flags` + one `is_feature_enabled` (one feature, evaluated with the GIL held: it is
shorter than a hand-off), and `get_identity_flags_batch` of 64 identities (one GIL release for
the whole batch), next to the machine's ceiling measured the same way (`hashlib.sha256`, C code
that releases the GIL). The variants of a document are measured interleaved, round after round,
and each keeps its best round.

`--quiet PCT`: each thread measurement first waits (at most `--quiet-wait` s, default 20) until
the machine's CPUs are PCT % idle, for shared machines.

`--load`: instead of parts 1 and 2, document loads: `Environment.from_path`, `from_bytes` of the
file's `bytes` and of its `str`, and `from_dict` of its `json.loads` dict, median ms per load
(no SDK: its loads are not what this compares). With `--load-baseline PATH` (the `--json-out` of
a run on another build, e.g. the wheel before a change: `bench/python.sh --load REF` makes both),
each row shows the baseline beside it and their ratio.

`--sweep`: part 2's `all_flags()` always releasing and never releasing only, on every document
named (`bench/python.sh --sweep` generates documents from 5 to 400 features for it), with each
document's estimate and the variant shipped for it: where releasing starts to pay, i.e. the
threshold.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Callable

import flagpole_python as flagpole

TRAITS = {"plan": "enterprise", "age": 42, "app_version": "2.4.1"}
IDENTITIES = [(f"bench-user-{i}", TRAITS) for i in range(256)]
BATCH = 64


def ratio(x: float) -> str:
    return f"{x:.0f}×" if x >= 10 else f"{x:.1f}×"


def per_call_ns(fn: Callable[[str, dict], object], seconds: float) -> float:
    """Median ns per call over batches, ~``seconds`` of timed work in total."""
    batch = 1
    while True:
        start = time.perf_counter_ns()
        for i in range(batch):
            fn(*IDENTITIES[i & 255])
        if time.perf_counter_ns() - start >= seconds * 1e9 / 20 or batch >= 1 << 22:
            break
        batch *= 2
    samples, total = [], 0
    while total < seconds * 1e9 or len(samples) < 5:
        start = time.perf_counter_ns()
        for i in range(batch):
            fn(*IDENTITIES[i & 255])
        elapsed = time.perf_counter_ns() - start
        total += elapsed
        samples.append(elapsed / batch)
    samples.sort()
    return samples[len(samples) // 2]


BLOCK = b"x" * (1 << 18)


def ceiling_call(identifier: str, traits: dict) -> object:
    """The machine's ceiling: C code that releases the GIL (what N threads can get at best on
    this machine right now, whatever else is running on it)."""
    return hashlib.sha256(BLOCK)


def idle_fraction(seconds: float) -> float:
    """The fraction of all CPUs' time left idle over ``seconds`` (from /proc/stat; 1.0 where
    it cannot be read). This process only sleeps meanwhile, so the rest is other load."""
    def sample() -> list:
        with open("/proc/stat", encoding="ascii") as stat:
            return [int(x) for x in stat.readline().split()[1:9]]
    try:
        before = sample()
        time.sleep(seconds)
        delta = [b - a for a, b in zip(before, sample())]
    except OSError:
        return 1.0
    return (delta[3] + delta[4]) / max(1, sum(delta))


def wait_for_quiet(min_idle: float, max_wait: float) -> None:
    """Waits (at most ``max_wait`` s) until the machine is at least ``min_idle`` idle."""
    deadline = time.monotonic() + max_wait
    while idle_fraction(0.25) < min_idle and time.monotonic() < deadline:
        time.sleep(0.5)


def scaling(variants: list, thread_counts: list, seconds: float, rounds: int,
            min_idle: float = 0.0, max_wait: float = 0.0) -> tuple:
    """Best identities/s (calls/s x ``per_call``) per variant and thread count over ``rounds``
    rounds, each measuring every variant (of every document) at every thread count in turn: a
    shared machine's other load lowers some measurements, the best is the closest to what the
    machine can do, and interleaving spreads every variant over the same minutes. Right after
    each measurement the ceiling is measured with as many threads; next to a variant's best, the
    ceiling measured right after it, as a multiple of the best one-thread ceiling, says whether
    that best ran with the cores free (about 1.9x on 2 free cores). With ``min_idle``, each
    measurement first waits (at most ``max_wait`` s) for the machine to be that idle, so that
    on a shared machine the measurements gather in its quiet moments. ``variants``: (label,
    per_call, fn)."""
    best = {label: {n: 0.0 for n in thread_counts} for label, _, _ in variants}
    beside = {label: {n: 0.0 for n in thread_counts} for label, _, _ in variants}
    one_thread_ceiling = 0.0
    for _ in range(rounds):
        for label, per_call, fn in variants:
            for n in thread_counts:
                if min_idle > 0:
                    wait_for_quiet(min_idle, max_wait)
                rate = throughput(fn, n, seconds) * per_call
                ceiling = throughput(ceiling_call, n, seconds / 3)
                if n == 1:
                    one_thread_ceiling = max(one_thread_ceiling, ceiling)
                if rate > best[label][n]:
                    best[label][n], beside[label][n] = rate, ceiling
    ceiling = {label: {n: c / one_thread_ceiling for n, c in per_n.items()}
               for label, per_n in beside.items()}
    return best, ceiling


def throughput(fn: Callable[[str, dict], object], threads: int, seconds: float) -> float:
    """Calls per second with ``threads`` threads calling ``fn`` for ``seconds``."""
    counts = [0] * threads
    stop = threading.Event()
    barrier = threading.Barrier(threads + 1)

    def work(n: int) -> None:
        barrier.wait()
        i = 0
        while not stop.is_set():
            for _ in range(64):
                fn(*IDENTITIES[i & 255])
                i += 1
        counts[n] = i

    pool = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for t in pool:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in pool:
        t.join()
    return sum(counts) / (time.perf_counter() - start)


LOADS = [
    ("`from_path`", lambda path, data, text, doc: flagpole.Environment.from_path(path)),
    ("`from_bytes(bytes)`", lambda path, data, text, doc: flagpole.Environment.from_bytes(data)),
    ("`from_bytes(str)`", lambda path, data, text, doc: flagpole.Environment.from_bytes(text)),
    ("`from_dict`", lambda path, data, text, doc: flagpole.Environment.from_dict(doc)),
]


def load_ms(load: Callable, path: Path, seconds: float) -> float:
    """Median ms of one document load by ``load``, over at least 5 loads and ~``seconds``."""
    data = path.read_bytes()
    text = data.decode("utf-8")
    doc = json.loads(data)
    samples: list = []
    spent = 0.0
    while spent < seconds or len(samples) < 5:
        start = time.perf_counter()
        load(path, data, text, doc)
        elapsed = time.perf_counter() - start
        spent += elapsed
        samples.append(elapsed * 1000)
    samples.sort()
    return samples[len(samples) // 2]


def load_part(docs_dir: Path, names: list, seconds: float, rounds: int,
              baseline_path: Path | None) -> dict:
    """The document-load table (see `--load`); returns {document: {load: ms}}, each the best
    median of ``rounds`` interleaved rounds."""
    results: dict = {name: {label: float("inf") for label, _ in LOADS} for name in names}
    for _ in range(rounds):
        for name in names:
            for label, load in LOADS:
                ms = load_ms(load, docs_dir / f"{name}.json", seconds)
                results[name][label] = min(results[name][label], ms)
    baseline = json.loads(baseline_path.read_text(encoding="utf-8"))["load"] if baseline_path else {}
    print("Document loads (ms per load, median, best of the rounds; lower is better)\n")
    if baseline:
        print("| document | load | before | after | after ÷ before |")
        print("|---|---|---:|---:|---:|")
    else:
        print("| document | load | ms |")
        print("|---|---|---:|")
    for name in names:
        size = (docs_dir / f"{name}.json").stat().st_size
        for label, ms in results[name].items():
            before = baseline.get(name, {}).get(label)
            if baseline and before:
                print(f"| {name} ({size / 1e6:.2f} MB) | {label} | {before:.2f} | {ms:.2f} "
                      f"| **{ms / before:.2f}** |")
            else:
                print(f"| {name} ({size / 1e6:.2f} MB) | {label} | {ms:.2f} |")
    return results


def sdk_client(path: Path):
    from flagsmith import Flagsmith
    from flagsmith.offline_handlers import LocalFileHandler

    return Flagsmith(environment_key="ser.x", offline_mode=True,
                     offline_handler=LocalFileHandler(str(path)))


def check_agreement(name: str, env, sdk, feature: str) -> None:
    """Same answers first: a benchmark of two things that disagree measures nothing."""
    batch = env.get_identity_flags_batch(IDENTITIES[:32])
    for (identifier, traits), batched in zip(IDENTITIES[:32], batch):
        want = [(f.feature_name, f.enabled, f.value, f.feature_id)
                for f in sdk.get_identity_flags(identifier, traits).all_flags()]
        for flags in (env.get_identity_flags(identifier, traits), batched,
                      env._get_identity_flags_gil(identifier, traits, gil="release"),
                      env._get_identity_flags_gil(identifier, traits, gil="hold")):
            got = [(f.feature_name, f.enabled, f.value, f.feature_id) for f in flags.all_flags()]
            assert want == got, f"{name}: flagpole and the SDK disagree for {identifier}"
        one = (sdk.get_identity_flags(identifier, traits).get_flag(feature),
               env.get_identity_flags(identifier, traits).get_flag(feature))
        assert len({(f.enabled, f.value, f.feature_id) for f in one}) == 1, \
            f"{name}: flagpole and the SDK disagree on {feature} for {identifier}"


def thread_variants(env, feature: str, with_more: bool) -> list:
    """(label, identities per call, fn) of one document: `all_flags()` always releasing and
    never releasing the GIL, then (``with_more``) as shipped, one flag read, and the batch (a
    function of its own, so that each closure keeps its own document)."""
    chunk = IDENTITIES[:BATCH]
    variants = [
        ("`all_flags()`, always releases", 1,
         lambda i, t: env._get_identity_flags_gil(i, t, gil="release").all_flags()),
        ("`all_flags()`, always holds", 1,
         lambda i, t: env._get_identity_flags_gil(i, t, gil="hold").all_flags()),
    ]
    if with_more:
        variants += [
            (f"`all_flags()`, as shipped: {decision(env)}", 1,
             lambda i, t: env.get_identity_flags(i, t).all_flags()),
            ("one `is_feature_enabled` (lazy, GIL held)", 1,
             lambda i, t: env.get_identity_flags(i, t).is_feature_enabled(feature)),
            (f"`get_identity_flags_batch` of {BATCH}, one release", BATCH,
             lambda i, t: env.get_identity_flags_batch(chunk)),
        ]
    return variants


def decision(env) -> str:
    """What `all_flags()` does with the GIL on this document, and why."""
    estimate = env._evaluation_cost_ns
    verb = "releases" if estimate >= flagpole._GIL_RELEASE_THRESHOLD_NS else "holds"
    return f"{verb} (estimate {estimate / 1000:.1f} µs)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs_dir", type=Path)
    parser.add_argument("--names", default="tiny,small,medium")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=3, help="thread rounds (best is kept)")
    parser.add_argument("--sweep", action="store_true",
                        help="only the all_flags() thread variants, with each document's estimate")
    parser.add_argument("--quiet", type=float, default=0.0, metavar="PCT",
                        help="before each thread measurement, wait until the CPUs are PCT %% idle")
    parser.add_argument("--quiet-wait", type=float, default=20.0, metavar="S",
                        help="longest wait for --quiet per measurement (then measure anyway)")
    parser.add_argument("--load", action="store_true",
                        help="only document loads (from_path, from_bytes, from_dict)")
    parser.add_argument("--load-baseline", type=Path, metavar="PATH",
                        help="with --load: the --json-out of a run on another build, to compare")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.load:
        names = [n for n in args.names.split(",") if n]
        print(f"Machine: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, "
              f"Python {platform.python_version()}, flagpole {flagpole.__version__}\n")
        loads = load_part(args.docs_dir, names, args.seconds, args.rounds, args.load_baseline)
        if args.json_out:
            args.json_out.write_text(json.dumps({"load": loads}, indent=1), encoding="utf-8")
        return 0
    thread_counts = [int(t) for t in args.threads.split(",")]
    threshold = flagpole._GIL_RELEASE_THRESHOLD_NS
    results: dict = {"per_call": {}, "threads": {}, "ceiling": {}, "estimate_ns": {},
                     "threshold_ns": threshold, "shape": {}}

    rows = []
    all_variants: list = []  # (label, per_call, fn) of every document, measured interleaved
    sweep: dict = {}  # name: the labels of its shipped, always-releasing and always-holding rows
    for name in [n for n in args.names.split(",") if n]:
        path = args.docs_dir / f"{name}.json"
        env = flagpole.Environment.from_path(path)
        document = json.loads(path.read_bytes())
        results["shape"][name] = (len(document.get("feature_states") or []),
                                  len((document.get("project") or {}).get("segments") or []))
        results["estimate_ns"][name] = env._evaluation_cost_ns
        feature = env.feature_names()[0]
        if not args.sweep:
            sdk = sdk_client(path)
            check_agreement(name, env, sdk, feature)
            timings = {
                "sdk_all": per_call_ns(lambda i, t: sdk.get_identity_flags(i, t).all_flags(), args.seconds),
                "flagpole_all": per_call_ns(lambda i, t: env.get_identity_flags(i, t).all_flags(), args.seconds),
                "sdk_one": per_call_ns(lambda i, t: sdk.get_identity_flags(i, t).is_feature_enabled(feature), args.seconds),
                "flagpole_one": per_call_ns(lambda i, t: env.get_identity_flags(i, t).is_feature_enabled(feature), args.seconds),
            }
            results["per_call"][name] = timings
            n_features = len(env.feature_names())
            rows.append(
                f"| {name} ({n_features} features) | {timings['sdk_all'] / 1000:.1f} | {timings['flagpole_all'] / 1000:.2f} "
                f"| **{ratio(timings['sdk_all'] / timings['flagpole_all'])}** | {timings['sdk_one'] / 1000:.1f} "
                f"| {timings['flagpole_one'] / 1000:.2f} | **{ratio(timings['sdk_one'] / timings['flagpole_one'])}** |")
            print(f"{name}: {json.dumps({k: round(v) for k, v in timings.items()})}", file=sys.stderr)

        variants = thread_variants(env, feature, with_more=not args.sweep)
        all_variants += [(f"{name}: {label}", per_call, fn) for label, per_call, fn in variants]
        sweep[name] = [f"{name}: {label}" for label, _, _ in variants[:2]]

    best, ceiling = scaling(all_variants, thread_counts, args.seconds, args.rounds,
                            args.quiet / 100, args.quiet_wait)
    for label, _, _ in all_variants:
        results["threads"][label] = best[label]
        results["ceiling"][label] = ceiling[label]
        print(f"{label}: {json.dumps({n: round(v) for n, v in best[label].items()})}"
              f" ceiling {json.dumps({n: round(v, 2) for n, v in ceiling[label].items()})}",
              file=sys.stderr)

    print(f"Machine: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}, flagpole {flagpole.__version__}\n")
    if rows:
        print("Per call, one thread (µs per call; lower is better)\n")
        print("| document | SDK: flags + all_flags() | flagpole | speedup | SDK: flags + one is_feature_enabled | flagpole | speedup |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        print("\n".join(rows))
    print(f"\nThe GIL is released for an estimated evaluation cost of {threshold / 1000:g} µs or more.")
    print("\nThreads: identities evaluated per second (best of the rounds), and throughput vs 1 "
          "thread; the ceiling (`hashlib.sha256` of 256 KiB, which releases the GIL) measured right "
          "after that best, relative to the best one-thread ceiling\n")
    header = " | ".join(f"{n} thread{'s' if n > 1 else ''}" for n in thread_counts)
    others = [n for n in thread_counts if n != thread_counts[0]]
    ceiling_header = " | ".join(f"ceiling, {n} threads" for n in others)
    print(f"| document: variant | {header} | {ceiling_header} |")
    print("|---|" + "---:|" * (len(thread_counts) + len(others)))
    for label, per_threads in results["threads"].items():
        base = per_threads[thread_counts[0]]
        cells = " | ".join(
            f"{v:,.0f}/s" + ("" if n == thread_counts[0] else f" (**{v / base:.2f}×**)")
            for n, v in per_threads.items())
        ceiling = results["ceiling"][label]
        ceiling_cells = " | ".join(f"{ceiling[n]:.2f}×" for n in others)
        print(f"| {label} | {cells} | {ceiling_cells} |")
    if args.sweep and len(thread_counts) >= 2:
        one, two = thread_counts[0], thread_counts[1]
        print(f"\nSweep: {two} threads ÷ {one} per variant (best rounds), by estimated evaluation cost\n")
        print(f"| document | features | segments | estimate µs | shipped | µs per call, {one} thread, holding "
              f"| releasing ÷ holding, {one} thread | holds | always releases | shipped "
              f"| ceiling beside each best, {two} threads (holds/releases) |")
        print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
        for name, labels in sweep.items():
            released, held = (results["threads"][label] for label in labels)
            ceil = "/".join(f"{results['ceiling'][label][two]:.2f}" for label in labels[::-1])
            estimate = results["estimate_ns"][name]
            features, segments = results["shape"][name]
            releases = estimate >= threshold
            shipped = released if releases else held
            print(f"| {name} | {features} | {segments} | {estimate / 1000:.1f} "
                  f"| {'releases' if releases else 'holds'} "
                  f"| {1e6 / held[one]:.2f} | {released[one] / held[one]:.2f} "
                  f"| {held[two] / held[one]:.2f}× | {released[two] / released[one]:.2f}× "
                  f"| **{shipped[two] / shipped[one]:.2f}×** | {ceil} |")
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0

if __name__ == "__main__":
    sys.exit(main())
