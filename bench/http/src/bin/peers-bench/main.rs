//! `peers-bench [options]`: the Flagsmith Edge Proxy beside Flagpole, behind `bench/peers.sh`.
//!
//! On 127.0.0.1 only: a local upstream (a Flagpole serving the seeded document files), then the
//! Python Edge Proxy (run from its source tree) and Flagpole, both reading the same
//! `config.json` (the Edge Proxy's format: key pairs, `api_url` of the upstream), both pinned to
//! the same CPU, wrk on the other. After checking that both give the same flags, the same wrk
//! load is run against each in turn (alternating which goes first): `/flags`, `/identities` GET
//! and POST, identities that never repeat, and `/environment-document` plain and gzipped. Prints
//! RPS, p99 and server CPU per request side by side with ratios, start-up and memory; writes a
//! JSON report. With `--rate`, the constant-rate phase (rate.rs) follows. Every process it
//! starts is stopped when it returns.
//!
//! Options (defaults in brackets):
//!   --edge-proxy-src DIR  a checkout of Flagsmith/edge-proxy (without it: Flagpole alone)
//!   --python PATH [python3]  an interpreter with the Edge Proxy's requirements installed
//!   --docs tiny,small,medium  --endpoints flags,identities_get,identities_post,
//!   identities_get_new,identities_post_new,document,document_gzip  --conc 10
//!   --runs N [1]  --duration S [5]  --warmup S [1]  --no-pin  --rate  --rate-only
//!   --rate-fraction F [0.8]  --rate-seconds S [10]  --rate-docs LIST [tiny,small]
//!   --out FILE [bench/out/peers.json]  --work DIR [bench/out/peers]
//!   --docs-dir DIR [bench/out/docs]  --bin-dir DIR [target/release]  --lua-dir DIR [bench/http/lua]

use std::path::PathBuf;
use std::time::Instant;

use serde_json::{json, Value};

mod rate;
mod servers;

use flagpole_http_bench::args::{Args, Places};
use flagpole_http_bench::procs::{cpu_seconds, rss_kib, sh};
use flagpole_http_bench::setup::{load_docs, Doc};
use flagpole_http_bench::wrk_report::round;
use flagpole_http_bench::wrk_run::{
    self, measure, ms, settle, summarise, Sample, SERVER_CPU, WRK_CPU,
};
use servers::*;

pub(crate) struct Opts {
    pub(crate) edge_proxy_src: Option<PathBuf>,
    pub(crate) python: PathBuf,
    pub(crate) docs: Vec<String>,
    pub(crate) endpoints: Vec<String>,
    pub(crate) concs: Vec<usize>,
    pub(crate) runs: usize,
    pub(crate) duration: u64,
    pub(crate) warmup: u64,
    pub(crate) pin: bool,
    pub(crate) load: bool,
    pub(crate) rate: bool,
    pub(crate) rate_fraction: f64,
    pub(crate) rate_seconds: u64,
    pub(crate) rate_docs: Vec<String>,
    pub(crate) paths: Places,
}

impl Opts {
    pub(crate) fn server_cpu(&self) -> Option<usize> {
        self.pin.then_some(SERVER_CPU)
    }
}

const ENDPOINTS: &[&str] = &[
    "flags",
    "identities_get",
    "identities_post",
    "identities_get_new",
    "identities_post_new",
    "document",
    "document_gzip",
];

fn parse_opts() -> Opts {
    let mut o = Opts {
        edge_proxy_src: None,
        python: "python3".into(),
        docs: vec!["tiny".into(), "small".into(), "medium".into()],
        endpoints: ENDPOINTS.iter().map(|s| s.to_string()).collect(),
        concs: vec![10],
        runs: 1,
        duration: 5,
        warmup: 1,
        // The machine's CPUs, not this process's (the script pins the driver to CPU 0).
        pin: sh("nproc --all").parse::<usize>().unwrap_or(1) >= 2,
        load: true,
        rate: false,
        rate_fraction: 0.8,
        rate_seconds: 10,
        rate_docs: vec!["tiny".into(), "small".into()],
        paths: Places::new("peers", "target/release"),
    };
    let mut args = Args::new("peers-bench");
    // Whole numbers are read as numbers and cut, as they always were (`--runs 2.5` is 2).
    let whole = |args: &mut Args, option: &str| args.number::<f64>(option) as u64;
    while let Some(a) = args.option() {
        match a.as_str() {
            "--edge-proxy-src" => o.edge_proxy_src = args.option().map(PathBuf::from),
            "--python" => o.python = args.value("--python PATH").into(),
            "--docs" => o.docs = args.list(),
            "--endpoints" => o.endpoints = args.list(),
            "--conc" => o.concs = args.integers("--conc"),
            "--runs" => o.runs = whole(&mut args, "--runs") as usize,
            "--duration" => o.duration = whole(&mut args, "--duration"),
            "--warmup" => o.warmup = whole(&mut args, "--warmup"),
            "--no-pin" => o.pin = false,
            "--rate" => o.rate = true,
            "--rate-only" => (o.rate, o.load) = (true, false),
            "--rate-fraction" => o.rate_fraction = args.number("--rate-fraction"),
            "--rate-seconds" => o.rate_seconds = whole(&mut args, "--rate-seconds"),
            "--rate-docs" => o.rate_docs = args.list(),
            other if o.paths.take(other, &mut args) => {}
            other => args.unknown(other),
        }
    }
    for e in &o.endpoints {
        assert!(ENDPOINTS.contains(&e.as_str()), "unknown endpoint {e}");
    }
    o
}

// ---------------------------------------------------------------------------------------------
// Endpoints and the wrk load

pub(crate) const POST_BODY: &str = r#"{"identifier":"bench-user","traits":[{"trait_key":"plan","trait_value":"enterprise"},{"trait_key":"age","trait_value":42},{"trait_key":"app_version","trait_value":"2.4.1"}]}"#;

/// How wrk makes an endpoint's requests: the path, the key it sends, the script and its
/// argument, and whether it asks for gzip.
struct Endpoint {
    name: &'static str,
    path: &'static str,
    server_key: bool,
    script: &'static str,
    script_arg: Option<&'static str>,
    gzip: bool,
}

fn endpoint(name: &str) -> Endpoint {
    let e = |path, script, script_arg| Endpoint {
        name: ENDPOINTS
            .iter()
            .find(|e| **e == name)
            .expect("known endpoint"),
        path,
        server_key: false,
        script,
        script_arg,
        gzip: false,
    };
    // The Edge Proxy routes the document without the trailing slash (with it, a redirect);
    // Flagpole takes both.
    let document = |gzip| Endpoint {
        server_key: true,
        gzip,
        ..e("/api/v1/environment-document", "report", None)
    };
    match name {
        "flags" => e("/api/v1/flags/", "report", None),
        // One identity, the same every request.
        "identities_get" => e("/api/v1/identities/?identifier=bench-user", "report", None),
        // 1,000 identifiers per wrk thread, cycled.
        "identities_post" => e("/api/v1/identities/", "post_identities", None),
        // A new identifier every request.
        "identities_get_new" => e("/api/v1/identities/", "unique_identities", Some("get")),
        "identities_post_new" => e("/api/v1/identities/", "unique_identities", Some("post")),
        "document" => document(false),
        "document_gzip" => document(true),
        _ => unreachable!(),
    }
}

/// wrk's arguments for one run (the script with `report.lua` appended, written once).
fn wrk_args(o: &Opts, port: u16, doc: &Doc, ep: &Endpoint, conc: usize, secs: u64) -> Vec<String> {
    let script = o.paths.work.join(format!("{}_report.lua", ep.script));
    if !script.exists() {
        let mut text = String::new();
        if ep.script != "report" {
            text = std::fs::read_to_string(o.paths.lua_dir.join(format!("{}.lua", ep.script)))
                .unwrap();
            text.push('\n');
        }
        text.push_str(&std::fs::read_to_string(o.paths.lua_dir.join("report.lua")).unwrap());
        std::fs::write(&script, text).unwrap();
    }
    let key = if ep.server_key {
        &doc.server_key
    } else {
        &doc.client_key
    };
    let threads = if o.pin { 1 } else { 2 };
    // A Python proxy answers a large document in seconds: no run may count it a timeout.
    let mut args = wrk_run::wrk_args(threads, conc, secs, "60s", &script, key);
    if ep.gzip {
        args.extend(["-H".into(), "Accept-Encoding: gzip".into()]);
    }
    args.push(format!("http://127.0.0.1:{port}{}", ep.path));
    if let Some(arg) = ep.script_arg {
        args.extend(["--".into(), arg.into()]);
    }
    args
}

struct Cell {
    doc: String,
    endpoint: &'static str,
    conc: usize,
    /// Per server, in `servers` order: the median of the runs, and the runs.
    results: Vec<(Sample, Vec<Sample>)>,
}

fn load_matrix(o: &Opts, docs: &[Doc], servers: &[Server]) -> Vec<Cell> {
    let wrk_cpu = o.pin.then_some(WRK_CPU);
    let mut cells = Vec::new();
    let mut flip = 0usize;
    print_header(servers);
    for d in docs {
        for name in &o.endpoints {
            let ep = endpoint(name);
            for s in servers {
                if o.warmup > 0 {
                    measure(
                        wrk_cpu,
                        &wrk_args(o, s.port, d, &ep, 10, o.warmup),
                        s.proc.pid(),
                    );
                    settle(s.proc.pid(), SETTLE_LIMIT);
                }
            }
            for &conc in &o.concs {
                let mut runs: Vec<Vec<Sample>> = vec![Vec::new(); servers.len()];
                for _ in 0..o.runs {
                    flip += 1;
                    let mut order: Vec<usize> = (0..servers.len()).collect();
                    if flip.is_multiple_of(2) {
                        order.reverse();
                    }
                    for i in order {
                        runs[i].push(run_enough(o, &servers[i], d, &ep, conc));
                    }
                }
                let cell = Cell {
                    doc: d.name.clone(),
                    endpoint: ep.name,
                    conc,
                    results: runs.into_iter().map(|r| (summarise(&r), r)).collect(),
                };
                print_row(&cell);
                cells.push(cell);
            }
        }
    }
    cells
}

/// Fewest responses a run must count: a run that gets fewer (a Python proxy on a large
/// document answers a few a second) is done again, long enough for them, up to a minute.
const MIN_RESPONSES: u64 = 20;
const MAX_SECONDS: u64 = 60;
/// The longest wait for a server to finish what a run left queued.
pub(crate) const SETTLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

fn run_enough(o: &Opts, s: &Server, d: &Doc, ep: &Endpoint, conc: usize) -> Sample {
    let wrk_cpu = o.pin.then_some(WRK_CPU);
    let mut secs = o.duration;
    loop {
        let sample = measure(
            wrk_cpu,
            &wrk_args(o, s.port, d, ep, conc, secs),
            s.proc.pid(),
        );
        settle(s.proc.pid(), SETTLE_LIMIT);
        if sample.requests >= MIN_RESPONSES || secs >= MAX_SECONDS {
            return sample;
        }
        let rate = (sample.requests as f64 / secs as f64).max(0.5);
        secs = ((MIN_RESPONSES as f64 * 1.2 / rate).ceil() as u64).clamp(secs + 1, MAX_SECONDS);
        eprintln!(
            "[peers-bench] {} {} {}: {} responses, again for {secs} s",
            s.label, d.name, ep.name, sample.requests
        );
    }
}

fn print_header(servers: &[Server]) {
    println!();
    if servers.len() == 2 {
        println!("| doc | endpoint | c | Edge Proxy RPS | Flagpole RPS | RPS × | Edge Proxy p99 ms | Flagpole p99 ms | CPU µs/req Edge Proxy | CPU µs/req Flagpole | CPU ÷ | errors E/F |");
        println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    } else {
        println!("| doc | endpoint | c | Flagpole RPS | p50 / p99 ms | CPU µs/req | errors |");
        println!("|---|---|---:|---:|---:|---:|---:|");
    }
}

fn ratio(a: f64, b: f64) -> String {
    if b <= 0.0 {
        return "–".into();
    }
    let r = a / b;
    if r >= 100.0 {
        format!("{r:.0}")
    } else if r >= 10.0 {
        format!("{r:.1}")
    } else {
        format!("{r:.2}")
    }
}

fn errors(s: &Sample) -> u64 {
    s.non2xx + s.socket_errors
}

fn print_row(c: &Cell) {
    match &c.results[..] {
        [(e, _), (f, _)] => println!(
            "| {} | {} | {} | {:.0} | {:.0} | {} | {} | {} | {:.0} | {:.1} | {} | {}/{} |",
            c.doc,
            c.endpoint,
            c.conc,
            e.rps,
            f.rps,
            ratio(f.rps, e.rps),
            ms(e.p99_ms),
            ms(f.p99_ms),
            e.cpu_us_per_req,
            f.cpu_us_per_req,
            ratio(e.cpu_us_per_req, f.cpu_us_per_req),
            errors(e),
            errors(f),
        ),
        [(f, _)] => println!(
            "| {} | {} | {} | {:.0} | {} / {} | {:.1} | {} |",
            c.doc,
            c.endpoint,
            c.conc,
            f.rps,
            ms(f.p50_ms),
            ms(f.p99_ms),
            f.cpu_us_per_req,
            errors(f),
        ),
        _ => unreachable!("one or two servers"),
    }
}

fn main() {
    let o = parse_opts();
    std::fs::create_dir_all(&o.paths.work).expect("work dir");
    let docs = load_docs(&o.paths.docs_dir, &o.docs);
    let machine = json!({
        "nproc": sh("nproc --all"),
        "cpu": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"),
        "wrk": sh("wrk -v 2>&1 | head -1"),
        "python": sh(&format!("{} --version 2>&1", o.python.display())),
        "edge_proxy": o.edge_proxy_src.as_ref().map(|s| sh(&format!("git -C '{}' describe --tags 2>/dev/null", s.display()))),
        "kernel": sh("uname -r"),
        "load_average_at_start": sh("cut -d' ' -f1-3 /proc/loadavg"),
        "commit": sh("git rev-parse --short HEAD 2>/dev/null"),
    });
    eprintln!("[peers-bench] {machine}");
    let started = Instant::now();

    let (upstream, upstream_port) = start_upstream(&o, &docs);
    let edge_port = flagpole_http_bench::procs::free_port();
    let config = write_config(&o, &docs, upstream_port, edge_port);
    let mut servers = Vec::new();
    if let Some(src) = &o.edge_proxy_src {
        servers.push(start_edge_proxy(&o, src, &config, edge_port, &docs));
    }
    servers.push(start_peer(&o, &config, &docs));
    let differences = match &servers[..] {
        [edge, flagpole] => {
            let d = compare_answers(edge, flagpole, &docs, POST_BODY);
            if d.is_empty() {
                println!("Both proxies give the same flags for every document (/flags, /identities GET and POST).");
            } else {
                println!("**The proxies' flags differ**: {}", d.join("; "));
            }
            json!(d)
        }
        _ => Value::Null,
    };

    let cells = if o.load {
        load_matrix(&o, &docs, &servers)
    } else {
        Vec::new()
    };
    let rate = if o.rate {
        rate::constant_rate(&o, &docs, &servers)
    } else {
        json!([])
    };

    println!("\n| proxy | ready with every document (s) | RSS after the runs (MiB) | CPU used in all (s) |");
    println!("|---|---:|---:|---:|");
    let mut summary = Vec::new();
    for s in &servers {
        let rss = rss_kib(s.proc.pid()) as f64 / 1024.0;
        let cpu = cpu_seconds(s.proc.pid());
        println!(
            "| {} | {:.2} | {:.1} | {:.1} |",
            s.label,
            s.ready.as_secs_f64(),
            rss,
            cpu
        );
        summary.push(
            json!({"proxy": s.label, "ready_s": round(s.ready.as_secs_f64(), 3),
                            "rss_mib": round(rss, 1), "cpu_s": round(cpu, 2)}),
        );
    }
    drop(servers);
    drop(upstream);

    let labels: Vec<&str> = if o.edge_proxy_src.is_some() {
        vec!["edge_proxy", "flagpole"]
    } else {
        vec!["flagpole"]
    };
    let report = json!({
        "machine": machine,
        "settings": {"runs": o.runs, "duration_s": o.duration, "warmup_s": o.warmup,
                     "concurrency": o.concs, "documents": o.docs, "endpoints": o.endpoints,
                     "pinning": if o.pin { "proxies on CPU 1, wrk (1 thread) on CPU 0" } else { "none" }},
        "documents": docs.iter().map(|d| json!({"name": d.name, "bytes": d.bytes})).collect::<Vec<_>>(),
        "answers_differ": differences,
        "cells": cells.iter().map(|c| {
            let mut cell = json!({"document": c.doc, "endpoint": c.endpoint, "concurrency": c.conc});
            for (label, (median, runs)) in labels.iter().zip(&c.results) {
                cell[*label] = json!({"median": median.json(),
                                      "runs": runs.iter().map(Sample::json).collect::<Vec<_>>()});
            }
            cell
        }).collect::<Vec<_>>(),
        "constant_rate": rate,
        "proxies": summary,
        "elapsed_s": round(started.elapsed().as_secs_f64(), 1),
    });
    o.paths.write_report(&report, started);
}
