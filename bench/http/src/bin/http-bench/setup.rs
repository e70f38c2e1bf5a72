//! Flagpole's configuration and start-up, the endpoints under test, and the bodies the limit
//! server replays.

#[allow(
    unused_imports,
    reason = "the driver's common imports, of which each file uses a part"
)]
use super::*;
use flagpole_http_bench::setup::{key_pairs, local_documents};

/// The configuration of a Flagpole on `port` serving `docs`: from a local upstream polled
/// rarely, or from the files (watched).
fn config(
    port: u16,
    docs: &[&Doc],
    upstream: Option<u16>,
    identity_cache_bytes: Option<u64>,
) -> Value {
    let mut config = json!({
        "environment_key_pairs": key_pairs(docs.iter().copied()),
        "server": {"host": "127.0.0.1", "port": port},
    });
    match upstream {
        // Polled rarely: the load runs measure serving, not polling (see RESULTS.md).
        Some(up) => {
            config["api_url"] = json!(format!("http://127.0.0.1:{up}/api/v1"));
            config["api_poll_frequency_seconds"] = json!(600);
        }
        None => {
            config["flagpole"] = json!({"documents": local_documents(docs.iter().copied())});
        }
    }
    if let Some(n) = identity_cache_bytes {
        config["flagpole"]["identity_cache"] = json!({"max_bytes": n});
    }
    config
}

pub(crate) fn start_flagpole(
    o: &Opts,
    label: &str,
    docs: &[&Doc],
    cpu: Option<usize>,
    upstream: Option<u16>,
) -> (Proc, u16) {
    let port = free_port();
    let config = config(port, docs, upstream, o.identity_cache_bytes);
    let p = flagpole_http_bench::setup::start_flagpole(&o.paths, label, cpu, &config, port, docs);
    (p, port)
}

// ---------------------------------------------------------------------------------------------
// Endpoints

pub(crate) const POST_BODY: &str = r#"{"identifier":"bench-user","traits":[{"trait_key":"plan","trait_value":"enterprise"},{"trait_key":"age","trait_value":42},{"trait_key":"app_version","trait_value":"2.4.1"}]}"#;

pub(crate) struct Endpoint {
    pub(crate) name: &'static str,
    pub(crate) method: &'static str,
    pub(crate) path: &'static str,
    pub(crate) server_key: bool,
    pub(crate) accept_encoding: Option<&'static str>,
    /// Identifiers drawn by `zipf_identities.lua` (its argument: `get` or `post`).
    pub(crate) zipf: Option<&'static str>,
}

pub(crate) fn endpoint(name: &str) -> Endpoint {
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
        // The script sets the identifier of each request.
        "identities_get_zipf" => ("GET", "/api/v1/identities/", false, None),
        "identities_post_zipf" => ("POST", "/api/v1/identities/", false, None),
        _ => unreachable!(),
    };
    let zipf = match name {
        "identities_get_zipf" => Some("get"),
        "identities_post_zipf" => Some("post"),
        _ => None,
    };
    Endpoint {
        name: ALL_ENDPOINTS
            .iter()
            .chain(ZIPF_ENDPOINTS)
            .find(|e| **e == name)
            .unwrap(),
        method,
        path,
        server_key,
        accept_encoding,
        zipf,
    }
}

pub(crate) fn fetch(port: u16, doc: &Doc, ep: &Endpoint) -> Reply {
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
pub(crate) fn prepare_limit_bodies(o: &Opts, port: u16, docs: &[Doc]) -> PathBuf {
    let dir = o.paths.work.join("limit-bodies");
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
            let mut r = fetch(port, d, &ep);
            if let Some(want) = ep.accept_encoding {
                // A new document is served uncompressed until its variants are made (a
                // background step after the swap): wait for them.
                let deadline = Instant::now() + Duration::from_secs(10);
                while r.header("content-encoding") != Some(want) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(50));
                    r = fetch(port, d, &ep);
                }
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
