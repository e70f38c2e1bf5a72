//! `env-memory DOC.json [N] [distinct]`: what one environment holds in memory, per component,
//! measured by a counting global allocator (live bytes: allocated minus freed). It builds `N`
//! environments (default 100) from copies of the document with distinct `api_key`s, exactly as
//! `flagpole serve` does for `flagpole.documents` (a slot in the store with its key, the
//! snapshot built from the bytes), and reports the bytes each step keeps alive per environment.
//! With `distinct`, every copy's `REGEX` patterns end in `|copy<i>`, as `bench/many.sh`'s
//! "distinct rules" set does: no segment rule set or regex is shared between the copies. Prints
//! one JSON object; `bench/many.sh` turns it into the table in bench/RESULTS.md.

use std::sync::Arc;

use bytes::Bytes;
use flagpole_bench::counting::{self, live, Counting};
use flagpole_server::{
    Encoding, EnvSlot, EtagMemo, KeyKind, PreparedBody, Received, Snapshot, Source, Store,
};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Live bytes per item that `make` keeps, over `n` items (the items are kept until the end).
fn per_item<T>(n: usize, mut make: impl FnMut(usize) -> T) -> (f64, Vec<T>) {
    let before = live();
    let kept: Vec<T> = (0..n).map(&mut make).collect();
    let after = live();
    let vec_itself = (kept.capacity() * std::mem::size_of::<T>()) as i64;
    ((after - before - vec_itself) as f64 / n as f64, kept)
}

fn main() {
    counting::count(true);
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: env-memory DOC.json [N]");
    let n: usize = args.next().map_or(100, |a| a.parse().expect("N"));
    let distinct = args.next().is_some_and(|a| a == "distinct");
    let text = std::fs::read_to_string(&path).expect("read document");
    let original: serde_json::Value = serde_json::from_str(&text).expect("parse document");
    let documents: Vec<Bytes> = (0..n)
        .map(|i| {
            let mut doc = original.clone();
            if distinct {
                let segments = doc["project"]["segments"].as_array_mut();
                for segment in segments.into_iter().flatten() {
                    if let Some(rules) = segment.get_mut("rules") {
                        suffix_regexes(rules, &format!("|copy{i}"));
                    }
                }
            }
            doc["api_key"] = format!("env_{i:05}").into();
            Bytes::from(serde_json::to_vec(&doc).expect("serialise"))
        })
        .collect();
    let document_bytes = documents[0].len();
    let store = Store::new(None, None, Default::default());

    // The environment itself: its slot (atomics, cells, the revision channel) and key entries.
    let (slot_bytes, slots) = per_item(n, |i| {
        store.add(
            EnvSlot::new(format!("env_{i:05}"), Source::File(path.clone().into())),
            &[format!("ser.env_{i:05}")],
        )
    });
    // The document read once: the compiled environment and the facts a snapshot takes.
    let (received_bytes, received) = per_item(n, |i| {
        Received::from_bytes(&documents[i], None).expect("the document compiles")
    });
    drop(received);
    // Of which the engine's compiled environment alone.
    let (engine_bytes, engines) = per_item(n, |i| {
        flagpole_engine::Environment::from_document_json(&documents[i]).expect("compiles")
    });
    drop(engines);
    // The whole snapshot as served before any request: the above plus the prepared bodies and
    // the document body (its own copy of the bytes, as a snapshot built from a fetch has).
    let (snapshot_bytes, snapshots) = per_item(n, |i| {
        let received = Received::from_bytes(&documents[i], None).expect("the document compiles");
        let own = Bytes::copy_from_slice(&documents[i]);
        Snapshot::from_received(received, own, 1, true).expect("builds")
    });
    // Parts of it, measured alone: the document body as kept before a request asks (packed:
    // gzipped only), and with every variant and its uncompressed form once asked for.
    let (document_body_bytes, bodies) = per_item(n, |i| {
        PreparedBody::packed(Bytes::copy_from_slice(&documents[i]))
    });
    let (all_variants_bytes, _asked) = per_item(n, |i| {
        for encoding in ["gzip", "br", "zstd", "identity"] {
            std::hint::black_box(bodies[i].negotiate(Some(encoding)));
        }
        let _ = Encoding::Identity;
    });
    let flags_body = snapshots[0].flags(KeyKind::Server).len();
    // The OFREP ETag memo and the identity cache, as a new snapshot has them.
    let (etag_memo_bytes, _memos) = per_item(n, |_| EtagMemo::default());
    let snapshot_struct = std::mem::size_of::<Snapshot>();
    let slots_in_store = Arc::strong_count(&slots[0]);
    let out = serde_json::json!({
        "document": path,
        "environments": n,
        "document_bytes": document_bytes,
        "flags_body_bytes": flags_body,
        "per_environment": {
            "slot_and_keys": slot_bytes,
            "compiled_document": received_bytes,
            "engine_environment": engine_bytes,
            "snapshot_total": snapshot_bytes,
            "snapshot_beyond_compiled": snapshot_bytes - received_bytes,
            "document_body_before_requests": document_body_bytes,
            "document_variants_once_asked": all_variants_bytes,
            "etag_memo": etag_memo_bytes,
            "snapshot_struct": snapshot_struct,
            "total": slot_bytes + snapshot_bytes,
        },
        "slot_references": slots_in_store,
    });
    println!("{}", serde_json::to_string_pretty(&out).expect("json"));
    drop(snapshots);
}

/// Appends `suffix` to the value of every `REGEX` condition in `rules`, nested rules included.
fn suffix_regexes(rules: &mut serde_json::Value, suffix: &str) {
    let Some(rules) = rules.as_array_mut() else {
        return;
    };
    for rule in rules
        .iter_mut()
        .filter_map(serde_json::Value::as_object_mut)
    {
        let conditions = rule.get_mut("conditions").and_then(|c| c.as_array_mut());
        for condition in conditions.into_iter().flatten() {
            if condition["operator"] == "REGEX" {
                if let Some(pattern) = condition["value"].as_str() {
                    condition["value"] = format!("{pattern}{suffix}").into();
                }
            }
        }
        if let Some(nested) = rule.get_mut("rules") {
            suffix_regexes(nested, suffix);
        }
    }
}
