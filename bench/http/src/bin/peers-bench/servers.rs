//! The three processes of a peers run and the configuration they share: a local upstream (a
//! Flagpole serving the document files, polled by both proxies), the Flagsmith Edge Proxy run
//! from its source by its own entry point, and Flagpole reading the very same `config.json`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use flagpole_http_bench::net::{http, wait_serving};
use flagpole_http_bench::procs::{command, free_port, spawn, Proc};
use flagpole_http_bench::setup::{key_pairs, local_documents, start_flagpole, Doc};

use crate::Opts;

/// A proxy under test: its process, port and how long it took to serve every document.
pub(crate) struct Server {
    pub(crate) label: &'static str,
    pub(crate) proc: Proc,
    pub(crate) port: u16,
    pub(crate) ready: Duration,
}

/// The upstream: a Flagpole serving the document files at `/api/v1/environment-document/`
/// (gzip on request, `If-Modified-Since` answered), on any CPU: it is idle during the runs.
pub(crate) fn start_upstream(o: &Opts, docs: &[Doc]) -> (Proc, u16) {
    let port = free_port();
    let config = json!({
        "environment_key_pairs": key_pairs(docs),
        "server": {"host": "127.0.0.1", "port": port},
        "logging": {"log_level": "WARNING"},
        "flagpole": {"documents": local_documents(docs)},
    });
    let docs: Vec<&Doc> = docs.iter().collect();
    let p = start_flagpole(&o.paths, "upstream", None, &config, port, &docs);
    (p, port)
}

/// The Edge Proxy's `config.json`, which Flagpole reads unchanged: the key pairs, the local
/// upstream polled every 10 minutes (no poll during the runs), warnings only (no access log),
/// and no endpoint caches (the Edge Proxy's default).
pub(crate) fn write_config(o: &Opts, docs: &[Doc], upstream: u16, edge_port: u16) -> PathBuf {
    let config = json!({
        "environment_key_pairs": key_pairs(docs),
        "api_url": format!("http://127.0.0.1:{upstream}/api/v1"),
        "api_poll_frequency_seconds": 600,
        "server": {"host": "127.0.0.1", "port": edge_port},
        "logging": {"log_level": "WARNING"},
    });
    let path = o.paths.work.join("config.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    std::fs::canonicalize(path).unwrap()
}

/// Flagpole with the shared config; only the port is given on the command line.
pub(crate) fn start_peer(o: &Opts, config: &Path, docs: &[Doc]) -> Server {
    let port = free_port();
    let (config_s, port_s) = (config.to_string_lossy().into_owned(), port.to_string());
    let cmd = command(
        o.server_cpu(),
        &o.paths.bin_dir.join("flagpole"),
        &["serve", "--config", &config_s, "--port", &port_s],
    );
    started("Flagpole", cmd, o, port, docs)
}

/// The Edge Proxy from its source tree, by its own entry point (`edge_proxy.main:serve`:
/// uvicorn, one process, as its image runs it), `CONFIG_PATH` naming the shared config.
pub(crate) fn start_edge_proxy(
    o: &Opts,
    src: &Path,
    config: &Path,
    port: u16,
    docs: &[Doc],
) -> Server {
    let mut cmd = command(
        o.server_cpu(),
        &o.python,
        &["-c", "from edge_proxy.main import serve; serve()"],
    );
    cmd.env("CONFIG_PATH", config)
        .env("PYTHONPATH", src.join("src"))
        .current_dir(&o.paths.work);
    started("Edge Proxy", cmd, o, port, docs)
}

fn started(
    label: &'static str,
    cmd: std::process::Command,
    o: &Opts,
    port: u16,
    docs: &[Doc],
) -> Server {
    let start = Instant::now();
    let log = o
        .paths
        .work
        .join(format!("{}.log", label.replace(' ', "-")));
    let proc = spawn(label, cmd, &log);
    for d in docs {
        wait_serving(port, &d.name, &d.client_key);
    }
    Server {
        label,
        proc,
        port,
        ready: start.elapsed(),
    }
}

/// What a flag answer means, without the bytes that may legitimately differ (key order, ids):
/// per feature name, `enabled` and the value; and for identities, the identifier and traits.
fn meaning(v: &Value) -> Value {
    let flags = |list: &Value| -> Value {
        let mut out: Vec<Value> = list
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|f| json!([f["feature"]["name"], f["enabled"], f["feature_state_value"]]))
                    .collect()
            })
            .unwrap_or_default();
        out.sort_by_key(|x| x[0].to_string());
        Value::Array(out)
    };
    if v.is_array() {
        return flags(v);
    }
    json!({"identifier": v["identifier"], "traits": v["traits"], "flags": flags(&v["flags"])})
}

/// A request both proxies are asked: method, path, headers, body.
type Probe<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)], &'a [u8]);

/// Whether both proxies give the same flags for each document: `/flags`, an identity by GET
/// and one with traits by POST. Returns the differences, if any, as lines to print.
pub(crate) fn compare_answers(
    a: &Server,
    b: &Server,
    docs: &[Doc],
    post_body: &str,
) -> Vec<String> {
    let mut differences = Vec::new();
    for d in docs {
        let key = [("X-Environment-Key", d.client_key.as_str())];
        let post_headers = [
            ("X-Environment-Key", d.client_key.as_str()),
            ("Content-Type", "application/json"),
        ];
        let requests: [Probe; 3] = [
            ("GET", "/api/v1/flags/", &key, b""),
            (
                "GET",
                "/api/v1/identities/?identifier=bench-user",
                &key,
                b"",
            ),
            (
                "POST",
                "/api/v1/identities/",
                &post_headers,
                post_body.as_bytes(),
            ),
        ];
        for (method, path, headers, body) in requests {
            let answer = |s: &Server| -> Value {
                let r = http(s.port, method, path, headers, body).expect("request");
                assert_eq!(r.status, 200, "{} {method} {path} on {}", s.label, d.name);
                meaning(&serde_json::from_slice(&r.body).expect("JSON answer"))
            };
            if answer(a) != answer(b) {
                differences.push(format!("{}: {method} {path}", d.name));
            }
        }
    }
    differences
}
