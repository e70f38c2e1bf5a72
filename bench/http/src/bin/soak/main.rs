//! `soak [options]`: the soak test behind `bench/soak.sh`. Not a CI test: run by hand.
//!
//! One Flagpole (the `profiling` build: release plus debug info) serves a seeded document as a
//! local file, on 127.0.0.1 only.
//! 1. Peak: a short wrk run (2 threads, 64 connections) of the mix below measures the peak RPS.
//! 2. Soak: for `--minutes`, an open-loop driver (the library's open_loop.rs; Debian's wrk 4.1
//!    has no `-R` and there is no wrk2 package, and a closed loop with fewer connections can
//!    neither hold a rate nor see stalls) sends `--fraction` (0.8) of that peak, spread evenly over `--conns`
//!    kept-alive connections: `GET /api/v1/flags/`, `GET` and `POST /api/v1/identities/`,
//!    `POST /ofrep/v1/evaluate/flags`, in equal parts, over 100,000 distinct identities.
//!    The document file is rewritten (a new value and `updated_at`) every `--rewrite` seconds.
//! 3. Every `--interval` seconds a sample: achieved RPS, errors (statuses outside 2xx/3xx, and
//!    socket errors and timeouts), p50/p99/max latency (from when each request was due), the
//!    server's VmRSS, the document swaps it logged so far, and the CPU the server and this
//!    driver used (on a shared machine, a p99 jump with both below their usual share means
//!    someone else took the CPU).
//!
//! Prints the samples as a Markdown table and a summary (RSS first/last/max and drift, errors,
//! p99 first vs last), writes JSON (`--out`). Every process it starts is stopped when it returns.
//!
//! Options (defaults in brackets): --minutes N [30]  --fraction F [0.8]  --rps R (skip the peak
//! run)  --conns N [50]  --threads N [1]  --peak-seconds S [5]  --interval S [10]
//! --rewrite S [10]  --doc NAME [small]  --out FILE [bench/out/soak.json]
//! --work DIR [bench/out/soak]  --docs-dir DIR [bench/out/docs]  --bin-dir DIR [target/profiling]
//! --lua-dir DIR [bench/http/lua]

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use serde_json::{json, Value};

mod mix;
mod rewrite;

use flagpole_http_bench::net::*;
use flagpole_http_bench::open_loop as load;
use flagpole_http_bench::procs::*;
use flagpole_http_bench::wrk_report::*;

struct Opts {
    minutes: f64,
    fraction: f64,
    rps: Option<f64>,
    conns: usize,
    threads: usize,
    peak_seconds: u64,
    interval: u64,
    rewrite: u64,
    doc: String,
    out: PathBuf,
    work: PathBuf,
    docs_dir: PathBuf,
    bin_dir: PathBuf,
    lua_dir: PathBuf,
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        minutes: 30.0,
        fraction: 0.8,
        rps: None,
        conns: 50,
        threads: 1,
        peak_seconds: 5,
        interval: 10,
        rewrite: 10,
        doc: "small".into(),
        out: "bench/out/soak.json".into(),
        work: "bench/out/soak".into(),
        docs_dir: "bench/out/docs".into(),
        bin_dir: "target/profiling".into(),
        lua_dir: "bench/http/lua".into(),
    };
    fn num<T: std::str::FromStr>(v: String, name: &str) -> T {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}: a number, not {v:?}"))
    }
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().unwrap_or_default();
        match a.as_str() {
            "--minutes" => o.minutes = num(v, &a),
            "--fraction" => o.fraction = num(v, &a),
            "--rps" => o.rps = Some(num(v, &a)),
            "--conns" => o.conns = num::<usize>(v, &a).max(1),
            "--threads" => o.threads = num::<usize>(v, &a).max(1),
            "--peak-seconds" => o.peak_seconds = num::<u64>(v, &a).max(1),
            "--interval" => o.interval = num::<u64>(v, &a).max(1),
            "--rewrite" => o.rewrite = num::<u64>(v, &a).max(1),
            "--doc" => o.doc = v,
            "--out" => o.out = v.into(),
            "--work" => o.work = v.into(),
            "--docs-dir" => o.docs_dir = v.into(),
            "--bin-dir" => o.bin_dir = v.into(),
            "--lua-dir" => o.lua_dir = v.into(),
            other => {
                eprintln!("soak: unknown argument {other:?} (see the source header)");
                std::process::exit(2);
            }
        }
    }
    o
}

/// One sample row.
struct Sample {
    t_s: f64,
    requests: u64,
    rps: f64,
    errors_status: u64,
    errors_socket: u64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    rss_mib: f64,
    swaps: u64,
    /// CPU use over the window, in % of one core: the server's and this driver's.
    server_cpu: f64,
    driver_cpu: f64,
}

impl Sample {
    fn of(
        window: load::Window,
        t_s: f64,
        seconds: f64,
        rss_kib: u64,
        swaps: u64,
        cpu: (f64, f64),
    ) -> Sample {
        let mut window = window;
        let mut pct = |p: f64| window.percentile_ms(p);
        let (p50_ms, p99_ms, max_ms) = (pct(50.0), pct(99.0), pct(100.0));
        let requests = window.requests;
        Sample {
            t_s,
            requests,
            rps: requests as f64 / seconds,
            errors_status: window.errors_status,
            errors_socket: window.errors_socket,
            p50_ms,
            p99_ms,
            max_ms,
            rss_mib: rss_kib as f64 / 1024.0,
            swaps,
            server_cpu: cpu.0 * 100.0 / seconds,
            driver_cpu: cpu.1 * 100.0 / seconds,
        }
    }

    fn row(&self) -> String {
        format!(
            "| {:.0} | {:.0} | {} | {} | {:.2} | {:.2} | {:.1} | {:.1} | {} | {:.0} | {:.0} |",
            self.t_s,
            self.rps,
            self.errors_status,
            self.errors_socket,
            self.p50_ms,
            self.p99_ms,
            self.max_ms,
            self.rss_mib,
            self.swaps,
            self.server_cpu,
            self.driver_cpu
        )
    }

    fn json(&self) -> Value {
        json!({
            "t_s": round(self.t_s, 1), "requests": self.requests, "rps": round(self.rps, 1),
            "errors_status": self.errors_status, "errors_socket": self.errors_socket,
            "p50_ms": round(self.p50_ms, 3), "p99_ms": round(self.p99_ms, 3),
            "max_ms": round(self.max_ms, 3), "rss_mib": round(self.rss_mib, 2), "swaps": self.swaps,
            "server_cpu_pct": round(self.server_cpu, 1), "driver_cpu_pct": round(self.driver_cpu, 1),
        })
    }
}

const TABLE_HEAD: &str = "| t (s) | RPS | errors | socket errors | p50 ms | p99 ms | max ms | RSS MiB | document swaps | server CPU % | driver CPU % |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|";

/// How many times the server logged a document load (the first load included).
fn loads_logged(log: &Path) -> u64 {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .matches("environment document loaded")
        .count() as u64
}

/// The peak RPS of the mix: one wrk run (2 threads, 64 connections).
fn peak(o: &Opts, port: u16, client_key: &str, server_key: &str) -> WrkReport {
    let script = o.work.join("soak_mix_report.lua");
    let mut text = std::fs::read_to_string(o.lua_dir.join("soak_mix.lua")).expect("soak_mix.lua");
    text.push('\n');
    text.push_str(&std::fs::read_to_string(o.lua_dir.join("report.lua")).expect("report.lua"));
    std::fs::write(&script, text).expect("write wrk script");
    let output = Command::new("wrk")
        .args(["-t", "2", "-c", "64", "-d"])
        .arg(format!("{}s", o.peak_seconds))
        .args(["--timeout", "10s", "-s"])
        .arg(&script)
        .arg(format!("http://127.0.0.1:{port}/"))
        .args(["--", client_key, server_key])
        .output()
        .expect("run wrk");
    WrkReport::from_output(&output)
}

fn main() {
    let o = parse_opts();
    std::fs::create_dir_all(&o.work).expect("work dir");
    let source = o.docs_dir.join(format!("{}.json", o.doc));
    let doc: Value = serde_json::from_slice(
        &std::fs::read(&source).unwrap_or_else(|e| panic!("{}: {e}", source.display())),
    )
    .expect("document JSON");
    let client_key = doc["api_key"].as_str().expect("api_key").to_owned();
    let server_key = format!("ser.soak-{}", o.doc);
    let live = std::path::absolute(o.work.join("live.json")).expect("path");
    std::fs::write(&live, serde_json::to_vec(&doc).unwrap()).expect("write document");

    let port = free_port();
    let config = o.work.join("config.json");
    let config_json = json!({
        "environment_key_pairs": [{"server_side_key": server_key, "client_side_key": client_key}],
        "server": {"host": "127.0.0.1", "port": port},
        "flagpole": {"documents": [{"path": live}]},
    });
    std::fs::write(&config, serde_json::to_vec_pretty(&config_json).unwrap()).expect("config");
    let log = o.work.join("flagpole.log");
    let bin = o.bin_dir.join("flagpole");
    let config_s = config.to_string_lossy().into_owned();
    let server = spawn(
        "flagpole (soak)",
        command(None, &bin, &["serve", "--config", &config_s]),
        &log,
    );
    let pid = server.pid();
    // For bench/soak.sh: should this driver be killed, the script stops the server by this id.
    std::fs::write(o.work.join("flagpole.pid"), pid.to_string()).expect("pid file");
    wait_serving(port, &o.doc, &client_key);

    let (peak_report, target) = match o.rps {
        Some(rps) => (None, rps),
        None => {
            eprintln!(
                "[soak] measuring the peak: wrk, {} s, 64 connections",
                o.peak_seconds
            );
            let report = peak(&o, port, &client_key, &server_key);
            let target = report.rps * o.fraction;
            eprintln!(
                "[soak] peak {:.0} RPS (p99 {:.2} ms, {} errors); soaking at {:.0} RPS",
                report.rps,
                report.p99_ms,
                report.errors_status + report.errors_socket,
                target
            );
            (Some(report), target)
        }
    };

    let duration = Duration::from_secs_f64(o.minutes * 60.0);
    let plan = load::Plan {
        port,
        rate: target,
        conns: o.conns,
        threads: o.threads,
        duration,
    };
    let shared = load::Shared::default();
    let loads_before = loads_logged(&log);
    let started = Instant::now();
    let (runtime, tasks) = load::start(
        &plan,
        mix::requests(&client_key, &server_key),
        shared.clone(),
    );
    let rewriter = rewrite::start(
        live.clone(),
        doc,
        Duration::from_secs(o.rewrite),
        started,
        started + duration,
    );
    eprintln!(
        "[soak] {:.1} min at {target:.0} RPS over {} connections; a sample every {} s",
        o.minutes, o.conns, o.interval
    );
    println!("{TABLE_HEAD}");
    let mut samples: Vec<Sample> = Vec::new();
    let interval = Duration::from_secs(o.interval);
    let mut last = started;
    let self_pid = std::process::id();
    let mut cpu_last = (cpu_seconds(pid), cpu_seconds(self_pid));
    let mut k = 1u32;
    loop {
        let at = (started + interval * k).min(started + duration);
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        let window = std::mem::take(&mut *shared.lock().unwrap());
        let now = Instant::now();
        let swaps = loads_logged(&log).saturating_sub(loads_before);
        let cpu_now = (cpu_seconds(pid), cpu_seconds(self_pid));
        let sample = Sample::of(
            window,
            (now - started).as_secs_f64(),
            (now - last).as_secs_f64(),
            rss_kib(pid),
            swaps,
            (cpu_now.0 - cpu_last.0, cpu_now.1 - cpu_last.1),
        );
        cpu_last = cpu_now;
        println!("{}", sample.row());
        samples.push(sample);
        last = now;
        k += 1;
        if at >= started + duration {
            break;
        }
    }
    for task in tasks {
        let _ = runtime.block_on(task);
    }
    // Anything answered after the last sample.
    let tail = std::mem::take(&mut *shared.lock().unwrap());
    let late = tail.requests;
    drop(runtime);
    let rewrites = rewriter.join().expect("rewriter");
    let panicked = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .matches("panicked")
        .count();
    drop(server);

    report(
        &o,
        target,
        peak_report.as_ref(),
        &samples,
        rewrites,
        late,
        panicked,
    );
}

fn report(
    o: &Opts,
    target: f64,
    peak: Option<&WrkReport>,
    samples: &[Sample],
    rewrites: u64,
    late: u64,
    panicked: usize,
) {
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        return;
    };
    let max_rss = samples.iter().map(|s| s.rss_mib).fold(0.0, f64::max);
    let requests: u64 = samples.iter().map(|s| s.requests).sum::<u64>() + late;
    let errors_status: u64 = samples.iter().map(|s| s.errors_status).sum();
    let errors_socket: u64 = samples.iter().map(|s| s.errors_socket).sum();
    let seconds = last.t_s;
    let drift = last.rss_mib - first.rss_mib;
    // The first sample includes warm-up (connections opening, first evaluations): judge the
    // drift from the second one as well.
    let settled = samples.get(1).unwrap_or(first);
    println!();
    println!(
        "Summary ({:.1} min, target {target:.0} RPS):",
        seconds / 60.0
    );
    println!();
    println!("| | |\n|---|---|");
    if let Some(p) = peak {
        println!(
            "| peak (wrk, 64 connections) | {:.0} RPS, p99 {:.2} ms |",
            p.rps, p.p99_ms
        );
    }
    println!(
        "| achieved | {:.0} RPS ({requests} requests) |",
        requests as f64 / seconds.max(1e-9)
    );
    println!(
        "| RSS first / last / max | {:.1} / {:.1} / {:.1} MiB |",
        first.rss_mib, last.rss_mib, max_rss
    );
    println!(
        "| RSS drift | {drift:+.1} MiB from the first sample, {:+.1} MiB from the second |",
        last.rss_mib - settled.rss_mib
    );
    println!("| errors | {errors_status} non-2xx/3xx, {errors_socket} socket/timeout |");
    println!(
        "| p99 first / last | {:.2} / {:.2} ms |",
        first.p99_ms, last.p99_ms
    );
    println!(
        "| document rewrites / swaps logged | {rewrites} / {} |",
        last.swaps
    );
    println!("| server panics logged | {panicked} |");

    let out = json!({
        "config": {
            "minutes": o.minutes, "fraction": o.fraction, "conns": o.conns, "threads": o.threads,
            "interval_s": o.interval, "rewrite_s": o.rewrite, "doc": o.doc, "target_rps": round(target, 1),
            "mix": mix::KINDS,
        },
        "peak": peak.map(|p| json!({"rps": round(p.rps, 1), "p99_ms": round(p.p99_ms, 3),
            "errors": p.errors_status + p.errors_socket})),
        "samples": samples.iter().map(Sample::json).collect::<Vec<_>>(),
        "summary": {
            "seconds": round(seconds, 1), "requests": requests,
            "achieved_rps": round(requests as f64 / seconds.max(1e-9), 1),
            "rss_first_mib": round(first.rss_mib, 2), "rss_last_mib": round(last.rss_mib, 2),
            "rss_max_mib": round(max_rss, 2), "rss_drift_mib": round(drift, 2),
            "rss_drift_from_second_mib": round(last.rss_mib - settled.rss_mib, 2),
            "errors_status": errors_status, "errors_socket": errors_socket,
            "p99_first_ms": round(first.p99_ms, 3), "p99_last_ms": round(last.p99_ms, 3),
            "rewrites": rewrites, "swaps_logged": last.swaps, "panics": panicked,
        },
    });
    if let Some(dir) = o.out.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(&o.out, serde_json::to_vec_pretty(&out).unwrap()).expect("write report");
    eprintln!("[soak] wrote {}", o.out.display());
}
