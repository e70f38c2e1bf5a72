//! The publish decision: a document is a new revision when its content changes, never because
//! its bytes do (layout, pages merged against a single body, a file saved again).

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};

use super::{EnvSlot, Published, Source};
use crate::received::Incoming;

const EXAMPLE: &str = include_str!("../../../../examples/environment.json");
const KEY: &str = "example_client_key";

fn slot() -> Arc<EnvSlot> {
    Arc::new(EnvSlot::new(KEY.into(), Source::Embedded))
}

fn example() -> Value {
    serde_json::from_str(EXAMPLE).unwrap()
}

fn bytes(text: impl Into<Vec<u8>>) -> Incoming {
    Incoming::Bytes(Bytes::from(text.into()))
}

/// The same object with its members in reverse order, at every depth.
fn reversed(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .rev()
                .map(|(k, v)| (k.clone(), reversed(v)))
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
        other => other.clone(),
    }
}

async fn publish(slot: &Arc<EnvSlot>, document: Incoming) -> Published {
    slot.publish(document).await.expect("the document is taken")
}

#[tokio::test]
async fn the_same_content_in_other_bytes_is_not_a_new_revision() {
    let slot = slot();
    let mut changes = slot.revisions.subscribe();
    assert!(matches!(
        publish(&slot, bytes(EXAMPLE)).await,
        Published::NewRevision { revision: 1, .. }
    ));
    assert!(changes.has_changed().unwrap());
    changes.borrow_and_update();
    let served = slot.snapshot().unwrap();

    let compact = serde_json::to_vec(&example()).unwrap();
    let reordered = serde_json::to_vec_pretty(&reversed(&example())).unwrap();
    // A name given twice: the text reading leaves it to the tree (the last value counts), so
    // the build's own revision decides.
    let repeated = EXAMPLE.replacen('{', r#"{"name": "an earlier name","#, 1);
    for (what, document) in [
        ("the same bytes", bytes(EXAMPLE)),
        ("compact", bytes(compact)),
        ("members reordered, indented", bytes(reordered)),
        ("a name repeated", bytes(repeated)),
        ("merged pages (a tree)", Incoming::Tree(example())),
        ("a reordered tree", Incoming::Tree(reversed(&example()))),
    ] {
        assert_eq!(
            publish(&slot, document).await,
            Published::Unchanged(1),
            "{what}"
        );
        assert!(
            !changes.has_changed().unwrap(),
            "{what}: a change was announced"
        );
        // The document served is still the one first published, byte for byte.
        assert!(Arc::ptr_eq(&slot.snapshot().unwrap(), &served), "{what}");
    }

    let mut changed = example();
    changed["feature_states"][0]["feature_state_value"] = "Hello again".into();
    assert!(matches!(
        publish(&slot, Incoming::Tree(changed)).await,
        Published::NewRevision { revision: 2, .. }
    ));
    assert!(changes.has_changed().unwrap());
    assert_ne!(
        slot.snapshot().unwrap().content_revision,
        served.content_revision
    );
}

#[tokio::test]
async fn a_document_that_is_not_taken_leaves_the_revision_alone() {
    let slot = slot();
    publish(&slot, bytes(EXAMPLE)).await;
    let mut other = example();
    other["api_key"] = "someone_else".into();
    assert!(slot.publish(Incoming::Tree(other)).await.is_err());
    assert!(slot.publish(bytes("{\"api_key\": ")).await.is_err());
    assert_eq!(
        publish(&slot, Incoming::Tree(example())).await,
        Published::Unchanged(1)
    );
}
