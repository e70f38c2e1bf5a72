//! `http-bench [--quick] [options]`: the HTTP benchmark driver behind `bench/http.sh`.
//!
//! Starts, on 127.0.0.1 only, `flagpole serve` with the seeded documents and the limit server
//! (`limit-server`: the same bytes per endpoint, no evaluation), drives both with `wrk`
//! (bounded duration, alternating which server goes first, median of several runs), then runs
//! the memory and update measurements on dedicated Flagpole processes. Prints Markdown tables
//! and writes a JSON report. Every process it starts is stopped when it returns.
//!
//! Options (defaults in brackets; `--quick` = 1 run of 1 s per cell):
//!   --runs N [3]  --duration S [2]  --warmup S [1]  --conc 10,64,200,500
//!   --docs tiny,small,medium  --endpoints flags,identities_get,identities_post,document,
//!   document_gzip,document_zstd  --source upstream|file [upstream]  --no-pin  --no-load
//!   --no-memory  --out FILE
//!   [bench/out/http.json]  --work DIR [bench/out/http]
//!   --identity-cache-bytes N: Flagpole's `flagpole.identity_cache.max_bytes` (0 = no cache;
//!   default: Flagpole's default, on)
//!   --zipf: the endpoints are identities_get,identities_get_zipf,identities_post,
//!   identities_post_zipf (the `_zipf` ones, never in the default matrix, draw identifiers from
//!   a Zipf distribution over 100,000 identities: `bench/http/lua/zipf_identities.lua`; after
//!   their cells, a table of RPS and each server's RSS).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod load;
mod memory;
mod setup;
mod verdicts;

use flagpole_http_bench::args::{Args, Places};
use flagpole_http_bench::net::*;
use flagpole_http_bench::procs::*;
use flagpole_http_bench::setup::{load_docs, Doc};
use flagpole_http_bench::wrk_report::*;
use flagpole_http_bench::wrk_run::*;
use load::*;
use memory::*;
use setup::*;
use verdicts::*;

// ---------------------------------------------------------------------------------------------
// Options

pub(crate) struct Opts {
    pub(crate) quick: bool,
    pub(crate) runs: usize,
    pub(crate) duration: u64,
    pub(crate) warmup: u64,
    pub(crate) concs: Vec<usize>,
    pub(crate) docs: Vec<String>,
    pub(crate) endpoints: Vec<String>,
    pub(crate) pin: bool,
    pub(crate) load: bool,
    pub(crate) memory: bool,
    /// Where the load-phase Flagpole gets its documents: "upstream" (a local upstream on
    /// loopback, polled) or "file" (`flagpole.documents`, watched).
    pub(crate) source: String,
    pub(crate) paths: Places,
    /// `flagpole.identity_cache.max_bytes` of the load-phase Flagpole (`None`: its default).
    pub(crate) identity_cache_bytes: Option<u64>,
}

pub(crate) const ALL_ENDPOINTS: &[&str] = &[
    "flags",
    "identities_get",
    "identities_post",
    "document",
    "document_gzip",
    "document_zstd",
];

/// Identities traffic whose identifiers repeat (Zipf, `zipf_identities.lua`); the limit server
/// answers them with its fixed `bench-user` bytes. Only run when named (or with `--zipf`).
pub(crate) const ZIPF_ENDPOINTS: &[&str] = &["identities_get_zipf", "identities_post_zipf"];

pub(crate) fn parse_opts() -> Opts {
    let mut o = Opts {
        quick: false,
        runs: 3,
        duration: 2,
        warmup: 1,
        concs: vec![10, 64, 200, 500],
        docs: vec!["tiny".into(), "small".into(), "medium".into()],
        endpoints: ALL_ENDPOINTS.iter().map(|s| s.to_string()).collect(),
        pin: true,
        load: true,
        memory: true,
        source: "upstream".into(),
        paths: Places::new("http", "target/profiling"),
        identity_cache_bytes: None,
    };
    let mut args = Args::new("http-bench");
    let (mut runs, mut duration) = (None, None);
    while let Some(a) = args.option() {
        match a.as_str() {
            "--quick" => o.quick = true,
            "--runs" => runs = args.parsed(),
            "--duration" => duration = args.parsed(),
            "--warmup" => o.warmup = args.parsed().unwrap_or(1),
            "--conc" => o.concs = args.integers("--conc"),
            "--docs" => o.docs = args.list(),
            "--endpoints" => o.endpoints = args.list(),
            "--zipf" => {
                o.endpoints = [
                    "identities_get",
                    "identities_get_zipf",
                    "identities_post",
                    "identities_post_zipf",
                ]
                .map(str::to_owned)
                .to_vec()
            }
            "--no-pin" => o.pin = false,
            "--no-load" => o.load = false,
            "--no-memory" => o.memory = false,
            "--source" => o.source = args.value("--source upstream|file"),
            "--identity-cache-bytes" => {
                o.identity_cache_bytes = Some(args.parsed().expect("--identity-cache-bytes N"));
            }
            other if o.paths.take(other, &mut args) => {}
            other => args.unknown(other),
        }
    }
    if o.quick {
        o.runs = 1;
        o.duration = 1;
    }
    if let Some(r) = runs {
        o.runs = r;
    }
    if let Some(d) = duration {
        o.duration = d;
    }
    assert!(
        o.source == "upstream" || o.source == "file",
        "--source upstream|file"
    );
    for e in &o.endpoints {
        assert!(
            ALL_ENDPOINTS.contains(&e.as_str()) || ZIPF_ENDPOINTS.contains(&e.as_str()),
            "unknown endpoint {e}"
        );
    }
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        o.pin = false;
    }
    o
}

fn main() {
    let o = parse_opts();
    std::fs::create_dir_all(&o.paths.work).expect("work dir");
    let docs = load_docs(&o.paths.docs_dir, &o.docs);
    let machine = json!({
        "nproc": sh("nproc"),
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
        "quick": o.quick, "runs": o.runs, "duration_s": o.duration, "warmup_s": o.warmup,
        "concurrency": o.concs, "documents": o.docs, "endpoints": o.endpoints,
        "load_source": o.source,
        "pinning": if o.pin { "servers on CPU 1, wrk (1 thread) on CPU 0" } else { "none; wrk 2 threads" },
    });
    eprintln!("[http-bench] {machine}\n[http-bench] {settings}");
    let started = Instant::now();

    let allocs: Value = {
        let bin = o.paths.bin_dir.join("alloc-count");
        let paths: Vec<String> = docs
            .iter()
            .map(|d| d.path.to_string_lossy().into_owned())
            .collect();
        Command::new(bin)
            .args(&paths)
            .output()
            .ok()
            .and_then(|out| serde_json::from_slice(&out.stdout).ok())
            .unwrap_or(json!({}))
    };
    println!("allocations per /identities request outside the HTTP stack: {allocs}");

    let cells = if o.load {
        load_matrix(&o, &docs)
    } else {
        Vec::new()
    };
    let mem = if o.memory {
        memory_and_updates(&o, &docs)
    } else {
        json!({})
    };
    let targets = verdicts(&cells, &mem, &allocs);
    println!("\n| target | result | verdict |\n|---|---|---|");
    for t in &targets {
        let verdict = match t["met"].as_bool() {
            Some(true) => "met",
            Some(false) => "**missed**",
            None => "n/a",
        };
        println!(
            "| {} | {} | {verdict} |",
            t["target"].as_str().unwrap(),
            t["result"].as_str().unwrap()
        );
    }
    let mut documents = BTreeMap::new();
    for d in &docs {
        documents.insert(d.name.clone(), json!({"bytes": d.bytes}));
    }
    let report = json!({
        "machine": machine,
        "settings": settings,
        "documents": documents,
        "cells": cells.iter().map(|c| json!({
            "document": c.doc, "endpoint": c.endpoint, "concurrency": c.conc,
            "ratio": round(c.ratio(), 3),
            "flagpole": c.flagpole.json(), "limit": c.limit.json(),
            "flagpole_runs": c.flagpole_runs.iter().map(Sample::json).collect::<Vec<_>>(),
            "limit_runs": c.limit_runs.iter().map(Sample::json).collect::<Vec<_>>(),
            "rss": c.rss.as_ref().map(Rss::json),
        })).collect::<Vec<_>>(),
        "allocations": allocs,
        "memory_and_updates": mem,
        "targets": targets,
        "elapsed_s": round(started.elapsed().as_secs_f64(), 1),
    });
    o.paths.write_report(&report, started);
}
