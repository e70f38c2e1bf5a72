//! `all`'s answers against prost's encoding of the same messages, and metadata only when asked.

use std::collections::BTreeMap;

use flagpole_engine::python::number::PyInt;
use flagpole_engine::{Identity, Trait, TraitValue};
use prost::Message;
use serde_json::json;

use super::*;

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

/// `ResolveAllResponse` of one version as the prost messages the answer used to be built
/// from: the mapping, then prost's types.
macro_rules! expected {
    ($v:ident, $variant:expr) => {
        |snapshot: &Snapshot, kind: KeyKind, flags: &[FlagResult<'_>], o: Options| {
            use reference::$v::{any_flag::Value as V, AnyFlag, ResolveAllResponse};
            let mut out = BTreeMap::new();
            for flag in flags {
                if !snapshot.is_visible(kind, flag.key, flag.enabled) || out.contains_key(flag.key)
                {
                    continue;
                }
                let can_vary = snapshot.env.can_vary(flag.key);
                let r = flagsmith::resolve(flag, kind, o.parse_json_strings, can_vary);
                let value = match r.value.as_deref() {
                    Some(Value::Bool(b)) => Some(V::BoolValue(*b)),
                    Some(Value::String(s)) => Some(V::StringValue(s.clone())),
                    Some(Value::Number(n)) => Some(V::DoubleValue(n.as_f64().unwrap())),
                    Some(Value::Object(o)) => Some(V::ObjectValue(proto::object(o))),
                    _ => None,
                };
                let defaulted = value.is_none() && !r.enabled();
                let variant = if defaulted {
                    String::new()
                } else {
                    r.variant_text().to_owned()
                };
                let mut metadata = BTreeMap::new();
                if let Some(id) = r.feature_id().and_then(Value::as_f64) {
                    metadata.insert("flagsmithFeatureId".to_owned(), proto::number(id));
                }
                metadata.insert("flagsmithEnabled".to_owned(), proto::boolean(r.enabled()));
                if let Some(reason) = r.engine_reason() {
                    metadata.insert("flagsmithReason".to_owned(), proto::string(reason));
                }
                if let Some(segment) = r.segment() {
                    metadata.insert("flagsmithSegment".to_owned(), proto::string(segment));
                }
                let flag_message = AnyFlag {
                    reason: mapping::when_stale(r.reason, o.stale, !defaulted).to_owned(),
                    variant: $variant(variant),
                    value,
                    metadata: o.metadata.then_some(Struct { fields: metadata }),
                };
                out.insert(flag.key.to_owned(), flag_message);
            }
            let message = ResolveAllResponse {
                flags: out,
                metadata: None,
            };
            (message.encode_to_vec(), message)
        }
    };
}

/// Every answer, for callers with and without identities and traits that match segments and
/// land in every split, both key kinds, both versions, with and without metadata, with and
/// without `parse_json_strings`, is byte for byte prost's encoding of the same message.
#[test]
fn answers_are_prost_encodings_of_the_same_message() {
    let doc = document();
    let expect_v1 = expected!(v1, |v| v);
    let expect_v2 = expected!(v2, Some);
    let (mut compared, mut kinds_seen) = (0, std::collections::BTreeSet::new());
    for parse_json_strings in [false, true] {
        let snapshot = Snapshot::build(&doc, 1).unwrap();
        for i in 0..120 {
            let identifier = format!("user-{i}");
            let text = |key: &'static str, value: &'static str| Trait {
                key: key.into(),
                value: TraitValue::Str(value.into()),
            };
            let traits = [
                text("plan", ["free", "pro", "enterprise"][i % 3]),
                text("country", ["GB", "US", "DE"][i % 3]),
                Trait {
                    key: "seats".into(),
                    value: TraitValue::Int(PyInt::Small(i as i64 % 40)),
                },
            ];
            let identity = Identity::new(&identifier, &traits);
            let identified = if i == 0 { None } else { Some(&identity) };
            let result = match identified {
                Some(identity) => snapshot.env.evaluate(Some(identity)).unwrap(),
                None => snapshot.env.own_flags().unwrap(),
            };
            for kind in [KeyKind::Server, KeyKind::Client] {
                for metadata in [false, true] {
                    for v2 in [false, true] {
                        let options = Options {
                            form: Form::Proto { v2 },
                            metadata,
                            parse_json_strings,
                            stale: false,
                        };
                        let ours = write(&snapshot, kind, &result.flags, options);
                        let name = format!("{identifier} {kind:?} v2={v2} meta={metadata}");
                        if v2 {
                            let (bytes, message) =
                                expect_v2(&snapshot, kind, &result.flags, options);
                            assert_eq!(ours, bytes, "{name}");
                            let decoded =
                                reference::v2::ResolveAllResponse::decode(&ours[..]).unwrap();
                            assert_eq!(decoded, message, "{name}");
                        } else {
                            let (bytes, message) =
                                expect_v1(&snapshot, kind, &result.flags, options);
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

/// The default answer carries no metadata at all; asked, every flag has its metadata.
#[test]
fn metadata_only_when_asked() {
    let snapshot = Snapshot::build(&document(), 1).unwrap();
    let result = snapshot.env.own_flags().unwrap();
    for metadata in [false, true] {
        let options = Options {
            form: Form::Proto { v2: true },
            metadata,
            parse_json_strings: false,
            stale: false,
        };
        let bytes = write(&snapshot, KeyKind::Server, &result.flags, options);
        let decoded = reference::v2::ResolveAllResponse::decode(&bytes[..]).unwrap();
        assert!(decoded.flags.len() > 10);
        for (key, flag) in &decoded.flags {
            match &flag.metadata {
                None => assert!(!metadata, "{key}"),
                Some(s) => {
                    assert!(metadata, "{key}");
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
    let snapshot = Snapshot::build(&document(), 1).unwrap();
    let expect_v1 = expected!(v1, |v| v);
    let expect_v2 = expected!(v2, Some);
    let mut reasons = std::collections::BTreeSet::new();
    for i in 0..40 {
        let identifier = format!("user-{i}");
        let traits = [Trait {
            key: "plan".into(),
            value: TraitValue::Str(["free", "pro", "enterprise"][i % 3].into()),
        }];
        let identity = Identity::new(&identifier, &traits);
        let result = match i {
            0 => snapshot.env.own_flags().unwrap(),
            _ => snapshot.env.evaluate(Some(&identity)).unwrap(),
        };
        for kind in [KeyKind::Server, KeyKind::Client] {
            for (v2, metadata) in [(false, false), (true, true)] {
                let options = Options {
                    form: Form::Proto { v2 },
                    metadata,
                    parse_json_strings: false,
                    stale: true,
                };
                let ours = write(&snapshot, kind, &result.flags, options);
                let bytes = if v2 {
                    expect_v2(&snapshot, kind, &result.flags, options).0
                } else {
                    let (bytes, message) = expect_v1(&snapshot, kind, &result.flags, options);
                    reasons.extend(message.flags.values().map(|f| f.reason.clone()));
                    bytes
                };
                assert_eq!(ours, bytes, "{identifier} {kind:?} v2={v2}");
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
    use crate::config::flags::FlagSource;
    use crate::flagsets::FlagSets;
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
    let view = sets.view(None).unwrap();
    let selected = crate::flagsets::Selector::parse(Some("flagSetId=shop")).metadata();
    let answer = flag_sets(&view, None, Form::Json, &selected);
    let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
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
