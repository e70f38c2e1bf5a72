//! `limit-server --port P --manifest FILE`: the physical limit for the HTTP benchmark.
//!
//! A minimal hyper (HTTP/1.1) server that answers every Flagsmith endpoint with pre-built bytes
//! fetched from a running Flagpole: no evaluation, no routing framework, no middleware. Only
//! what any server must do remains: parse the request, find the body by `X-Environment-Key`
//! and path, read a POST body, write the response (TCP_NODELAY, keep-alive).
//!
//! The manifest is a JSON list of environments:
//! `[{"client_key", "server_key", "flags", "identity_get", "identity_post", "document",
//!    "document_gzip", "document_zstd"}]`, each body a file path.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

struct Env {
    flags: Bytes,
    identity_get: Bytes,
    identity_post: Bytes,
    document: Bytes,
    document_gzip: Bytes,
    document_zstd: Bytes,
}

type Table = HashMap<String, Arc<Env>>;

fn body(bytes: Bytes, encoding: Option<&'static str>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(bytes));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(e) = encoding {
        r.headers_mut()
            .insert(CONTENT_ENCODING, HeaderValue::from_static(e));
    }
    r
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(b"{}")));
    *r.status_mut() = code;
    r
}

async fn handle(
    table: Arc<Table>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let Some(env) = req
        .headers()
        .get("x-environment-key")
        .and_then(|v| v.to_str().ok())
        .and_then(|k| table.get(k.trim()))
        .cloned()
    else {
        return Ok(status(StatusCode::UNAUTHORIZED));
    };
    let path = req.uri().path().trim_end_matches('/');
    let response = match (req.method(), path) {
        (&Method::GET, "/api/v1/flags") => body(env.flags.clone(), None),
        (&Method::GET, "/api/v1/identities") => body(env.identity_get.clone(), None),
        (&Method::POST, "/api/v1/identities") => {
            // Read the request body, as any server must.
            let _ = req.into_body().collect().await;
            body(env.identity_post.clone(), None)
        }
        (&Method::GET, "/api/v1/environment-document") => {
            let accept = req
                .headers()
                .get(ACCEPT_ENCODING)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            if accept.contains("zstd") {
                body(env.document_zstd.clone(), Some("zstd"))
            } else if accept.contains("gzip") {
                body(env.document_gzip.clone(), Some("gzip"))
            } else {
                body(env.document.clone(), None)
            }
        }
        _ => status(StatusCode::NOT_FOUND),
    };
    Ok(response)
}

fn load(manifest: &str) -> Result<Table, String> {
    let text = std::fs::read(manifest).map_err(|e| format!("{manifest}: {e}"))?;
    let list: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| format!("{manifest}: {e}"))?;
    let mut table = Table::new();
    for item in list.as_array().ok_or("manifest: must be a list")? {
        let file = |name: &str| -> Result<Bytes, String> {
            let path = item
                .get(name)
                .and_then(|v| v.as_str())
                .ok_or_else(|| format!("manifest: missing {name}"))?;
            std::fs::read(path)
                .map(Bytes::from)
                .map_err(|e| format!("{path}: {e}"))
        };
        let key = |name: &str| -> Result<String, String> {
            item.get(name)
                .and_then(|v| v.as_str())
                .map(str::to_owned)
                .ok_or_else(|| format!("manifest: missing {name}"))
        };
        let env = Arc::new(Env {
            flags: file("flags")?,
            identity_get: file("identity_get")?,
            identity_post: file("identity_post")?,
            document: file("document")?,
            document_gzip: file("document_gzip")?,
            document_zstd: file("document_zstd")?,
        });
        table.insert(key("client_key")?, env.clone());
        table.insert(key("server_key")?, env);
    }
    Ok(table)
}

fn main() {
    let mut port: u16 = 0;
    let mut manifest = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" => port = args.next().and_then(|p| p.parse().ok()).expect("--port N"),
            "--manifest" => manifest = args.next(),
            _ => {
                eprintln!("usage: limit-server --port P --manifest FILE");
                std::process::exit(2);
            }
        }
    }
    let table = match load(&manifest.expect("--manifest FILE")) {
        Ok(t) => Arc::new(t),
        Err(e) => {
            eprintln!("limit-server: {e}");
            std::process::exit(2);
        }
    };
    // Same runtime as `flagpole serve`: multi-threaded, one worker per available CPU.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
        eprintln!(
            "limit-server listening on {}",
            listener.local_addr().unwrap()
        );
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let table = table.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req| handle(table.clone(), req));
                let _ = http1::Builder::new()
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
}
