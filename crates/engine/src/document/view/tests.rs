//! The view maps every document it accepts exactly as the tree path does, and refuses (leaving
//! the document to the tree path) whatever it cannot map exactly.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::DocumentView;
use crate::document::document_to_context;

const EXAMPLE: &str = include_str!("../../../../../examples/environment.json");

/// The view's context for `bytes`, or `None` when the view leaves the document to the tree path.
fn view_context(bytes: &[u8]) -> Option<String> {
    DocumentView::parse(bytes)?.context().map(|c| c.to_string())
}

/// What the tree path makes of `bytes`: its context, or its error.
fn tree_context(bytes: &[u8]) -> Result<String, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    document_to_context(&doc)
        .map(|c| c.to_string())
        .map_err(|e| e.to_string())
}

/// Checks that the view agrees with the tree path when it answers; returns whether it did.
fn agrees(bytes: &[u8]) -> bool {
    match (view_context(bytes), tree_context(bytes)) {
        (Some(view), Ok(tree)) => {
            assert_eq!(view, tree, "{}", String::from_utf8_lossy(bytes));
            true
        }
        (Some(view), Err(e)) => panic!("the view accepts what the tree path rejects ({e}): {view}"),
        (None, _) => false,
    }
}

fn example_with_overrides(overrides: Value) -> Vec<u8> {
    let mut doc: Value = serde_json::from_str(EXAMPLE).unwrap();
    doc["identity_overrides"] = overrides;
    serde_json::to_vec(&doc).unwrap()
}

fn identity(identifier: &str, features: &[(&str, &str, Option<&str>, Option<&str>)]) -> Value {
    let features: Vec<Value> = features
        .iter()
        .map(|(name, id, enabled, value)| {
            let mut fs = json!({"feature": {"id": serde_json::from_str::<Value>(id).unwrap(),
                                            "name": name, "type": "STANDARD"},
                                "django_id": null, "featurestate_uuid": "u"});
            if let Some(e) = enabled {
                fs["enabled"] = serde_json::from_str(e).unwrap();
            }
            if let Some(v) = value {
                fs["feature_state_value"] = serde_json::from_str(v).unwrap();
            }
            fs
        })
        .collect();
    json!({"identifier": identifier, "identity_uuid": "x", "identity_traits": [],
           "identity_features": features})
}

#[test]
fn the_example_is_read_by_the_view() {
    assert!(agrees(EXAMPLE.as_bytes()));
}

#[test]
fn identities_group_by_python_equality() {
    let doc = example_with_overrides(json!([
        identity(
            "a",
            &[("f", "1", Some("true"), Some("1")), ("g", "2", None, None)]
        ),
        // Equal to `a` in Python: 1 == 1.0 == True, and the order of features does not matter.
        identity(
            "b",
            &[
                ("g", "2.0", Some("false"), Some("null")),
                ("f", "true", Some("1"), Some("1.0"))
            ]
        ),
        // Not equal: "1" is a string.
        identity(
            "c",
            &[
                ("f", "1", Some("true"), Some("\"1\"")),
                ("g", "2", None, None)
            ]
        ),
        identity(
            "d",
            &[
                ("f", "1", Some("true"), Some("1.5")),
                ("g", "2", None, None)
            ]
        ),
        identity("e", &[]),
        identity(
            "f",
            &[("f", "1", Some("true"), Some("\"caf\\u00e9 \\\"q\\\"\""))]
        ),
        identity(
            "g",
            &[(
                "f|x",
                "1e2",
                Some("null"),
                Some("123456789012345678901234567890")
            )]
        ),
        identity("h", &[("f", "-0", Some("0"), Some("-7"))]),
        // Equal to `h`: -0 == 0 == 0.0 and -7 == -7.0.
        identity("i", &[("f", "0", Some("0.0"), Some("-7.0"))]),
        json!({"identifier": 7, "identity_features": null}),
        json!({"identity_features": [{"feature": {"name": "f"}}]}),
    ]));
    assert!(agrees(&doc));
    let context: Value = serde_json::from_str(&view_context(&doc).unwrap()).unwrap();
    let groups = context["segments"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.starts_with("identity_overrides:"))
        .count();
    // {a, b}, c, d, f, g, {h, i}, and the identity without an identifier.
    assert_eq!(groups, 7);
}

#[test]
fn escaped_member_names_are_read_decoded() {
    let text = EXAMPLE
        .replacen("\"identity_features\"", "\"identity\\u005ffeatures\"", 1)
        .replacen("\"api_key\"", "\"api\\u005Fkey\"", 1);
    assert!(agrees(text.as_bytes()));
}

/// Documents the view leaves to the tree path (which then gives its own result or error).
#[test]
fn what_the_view_cannot_map_exactly_is_left_to_the_tree() {
    let identity_features = "\"identity_features\": [";
    let at = EXAMPLE.find(identity_features).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "a repeated member (the tree keeps the last)",
            EXAMPLE
                .replacen(
                    identity_features,
                    "\"identity_features\": [], \"identity_features\": [",
                    1,
                )
                .into_bytes(),
        ),
        (
            "a repeated top-level member",
            EXAMPLE
                .replacen("{", "{\"name\": \"first\", ", 1)
                .into_bytes(),
        ),
        (
            "a lone surrogate in a member nobody reads",
            EXAMPLE
                .replacen("\"identity_uuid\": \"", "\"identity_uuid\": \"\\ud800", 1)
                .into_bytes(),
        ),
        (
            "nesting deeper than the parser's limit, in a member nobody reads",
            EXAMPLE
                .replacen(
                    "\"identity_traits\": []",
                    &format!(
                        "\"identity_traits\": {}{}",
                        "[".repeat(130),
                        "]".repeat(130)
                    ),
                    1,
                )
                .into_bytes(),
        ),
        (
            "an object as an override's value",
            EXAMPLE
                .replacen(
                    "\"feature_state_value\": \"Welcome back, VIP!\"",
                    "\"feature_state_value\": {\"a\": 1}",
                    1,
                )
                .into_bytes(),
        ),
        (
            "an identity that is an array",
            example_with_overrides(json!([["vip", []]])),
        ),
        (
            "a feature without a name",
            example_with_overrides(
                json!([{"identifier": "x", "identity_features": [{"feature": {"id": 1}}]}]),
            ),
        ),
        ("not an object", b"[1, 2]".to_vec()),
        ("not JSON", b"{\"api_key\": ".to_vec()),
        (
            "a bad feature state",
            EXAMPLE
                .replacen("\"feature_states\": [", "\"feature_states\": [7, ", 1)
                .into_bytes(),
        ),
        (
            "invalid UTF-8 in a member nobody reads",
            [
                &EXAMPLE.as_bytes()[..at],
                b"\"x\": \"\xff\", ",
                &EXAMPLE.as_bytes()[at..],
            ]
            .concat(),
        ),
    ];
    for (what, bytes) in cases {
        assert_eq!(view_context(&bytes), None, "{what}");
    }
}

/// Scalars whose spellings Python may or may not consider equal.
fn scalar_text() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "1",
        "1.0",
        "true",
        "\"1\"",
        "0",
        "false",
        "0.0",
        "-0",
        "null",
        "\"a\"",
        "\"a|b\"",
        "\"\\u0061\"",
        "2.5",
        "1e400",
        "12345678901234567890",
        "-3",
    ])
}

prop_compose! {
    fn override_feature()(
        name in prop::sample::select(vec!["f", "g", "h|1", "f\u{0}"]),
        id in scalar_text(),
        enabled in prop::option::of(scalar_text()),
        value in prop::option::of(scalar_text()),
    ) -> Value {
        let mut fs = json!({"feature": {"id": serde_json::from_str::<Value>(id).unwrap(), "name": name}});
        if let Some(e) = enabled {
            fs["enabled"] = serde_json::from_str(e).unwrap();
        }
        if let Some(v) = value {
            fs["feature_state_value"] = serde_json::from_str(v).unwrap();
        }
        fs
    }
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        scalar_text().prop_map(|t| serde_json::from_str(t).unwrap()),
        "[a-z|\"\\\\é]{0,5}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Replaces the `n`-th node (in pre-order, wrapping) of `doc` with `replacement`.
fn replace_nth(doc: &mut Value, n: &mut usize, replacement: &Value) -> bool {
    if *n == 0 {
        *doc = replacement.clone();
        return true;
    }
    *n -= 1;
    match doc {
        Value::Array(items) => items.iter_mut().any(|v| replace_nth(v, n, replacement)),
        Value::Object(map) => map.values_mut().any(|v| replace_nth(v, n, replacement)),
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn generated_overrides_map_as_the_tree_maps_them(
        identities in prop::collection::vec(
            ("[a-c]{1,2}", prop::collection::vec(override_feature(), 0..4)),
            0..12,
        ),
    ) {
        let overrides: Vec<Value> = identities
            .into_iter()
            .map(|(identifier, features)| json!({"identifier": identifier, "identity_features": features}))
            .collect();
        let bytes = example_with_overrides(Value::Array(overrides));
        prop_assert!(agrees(&bytes), "the view refused generated overrides");
    }

    #[test]
    fn mutated_documents_map_as_the_tree_maps_them(
        mutations in prop::collection::vec((0usize..400, any_json()), 1..4),
    ) {
        let mut doc: Value = serde_json::from_str(EXAMPLE).unwrap();
        for (index, replacement) in &mutations {
            let mut n = *index;
            replace_nth(&mut doc, &mut n, replacement);
        }
        agrees(&serde_json::to_vec(&doc).unwrap());
    }
}
