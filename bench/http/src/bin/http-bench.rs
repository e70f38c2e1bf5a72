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

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// Options

struct Opts {
    quick: bool,
    runs: usize,
    duration: u64,
    warmup: u64,
    concs: Vec<usize>,
    docs: Vec<String>,
    endpoints: Vec<String>,
    pin: bool,
    load: bool,
    memory: bool,
    /// Where the load-phase Flagpole gets its documents: "upstream" (a local upstream on
    /// loopback, polled) or "file" (`flagpole.documents`, watched).
    source: String,
    out: PathBuf,
    work: PathBuf,
    docs_dir: PathBuf,
    bin_dir: PathBuf,
    lua_dir: PathBuf,
}

const ALL_ENDPOINTS: &[&str] = &[
    "flags",
    "identities_get",
    "identities_post",
    "document",
    "document_gzip",
    "document_zstd",
];

fn parse_opts() -> Opts {
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
        out: "bench/out/http.json".into(),
        work: "bench/out/http".into(),
        docs_dir: "bench/out/docs".into(),
        bin_dir: "target/release".into(),
        lua_dir: "bench/http/lua".into(),
    };
    let list = |s: Option<String>| -> Vec<String> {
        s.unwrap_or_default()
            .split(',')
            .filter(|x| !x.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let mut args = std::env::args().skip(1);
    let (mut runs, mut duration) = (None, None);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => o.quick = true,
            "--runs" => runs = args.next().and_then(|v| v.parse().ok()),
            "--duration" => duration = args.next().and_then(|v| v.parse().ok()),
            "--warmup" => o.warmup = args.next().and_then(|v| v.parse().ok()).unwrap_or(1),
            "--conc" => {
                o.concs = list(args.next())
                    .iter()
                    .map(|c| c.parse().expect("--conc: integers"))
                    .collect()
            }
            "--docs" => o.docs = list(args.next()),
            "--endpoints" => o.endpoints = list(args.next()),
            "--no-pin" => o.pin = false,
            "--no-load" => o.load = false,
            "--no-memory" => o.memory = false,
            "--source" => o.source = args.next().expect("--source upstream|file"),
            "--out" => o.out = args.next().expect("--out FILE").into(),
            "--work" => o.work = args.next().expect("--work DIR").into(),
            "--docs-dir" => o.docs_dir = args.next().expect("--docs-dir DIR").into(),
            "--bin-dir" => o.bin_dir = args.next().expect("--bin-dir DIR").into(),
            "--lua-dir" => o.lua_dir = args.next().expect("--lua-dir DIR").into(),
            other => {
                eprintln!("http-bench: unknown argument {other:?} (see the source header)");
                std::process::exit(2);
            }
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
        assert!(ALL_ENDPOINTS.contains(&e.as_str()), "unknown endpoint {e}");
    }
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        o.pin = false;
    }
    o
}

// ---------------------------------------------------------------------------------------------
// A minimal blocking HTTP/1.1 client (one request per connection).

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Reply> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes())?;
    s.write_all(body)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no header end"))?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other("bad status line"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    if chunked {
        body = dechunk(&body);
    }
    Ok(Reply {
        status,
        headers,
        body,
    })
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = b.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(
            String::from_utf8_lossy(&b[..eol])
                .split(';')
                .next()
                .unwrap_or("0")
                .trim(),
            16,
        )
        .unwrap_or(0);
        if size == 0 {
            break;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + size]);
        b = &b[eol + 2 + size + 2..];
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Processes

struct Proc {
    name: String,
    child: Child,
}

impl Proc {
    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        eprintln!("[http-bench] stopped {}", self.name);
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// `taskset -c CPU program args…` when pinning, else `program args…`.
fn command(pin: Option<usize>, program: &Path, args: &[&str]) -> Command {
    match pin {
        Some(cpu) => {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(cpu.to_string()).arg(program).args(args);
            c
        }
        None => {
            let mut c = Command::new(program);
            c.args(args);
            c
        }
    }
}

fn spawn(name: &str, mut cmd: Command, log: &Path) -> Proc {
    let log = std::fs::File::create(log).expect("log file");
    let child = cmd
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
    Proc {
        name: name.to_owned(),
        child,
    }
}

fn wait_until(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        if start.elapsed() > timeout {
            panic!("timed out waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// (user + system) CPU seconds of a process, from /proc/<pid>/stat (USER_HZ = 100).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    // after ")": state is field 3, utime field 14, stime field 15 → indices 11, 12.
    let t = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (t(11) + t(12)) / 100.0
}

/// VmRSS in KiB.
fn rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmRSS:")
}

fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// Documents and Flagpole

struct Doc {
    name: String,
    path: PathBuf,
    bytes: usize,
    client_key: String,
    server_key: String,
}

fn load_doc(dir: &Path, name: &str) -> Doc {
    let path = std::fs::canonicalize(dir.join(format!("{name}.json"))).expect("document");
    let bytes = std::fs::read(&path).expect("read document");
    let v: Value = serde_json::from_slice(&bytes).expect("document JSON");
    let api_key = v["api_key"].as_str().expect("api_key").to_owned();
    Doc {
        name: name.to_owned(),
        path,
        bytes: bytes.len(),
        client_key: api_key,
        server_key: format!("ser.bench-{name}"),
    }
}

fn write_config(path: &Path, port: u16, docs: &[&Doc], upstream: Option<u16>) {
    let mut config = json!({
        "environment_key_pairs": docs.iter().map(|d| json!({
            "server_side_key": d.server_key, "client_side_key": d.client_key
        })).collect::<Vec<_>>(),
        "server": {"host": "127.0.0.1", "port": port},
    });
    match upstream {
        // Polled rarely: the load runs measure serving, not polling (see RESULTS.md).
        Some(up) => {
            config["api_url"] = json!(format!("http://127.0.0.1:{up}/api/v1"));
            config["api_poll_frequency_seconds"] = json!(600);
        }
        None => {
            config["flagpole"] = json!({"documents": docs.iter().map(|d| json!({"path": d.path})).collect::<Vec<_>>()});
        }
    }
    std::fs::write(path, serde_json::to_vec_pretty(&config).unwrap()).expect("write config");
}

fn start_flagpole(
    o: &Opts,
    label: &str,
    docs: &[&Doc],
    cpu: Option<usize>,
    upstream: Option<u16>,
) -> (Proc, u16) {
    let port = free_port();
    let config = o.work.join(format!("config-{label}.json"));
    write_config(&config, port, docs, upstream);
    let bin = o.bin_dir.join("flagpole");
    let config_s = config.to_string_lossy().into_owned();
    let cmd = command(cpu, &bin, &["serve", "--config", &config_s]);
    let p = spawn(
        &format!("flagpole ({label})"),
        cmd,
        &o.work.join(format!("flagpole-{label}.log")),
    );
    for d in docs {
        wait_until(
            &format!("flagpole to serve {}", d.name),
            Duration::from_secs(120),
            || {
                http(
                    port,
                    "GET",
                    "/api/v1/flags/",
                    &[("X-Environment-Key", &d.client_key)],
                    b"",
                )
                .is_ok_and(|r| r.status == 200)
            },
        );
    }
    (p, port)
}

// ---------------------------------------------------------------------------------------------
// Endpoints

const POST_BODY: &str = r#"{"identifier":"bench-user","traits":[{"trait_key":"plan","trait_value":"enterprise"},{"trait_key":"age","trait_value":42},{"trait_key":"app_version","trait_value":"2.4.1"}]}"#;

struct Endpoint {
    name: &'static str,
    method: &'static str,
    path: &'static str,
    server_key: bool,
    accept_encoding: Option<&'static str>,
}

fn endpoint(name: &str) -> Endpoint {
    let (method, path, server_key, accept_encoding) = match name {
        "flags" => ("GET", "/api/v1/flags/", false, None),
        "identities_get" => (
            "GET",
            "/api/v1/identities/?identifier=bench-user",
            false,
            None,
        ),
        "identities_post" => ("POST", "/api/v1/identities/", false, None),
        "document" => ("GET", "/api/v1/environment-document/", true, None),
        "document_gzip" => ("GET", "/api/v1/environment-document/", true, Some("gzip")),
        "document_zstd" => ("GET", "/api/v1/environment-document/", true, Some("zstd")),
        _ => unreachable!(),
    };
    Endpoint {
        name: ALL_ENDPOINTS.iter().find(|e| **e == name).unwrap(),
        method,
        path,
        server_key,
        accept_encoding,
    }
}

fn fetch(port: u16, doc: &Doc, ep: &Endpoint) -> Reply {
    let key = if ep.server_key {
        &doc.server_key
    } else {
        &doc.client_key
    };
    let mut headers = vec![("X-Environment-Key", key.as_str())];
    if let Some(e) = ep.accept_encoding {
        headers.push(("Accept-Encoding", e));
    }
    let body = if ep.method == "POST" {
        headers.push(("Content-Type", "application/json"));
        POST_BODY.as_bytes()
    } else {
        b""
    };
    let r = http(port, ep.method, ep.path, &headers, body).expect("request");
    assert_eq!(
        r.status, 200,
        "{} {} on {}: status {}",
        ep.method, ep.path, doc.name, r.status
    );
    r
}

/// Fetches every endpoint's bytes from Flagpole and writes the limit server's manifest.
fn prepare_limit_bodies(o: &Opts, port: u16, docs: &[Doc]) -> PathBuf {
    let dir = o.work.join("limit-bodies");
    std::fs::create_dir_all(&dir).unwrap();
    let mut manifest = Vec::new();
    for d in docs {
        let mut entry = json!({"client_key": d.client_key, "server_key": d.server_key});
        for (field, ep) in [
            ("flags", "flags"),
            ("identity_get", "identities_get"),
            ("identity_post", "identities_post"),
            ("document", "document"),
            ("document_gzip", "document_gzip"),
            ("document_zstd", "document_zstd"),
        ] {
            let ep = endpoint(ep);
            let r = fetch(port, d, &ep);
            if let Some(want) = ep.accept_encoding {
                assert_eq!(
                    r.header("content-encoding"),
                    Some(want),
                    "{} encoding",
                    d.name
                );
            }
            let file = std::fs::canonicalize(&dir)
                .unwrap()
                .join(format!("{}-{field}.body", d.name));
            std::fs::write(&file, &r.body).unwrap();
            entry[field] = json!(file);
        }
        manifest.push(entry);
    }
    let path = dir.join("manifest.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
    path
}

// ---------------------------------------------------------------------------------------------
// wrk

#[derive(Clone, Debug, Default)]
struct Sample {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    p999_ms: f64,
    non2xx: u64,
    socket_errors: u64,
    requests: u64,
    cpu_us_per_req: f64,
    /// Busy fraction (not idle, not iowait, not stolen) of the servers' CPU and of wrk's CPU
    /// during the run (from /proc/stat; only meaningful when pinned).
    server_cpu_busy: f64,
    wrk_cpu_busy: f64,
}

impl Sample {
    fn json(&self) -> Value {
        json!({
            "rps": round(self.rps, 1), "p50_ms": round(self.p50_ms, 3), "p99_ms": round(self.p99_ms, 3),
            "p999_ms": round(self.p999_ms, 3), "errors_non2xx": self.non2xx,
            "errors_socket": self.socket_errors, "requests": self.requests,
            "server_cpu_us_per_request": round(self.cpu_us_per_req, 2),
            "server_cpu_busy": round(self.server_cpu_busy, 3),
            "wrk_cpu_busy": round(self.wrk_cpu_busy, 3),
        })
    }
}

fn round(x: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (x * m).round() / m
}

struct Wrk {
    cpu: Option<usize>,
    threads: usize,
    report: PathBuf,
    post: PathBuf,
}

impl Wrk {
    fn new(o: &Opts) -> Wrk {
        let report = o.lua_dir.join("report.lua");
        let post = o.work.join("post_identities_report.lua");
        let mut script = std::fs::read_to_string(o.lua_dir.join("post_identities.lua")).unwrap();
        script.push('\n');
        script.push_str(&std::fs::read_to_string(&report).unwrap());
        std::fs::write(&post, script).unwrap();
        Wrk {
            cpu: o.pin.then_some(0),
            threads: if o.pin { 1 } else { 2 },
            report,
            post,
        }
    }

    /// One bounded wrk run against `port`, with the server's CPU time measured around it.
    fn run(
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
        let script = if ep.method == "POST" {
            &self.post
        } else {
            &self.report
        };
        let mut args: Vec<String> = vec![
            "-t".into(),
            self.threads.min(conc).to_string(),
            "-c".into(),
            conc.to_string(),
            "-d".into(),
            format!("{secs}s"),
            "--timeout".into(),
            "20s".into(),
            "-s".into(),
            script.to_string_lossy().into_owned(),
            "-H".into(),
            format!("X-Environment-Key: {key}"),
        ];
        if let Some(e) = ep.accept_encoding {
            args.push("-H".into());
            args.push(format!("Accept-Encoding: {e}"));
        }
        args.push(url);
        let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let cpu0 = cpu_seconds(server_pid);
        let stat0 = cpu_times();
        let output = command(self.cpu, Path::new("wrk"), &arg_refs)
            .output()
            .expect("run wrk");
        let cpu1 = cpu_seconds(server_pid);
        let stat1 = cpu_times();
        let busy = |cpu: usize| -> f64 {
            match (stat0.get(cpu), stat1.get(cpu)) {
                (Some(a), Some(b)) => {
                    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| y - x).collect();
                    let total: f64 = d.iter().sum();
                    // user nice system idle iowait irq softirq steal
                    let busy = total - d[3] - d[4] - d.get(7).copied().unwrap_or(0.0);
                    if total > 0.0 {
                        busy / total
                    } else {
                        0.0
                    }
                }
                _ => 0.0,
            }
        };
        let stdout = String::from_utf8_lossy(&output.stdout);
        let line = stdout
            .lines()
            .find_map(|l| l.strip_prefix("FLAGPOLE_WRK "))
            .unwrap_or_else(|| {
                panic!(
                    "wrk printed no report: {stdout}\n{}",
                    String::from_utf8_lossy(&output.stderr)
                )
            });
        let v: Value = serde_json::from_str(line).expect("wrk report JSON");
        let n = |k: &str| v[k].as_f64().unwrap_or(0.0);
        let e = |k: &str| v["errors"][k].as_u64().unwrap_or(0);
        let requests = n("requests");
        Sample {
            rps: requests / (n("duration_us") / 1e6).max(1e-9),
            p50_ms: n("p50_us") / 1000.0,
            p99_ms: n("p99_us") / 1000.0,
            p999_ms: n("p999_us") / 1000.0,
            non2xx: e("status"),
            socket_errors: e("connect") + e("read") + e("write") + e("timeout"),
            requests: requests as u64,
            cpu_us_per_req: if requests > 0.0 {
                (cpu1 - cpu0) * 1e6 / requests
            } else {
                0.0
            },
            server_cpu_busy: busy(1),
            wrk_cpu_busy: busy(0),
        }
    }
}

/// Per-CPU jiffies from /proc/stat: `cpuN` lines, first 8 fields.
fn cpu_times() -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    for line in std::fs::read_to_string("/proc/stat")
        .unwrap_or_default()
        .lines()
    {
        let mut parts = line.split_whitespace();
        let Some(name) = parts.next() else { continue };
        if name.len() > 3 && name.starts_with("cpu") {
            out.push(parts.take(8).filter_map(|v| v.parse().ok()).collect());
        }
    }
    out
}

fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

fn summarise(samples: &[Sample]) -> Sample {
    let m = |f: fn(&Sample) -> f64| median(samples.iter().map(f).collect());
    Sample {
        rps: m(|s| s.rps),
        p50_ms: m(|s| s.p50_ms),
        p99_ms: m(|s| s.p99_ms),
        p999_ms: m(|s| s.p999_ms),
        cpu_us_per_req: m(|s| s.cpu_us_per_req),
        server_cpu_busy: m(|s| s.server_cpu_busy),
        wrk_cpu_busy: m(|s| s.wrk_cpu_busy),
        non2xx: samples.iter().map(|s| s.non2xx).sum(),
        socket_errors: samples.iter().map(|s| s.socket_errors).sum(),
        requests: samples.iter().map(|s| s.requests).sum(),
    }
}

struct Cell {
    doc: String,
    endpoint: &'static str,
    conc: usize,
    flagpole: Sample,
    limit: Sample,
    flagpole_runs: Vec<Sample>,
    limit_runs: Vec<Sample>,
}

impl Cell {
    fn ratio(&self) -> f64 {
        if self.limit.rps > 0.0 {
            self.flagpole.rps / self.limit.rps
        } else {
            0.0
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The load matrix

fn load_matrix(o: &Opts, docs: &[Doc]) -> Vec<Cell> {
    let server_cpu = o.pin.then_some(1);
    let all: Vec<&Doc> = docs.iter().collect();
    // The local upstream: the limit-server binary serving the document files as they are.
    let upstream = (o.source == "upstream").then(|| {
        let dir = o.work.join("upstream");
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
                &o.bin_dir.join("limit-server"),
                &["--port", &port_s, "--manifest", &path_s],
            ),
            &o.work.join("upstream.log"),
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
            &o.bin_dir.join("limit-server"),
            &["--port", &port_s, "--manifest", &manifest_s],
        ),
        &o.work.join("limit-server.log"),
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
                };
                print_row(&cell);
                cells.push(cell);
            }
        }
    }
    drop(flagpole);
    drop(limit);
    drop(upstream);
    cells
}

fn print_header() {
    println!();
    println!("| doc | endpoint | c | Flagpole RPS | limit RPS | ratio | Flagpole p50 / p99 / p99.9 ms | limit p50 / p99 / p99.9 ms | errors F/L (non-2xx+socket) | server CPU µs/req F/L | server CPU busy F/L | wrk CPU busy F/L |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
}

fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn print_row(c: &Cell) {
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

const MARKER: &str = "__FLAGPOLE_BENCH_MARKER__";

/// A copy of `doc` whose first plain, client-visible feature value is a marker, to rewrite.
fn live_template(doc: &Doc) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&std::fs::read(&doc.path).unwrap()).unwrap();
    let server_only: Vec<String> = v["project"]["server_key_only_feature_ids"]
        .as_array()
        .map(|a| a.iter().map(|x| x.to_string()).collect())
        .unwrap_or_default();
    let states = v["feature_states"].as_array_mut().expect("feature_states");
    let fs = states
        .iter_mut()
        .find(|fs| {
            fs["multivariate_feature_state_values"]
                .as_array()
                .is_none_or(|a| a.is_empty())
                && !server_only.contains(&fs["feature"]["id"].to_string())
        })
        .expect("a plain feature");
    fs["feature_state_value"] = json!(MARKER);
    serde_json::to_vec(&v).unwrap()
}

fn write_atomic(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn version_bytes(template: &[u8], version: usize) -> (Vec<u8>, String) {
    let value = format!("bench-update-{version:03}");
    let text = String::from_utf8_lossy(template).replacen(MARKER, &value, 1);
    (text.into_bytes(), format!("\"{value}\""))
}

/// Writes version `n` and returns the time until `/flags` serves it.
fn update_and_wait(port: u16, doc: &Doc, path: &Path, template: &[u8], n: usize) -> Duration {
    let (bytes, needle) = version_bytes(template, n);
    let start = Instant::now();
    write_atomic(path, &bytes);
    loop {
        if let Ok(r) = http(
            port,
            "GET",
            "/api/v1/flags/",
            &[("X-Environment-Key", &doc.client_key)],
            b"",
        ) {
            if r.status == 200 && contains(&r.body, needle.as_bytes()) {
                return start.elapsed();
            }
        }
        if start.elapsed() > Duration::from_secs(60) {
            panic!("update {n} of {} never served", doc.name);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A Flagpole serving a rewritable copy of `doc` (as `<name>-live.json` in the work dir).
fn start_live(o: &Opts, doc: &Doc, cpu: Option<usize>) -> (Proc, u16, Doc, Vec<u8>) {
    let template = live_template(doc);
    let path = std::fs::canonicalize(&o.work)
        .unwrap()
        .join(format!("{}-live.json", doc.name));
    write_atomic(&path, &version_bytes(&template, 0).0);
    let live = Doc {
        name: format!("{}-live", doc.name),
        path,
        bytes: doc.bytes,
        client_key: doc.client_key.clone(),
        server_key: doc.server_key.clone(),
    };
    let (p, port) = start_flagpole(o, &live.name, &[&live], cpu, None);
    (p, port, live, template)
}

fn memory_and_updates(o: &Opts, docs: &[Doc]) -> Value {
    let cpu = o.pin.then_some(1);
    let by_name = |n: &str| docs.iter().find(|d| d.name == n);
    let mut out = serde_json::Map::new();

    if let Some(tiny) = by_name("tiny") {
        let (p, port) = start_flagpole(o, "idle-tiny", &[tiny], cpu, None);
        for _ in 0..20 {
            let _ = fetch(port, tiny, &endpoint("identities_get"));
            let _ = fetch(port, tiny, &endpoint("flags"));
        }
        std::thread::sleep(Duration::from_secs(1));
        let rss = rss_kib(p.pid());
        println!("\nidle RSS, tiny document: {:.1} MiB", rss as f64 / 1024.0);
        out.insert(
            "idle_rss_tiny_kib".into(),
            json!({"rss_kib": rss, "hwm_kib": status_kib(p.pid(), "VmHWM:")}),
        );
    }

    if let Some(medium) = by_name("medium") {
        let (p, port, live, template) = start_live(o, medium, cpu);
        std::thread::sleep(Duration::from_secs(1));
        let loaded = rss_kib(p.pid());
        println!(
            "RSS, medium loaded: {:.1} MiB = {:.2}× the document ({:.1} MiB)",
            loaded as f64 / 1024.0,
            loaded as f64 * 1024.0 / medium.bytes as f64,
            medium.bytes as f64 / 1048576.0
        );
        let mut rss_series = Vec::new();
        let mut latencies = Vec::new();
        for n in 1..=20 {
            let t = update_and_wait(port, &live, &live.path, &template, n);
            latencies.push(t.as_secs_f64() * 1000.0);
            std::thread::sleep(Duration::from_millis(300));
            rss_series.push(rss_kib(p.pid()));
        }
        std::thread::sleep(Duration::from_secs(2));
        let settled = rss_kib(p.pid());
        let sorted = {
            let mut l = latencies.clone();
            l.sort_by(|a, b| a.partial_cmp(b).unwrap());
            l
        };
        println!(
            "medium update → served: median {:.0} ms, min {:.0} ms, max {:.0} ms (includes the file watcher's 150 ms settle delay)",
            median(latencies.clone()),
            sorted[0],
            sorted[sorted.len() - 1]
        );
        println!(
            "RSS across 20 updates (MiB): {}; 2 s after the last: {:.1}",
            rss_series
                .iter()
                .map(|r| format!("{:.0}", *r as f64 / 1024.0))
                .collect::<Vec<_>>()
                .join(", "),
            settled as f64 / 1024.0
        );
        out.insert(
            "medium".into(),
            json!({
                "document_bytes": medium.bytes,
                "rss_loaded_kib": loaded,
                "rss_over_document": round(loaded as f64 * 1024.0 / medium.bytes as f64, 3),
                "update_to_served_ms": latencies.iter().map(|x| round(*x, 1)).collect::<Vec<_>>(),
                "update_to_served_median_ms": round(median(latencies.clone()), 1),
                "update_to_served_max_ms": round(sorted[sorted.len() - 1], 1),
                "watcher_settle_delay_ms": 150,
                "rss_after_each_update_kib": rss_series,
                "rss_2s_after_last_update_kib": settled,
                "hwm_kib": status_kib(p.pid(), "VmHWM:"),
            }),
        );
        drop(p);
    }

    // Identity p99 with and without a burst of document updates.
    let wrk = Wrk::new(o);
    let mut bursts = serde_json::Map::new();
    for name in ["small", "medium"] {
        let Some(doc) = by_name(name) else { continue };
        let (p, port, live, template) = start_live(o, doc, cpu);
        let ep = endpoint("identities_get");
        let secs = 5;
        wrk.run(port, p.pid(), &live, &ep, 64, 1);
        let quiet = wrk.run(port, p.pid(), &live, &ep, 64, secs);
        // The burst: a rewrite every 250 ms from 0.5 s to 4.5 s into the run.
        let writer = {
            let path = live.path.clone();
            let template = template.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(500));
                let mut n = 100;
                let end = Instant::now() + Duration::from_secs(4);
                while Instant::now() < end {
                    n += 1;
                    write_atomic(&path, &version_bytes(&template, n).0);
                    std::thread::sleep(Duration::from_millis(250));
                }
                n - 100
            })
        };
        let burst = wrk.run(port, p.pid(), &live, &ep, 64, secs);
        let writes = writer.join().unwrap();
        let quiet2 = wrk.run(port, p.pid(), &live, &ep, 64, secs);
        let base_p99 = (quiet.p99_ms + quiet2.p99_ms) / 2.0;
        println!(
            "{name}: /identities GET c=64, p99 without updates {:.2} / {:.2} ms, during {writes} rewrites {:.2} ms ({:.1}×); RPS {:.0} → {:.0}",
            quiet.p99_ms,
            quiet2.p99_ms,
            burst.p99_ms,
            burst.p99_ms / base_p99,
            (quiet.rps + quiet2.rps) / 2.0,
            burst.rps
        );
        bursts.insert(
            name.into(),
            json!({
                "quiet_before": quiet.json(), "burst": burst.json(), "quiet_after": quiet2.json(),
                "rewrites": writes, "p99_ratio": round(burst.p99_ms / base_p99, 2),
            }),
        );
        drop(p);
    }
    out.insert("identity_p99_update_burst".into(), Value::Object(bursts));
    Value::Object(out)
}

// ---------------------------------------------------------------------------------------------
// Targets

fn verdicts(cells: &[Cell], mem: &Value, allocs: &Value) -> Vec<Value> {
    let mut v = Vec::new();
    let mut add = |target: &str, result: String, met: Option<bool>| {
        v.push(json!({"target": target, "result": result, "met": met}));
    };
    let find = |doc: &str, ep: &str, c: usize| {
        cells
            .iter()
            .find(|x| x.doc == doc && x.endpoint == ep && x.conc == c)
    };
    let ratio_target = |eps: &[&str], docs: &[&str], min: f64| -> Option<(String, bool)> {
        let sel: Vec<&Cell> = cells
            .iter()
            .filter(|c| eps.contains(&c.endpoint) && docs.contains(&c.doc.as_str()))
            .collect();
        if sel.is_empty() {
            return None;
        }
        let worst = sel
            .iter()
            .min_by(|a, b| a.ratio().partial_cmp(&b.ratio()).unwrap())
            .unwrap();
        let best = sel
            .iter()
            .max_by(|a, b| a.ratio().partial_cmp(&b.ratio()).unwrap())
            .unwrap();
        Some((
            format!(
                "{:.0}–{:.0} % (worst: {} {} c={})",
                worst.ratio() * 100.0,
                best.ratio() * 100.0,
                worst.doc,
                worst.endpoint,
                worst.conc
            ),
            worst.ratio() >= min,
        ))
    };
    let docs_all = ["tiny", "small", "medium"];
    if let Some((r, m)) = ratio_target(&["flags"], &docs_all, 0.9) {
        add("/flags ≥ 90 % of the limit", r, Some(m));
    }
    if let Some((r, m)) = ratio_target(
        &["document", "document_gzip", "document_zstd"],
        &docs_all,
        0.9,
    ) {
        add("/environment-document ≥ 90 % of the limit", r, Some(m));
    }
    // Compression: encoded RPS ≥ 5× plain RPS (Flagpole), per document at the highest concurrency.
    for doc in docs_all {
        let cs: Vec<usize> = cells
            .iter()
            .filter(|c| c.doc == doc && c.endpoint == "document")
            .map(|c| c.conc)
            .collect();
        let parts: Vec<(String, bool)> = cs
            .iter()
            .filter_map(|&c| {
                let plain = find(doc, "document", c)?.flagpole.rps;
                let g = find(doc, "document_gzip", c)?.flagpole.rps / plain;
                let z = find(doc, "document_zstd", c)?.flagpole.rps / plain;
                Some((
                    format!("c={c}: gzip {g:.1}×, zstd {z:.1}×"),
                    g >= 5.0 && z >= 5.0,
                ))
            })
            .collect();
        if !parts.is_empty() {
            add(
                &format!("{doc}: env document compressed ≥ 5× uncompressed RPS"),
                parts
                    .iter()
                    .map(|p| p.0.clone())
                    .collect::<Vec<_>>()
                    .join("; "),
                Some(parts.iter().all(|p| p.1)),
            );
        }
    }
    for doc in docs_all {
        let parts: Vec<(String, bool)> = ["document", "document_gzip", "document_zstd"]
            .iter()
            .filter_map(|ep| {
                let c = find(doc, ep, 500)?;
                let r = c.flagpole.p99_ms / c.flagpole.p50_ms.max(1e-6);
                Some((
                    format!(
                        "{ep}: p99/p50 {r:.1}× ({} / {} ms)",
                        ms(c.flagpole.p99_ms),
                        ms(c.flagpole.p50_ms)
                    ),
                    r <= 10.0,
                ))
            })
            .collect();
        if !parts.is_empty() {
            add(
                &format!("{doc}: env document p99 ≤ 10× p50 at c=500"),
                parts
                    .iter()
                    .map(|p| p.0.clone())
                    .collect::<Vec<_>>()
                    .join("; "),
                Some(parts.iter().all(|p| p.1)),
            );
        }
    }
    for (doc, min) in [("small", 0.5), ("medium", 0.35)] {
        if let Some((r, m)) = ratio_target(&["identities_get", "identities_post"], &[doc], min) {
            add(
                &format!(
                    "{doc}: /identities GET+POST ≥ {:.0} % of the limit",
                    min * 100.0
                ),
                r,
                Some(m),
            );
        }
    }
    if let Some(a) = allocs.as_object().filter(|a| !a.is_empty()) {
        let worst_get = a
            .values()
            .filter_map(|x| x["get_allocs_per_request"].as_f64())
            .fold(0.0, f64::max);
        let worst_post = a
            .values()
            .filter_map(|x| x["post_allocs_per_request"].as_f64())
            .fold(0.0, f64::max);
        let bytes = a
            .iter()
            .map(|(k, x)| {
                format!(
                    "{k} {:.0} B",
                    x["post_bytes_per_request"].as_f64().unwrap_or(0.0)
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        add(
            "≤ 10 heap allocations per /identities request outside the HTTP stack",
            format!("GET {worst_get:.0}, POST {worst_post:.0} (allocated per POST: {bytes})"),
            Some(worst_get <= 10.0 && worst_post <= 10.0),
        );
    }
    if let Some(m) = mem.get("medium") {
        let med = m["update_to_served_median_ms"].as_f64().unwrap_or(0.0);
        let max = m["update_to_served_max_ms"].as_f64().unwrap_or(0.0);
        add(
            "medium update compiled and swapped in < 300 ms",
            format!("file write → served: median {med:.0} ms, max {max:.0} ms (150 ms of it is the watcher's settle delay)"),
            Some(max < 300.0),
        );
        let ratio = m["rss_over_document"].as_f64().unwrap_or(0.0);
        add(
            "RSS ≤ 3× document size with medium loaded",
            format!(
                "{:.1} MiB = {ratio:.2}×",
                m["rss_loaded_kib"].as_f64().unwrap_or(0.0) / 1024.0
            ),
            Some(ratio <= 3.0),
        );
        let series: Vec<f64> = m["rss_after_each_update_kib"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        if let (Some(first), Some(last)) = (series.first(), series.last()) {
            let max = series.iter().cloned().fold(0.0, f64::max);
            add(
                "RSS flat across 20 document updates",
                format!(
                    "after update 1: {:.0} MiB, after 20: {:.0} MiB, max {:.0} MiB",
                    first / 1024.0,
                    last / 1024.0,
                    max / 1024.0
                ),
                Some(*last <= first * 1.10),
            );
        }
    }
    if let Some(b) = mem
        .get("identity_p99_update_burst")
        .and_then(Value::as_object)
    {
        for (doc, x) in b {
            let r = x["p99_ratio"].as_f64().unwrap_or(0.0);
            add(
                &format!("{doc}: identity p99 during an update burst ≤ 2× without"),
                format!(
                    "{r:.1}× ({} ms vs {} / {} ms)",
                    ms(x["burst"]["p99_ms"].as_f64().unwrap_or(0.0)),
                    ms(x["quiet_before"]["p99_ms"].as_f64().unwrap_or(0.0)),
                    ms(x["quiet_after"]["p99_ms"].as_f64().unwrap_or(0.0))
                ),
                Some(r <= 2.0),
            );
        }
    }
    if let Some(t) = mem.get("idle_rss_tiny_kib") {
        let rss = t["rss_kib"].as_f64().unwrap_or(0.0) / 1024.0;
        add(
            "idle RSS ≤ 10 MiB with the tiny document",
            format!("{rss:.1} MiB"),
            Some(rss <= 10.0),
        );
    }
    v
}

// ---------------------------------------------------------------------------------------------

fn sh(cmd: &str) -> String {
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn main() {
    let o = parse_opts();
    std::fs::create_dir_all(&o.work).expect("work dir");
    let docs: Vec<Doc> = o.docs.iter().map(|n| load_doc(&o.docs_dir, n)).collect();
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
        let bin = o.bin_dir.join("alloc-count");
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
        })).collect::<Vec<_>>(),
        "allocations": allocs,
        "memory_and_updates": mem,
        "targets": targets,
        "elapsed_s": round(started.elapsed().as_secs_f64(), 1),
    });
    if let Some(dir) = o.out.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(&o.out, serde_json::to_vec_pretty(&report).unwrap()).expect("write JSON");
    println!(
        "\nwrote {} in {:.0} s",
        o.out.display(),
        started.elapsed().as_secs_f64()
    );
}
