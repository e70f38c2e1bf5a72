//! Latency at a constant rate (`--rate`): for each proxy, document and endpoint, the peak rate
//! (wrk, 64 connections, 3 s), then `--rate-fraction` (0.8) of that peak held for
//! `--rate-seconds` by the open-loop driver (the library's `open_loop`: latency from when each
//! request was due, so a stall is not hidden), over 64 kept-alive connections. Reports p50, p99
//! and the largest latency, the rate achieved, errors and the server's CPU per request.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use flagpole_http_bench::open_loop::{self, get, post, Plan, Requests, Shared};
use flagpole_http_bench::procs::cpu_seconds;
use flagpole_http_bench::wrk_report::round;
use flagpole_http_bench::wrk_run::{measure, ms, settle, WRK_CPU};

use crate::{endpoint, wrk_args, Doc, Opts, Server, SETTLE_LIMIT};

const ENDPOINTS: [&str; 4] = [
    "flags",
    "identities_get",
    "identities_get_new",
    "identities_post_new",
];
const CONNS: usize = 64;
const PEAK_SECONDS: u64 = 3;
/// A peak run with fewer responses gives no rate to hold (the row is left empty).
const MIN_PEAK_RESPONSES: u64 = 30;

/// The open-loop requests of an endpoint: the same as wrk's (`identities_*_new`: an identifier
/// no other request uses).
fn requests(name: &str, doc: &Doc) -> Requests {
    const TRAITS: &str = r#"[{"trait_key":"plan","trait_value":"enterprise"},{"trait_key":"age","trait_value":42},{"trait_key":"app_version","trait_value":"2.4.1"}]"#;
    let key = doc.client_key.clone();
    match name {
        "flags" => {
            let r = get("/api/v1/flags/", &key);
            Arc::new(move |_, _| r.clone())
        }
        "identities_get" => {
            let r = get("/api/v1/identities/?identifier=bench-user", &key);
            Arc::new(move |_, _| r.clone())
        }
        "identities_get_new" => Arc::new(move |c, k| {
            get(
                &format!("/api/v1/identities/?identifier=rate-{c}-{k}"),
                &key,
            )
        }),
        "identities_post_new" => Arc::new(move |c, k| {
            let body = format!(r#"{{"identifier":"rate-{c}-{k}","traits":{TRAITS}}}"#);
            post("/api/v1/identities/", "X-Environment-Key", &key, &body)
        }),
        _ => unreachable!(),
    }
}

pub(crate) fn constant_rate(o: &Opts, docs: &[Doc], servers: &[Server]) -> Value {
    println!(
        "\nLatency at {:.0} % of the peak rate (open loop, {CONNS} connections, {} s; the peak: wrk, 64 connections, {PEAK_SECONDS} s):\n",
        o.rate_fraction * 100.0,
        o.rate_seconds
    );
    println!("| proxy | doc | endpoint | peak RPS | target RPS | achieved RPS | p50 ms | p99 ms | max ms | errors | server CPU µs/req |");
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut rows = Vec::new();
    for d in docs.iter().filter(|d| o.rate_docs.contains(&d.name)) {
        for name in ENDPOINTS {
            for s in servers {
                let args = wrk_args(o, s.port, d, &endpoint(name), CONNS, PEAK_SECONDS);
                let peak = measure(o.pin.then_some(WRK_CPU), &args, s.proc.pid());
                settle(s.proc.pid(), SETTLE_LIMIT);
                if peak.requests < MIN_PEAK_RESPONSES {
                    println!(
                        "| {} | {} | {name} | {:.1} | – | – | – | – | – | – | – |",
                        s.label, d.name, peak.rps
                    );
                    continue;
                }
                let target = peak.rps * o.rate_fraction;
                let plan = Plan {
                    port: s.port,
                    rate: target,
                    conns: CONNS,
                    threads: 1,
                    duration: Duration::from_secs(o.rate_seconds),
                };
                let shared = Shared::default();
                let cpu0 = cpu_seconds(s.proc.pid());
                let (runtime, tasks) = open_loop::start(&plan, requests(name, d), shared.clone());
                for task in tasks {
                    let _ = runtime.block_on(task);
                }
                drop(runtime);
                let cpu = cpu_seconds(s.proc.pid()) - cpu0;
                settle(s.proc.pid(), SETTLE_LIMIT);
                let mut w = std::mem::take(&mut *shared.lock().unwrap());
                let achieved = w.requests as f64 / o.rate_seconds as f64;
                let (p50, p99, max) = (
                    w.percentile_ms(50.0),
                    w.percentile_ms(99.0),
                    w.percentile_ms(100.0),
                );
                let errors = w.errors_status + w.errors_socket;
                let cpu_us = cpu * 1e6 / (w.requests.max(1) as f64);
                println!(
                    "| {} | {} | {name} | {:.0} | {:.0} | {:.0} | {} | {} | {} | {errors} | {:.1} |",
                    s.label,
                    d.name,
                    peak.rps,
                    target,
                    achieved,
                    ms(p50),
                    ms(p99),
                    ms(max),
                    cpu_us
                );
                rows.push(json!({
                    "proxy": s.label, "document": d.name, "endpoint": name,
                    "peak_rps": round(peak.rps, 1), "target_rps": round(target, 1),
                    "achieved_rps": round(achieved, 1), "p50_ms": round(p50, 3),
                    "p99_ms": round(p99, 3), "max_ms": round(max, 3), "errors": errors,
                    "server_cpu_us_per_request": round(cpu_us, 2),
                }));
            }
        }
    }
    json!(rows)
}
