//! Reading a document from its text gives what reading its tree gives, and refuses it in the
//! same words.

use serde_json::{json, Value};

use super::{content_revision, Incoming, Received, Rejected};
use flagpole_engine::{Identity, Trait, TraitValue};

const EXAMPLE: &str = include_str!("../../../../examples/environment.json");
const KEY: &str = "example_client_key";

/// Everything a snapshot takes from a reading, as text: the evaluations stand in for the
/// compiled environment.
fn summary(received: &Received) -> String {
    let mut ids: Vec<&String> = received.server_only_ids.iter().collect();
    ids.sort();
    let mut out = format!(
        "{:?}\n{ids:?}\n{}\n{:?}\n{}\n{:?}\n",
        received.features,
        received.hide_disabled,
        received.updated_at,
        received.content_revision,
        received.diagnostics,
    );
    let mut write = |result: flagpole_engine::EvaluationResult<'_>| {
        let mut bytes = Vec::new();
        result.write_json(&mut bytes).unwrap();
        out.push_str(&String::from_utf8(bytes).unwrap());
        out.push('\n');
    };
    write(received.env.own_flags().unwrap());
    write(received.env.evaluate(None).unwrap());
    let traits = [Trait {
        key: "plan".into(),
        value: TraitValue::Str("enterprise".into()),
    }];
    for identifier in ["vip-customer", "alice", "b"] {
        write(
            received
                .env
                .evaluate(Some(&Identity::new(identifier, &traits)))
                .unwrap(),
        );
    }
    out
}

/// Reads `bytes` both ways; asserts they agree; returns whether the text reading answered.
fn agrees(bytes: &[u8]) -> bool {
    let tree: Value = serde_json::from_slice(bytes).unwrap();
    let from_tree = Received::from_tree(&tree, Some(KEY)).unwrap();
    let from_bytes = Received::from_bytes(bytes, Some(KEY)).unwrap();
    assert_eq!(summary(&from_bytes), summary(&from_tree));
    // The revision publishing asks for alone is the one a build holds.
    let incoming = Incoming::Bytes(bytes::Bytes::copy_from_slice(bytes));
    if let Some(alone) = content_revision(&incoming, bytes) {
        assert_eq!(alone, from_tree.content_revision);
    }
    assert_eq!(
        content_revision(&Incoming::Tree(tree.clone()), bytes),
        Some(from_tree.content_revision.clone())
    );
    Received::from_text(bytes, Some(KEY), None).is_some()
}

fn example() -> Value {
    serde_json::from_str(EXAMPLE).unwrap()
}

#[test]
fn the_example_is_read_from_its_text_as_from_its_tree() {
    assert!(agrees(EXAMPLE.as_bytes()));
    let doc = example();
    assert!(agrees(&serde_json::to_vec(&doc).unwrap()));
    assert!(agrees(&serde_json::to_vec_pretty(&doc).unwrap()));
}

#[test]
fn identity_overrides_are_read_from_the_text_as_from_the_tree() {
    let mut doc = example();
    let features = doc["identity_overrides"][0]["identity_features"].clone();
    let mut overrides = Vec::new();
    for (i, identifier) in ["a", "b", "alice", "c"].iter().enumerate() {
        let mut features = features.clone();
        features[0]["feature_state_value"] = json!(i % 2);
        overrides.push(json!({"identifier": identifier, "identity_features": features}));
    }
    doc["identity_overrides"] = Value::Array(overrides);
    assert!(agrees(&serde_json::to_vec(&doc).unwrap()));
}

#[test]
fn what_the_text_reading_cannot_take_is_read_from_the_tree() {
    // A repeated member: the tree keeps the last one.
    let repeated = EXAMPLE.replacen('{', "{\"updated_at\": 1, ", 1);
    assert!(!agrees(repeated.as_bytes()));
}

#[test]
fn refusals_are_worded_as_before() {
    let tree_error = serde_json::from_slice::<Value>(b"{\"api_key\": ").unwrap_err();
    match Received::from_bytes(b"{\"api_key\": ", Some(KEY)) {
        Err(Rejected::InvalidJson(e)) => assert_eq!(e, tree_error.to_string()),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        Received::from_bytes(b"[1]", Some(KEY)),
        Err(Rejected::NotAnObject)
    ));
    assert!(matches!(
        Received::from_bytes(b"{\"detail\": \"x\"}", Some(KEY)),
        Err(Rejected::NoApiKey)
    ));
    assert!(matches!(
        Received::from_bytes(EXAMPLE.as_bytes(), Some("another")),
        Err(Rejected::OtherEnvironment)
    ));
    // The engine's error, with its path, whichever way the document is read.
    let mut doc = example();
    doc["project"]["segments"][0]["rules"] = json!(7);
    let bytes = serde_json::to_vec(&doc).unwrap();
    let expected = flagpole_engine::document::document_to_context(&doc).unwrap_err();
    match Received::from_bytes(&bytes, Some(KEY)) {
        Err(Rejected::Engine(e)) => assert_eq!(e, expected),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_json_object_with_this_environments_key_is_not_yet_a_document() {
    // What a cut or planted value can be: refused, naming what is missing, never served as an
    // environment without flags.
    let near_empty = format!("{{\"api_key\": \"{KEY}\", \"hello\": 1}}");
    for received in [
        Received::from_bytes(near_empty.as_bytes(), Some(KEY)),
        Received::from_tree(&serde_json::from_str(&near_empty).unwrap(), Some(KEY)),
    ] {
        match received {
            Err(Rejected::Engine(e)) => assert_eq!(e.path, "$.feature_states"),
            other => panic!("{other:?}"),
        }
    }
}
