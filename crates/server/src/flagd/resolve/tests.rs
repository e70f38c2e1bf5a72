//! flagd's answers for flag-set flags: each resolver against each value type, disabled flags,
//! flags without a default variant, metadata, engine errors as status codes, `STALE`.

use prost_types::value::Kind as Proto;
use tonic::Code;

use super::*;
use crate::flagsets::FlagSets;
use flagpole_config::flags::FlagSource;

const FILE: &str = r#"{
  "metadata": {"flagSetId": "shop", "team": "web", "version": 3},
  "flags": {
    "on": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "on",
           "metadata": {"team": "checkout"}},
    "whole": {"state": "ENABLED", "variants": {"a": 3, "b": 1.0}, "defaultVariant": "a"},
    "one": {"state": "ENABLED", "variants": {"a": 3, "b": 1.0}, "defaultVariant": "b"},
    "half": {"state": "ENABLED", "variants": {"a": -1.5}, "defaultVariant": "a"},
    "text": {"state": "ENABLED", "variants": {"a": "A"}, "defaultVariant": "a"},
    "object": {"state": "ENABLED", "variants": {"a": {"x": [1, "y"]}}, "defaultVariant": "a"},
    "off": {"state": "DISABLED", "variants": {"a": "A"}, "defaultVariant": "a"},
    "unset": {"state": "ENABLED", "variants": {"a": "A"}, "defaultVariant": null}
  }
}"#;

fn resolved(key: &str, kind: Kind, stale: bool) -> Result<Resolved, Status> {
    let sets = FlagSets::new(&[FlagSource::from_uri("shop.json")]);
    sets.publish(0, FILE).unwrap();
    sets.set_stale(0, stale);
    let target = Target::flag_set(sets.view(None).unwrap(), None);
    let caller = target.caller(None, 2000).unwrap();
    target
        .one(key, &caller, |r| {
            if let Some((code, message)) = &r.error {
                return Err(failed(code, key, message));
            }
            typed(&r, kind, target.stale())
        })
        .unwrap()
}

fn ok(key: &str, kind: Kind) -> Resolved {
    resolved(key, kind, false).unwrap_or_else(|e| panic!("{key} {kind:?}: {e:?}"))
}

fn code(key: &str, kind: Kind) -> Code {
    resolved(key, kind, false).expect_err(key).code()
}

#[test]
fn values_of_the_asked_type() {
    let r = ok("on", Kind::Bool);
    assert!(matches!(r.value, Typed::Bool(true)));
    assert_eq!((r.variant.as_str(), r.reason), ("on", "STATIC"));
    assert!(matches!(ok("text", Kind::String).value, Typed::String(ref s) if s == "A"));
    assert!(
        matches!(ok("object", Kind::Object).value, Typed::Object(ref o) if o.fields.contains_key("x"))
    );
}

#[test]
fn numbers_as_flagd_reads_them() {
    // Every number is a float to flagd: an integer resolver cuts toward zero, a float one
    // takes integers.
    assert!(matches!(ok("whole", Kind::Int).value, Typed::Int(3)));
    assert!(matches!(ok("one", Kind::Int).value, Typed::Int(1)));
    assert!(matches!(ok("half", Kind::Int).value, Typed::Int(-1)));
    assert!(matches!(ok("whole", Kind::Float).value, Typed::Float(f) if f == 3.0));
    assert!(matches!(ok("half", Kind::Float).value, Typed::Float(f) if f == -1.5));
}

#[test]
fn another_type_is_a_type_mismatch() {
    for (key, kind) in [
        ("on", Kind::String),
        ("on", Kind::Int),
        ("text", Kind::Bool),
        ("text", Kind::Float),
        ("object", Kind::String),
        ("whole", Kind::Object),
    ] {
        assert_eq!(code(key, kind), Code::InvalidArgument, "{key} {kind:?}");
    }
}

#[test]
fn no_value_is_the_callers_default_whatever_the_type() {
    for kind in [Kind::Bool, Kind::String, Kind::Object] {
        let r = ok("off", kind);
        assert!(matches!(r.value, Typed::None), "{kind:?}");
        assert_eq!((r.variant.as_str(), r.reason), ("", "DISABLED"));
        let r = ok("unset", kind);
        assert!(matches!(r.value, Typed::None), "{kind:?}");
        assert_eq!((r.variant.as_str(), r.reason), ("", "DEFAULT"));
    }
}

#[test]
fn a_missing_flag_is_not_found() {
    assert_eq!(code("nowhere", Kind::Bool), Code::NotFound);
}

#[test]
fn metadata_is_the_sets_under_the_flags() {
    let meta = ok("on", Kind::Bool).metadata.fields;
    let text = |k: &str| match meta.get(k).and_then(|v| v.kind.as_ref()) {
        Some(Proto::StringValue(s)) => s.clone(),
        other => panic!("{k}: {other:?}"),
    };
    assert_eq!(text("team"), "checkout");
    assert_eq!(text("flagSetId"), "shop");
    assert!(matches!(
        meta.get("version").and_then(|v| v.kind.as_ref()),
        Some(Proto::NumberValue(n)) if *n == 3.0
    ));
}

#[test]
fn stale_answers_with_a_value_say_so() {
    let r = resolved("text", Kind::String, true).unwrap();
    assert_eq!(r.reason, "STALE");
    // The caller's default is no stale value.
    assert_eq!(
        resolved("off", Kind::String, true).unwrap().reason,
        "DISABLED"
    );
}

#[test]
fn engine_errors_carry_flagds_codes() {
    for (error, code) in [
        ("FLAG_NOT_FOUND", Code::NotFound),
        ("TYPE_MISMATCH", Code::InvalidArgument),
        ("PARSE_ERROR", Code::DataLoss),
        ("GENERAL", Code::Unknown),
    ] {
        assert_eq!(failed(error, "k", "why").code(), code, "{error}");
    }
}

/// An engine whose boolean is its enabled bit (Unleash toggles): `ResolveBoolean` reads that
/// whatever the value, the other resolvers read the value, leniently when off.
#[test]
fn a_boolean_may_be_the_enabled_bit() {
    use crate::openfeature::{Declared, Typing};
    use std::borrow::Cow;
    let empty = serde_json::Map::new();
    let toggle = |enabled: bool, value: Value| Resolution {
        key: "t",
        value: Some(Cow::Owned(value)),
        reason: if enabled { "STATIC" } else { "DEFAULT" },
        variant: Some(Cow::Borrowed(if enabled { "blue" } else { "disabled" })),
        error: None,
        metadata: Metadata::map(&empty),
        typing: Typing {
            lenient: !enabled,
            fractions: Fractions::Refused,
            declared: Declared::Any,
            enabled_as_bool: true,
        },
        enabled,
    };
    let on = toggle(true, Value::String("#00f".into()));
    assert!(matches!(
        typed(&on, Kind::Bool, false).unwrap().value,
        Typed::Bool(true)
    ));
    let text = typed(&on, Kind::String, false).unwrap();
    assert!(matches!(&text.value, Typed::String(s) if s == "#00f"));
    assert_eq!(text.variant, "blue");
    assert_eq!(
        typed(&on, Kind::Object, false).unwrap_err().code(),
        Code::InvalidArgument
    );
    let off = toggle(false, Value::Bool(false));
    assert!(matches!(
        typed(&off, Kind::Bool, false).unwrap().value,
        Typed::Bool(false)
    ));
    let defaulted = typed(&off, Kind::String, false).unwrap();
    assert!(matches!(defaulted.value, Typed::None));
    assert_eq!(
        (defaulted.variant.as_str(), defaulted.reason),
        ("", "DEFAULT")
    );
}
