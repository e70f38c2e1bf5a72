//! Unleash's client specification (npm `@unleash/client-specification`, the version
//! tests/unleash/node pins): every case of every file its `index.json` lists, run against this
//! crate, and not one disagreement allowed. A file's `state` is a client-features body (or, for
//! the delta API's files, events that build one); `tests` expect `isEnabled`, `variantTests`
//! `getVariant`.
//!
//! The files come from npm, installed by scripts/test.sh, which passes their directory in
//! `FLAGPOLE_UNLEASH_SPEC`. Without it the test says it skipped, except under `CI=true`, where
//! it fails: CI must never pass by skipping.

use std::path::{Path, PathBuf};

use flagpole_unleash::{Context, Features};
use serde_json::{json, Map, Value};

const SPEC_VAR: &str = "FLAGPOLE_UNLEASH_SPEC";

fn in_ci() -> bool {
    std::env::var("CI")
        .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

fn spec_dir() -> Option<PathBuf> {
    match std::env::var_os(SPEC_VAR) {
        Some(dir) => Some(PathBuf::from(dir)),
        None if in_ci() => panic!(
            "{SPEC_VAR} is not set: the client specification must run under CI \
             (scripts/test.sh installs it with npm ci in tests/unleash/node)"
        ),
        None => {
            eprintln!(
                "SKIPPED: {SPEC_VAR} is not set (scripts/test.sh sets it after npm ci in tests/unleash/node)"
            );
            None
        }
    }
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A client-features body from the delta API's events, applied in order as an SDK applies them.
fn body_from_events(events: &[Value]) -> Value {
    let mut features: Vec<Value> = Vec::new();
    let mut segments: Vec<Value> = Vec::new();
    fn upsert(list: &mut Vec<Value>, item: &Value, key: &str) {
        match list.iter_mut().find(|existing| existing[key] == item[key]) {
            Some(existing) => *existing = item.clone(),
            None => list.push(item.clone()),
        }
    }
    for event in events {
        match event["type"].as_str() {
            Some("hydration") => {
                features = event["features"].as_array().cloned().unwrap_or_default();
                segments = event["segments"].as_array().cloned().unwrap_or_default();
            }
            Some("feature-updated") => upsert(&mut features, &event["feature"], "name"),
            Some("feature-removed") => features.retain(|f| f["name"] != event["featureName"]),
            Some("segment-updated") => upsert(&mut segments, &event["segment"], "id"),
            Some("segment-removed") => segments.retain(|s| s["id"] != event["segmentId"]),
            other => panic!("unknown delta event type {other:?}"),
        }
    }
    json!({"version": 1, "features": features, "segments": segments})
}

fn features_for(state: &Value) -> Features {
    let body = match state.get("events").and_then(Value::as_array) {
        Some(events) => body_from_events(events),
        None => state.clone(),
    };
    Features::from_slice(body.to_string().as_bytes())
        .unwrap_or_else(|e| panic!("state refused: {e}"))
}

fn context_for(case: &Value) -> Context {
    let context = case
        .get("context")
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    Context::from_json(context.to_string().as_bytes()).unwrap_or_else(|e| panic!("context: {e}"))
}

#[derive(Default)]
struct Tally {
    cases: usize,
    disagreements: Vec<String>,
}

impl Tally {
    fn check(&mut self, file: &str, case: &Value, expected: Value, actual: Value) {
        self.cases += 1;
        if expected != actual {
            self.disagreements.push(format!(
                "{file}: {}: expected {expected}, got {actual}",
                case["description"].as_str().unwrap_or("?")
            ));
        }
    }
}

fn run_file(file: &str, spec: &Value, tally: &mut Tally) {
    let features = features_for(&spec["state"]);
    for case in spec["tests"].as_array().into_iter().flatten() {
        let name = case["toggleName"].as_str().expect("toggleName");
        let actual = features.is_enabled(name, &context_for(case));
        tally.check(file, case, case["expectedResult"].clone(), json!(actual));
    }
    for case in spec["variantTests"].as_array().into_iter().flatten() {
        let name = case["toggleName"].as_str().expect("toggleName");
        let variant = features.variant(name, &context_for(case));
        let mut actual = json!({
            "name": variant.name,
            "enabled": variant.enabled,
            "feature_enabled": variant.feature_enabled,
        });
        if let Some(payload) = variant.payload {
            actual["payload"] = json!({"type": payload.kind, "value": payload.value});
        }
        let expected = case["expectedResult"].clone();
        tally.check(file, case, expected, actual);
    }
}

#[test]
fn every_case_of_the_client_specification() {
    let Some(dir) = spec_dir() else { return };
    let index = read_json(&dir.join("index.json"));
    let files: Vec<&str> = index
        .as_array()
        .expect("index.json lists the files")
        .iter()
        .map(|f| f.as_str().expect("a file name"))
        .collect();
    assert!(!files.is_empty(), "index.json lists no file");

    let mut tally = Tally::default();
    for file in &files {
        let before = tally.cases;
        run_file(file, &read_json(&dir.join(file)), &mut tally);
        assert!(tally.cases > before, "{file}: no case ran");
    }
    println!(
        "client specification: {} files, {} cases, {} disagreements",
        files.len(),
        tally.cases,
        tally.disagreements.len()
    );
    assert!(
        tally.disagreements.is_empty(),
        "{} of {} cases disagree:\n{}",
        tally.disagreements.len(),
        tally.cases,
        tally.disagreements.join("\n")
    );
}
