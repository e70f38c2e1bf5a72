//! `all`'s answers against prost's encoding of the same messages, and metadata only when asked.

use std::collections::BTreeMap;

use std::sync::Arc;

use prost::Message;
use serde_json::json;

use super::*;
use crate::keys::KeyKind;
use crate::snapshot::Snapshot;
use crate::store::{EnvSlot, Source};

/// The messages as prost generates them, maps sorted (`build.rs`); only some are used.
#[allow(
    dead_code,
    unreachable_pub,
    clippy::allow_attributes_without_reason,
    reason = "generated code, used in part: its own allows are the generator's"
)]
mod reference {
    pub(super) mod v1 {
        include!(concat!(
            env!("OUT_DIR"),
            "/reference/flagd.evaluation.v1.rs"
        ));
    }
    pub(super) mod v2 {
        include!(concat!(
            env!("OUT_DIR"),
            "/reference/flagd.evaluation.v2.rs"
        ));
    }
}

const EXAMPLE: &str = include_str!("../../../../../examples/environment.json");

/// The example environment plus flags of every value kind flagd has and some it has not.
fn document() -> Value {
    let mut doc: Value = serde_json::from_str(EXAMPLE).unwrap();
    let template = doc["feature_states"][0].clone();
    let extra = [
        (
            "object_json",
            true,
            json!("{\"b\":[1,\"x\",null,{\"e\":true}],\"a\":1,\"c\":{\"d\":2.5}}"),
        ),
        ("array_json", true, json!("[1,2]")),
        ("ratio", true, json!(2.5)),
        ("big", true, json!(12345678901_i64)),
        ("off_text", false, json!("Hi")),
        ("off_number", false, json!(3)),
        ("on_bool", true, json!(false)),
        ("", true, json!("an empty name")),
        ("ünïcode", true, json!("☃")),
    ];
    for (i, (name, enabled, value)) in extra.into_iter().enumerate() {
        let mut fs = template.clone();
        fs["feature"]["id"] = json!(900 + i);
        fs["feature"]["name"] = json!(name);
        fs["enabled"] = json!(enabled);
        fs["feature_state_value"] = value;
        fs["django_id"] = json!(9000 + i);
        fs["featurestate_uuid"] = json!(format!("00000000-0000-4000-8000-{:012}", 9000 + i));
        doc["feature_states"].as_array_mut().unwrap().push(fs);
    }
    doc
}

/// An environment's target: the document's snapshot read with a key of `kind`.
fn target(
    snapshot: &Arc<Snapshot>,
    kind: KeyKind,
    parse_json_strings: bool,
    stale: bool,
) -> Target {
    let env = Arc::new(EnvSlot::new("k".to_owned(), Source::Embedded));
    Target::environment(kind, env, snapshot.clone(), parse_json_strings).read_as_stale(stale)
}

/// `ResolveAllResponse` of one version as prost would encode it from the layer's general way
/// (each flag resolved, then typed), against which the prepared answer is compared.
macro_rules! expected {
    ($v:ident, $variant:expr) => {
        |target: &Target, caller: &Caller<'_>, asked: bool| {
            use reference::$v::{any_flag::Value as V, AnyFlag, ResolveAllResponse};
            let mut out = BTreeMap::new();
            let stale = target.stale();
            target
                .each(caller, |r| {
                    let value = match r.value.as_deref() {
                        Some(Value::Bool(b)) => Some(V::BoolValue(*b)),
                        Some(Value::String(s)) => Some(V::StringValue(s.clone())),
                        Some(Value::Number(n)) => Some(V::DoubleValue(n.as_f64().unwrap())),
                        Some(Value::Object(o)) => Some(V::ObjectValue(proto::object(o))),
                        _ => None,
                    };
                    let defaulted = value.is_none() && !r.enabled;
                    let variant = if defaulted {
                        String::new()
                    } else {
                        r.variant_text().to_owned()
                    };
                    let mut metadata = BTreeMap::new();
                    for (name, value) in r.metadata.sorted_fields() {
                        let value = match value {
                            Meta::Bool(b) => proto::boolean(b),
                            Meta::Number(n) => proto::number(n.as_f64().unwrap()),
                            Meta::Text(t) => proto::string(t),
                        };
                        metadata.insert(name.to_owned(), value);
                    }
                    let flag_message = AnyFlag {
                        reason: crate::openfeature::when_stale(r.reason, stale, !defaulted)
                            .to_owned(),
                        variant: $variant(variant),
                        value,
                        metadata: asked.then_some(Struct { fields: metadata }),
                    };
                    out.insert(r.key.to_owned(), flag_message);
                })
                .unwrap();
            let message = ResolveAllResponse {
                flags: out,
                metadata: Some(proto::object(&target.metadata())),
            };
            (message.encode_to_vec(), message)
        }
    };
}

/// The caller of identity `i` (none for 0): traits that match segments and land in every split.
fn context(i: usize) -> Value {
    if i == 0 {
        return json!({});
    }
    let plan = ["free", "pro", "enterprise"][i % 3];
    let country = ["GB", "US", "DE"][i % 3];
    json!({
        "targetingKey": format!("user-{i}"),
        "plan": plan,
        "country": country,
        "seats": i % 40,
    })
}

fn bytes(target: &Target, caller: &Caller<'_>, form: Form, asked: bool) -> Vec<u8> {
    write(target, caller, form, asked).unwrap().to_vec()
}

/// Every prepared answer, for callers with and without identities, both key kinds, both
/// versions, with and without metadata, with and without `parse_json_strings`, is byte for
/// byte prost's encoding of the message the general way gives.
#[test]
fn answers_are_prost_encodings_of_the_same_message() {
    let snapshot = Arc::new(Snapshot::build(&document(), 1).unwrap());
    let expect_v1 = expected!(v1, |v| v);
    let expect_v2 = expected!(v2, Some);
    let (mut compared, mut kinds_seen) = (0, std::collections::BTreeSet::new());
    for parse_json_strings in [false, true] {
        for i in 0..120 {
            let context = context(i);
            for kind in [KeyKind::Server, KeyKind::Client] {
                let target = target(&snapshot, kind, parse_json_strings, false);
                let caller = target.caller(Some(&context), 2000).unwrap();
                for asked in [false, true] {
                    for v2 in [false, true] {
                        let ours = bytes(&target, &caller, Form::Proto { v2 }, asked);
                        let name = format!("{i} {kind:?} v2={v2} meta={asked}");
                        if v2 {
                            let (bytes, message) = expect_v2(&target, &caller, asked);
                            assert_eq!(ours, bytes, "{name}");
                            let decoded =
                                reference::v2::ResolveAllResponse::decode(&ours[..]).unwrap();
                            assert_eq!(decoded, message, "{name}");
                        } else {
                            let (bytes, message) = expect_v1(&target, &caller, asked);
                            assert_eq!(ours, bytes, "{name}");
                            for flag in message.flags.values() {
                                let value = flag.value.as_ref().map_or("None".to_owned(), |v| {
                                    format!("{v:?}").split('(').next().unwrap().to_owned()
                                });
                                kinds_seen.insert((flag.reason.clone(), value));
                            }
                        }
                        compared += 1;
                    }
                }
            }
        }
    }
    assert!(compared > 0);
    // The cases the comparison is for all occurred.
    let seen = format!("{kinds_seen:?}");
    for wanted in [
        "STATIC",
        "DEFAULT",
        "TARGETING_MATCH",
        "SPLIT",
        "DISABLED",
        "BoolValue",
        "StringValue",
        "DoubleValue",
        "ObjectValue",
        "None",
    ] {
        assert!(seen.contains(wanted), "{wanted} never occurred: {seen}");
    }
}

/// The default answer carries no derived metadata at all; asked, every flag has its metadata.
#[test]
fn metadata_only_when_asked() {
    let snapshot = Arc::new(Snapshot::build(&document(), 1).unwrap());
    let target = target(&snapshot, KeyKind::Server, false, false);
    let caller = target.caller(None, 2000).unwrap();
    for asked in [false, true] {
        let bytes = bytes(&target, &caller, Form::Proto { v2: true }, asked);
        let decoded = reference::v2::ResolveAllResponse::decode(&bytes[..]).unwrap();
        assert!(decoded.flags.len() > 10);
        for (key, flag) in &decoded.flags {
            match &flag.metadata {
                None => assert!(!asked, "{key}"),
                Some(s) => {
                    assert!(asked, "{key}");
                    assert!(s.fields.contains_key("flagsmithEnabled"), "{key}");
                    assert!(s.fields.contains_key("flagsmithReason"), "{key}");
                }
            }
        }
    }
}

/// While the document is stale, answers are the same messages with `STALE` for every flag with a
/// value (a flag on the caller's default keeps `DISABLED`), for the own flags and identities in
/// segments and splits.
#[test]
fn stale_answers_are_the_same_messages_saying_stale() {
    let snapshot = Arc::new(Snapshot::build(&document(), 1).unwrap());
    let expect_v1 = expected!(v1, |v| v);
    let expect_v2 = expected!(v2, Some);
    let mut reasons = std::collections::BTreeSet::new();
    for i in 0..40 {
        let context = context(i);
        for kind in [KeyKind::Server, KeyKind::Client] {
            let target = target(&snapshot, kind, false, true);
            let caller = target.caller(Some(&context), 2000).unwrap();
            for (v2, asked) in [(false, false), (true, true)] {
                let ours = bytes(&target, &caller, Form::Proto { v2 }, asked);
                let expected = if v2 {
                    expect_v2(&target, &caller, asked).0
                } else {
                    let (bytes, message) = expect_v1(&target, &caller, asked);
                    reasons.extend(message.flags.values().map(|f| f.reason.clone()));
                    bytes
                };
                assert_eq!(ours, expected, "{i} {kind:?} v2={v2}");
            }
        }
    }
    let want: std::collections::BTreeSet<String> = ["DISABLED", "STALE"].map(String::from).into();
    assert_eq!(reasons, want);
}

/// A flag set's `ResolveAll`, in Connect's JSON: the flags flagd includes (a disabled one with
/// no value, a failed one with the empty value of its type, none without a default variant),
/// each with its metadata, and the selector as the answer's own.
#[test]
fn a_flag_sets_answer_is_flagds() {
    use crate::flagsets::FlagSets;
    use flagpole_config::flags::FlagSource;
    let sets = FlagSets::new(&[FlagSource::from_uri("shop.json")]);
    sets.publish(
        0,
        r#"{"metadata": {"flagSetId": "shop"}, "flags": {
            "on": {"state": "ENABLED", "variants": {"y": true, "n": false}, "defaultVariant": "y",
                   "metadata": {"team": "a"}},
            "n": {"state": "ENABLED", "variants": {"three": 3}, "defaultVariant": "three"},
            "off": {"state": "DISABLED", "variants": {"y": true}, "defaultVariant": "y"},
            "unset": {"state": "ENABLED", "variants": {"a": "A"}, "defaultVariant": null},
            "list": {"state": "ENABLED", "variants": {"a": [1]}, "defaultVariant": "a"},
            "broken": {"state": "ENABLED", "variants": {"a": "A"}, "defaultVariant": "a",
                       "targeting": {"if": [true, "nowhere"]}}}}"#,
    )
    .unwrap();
    let target = Target::flag_set(sets.view(None).unwrap(), Some("flagSetId=shop"));
    let caller = target.caller(None, 2000).unwrap();
    let answer: serde_json::Value =
        serde_json::from_slice(&bytes(&target, &caller, Form::Json, false)).unwrap();
    assert_eq!(
        answer,
        serde_json::json!({
            "flags": {
                "broken": {"reason": "ERROR", "variant": "", "stringValue": "",
                           "metadata": {"flagSetId": "shop"}},
                "n": {"reason": "STATIC", "variant": "three", "doubleValue": 3.0,
                      "metadata": {"flagSetId": "shop"}},
                "off": {"reason": "DISABLED", "variant": "", "metadata": {"flagSetId": "shop"}},
                "on": {"reason": "STATIC", "variant": "y", "boolValue": true,
                       "metadata": {"flagSetId": "shop", "team": "a"}},
            },
            "metadata": {"flagSetId": "shop"}
        })
    );
}
