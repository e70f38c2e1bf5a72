//! `alloc-count DOC.json...`: heap allocations and CPU time per `/identities` request outside the
//! HTTP stack, counted by a global allocator and timed in a loop (one thread; the median of five
//! timed rounds, so a busy machine moves it less). Prints one JSON object on standard output.
//!
//! Per document it builds the server's `Snapshot` (as `flagpole serve` does), then times
//! nothing and counts everything the identities handlers do after the HTTP layer hands them the
//! request: for POST, parsing the JSON body and validating it (`IdentityRequest::parse`); for
//! both, `Identity::new`, `Environment::evaluate` and writing the response bytes
//! (`write_identity_response` into a buffer sized as the handler sizes it). "Output" blocks are
//! those still alive afterwards (the response buffer and the result's Vecs). `bytes/request` is
//! the total allocated: a deep copy of environment data would show up here as a size in the
//! order of the document, not of the response.

use flagpole_bench::counting::{self, Counting};
use flagpole_engine::Identity;
use flagpole_server::{identity_cache, identity_response, IdentityRequest, KeyKind, Snapshot};

#[global_allocator]
static GLOBAL: Counting = Counting;

const N: u64 = 200;
const POST_BODY: &[u8] = br#"{"identifier":"load-1-000001","traits":[{"trait_key":"plan","trait_value":"enterprise"},{"trait_key":"age","trait_value":42},{"trait_key":"app_version","trait_value":"2.4.1"}]}"#;

fn counted(mut f: impl FnMut()) -> (f64, f64) {
    f(); // warm (lazy statics, first-use caches)
    let (a0, b0) = (counting::calls(), counting::bytes());
    for _ in 0..N {
        f();
    }
    let (a1, b1) = (counting::calls(), counting::bytes());
    ((a1 - a0) as f64 / N as f64, (b1 - b0) as f64 / N as f64)
}

/// Nanoseconds per call of `f`: the median of five rounds of about 100 ms each.
fn timed(mut f: impl FnMut()) -> f64 {
    let started = std::time::Instant::now();
    let mut calls = 0u64;
    while started.elapsed().as_millis() < 20 {
        f();
        calls += 1;
    }
    let per_round = (calls * 5).max(1);
    let mut rounds: Vec<f64> = (0..5)
        .map(|_| {
            let started = std::time::Instant::now();
            for _ in 0..per_round {
                f();
            }
            started.elapsed().as_nanos() as f64 / per_round as f64
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[2]
}

fn main() {
    counting::count(true);
    let mut out = serde_json::Map::new();
    for path in std::env::args().skip(1) {
        let name = std::path::Path::new(&path)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("doc")
            .to_owned();
        let bytes = std::fs::read(&path).expect("read document");
        let doc: serde_json::Value = serde_json::from_slice(&bytes).expect("parse document");
        let snapshot = Snapshot::build(&doc, 1).expect("build snapshot");
        let kind = KeyKind::Client;

        let mut get_handler = || {
            let identity = Identity::new("bench-user", &[]);
            let result = snapshot.env.evaluate(Some(&identity)).expect("evaluate");
            let mut body = Vec::with_capacity(256 + snapshot.flags_capacity_hint());
            identity_response::write(&mut body, &snapshot, kind, "bench-user", &[], &result);
            std::hint::black_box(&body);
        };
        let get = counted(&mut get_handler);
        let get_ns = timed(&mut get_handler);
        let get_evaluate_ns = timed(|| {
            let identity = Identity::new("bench-user", &[]);
            std::hint::black_box(snapshot.env.evaluate(Some(&identity)).expect("evaluate"));
        });
        // Writing alone, for one evaluation: from the prepared flag objects (what the handler
        // does) and through the general per-flag writer (serde), for comparison.
        let identity = Identity::new("bench-user", &[]);
        let result = snapshot.env.evaluate(Some(&identity)).expect("evaluate");
        let write_prepared_ns = timed(|| {
            let mut body = Vec::with_capacity(256 + snapshot.flags_capacity_hint());
            identity_response::write(&mut body, &snapshot, kind, "bench-user", &[], &result);
            std::hint::black_box(&body);
        });
        let write_serde_ns = timed(|| {
            let mut body = Vec::with_capacity(256 + snapshot.flags_capacity_hint());
            body.push(b'[');
            for flag in &result.flags {
                if body.len() > 1 {
                    body.push(b',');
                }
                snapshot.write_flag(&mut body, kind, flag.key, flag.enabled, flag.value);
            }
            body.push(b']');
            std::hint::black_box(&body);
        });
        let mut post_handler = || {
            let request = IdentityRequest::parse(POST_BODY, 2000).expect("valid request");
            let identity = Identity::new(&request.identifier, &request.traits);
            let result = snapshot.env.evaluate(Some(&identity)).expect("evaluate");
            let mut body = Vec::with_capacity(256 + snapshot.flags_capacity_hint());
            identity_response::write(
                &mut body,
                &snapshot,
                kind,
                &request.identifier,
                &request.traits,
                &result,
            );
            std::hint::black_box(&body);
        };
        let post = counted(&mut post_handler);
        let post_ns = timed(&mut post_handler);
        // With the identity cache: a hit (parse, key, lookup), and a miss that stores its answer
        // (a new identifier each time).
        let cache_bytes = 64 << 20;
        let cached_post = |identifier: Option<&str>| {
            let request = IdentityRequest::parse(POST_BODY, 2000).expect("valid request");
            let identifier = identifier.unwrap_or(&request.identifier);
            let key = identity_cache::key(kind, identifier, &request.traits);
            if let Some(hit) = snapshot.identity_cache.get(&key) {
                std::hint::black_box(&hit);
                return;
            }
            let identity = Identity::new(identifier, &request.traits);
            let result = snapshot.env.evaluate(Some(&identity)).expect("evaluate");
            let mut body = Vec::with_capacity(256 + snapshot.flags_capacity_hint());
            identity_response::write(
                &mut body,
                &snapshot,
                kind,
                identifier,
                &request.traits,
                &result,
            );
            snapshot.identity_cache.insert(
                key,
                std::sync::Arc::new(identity_cache::Answer::new(body.into())),
                cache_bytes,
            );
        };
        let post_hit_ns = timed(|| cached_post(None));
        let mut n = 0u64;
        let post_miss_ns = timed(|| {
            n += 1;
            cached_post(Some(&format!("new-{n}")));
        });
        // The parts of POST: parsing the request body alone.
        let post_json = counted(|| {
            let request = IdentityRequest::parse(POST_BODY, 2000).expect("valid request");
            std::hint::black_box(&request.traits);
        });
        out.insert(
            name,
            serde_json::json!({
                "document_bytes": bytes.len(),
                "get_allocs_per_request": get.0,
                "get_bytes_per_request": get.1,
                "post_allocs_per_request": post.0,
                "post_bytes_per_request": post.1,
                "post_request_json_allocs": post_json.0,
                "output_blocks": 3,
                "get_ns_per_request": get_ns.round(),
                "get_evaluate_ns": get_evaluate_ns.round(),
                "post_ns_per_request": post_ns.round(),
                "post_cache_hit_ns": post_hit_ns.round(),
                "write_prepared_ns": write_prepared_ns.round(),
                "write_serde_ns": write_serde_ns.round(),
                "post_cache_miss_ns": post_miss_ns.round(),
            }),
        );
    }
    println!("{}", serde_json::Value::Object(out));
}
