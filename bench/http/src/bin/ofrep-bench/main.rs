//! `ofrep-bench [options]`: the OFREP benchmark driver behind `bench/ofrep.sh`.
//!
//! Two measurements, on 127.0.0.1 only, every step bounded in time:
//!
//! 1. Revalidation throughput: one Flagpole (pinned to CPU 1) serving the seeded documents as
//!    local files, driven by `wrk` (pinned to CPU 0, 1 thread) in alternating order on the same
//!    process: `GET /api/v1/flags/`, `POST /ofrep/v1/evaluate/flags` with one repeated context and
//!    `If-None-Match` (every answer a 304), and the same POST without it (200, for reference).
//!    Median of several runs per cell; the target is the 304 RPS ≥ 90 % of the `/flags` RPS.
//! 2. Change streams: a fresh Flagpole serving a rewritable copy of one document; this process
//!    (pinned to CPU 0, one tokio thread) opens N `GET /ofrep/v1/events` streams from the URL a
//!    bulk response advertises, waits until each has received the preamble, reads the server's
//!    RSS before and after (idle memory per connection), then rewrites the document a few times
//!    and records when each connection receives each `refetchEvaluation` event. Delivery is
//!    measured from the file write (t0 = just before the rename: includes the file watcher's
//!    150 ms settling, the read and the build) and from the swap (t0 = the timestamp of the
//!    server's "environment document loaded" log line, written right after the event is
//!    published).
//!
//! Prints Markdown tables and writes a JSON report. Every process it starts is stopped when it
//! returns.
//!
//! Options (defaults in brackets):
//!   --conns N [10000]  --rounds N [3]  --sse-doc NAME [tiny]
//!   --runs N [3]  --duration S [2]  --warmup S [1]  --conc LIST [10,64]  --docs LIST [tiny,small]
//!   --no-pin  --no-rps  --no-sse  --out FILE [bench/out/ofrep.json]  --work DIR [bench/out/ofrep]
//!   --docs-dir DIR [bench/out/docs]  --bin-dir DIR [target/profiling]  --lua-dir DIR [bench/http/lua]

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::{json, Value};

mod rps;
mod sse;

use flagpole_http_bench::args::{Args, Places};
use flagpole_http_bench::net::*;
use flagpole_http_bench::procs::*;
use flagpole_http_bench::setup::{self, key_pairs, local_documents};
pub(crate) use flagpole_http_bench::setup::{load_doc, load_docs, Doc};
use flagpole_http_bench::wrk_report::*;

pub(crate) struct Opts {
    pub(crate) conns: usize,
    pub(crate) rounds: usize,
    pub(crate) sse_doc: String,
    pub(crate) runs: usize,
    pub(crate) duration: u64,
    pub(crate) warmup: u64,
    pub(crate) concs: Vec<usize>,
    pub(crate) docs: Vec<String>,
    pub(crate) pin: bool,
    pub(crate) rps: bool,
    pub(crate) sse: bool,
    pub(crate) paths: Places,
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        conns: 10_000,
        rounds: 3,
        sse_doc: "tiny".into(),
        runs: 3,
        duration: 2,
        warmup: 1,
        concs: vec![10, 64],
        docs: vec!["tiny".into(), "small".into()],
        pin: true,
        rps: true,
        sse: true,
        paths: Places::new("ofrep", "target/profiling"),
    };
    let mut args = Args::new("ofrep-bench");
    while let Some(a) = args.option() {
        match a.as_str() {
            "--conns" => o.conns = args.number("--conns"),
            "--rounds" => o.rounds = args.number::<usize>("--rounds").max(1),
            "--sse-doc" => o.sse_doc = args.value("--sse-doc NAME"),
            "--runs" => o.runs = args.number::<usize>("--runs").max(1),
            "--duration" => o.duration = args.number("--duration"),
            "--warmup" => o.warmup = args.number("--warmup"),
            "--conc" => o.concs = args.integers("--conc"),
            "--docs" => o.docs = args.list(),
            "--no-pin" => o.pin = false,
            "--no-rps" => o.rps = false,
            "--no-sse" => o.sse = false,
            other if o.paths.take(other, &mut args) => {}
            other => args.unknown(other),
        }
    }
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        o.pin = false;
    }
    o
}

// ---------------------------------------------------------------------------------------------
// Documents and Flagpole

/// A Flagpole serving `docs` as local files (watched), with `ofrep` as its OFREP section.
pub(crate) fn start_flagpole(
    o: &Opts,
    label: &str,
    docs: &[&Doc],
    ofrep: Value,
) -> (Proc, u16, PathBuf) {
    let port = free_port();
    let config = json!({
        "environment_key_pairs": key_pairs(docs.iter().copied()),
        "server": {"host": "127.0.0.1", "port": port},
        "flagpole": {"documents": local_documents(docs.iter().copied())},
        "ofrep": ofrep,
    });
    let cpu = o.pin.then_some(1);
    let p = setup::start_flagpole(&o.paths, label, cpu, &config, port, docs);
    (p, port, o.paths.work.join(format!("flagpole-{label}.log")))
}

pub(crate) const CONTEXT_BODY: &str = r#"{"context":{"targetingKey":"bench-user","plan":"enterprise","age":42,"app_version":"2.4.1"}}"#;

/// One OFREP bulk evaluation with the benchmark context.
pub(crate) fn bulk(port: u16, doc: &Doc, if_none_match: Option<&str>) -> Reply {
    let mut headers = vec![
        ("X-Environment-Key", doc.client_key.as_str()),
        ("Content-Type", "application/json"),
    ];
    if let Some(etag) = if_none_match {
        headers.push(("If-None-Match", etag));
    }
    http(
        port,
        "POST",
        "/ofrep/v1/evaluate/flags",
        &headers,
        CONTEXT_BODY.as_bytes(),
    )
    .expect("OFREP bulk request")
}

fn verdict(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "met",
        Some(false) => "**missed**",
        None => "n/a",
    }
}

fn main() {
    let o = parse_opts();
    std::fs::create_dir_all(&o.paths.work).expect("work dir");
    let machine = json!({
        "nproc": sh("nproc --all"),
        "cpu": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"),
        "rustc": sh("rustc --version"),
        "wrk": sh("wrk -v 2>&1 | head -1"),
        "kernel": sh("uname -r"),
        "ulimit_n": sh("ulimit -n"),
        "load_average_at_start": sh("cut -d' ' -f1-3 /proc/loadavg"),
        "commit": sh("git rev-parse --short HEAD 2>/dev/null"),
        "crates_modified": sh("git status --porcelain -- crates 2>/dev/null | wc -l") != "0",
    });
    let settings = json!({
        "connections": o.conns, "rounds": o.rounds, "sse_document": o.sse_doc,
        "runs": o.runs, "duration_s": o.duration, "warmup_s": o.warmup,
        "concurrency": o.concs, "documents": o.docs,
        "pinning": if o.pin { "Flagpole on CPU 1; wrk (1 thread) and the SSE client (1 thread) on CPU 0" } else { "none; wrk 2 threads" },
    });
    eprintln!("[ofrep-bench] {machine}\n[ofrep-bench] {settings}");
    if o.pin {
        // This process (the SSE client and the harness) and wrk share CPU 0; Flagpole has CPU 1.
        let _ = Command::new("taskset")
            .args(["-a", "-p", "-c", "0", &std::process::id().to_string()])
            .stdout(Stdio::null())
            .status();
    }
    let started = Instant::now();

    let rps = if o.rps {
        rps::revalidation(&o)
    } else {
        json!(null)
    };
    let sse = if o.sse { sse::streams(&o) } else { json!(null) };

    // Targets.
    let mut targets = Vec::new();
    if let Some(cells) = rps["cells"].as_array() {
        let worst = cells
            .iter()
            .filter_map(|c| c["ratio_304_to_flags"].as_f64())
            .fold(f64::INFINITY, f64::min);
        if worst.is_finite() {
            targets.push(json!({
                "target": "OFREP bulk 304 RPS ≥ 90 % of /api/v1/flags/ RPS (every cell)",
                "result": format!("lowest ratio {:.0} %", worst * 100.0),
                "met": worst >= 0.9,
            }));
        }
    }
    if !sse.is_null() {
        let per = sse["memory"]["per_connection_bytes"].as_f64();
        targets.push(json!({
            "target": format!("idle stream ≤ 16 KiB user-space per connection ({} connections)", o.conns),
            "result": per.map_or("n/a".into(), |b| format!("{:.1} KiB (VmRSS delta / connections)", b / 1024.0)),
            "met": per.map(|b| b <= 16.0 * 1024.0),
        }));
        let p99 = sse["delivery_all_rounds"]["from_write_ms"]["p99"].as_f64();
        let complete = sse["delivery_all_rounds"]["complete"].as_bool();
        targets.push(json!({
            "target": "a change reaches every stream, p99 ≤ 1 s (t0 = the document write)",
            "result": p99.map_or("n/a".into(), |p| format!(
                "p99 {p:.0} ms; every connection received every event: {}",
                if complete == Some(true) { "yes" } else { "no" }
            )),
            "met": p99.map(|p| p <= 1000.0 && complete == Some(true)),
        }));
    }
    println!("\n| target | result | verdict |\n|---|---|---|");
    for t in &targets {
        println!(
            "| {} | {} | {} |",
            t["target"].as_str().unwrap(),
            t["result"].as_str().unwrap(),
            verdict(t["met"].as_bool())
        );
    }

    let report = json!({
        "machine": machine,
        "settings": settings,
        "revalidation": rps,
        "streams": sse,
        "targets": targets,
        "elapsed_s": round(started.elapsed().as_secs_f64(), 1),
    });
    o.paths.write_report(&report, started);
}
