//! The load matrix: wrk runs per endpoint × concurrency × server, medians, and the table rows.

#[allow(
    unused_imports,
    reason = "the driver's common imports, of which each file uses a part"
)]
use super::*;

pub(crate) struct Wrk {
    pub(crate) cpu: Option<usize>,
    pub(crate) threads: usize,
    pub(crate) report: PathBuf,
    pub(crate) post: PathBuf,
    pub(crate) zipf: PathBuf,
}

impl Wrk {
    pub(crate) fn new(o: &Opts) -> Wrk {
        let report = o.paths.lua_dir.join("report.lua");
        // wrk takes one script: each request script gets the report appended.
        let with_report = |name: &str| {
            let path = o.paths.work.join(format!("{name}_report.lua"));
            let mut script =
                std::fs::read_to_string(o.paths.lua_dir.join(format!("{name}.lua"))).unwrap();
            script.push('\n');
            script.push_str(&std::fs::read_to_string(&report).unwrap());
            std::fs::write(&path, script).unwrap();
            path
        };
        Wrk {
            cpu: o.pin.then_some(WRK_CPU),
            threads: if o.pin { 1 } else { 2 },
            post: with_report("post_identities"),
            zipf: with_report("zipf_identities"),
            report,
        }
    }

    /// One bounded wrk run against `port`, with the server's CPU time measured around it.
    pub(crate) fn run(
        &self,
        port: u16,
        server_pid: u32,
        doc: &Doc,
        ep: &Endpoint,
        conc: usize,
        secs: u64,
    ) -> Sample {
        let key = if ep.server_key {
            &doc.server_key
        } else {
            &doc.client_key
        };
        let url = format!("http://127.0.0.1:{port}{}", ep.path);
        let script = if ep.zipf.is_some() {
            &self.zipf
        } else if ep.method == "POST" {
            &self.post
        } else {
            &self.report
        };
        let mut args = wrk_args(self.threads, conc, secs, "20s", script, key);
        if let Some(e) = ep.accept_encoding {
            args.push("-H".into());
            args.push(format!("Accept-Encoding: {e}"));
        }
        args.push(url);
        if let Some(method) = ep.zipf {
            args.extend(["--".to_owned(), method.to_owned()]);
        }
        measure(self.cpu, &args, server_pid)
    }
}

pub(crate) struct Cell {
    pub(crate) doc: String,
    pub(crate) endpoint: &'static str,
    pub(crate) conc: usize,
    pub(crate) flagpole: Sample,
    pub(crate) limit: Sample,
    pub(crate) flagpole_runs: Vec<Sample>,
    pub(crate) limit_runs: Vec<Sample>,
    /// The servers' RSS around the cell's runs (taken for the Zipf endpoints).
    pub(crate) rss: Option<Rss>,
}

/// VmRSS (KiB) of Flagpole just before a cell's first run and after its last, and of the limit
/// server after its last.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rss {
    pub(crate) flagpole_before: u64,
    pub(crate) flagpole_after: u64,
    pub(crate) limit_after: u64,
}

impl Rss {
    pub(crate) fn json(&self) -> Value {
        json!({"flagpole_before_kib": self.flagpole_before,
               "flagpole_after_kib": self.flagpole_after, "limit_after_kib": self.limit_after})
    }
}

impl Cell {
    pub(crate) fn ratio(&self) -> f64 {
        if self.limit.rps > 0.0 {
            self.flagpole.rps / self.limit.rps
        } else {
            0.0
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The load matrix

pub(crate) fn load_matrix(o: &Opts, docs: &[Doc]) -> Vec<Cell> {
    let server_cpu = o.pin.then_some(SERVER_CPU);
    let all: Vec<&Doc> = docs.iter().collect();
    // The local upstream: the limit-server binary serving the document files as they are.
    let upstream = (o.source == "upstream").then(|| {
        let dir = o.paths.work.join("upstream");
        std::fs::create_dir_all(&dir).unwrap();
        let manifest: Vec<Value> = docs
            .iter()
            .map(|d| {
                let f = json!(d.path);
                json!({"client_key": d.client_key, "server_key": d.server_key, "flags": f,
                       "identity_get": f, "identity_post": f, "document": f,
                       "document_gzip": f, "document_zstd": f})
            })
            .collect();
        let path = dir.join("manifest.json");
        std::fs::write(&path, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
        let port = free_port();
        let (port_s, path_s) = (port.to_string(), path.to_string_lossy().into_owned());
        let p = spawn(
            "upstream",
            command(
                None,
                &o.paths.bin_dir.join("limit-server"),
                &["--port", &port_s, "--manifest", &path_s],
            ),
            &o.paths.work.join("upstream.log"),
        );
        wait_until("the upstream", Duration::from_secs(30), || {
            http(port, "GET", "/", &[], b"").is_ok()
        });
        (p, port)
    });
    let (flagpole, fp_port) =
        start_flagpole(o, "load", &all, server_cpu, upstream.as_ref().map(|u| u.1));
    let manifest = prepare_limit_bodies(o, fp_port, docs);
    let limit_port = free_port();
    let manifest_s = manifest.to_string_lossy().into_owned();
    let port_s = limit_port.to_string();
    let limit = spawn(
        "limit-server",
        command(
            server_cpu,
            &o.paths.bin_dir.join("limit-server"),
            &["--port", &port_s, "--manifest", &manifest_s],
        ),
        &o.paths.work.join("limit-server.log"),
    );
    wait_until("the limit server", Duration::from_secs(30), || {
        http(limit_port, "GET", "/", &[], b"").is_ok()
    });
    // The limit server must answer with Flagpole's bytes.
    for d in docs {
        for name in ALL_ENDPOINTS {
            let ep = endpoint(name);
            let a = fetch(fp_port, d, &ep);
            let b = fetch(limit_port, d, &ep);
            assert!(
                a.body == b.body,
                "limit server bytes differ: {} {name}",
                d.name
            );
        }
        // Varied identifiers are served too.
        let r = http(
            fp_port,
            "POST",
            "/api/v1/identities/",
            &[
                ("X-Environment-Key", &d.client_key),
                ("Content-Type", "application/json"),
            ],
            POST_BODY.replace("bench-user", "load-1-000001").as_bytes(),
        )
        .expect("POST");
        assert_eq!(r.status, 200);
        // So are the identifiers the Zipf script draws (`user-NNNNNN`).
        let r = http(
            fp_port,
            "GET",
            "/api/v1/identities/?identifier=user-007919",
            &[("X-Environment-Key", &d.client_key)],
            b"",
        )
        .expect("GET");
        assert_eq!(r.status, 200);
    }
    let wrk = Wrk::new(o);
    let servers = [
        ("flagpole", fp_port, flagpole.pid()),
        ("limit", limit_port, limit.pid()),
    ];
    let mut cells = Vec::new();
    let mut order_flip = 0usize;
    print_header();
    for d in docs {
        for name in &o.endpoints {
            let ep = endpoint(name);
            if o.warmup > 0 {
                for (_, port, pid) in servers {
                    wrk.run(port, pid, d, &ep, 64, o.warmup);
                }
            }
            for &conc in &o.concs {
                let rss_before = rss_kib(servers[0].2);
                let mut runs: [Vec<Sample>; 2] = [Vec::new(), Vec::new()];
                for _ in 0..o.runs {
                    order_flip += 1;
                    let order = if order_flip % 2 == 1 { [0, 1] } else { [1, 0] };
                    for i in order {
                        let (_, port, pid) = servers[i];
                        // A whole uncompressed medium document takes ~5 ms to send: at high
                        // concurrency a short run would end before one round completes.
                        let secs = if ep.name == "document" && d.bytes > 4_000_000 && conc >= 200 {
                            o.duration.max(8)
                        } else {
                            o.duration
                        };
                        runs[i].push(wrk.run(port, pid, d, &ep, conc, secs));
                    }
                }
                let cell = Cell {
                    doc: d.name.clone(),
                    endpoint: ep.name,
                    conc,
                    flagpole: summarise(&runs[0]),
                    limit: summarise(&runs[1]),
                    flagpole_runs: std::mem::take(&mut runs[0]),
                    limit_runs: std::mem::take(&mut runs[1]),
                    rss: ep.zipf.map(|_| Rss {
                        flagpole_before: rss_before,
                        flagpole_after: rss_kib(servers[0].2),
                        limit_after: rss_kib(servers[1].2),
                    }),
                };
                print_row(&cell);
                cells.push(cell);
            }
        }
    }
    drop(flagpole);
    drop(limit);
    drop(upstream);
    print_zipf_table(&cells);
    cells
}

/// The Zipf cells again, with each server's RSS, next to the same endpoint's cell with one
/// identity (GET) or identities that never repeat (POST) when those ran too.
pub(crate) fn print_zipf_table(cells: &[Cell]) {
    let zipf: Vec<&Cell> = cells.iter().filter(|c| c.rss.is_some()).collect();
    if zipf.is_empty() {
        return;
    }
    println!("\nZipf identities (s = 1.0 over 100,000 identifiers; the limit server answers fixed bytes):\n");
    println!("| doc | endpoint | c | Flagpole RPS | limit RPS | ratio | same endpoint, fixed/unrepeated identities: Flagpole RPS | Flagpole p50 / p99 ms | server CPU µs/req F/L | Flagpole RSS before → after MiB | limit RSS after MiB |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mib = |kib: u64| kib as f64 / 1024.0;
    for c in zipf {
        let rss = c.rss.expect("filtered");
        let plain = c.endpoint.trim_end_matches("_zipf");
        let other = cells
            .iter()
            .find(|o| o.doc == c.doc && o.endpoint == plain && o.conc == c.conc)
            .map_or("–".to_owned(), |o| format!("{:.0}", o.flagpole.rps));
        println!(
            "| {} | {} | {} | {:.0} | {:.0} | {:.0} % | {other} | {} / {} | {:.1} / {:.1} | {:.1} → {:.1} | {:.1} |",
            c.doc,
            c.endpoint,
            c.conc,
            c.flagpole.rps,
            c.limit.rps,
            c.ratio() * 100.0,
            ms(c.flagpole.p50_ms),
            ms(c.flagpole.p99_ms),
            c.flagpole.cpu_us_per_req,
            c.limit.cpu_us_per_req,
            mib(rss.flagpole_before),
            mib(rss.flagpole_after),
            mib(rss.limit_after),
        );
    }
}

pub(crate) fn print_header() {
    println!();
    println!("| doc | endpoint | c | Flagpole RPS | limit RPS | ratio | Flagpole p50 / p99 / p99.9 ms | limit p50 / p99 / p99.9 ms | errors F/L (non-2xx+socket) | server CPU µs/req F/L | server CPU busy F/L | wrk CPU busy F/L |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
}

pub(crate) fn print_row(c: &Cell) {
    let f = &c.flagpole;
    let l = &c.limit;
    println!(
        "| {} | {} | {} | {:.0} | {:.0} | {:.0} % | {} / {} / {} | {} / {} / {} | {}/{} | {:.1} / {:.1} | {:.0} / {:.0} % | {:.0} / {:.0} % |",
        c.doc,
        c.endpoint,
        c.conc,
        f.rps,
        l.rps,
        c.ratio() * 100.0,
        ms(f.p50_ms),
        ms(f.p99_ms),
        ms(f.p999_ms),
        ms(l.p50_ms),
        ms(l.p99_ms),
        ms(l.p999_ms),
        f.non2xx + f.socket_errors,
        l.non2xx + l.socket_errors,
        f.cpu_us_per_req,
        l.cpu_us_per_req,
        f.server_cpu_busy * 100.0,
        l.server_cpu_busy * 100.0,
        f.wrk_cpu_busy * 100.0,
        l.wrk_cpu_busy * 100.0,
    );
}

// ---------------------------------------------------------------------------------------------
// Memory and updates
