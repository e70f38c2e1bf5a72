//! Revalidation throughput: `/api/v1/flags/` vs OFREP bulk 304 (and 200), side by side on one
//! Flagpole, driven by wrk.

use serde_json::{json, Value};

use flagpole_http_bench::wrk_run::wrk_args;

use super::*;

#[derive(Clone, Debug, Default)]
struct Sample {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    requests: u64,
    /// Status ≥ 400 (wrk counts nothing below as an error: a 304 is a success here).
    errors_status: u64,
    errors_socket: u64,
    server_cpu_us_per_req: f64,
}

impl Sample {
    fn json(&self) -> Value {
        json!({
            "rps": round(self.rps, 1), "p50_ms": round(self.p50_ms, 3),
            "p99_ms": round(self.p99_ms, 3), "requests": self.requests,
            "errors_status": self.errors_status, "errors_socket": self.errors_socket,
            "server_cpu_us_per_request": round(self.server_cpu_us_per_req, 2),
        })
    }
}

fn summarise(xs: &[Sample]) -> Sample {
    let m = |f: fn(&Sample) -> f64| median(xs.iter().map(f).collect());
    Sample {
        rps: m(|s| s.rps),
        p50_ms: m(|s| s.p50_ms),
        p99_ms: m(|s| s.p99_ms),
        server_cpu_us_per_req: m(|s| s.server_cpu_us_per_req),
        requests: xs.iter().map(|s| s.requests).sum(),
        errors_status: xs.iter().map(|s| s.errors_status).sum(),
        errors_socket: xs.iter().map(|s| s.errors_socket).sum(),
    }
}

/// The three request kinds measured.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Flags,
    Ofrep304,
    Ofrep200,
}

const KINDS: [Kind; 3] = [Kind::Flags, Kind::Ofrep304, Kind::Ofrep200];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Flags => "flags",
            Kind::Ofrep304 => "ofrep_bulk_304",
            Kind::Ofrep200 => "ofrep_bulk_200",
        }
    }
}

struct Scripts {
    report: PathBuf,
    ofrep: PathBuf,
}

#[allow(
    clippy::too_many_arguments,
    reason = "one run's settings, passed as the driver's loop has them"
)]
fn run_wrk(
    o: &Opts,
    scripts: &Scripts,
    port: u16,
    pid: u32,
    doc: &Doc,
    etag: &str,
    kind: Kind,
    conc: usize,
    secs: u64,
) -> Sample {
    let threads = if o.pin { 1 } else { 2 };
    let (path, script) = match kind {
        Kind::Flags => ("/api/v1/flags/", &scripts.report),
        Kind::Ofrep304 | Kind::Ofrep200 => ("/ofrep/v1/evaluate/flags", &scripts.ofrep),
    };
    let mut args = wrk_args(threads, conc, secs, "20s", script, &doc.client_key);
    if kind == Kind::Ofrep304 {
        args.push("-H".into());
        args.push(format!("If-None-Match: {etag}"));
    }
    args.push(format!("http://127.0.0.1:{port}{path}"));
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let cpu0 = cpu_seconds(pid);
    let output = command(o.pin.then_some(0), Path::new("wrk"), &arg_refs)
        .output()
        .expect("run wrk");
    let cpu1 = cpu_seconds(pid);
    let report = WrkReport::from_output(&output);
    Sample {
        rps: report.rps,
        p50_ms: report.p50_ms,
        p99_ms: report.p99_ms,
        requests: report.requests,
        errors_status: report.errors_status,
        errors_socket: report.errors_socket,
        server_cpu_us_per_req: report.cpu_us_per_req(cpu0, cpu1),
    }
}

pub(crate) fn revalidation(o: &Opts) -> Value {
    let docs = load_docs(&o.paths.docs_dir, &o.docs);
    let report = o.paths.lua_dir.join("report.lua");
    let ofrep = o.paths.work.join("ofrep_bulk_report.lua");
    let mut script = std::fs::read_to_string(o.paths.lua_dir.join("ofrep_bulk.lua")).unwrap();
    script.push('\n');
    script.push_str(&std::fs::read_to_string(&report).unwrap());
    std::fs::write(&ofrep, script).unwrap();
    let scripts = Scripts { report, ofrep };

    let refs: Vec<&Doc> = docs.iter().collect();
    let (p, port, _) = start_flagpole(o, "revalidation", &refs, json!({}));
    let mut cells = Vec::new();
    println!(
        "\n### Revalidation: `/api/v1/flags/` vs OFREP bulk with `If-None-Match` (304), one Flagpole, median of {} × {} s\n",
        o.runs, o.duration
    );
    println!("| document | c | /api/v1/flags/ RPS | OFREP bulk 304 RPS | 304 / flags | per-run ratios | OFREP bulk 200 RPS | p99 ms flags / 304 / 200 | server CPU µs/req flags / 304 / 200 |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for doc in &docs {
        // The ETag of the benchmark context, and a check that it does yield 304s.
        let first = bulk(port, doc, None);
        assert_eq!(first.status, 200, "OFREP bulk on {}", doc.name);
        let etag = first.header("etag").expect("an ETag").to_owned();
        let again = bulk(port, doc, Some(&etag));
        assert_eq!(again.status, 304, "If-None-Match on {}", doc.name);
        for &conc in &o.concs {
            for kind in KINDS {
                if o.warmup > 0 {
                    run_wrk(o, &scripts, port, p.pid(), doc, &etag, kind, conc, o.warmup);
                }
            }
            let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); KINDS.len()];
            for run in 0..o.runs {
                // Alternate which kind goes first.
                for i in 0..KINDS.len() {
                    let k = (i + run) % KINDS.len();
                    let s = run_wrk(
                        o,
                        &scripts,
                        port,
                        p.pid(),
                        doc,
                        &etag,
                        KINDS[k],
                        conc,
                        o.duration,
                    );
                    samples[k].push(s);
                }
            }
            // Still a 304 after the runs (same revision, same context).
            assert_eq!(bulk(port, doc, Some(&etag)).status, 304);
            let s: Vec<Sample> = samples.iter().map(|x| summarise(x)).collect();
            let ratio = s[1].rps / s[0].rps.max(1e-9);
            let per_run: Vec<f64> = samples[0]
                .iter()
                .zip(&samples[1])
                .map(|(f, r)| round(r.rps / f.rps.max(1e-9), 3))
                .collect();
            println!(
                "| {} | {conc} | {:.0} | {:.0} | **{:.0} %** | {} | {:.0} | {:.2} / {:.2} / {:.2} | {:.1} / {:.1} / {:.1} |",
                doc.name,
                s[0].rps,
                s[1].rps,
                ratio * 100.0,
                per_run
                    .iter()
                    .map(|r| format!("{:.0} %", r * 100.0))
                    .collect::<Vec<_>>()
                    .join(", "),
                s[2].rps,
                s[0].p99_ms,
                s[1].p99_ms,
                s[2].p99_ms,
                s[0].server_cpu_us_per_req,
                s[1].server_cpu_us_per_req,
                s[2].server_cpu_us_per_req,
            );
            let errors: u64 = s.iter().map(|x| x.errors_status + x.errors_socket).sum();
            if errors > 0 {
                println!("  (errors in this cell: {errors})");
            }
            let mut cell = json!({
                "document": doc.name, "document_bytes": doc.bytes, "concurrency": conc,
                "ratio_304_to_flags": round(ratio, 3), "ratio_per_run": per_run,
            });
            for (k, kind) in KINDS.iter().enumerate() {
                cell[kind.name()] = s[k].json();
                cell[format!("{}_runs", kind.name())] =
                    json!(samples[k].iter().map(Sample::json).collect::<Vec<_>>());
            }
            cells.push(cell);
        }
    }
    drop(p);
    json!({
        "context_body": CONTEXT_BODY,
        "cells": cells,
    })
}
