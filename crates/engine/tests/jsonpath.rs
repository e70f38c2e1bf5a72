//! Condition properties that are JSONPath queries (the reference's `get_context_value`, on
//! `jsonpath-rfc9535` 0.2.0): `$.identity.identifier`, the enriched `$.identity.key`,
//! `$.environment.name`, filters and wildcards over the context, a trait literally named like the
//! path winning over the query, invalid paths falling back to a trait of that name, `$..name`
//! taking the first descendant, objects/arrays reading as null, and bracket-rooted or
//! space-separated properties being plain trait names.
//!
//! Every expectation was produced by running the reference (`flagsmith-flag-engine` 11.1.1) on
//! the same context.

mod common;

use common::{run_id_rows, Exp::*, IdRow};

/// JSONPath over the enriched context, literal traits first, invalid paths as trait names.
#[rustfmt::skip]
const JSONPATH_PROPERTIES: &[IdRow] = &[
    (r#"{"identifier":"user"}"#, "1", "$.identity.identifier", "EQUAL", r#""user""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.identity.identifier", "EQUAL", r#""other""#, N),
    (r#"{"identifier":"user"}"#, "1", "$.identity.key", "EQUAL", r#""env_user""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.identity.key", "IS_SET", r#""""#, M),
    (r#"{"identifier":"user","key":"k1"}"#, "1", "$.identity.key", "EQUAL", r#""k1""#, M),
    (r#"{"identifier":"user","key":""}"#, "1", "$.identity.key", "EQUAL", r#""env_user""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.environment.name", "EQUAL", r#""Env""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.environment.name", "IN", r#""Env,Other""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.environment.key", "EQUAL", r#""env""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.environment.missing", "IS_NOT_SET", r#""""#, M),
    (r#"{"identifier":"user","traits":{"$.identity.identifier":"x"}}"#, "1", "$.identity.identifier", "EQUAL", r#""x""#, M),
    (r#"{"identifier":"user","traits":{"$.identity.identifier":"x"}}"#, "1", "$.identity.identifier", "EQUAL", r#""user""#, N),
    (r#"{"identifier":"user","traits":{"$.identity.identifier":null}}"#, "1", "$.identity.identifier", "EQUAL", r#""user""#, M),
    (r#"{"identifier":"user","traits":{"$.bad[":"v"}}"#, "1", "$.bad[", "EQUAL", r#""v""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.bad[", "IS_NOT_SET", r#""""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.bad[", "IS_SET", r#""""#, N),
    (r#"{"identifier":"user"}"#, "1", "$..name", "EQUAL", r#""Env""#, M),
    (r#"{"identifier":"user"}"#, "1", "$..key", "EQUAL", r#""env""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.identity", "IS_NOT_SET", r#""""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.identity", "IS_SET", r#""""#, N),
    (r#"{"identifier":"user","traits":{"a":1}}"#, "1", "$.identity.traits", "IS_NOT_SET", r#""""#, M),
    (r#"{"identifier":"user","traits":{"$":"v"}}"#, "1", "$", "EQUAL", r#""v""#, M),
    (r#"{"identifier":"user"}"#, "1", "$", "IS_NOT_SET", r#""""#, M),
    (r#"{"identifier":"user"}"#, "1", "$['environment']['name']", "IS_NOT_SET", r#""""#, M),
    (r#"{"identifier":"user","traits":{"$['environment']['name']":"v"}}"#, "1", "$['environment']['name']", "EQUAL", r#""v""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.features.f.value", "EQUAL", r#""off""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.features.f.enabled", "EQUAL", r#""false""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.segments['1'].name", "EQUAL", r#""s""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.segments.1.name", "IS_NOT_SET", r#""""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.features[?@.enabled == false].name", "EQUAL", r#""f""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.features.*.key", "EQUAL", r#""1""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.features[?length(@.name) == 1].name", "EQUAL", r#""f""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.segments.*.rules[0].conditions[0].operator", "EQUAL", r#""EQUAL""#, M),
    (r#"{"identifier":"user","extra":"x"}"#, "1", "$.identity.extra", "EQUAL", r#""x""#, M),
    (r#"{"identifier":"user","traits":{"a b":"v"}}"#, "1", "$.identity.traits['a b']", "EQUAL", r#""v""#, M),
    (r#"{"identifier":"user"}"#, "1", "$ .environment.name", "IS_NOT_SET", r#""""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.environment.name ", "EQUAL", r#""Env""#, N),
    (r#"{"identifier":"user"}"#, "1", "$.environment[\"name\"]", "EQUAL", r#""Env""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.features.f.variants", "IS_NOT_SET", r#""""#, M),
    (r#"{"identifier":"user","traits":{"t":[1]}}"#, "1", "$.identity.traits.t[0]", "EQUAL", r#""1""#, M),
    (r#"{"identifier":"user"}"#, "1", "$.flags", "IS_NOT_SET", r#""""#, M),
];

#[test]
fn jsonpath_properties() {
    run_id_rows(JSONPATH_PROPERTIES);
}
