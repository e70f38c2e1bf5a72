//! The text writer writes exactly what the tree writer writes for the parsed text.

use proptest::prelude::*;
use serde_json::Value;

use super::write;

/// The canonical form written from the text, and from the parsed tree.
fn both(text: &str) -> (Option<String>, String) {
    let mut from_text = Vec::new();
    let written = write(&mut from_text, text).map(|()| String::from_utf8(from_text).unwrap());
    let tree: Value = serde_json::from_str(text).unwrap();
    let mut from_tree = Vec::new();
    crate::canonical::write(&mut from_tree, &tree);
    (written, String::from_utf8(from_tree).unwrap())
}

fn assert_same(text: &str) {
    let (from_text, from_tree) = both(text);
    assert_eq!(from_text.as_deref(), Some(from_tree.as_str()), "{text}");
}

#[test]
fn numbers_are_written_as_the_tree_writes_them() {
    for n in [
        "0",
        "-0",
        "7",
        "-7",
        "123456789012345",
        "1234567890123456",
        "12345678901234567890123",
        "1.0",
        "-0.0",
        "1.5",
        "1e2",
        "1E2",
        "1e+2",
        "1E-2",
        "1.5e300",
        "1e400",
        "-1E400",
        "1e999",
        "1.0e+999",
        "0.000001",
        "1e-7",
        "1e21",
        "100000000000000000000",
    ] {
        assert_same(n);
        assert_same(&format!("[{n}, {{\"n\": {n}}}]"));
    }
}

#[test]
fn strings_and_names_are_written_as_the_tree_writes_them() {
    assert_same(
        r#"{"b":[1.0,1e21,0.000001,1e-7,-0.0],"a":"\u20ac\n","\u00e9":1,"\ud83d\ude00":2,"\ufb01":3}"#,
    );
    assert_same(r#"{"\u0061": "\/\"\\\b\f\n\r\t\u0001", "é": "café", "a\"b": "😀"}"#);
    // Names ordered by UTF-16 code units: U+FB01 sorts after the surrogate pair of U+1F600.
    assert_same("{\"\u{fb01}\": 1, \"\u{1f600}\": 2, \"z\": 3, \"\u{e000}\": 4, \"\u{ffff}\": 5}");
    assert_same(" { \"z\" : [ ] , \"a\" : { } , \"m\" : [ true , false , null ] } ");
}

#[test]
fn the_example_document_is_written_as_the_tree_writes_it() {
    let example = include_str!("../../../../examples/environment.json");
    assert_same(example);
    let compact = serde_json::to_string(&serde_json::from_str::<Value>(example).unwrap()).unwrap();
    assert_same(&compact);
}

#[test]
fn what_the_writer_does_not_expect_is_refused() {
    for text in [
        // A repeated name: the tree keeps the last value (at the first name's place).
        r#"{"a": 1, "b": 2, "a": 3}"#,
        "",
        "{",
        r#"{"a" 1}"#,
        r#"["\"#,
        r#""\u12"#,
        "[1,]",
        "tru",
        "[1] x",
    ] {
        assert_eq!(write(&mut Vec::new(), text), None, "{text}");
    }
    let deep = format!("{}{}", "[".repeat(129), "]".repeat(129));
    assert_eq!(write(&mut Vec::new(), &deep), None);
    let deep_enough = format!("{}{}", "[".repeat(128), "]".repeat(128));
    assert_eq!(write(&mut Vec::new(), &deep_enough), Some(()));
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        prop::sample::select(vec!["1e400", "1.0", "-0", "12345678901234567890", "2E3"])
            .prop_map(|t| serde_json::from_str(t).unwrap()),
        "[a-c\"\\\\/\u{1}é\u{e000}\u{fb01}\u{1f600}]{0,4}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 24, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(("[a-c\u{e9}\u{e000}\u{fb01}\u{1f600}\"]{0,3}", inner), 0..5)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn any_document_is_written_as_the_tree_writes_it(doc in any_json()) {
        assert_same(&serde_json::to_string(&doc).unwrap());
        assert_same(&serde_json::to_string_pretty(&doc).unwrap());
    }
}

proptest! {
    #[test]
    fn names_are_ordered_by_utf16_code_units(
        a in "[a\u{7f}\u{80}\u{7ff}\u{800}\u{d7ff}\u{e000}\u{fb01}\u{ffff}\u{10000}\u{1f600}\u{10ffff}]{0,4}",
        b in "[a\u{7f}\u{80}\u{7ff}\u{800}\u{d7ff}\u{e000}\u{fb01}\u{ffff}\u{10000}\u{1f600}\u{10ffff}]{0,4}",
    ) {
        prop_assert_eq!(super::name_order(&a, &b), a.encode_utf16().cmp(b.encode_utf16()));
    }
}
